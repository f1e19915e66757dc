#pragma once
// What the tensor-core decode kernels share on the device (cuda_decode_mma.cu for grouped queries,
// cuda_decode_mla.cu for MLA's latent): WMMA's 16×16×16 tiles, the 16-bit type each cache format is
// multiplied in, a float split into two 16-bit parts, cp.async copies into shared memory, fp8 widened
// exactly to fp16, and which row of a tile each accumulator element holds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda_attention.h"

namespace kvscope::probe::cuda::mma {

namespace wmma = nvcuda::wmma;

constexpr int kN = 16;  // tokens per tile (and the MMA tile's rows and depth)
// Rows of a warp's tile of scores and of softmax weights, padded off the bank pattern and 16 bytes apart, so that a
// lane reads and writes its part of a row with 16-byte loads and stores.
constexpr int kScoreLd = 20;   // floats per row of a tile of scores (16 and 4 of padding)
constexpr int kWeightLd = 24;  // 16-bit values per row of a tile of softmax weights (16 and 8 of padding)
static_assert(kScoreLd * 4 % 16 == 0 && kWeightLd * 2 % 16 == 0, "rows of scores and weights on 16 bytes");
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

constexpr std::size_t round128(std::size_t bytes) { return (bytes + 127) / 128 * 128; }

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <class T>
__device__ __forceinline__ T to_16(float x);
template <>
__device__ __forceinline__ __half to_16<__half>(float x) {
    return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 to_16<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
__device__ __forceinline__ float from_16(__half x) { return __half2float(x); }
__device__ __forceinline__ float from_16(__nv_bfloat16 x) { return __bfloat162float(x); }

__device__ __forceinline__ unsigned bits_16(__half x) { return __half_as_ushort(x); }
__device__ __forceinline__ unsigned bits_16(__nv_bfloat16 x) { return __bfloat16_as_ushort(x); }

// x as hi + lo, both in T.
template <class T>
__device__ __forceinline__ void split_16(float x, T& hi, T& lo) {
    hi = to_16<T>(x);
    lo = to_16<T>(x - from_16(hi));
}

// 16 bytes from device memory to shared memory, asynchronously; zeros instead when `copy` is false (the
// source is then not read: PTX's src-size of 0).
__device__ __forceinline__ void copy_16(void* shared, const void* global, bool copy) {
    const auto to = static_cast<unsigned>(__cvta_generic_to_shared(shared));
    const int bytes = copy ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(bytes) : "memory");
}
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's latest groups of copies are still in flight.
template <int N>
__device__ __forceinline__ void copies_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// The cache formats (cuda_attention.h's codes) the tensor-core kernels read, and the 16-bit type each is
// multiplied in: bf16 for bf16, fp16 for fp16 and both fp8 formats.
template <int F>
constexpr bool kIsFp8 = F == kFp8E4m3 || F == kFp8E5m2;
template <int F>
using Mul = std::conditional_t<F == kBf16, __nv_bfloat16, __half>;

// 16 fp8 values (E4M3 or E5M2) as 16 fp16 values at `to` (16-byte aligned): two pairs to each 32-bit
// word, the lower byte to the lower half, as cvt.rn.f16x2 and the fallback of cuda_fp8.hpp both do.
// Exact: every E4M3 and E5M2 value is an fp16 value.
template <int F>
__device__ __forceinline__ void widen_16(const uint4& raw, __half* to) {
    constexpr __nv_fp8_interpretation_t kKind = F == kFp8E5m2 ? __NV_E5M2 : __NV_E4M3;
    const unsigned in[4] = {raw.x, raw.y, raw.z, raw.w};
    unsigned out[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const __half2_raw two =
            __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(in[i / 2] >> (16 * (i % 2))), kKind);
        out[i] = static_cast<unsigned>(two.x) | (static_cast<unsigned>(two.y) << 16);
    }
    auto* const to16 = reinterpret_cast<uint4*>(to);
    to16[0] = make_uint4(out[0], out[1], out[2], out[3]);
    to16[1] = make_uint4(out[4], out[5], out[6], out[7]);
}

