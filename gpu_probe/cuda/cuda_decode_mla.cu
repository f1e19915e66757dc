// The tensor-core kernel of the fused split-K decode attention for MLA (cuda_decode_kernels.h): DeepSeek-V2/V3's
// and Kimi K2's cache of one latent per token, kv_lora_rank = 512 values and qk_rope_head_dim = 64 (576 in all),
// read by every query head (the queries absorbed into the latent, as vLLM's and SGLang's MLA decode do): K is the
// whole 576-value row and V its first 512 values (cuda_attention.h's SlotDev: v == k). Every query head shares
// the one latent, so the query heads are the rows of the MMA tile, as in cuda_decode_mma.cu (FlashMLA,
// deepseek-ai/FlashMLA, does the same with 64 heads per block on sm_90's wgmma). What differs from that kernel is
// the width: an output row of 512 floats per head does not fit one warp's registers, so the four warps of a
// block share each tile instead of taking every fourth one:
//   - a block takes 16 query heads and one split of the tokens; its threads copy each 16-token tile of latents
//     into shared memory with cp.async, kStages − 1 tiles ahead of the one multiplied (fp8: one tile ahead,
//     through registers, widened exactly to fp16 on the way in), the copies issued as soon as a tile is in;
//   - S = Q·Kᵀ over 576 values is 36 steps of 16: each warp takes 9 of them and writes its partial S; after a
//     barrier each warp sums the four partials in the same order, so all four keep the same running softmax;
//   - each warp multiplies the tile's weights by its own quarter of V (128 of the 512 values) and keeps that
//     quarter of the output in accumulator fragments, 64 floats per lane;
//   - the latent is read once for K and V, from shared memory.
// Precision is that of cuda_decode_mma.cu: queries and weights each split into two 16-bit parts, every
// product within about 2^-16, the tile's P·V summed from zero and added to the rescaled output on CUDA cores.
#include "cuda_decode_common.cuh"
#include "cuda_decode_kernels.h"
#include "cuda_mma_common.cuh"
#include "decode_choice.h"

