// The attention of the CUDA backend (cuda_attention.h): plan_decode picks a fused split-K kernel
// (cuda_decode_kernels.h) or, for head shapes it does not take, the three simple kernels here, and
// sizes the split; launch_decode enqueues a step, with the kernel that joins the splits.
#include "cuda_attention.h"

#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>

#include "cpu_kernels.h"
#include "cuda_block_reduce.cuh"
#include "cuda_check.h"
#include "cuda_decode_kernels.h"

namespace kvscope::probe::cuda {

namespace {

// ---- Three kernels: scores to device memory, softmax, weighted values ------------------------

// Value i of a cache, as cpu_kernels.cpp's to_float_converted reads it: int8 kInt8Scale·q; for llama.cpp's blocks,
// value i % 32 of block i / 32 (q8_0 d·q, q4_0 d·(q − 8), values 0…15 in the low nibbles and 16…31 in the high
// ones).
__device__ __forceinline__ float load_value(const void* base, std::size_t i, int dtype) {
    if (is_block(dtype)) {
        const auto* b = static_cast<const unsigned char*>(base) + i / 32 * (dtype == kQ8_0 ? 34 : 18);
        const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(b[0] | (b[1] << 8))));
        const unsigned j = i % 32;
        if (dtype == kQ8_0) return d * static_cast<float>(static_cast<signed char>(b[2 + j]));
        return d * static_cast<float>((j < 16 ? b[2 + j] & 0x0f : b[2 + j - 16] >> 4) - 8);
    }
    if (dtype == kInt8) return cpu::kInt8Scale * static_cast<float>(static_cast<const signed char*>(base)[i]);
    if (dtype == kFp32) return static_cast<const float*>(base)[i];
    if (dtype == kFp16) return __half2float(static_cast<const __half*>(base)[i]);
    if (dtype == kFp8E4m3) return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(base)[i]);
    if (dtype == kFp8E5m2) return static_cast<float>(static_cast<const __nv_fp8_e5m2*>(base)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
}

constexpr int kGroupChunk = 8;  // queries whose accumulators live in registers at once

// scores[slot][query head][t] = q·K[t] / sqrt(dk): one warp per (token, KV head), the K row read
// once per chunk of its query group. Grid: x = slot × KV head (up to 2^31 − 1), y = token blocks.
__global__ void scores_kernel(const SlotDev* slots, const float* q, float* scores, ShapeDev sh, int dtype,
                              std::uint64_t max_tokens) {
    const unsigned slot = blockIdx.x / sh.kv_heads, h = blockIdx.x % sh.kv_heads;
    const SlotDev s = slots[slot];
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const float scale = rsqrtf(static_cast<float>(sh.dk));
    const float* qs = q + (static_cast<std::size_t>(s.layer) * sh.q_heads + h * sh.group) * sh.dk;
    for (std::uint64_t t = blockIdx.y * warps + warp; t < s.tokens;
         t += static_cast<std::uint64_t>(gridDim.y) * warps) {
        const std::size_t row = t * sh.row_k + h * sh.dk;
        for (unsigned g0 = 0; g0 < sh.group; g0 += kGroupChunk) {
            const unsigned gn = min(kGroupChunk, static_cast<int>(sh.group - g0));
            float acc[kGroupChunk] = {};
            for (unsigned d = lane; d < sh.dk; d += 32) {
                const float kv = load_value(s.k, row + d, dtype);
#pragma unroll
                for (int j = 0; j < kGroupChunk; ++j)
                    if (j < static_cast<int>(gn)) acc[j] += qs[(g0 + j) * sh.dk + d] * kv;
            }
#pragma unroll
            for (int j = 0; j < kGroupChunk; ++j) {
                float x = acc[j];
                for (int off = 16; off > 0; off /= 2) x += __shfl_down_sync(0xffffffffu, x, off);
                if (lane == 0 && j < static_cast<int>(gn))
                    scores[(static_cast<std::size_t>(slot) * sh.q_heads + h * sh.group + g0 + j) * max_tokens + t] =
                        x * scale;
            }
        }
    }
}

