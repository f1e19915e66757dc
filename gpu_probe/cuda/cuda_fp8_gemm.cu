// fp8_e4m3 weights in the CUDA decode step: cuBLASLt FP8 GEMMs behind a dynamic per-tensor activation scale
// (cuda_fp8_gemm.h).
#include "cuda_fp8_gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "cuda_check.h"

namespace kvscope::probe::cuda {

namespace {

constexpr std::uint64_t kWorkspaceBytes = 32ull << 20;  // cuBLASLt's, as cuBLAS takes on Hopper
constexpr float kFp8Max = 448.0f;                       // the largest finite fp8_e4m3
constexpr std::uint64_t kScaleStride = 4;               // floats between scales: 16-byte aligned pointers

// The largest |x| of n bf16 values into *amax_bits (as its bits: non-negative floats order as their bits do).
__global__ void amax_kernel(const __nv_bfloat16* x, std::uint64_t n, unsigned* amax_bits) {
    float m = 0;
    for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
        m = fmaxf(m, fabsf(__bfloat162float(x[i])));
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(m));
}

// q[i] = x[i] / s to the nearest fp8_e4m3 (ties to even, saturating), s = amax / 448 (1 when all are 0), and
// *scale = s for the GEMM.
__global__ void quantize_kernel(const __nv_bfloat16* x, std::uint64_t n, const unsigned* amax_bits, float* scale,
                                __nv_fp8_e4m3* q) {
    const float amax = __uint_as_float(*amax_bits);
    const float s = amax > 0 ? amax / kFp8Max : 1.0f;
    if (blockIdx.x == 0 && threadIdx.x == 0) *scale = s;
    for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
        q[i] = __nv_fp8_e4m3(__bfloat162float(x[i]) / s);
}

template <class T>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v) {
    KVSCOPE_CUDA(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v));
}

}  // namespace

Fp8Gemm::Fp8Gemm(std::uint64_t max_inputs, std::uint64_t max_outputs)
    : workspace_(kWorkspaceBytes),
      inputs_(max_inputs),
      outputs_(max_outputs * sizeof(float)),
      scales_(3 * kScaleStride * sizeof(float)) {
    const float one = 1.0f;
    KVSCOPE_CUDA(cudaMemcpy(scales_.get<float>(), &one, sizeof one, cudaMemcpyHostToDevice));
    KVSCOPE_CUDA(cublasLtCreate(&lt_));  // last: nothing after it can throw and leave it behind
}

Fp8Gemm::~Fp8Gemm() {
    for (auto& [shape, p] : plans_) destroy(p);
    cublasLtDestroy(lt_);
}

void Fp8Gemm::destroy(Plan& p) {
    if (p.a) cublasLtMatrixLayoutDestroy(p.a);
    if (p.b) cublasLtMatrixLayoutDestroy(p.b);
    if (p.c) cublasLtMatrixLayoutDestroy(p.c);
    if (p.desc) cublasLtMatmulDescDestroy(p.desc);
    p = Plan{};
}

std::string Fp8Gemm::prepare(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& shapes, std::uint64_t batch) {
    for (const auto& [rows, cols] : shapes)
        if (std::string why = make_plan(rows, cols, batch); !why.empty()) return why;
    return "";
}

std::uint64_t Fp8Gemm::device_bytes(std::uint64_t max_inputs, std::uint64_t max_outputs) {
    return kWorkspaceBytes + max_inputs + max_outputs * sizeof(float) + 3 * 256;  // cudaMalloc's 256-byte steps
}

std::string Fp8Gemm::unavailable(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& shapes) {
    int device = 0, major = 0, minor = 0;
    KVSCOPE_CUDA(cudaGetDevice(&device));
    KVSCOPE_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    KVSCOPE_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    const std::string fallback = "; give --weight-dtype bf16, or run it on the CPU backend (--backend cpu)";
    if (major * 10 + minor < 89)
        return "weight_dtype: fp8_e4m3 weights need FP8 tensor cores (compute capability 8.9 or newer; this GPU's is " +
               std::to_string(major) + "." + std::to_string(minor) + ")" + fallback;
    for (const auto& [rows, cols] : shapes)
        if (cols % 16 != 0 || rows % 4 != 0)
            return "weight_dtype: cuBLASLt's fp8_e4m3 GEMMs take inputs of a multiple of 16 values and give outputs "
                   "of a multiple of 4, and one of this model's matrices is " +
                   std::to_string(rows) + " × " + std::to_string(cols) + fallback;
    return "";
}