namespace kvscope::probe::cuda {

namespace {

namespace wmma = nvcuda::wmma;
using mma::Acc;
using mma::kN;

constexpr int kM = 16;                         // query heads per block: the MMA tile's rows (kMmaHeads)
constexpr int kDk = kMlaLatent;                // K: the whole latent row
constexpr int kDv = kMlaValue;                 // V: its first kv_lora_rank values
constexpr int kStages = 3;                     // tiles in shared memory: the one multiplied and two being copied
constexpr int kRow = kDk + 8;                  // 16-bit values per shared row of Q and of a tile (8 of padding)
constexpr int kKSteps = kDk / 16 / kMmaWarps;  // 16-value steps of Q·Kᵀ per warp: 9
constexpr int kVSteps = kDv / 16 / kMmaWarps;  // 16-value columns of the output per warp: 8
static_assert(kM == kMmaHeads, "a block's query heads are the MMA tile's rows");
static_assert(kDk % (16 * kMmaWarps) == 0 && kDv % (16 * kMmaWarps) == 0, "the warps share the steps evenly");

// The block's dynamic shared memory, every part starting on 128 bytes (WMMA wants 32): the queries' two
// parts; kStages tiles of latents (which hold the output at the end); each warp's scratch.
struct MlaSmem {
    static constexpr std::size_t q = mma::round128(std::size_t{kM} * kRow * 2);
    static constexpr std::size_t tile = mma::round128(std::size_t{kN} * kRow * 2);
    static constexpr std::size_t stages = kStages * tile;
    static constexpr std::size_t per_warp = mma::WarpScratch<__half>::bytes;
    static constexpr std::size_t total = 2 * q + stages + kMmaWarps * per_warp;
    static_assert(stages >= std::size_t{kM} * kDv * 4, "the stages hold the output at the end");
};

// NOLINTBEGIN(readability-function-size): a device kernel, one pass over the cache in registers
template <int F>
__global__ void __launch_bounds__(kMmaWarps * 32, 2)
    decode_mla_kernel(const SlotDev* slots, const float* q, ShapeDev sh, SplitDev sp, float* part_out, float* part_ml) {
    using T = mma::Mul<F>;
    constexpr bool kFp8 = mma::kIsFp8<F>;
    using L = MlaSmem;
    extern __shared__ __align__(128) unsigned char smem[];

    const BlockWork w = block_work(slots, sh, sp, kM);
    const unsigned split = w.split, slot = w.slot, head0 = w.head0, heads = w.heads;
    const SlotDev s = w.s;
    const std::uint64_t t_begin = w.t_begin, t_end = w.t_end;
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    T* const q_hi = reinterpret_cast<T*>(smem);
    T* const q_lo = reinterpret_cast<T*>(smem + L::q);
    unsigned char* const stages = smem + 2 * L::q;
    const auto tile_at = [&](int stage) {
        return reinterpret_cast<T*>(stages + static_cast<std::size_t>(stage) * L::tile);
    };
    const auto scores_of = [&](unsigned v) {  // warp v's partial scores
        return mma::WarpScratch<T>(stages + L::stages + v * L::per_warp).scores;
    };
    const mma::WarpScratch<T> mine(stages + L::stages + warp * L::per_warp);

    mma::load_queries<T, kDk>(q + (static_cast<std::size_t>(s.layer) * sh.q_heads + head0) * kDk, heads, q_hi, q_lo,
                              kRow);
    const unsigned frag_rows = mma::rows_of_fragment(scores_of(warp));
    __syncthreads();  // the queries are in; the scores are rewritten below

    // Token t's latent starts t·row_k values after the KV head's (MLA has one).
    using Stored = std::conditional_t<kFp8, unsigned char, T>;
    const Stored* const rows = static_cast<const Stored*>(s.k) + std::size_t{w.h} * kDk;
    const std::uint64_t tiles = t_end > t_begin ? (t_end - t_begin + kN - 1) / kN : 0;
    // A tile is 16 rows of 16-byte pieces: 72 to a row of a 16-bit cache, 36 to a row of fp8, shared by the
    // block's threads. 16-bit tiles are copied with cp.async straight into their stage; fp8 tiles are loaded
    // into `raw` and widened into their stage by land_tile.
    constexpr int kPerPiece = kFp8 ? 16 : 8;                          // values in a 16-byte piece
    constexpr int kRowPieces = kDk / kPerPiece;                       // 72 or 36
    constexpr int kTilePieces = kN * kRowPieces;                      // 1152 or 576
    constexpr int kThreads = kMmaWarps * 32;                          // 128
    constexpr int kPieces = (kTilePieces + kThreads - 1) / kThreads;  // per thread: 9 or 5 (the last one of 5 for half)
    uint4 raw[kFp8 ? kPieces : 1];
    const auto fetch_tile = [&](int stage, std::uint64_t j) {
        const std::uint64_t t0 = t_begin + j * kN;
#pragma unroll
        for (int i = 0; i < kPieces; ++i) {
            const int c = static_cast<int>(threadIdx.x) + kThreads * i;
            if (kTilePieces % kThreads != 0 && c >= kTilePieces) break;
            const int row = c / kRowPieces, col = c % kRowPieces * kPerPiece;
            const bool in = t0 + row < t_end;
            const std::uint64_t t = in ? t0 + row : t_begin;  // a valid address, not read when not `in`
            if constexpr (kFp8)
                raw[i] = in ? __ldg(reinterpret_cast<const uint4*>(rows + t * sh.row_k + col)) : make_uint4(0, 0, 0, 0);
            else
                mma::copy_16(tile_at(stage) + row * kRow + col, rows + t * sh.row_k + col, in);
        }
    };
    const auto land_tile = [&](int stage) {
        if constexpr (kFp8) {  // a 16-bit tile is copied straight in
#pragma unroll
            for (int i = 0; i < kPieces; ++i) {
                const int c = static_cast<int>(threadIdx.x) + kThreads * i;
                if (kTilePieces % kThreads != 0 && c >= kTilePieces) break;
                mma::widen_16<F>(raw[i], tile_at(stage) + c / kRowPieces * kRow + c % kRowPieces * kPerPiece);
            }
        }
    };

    // Before the first tile: 16-bit caches start copying the first kStages − 1 tiles (one group of copies
    // each, empty past the split's end, so that the waits below count alike); fp8 widens the first tile into
    // stage 0 and loads the second into registers (fetch_tile's stage is unused for fp8).
    if constexpr (kFp8) {
        if (tiles > 0) {
            fetch_tile(0, 0);
            land_tile(0);
        }
        if (tiles > 1) fetch_tile(0, 1);
    } else {
        for (int j = 0; j < kStages - 1; ++j) {
            if (static_cast<std::uint64_t>(j) < tiles) fetch_tile(j, static_cast<std::uint64_t>(j));
            mma::copies_commit();
        }
    }

    Acc o[kVSteps];
#pragma unroll
    for (auto& f : o) wmma::fill_fragment(f, 0.0f);
    // The lane pair (2r, 2r + 1) keeps head r's running maximum and sum, and takes half of its tile row each;
    // every warp keeps the same ones.
    const unsigned r = lane / 2, half = lane % 2;
    float m_run = -INFINITY, l_run = 0.0f;
    for (std::uint64_t j = 0; j < tiles; ++j) {
        const int stage = static_cast<int>(j % kStages);
        if constexpr (!kFp8) mma::copies_wait<kStages - 2>();  // this thread's copies of tile j are in
        // Every thread's part of tile j is in, and every warp is done with tile j − 1 and its partial scores.
        __syncthreads();
        const T* const kt = tile_at(stage);

        // The stages of tiles j − 1 and j − 2 are free: the next tile goes into one while this one is multiplied
        // (16-bit: tile j + kStages − 1 into tile j − 1's, one group of copies, empty past the end; fp8: tile
        // j + 1, already in registers, widened into tile j − 2's, and the one after it into registers).
        if constexpr (kFp8) {
            if (j + 1 < tiles) land_tile(static_cast<int>((j + 1) % kStages));
            if (j + 2 < tiles) fetch_tile(0, j + 2);
        } else {
            if (j + kStages - 1 < tiles) fetch_tile(static_cast<int>((j + kStages - 1) % kStages), j + kStages - 1);
            mma::copies_commit();
        }

        // This warp's share of S = Q·Kᵀ: 9 of the 36 steps of 16 values.
        Acc st;
        wmma::fill_fragment(st, 0.0f);
#pragma unroll
        for (int i = 0; i < kKSteps; ++i) {
            const int kc = static_cast<int>(warp) * kKSteps + i;
            mma::add_scores(st, q_hi + kc * 16, q_lo + kc * 16, kt + kc * 16, kRow);
        }
        wmma::store_matrix_sync(scores_of(warp), st, mma::kScoreLd, wmma::mem_row_major);
        __syncthreads();  // every warp's partial scores are in

        // The running softmax of head r over this tile, from the four partials summed in the same order in
        // every warp: tokens past the end weigh 0.
        const std::uint64_t t0 = t_begin + j * kN;
        float x[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const unsigned col = half * 8 + e, at = r * mma::kScoreLd + col;
            float sum = 0.0f;
#pragma unroll
            for (unsigned v = 0; v < kMmaWarps; ++v) sum += scores_of(v)[at];
            x[e] = t0 + col < t_end ? sum : -INFINITY;
        }
        const mma::TileWeights<T> pw = mma::softmax_tile(x, r, half, m_run, l_run, mine, frag_rows);
        // This warp's quarter of the output: O = O·c + P·V, V the tile's first 512 values.
#pragma unroll
        for (int i = 0; i < kVSteps; ++i)
            mma::add_weighted_values(o[i], pw, kt + (static_cast<int>(warp) * kVSteps + i) * 16, kRow);
        __syncwarp();  // this warp's weights and factors are rewritten next
    }
    if constexpr (!kFp8) mma::copies_wait<0>();

    // The output, through shared memory where the tiles were, to the partial results combine_kernel joins.
    __syncthreads();
    auto* const o_s = reinterpret_cast<float*>(stages);  // [head][kDv]
#pragma unroll
    for (int i = 0; i < kVSteps; ++i)
        wmma::store_matrix_sync(o_s + (warp * kVSteps + i) * 16, o[i], kDv, wmma::mem_row_major);
    __syncthreads();
    const std::size_t first_row = static_cast<std::size_t>(slot) * sh.q_heads + head0;
    for (unsigned i = threadIdx.x; i < heads * kDv; i += kThreads) {
        const unsigned g = i / kDv, d = i % kDv;
        part_out[((first_row + g) * sp.splits + split) * sh.dv + d] = o_s[g * kDv + d];
    }
    if (warp == 0 && half == 0 && r < heads) {  // combine_kernel works in base e
        part_ml[((first_row + r) * sp.splits + split) * 2] = m_run * mma::kLn2;
        part_ml[((first_row + r) * sp.splits + split) * 2 + 1] = l_run;
    }
}
// NOLINTEND(readability-function-size)

}  // namespace

std::size_t mla_shared_bytes() { return MlaSmem::total; }

DecodeFn mla_kernel(int dtype) {
    switch (dtype) {
        case kFp16:
            return decode_mla_kernel<kFp16>;
        case kBf16:
            return decode_mla_kernel<kBf16>;
        case kFp8E4m3:
            return decode_mla_kernel<kFp8E4m3>;
        case kFp8E5m2:
            return decode_mla_kernel<kFp8E5m2>;
        default:
            return nullptr;
    }
}

}  // namespace kvscope::probe::cuda
