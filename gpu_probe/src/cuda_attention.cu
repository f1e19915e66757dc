// The attention kernels of the CUDA backend (cuda_attention.h): the fused split-K decode kernel
// with the kernel that joins its splits, and the three simple kernels for head shapes it does not
// take; plan_decode picks one and sizes it, launch_decode enqueues a step.
#include "cuda_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "cpu_kernels.h"
#include "cuda_block_reduce.cuh"
#include "cuda_check.h"

namespace kvscope::probe::cuda {

namespace {

// ---- Three kernels: scores to device memory, softmax, weighted values ------------------------

__device__ __forceinline__ float load_value(const void* base, std::size_t i, int dtype) {
    if (dtype == kFp32) return static_cast<const float*>(base)[i];
    if (dtype == kFp16) return __half2float(static_cast<const __half*>(base)[i]);
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

// ---- Fused decode attention: split-K flash decoding -------------------------------------------
// One block per (slot, KV head, chunk of its query group, split of the tokens). It reads its
// tokens' K and V rows once, in 64-token tiles: the tile's scores go to shared memory, a running
// softmax (max and sum per query head) is updated, and the tile's V rows are weighted into
// registers, rescaled whenever a later tile raises the maximum. combine_kernel joins the splits.
// Nothing of the size of the context is written to device memory. K and V go from device memory
// straight into registers, several 16-byte loads per thread issued before the first is used; on
// an H200 this beat copying tiles into shared memory ahead of use with cp.async (0.74 against
// 0.65 of the read ceiling at 128k; docs/gpu-results.md). Used, when every row and head starts on
// a 16-byte boundary and a V row is at most 128 loads wide, for what the stream kernel below does
// not take or measured slower at: fp32 caches, one query head per KV head (MHA), and K and V of
// different widths (MLA). Other shapes use the three kernels above.
constexpr unsigned kThreads = 128;  // four warps
constexpr unsigned kTile = 64;      // tokens whose scores sit in shared memory at once
constexpr unsigned kLanesPerToken = 8;
constexpr unsigned kTokensPerPass = (32 / kLanesPerToken) * (kThreads / 32);  // 16
constexpr unsigned kPasses = kTile / kTokensPerPass;                          // 4
// Measured on an H200 (docs/gpu-results.md): eight V rows in flight per thread instead of four
// raised 128k from 0.72 to 0.77 of the read ceiling; two K loads per lane and pass instead of one
// lowered it; four waves of blocks instead of eight raised 8k from 0.54 to 0.59 and cost 128k
// about 0.01.
constexpr unsigned kKUnroll = 1;  // 16-byte K loads per lane and pass issued together
constexpr unsigned kVUnroll = 8;  // V rows loaded before the first is used
constexpr unsigned kWaves = 4;    // blocks per resident block slot: more, shorter blocks shrink the tail
// Query heads sharing one K/V read (1, 2, 4 or 8). Fewer heads per block (their blocks adjacent,
// so the second read of K and V comes from L2) allow more blocks per SM but measured worse: at
// 2, 0.54/0.60/0.61 of the ceiling at 8k/32k/128k against 0.59/0.72/0.76.
constexpr unsigned kMaxHeadsPerBlock = 8;

// 16 bytes of K or V as floats: 4 fp32, 8 fp16 or 8 bf16.
template <class T>
__device__ __forceinline__ void to_floats(const uint4& raw, float* f);
template <>
__device__ __forceinline__ void to_floats<float>(const uint4& raw, float* f) {
    f[0] = __uint_as_float(raw.x);
    f[1] = __uint_as_float(raw.y);
    f[2] = __uint_as_float(raw.z);
    f[3] = __uint_as_float(raw.w);
}
template <>
__device__ __forceinline__ void to_floats<__half>(const uint4& raw, float* f) {
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 two = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
        f[2 * i] = two.x;
        f[2 * i + 1] = two.y;
    }
}
template <>
__device__ __forceinline__ void to_floats<__nv_bfloat16>(const uint4& raw, float* f) {
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // bf16 is the upper half of an fp32
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

// What one block of a fused kernel reads: blocks are numbered (slot, KV head, split, chunk of up to
// `g` query heads), the chunk innermost.
struct BlockWork {
    unsigned split, slot, h;
    unsigned head0;  // first query head of the block, within its layer
    unsigned heads;  // query heads of the chunk: g, or fewer in a group's last chunk
    SlotDev s;
    std::uint64_t t_begin, t_end;
};

__device__ __forceinline__ BlockWork block_work(const SlotDev* slots, const ShapeDev& sh, const SplitDev& sp,
                                                unsigned g) {
    BlockWork w;
    unsigned index = blockIdx.x;
    const unsigned chunk = index % sp.head_chunks;
    index /= sp.head_chunks;
    w.split = index % sp.splits;
    const unsigned pair = index / sp.splits;
    w.slot = pair / sh.kv_heads;
    w.h = pair % sh.kv_heads;
    w.s = slots[w.slot];
    w.head0 = w.h * sh.group + chunk * g;
    w.heads = min(g, sh.group - chunk * g);
    w.t_begin = static_cast<std::uint64_t>(w.split) * sp.split_tokens;
    w.t_end = min(w.s.tokens, w.t_begin + sp.split_tokens);
    return w;
}

// Shared memory of decode_kernel, in floats.
constexpr std::size_t decode_shared_floats(unsigned g, std::uint64_t dk, std::uint64_t dv) {
    return g * (dk + kTile + dv + 3);
}

template <class T, int G>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const SlotDev* slots, const float* q, ShapeDev sh, SplitDev sp, float* part_out, float* part_ml) {
    constexpr unsigned V = 16 / sizeof(T);
    extern __shared__ float smem[];
    float* q_s = smem;             // G × dk: this block's queries, scaled by 1/sqrt(dk)
    float* p_s = q_s + G * sh.dk;  // G × kTile: the tile's scores, then its weights
    float* o_s = p_s + G * kTile;  // G × dv: the output, summed over the threads' token lanes
    float* m_s = o_s + G * sh.dv;  // G running maxima
    float* l_s = m_s + G;          // G running sums
    float* c_s = l_s + G;          // G factors that rescale the output so far

    const BlockWork w = block_work(slots, sh, sp, G);
    const unsigned split = w.split, slot = w.slot, h = w.h, head0 = w.head0;
    const SlotDev s = w.s;
    const std::uint64_t t_begin = w.t_begin, t_end = w.t_end;

    const float scale = rsqrtf(static_cast<float>(sh.dk));
    const float* qg = q + (static_cast<std::size_t>(s.layer) * sh.q_heads + head0) * sh.dk;
    for (unsigned i = threadIdx.x; i < G * sh.dk; i += kThreads) q_s[i] = qg[i] * scale;
    for (unsigned i = threadIdx.x; i < G * sh.dv; i += kThreads) o_s[i] = 0;
    if (threadIdx.x < G) {
        m_s[threadIdx.x] = -INFINITY;
        l_s[threadIdx.x] = 0;
    }
    __syncthreads();

    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned sub = lane % kLanesPerToken, quarter = lane / kLanesPerToken;
    const unsigned k_loads = sh.dk / V, v_loads = sh.dv / V;
    const unsigned token_lanes = kThreads / v_loads;  // V: threads over (16-byte column, token lane)
    const unsigned column = threadIdx.x % v_loads, token_lane = threadIdx.x / v_loads;
    const bool v_active = token_lane < token_lanes;
    const uint4* k16 = static_cast<const uint4*>(s.k);
    const uint4* v16 = static_cast<const uint4*>(s.v);
    float acc[G][V] = {};

    for (std::uint64_t tile = t_begin; tile < t_end; tile += kTile) {
        const unsigned n = static_cast<unsigned>(min(static_cast<std::uint64_t>(kTile), t_end - tile));
        // Scores. A pass covers 16 tokens (8 lanes each); the passes' loads are issued together.
        float dot[kPasses][G] = {};
        std::uint64_t row[kPasses];
#pragma unroll
        for (unsigned p = 0; p < kPasses; ++p)
            row[p] = ((tile + p * kTokensPerPass + warp * 4 + quarter) * sh.row_k + h * sh.dk) / V;
        for (unsigned c0 = sub; c0 < k_loads; c0 += kLanesPerToken * kKUnroll) {
            uint4 raw[kKUnroll][kPasses];
#pragma unroll
            for (unsigned u = 0; u < kKUnroll; ++u)
#pragma unroll
                for (unsigned p = 0; p < kPasses; ++p)
                    raw[u][p] = c0 + u * kLanesPerToken < k_loads && p * kTokensPerPass + warp * 4 + quarter < n
                                    ? __ldg(k16 + row[p] + c0 + u * kLanesPerToken)
                                    : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (unsigned u = 0; u < kKUnroll; ++u) {
                const unsigned c = c0 + u * kLanesPerToken;
                if (c >= k_loads) break;
#pragma unroll
                for (unsigned p = 0; p < kPasses; ++p) {
                    float f[V];
                    to_floats<T>(raw[u][p], f);
#pragma unroll
                    for (int g = 0; g < G; ++g) {
                        const float* qc = q_s + g * sh.dk + c * V;
#pragma unroll
                        for (unsigned e = 0; e < V; ++e) dot[p][g] += f[e] * qc[e];
                    }
                }
            }
        }
#pragma unroll
        for (unsigned p = 0; p < kPasses; ++p) {
            const unsigned j = p * kTokensPerPass + warp * 4 + quarter;
#pragma unroll
            for (int g = 0; g < G; ++g) {
                float x = dot[p][g];
#pragma unroll
                for (unsigned off = kLanesPerToken / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
                if (sub == 0 && j < n) p_s[g * kTile + j] = x;
            }
        }
        __syncthreads();

        // Running softmax: one warp per query head.
        for (unsigned g = warp; g < static_cast<unsigned>(G); g += kThreads / 32) {
            float* ps = p_s + g * kTile;
            float x[kTile / 32];
            float mx = -INFINITY;
#pragma unroll
            for (unsigned i = 0; i < kTile / 32; ++i) {
                x[i] = lane + 32 * i < n ? ps[lane + 32 * i] : -INFINITY;
                mx = fmaxf(mx, x[i]);
            }
#pragma unroll
            for (unsigned off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float m_old = m_s[g], m_new = fmaxf(m_old, mx);
            float sum = 0;
#pragma unroll
            for (unsigned i = 0; i < kTile / 32; ++i) {
                const float e = lane + 32 * i < n ? __expf(x[i] - m_new) : 0.0f;
                ps[lane + 32 * i] = e;
                sum += e;
            }
#pragma unroll
            for (unsigned off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
            __syncwarp();  // every lane has read m_s[g] before lane 0 replaces it
            if (lane == 0) {
                const float c = __expf(m_old - m_new);  // 0 on the first tile (m_old = −∞)
                c_s[g] = c;
                l_s[g] = l_s[g] * c + sum;
                m_s[g] = m_new;
            }
        }
        __syncthreads();

        // Weighted values: each thread one 16-byte column of V over every token_lanes-th token.
        if (v_active) {
#pragma unroll
            for (int g = 0; g < G; ++g) {
                const float c = c_s[g];
#pragma unroll
                for (unsigned e = 0; e < V; ++e) acc[g][e] *= c;
            }
            for (unsigned j0 = token_lane; j0 < n; j0 += kVUnroll * token_lanes) {
                uint4 raw[kVUnroll];
#pragma unroll
                for (unsigned u = 0; u < kVUnroll; ++u) {
                    const unsigned j = j0 + u * token_lanes;
                    raw[u] = j < n ? __ldg(v16 + ((tile + j) * sh.row_v + h * sh.v_stride) / V + column)
                                   : make_uint4(0, 0, 0, 0);
                }
#pragma unroll
                for (unsigned u = 0; u < kVUnroll; ++u) {
                    const unsigned j = j0 + u * token_lanes;
                    if (j >= n) break;
                    float f[V];
                    to_floats<T>(raw[u], f);
#pragma unroll
                    for (int g = 0; g < G; ++g) {
                        const float w = p_s[g * kTile + j];
#pragma unroll
                        for (unsigned e = 0; e < V; ++e) acc[g][e] += w * f[e];
                    }
                }
            }
        }
        __syncthreads();  // the next tile overwrites the weights
    }

    if (v_active)
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (unsigned e = 0; e < V; ++e) atomicAdd(&o_s[g * sh.dv + column * V + e], acc[g][e]);
    __syncthreads();
    const std::size_t first_row = static_cast<std::size_t>(slot) * sh.q_heads + head0;
    for (unsigned i = threadIdx.x; i < G * sh.dv; i += kThreads) {
        const unsigned g = i / sh.dv, d = i % sh.dv;
        part_out[((first_row + g) * sp.splits + split) * sh.dv + d] = o_s[i];
    }
    if (threadIdx.x < G) {
        part_ml[((first_row + threadIdx.x) * sp.splits + split) * 2] = m_s[threadIdx.x];
        part_ml[((first_row + threadIdx.x) * sp.splits + split) * 2 + 1] = l_s[threadIdx.x];
    }
}

// ---- Fused decode attention, one warp per stream of tokens ------------------------------------
// For fp16 and bf16 caches with at least two query heads per KV head and K and V heads of 64, 128
// or 256 values (8, 16 or 32 loads of 16 bytes): every GQA and MQA model in the catalog. On an
// H200, Llama 3 8B in bf16 reads at 0.83 / 0.89 / 0.91 of the same-run ceiling at 8k / 32k / 128k
// with it, against 0.58 / 0.72 / 0.76 with the tile kernel above (docs/gpu-results.md).
// Each lane owns one 16-byte column of the head, so its slice of the queries and of the output
// stays in registers: L lanes per token, 32/L tokens per warp at once, U tokens per lane group per
// step, K and V loads of a step issued together. Every lane group keeps its own running softmax
// (max and sum in base 2, the log2(e) folded into the query scale), so the loop has no barrier and
// nothing in shared memory; the warps and the lane groups are joined once, at the end of the
// block, into the same partial results the tile kernel writes. The tile kernel read the queries
// and the weights from shared memory for every token and stalled on those reads (Nsight Compute,
// docs/gpu-results.md). A group that does not divide into chunks of 2, 4 or 8 heads runs with the
// last chunk's spare heads idle.
constexpr unsigned kStreamWarps = 4;  // 8 measured worse: 0.67 / 0.73 / 0.75 against 0.76 / 0.85 / 0.86
constexpr unsigned kStreamWaves = 4;  // when no whole number of waves fits (whole_waves)

// Tokens per lane group and step, so 2U loads in flight per lane. At four heads: 8 measured 0.79 /
// 0.89 / 0.92 against 0.70 / 0.78 / 0.78 with 2, 0.76 / 0.85 / 0.86 with 4, and 0.74 / 0.78 / 0.80
// with 16 (255 registers, two blocks per SM). At eight heads 4, not 2: Llama 3 70B at 32k 0.50
// against 0.41, at the same two blocks per SM.
template <int G>
constexpr int stream_unroll() {
    return G >= 8 ? 4 : 8;
}
// Blocks per SM the registers must allow: 3 at four heads (168 registers; at 192, two blocks per
// SM read 8k at 0.66 of the ceiling instead of 0.83).
template <int G>
constexpr int stream_min_blocks() {
    return G >= 8 ? 2 : G >= 4 ? 3 : 4;
}

template <class T, int G, int L>
__global__ void __launch_bounds__(kStreamWarps * 32, stream_min_blocks<G>())
    decode_stream_kernel(const SlotDev* slots, const float* q, ShapeDev sh, SplitDev sp, float* part_out,
                         float* part_ml) {
    constexpr int V = 16 / sizeof(T);  // elements per load; a head is L × V wide
    constexpr int TG = 32 / L;         // token groups per warp
    constexpr int U = stream_unroll<G>();
    constexpr unsigned kStep = TG * U;  // tokens per warp and step
    __shared__ float o_w[kStreamWarps][G][L * V];
    __shared__ float m_w[kStreamWarps][G], l_w[kStreamWarps][G];

    const BlockWork w = block_work(slots, sh, sp, G);
    const unsigned split = w.split, slot = w.slot, h = w.h, head0 = w.head0, heads = w.heads;
    const SlotDev s = w.s;
    const std::uint64_t t_begin = w.t_begin, t_end = w.t_end;

    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned sub = lane % L, group_lane = lane / L;
    // Scores in base 2: q·k / sqrt(dk) · log2(e), so that exp2 gives e^(score − max).
    const float scale = rsqrtf(static_cast<float>(L * V)) * 1.4426950408889634f;
    const float* qg = q + (static_cast<std::size_t>(s.layer) * sh.q_heads + head0) * (L * V) + sub * V;
    float qr[G][V];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int e = 0; e < V; ++e) qr[g][e] = g < static_cast<int>(heads) ? qg[g * L * V + e] * scale : 0.0f;

    const uint4* k16 = static_cast<const uint4*>(s.k) + (h * L) + sub;
    const uint4* v16 = static_cast<const uint4*>(s.v) + (h * sh.v_stride) / V + sub;
    const std::uint64_t row_k = sh.row_k / V, row_v = sh.row_v / V;
    float o[G][V] = {}, m[G], l[G] = {};
#pragma unroll
    for (int g = 0; g < G; ++g) m[g] = -INFINITY;

    for (std::uint64_t t0 = t_begin + warp * kStep; t0 < t_end; t0 += kStreamWarps * kStep) {
        uint4 kr[U], vr[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t t = t0 + u * TG + group_lane;
            kr[u] = t < t_end ? __ldg(k16 + t * row_k) : make_uint4(0, 0, 0, 0);
            vr[u] = t < t_end ? __ldg(v16 + t * row_v) : make_uint4(0, 0, 0, 0);
        }
        float sc[U][G];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float f[V];
            to_floats<T>(kr[u], f);
#pragma unroll
            for (int g = 0; g < G; ++g) {
                float x = 0;
#pragma unroll
                for (int e = 0; e < V; ++e) x += f[e] * qr[g][e];
                sc[u][g] = x;
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int g = 0; g < G; ++g) {
#pragma unroll
                for (int off = L / 2; off > 0; off /= 2) sc[u][g] += __shfl_xor_sync(0xffffffffu, sc[u][g], off);
                if (t0 + u * TG + group_lane >= t_end) sc[u][g] = -INFINITY;
            }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            float mx = m[g];
#pragma unroll
            for (int u = 0; u < U; ++u) mx = fmaxf(mx, sc[u][g]);
            const float base = mx == -INFINITY ? 0.0f : mx;  // nothing seen yet: every weight is 0
            const float c = exp2f(m[g] - base);
            m[g] = mx;
            l[g] *= c;
#pragma unroll
            for (int e = 0; e < V; ++e) o[g][e] *= c;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                sc[u][g] = exp2f(sc[u][g] - base);
                l[g] += sc[u][g];
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float f[V];
            to_floats<T>(vr[u], f);
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int e = 0; e < V; ++e) o[g][e] += sc[u][g] * f[e];
        }
    }

    // Join the warp's lane groups, then the block's warps.
#pragma unroll
    for (int off = L; off < 32; off *= 2)
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m[g], off), l2 = __shfl_xor_sync(0xffffffffu, l[g], off);
            const float mx = fmaxf(m[g], m2), base = mx == -INFINITY ? 0.0f : mx;
            const float a = exp2f(m[g] - base), b = exp2f(m2 - base);
            m[g] = mx;
            l[g] = l[g] * a + l2 * b;
#pragma unroll
            for (int e = 0; e < V; ++e) o[g][e] = o[g][e] * a + __shfl_xor_sync(0xffffffffu, o[g][e], off) * b;
        }
    if (group_lane == 0) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
#pragma unroll
            for (int e = 0; e < V; ++e) o_w[warp][g][sub * V + e] = o[g][e];
            if (sub == 0) {
                m_w[warp][g] = m[g];
                l_w[warp][g] = l[g];
            }
        }
    }
    __syncthreads();
    const std::size_t first_row = static_cast<std::size_t>(slot) * sh.q_heads + head0;
    constexpr float kLn2 = 0.6931471805599453f;
    for (unsigned i = threadIdx.x; i < heads * L * V; i += kStreamWarps * 32) {
        const unsigned g = i / (L * V), d = i % (L * V);
        float mx = -INFINITY;
#pragma unroll
        for (unsigned w = 0; w < kStreamWarps; ++w) mx = fmaxf(mx, m_w[w][g]);
        const float base = mx == -INFINITY ? 0.0f : mx;
        float acc = 0, sum = 0;
#pragma unroll
        for (unsigned w = 0; w < kStreamWarps; ++w) {
            const float a = exp2f(m_w[w][g] - base);
            acc += o_w[w][g][d] * a;
            sum += l_w[w][g] * a;
        }
        part_out[((first_row + g) * sp.splits + split) * sh.dv + d] = acc;
        if (d == 0) {  // combine_kernel works in base e
            part_ml[((first_row + g) * sp.splits + split) * 2] = mx * kLn2;
            part_ml[((first_row + g) * sp.splits + split) * 2 + 1] = sum;
        }
    }
}

