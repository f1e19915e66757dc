// The tensor-core kernel of the fused split-K decode attention (cuda_decode_kernels.h), for fp16, bf16
// and fp8 (E4M3, E5M2) caches with K and V heads of 64 or 128 values. With 5 or more query heads per KV head the stream
// kernel is limited by CUDA-core arithmetic, not by memory (Llama 3 70B read at 0.50 of the ceiling on
// an H200, Llama 3.1 405B at 0.25; docs/gpu-results.md). Engines use tensor cores there: the query
// heads of a group become the rows of an MMA tile (TensorRT-LLM's XQA kernel, FlashInfer's tensor-core
// decode; SGLang switches to it above 4 heads per group). This kernel does the same with WMMA's
// 16×16×16 tiles, which sm_80 and sm_90 run as mma.sync:
//   - a block takes up to 16 query heads of one KV head (zero rows fill a smaller group) and one split of
//     the tokens; each of its four warps takes every fourth 16-token tile of the split;
//   - a warp copies its next tile's K and V rows into shared memory with cp.async while it computes on
//     the current one (rows past the sequence's end are zero-filled, never read); an fp8 tile is loaded
//     into registers instead and widened to fp16 on its way into shared memory — exactly: every E4M3
//     and E5M2 value is an fp16 value — so fp8 caches multiply as fp16 (the other fused kernels do not
//     read fp8 at all);
//   - scores S = Q·Kᵀ (16 heads × 16 tokens) on tensor cores; a running softmax per head in base 2, as
//     the stream kernel keeps it; O += P·V on tensor cores, O held in accumulator fragments;
//   - the warps are joined at the end into the partial results the other fused kernels write, which
//     combine_kernel (cuda_attention.cu) joins across splits.
// Precision: engines round the queries and the softmax weights to the cache's 16-bit format before the
// MMA, which costs about 2^-8 relative error in bf16, and the probe's check against float64 (1e-3)
// would no longer tell a faulty kernel from rounding. Here each is split in two 16-bit parts, x = hi +
// lo with lo = x − hi rounded again, and both parts are multiplied (two MMAs instead of one): each
// product then carries about 2^-16 relative error (bf16: 16 significant bits; fp16's lo part loses
// bits below 2^-14), far inside the check, which is unchanged. K and V are exact in their format. The
// sums are fp32: a tile's within the MMA, the running output on CUDA cores. The extra MMAs cost nothing
// a step would notice: the kernel waits on memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <mma.h>

#include <type_traits>

#include "cuda_decode_common.cuh"
#include "cuda_decode_kernels.h"
#include "decode_choice.h"

namespace kvscope::probe::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kM = 16;         // query heads per tile (kMmaHeads)
constexpr int kN = 16;         // tokens per tile
constexpr int kStages = 2;     // tiles per warp in shared memory: the one computed on and the one being copied
constexpr int kScoreLd = 20;   // floats per row of a warp's scores (16 and 4 of padding, off the bank pattern)
constexpr int kWeightLd = 24;  // 16-bit values per row of a warp's softmax weights (16 and 8 of padding)
static_assert(kM == kMmaHeads, "a block's query heads are the MMA tile's rows");
static_assert(kN * 64 / 8 % 32 == 0, "a warp copies a tile in whole rounds of 16-byte pieces");

constexpr std::size_t round128(std::size_t bytes) { return (bytes + 127) / 128 * 128; }

// The block's dynamic shared memory for heads of D values, every part starting on 128 bytes (WMMA wants
// 32): the queries' two parts; each warp's K and V tiles for kStages tiles (which hold the warps' outputs
// at the end); each warp's scores, weights' two parts and rescaling factors; the warps' maxima and sums.
template <int D>
struct MmaSmem {
    static constexpr int kRow = D + 8;  // 16-bit values per shared row of Q, K and V (8 of padding)
    static constexpr std::size_t q = round128(std::size_t{kM} * kRow * 2);
    static constexpr std::size_t tile = round128(std::size_t{kN} * kRow * 2);
    static constexpr std::size_t stages = std::size_t{kMmaWarps} * kStages * 2 * tile;
    static constexpr std::size_t scores = round128(std::size_t{kM} * kScoreLd * 4);
    static constexpr std::size_t weights = round128(std::size_t{kM} * kWeightLd * 2);
    static constexpr std::size_t factors = round128(std::size_t{kM} * 4);
    static constexpr std::size_t per_warp = scores + 2 * weights + factors;
    static constexpr std::size_t joins = round128(std::size_t{2} * kMmaWarps * kM * 4);
    static constexpr std::size_t total = 2 * q + stages + kMmaWarps * per_warp + joins;
    static_assert(stages >= std::size_t{kMmaWarps} * kM * D * 4, "the stages hold the warps' outputs at the end");
};

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

