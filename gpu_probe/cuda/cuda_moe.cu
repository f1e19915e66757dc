// The expert kernels of the CUDA decode step (cuda_moe.h).
#include "cuda_moe.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda_attention.h"
#include "cuda_check.h"
#include "cuda_decode_common.cuh"

namespace kvscope::probe::cuda {

namespace {

// One warp per token: k rounds of a warp-wide arg-max over the experts not chosen yet (ties to the lower
// index), then the weights, as the CPU step's route() forms them.
__global__ void route_kernel(const float* logits, std::uint32_t experts, std::uint32_t k, std::uint32_t* ids,
                             float* weights) {
    __shared__ std::uint32_t chosen[kMaxTopK];
    __shared__ float weight[kMaxTopK];
    const std::uint64_t b = blockIdx.x;
    const unsigned lane = threadIdx.x;
    const float* l = logits + b * experts;
    float top = 0, sum = 0;
    for (std::uint32_t j = 0; j < k; ++j) {
        float best = -INFINITY;
        std::uint32_t at = 0xffffffffu;
        for (std::uint32_t e = lane; e < experts; e += 32) {
            bool taken = false;
            for (std::uint32_t c = 0; c < j; ++c) taken = taken || chosen[c] == e;
            if (!taken && (l[e] > best || at == 0xffffffffu)) {
                best = l[e];
                at = e;
            }
        }
        for (int off = 16; off > 0; off /= 2) {
            const float other = __shfl_xor_sync(0xffffffffu, best, off);
            const std::uint32_t other_at = __shfl_xor_sync(0xffffffffu, at, off);
            if (other_at != 0xffffffffu && (at == 0xffffffffu || other > best || (other == best && other_at < at))) {
                best = other;
                at = other_at;
            }
        }
        if (j == 0) top = best;
        const float w = expf(best - top);
        sum += w;
        if (lane == 0) {
            chosen[j] = at;
            weight[j] = w;
        }
        __syncwarp();
    }
    if (lane == 0)
        for (std::uint32_t j = 0; j < k; ++j) {
            ids[b * k + j] = chosen[j];
            weights[b * k + j] = weight[j] / sum;
        }
}

__device__ __forceinline__ float one_float(float v) { return v; }
__device__ __forceinline__ float one_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float one_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float one_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }

// 16 bytes as floats: to_floats (cuda_decode_common.cuh), but fp16 through __ushort_as_half, which
// clang-tidy's analyzer follows (it takes to_floats' __half2 view of a word for uninitialised).
template <class T>
__device__ __forceinline__ void piece_floats(const uint4& raw, float* f) {
    if constexpr (std::is_same_v<T, __half>) {
        const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            f[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
            f[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
        }
    } else {
        to_floats<T>(raw, f);
    }
}

// V weights from w as floats: one 16-byte load of fp32, fp16 or bf16 weights, or one 8-byte load of 8 fp8 weights
// (beside bf16 inputs, 8 to a 16-byte load).
template <class W, unsigned V>
__device__ __forceinline__ void weight_floats(const W* w, float* f) {
    if constexpr (std::is_same_v<W, __nv_fp8_e4m3>) {
        static_assert(V == 8, "fp8 weights are read beside 16-bit inputs");
        const uint2 raw = __ldg(reinterpret_cast<const uint2*>(w));
        const unsigned words[2] = {raw.x, raw.y};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            __nv_fp8_e4m3 v;
            v.__x = static_cast<__nv_fp8_storage_t>((words[i / 4] >> (8 * (i % 4))) & 0xffu);
            f[i] = static_cast<float>(v);
        }
    } else {
        piece_floats<W>(__ldg(reinterpret_cast<const uint4*>(w)), f);
    }
}

// One block of kGroupThreads: count each expert's pairs, scan the counts (each thread a run of experts, then
// across the threads), and place each pair after those of lower experts.
constexpr unsigned kGroupThreads = 1024;
__global__ void __launch_bounds__(kGroupThreads)
    group_pairs_kernel(const std::uint32_t* ids, std::uint32_t pairs, std::uint32_t experts, ExpertGroups g) {
    extern __shared__ std::uint32_t count[];  // per expert: its pairs, then where its next pair goes
    __shared__ std::uint32_t sums[kGroupThreads], chosen[kGroupThreads];
    const unsigned t = threadIdx.x;
    for (std::uint32_t e = t; e < experts; e += kGroupThreads) count[e] = 0;
    __syncthreads();
    for (std::uint32_t p = t; p < pairs; p += kGroupThreads) atomicAdd(&count[ids[p]], 1u);
    __syncthreads();
    const std::uint32_t run = (experts + kGroupThreads - 1) / kGroupThreads, lo = min(experts, t * run),
                        hi = min(experts, lo + run);
    std::uint32_t mine = 0, mine_chosen = 0;
    for (std::uint32_t e = lo; e < hi; ++e) {
        mine += count[e];
        mine_chosen += count[e] > 0 ? 1 : 0;
    }
    sums[t] = mine;
    chosen[t] = mine_chosen;
    __syncthreads();
    for (unsigned off = 1; off < kGroupThreads; off *= 2) {  // inclusive scan across the threads
        const std::uint32_t a = t >= off ? sums[t - off] : 0, b = t >= off ? chosen[t - off] : 0;
        __syncthreads();
        sums[t] += a;
        chosen[t] += b;
        __syncthreads();
    }
    std::uint32_t at = sums[t] - mine, group = chosen[t] - mine_chosen;
    for (std::uint32_t e = lo; e < hi; ++e) {
        const std::uint32_t n = count[e];
        if (n > 0) {
            g.expert[group] = e;
            g.start[group] = at;
            ++group;
        }
        count[e] = at;
        at += n;
    }
    if (t == kGroupThreads - 1) {
        g.groups[0] = chosen[t];
        g.start[chosen[t]] = sums[t];
    }
    __syncthreads();
    for (std::uint32_t p = t; p < pairs; p += kGroupThreads) g.order[atomicAdd(&count[ids[p]], 1u)] = p;
}

constexpr unsigned kRowsPerBlock = 8;  // one warp per row
constexpr unsigned kPairsAtOnce = 8;   // pairs of a group summed over one read of an expert's row

// W: the weights' type; X: the inputs' (the same, or bf16 beside fp8 weights).
template <class W, class X>
__global__ void __launch_bounds__(kRowsPerBlock * 32)
    expert_gemv_kernel(const void* experts, std::uint64_t rows, std::uint64_t cols, ExpertGroups g, const void* x,
                       std::uint32_t x_div, float alpha, float* y) {
    const unsigned group = blockIdx.x;
    if (group >= g.groups[0]) return;  // fewer experts were chosen than there are pairs
    const std::uint32_t e = g.expert[group], first = g.start[group], last = g.start[group + 1];
    const unsigned lane = threadIdx.x % 32;
    constexpr unsigned V = 16 / sizeof(X);  // inputs in a 16-byte load, and the weights read beside them
    for (std::uint64_t r = static_cast<std::uint64_t>(blockIdx.y) * kRowsPerBlock + threadIdx.x / 32; r < rows;
         r += static_cast<std::uint64_t>(gridDim.y) * kRowsPerBlock) {
        const W* w = static_cast<const W*>(experts) + (static_cast<std::uint64_t>(e) * rows + r) * cols;
        for (std::uint32_t p0 = first; p0 < last; p0 += kPairsAtOnce) {
            const unsigned n = min(kPairsAtOnce, last - p0);
            std::uint32_t pair[kPairsAtOnce];
            const X* in[kPairsAtOnce];
            float acc[kPairsAtOnce];
#pragma unroll
            for (unsigned i = 0; i < kPairsAtOnce; ++i) {
                pair[i] = i < n ? g.order[p0 + i] : g.order[p0];
                in[i] = static_cast<const X*>(x) + static_cast<std::uint64_t>(pair[i] / x_div) * cols;
                acc[i] = 0;
            }
            if (cols % V == 0) {  // every row starts on 16 bytes (fp8 weights: on 8)
                for (std::uint64_t c = lane * V; c < cols; c += 32 * V) {
                    float wf[V];
                    weight_floats<W, V>(w + c, wf);
#pragma unroll
                    for (unsigned i = 0; i < kPairsAtOnce; ++i) {
                        if (i >= n) break;
                        float xf[V];
                        piece_floats<X>(*reinterpret_cast<const uint4*>(in[i] + c), xf);
#pragma unroll
                        for (unsigned v = 0; v < V; ++v) acc[i] += wf[v] * xf[v];
                    }
                }
            } else {
                for (std::uint64_t c = lane; c < cols; c += 32) {
                    const float wv = one_float(w[c]);
#pragma unroll
                    for (unsigned i = 0; i < kPairsAtOnce; ++i)
                        if (i < n) acc[i] += wv * one_float(in[i][c]);
                }
            }
#pragma unroll
            for (unsigned i = 0; i < kPairsAtOnce; ++i) {
                if (i >= n) break;
                float a = acc[i];
                for (int off = 16; off > 0; off /= 2) a += __shfl_xor_sync(0xffffffffu, a, off);
                if (lane == 0) y[pair[i] * rows + r] = alpha * a;
            }
        }
    }
}

__global__ void expert_sum_kernel(const float* y, const float* weights, std::uint32_t k, std::uint64_t hidden,
                                  float* out) {
    const std::uint64_t b = blockIdx.x;
    for (std::uint64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        float acc = 0;
        for (std::uint32_t j = 0; j < k; ++j) acc += weights[b * k + j] * y[(b * k + j) * hidden + i];
        out[b * hidden + i] = acc;
    }
}

}  // namespace