// out[row] = Σ_split e^(m − M)·partial / Σ_split e^(m − M)·l, one block per (slot, query head).
__global__ void combine_kernel(const float* part_out, const float* part_ml, float* out, unsigned splits, unsigned dv) {
    const std::size_t row = blockIdx.x;
    const float* ml = part_ml + row * splits * 2;
    float m = -INFINITY, l = 0;
    for (unsigned s = 0; s < splits; ++s) m = fmaxf(m, ml[2 * s]);
    for (unsigned s = 0; s < splits; ++s) l += ml[2 * s + 1] * __expf(ml[2 * s] - m);  // empty splits add 0
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    for (unsigned d = threadIdx.x; d < dv; d += blockDim.x) {
        float o = 0;
        for (unsigned s = 0; s < splits; ++s) o += part_out[(row * splits + s) * dv + d] * __expf(ml[2 * s] - m);
        out[row * dv + d] = o * inv;
    }
}

template <class T>
DecodeFn decode_for_group(unsigned g) {
    switch (g) {
        case 8:
            return decode_kernel<T, 8>;
        case 4:
            return decode_kernel<T, 4>;
        case 2:
            return decode_kernel<T, 2>;
        default:
            return decode_kernel<T, 1>;
    }
}

template <class T, int L>
DecodeFn stream_for_group(unsigned g) {
    return g == 8   ? decode_stream_kernel<T, 8, L>
           : g == 4 ? decode_stream_kernel<T, 4, L>
                    : decode_stream_kernel<T, 2, L>;
}

