// The tile kernel of the fused split-K decode attention (cuda_decode_kernels.h): one block per
// (slot, KV head, chunk of its query group, split of the tokens). It reads its tokens' K and V rows
// once, in 64-token tiles: the tile's scores go to shared memory, a running softmax (max and sum
// per query head) is updated, and the tile's V rows are weighted into registers, rescaled whenever
// a later tile raises the maximum. combine_kernel (cuda_attention.cu) joins the splits.
// Nothing of the size of the context is written to device memory. K and V go from device memory
// straight into registers, several 16-byte loads per thread issued before the first is used; on
// an H200 this beat copying tiles into shared memory ahead of use with cp.async (0.74 against
// 0.65 of the read ceiling at 128k; docs/gpu-results.md). Used, when every row and head starts on
// a 16-byte boundary and a V row is at most 128 loads wide, for what the stream kernel (cuda_decode_stream.cu) does
// not take or measured slower at: fp32 caches, one query head per KV head (MHA), and K and V of
// different widths (MLA). Other shapes use the three kernels of cuda_attention.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_decode_common.cuh"
#include "cuda_decode_kernels.h"

namespace kvscope::probe::cuda {

namespace {

constexpr unsigned kLanesPerToken = 8;
constexpr unsigned kTokensPerPass = (32 / kLanesPerToken) * (kThreads / 32);  // 16
constexpr unsigned kPasses = kTile / kTokensPerPass;                          // 4
// Measured on an H200 (docs/gpu-results.md): eight V rows in flight per thread instead of four
// raised 128k from 0.72 to 0.77 of the read ceiling; two K loads per lane and pass instead of one
// lowered it.
constexpr unsigned kKUnroll = 1;  // 16-byte K loads per lane and pass issued together
constexpr unsigned kVUnroll = 8;  // V rows loaded before the first is used

// Shared memory of decode_kernel, in floats.
constexpr std::size_t decode_shared_floats(unsigned g, std::uint64_t dk, std::uint64_t dv) {
    return g * (dk + kTile + dv + 3);
}

// NOLINTBEGIN(readability-function-size): a device kernel, one pass over the cache in registers
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
// NOLINTEND(readability-function-size)

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

}  // namespace

std::size_t tile_shared_bytes(unsigned g, std::uint64_t dk, std::uint64_t dv) {
    return decode_shared_floats(g, dk, dv) * sizeof(float);
}

DecodeFn tile_kernel(int dtype, unsigned g) {
    return dtype == kFp32   ? decode_for_group<float>(g)
           : dtype == kFp16 ? decode_for_group<__half>(g)
                            : decode_for_group<__nv_bfloat16>(g);
}

}  // namespace kvscope::probe::cuda
