// The small kernels of the CUDA decode step (cuda_step_kernels.h).
#include "cuda_step_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>

#include "cpu_kernels.h"
#include "cuda_attention.h"
#include "cuda_block_reduce.cuh"
#include "cuda_check.h"

namespace kvscope::probe::cuda {
namespace {

__device__ __forceinline__ float load(const void* p, std::size_t i, int dtype) {
    if (dtype == kFp32) return static_cast<const float*>(p)[i];
    if (dtype == kFp16) return __half2float(static_cast<const __half*>(p)[i]);
    if (dtype == kFp8E4m3) return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

__device__ __forceinline__ void store(void* p, std::size_t i, float v, int dtype) {
    if (dtype == kFp32)
        static_cast<float*>(p)[i] = v;
    else if (dtype == kFp16)
        static_cast<__half*>(p)[i] = __float2half(v);
    else if (dtype == kFp8E4m3)
        static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v);  // to the nearest, saturating
    else if (dtype == kFp8E5m2)
        static_cast<__nv_fp8_e5m2*>(p)[i] = __nv_fp8_e5m2(v);
    else if (dtype == kInt8) {  // as cpu_formats.cpp writes it: nearest step, ties to even, saturating; NaN to 0
        const float steps = v / cpu::kInt8Scale;
        static_cast<signed char*>(p)[i] =
            static_cast<signed char>(isnan(steps) ? 0.0f : rintf(fminf(fmaxf(steps, -128.0f), 127.0f)));
    } else
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
}

// One of llama.cpp's blocks of 32 values, as cpu_formats.cpp writes it (ggml-quants.c quantize_row_q8_0_ref and
// quantize_row_q4_0_ref): the same float operations in the same order, each rounded alone (no fused multiply-add),
// so that the bytes are the CPU's.
__device__ void store_block(const float* x, unsigned char* b, int dtype) {
    float amax = 0, max = 0;  // q4_0 keeps the signed value of the first largest magnitude
    for (int j = 0; j < 32; ++j)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = dtype == kQ8_0 ? __fdiv_rn(amax, 127.0f) : __fdiv_rn(max, -8.0f);
    const float id = d != 0 ? __fdiv_rn(1.0f, d) : 0.0f;
    // The scale's two bytes in one 16-bit store (blocks of 34 and 18 bytes keep it 2-byte aligned), little-endian
    // as ggml stores it. Not a byte at a time: ptxas 13 turns `st.u8` of the low byte of a `cvt.rn.f16.f32` result
    // into a float-to-u8 conversion of the half (F2I.U8.F16), which wrote 0 for every scale below 1 (seen on an
    // H200, 2026-12-04: CudaBackend.ASmallModelsStepMatchesFloat64; docs/gpu-results.md).
    *reinterpret_cast<unsigned short*>(b) = __half_as_ushort(__float2half_rn(d));
    if (dtype == kQ8_0) {  // the nearest step, halves away from 0 (lround); NaN to 0
        for (int j = 0; j < 32; ++j) {
            const float q = __fmul_rn(x[j], id);
            b[2 + j] = static_cast<unsigned char>(static_cast<signed char>(isnan(q) ? 0.0f : roundf(q)));
        }
        return;
    }
    const auto nibble = [id](float v) {  // v / d + 8.5, truncated, at most 15; NaN to the value 0 (code 8)
        const float q = __fadd_rn(__fmul_rn(v, id), 8.5f);
        return isnan(q) ? 8 : min(15, static_cast<int>(q));
    };
    for (int j = 0; j < 16; ++j)  // values 0…15 in the low nibbles, 16…31 in the high
        b[2 + j] = static_cast<unsigned char>(nibble(x[j]) | (nibble(x[j + 16]) << 4));
}

// x[b] = the embedding row of token b, in fp32.
__global__ void embed_kernel(const void* table, int wd, const std::uint64_t* tokens, std::uint64_t hidden, float* x) {
    const std::uint64_t b = blockIdx.x;
    for (std::uint64_t i = threadIdx.x; i < hidden; i += blockDim.x)
        x[b * hidden + i] = load(table, tokens[b] * hidden + i, wd);
}

// out[b] = RMSNorm(x[b]) in the weight format (the GEMMs' input); one block per sequence.
__global__ void rms_norm_kernel(const float* x, std::uint64_t n, void* out, int wd) {
    const float* row = x + blockIdx.x * n;
    float ss = 0;
    for (std::uint64_t i = threadIdx.x; i < n; i += blockDim.x) ss += row[i] * row[i];
    const float inv = rsqrtf(block_sum(ss) / static_cast<float>(n) + 1e-6f);
    for (std::uint64_t i = threadIdx.x; i < n; i += blockDim.x) store(out, blockIdx.x * n + i, row[i] * inv, wd);
}

// One block per sequence: RoPE on its query and key heads (pairs i, i + d/2 by position · 10000^(−2i/d), the
// Llama convention), the queries to `q` in fp32, the new K and V rows into the cache in its format. The K and V
// rows in fp32 also go to `staged` (K then V, a sequence after another): llama.cpp's blocks are written from
// there, 32 values at a time, and the float64 check compares the cache's bytes with the CPU's encoding of them.
__global__ void rope_store_kernel(const float* qkv, RopeShape sh, const std::uint64_t* positions, void* const* new_k,
                                  void* const* new_v, int kv_dtype, float* q, float* staged) {
    const std::uint64_t b = blockIdx.x;
    const float* row = qkv + b * sh.row;
    const std::uint64_t row_k = static_cast<std::uint64_t>(sh.kv_heads) * sh.dk,
                        row_v = std::uint64_t{sh.kv_heads} * sh.dv;
    float* staged_k = staged + b * (row_k + row_v);
    float* staged_v = staged_k + row_k;
    const bool blocks = is_block(kv_dtype);
    const auto pos = static_cast<double>(positions[b]);
    const std::uint32_t half = sh.dk / 2;
    const std::uint32_t heads = sh.q_heads + sh.kv_heads;
    for (std::uint32_t j = threadIdx.x; j < heads * half; j += blockDim.x) {
        const std::uint32_t h = j / half, i = j % half;
        // The angle in double, as the CPU step and the float64 reference take it (10000^(−2i/d) by pow): in fp32 it
        // is off by about 1e-4 radians at position 300 and 1e-2 near 128k, which the float64 check would count as
        // the step's error. The rotation's products each rounded, as the CPU step rounds them (no fused multiply-add).
        double sd, cd;
        sincos(pos * pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(sh.dk)), &sd, &cd);
        const auto s = static_cast<float>(sd), c = static_cast<float>(cd);
        const float* src = row + static_cast<std::uint64_t>(h) * sh.dk;  // q heads, then k heads, side by side
        const float x = src[i], y = src[i + half];
        const float a = __fsub_rn(__fmul_rn(x, c), __fmul_rn(y, s)), bb = __fadd_rn(__fmul_rn(x, s), __fmul_rn(y, c));
        if (h < sh.q_heads) {
            float* dst = q + (b * sh.q_heads + h) * sh.dk;
            dst[i] = a;
            dst[i + half] = bb;
        } else {
            const std::uint64_t at = static_cast<std::uint64_t>(h - sh.q_heads) * sh.dk;
            staged_k[at + i] = a;
            staged_k[at + i + half] = bb;
            if (blocks) continue;
            store(new_k[b], at + i, a, kv_dtype);
            store(new_k[b], at + i + half, bb, kv_dtype);
        }
    }
    const float* v = row + static_cast<std::uint64_t>(heads) * sh.dk;
    for (std::uint64_t j = threadIdx.x; j < row_v; j += blockDim.x) {
        staged_v[j] = v[j];
        if (!blocks) store(new_v[b], j, v[j], kv_dtype);
    }
    if (!blocks) return;
    __syncthreads();  // the staged rows are whole (rows of whole blocks: the layout's check)
    const std::uint64_t block_bytes = kv_dtype == kQ8_0 ? 34 : 18, k_blocks = row_k / 32;
    for (std::uint64_t j = threadIdx.x; j < (row_k + row_v) / 32; j += blockDim.x)
        if (j < k_blocks)
            store_block(staged_k + j * 32, static_cast<unsigned char*>(new_k[b]) + j * block_bytes, kv_dtype);
        else
            store_block(staged_v + (j - k_blocks) * 32,
                        static_cast<unsigned char*>(new_v[b]) + (j - k_blocks) * block_bytes, kv_dtype);
}

__global__ void cast_kernel(const float* in, std::uint64_t n, void* out, int wd) {
    for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
        store(out, i, in[i], wd);
}

__global__ void add_kernel(float* x, const float* y, std::uint64_t n) {
    for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
        x[i] += y[i];
}

// h[b][i] = SiLU(gate) · up (gated; gate and up side by side in each row) or SiLU(up), in the weight format.
__global__ void silu_kernel(const float* up, std::uint64_t batch, std::uint64_t inter, bool gated, void* h, int wd) {
    const std::uint64_t width = gated ? 2 * inter : inter;
    for (std::uint64_t j = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; j < batch * inter;
         j += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
        const std::uint64_t b = j / inter, i = j % inter;
        const float g = up[b * width + i];
        const float silu = g / (1.0f + __expf(-g));
        store(h, j, gated ? silu * up[b * width + inter + i] : silu, wd);
    }
}

unsigned grid_for(std::uint64_t n) { return static_cast<unsigned>(std::min<std::uint64_t>((n + 255) / 256, 4096)); }

}  // namespace

