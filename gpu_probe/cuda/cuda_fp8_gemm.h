#pragma once
// fp8_e4m3 weights in the CUDA decode step (cuda_step.cu): cuBLASLt's FP8 GEMMs, as vLLM runs the linear
// layers of fp8 checkpoints (Fp8LinearMethod with a dynamic activation scheme, vllm/model_executor/layers/
// quantization/fp8.py): before each GEMM the activations are quantised to fp8_e4m3 with one scale for the
// tensor, amax / 448 (vLLM's scaled_fp8_quant), then W (fp8, its per-tensor scale) times x (fp8, that scale)
// accumulates in fp32. The probe's random weights lie within ±1, so their scale is 1.
//
// cuBLASLt's FP8 kernels need compute capability 8.9 or newer, A transposed and B not ("TN", which the step's
// row-major weights are), and 16-byte aligned rows: inputs a multiple of 16 values, fp32 outputs a multiple of 4.
// On an H200 (2026-12-04, docs/gpu-results.md) the GEMM written in place (C = D) was offered a kernel by the
// heuristic and then refused by cublasLtMatmul (CUBLAS_STATUS_NOT_SUPPORTED) at every shape. So it writes out of
// place, as cuBLASLt's own FP8 sample does (C, unread at beta 0, is a scratch buffer of its own; D the caller's y),
// its scales 16 bytes apart, and keeps several of the heuristic's kernels, using the first that runs.

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_memory.h"

namespace kvscope::probe::cuda {

class Fp8Gemm {
public:
    // `max_inputs`: the most activations one GEMM takes (the batch times the widest input); `max_outputs`: the
    // most it gives (the batch times the most rows).
    Fp8Gemm(std::uint64_t max_inputs, std::uint64_t max_outputs);
    ~Fp8Gemm();
    Fp8Gemm(const Fp8Gemm&) = delete;
    Fp8Gemm& operator=(const Fp8Gemm&) = delete;

    // y[b·rows + r] = alpha · Σ_c W[r·cols + c] · x[b·cols + c]: W row-major rows × cols in fp8_e4m3, x bf16
    // (quantised here), y fp32. Enqueued on the default stream.
    void matmul(const void* w, std::uint64_t rows, std::uint64_t cols, const void* x, std::uint64_t batch, float* y,
                float alpha);

    // Chooses cuBLASLt's kernel for each of these matrices (rows × cols) at this batch, before the model is
    // allocated: "" when it has one for every one, else why not, in words.
    std::string prepare(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& shapes, std::uint64_t batch);

    // Device memory it holds beside the weights: the workspace, the quantised inputs, C's scratch and the scales.
    static std::uint64_t device_bytes(std::uint64_t max_inputs, std::uint64_t max_outputs);
    // "" when this device runs FP8 GEMMs of these shapes (rows × cols each), else why not, in words.
    static std::string unavailable(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& shapes);

private:
    struct Plan {
        cublasLtMatmulDesc_t desc{};
        cublasLtMatrixLayout_t a{}, b{}, c{};
        static constexpr int kAlgos = 8;       // the heuristic's kernels kept, tried in turn
        cublasLtMatmulAlgo_t algos[kAlgos]{};  // best first
        int count = 0, chosen = 0;             // how many there are; the first of them that ran
    };
    // The plan for a shape, made the first time: "" or why cuBLASLt has none.
    std::string make_plan(std::uint64_t rows, std::uint64_t cols, std::uint64_t batch);
    static void destroy(Plan& p);

    cublasLtHandle_t lt_{};
    DeviceBuffer workspace_, inputs_, outputs_, scales_;  // scales_: the weights' (1), amax's bits, the inputs',
                                                          // 16 bytes apart
    std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, Plan> plans_;
};

}  // namespace kvscope::probe::cuda