// The 16-bit type the MMA multiplies for a cache format (cuda_attention.h's codes): bf16 for bf16, fp16 for
// fp16 and both fp8 formats.
template <int F>
using Mul = std::conditional_t<F == kBf16, __nv_bfloat16, __half>;

// 16 fp8 values (E4M3 or E5M2) as 16 fp16 values at `to` (16-byte aligned): two pairs to each 32-bit
// word, the lower byte to the lower half, as cvt.rn.f16x2 and the fallback of cuda_fp8.hpp both do.
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

template <int F, int D>
__global__ void __launch_bounds__(kMmaWarps * 32, 2)
    decode_mma_kernel(const SlotDev* slots, const float* q, ShapeDev sh, SplitDev sp, float* part_out, float* part_ml) {
    using T = Mul<F>;
    constexpr bool kFp8 = F == kFp8E4m3 || F == kFp8E5m2;
    using L = MmaSmem<D>;
    constexpr int kRow = L::kRow;
    using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
    using RowsA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
    extern __shared__ __align__(128) unsigned char smem[];

    const BlockWork w = block_work(slots, sh, sp, kM);
    const unsigned split = w.split, slot = w.slot, h = w.h, head0 = w.head0, heads = w.heads;
    const SlotDev s = w.s;
    const std::uint64_t t_begin = w.t_begin, t_end = w.t_end;
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    T* const q_hi = reinterpret_cast<T*>(smem);
    T* const q_lo = reinterpret_cast<T*>(smem + L::q);
    unsigned char* const stages = smem + 2 * L::q;
    unsigned char* const mine = stages + L::stages + warp * L::per_warp;
    float* const scores = reinterpret_cast<float*>(mine);
    T* const p_hi = reinterpret_cast<T*>(mine + L::scores);
    T* const p_lo = reinterpret_cast<T*>(mine + L::scores + L::weights);
    float* const factors = reinterpret_cast<float*>(mine + L::scores + 2 * L::weights);
    float* const m_w = reinterpret_cast<float*>(stages + L::stages + kMmaWarps * L::per_warp);  // [warp][head]
    float* const l_w = m_w + kMmaWarps * kM;
    const auto k_tile = [&](int stage) {
        return reinterpret_cast<T*>(stages + (std::size_t{warp} * kStages + stage) * 2 * L::tile);
    };
    const auto v_tile = [&](int stage) {
        return reinterpret_cast<T*>(stages + ((std::size_t{warp} * kStages + stage) * 2 + 1) * L::tile);
    };

    // The queries in base 2 (q·k / sqrt(D) · log2(e), so that exp2 gives e^(score − max)), as two parts.
    const float scale = rsqrtf(static_cast<float>(D)) * 1.4426950408889634f;
    const float* qg = q + (static_cast<std::size_t>(s.layer) * sh.q_heads + head0) * D;
    for (unsigned i = threadIdx.x; i < kM * D; i += kMmaWarps * 32) {
        const unsigned g = i / D, d = i % D;
        split_16(g < heads ? qg[g * D + d] * scale : 0.0f, q_hi[g * kRow + d], q_lo[g * kRow + d]);
    }
    // Which row (query head) each element of an accumulator fragment holds: WMMA does not say, so a
    // fragment is loaded from a matrix whose every element is its row number.
    for (unsigned i = lane; i < kM * kN; i += 32) {
        const unsigned row = i / kN;
        scores[row * kScoreLd + i % kN] = static_cast<float>(row);
    }
    __syncwarp();
    Acc rows;
    wmma::fill_fragment(rows, 0.0f);  // overwritten by the load; said for clang-tidy, which cannot see into it
    wmma::load_matrix_sync(rows, scores, kScoreLd, wmma::mem_row_major);
    int row_of[Acc::num_elements];
#pragma unroll
    for (int i = 0; i < Acc::num_elements; ++i) row_of[i] = static_cast<int>(rows.x[i]);
    __syncthreads();  // the queries are in; the scores are rewritten below

    // Token t's K head starts t·row_k values after k_rows, its V head t·row_v values after v_rows.
    using Stored = std::conditional_t<kFp8, unsigned char, T>;
    const Stored* const k_rows = static_cast<const Stored*>(s.k) + std::size_t{h} * D;
    const Stored* const v_rows = static_cast<const Stored*>(s.v) + std::size_t{h} * sh.v_stride;
    const std::uint64_t tiles = t_end > t_begin ? (t_end - t_begin + kN - 1) / kN : 0;
    // Starts fetching tile `j` of the split: 16-byte pieces of 16 rows of K and V, D / 8 to a row of a
    // 16-bit cache, copied into `stage` with cp.async; D / 16 to a row of an fp8 cache, loaded into
    // `k8` and `v8` for land_tile.
    constexpr int kPerPiece = kFp8 ? 16 : 8;          // values in a 16-byte piece
    constexpr int kPieces = kN * D / kPerPiece / 32;  // pieces of K (and of V) per lane and tile
    uint4 k8[kFp8 ? kPieces : 1], v8[kFp8 ? kPieces : 1];
    const auto fetch_tile = [&](int stage, std::uint64_t j) {
        const std::uint64_t t0 = t_begin + j * kN;
#pragma unroll
        for (int i = 0; i < kPieces; ++i) {
            const int c = static_cast<int>(lane) + 32 * i, row = c / (D / kPerPiece),
                      col = c % (D / kPerPiece) * kPerPiece;
            const bool in = t0 + row < t_end;
            const std::uint64_t t = in ? t0 + row : t_begin;  // a valid address, not read when not `in`
            if constexpr (kFp8) {
                const uint4 zero = make_uint4(0, 0, 0, 0);
                k8[i] = in ? __ldg(reinterpret_cast<const uint4*>(k_rows + t * sh.row_k + col)) : zero;
                v8[i] = in ? __ldg(reinterpret_cast<const uint4*>(v_rows + t * sh.row_v + col)) : zero;
            } else {
                copy_16(k_tile(stage) + row * kRow + col, k_rows + t * sh.row_k + col, in);
                copy_16(v_tile(stage) + row * kRow + col, v_rows + t * sh.row_v + col, in);
            }
        }
    };
    // An fp8 tile fetched into registers, widened into `stage`.
    const auto land_tile = [&](int stage) {
        if constexpr (kFp8) {  // a 16-bit tile is copied straight in
#pragma unroll
            for (int i = 0; i < kPieces; ++i) {
                const int c = static_cast<int>(lane) + 32 * i, row = c / (D / kPerPiece),
                          col = c % (D / kPerPiece) * kPerPiece;
                widen_16<F>(k8[i], k_tile(stage) + row * kRow + col);
                widen_16<F>(v8[i], v_tile(stage) + row * kRow + col);
            }
        }
    };

    Acc o[D / 16];
#pragma unroll
    for (auto& f : o) wmma::fill_fragment(f, 0.0f);
    // The lane pair (2r, 2r + 1) keeps head r's running maximum and sum, and takes half of its tile row each.
    const unsigned r = lane / 2, half = lane % 2;
    float m_run = -INFINITY, l_run = 0.0f;
    if (warp < tiles) fetch_tile(0, warp);
    copies_commit();
    int stage = 0;
    for (std::uint64_t j = warp; j < tiles; j += kMmaWarps, stage ^= 1) {
        if constexpr (kFp8) land_tile(stage);  // before the registers take the next tile
        if (j + kMmaWarps < tiles) fetch_tile(stage ^ 1, j + kMmaWarps);
        copies_commit();  // an empty group on the last tile, so that the wait below counts alike
        copies_wait<1>();
        __syncwarp();  // every lane's copies of this tile are in
        const T* const kt = k_tile(stage);
        const T* const vt = v_tile(stage);

        Acc st;
        wmma::fill_fragment(st, 0.0f);
#pragma unroll
        for (int kc = 0; kc < D / 16; ++kc) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;  // Kᵀ: token-major rows, read as columns
            wmma::load_matrix_sync(kb, kt + kc * 16, kRow);
            RowsA qa;
            wmma::load_matrix_sync(qa, q_hi + kc * 16, kRow);
            wmma::mma_sync(st, qa, kb, st);
            wmma::load_matrix_sync(qa, q_lo + kc * 16, kRow);
            wmma::mma_sync(st, qa, kb, st);
        }
        wmma::store_matrix_sync(scores, st, kScoreLd, wmma::mem_row_major);
        __syncwarp();

        // The running softmax of head r over this tile: tokens past the end weigh 0.
        const std::uint64_t t0 = t_begin + j * kN;
        float x[8], mx = -INFINITY;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const unsigned col = half * 8 + e;
            x[e] = t0 + col < t_end ? scores[r * kScoreLd + col] : -INFINITY;
            mx = fmaxf(mx, x[e]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        const float m_new = fmaxf(m_run, mx);
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float c = exp2f(m_run - base);
        float sum = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const float p = exp2f(x[e] - base);
            const unsigned at = r * kWeightLd + half * 8 + e;
            split_16(p, p_hi[at], p_lo[at]);
            sum += p;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        l_run = l_run * c + sum;
        m_run = m_new;
        if (half == 0) factors[r] = c;
        __syncwarp();

        float cf[Acc::num_elements];
#pragma unroll
        for (int i = 0; i < Acc::num_elements; ++i) cf[i] = factors[row_of[i]];
        RowsA pa_hi, pa_lo;
        wmma::load_matrix_sync(pa_hi, p_hi, kWeightLd);
        wmma::load_matrix_sync(pa_lo, p_lo, kWeightLd);
#pragma unroll
        for (int nc = 0; nc < D / 16; ++nc) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
            wmma::load_matrix_sync(vb, vt + nc * 16, kRow);
            // This tile's P·V from zero, added to the rescaled output on CUDA cores: the tensor cores' fp32
            // sums round toward zero on some GPUs, and thousands of tiles summed inside them would drift.
            Acc pv;
            wmma::fill_fragment(pv, 0.0f);
            wmma::mma_sync(pv, pa_hi, vb, pv);
            wmma::mma_sync(pv, pa_lo, vb, pv);
#pragma unroll
            for (int i = 0; i < Acc::num_elements; ++i) o[nc].x[i] = o[nc].x[i] * cf[i] + pv.x[i];
        }
        __syncwarp();  // this stage, the scores and the weights are rewritten next
    }
    copies_wait<0>();

    // Join the warps: their outputs go where their tiles were.
    __syncthreads();
    auto* const o_w = reinterpret_cast<float*>(stages);  // [warp][head][D]
