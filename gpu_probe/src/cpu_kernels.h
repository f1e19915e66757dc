#pragma once
// The CPU backend's inner loops: element conversion, random fill, and a read pass.
// Vector versions (AVX2 + F16C) are picked at run time when the CPU has them, so the
// binary runs on any x86-64 (and builds elsewhere with the plain loops).

#include <cstddef>
#include <cstdint>

#include "kvscope/calculator/kv_dtype.h"

namespace kvscope::probe::cpu {

// Bytes per element of the formats stored a value at a time (fp32 4; fp16, bf16 2; fp8, int8 1).
std::size_t element_bytes(KvDtype dtype);
// The formats the kernels read in place: fp32, fp16, bf16.
bool direct(KvDtype dtype);
// The formats the CPU probe stores: those, fp8 (e4m3, e5m2; per-tensor scale, as vLLM stores them), int8 (as
// TensorRT-LLM's INT8 KV cache stores it: one byte a value, the per-tensor scale beside the layer) and
// llama.cpp's q8_0 and q4_0 blocks, which attention converts a tile at a time.
bool stores(KvDtype dtype);
// The per-tensor scale of an int8 cache: value = kInt8Scale · q. TensorRT-LLM calibrates it per layer (amax /
// 127, tensorrt_llm/quantization); the probe's values lie within ±1, so 1/127 (the CUDA backend uses the same).
constexpr float kInt8Scale = 1.0f / 127.0f;
// Bytes of a row of `values` values (the calculator's row_bytes), and the values in `bytes` of whole rows.
std::uint64_t row_size(KvDtype dtype, std::uint64_t values);
std::uint64_t values_in(KvDtype dtype, std::uint64_t bytes);

// dst[i] = value of src element i (every stored format; n a multiple of 32 for the block formats).
void to_float(KvDtype dtype, const void* src, float* dst, std::size_t n);
// Sums `words` 64-bit words (a read-only pass; the sum keeps the compiler from skipping it).
std::uint64_t read_pass(const std::uint64_t* data, std::size_t words);
// x[i] = exp(x[i] - m[i]) and sum[i] += the result (one softmax row step; relative error < 1e-6).
void exp_sub_accumulate(float* x, const float* m, float* sum, std::size_t n);
// Grouped-query kernels reading the stored format directly (converted in registers, never written
// out), so each K or V row is loaded once for every query that shares it: fp32, fp16, bf16, and fp8 e4m3
// (the decode step's fp8 weights).
// dot_group_raw: out[g] = Σ q[g·n + i]·k[i] for g < groups.
void dot_group_raw(KvDtype dtype, const float* q, std::size_t groups, const void* k, std::size_t n, float* out);
// Two K rows at once (each query load feeds two multiply-adds): out0[g], out1[g].
void dot_group_raw2(KvDtype dtype, const float* q, std::size_t groups, const void* k0, const void* k1, std::size_t n,
                    float* out0, float* out1);
// Memory a kernel asks the cache for while it computes, one 64-byte line at a time (into L2), so
// that the next phase's reads overlap this phase's arithmetic instead of following it. The kernel
// advances `next`; nothing is read from it.
struct Ahead {
    const std::byte* next = nullptr;
    const std::byte* end = nullptr;
};
// axpy_tokens_raw: for `tokens` rows x_t (row stride `stride` elements, n used),
// y[g·n + i] += Σ_t p[t·p_stride + g]·x_t[i]: several tokens per pass over y. With `ahead`, the
// grouped-query kernel (groups of 4 and 8) asks for one line of it per two tokens it weighs.
void axpy_tokens_raw(KvDtype dtype, const float* p, std::size_t p_stride, std::size_t groups, const void* x,
                     std::size_t stride, std::size_t tokens, float* y, std::size_t n, Ahead* ahead = nullptr);
// Asks for every 64-byte line of [p, p + bytes) without waiting for them: into L1 (and L2) for
// what is read next, into L2 for what a later phase reads.
enum class CacheLevel { l1, l2 };
void prefetch(const std::byte* p, std::size_t bytes, CacheLevel level);
// True when the vector versions are in use.
bool vectorized();

// A bf16 cache with queries rounded to bf16 (as GPU bf16 kernels keep them): the CPU's BF16 dot
// instruction does two multiply-adds per lane, more than twice the fp32 rate. True when this CPU
// has it (AVX-512 BF16 with its 256-bit forms).
bool has_bf16_dot();
// dst[i] = src[i] rounded to the nearest bf16.
void to_bf16(const float* src, std::uint16_t* dst, std::size_t n);
// Like dot_group_raw2 for bf16 queries and rows; needs has_bf16_dot(), groups % 4 == 0, n % 16 == 0.
void dot_group_bf16x2(const std::uint16_t* q, std::size_t groups, const std::uint16_t* k0, const std::uint16_t* k1,
                      std::size_t n, float* out0, float* out1);

}  // namespace kvscope::probe::cpu
