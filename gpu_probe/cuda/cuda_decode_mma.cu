// The tensor-core kernel of the fused split-K decode attention (cuda_decode_kernels.h), for fp16, bf16
// and fp8 (E4M3, E5M2) caches with K and V heads of 64 or 128 values. With 5 or more query heads per KV head the stream
// kernel is limited by CUDA-core arithmetic, not by memory (Llama 3 70B read at 0.50 of the ceiling on
// an H200, Llama 3.1 405B at 0.25; docs/gpu-results.md). Engines use tensor cores there: the query
// heads of a group become the rows of an MMA tile (TensorRT-LLM's XQA kernel, FlashInfer's tensor-core
// decode; SGLang switches to it above 4 heads per group). This kernel does the same with WMMA's
// 16×16×16 tiles, which sm_80 and sm_90 run as mma.sync:
//   - a block takes up to 16 query heads of one KV head (zero rows fill a smaller group) and one split of
//     the tokens; each of its four warps takes every fourth 16-token tile of the split;
//   - a warp copies its next tile's K and V rows (its next two with heads of 64 in a 16-bit cache) into shared
//     memory with cp.async while it computes on the current one (rows past the sequence's end are zero-filled, never
//     read); a split with no tokens leaves at once; an fp8 tile is loaded
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
#include "cuda_decode_common.cuh"
#include "cuda_decode_kernels.h"
#include "cuda_mma_common.cuh"
#include "decode_choice.h"