#pragma unroll
    for (int nc = 0; nc < D / 16; ++nc)
        wmma::store_matrix_sync(o_w + std::size_t{warp} * kM * D + nc * 16, o[nc], D, wmma::mem_row_major);
    if (half == 0) {
        m_w[warp * kM + r] = m_run;
        l_w[warp * kM + r] = l_run;
    }
    __syncthreads();
    const std::size_t first_row = static_cast<std::size_t>(slot) * sh.q_heads + head0;
    constexpr float kLn2 = 0.6931471805599453f;
    for (unsigned i = threadIdx.x; i < heads * D; i += kMmaWarps * 32) {
        const unsigned g = i / D, d = i % D;
        float mx = -INFINITY;
#pragma unroll
        for (unsigned v = 0; v < kMmaWarps; ++v) mx = fmaxf(mx, m_w[v * kM + g]);
        const float base = mx == -INFINITY ? 0.0f : mx;
        float acc = 0, sum = 0;
#pragma unroll
        for (unsigned v = 0; v < kMmaWarps; ++v) {
            const float a = exp2f(m_w[v * kM + g] - base);
            acc += o_w[(std::size_t{v} * kM + g) * D + d] * a;
            sum += l_w[v * kM + g] * a;
        }
        part_out[((first_row + g) * sp.splits + split) * sh.dv + d] = acc;
        if (d == 0) {  // combine_kernel works in base e
            part_ml[((first_row + g) * sp.splits + split) * 2] = mx * kLn2;
            part_ml[((first_row + g) * sp.splits + split) * 2 + 1] = sum;
        }
    }
}

template <int F>
DecodeFn mma_for_width(std::uint64_t d) {
    return d == 64 ? decode_mma_kernel<F, 64> : d == 128 ? decode_mma_kernel<F, 128> : nullptr;
}

}  // namespace

std::size_t mma_shared_bytes(std::uint64_t d) {
    return d == 64 ? MmaSmem<64>::total : d == 128 ? MmaSmem<128>::total : 0;
}

DecodeFn mma_kernel(int dtype, std::uint64_t d) {
    switch (dtype) {
        case kFp16:
            return mma_for_width<kFp16>(d);
        case kBf16:
            return mma_for_width<kBf16>(d);
        case kFp8E4m3:
            return mma_for_width<kFp8E4m3>(d);
        case kFp8E5m2:
            return mma_for_width<kFp8E5m2>(d);
        default:
            return nullptr;
    }
}

}  // namespace kvscope::probe::cuda