void launch_embed(const void* table, int table_dtype, const std::uint64_t* tokens, std::uint64_t batch,
                  std::uint64_t hidden, float* x) {
    embed_kernel<<<static_cast<unsigned>(batch), 256>>>(table, table_dtype, tokens, hidden, x);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_rms_norm(const float* x, std::uint64_t batch, std::uint64_t n, void* out, int out_dtype) {
    rms_norm_kernel<<<static_cast<unsigned>(batch), 256>>>(x, n, out, out_dtype);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_rope_store(const float* qkv, const RopeShape& sh, const std::uint64_t* positions, void* const* new_k,
                       void* const* new_v, int kv_dtype, float* q, float* staged, std::uint64_t batch) {
    rope_store_kernel<<<static_cast<unsigned>(batch), 256>>>(qkv, sh, positions, new_k, new_v, kv_dtype, q, staged);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_cast(const float* in, std::uint64_t n, void* out, int out_dtype) {
    cast_kernel<<<grid_for(n), 256>>>(in, n, out, out_dtype);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_add(float* x, const float* y, std::uint64_t n) {
    add_kernel<<<grid_for(n), 256>>>(x, y, n);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_silu(const float* up, std::uint64_t batch, std::uint64_t inter, bool gated, void* h, int h_dtype) {
    silu_kernel<<<grid_for(batch * inter), 256>>>(up, batch, inter, gated, h, h_dtype);
    KVSCOPE_CUDA(cudaGetLastError());
}

}  // namespace kvscope::probe::cuda