// Softmax over tokens, one block per (slot, query head).
__global__ void softmax_kernel(const SlotDev* slots, float* scores, ShapeDev sh, std::uint64_t max_tokens) {
    const unsigned slot = blockIdx.x / sh.q_heads;
    const std::uint64_t n = slots[slot].tokens;
    float* row = scores + static_cast<std::size_t>(blockIdx.x) * max_tokens;
    float mx = -INFINITY;
    for (std::uint64_t t = threadIdx.x; t < n; t += blockDim.x) mx = fmaxf(mx, row[t]);
    mx = cuda::block_max(mx);
    float sum = 0;
    for (std::uint64_t t = threadIdx.x; t < n; t += blockDim.x) sum += (row[t] = __expf(row[t] - mx));
    const float inv = 1.0f / cuda::block_sum(sum);
    for (std::uint64_t t = threadIdx.x; t < n; t += blockDim.x) row[t] *= inv;
}

// out[slot][query head][d] += Σ_t p[t]·V[t][d] over one chunk of tokens (atomics join the chunks).
// Grid: x = slot × KV head, y = token chunks; threads over d.
__global__ void output_kernel(const SlotDev* slots, const float* scores, float* out, ShapeDev sh, int dtype,
                              std::uint64_t max_tokens, std::uint64_t chunk) {
    const unsigned slot = blockIdx.x / sh.kv_heads, h = blockIdx.x % sh.kv_heads;
    const SlotDev s = slots[slot];
    const std::uint64_t t0 = blockIdx.y * chunk, t1 = min(s.tokens, t0 + chunk);
    if (t0 >= t1) return;
    for (unsigned d = threadIdx.x; d < sh.dv; d += blockDim.x) {
        for (unsigned g0 = 0; g0 < sh.group; g0 += kGroupChunk) {
            const unsigned gn = min(kGroupChunk, static_cast<int>(sh.group - g0));
            float acc[kGroupChunk] = {};
            const float* p = scores + (static_cast<std::size_t>(slot) * sh.q_heads + h * sh.group + g0) * max_tokens;
            for (std::uint64_t t = t0; t < t1; ++t) {
                const float v = load_value(s.v, t * sh.row_v + h * sh.v_stride + d, dtype);
#pragma unroll
                for (int j = 0; j < kGroupChunk; ++j)
                    if (j < static_cast<int>(gn)) acc[j] += p[j * max_tokens + t] * v;
            }
            for (unsigned j = 0; j < gn; ++j)
                atomicAdd(&out[(static_cast<std::size_t>(slot) * sh.q_heads + h * sh.group + g0 + j) * sh.dv + d],
                          acc[j]);
        }
    }
}

// out[row] = Σ_split e^(m − M)·partial / Σ_split e^(m − M)·l, one block per (slot, query head). A split that saw no
// token (m = −inf, l = 0) adds nothing, and its partial output is not read: a block with no tokens need not write
// it (the tensor-core kernel's do not).
__global__ void combine_kernel(const float* part_out, const float* part_ml, float* out, unsigned splits, unsigned dv) {
    const std::size_t row = blockIdx.x;
    const float* ml = part_ml + row * splits * 2;
    float m = -INFINITY, l = 0;
    for (unsigned s = 0; s < splits; ++s) m = fmaxf(m, ml[2 * s]);
    if (m == -INFINITY) {  // every split empty (a sequence with no tokens): 0, not e^(−inf + inf) = NaN
        for (unsigned d = threadIdx.x; d < dv; d += blockDim.x) out[row * dv + d] = 0;
        return;
    }
    for (unsigned s = 0; s < splits; ++s)
        if (ml[2 * s] != -INFINITY) l += ml[2 * s + 1] * __expf(ml[2 * s] - m);
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    for (unsigned d = threadIdx.x; d < dv; d += blockDim.x) {
        float o = 0;
        for (unsigned s = 0; s < splits; ++s)
            if (ml[2 * s] != -INFINITY) o += part_out[(row * splits + s) * dv + d] * __expf(ml[2 * s] - m);
        out[row * dv + d] = o * inv;
    }
}

// Tokens per split for `splits` splits: whole 64-token tiles.
std::uint64_t split_size(std::uint64_t max_tokens, std::uint64_t splits) {
    return ((max_tokens + splits - 1) / splits + kTile - 1) / kTile * kTile;
}