// Each warp's scratch in shared memory, every part on 128 bytes: a 16 × 16 tile of scores, the softmax
// weights' two 16-bit parts, one rescaling factor per head.
template <class T>
struct WarpScratch {
    static constexpr std::size_t scores_bytes = round128(std::size_t{16} * kScoreLd * 4);
    static constexpr std::size_t weights_bytes = round128(std::size_t{16} * kWeightLd * 2);
    static constexpr std::size_t bytes = scores_bytes + 2 * weights_bytes + round128(16 * 4);
    float* scores;
    T* p_hi;
    T* p_lo;
    float* factors;
    __device__ explicit WarpScratch(unsigned char* at)
        : scores(reinterpret_cast<float*>(at)),
          p_hi(reinterpret_cast<T*>(at + scores_bytes)),
          p_lo(reinterpret_cast<T*>(at + scores_bytes + weights_bytes)),
          factors(reinterpret_cast<float*>(at + scores_bytes + 2 * weights_bytes)) {}
};

// The block's 16 query heads from `qg` (D floats a head; rows from `heads` on are zero) into shared memory as two
// 16-bit parts, `ld` values a row, scaled to base 2: q / sqrt(D) · log2(e), so that exp2 gives e^(score − max).
// Every kernel and the float64 reference scale scores by 1/sqrt(dk).
template <class T, int D>
__device__ __forceinline__ void load_queries(const float* qg, unsigned heads, T* q_hi, T* q_lo, int ld) {
    const float scale = rsqrtf(static_cast<float>(D)) * kLog2e;
    for (unsigned i = threadIdx.x; i < 16 * D; i += blockDim.x) {
        const unsigned g = i / D, d = i % D;
        split_16(g < heads ? qg[g * D + d] * scale : 0.0f, q_hi[g * ld + d], q_lo[g * ld + d]);
    }
}

// Which row (query head) each element of an accumulator fragment holds: WMMA does not say, so a fragment
// is loaded from a matrix whose every element is its row number, written into `scratch` (16 × kScoreLd
// floats of this warp's own). The caller syncs before `scratch` is written again. The rows come packed, element i's
// in bits 4i to 4i + 3 (row_at), in one register rather than eight, which the kernels' other values need more.
static_assert(Acc::num_elements * 4 <= 32, "a fragment's rows fit one 32-bit word");
__device__ __forceinline__ unsigned rows_of_fragment(float* scratch) {
    const unsigned lane = threadIdx.x % 32;
    for (unsigned i = lane; i < 16 * kN; i += 32) {
        const unsigned row = i / kN;
        scratch[row * kScoreLd + i % kN] = static_cast<float>(row);
    }
    __syncwarp();
    Acc rows;
    wmma::fill_fragment(rows, 0.0f);  // overwritten by the load; said for clang-tidy, which cannot see into it
    wmma::load_matrix_sync(rows, scratch, kScoreLd, wmma::mem_row_major);
    unsigned packed = 0;
#pragma unroll
    for (int i = 0; i < Acc::num_elements; ++i) packed |= static_cast<unsigned>(rows.x[i]) << (4 * i);
    return packed;
}
__device__ __forceinline__ unsigned row_at(unsigned rows, int i) { return (rows >> (4 * i)) & 15u; }

// S += Q·Kᵀ for one step of 16 values: the queries' two parts at q_hi and q_lo, 16 token-major K rows at `k`
// (read as the columns of Kᵀ), all `ld` values a row.
template <class T>
__device__ __forceinline__ void add_scores(Acc& st, const T* q_hi, const T* q_lo, const T* k, unsigned ld) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qh, ql;
    wmma::load_matrix_sync(qh, q_hi, ld);
    wmma::load_matrix_sync(ql, q_lo, ld);
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;
    wmma::load_matrix_sync(kb, k, ld);
    wmma::mma_sync(st, qh, kb, st);
    wmma::mma_sync(st, ql, kb, st);
}

// A tile's softmax weights as MMA operands (two 16-bit parts), and each accumulator element's rescaling factor.
template <class T>
struct TileWeights {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> hi, lo;
    float cf[Acc::num_elements];
};

