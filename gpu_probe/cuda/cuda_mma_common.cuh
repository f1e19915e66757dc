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
#include <type_traits>

#include "cuda_attention.h"

namespace kvscope::probe::cuda::mma {

namespace wmma = nvcuda::wmma;

constexpr int kN = 16;         // tokens per tile (and the MMA tile's rows and depth)
constexpr int kScoreLd = 20;   // floats per row of a tile of scores (16 and 4 of padding, off the bank pattern)
constexpr int kWeightLd = 24;  // 16-bit values per row of a tile of softmax weights (16 and 8 of padding)
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
// floats of this warp's own). The caller syncs before `scratch` is written again.
__device__ __forceinline__ void rows_of_fragment(float* scratch, int (&row_of)[Acc::num_elements]) {
    const unsigned lane = threadIdx.x % 32;
    for (unsigned i = lane; i < 16 * kN; i += 32) {
        const unsigned row = i / kN;
        scratch[row * kScoreLd + i % kN] = static_cast<float>(row);
    }
    __syncwarp();
    Acc rows;
    wmma::fill_fragment(rows, 0.0f);  // overwritten by the load; said for clang-tidy, which cannot see into it
    wmma::load_matrix_sync(rows, scratch, kScoreLd, wmma::mem_row_major);
#pragma unroll
    for (int i = 0; i < Acc::num_elements; ++i) row_of[i] = static_cast<int>(rows.x[i]);
}

// S += Q·Kᵀ for one step of 16 values: the queries' two parts at q_hi and q_lo, 16 token-major K rows at `k`
// (read as the columns of Kᵀ), both `ld` values a row.
template <class T>
__device__ __forceinline__ void add_scores(Acc& st, const T* q_hi, const T* q_lo, const T* k, unsigned ld) {
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;
    wmma::load_matrix_sync(kb, k, ld);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa;
    wmma::load_matrix_sync(qa, q_hi, ld);
    wmma::mma_sync(st, qa, kb, st);
    wmma::load_matrix_sync(qa, q_lo, ld);
    wmma::mma_sync(st, qa, kb, st);
}

// A tile's softmax weights as MMA operands (two 16-bit parts), and each accumulator element's rescaling factor.
template <class T>
struct TileWeights {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> hi, lo;
    float cf[Acc::num_elements];
};

// One 16-token tile's step of a running softmax in base 2, for head r: the lane pair (2r, 2r + 1) keeps its
// maximum and sum, each lane holding 8 of the tile's scores `x` (columns half·8 to half·8 + 7; −inf for tokens
// past the end). The weights go through the warp's scratch as two 16-bit parts, with each head's factor that
// rescales the output so far; they come back as MMA operands (row_of from rows_of_fragment).
template <class T>
__device__ __forceinline__ TileWeights<T> softmax_tile(const float (&x)[8], unsigned r, unsigned half, float& m_run,
                                                       float& l_run, const WarpScratch<T>& scratch,
                                                       const int (&row_of)[Acc::num_elements]) {
    float mx = -INFINITY;
#pragma unroll
    for (const float v : x) mx = fmaxf(mx, v);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m_run, mx);
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    const float c = exp2f(m_run - base);
    float sum = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const float p = exp2f(x[e] - base);
        const unsigned at = r * kWeightLd + half * 8 + e;
        split_16(p, scratch.p_hi[at], scratch.p_lo[at]);
        sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_run = l_run * c + sum;
    m_run = m_new;
    if (half == 0) scratch.factors[r] = c;
    __syncwarp();
    TileWeights<T> w;
#pragma unroll
    for (int i = 0; i < Acc::num_elements; ++i) w.cf[i] = scratch.factors[row_of[i]];
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