// The fewest splits whose blocks fill at least one wave of the `resident` block slots and leave at
// most kWaveSlackPercent of the last wave's slots empty (a partly filled last wave leaves SMs idle
// while it runs); `fallback` when no count up to `most` does. For the stream kernel at 8k: 3 splits,
// 1.94 waves, 0.84 of the ceiling, against 7 splits, 4.5 waves, 0.79; at least 3 waves measured
// 0.82.
constexpr std::uint64_t kWaveSlackPercent = 4;
std::uint64_t whole_waves(std::uint64_t max_tokens, std::uint64_t per_split, std::uint64_t resident, std::uint64_t most,
                          std::uint64_t fallback) {
    for (std::uint64_t s = (resident + per_split - 1) / per_split; s <= most && s * per_split <= 64 * resident; ++s) {
        const std::uint64_t size = split_size(max_tokens, s);
        const std::uint64_t blocks = (max_tokens + size - 1) / size * per_split;
        const std::uint64_t waves = (blocks + resident - 1) / resident;
        if (blocks >= resident && 100 * blocks >= (100 - kWaveSlackPercent) * waves * resident) return s;
    }
    return fallback;
}

}  // namespace

DecodePlan plan_decode(const AttentionShape& sh, KvDtype dtype, std::uint64_t slots, std::uint64_t max_tokens,
                       unsigned sms, KernelWish wish, std::uint64_t forced_splits) {
    DecodePlan plan;
    plan.shape = {static_cast<std::uint32_t>(sh.q_heads),    static_cast<std::uint32_t>(sh.kv_heads),
                  static_cast<std::uint32_t>(sh.dk),         static_cast<std::uint32_t>(sh.dv),
                  static_cast<std::uint32_t>(sh.row_k),      static_cast<std::uint32_t>(sh.row_v),
                  static_cast<std::uint32_t>(sh.v_stride()), static_cast<std::uint32_t>(sh.q_heads / sh.kv_heads)};
    plan.dtype = code_of(dtype);
    plan.slots = slots;
    plan.max_tokens = max_tokens;
    plan.out_bytes = slots * sh.q_heads * sh.dv * sizeof(float);
    const bool fp8 = plan.dtype == kFp8E4m3 || plan.dtype == kFp8E5m2, blocks = is_block(plan.dtype),
               int8 = plan.dtype == kInt8;
    const std::uint64_t per16 = blocks ? 1 : 16 / cpu::element_bytes(dtype), group = sh.q_heads / sh.kv_heads;
    const std::uint64_t v_stride = sh.v_stride();
    const unsigned g = std::min(kMaxHeadsPerBlock, group % 8 == 0   ? 8u
                                                   : group % 4 == 0 ? 4u
                                                   : group % 2 == 0 ? 2u
                                                                    : 1u);
    const bool aligned = sh.dk % per16 == 0 && sh.dv % per16 == 0 && sh.row_k % per16 == 0 && sh.row_v % per16 == 0 &&
                         v_stride % per16 == 0;
    // The stream kernel takes any group: chunks of up to 8 query heads, the last one possibly short
    // (a group of 7 is one chunk of 8 with one head idle, not 7 reads of K and V).
    const std::uint64_t stream_chunks = (group + 7) / 8, stream_heads = (group + stream_chunks - 1) / stream_chunks;
    const unsigned stream_g = stream_heads > 4 ? 8u : stream_heads > 2 ? 4u : 2u;
    const std::uint64_t loads = sh.dk / per16;
    // Measured on an H200 (docs/gpu-results.md), the tile kernel is the faster one for an fp32
    // cache (0.84 of the read ceiling against 0.64) and for one query head per KV head (MHA, 0.95
    // against 0.89); the stream kernel for 16-bit caches shared by 2 or more heads (0.83-0.91
    // against 0.58-0.76 at four heads; 0.50 against 0.34 at eight).
    // The tensor-core kernel where asked for, or under auto where the H200's figures favour it (decode_choice.h:
    // groups of 5 or more query heads, fp8 caches, MLA's latent), and the device grants it the shared memory it
    // needs.
    // MLA's latent takes its own (cuda_decode_mla.cu), whose warps share each tile.
    DecodeFn mma = nullptr;
    const bool latent = is_mla_latent(sh);
    const std::size_t mma_shared = latent ? mla_shared_bytes() : mma_shared_bytes(sh.dk);
    std::string note = tensor_core_note(wish, sh, dtype);
    if (use_tensor_cores(wish, sh, dtype)) {
        int device = 0, most_shared = 0;
        KVSCOPE_CUDA(cudaGetDevice(&device));
        KVSCOPE_CUDA(cudaDeviceGetAttribute(&most_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        if (mma_shared <= static_cast<std::size_t>(most_shared))
            mma = latent ? mla_kernel(plan.dtype) : mma_kernel(plan.dtype, sh.dk);
        else
            note = "; tensor cores not used: the kernel needs " + std::to_string(mma_shared) +
                   " bytes of shared memory a block and this device grants " + std::to_string(most_shared);
    }
    const DecodeFn stream = mma || fp8 || !aligned || sh.dk != sh.dv || group < 2 || plan.dtype == kFp32
                                ? nullptr
                                : stream_kernel(plan.dtype, stream_g, loads);
    const std::uint64_t head_chunks = mma      ? (group + kMmaHeads - 1) / kMmaHeads
                                      : stream ? (group + stream_g - 1) / stream_g
                                               : group / g;
    const std::uint64_t per_split = slots * sh.kv_heads * head_chunks;  // blocks for one split of the tokens
    const std::size_t tile_shared = tile_shared_bytes(g, sh.dk, sh.dv);
    // The CUDA-core fused kernels read 16-bit and fp32 caches; an fp8 cache takes the tensor-core kernel where
    // asked for, else the three kernels, a value at a time.
    if ((fp8 && !mma) || blocks || int8 || per_split >= (1ull << 31) ||
        (!mma && !stream && (!aligned || sh.dv / per16 > kThreads || tile_shared > 48 * 1024))) {
        const std::uint64_t pairs = slots * sh.kv_heads;
        // Enough token blocks that every SM has several blocks in flight.
        plan.token_blocks = static_cast<unsigned>(std::max<std::uint64_t>(
            1, std::min<std::uint64_t>((8ull * sms + pairs - 1) / pairs, (max_tokens + 7) / 8)));
        plan.chunk = std::max<std::uint64_t>(64, (max_tokens + plan.token_blocks - 1) / plan.token_blocks);
        plan.chunks = static_cast<unsigned>((max_tokens + plan.chunk - 1) / plan.chunk);
        plan.scores_bytes = slots * sh.q_heads * max_tokens * sizeof(float);
        const std::string why = per_split >= (1ull << 31) ? "more blocks than one launch takes"
                                : blocks ? "the fused kernels do not read llama.cpp's blocks (value by value, each "
                                           "block's scale read with it)"
                                : int8   ? "the fused kernels do not read int8 caches"
                                : fp8 && !mma ? "the CUDA-core fused kernels do not read fp8 caches"
                                : aligned     ? "the fused kernels do not take K or V heads this wide"
                                              : "this head shape is not 16-byte aligned";
        plan.description = "three kernels (scores, softmax, weighted values): " + why + note;
        return plan;
    }
    plan.fused = true;
    plan.kernel = mma ? mma : stream ? stream : tile_kernel(plan.dtype, g);
    plan.threads = mma ? kMmaWarps * 32 : stream ? kStreamWarps * 32 : kThreads;
    plan.shared_bytes = mma ? mma_shared : stream ? 0 : tile_shared;
    if (mma) {
        KVSCOPE_CUDA(cudaFuncSetAttribute(mma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(plan.shared_bytes)));
        // As much of each SM's L1 as shared memory as it takes (only a hint to the driver), so that two blocks of
        // 88.5 or 102.75 KiB fit an SM of 228 KiB (H100, H200), and three of 70.5 KiB.
        KVSCOPE_CUDA(
            cudaFuncSetAttribute(mma, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    }
    int per_sm = 0;
    KVSCOPE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, plan.kernel, static_cast<int>(plan.threads),
                                                               plan.shared_bytes));
    // At least four 64-token tiles per split, so that joining the splits stays small next to
    // reading the cache.
    const std::uint64_t resident = sms * static_cast<std::uint64_t>(std::max(per_sm, 1));
    const std::uint64_t most =
        std::min<std::uint64_t>(std::max<std::uint64_t>(1, max_tokens / (4 * kTile)), ((1ull << 31) - 1) / per_split);
    std::uint64_t splits = std::clamp<std::uint64_t>((kWaves * resident + per_split - 1) / per_split, 1, most);
    if (stream || mma) splits = whole_waves(max_tokens, per_split, resident, most, splits);
    // For measuring the split policy (KVSCOPE_DECODE_SPLITS, decode_choice.h): the count asked for, at most `most`.
    if (forced_splits) splits = std::min(forced_splits, most);
    const std::uint64_t split_tokens = split_size(max_tokens, splits);
    splits = (max_tokens + split_tokens - 1) / split_tokens;
    plan.split = {split_tokens, static_cast<std::uint32_t>(splits), static_cast<std::uint32_t>(head_chunks)};
    plan.blocks = per_split * splits;
    const std::uint64_t partial_rows = slots * sh.q_heads * splits;
    plan.part_out_bytes = partial_rows * sh.dv * sizeof(float);
    plan.part_ml_bytes = partial_rows * 2 * sizeof(float);
    const std::string kind = plan.dtype == kBf16 ? "bf16" : "fp16";
    const std::string widened = fp8 ? "; fp8 widened exactly to fp16 in shared memory" : "";
    const std::string how =
        mma ? "fused split-K decode kernel on tensor cores (" + kind + " MMA tiles of 16 query heads by 16 tokens; " +
                  (latent ? "the " + std::to_string(kMlaLatent) + "-value latent read once for K and V, four warps " +
                                "sharing each tile; "
                          : std::string{}) +
                  "queries and weights each in two " + kind + " parts, products within 2^-16" + widened +
                  "): " + std::to_string(splits) + " splits of " + std::to_string(split_tokens) + " tokens, "
        : stream
            ? "fused split-K decode kernel, a warp per stream of tokens: " + std::to_string(splits) + " splits of " +
                  std::to_string(split_tokens) + " tokens, " + std::to_string(loads) + " lanes per token, "
            : "fused split-K decode kernel: " + std::to_string(splits) + " splits of " + std::to_string(split_tokens) +
                  " tokens in " + std::to_string(kTile) + "-token tiles, ";
    const std::uint64_t per_read = mma      ? std::min<std::uint64_t>(kMmaHeads, group)
                                   : stream ? std::min<std::uint64_t>(stream_g, group)
                                            : g;
    plan.tensor_cores = mma;
    plan.description = how + std::to_string(per_read) + " query heads per K/V read, " + std::to_string(plan.blocks) +
                       " blocks (" + std::to_string(per_sm) + " per SM)" +
                       (!forced_splits ? std::string{}
                        : forced_splits <= most
                            ? std::string("; the splits set by KVSCOPE_DECODE_SPLITS")
                            : "; KVSCOPE_DECODE_SPLITS asked for " + std::to_string(forced_splits) + " splits, and " +
                                  std::to_string(most) + " is the most this context takes (four 64-token tiles each)") +
                       note;
    return plan;
}

void launch_decode(const DecodePlan& p, const DecodeBuffers& b) {
    const ShapeDev& sh = p.shape;
    if (p.fused) {
        p.kernel<<<static_cast<unsigned>(p.blocks), p.threads, p.shared_bytes>>>(b.slots, b.q, sh, p.split, b.part_out,
                                                                                 b.part_ml);
        combine_kernel<<<static_cast<unsigned>(p.slots * sh.q_heads), 128>>>(b.part_out, b.part_ml, b.out,
                                                                             p.split.splits, sh.dv);
    } else {
        const auto pairs = static_cast<unsigned>(p.slots * sh.kv_heads);
        KVSCOPE_CUDA(cudaMemsetAsync(b.out, 0, p.out_bytes));
        scores_kernel<<<dim3(pairs, p.token_blocks), 256>>>(b.slots, b.q, b.scores, sh, p.dtype, p.max_tokens);
        softmax_kernel<<<static_cast<unsigned>(p.slots * sh.q_heads), 256>>>(b.slots, b.scores, sh, p.max_tokens);
        output_kernel<<<dim3(pairs, p.chunks), std::min<unsigned>(256, ((sh.dv + 31) / 32) * 32)>>>(
            b.slots, b.scores, b.out, sh, p.dtype, p.max_tokens, p.chunk);
    }
    KVSCOPE_CUDA(cudaGetLastError());
}

}  // namespace kvscope::probe::cuda