void launch_route(const float* logits, std::uint64_t batch, std::uint32_t experts, std::uint32_t k, std::uint32_t* ids,
                  float* weights) {
    if (k == 0 || k > experts || k > kMaxTopK)
        throw CudaError("the routing chooses 1 to " + std::to_string(kMaxTopK) + " of a layer's experts a token, not " +
                            std::to_string(k) + " of " + std::to_string(experts),
                        cudaErrorInvalidValue);
    route_kernel<<<static_cast<unsigned>(batch), 32>>>(logits, experts, k, ids, weights);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_group_pairs(const std::uint32_t* ids, std::uint64_t pairs, const ExpertGroups& g) {
    if (g.experts == 0 || g.experts > kMaxExperts || pairs >= (1ull << 32))
        throw CudaError("the grouping takes 1 to " + std::to_string(kMaxExperts) +
                            " experts a layer and fewer than 2^32 choices, not " + std::to_string(g.experts) + " and " +
                            std::to_string(pairs),
                        cudaErrorInvalidValue);
    group_pairs_kernel<<<1, kGroupThreads, g.experts * sizeof(std::uint32_t)>>>(ids, static_cast<std::uint32_t>(pairs),
                                                                                g.experts, g);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_expert_gemv(const void* experts, std::uint64_t rows, std::uint64_t cols, const ExpertGroups& g,
                        std::uint64_t pairs, const void* x, std::uint32_t x_div, float alpha, float* y, int dtype,
                        int x_dtype) {
    // A block per possible group (as many as pairs or experts, whichever is fewer; those past the chosen experts
    // return at once); rows past 65,535 blocks of them are taken by the same blocks again (grid y's limit).
    const dim3 grid(static_cast<unsigned>(std::min<std::uint64_t>(pairs, g.experts)),
                    static_cast<unsigned>(std::min<std::uint64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 65535)));
    if (dtype == kFp8E4m3 && x_dtype == kBf16)
        expert_gemv_kernel<__nv_fp8_e4m3, __nv_bfloat16>
            <<<grid, kRowsPerBlock * 32>>>(experts, rows, cols, g, x, x_div, alpha, y);
    else if (dtype != x_dtype)
        throw CudaError(
            "the experts' GEMV reads fp8_e4m3 weights beside bf16 inputs, or weights and inputs of one "
            "format",
            cudaErrorInvalidValue);
    else if (dtype == kFp32)
        expert_gemv_kernel<float, float><<<grid, kRowsPerBlock * 32>>>(experts, rows, cols, g, x, x_div, alpha, y);
    else if (dtype == kFp16)
        expert_gemv_kernel<__half, __half><<<grid, kRowsPerBlock * 32>>>(experts, rows, cols, g, x, x_div, alpha, y);
    else
        expert_gemv_kernel<__nv_bfloat16, __nv_bfloat16>
            <<<grid, kRowsPerBlock * 32>>>(experts, rows, cols, g, x, x_div, alpha, y);
    KVSCOPE_CUDA(cudaGetLastError());
}

void launch_expert_sum(const float* y, const float* weights, std::uint64_t batch, std::uint32_t k, std::uint64_t hidden,
                       float* out) {
    expert_sum_kernel<<<static_cast<unsigned>(batch), 256>>>(y, weights, k, hidden, out);
    KVSCOPE_CUDA(cudaGetLastError());
}

}  // namespace kvscope::probe::cuda
