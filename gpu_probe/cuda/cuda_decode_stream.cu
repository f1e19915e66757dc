// The stream kernel of the fused split-K decode attention (cuda_decode_kernels.h).
// For fp16 and bf16 caches with at least two query heads per KV head and K and V heads of 64, 128
// or 256 values (8, 16 or 32 loads of 16 bytes): every GQA and MQA model in the catalog. On an
// H200, Llama 3 8B in bf16 reads at 0.83 / 0.89 / 0.91 of the same-run ceiling at 8k / 32k / 128k
// with it, against 0.58 / 0.72 / 0.76 with the tile kernel (docs/gpu-results.md).
// Each lane owns one 16-byte column of the head, so its slice of the queries and of the output
// stays in registers: L lanes per token, 32/L tokens per warp at once, U tokens per lane group per
// step, K and V loads of a step issued together. Every lane group keeps its own running softmax
// (max and sum in base 2, the log2(e) folded into the query scale), so the loop has no barrier and
// nothing in shared memory; the warps and the lane groups are joined once, at the end of the
// block, into the same partial results the tile kernel writes. The tile kernel read the queries
// and the weights from shared memory for every token and stalled on those reads (Nsight Compute,
// docs/gpu-results.md). A group that does not divide into chunks of 2, 4 or 8 heads runs with the
// last chunk's spare heads idle.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_decode_common.cuh"
#include "cuda_decode_kernels.h"

namespace kvscope::probe::cuda {

namespace {

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

template <class T, int L>
DecodeFn stream_for_group(unsigned g) {
    return g == 8   ? decode_stream_kernel<T, 8, L>
           : g == 4 ? decode_stream_kernel<T, 4, L>
                    : decode_stream_kernel<T, 2, L>;
}

template <class T>
DecodeFn stream_for_loads(unsigned g, std::uint64_t loads) {
    return loads == 8    ? stream_for_group<T, 8>(g)
           : loads == 16 ? stream_for_group<T, 16>(g)
           : loads == 32 ? stream_for_group<T, 32>(g)
                         : nullptr;
}

}  // namespace

DecodeFn stream_kernel(int dtype, unsigned g, std::uint64_t loads) {
    return dtype == kFp16   ? stream_for_loads<__half>(g, loads)
           : dtype == kBf16 ? stream_for_loads<__nv_bfloat16>(g, loads)
                            : nullptr;
}

}  // namespace kvscope::probe::cuda