namespace kvscope::probe::cuda {

namespace {

namespace wmma = nvcuda::wmma;
using mma::Acc;
using mma::copies_commit;
using mma::copies_wait;
using mma::copy_16;
using mma::kLn2;
using mma::kN;
using mma::kScoreLd;
using mma::Mul;
using mma::round128;
using mma::widen_16;

constexpr int kM = 16;  // query heads per tile (kMmaHeads)
// Tiles per warp in shared memory with heads of D values: the one computed on and the ones being copied. A tile of
// heads of 64 is 4 KiB of K and V, half of one at 128, so a warp keeps two on their way. Measured on an H200
// (2026-12-04, docs/gpu-results.md), gpt-oss-20b: two stages, 4 blocks an SM and 8 splits read 0.69–0.70 of the
// ceiling at 32k and 0.79 at 128k; three stages, 3 blocks an SM and 4 splits 0.75–0.78 and 0.85–0.87. Three
// stages at 128 would take 122.5 KiB a block: one block an SM. An fp8 cache keeps one tile ahead in registers and
// uses two of the three; its 148–158 registers a thread hold it to 3 blocks an SM whatever its shared memory.
template <int D>
constexpr int kStagesOf = D == 64 ? 3 : 2;
static_assert(kM == kMmaHeads, "a block's query heads are the MMA tile's rows");
static_assert(kN * 64 / 8 % 32 == 0, "a warp copies a tile in whole rounds of 16-byte pieces");

// The block's dynamic shared memory for heads of D values, every part starting on 128 bytes (WMMA wants
// 32): the queries' two parts; each warp's K and V tiles for kStages tiles (which hold the warps' outputs
// at the end); each warp's scratch; the warps' maxima and sums.
template <int D>
struct MmaSmem {
    static constexpr int kStages = kStagesOf<D>;
    static constexpr int kRow = D + 8;  // 16-bit values per shared row of Q, K and V (8 of padding)
    static constexpr std::size_t q = round128(std::size_t{kM} * kRow * 2);
    static constexpr std::size_t tile = round128(std::size_t{kN} * kRow * 2);
    static constexpr std::size_t stages = std::size_t{kMmaWarps} * kStages * 2 * tile;
    static constexpr std::size_t per_warp = mma::WarpScratch<__half>::bytes;
    static constexpr std::size_t joins = round128(std::size_t{2} * kMmaWarps * kM * 4);
    static constexpr std::size_t total = 2 * q + stages + kMmaWarps * per_warp + joins;
    static_assert(stages >= std::size_t{kMmaWarps} * kM * D * 4, "the stages hold the warps' outputs at the end");
};

// NOLINTBEGIN(readability-function-size): a device kernel, one pass over the cache in registers
template <int F, int D>
__global__ void __launch_bounds__(kMmaWarps * 32, 2)
    decode_mma_kernel(const SlotDev* slots, const float* q, ShapeDev sh, SplitDev sp, float* part_out, float* part_ml) {
    using T = Mul<F>;
    constexpr bool kFp8 = mma::kIsFp8<F>;
    using L = MmaSmem<D>;
    constexpr int kRow = L::kRow;
    constexpr int kStages = L::kStages;
    // Tiles a warp has on their way while it computes: kStages − 1 copies into shared memory (cp.async), or one
    // fp8 tile in registers.
    constexpr int kAhead = kFp8 ? 1 : kStages - 1;
    extern __shared__ __align__(128) unsigned char smem[];

    const BlockWork w = block_work(slots, sh, sp, kM);
    const unsigned split = w.split, slot = w.slot, h = w.h, head0 = w.head0, heads = w.heads;
    const SlotDev s = w.s;
    const std::uint64_t t_begin = w.t_begin, t_end = w.t_end;
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::size_t first_row = static_cast<std::size_t>(slot) * sh.q_heads + head0;
    // Where head g's partial result of this split goes: its (max, sum) pair in part_ml, its dv values in part_out.
    const auto partial = [&](unsigned g) { return (first_row + g) * sp.splits + split; };
    // A split past the end of its sequence (a sliding-window layer's, a shorter sequence's) reads nothing: its
    // heads' (max, sum) say so, and combine_kernel reads no partial output for it. Leaving at once frees the block's
    // place on its SM for a split with tokens (three in eight of gpt-oss-20b's blocks at 32k are such).
    if (t_begin >= t_end) {
        for (unsigned g = threadIdx.x; g < heads; g += blockDim.x) {
            part_ml[partial(g) * 2] = -INFINITY;
            part_ml[partial(g) * 2 + 1] = 0.0f;
        }
        return;
    }

    T* const q_hi = reinterpret_cast<T*>(smem);
    T* const q_lo = reinterpret_cast<T*>(smem + L::q);
    unsigned char* const stages = smem + 2 * L::q;
    const mma::WarpScratch<T> mine(stages + L::stages + warp * L::per_warp);
    float* const scores = mine.scores;
    float* const m_w = reinterpret_cast<float*>(stages + L::stages + kMmaWarps * L::per_warp);  // [warp][head]
    float* const l_w = m_w + kMmaWarps * kM;
    const auto k_tile = [&](int stage) {
        return reinterpret_cast<T*>(stages + (std::size_t{warp} * kStages + stage) * 2 * L::tile);
    };
    const auto v_tile = [&](int stage) {
        return reinterpret_cast<T*>(stages + ((std::size_t{warp} * kStages + stage) * 2 + 1) * L::tile);
    };

    mma::load_queries<T, D>(q + (static_cast<std::size_t>(s.layer) * sh.q_heads + head0) * D, heads, q_hi, q_lo, kRow);
    const unsigned frag_rows = mma::rows_of_fragment(scores);
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
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
        if (warp + a * kMmaWarps < tiles) fetch_tile(a, warp + a * kMmaWarps);
        copies_commit();
    }
    // `stage` holds tile j; the copy of tile j + kAhead·(warps) goes into `ahead`, the stage computed on last.
    int stage = 0, ahead = kAhead % kStages;
    const auto next_stage = [](int x) { return x + 1 == kStages ? 0 : x + 1; };
    for (std::uint64_t j = warp; j < tiles; j += kMmaWarps, stage = next_stage(stage), ahead = next_stage(ahead)) {
        if constexpr (kFp8) land_tile(stage);  // before the registers take the next tile
        if (j + kAhead * kMmaWarps < tiles) fetch_tile(ahead, j + kAhead * kMmaWarps);
        copies_commit();  // an empty group near the end, so that the wait below counts alike
        copies_wait<kAhead>();
        __syncwarp();  // every lane's copies of this tile are in
        const T* const kt = k_tile(stage);
        const T* const vt = v_tile(stage);

        Acc st;
        wmma::fill_fragment(st, 0.0f);
#pragma unroll
        for (int kc = 0; kc < D / 16; ++kc) mma::add_scores(st, q_hi + kc * 16, q_lo + kc * 16, kt + kc * 16, kRow);
        wmma::store_matrix_sync(scores, st, kScoreLd, wmma::mem_row_major);
        __syncwarp();

        // The running softmax of head r over this tile: tokens past the end weigh 0.
        float x[8];
        mma::read_scores(scores, r, half, t_end - (t_begin + j * kN), x);
        const mma::TileWeights<T> pw = mma::softmax_tile(x, r, half, m_run, l_run, mine, frag_rows);
#pragma unroll
        for (int nc = 0; nc < D / 16; ++nc) mma::add_weighted_values(o[nc], pw, vt + nc * 16, kRow);
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
        part_out[partial(g) * sh.dv + d] = acc;
        if (d == 0) {  // combine_kernel works in base e
            part_ml[partial(g) * 2] = mx * kLn2;
            part_ml[partial(g) * 2 + 1] = sum;
        }
    }
}
// NOLINTEND(readability-function-size)

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