std::string Fp8Gemm::make_plan(std::uint64_t rows, std::uint64_t cols, std::uint64_t batch) {
    const auto key = std::make_tuple(rows, cols, batch);
    if (plans_.count(key)) return "";
    Plan p;
    cublasLtMatmulPreference_t pref{};
    cublasLtMatmulHeuristicResult_t results[Plan::kAlgos]{};
    int found = 0;
    try {
        KVSCOPE_CUDA(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        // D (rows × batch, column-major) = alpha · scale_A · scale_B · Aᵀ · B: A is W, row-major rows × cols,
        // which is column-major cols × rows; B is x, column-major cols × batch.
        set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
        set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
        const float* scales = scales_.get<float>();
        set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(scales));
        set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(scales + 2 * kScaleStride));
        KVSCOPE_CUDA(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, cols, rows, static_cast<std::int64_t>(cols)));
        KVSCOPE_CUDA(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_8F_E4M3, cols, batch, static_cast<std::int64_t>(cols)));
        KVSCOPE_CUDA(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, rows, batch, static_cast<std::int64_t>(rows)));
        KVSCOPE_CUDA(cublasLtMatmulPreferenceCreate(&pref));
        const std::uint64_t ws = kWorkspaceBytes;
        KVSCOPE_CUDA(
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
        const cublasStatus_t s =
            cublasLtMatmulAlgoGetHeuristic(lt_, p.desc, p.a, p.b, p.c, p.c, pref, Plan::kAlgos, results, &found);
        cublasLtMatmulPreferenceDestroy(pref);
        pref = nullptr;
        if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
            destroy(p);
            return "weight_dtype: cuBLASLt has no fp8_e4m3 GEMM for a " + std::to_string(rows) + " × " +
                   std::to_string(cols) + " matrix at a batch of " + std::to_string(batch) + " on this GPU (" +
                   (s != CUBLAS_STATUS_SUCCESS ? std::string(cublasGetStatusName(s)) : std::string("no algorithm")) +
                   "); give --weight-dtype bf16";
        }
    } catch (...) {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        destroy(p);
        throw;
    }
    for (p.count = 0; p.count < found; ++p.count) p.algos[p.count] = results[p.count].algo;
    try {
        plans_.emplace(key, p);
    } catch (...) {  // the map could not hold it: its descriptors are nobody's
        destroy(p);
        throw;
    }
    return "";
}

void Fp8Gemm::matmul(const void* w, std::uint64_t rows, std::uint64_t cols, const void* x, std::uint64_t batch,
                     float* y, float alpha) {
    if (std::string why = make_plan(rows, cols, batch); !why.empty()) throw CudaError(why, cudaErrorNotSupported);
    Plan& p = plans_.at(std::make_tuple(rows, cols, batch));
    const std::uint64_t n = batch * cols;
    auto* amax = reinterpret_cast<unsigned*>(scales_.get<float>() + kScaleStride);
    KVSCOPE_CUDA(cudaMemsetAsync(amax, 0, sizeof(unsigned)));
    const auto blocks = static_cast<unsigned>(std::clamp<std::uint64_t>((n + 255) / 256, 1, 1024));
    amax_kernel<<<blocks, 256>>>(static_cast<const __nv_bfloat16*>(x), n, amax);
    KVSCOPE_CUDA(cudaGetLastError());
    quantize_kernel<<<blocks, 256>>>(static_cast<const __nv_bfloat16*>(x), n, amax,
                                     scales_.get<float>() + 2 * kScaleStride, inputs_.get<__nv_fp8_e4m3>());
    KVSCOPE_CUDA(cudaGetLastError());
    const float beta = 0;
    // Out of place: C (unread at beta 0) is outputs_, D is y. A kernel the heuristic offered but cublasLtMatmul
    // refuses (CUBLAS_STATUS_NOT_SUPPORTED: the heuristic does not see the pointers) gives way to the next one.
    for (;;) {
        const cublasStatus_t s =
            cublasLtMatmul(lt_, p.desc, &alpha, w, p.a, inputs_.get(), p.b, &beta, outputs_.get(), p.c, y, p.c,
                           &p.algos[p.chosen], workspace_.get(), kWorkspaceBytes, nullptr);
        if (s == CUBLAS_STATUS_SUCCESS) return;
        if (s != CUBLAS_STATUS_NOT_SUPPORTED || p.chosen + 1 >= p.count)
            throw CudaError(
                "cuBLASLt's fp8_e4m3 GEMM of a " + std::to_string(rows) + " × " + std::to_string(cols) +
                    " matrix at a batch of " + std::to_string(batch) + " failed: " + cublasGetStatusName(s) +
                    (s == CUBLAS_STATUS_NOT_SUPPORTED
                         ? " for each of the " + std::to_string(p.count) +
                               " kernels its heuristic offered (CUBLASLT_LOG_LEVEL=1 makes cuBLASLt say why)"
                         : std::string()) +
                    "; give --weight-dtype bf16",
                cudaErrorNotSupported);
        ++p.chosen;
    }
}

}  // namespace kvscope::probe::cuda