// The stream kernel for `loads` 16-byte loads per head row (8, 16 or 32), else nullptr.
template <class T>
DecodeFn stream_kernel(unsigned g, std::uint64_t loads) {
    return loads == 8    ? stream_for_group<T, 8>(g)
           : loads == 16 ? stream_for_group<T, 16>(g)
           : loads == 32 ? stream_for_group<T, 32>(g)
                         : nullptr;
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
                       unsigned sms) {
    DecodePlan plan;
    plan.shape = {static_cast<std::uint32_t>(sh.q_heads),
                  static_cast<std::uint32_t>(sh.kv_heads),
                  static_cast<std::uint32_t>(sh.dk),
                  static_cast<std::uint32_t>(sh.dv),
                  static_cast<std::uint32_t>(sh.row_k),
                  static_cast<std::uint32_t>(sh.row_v),
                  static_cast<std::uint32_t>(sh.row_v / sh.kv_heads),
                  static_cast<std::uint32_t>(sh.q_heads / sh.kv_heads)};
    plan.dtype = code_of(dtype);
    plan.slots = slots;
    plan.max_tokens = max_tokens;
    plan.out_bytes = slots * sh.q_heads * sh.dv * sizeof(float);
    const std::uint64_t per16 = 16 / cpu::element_bytes(dtype), group = sh.q_heads / sh.kv_heads;
    const std::uint64_t v_stride = sh.row_v / sh.kv_heads;
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
    const DecodeFn stream = !aligned || sh.dk != sh.dv || group < 2 || plan.dtype == kFp32 ? nullptr
                            : plan.dtype == kFp16 ? stream_kernel<__half>(stream_g, loads)
                                                  : stream_kernel<__nv_bfloat16>(stream_g, loads);
    const std::uint64_t head_chunks = stream ? (group + stream_g - 1) / stream_g : group / g;
    const std::uint64_t per_split = slots * sh.kv_heads * head_chunks;  // blocks for one split of the tokens
    const std::size_t tile_shared = decode_shared_floats(g, sh.dk, sh.dv) * sizeof(float);
    if (per_split >= (1ull << 31) || (!stream && (!aligned || sh.dv / per16 > kThreads || tile_shared > 48 * 1024))) {
        const std::uint64_t pairs = slots * sh.kv_heads;
        // Enough token blocks that every SM has several blocks in flight.
        plan.token_blocks = static_cast<unsigned>(std::max<std::uint64_t>(
            1, std::min<std::uint64_t>((8ull * sms + pairs - 1) / pairs, (max_tokens + 7) / 8)));
        plan.chunk = std::max<std::uint64_t>(64, (max_tokens + plan.token_blocks - 1) / plan.token_blocks);
        plan.chunks = static_cast<unsigned>((max_tokens + plan.chunk - 1) / plan.chunk);
        plan.scores_bytes = slots * sh.q_heads * max_tokens * sizeof(float);
        plan.description = "three kernels (scores, softmax, weighted values): this head shape is not 16-byte aligned";
        return plan;
    }
    plan.fused = true;
    unsigned waves = kWaves;
    if (stream) {
        plan.kernel = stream;
        plan.threads = kStreamWarps * 32;
        waves = kStreamWaves;
    } else {
        plan.kernel = plan.dtype == kFp32   ? decode_for_group<float>(g)
                      : plan.dtype == kFp16 ? decode_for_group<__half>(g)
                                            : decode_for_group<__nv_bfloat16>(g);
        plan.threads = kThreads;
        plan.shared_bytes = tile_shared;
    }
    int per_sm = 0;
    KVSCOPE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, plan.kernel, static_cast<int>(plan.threads),
                                                               plan.shared_bytes));
    // At least four 64-token tiles per split, so that joining the splits stays small next to
    // reading the cache.
    const std::uint64_t resident = sms * static_cast<std::uint64_t>(std::max(per_sm, 1));
    const std::uint64_t most =
        std::min<std::uint64_t>(std::max<std::uint64_t>(1, max_tokens / (4 * kTile)), ((1ull << 31) - 1) / per_split);
    std::uint64_t splits = std::clamp<std::uint64_t>((waves * resident + per_split - 1) / per_split, 1, most);
    if (stream) splits = whole_waves(max_tokens, per_split, resident, most, splits);
    const std::uint64_t split_tokens = split_size(max_tokens, splits);
    splits = (max_tokens + split_tokens - 1) / split_tokens;
    plan.split = {split_tokens, static_cast<std::uint32_t>(splits), static_cast<std::uint32_t>(head_chunks)};
    plan.blocks = per_split * splits;
    const std::uint64_t partial_rows = slots * sh.q_heads * splits;
    plan.part_out_bytes = partial_rows * sh.dv * sizeof(float);
    plan.part_ml_bytes = partial_rows * 2 * sizeof(float);
    const std::string how =
        stream ? "fused split-K decode kernel, a warp per stream of tokens: " + std::to_string(splits) + " splits of " +
                     std::to_string(split_tokens) + " tokens, " + std::to_string(loads) + " lanes per token, "
               : "fused split-K decode kernel: " + std::to_string(splits) + " splits of " +
                     std::to_string(split_tokens) + " tokens in " + std::to_string(kTile) + "-token tiles, ";
    plan.description = how + std::to_string(stream ? std::min<std::uint64_t>(stream_g, group) : g) +
                       " query heads per K/V read, " + std::to_string(plan.blocks) + " blocks (" +
                       std::to_string(per_sm) + " per SM)";
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
