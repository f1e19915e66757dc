#pragma once
// The small kernels of the CUDA decode step (cuda_step.cu), each behind a launcher that checks its launch:
// the embedding lookup, RMSNorm, RoPE with the new K and V written into the cache in its format (llama.cpp's
// blocks too), the casts and sums between the GEMMs, SiLU. Formats are cuda_attention.h's codes (kFp32 …).

#include <cstdint>

namespace kvscope::probe::cuda {

// x[b] = the embedding row of token b (table in `table_dtype`), in fp32; b < batch.
void launch_embed(const void* table, int table_dtype, const std::uint64_t* tokens, std::uint64_t batch,
                  std::uint64_t hidden, float* x);
// out[b] = RMSNorm(x[b]) in `out_dtype` (the GEMMs' input), each of `batch` rows of n.
void launch_rms_norm(const float* x, std::uint64_t batch, std::uint64_t n, void* out, int out_dtype);

struct RopeShape {
    std::uint32_t q_heads, kv_heads, dk, dv;
    std::uint64_t row;  // values of one sequence's QKV output
};
// For each of `batch` sequences: RoPE on its query and key heads at its position, the queries to `q` in fp32,
// the new K and V rows into new_k[b], new_v[b] in `kv_dtype` and, in fp32, to `staged` (K then V, a sequence
// after another: llama.cpp's blocks are written from there, and the float64 check compares the cache with it).
void launch_rope_store(const float* qkv, const RopeShape& sh, const std::uint64_t* positions, void* const* new_k,
                       void* const* new_v, int kv_dtype, float* q, float* staged, std::uint64_t batch);
// out[i] = in[i] in `out_dtype`, i < n.
void launch_cast(const float* in, std::uint64_t n, void* out, int out_dtype);
// x[i] += y[i], i < n.
void launch_add(float* x, const float* y, std::uint64_t n);
// h[b][i] = SiLU(gate) · up (gated; gate and up side by side in each row of `up`) or SiLU(up), in `h_dtype`.
void launch_silu(const float* up, std::uint64_t batch, std::uint64_t inter, bool gated, void* h, int h_dtype);

}  // namespace kvscope::probe::cuda