// Head r's 8 scores of a tile that lane `half` of its pair takes (columns half·8 to half·8 + 7), from a warp's
// tile of scores with two 16-byte loads; tokens from `left` on (past the end) are −inf.
__device__ __forceinline__ void read_scores(const float* scores, unsigned r, unsigned half, std::uint64_t left,
                                            float (&x)[8]) {
    const auto* const row = reinterpret_cast<const float4*>(scores + r * kScoreLd + half * 8);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const float4 f = row[i];
        x[4 * i] = f.x;
        x[4 * i + 1] = f.y;
        x[4 * i + 2] = f.z;
        x[4 * i + 3] = f.w;
    }
    const unsigned valid = left < kN ? static_cast<unsigned>(left) : kN;
#pragma unroll
    for (int e = 0; e < 8; ++e)
        if (half * 8 + e >= valid) x[e] = -INFINITY;
}

// One 16-token tile's step of a running softmax in base 2, for head r: the lane pair (2r, 2r + 1) keeps its
// maximum and sum, each lane holding 8 of the tile's scores `x` (columns half·8 to half·8 + 7; −inf for tokens
// past the end). The weights go through the warp's scratch as two 16-bit parts (a 16-byte store each), with each
// head's factor that rescales the output so far; they come back as MMA operands (rows from rows_of_fragment).
// The 16-byte loads and stores of the scratch (read_scores too) took gpt-oss-20b's attention at 32k from 0.726
// to 0.779 of the read ceiling on an H200, and fp8 caches from 0.336 to 0.396 (docs/gpu-results.md, 2026-12-04).
template <class T>
__device__ __forceinline__ TileWeights<T> softmax_tile(const float (&x)[8], unsigned r, unsigned half, float& m_run,
                                                       float& l_run, const WarpScratch<T>& scratch, unsigned rows) {
    float mx = -INFINITY;
#pragma unroll
    for (const float v : x) mx = fmaxf(mx, v);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m_run, mx);
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    const float c = exp2f(m_run - base);
    float sum = 0.0f;
    unsigned hi[4], lo[4];  // two 16-bit weights to a word, the lower column in the lower half
#pragma unroll
    for (int e = 0; e < 8; e += 2) {
        T h0, l0, h1, l1;
        const float p0 = exp2f(x[e] - base), p1 = exp2f(x[e + 1] - base);
        split_16(p0, h0, l0);
        split_16(p1, h1, l1);
        hi[e / 2] = bits_16(h0) | (bits_16(h1) << 16);
        lo[e / 2] = bits_16(l0) | (bits_16(l1) << 16);
        sum += p0;
        sum += p1;
    }
    *reinterpret_cast<uint4*>(scratch.p_hi + r * kWeightLd + half * 8) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
    *reinterpret_cast<uint4*>(scratch.p_lo + r * kWeightLd + half * 8) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_run = l_run * c + sum;
    m_run = m_new;
    if (half == 0) scratch.factors[r] = c;
    __syncwarp();
    TileWeights<T> w;
#pragma unroll
    for (int i = 0; i < Acc::num_elements; ++i) w.cf[i] = scratch.factors[row_at(rows, i)];
    wmma::load_matrix_sync(w.hi, scratch.p_hi, kWeightLd);
    wmma::load_matrix_sync(w.lo, scratch.p_lo, kWeightLd);
    return w;
}

// o = o·c + P·V for 16 columns of V starting at `v` (row-major, `ld` values a row). The tile's P·V is summed
// from zero and added to the rescaled output on CUDA cores: the tensor cores' fp32 sums round toward zero on
// some GPUs, and thousands of tiles summed inside them would drift.
template <class T>
__device__ __forceinline__ void add_weighted_values(Acc& o, const TileWeights<T>& w, const T* v, unsigned ld) {
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
    wmma::load_matrix_sync(vb, v, ld);
    Acc pv;
    wmma::fill_fragment(pv, 0.0f);
    wmma::mma_sync(pv, w.hi, vb, pv);
    wmma::mma_sync(pv, w.lo, vb, pv);
#pragma unroll
    for (int i = 0; i < Acc::num_elements; ++i) o.x[i] = o.x[i] * w.cf[i] + pv.x[i];
}

}  // namespace kvscope::probe::cuda::mma
