// The CUDA backend: the cache allocated with cudaMalloc exactly as the calculator lays it
// out, the device's memory drop measured with cudaMemGetInfo, and one decode step's
// attention (scores, softmax, weighted values; grouped-query aware) timed with CUDA events
// against a read-only pass over device memory measured in the same run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "backends.h"
#include "cpu_kernels.h"
#include "cuda_block_reduce.cuh"
#include "cuda_check.h"
#include "cuda_stopwatch.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/units.h"
#include "reference.h"
#include "tiny_transformer.h"

namespace kvscope::probe {

namespace {

using cuda::CudaError;

// Owns one device allocation; freed on every path, exceptions included.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) { KVSCOPE_CUDA(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 1))); }
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr_) KVSCOPE_CUDA_NOTHROW(cudaFree(ptr_));
    }
    template <class T = void>
    [[nodiscard]] T* get() const {
        return static_cast<T*>(ptr_);
    }

private:
    void* ptr_ = nullptr;
};

class EventTimer {
public:
    EventTimer() {
        KVSCOPE_CUDA(cudaEventCreate(&start_));
        KVSCOPE_CUDA(cudaEventCreate(&stop_));
    }
    ~EventTimer() {
        KVSCOPE_CUDA_NOTHROW(cudaEventDestroy(start_));
        KVSCOPE_CUDA_NOTHROW(cudaEventDestroy(stop_));
    }
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;
    void start() { KVSCOPE_CUDA(cudaEventRecord(start_)); }
    float stop_ms() {
        KVSCOPE_CUDA(cudaEventRecord(stop_));
        KVSCOPE_CUDA(cudaEventSynchronize(stop_));
        float ms = 0;
        KVSCOPE_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
        return ms;
    }

private:
    cudaEvent_t start_{}, stop_{};
};

enum : int { kFp32 = 0, kFp16 = 1, kBf16 = 2 };

int code_of(KvDtype d) { return d == KvDtype::fp32 ? kFp32 : d == KvDtype::fp16 ? kFp16 : kBf16; }

__device__ __forceinline__ float load_value(const void* base, std::size_t i, int dtype) {
    if (dtype == kFp32) return static_cast<const float*>(base)[i];
    if (dtype == kFp16) return __half2float(static_cast<const __half*>(base)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
}

__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

// Random values of magnitude 1/8 … 1 with random signs: never zeros.
__global__ void fill_kernel(void* data, std::size_t n, int dtype, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const std::uint64_t h = mix(i * 0x9E3779B97F4A7C15ull + seed);
        const float magnitude = 0.125f + 0.875f * static_cast<float>(h >> 40) / 16777216.0f;
        const float v = (h & 1) ? -magnitude : magnitude;
        if (dtype == kFp32)
            static_cast<float*>(data)[i] = v;
        else if (dtype == kFp16)
            static_cast<__half*>(data)[i] = __float2half(v);
        else
            static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
    }
}

// A read-only pass, four independent 16-byte loads in flight per thread; the sum is written only
// when it equals an unlikely value, so the reads stay.
__global__ void read_kernel(const uint4* data, std::size_t n, unsigned int* sink) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    unsigned int acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldg(data + i), b = __ldg(data + i + stride), c = __ldg(data + i + 2 * stride),
                    d = __ldg(data + i + 3 * stride);
        acc ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^ (d.x ^ d.y ^ d.z ^ d.w);
    }
    for (; i < n; i += stride) {
        const uint4 v = __ldg(data + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

struct SlotDev {
    const void* k;
    const void* v;
    std::uint64_t tokens;
    std::uint32_t layer;
};

struct ShapeDev {
    std::uint32_t q_heads, kv_heads, dk, dv, row_k, row_v, v_stride, group;
};

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
// 0.65 of the read ceiling at 128k; docs/gpu-results.md). Used when every row and head starts on a
// 16-byte boundary and a V row is at most 128 loads wide (every model in the catalog); other shapes
// use the three kernels above.
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

struct SplitDev {
    std::uint64_t split_tokens;
    std::uint32_t splits, head_chunks;
};

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

    unsigned index = blockIdx.x;
    const unsigned chunk = index % sp.head_chunks;
    index /= sp.head_chunks;
    const unsigned split = index % sp.splits, pair = index / sp.splits;
    const unsigned slot = pair / sh.kv_heads, h = pair % sh.kv_heads;
    const SlotDev s = slots[slot];
    const unsigned head0 = h * sh.group + chunk * G;  // first query head of the block, within its layer
    const std::uint64_t t_begin = static_cast<std::uint64_t>(split) * sp.split_tokens;
    const std::uint64_t t_end = min(s.tokens, t_begin + sp.split_tokens);

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

using DecodeFn = void (*)(const SlotDev*, const float*, ShapeDev, SplitDev, float*, float*);

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

// How one decode step is computed: the fused kernel with its split of the tokens, or the three
// kernels (scores, softmax, weighted values) for shapes the fused kernel does not take.
struct DecodePlan {
    bool fused = false;
    DecodeFn kernel = nullptr;
    SplitDev split{};
    std::uint64_t blocks = 0;
    std::size_t shared_bytes = 0;
    std::string description;
};

DecodePlan plan_decode(const AttentionShape& sh, int dtype, std::size_t element_bytes, std::uint64_t slots,
                       std::uint64_t max_tokens, unsigned sms) {
    DecodePlan plan;
    const std::uint64_t per16 = 16 / element_bytes, group = sh.q_heads / sh.kv_heads;
    const std::uint64_t v_stride = sh.row_v / sh.kv_heads;
    const unsigned g = std::min(kMaxHeadsPerBlock, group % 8 == 0   ? 8u
                                                   : group % 4 == 0 ? 4u
                                                   : group % 2 == 0 ? 2u
                                                                    : 1u);
    plan.shared_bytes = decode_shared_floats(g, sh.dk, sh.dv) * sizeof(float);
    const bool aligned = sh.dk % per16 == 0 && sh.dv % per16 == 0 && sh.row_k % per16 == 0 && sh.row_v % per16 == 0 &&
                         v_stride % per16 == 0;
    const std::uint64_t per_split = slots * sh.kv_heads * (group / g);  // blocks for one split of the tokens
    if (!aligned || sh.dv / per16 > kThreads || plan.shared_bytes > 48 * 1024 || per_split >= (1ull << 31)) {
        plan.description = "three kernels (scores, softmax, weighted values): this head shape is not 16-byte aligned";
        return plan;
    }
    plan.fused = true;
    plan.kernel = dtype == kFp32   ? decode_for_group<float>(g)
                  : dtype == kFp16 ? decode_for_group<__half>(g)
                                   : decode_for_group<__nv_bfloat16>(g);
    int per_sm = 0;
    KVSCOPE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, plan.kernel, kThreads, plan.shared_bytes));
    // About kWaves waves of blocks, so that the last, partly filled one costs little; at least four
    // tiles per split, so that joining the splits stays small next to reading the cache.
    const std::uint64_t want = std::uint64_t{kWaves} * sms * static_cast<std::uint64_t>(std::max(per_sm, 1));
    const std::uint64_t most = std::max<std::uint64_t>(1, max_tokens / (4 * kTile));
    std::uint64_t splits = std::clamp<std::uint64_t>((want + per_split - 1) / per_split, 1, most);
    splits = std::min<std::uint64_t>(splits, ((1ull << 31) - 1) / per_split);
    std::uint64_t split_tokens = (max_tokens + splits - 1) / splits;
    split_tokens = (split_tokens + kTile - 1) / kTile * kTile;
    splits = (max_tokens + split_tokens - 1) / split_tokens;
    plan.split = {split_tokens, static_cast<std::uint32_t>(splits), static_cast<std::uint32_t>(group / g)};
    plan.blocks = per_split * splits;
    plan.description = "fused split-K decode kernel: " + std::to_string(splits) + " splits of " +
                       std::to_string(split_tokens) + " tokens in " + std::to_string(kTile) + "-token tiles, " +
                       std::to_string(g) + " query heads per K/V read, " + std::to_string(plan.blocks) + " blocks (" +
                       std::to_string(per_sm) + " per SM)";
    return plan;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(int device) : device_(device) {}

    DeviceInfo device() const override {
        DeviceInfo d;
        d.backend = "cuda";
        try {
            KVSCOPE_CUDA(cudaSetDevice(device_));
            cudaDeviceProp p{};
            KVSCOPE_CUDA(cudaGetDeviceProperties(&p, device_));
            int clock_khz = 0, bus_bits = 0;
            KVSCOPE_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device_));
            KVSCOPE_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device_));
            std::size_t free = 0, total = 0;
            KVSCOPE_CUDA(cudaMemGetInfo(&free, &total));
            d.name = p.name;
            d.total_bytes = total;
            d.free_bytes = free;
            d.compute_units = static_cast<unsigned>(p.multiProcessorCount);
            d.cache_bytes = static_cast<std::uint64_t>(p.l2CacheSize);
            d.bus_width_bits = static_cast<unsigned>(bus_bits);
            d.memory_clock_mhz = clock_khz / 1000.0;
            // Double data rate: two transfers per clock across the whole bus.
            d.theoretical_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
            d.note = "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor);
        } catch (const CudaError& e) {
            d.name = "unavailable";
            d.note = e.what();
        }
        return d;
    }

    ProbeReport probe(const ProbeRequest& request, const Control& control) override {
        ProbeReport r;
        r.device = device();
        try {
            run(request, control, r);
        } catch (const CudaError& e) {
            // Every buffer is released by its destructor on the way out.
            r.status = e.code() == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::failed;
            r.message = std::string(e.what()) + "; all device memory was freed";
        }
        return r;
    }

    StopwatchReport stopwatch(const StopwatchRequest& request, const Control& control) override {
        StopwatchReport r;
        try {
            KVSCOPE_CUDA(cudaSetDevice(device_));
            r = run_cuda_stopwatch(request, control);
        } catch (const CudaError& e) {
            r.status = Status::failed;
            r.message = e.what();
        }
        r.device = device();
        return r;
    }

private:
    void run(const ProbeRequest& request, const Control& control, ProbeReport& r);
    int device_;
};

void CudaBackend::run(const ProbeRequest& request, const Control& control, ProbeReport& r) {
    auto tensors = kv_tensors(request);
    if (!tensors) {
        r.status = Status::invalid_input;
        r.message = tensors.error_text();
        return;
    }
    auto kv = kv_cache_report(request.arch, request.dtype, request.workload, Parallelism{});
    if (!kv) {
        r.status = Status::invalid_input;
        r.message = kv.error_text();
        return;
    }
    KVSCOPE_CUDA(cudaSetDevice(device_));
    KVSCOPE_CUDA(cudaFree(nullptr));  // create the context now, so it is not counted as cache
    std::size_t free0 = 0, total = 0;
    KVSCOPE_CUDA(cudaMemGetInfo(&free0, &total));
    AllocationCheck& a = r.allocation;
    a.context_bytes = total - free0;  // this context plus whatever else holds device memory
    a.predicted_bytes = kv->total_bytes;
    for (const KvTensor& t : *tensors) a.requested_bytes += t.bytes;
    a.allocations = tensors->size();
    a.granularity_bytes = 2ull << 20;  // cudaMalloc hands out large allocations in 2 MiB pages

    const bool mla = request.arch.mla.has_value();
    const AttentionShape sh = attention_shape(request.arch);
    std::uint64_t max_tokens = 1;
    std::vector<SlotDev> slots;
    for (const KvTensor& t : *tensors) max_tokens = std::max(max_tokens, t.tokens);
    const std::uint64_t slot_count = request.arch.layers * request.workload.batch;
    const unsigned sms = std::max(1u, r.device.compute_units);
    const int dtype = code_of(request.dtype);
    const std::size_t eb = cpu::element_bytes(request.dtype);
    const DecodePlan plan = plan_decode(sh, dtype, eb, slot_count, max_tokens, sms);
    const std::uint64_t scores_bytes = plan.fused ? 0 : slot_count * sh.q_heads * max_tokens * sizeof(float);
    const std::uint64_t partial_rows = plan.fused ? slot_count * sh.q_heads * plan.split.splits : 0;
    const std::uint64_t part_out_bytes = partial_rows * sh.dv * sizeof(float);
    const std::uint64_t part_ml_bytes = partial_rows * 2 * sizeof(float);
    const std::uint64_t out_bytes = slot_count * sh.q_heads * sh.dv * sizeof(float);
    const std::uint64_t q_bytes = request.arch.layers * sh.q_heads * sh.dk * sizeof(float);
    const std::uint64_t l2 = r.device.cache_bytes;
    const std::uint64_t ceiling_bytes =
        (request.ceiling_bytes ? std::max<std::uint64_t>(request.ceiling_bytes, 1ull << 20)
                               : std::min<std::uint64_t>(std::max<std::uint64_t>({8 * l2, 1ull << 30}), free0 / 8)) /
        16 * 16;  // whole 16-byte loads
    a.workspace_bytes =
        scores_bytes + part_out_bytes + part_ml_bytes + out_bytes + q_bytes + slot_count * sizeof(SlotDev);
    const std::uint64_t limit =
        control.memory_limit_bytes ? std::min<std::uint64_t>(control.memory_limit_bytes, free0) : free0;
    if (a.requested_bytes + a.workspace_bytes + ceiling_bytes + (a.allocations * a.granularity_bytes) > limit) {
        r.status = Status::out_of_memory;
        r.message = "the cache needs " + format_bytes(a.requested_bytes) + " (plus " +
                    format_bytes(a.workspace_bytes + ceiling_bytes) + " of workspace) but " + format_bytes(limit) +
                    " of device memory is free" + (control.memory_limit_bytes ? " or allowed" : "") +
                    "; lower the context, the batch or the precision";
        return;
    }

    // Workspace first, so that the memory drop measured next is the cache alone.
    DeviceBuffer scores(scores_bytes), part_out(part_out_bytes), part_ml(part_ml_bytes), out(out_bytes), q(q_bytes),
        slot_table(slot_count * sizeof(SlotDev));
    DeviceBuffer ceiling_buffer(ceiling_bytes), sink(sizeof(unsigned));
    control.report(0.05, "allocating the cache on " + r.device.name);
    std::size_t free1 = 0, free2 = 0;
    KVSCOPE_CUDA(cudaMemGetInfo(&free1, &total));
    std::vector<DeviceBuffer> buffers;
    buffers.reserve(tensors->size());
    for (const KvTensor& t : *tensors) {
        if (control.cancelled()) {
            r.status = Status::cancelled;
            r.message = "cancelled while allocating; all device memory was freed";
            return;
        }
        buffers.emplace_back(t.bytes);
    }
    KVSCOPE_CUDA(cudaMemGetInfo(&free2, &total));
    a.measured_bytes = free1 > free2 ? free1 - free2 : 0;

    for (std::size_t i = 0; i < buffers.size(); ++i)
        fill_kernel<<<1024, 256>>>(buffers[i].get(), (*tensors)[i].bytes / eb, dtype, i + 1);
    KVSCOPE_CUDA(cudaGetLastError());
    for (std::size_t i = 0; i < tensors->size(); ++i) {
        const KvTensor& t = (*tensors)[i];
        if (t.is_value) continue;
        slots.push_back({buffers[i].get(), mla ? buffers[i].get() : buffers[i + 1].get(), t.attended,
                         static_cast<std::uint32_t>(t.layer)});
    }
    KVSCOPE_CUDA(cudaMemcpy(slot_table.get(), slots.data(), slots.size() * sizeof(SlotDev), cudaMemcpyHostToDevice));
    std::vector<float> host_q(q_bytes / sizeof(float));
    cpu::fill_random(KvDtype::fp32, host_q.data(), host_q.size(), 7919);  // random, never zero
    KVSCOPE_CUDA(cudaMemcpy(q.get(), host_q.data(), q_bytes, cudaMemcpyHostToDevice));
    KVSCOPE_CUDA(cudaDeviceSynchronize());

    AttentionTiming& at = r.attention;
    at.kv_bytes_read = kv_bytes_read(*tensors);
    at.threads = r.device.compute_units;
    at.cache_resident = at.kv_bytes_read < 2 * l2;

    const ShapeDev shd{static_cast<std::uint32_t>(sh.q_heads),
                       static_cast<std::uint32_t>(sh.kv_heads),
                       static_cast<std::uint32_t>(sh.dk),
                       static_cast<std::uint32_t>(sh.dv),
                       static_cast<std::uint32_t>(sh.row_k),
                       static_cast<std::uint32_t>(sh.row_v),
                       static_cast<std::uint32_t>(sh.row_v / sh.kv_heads),
                       static_cast<std::uint32_t>(sh.q_heads / sh.kv_heads)};
    const std::uint64_t pairs = slots.size() * sh.kv_heads;
    // Enough token blocks that every SM has several blocks in flight.
    const unsigned token_blocks = static_cast<unsigned>(
        std::max<std::uint64_t>(1, std::min<std::uint64_t>((8ull * sms + pairs - 1) / pairs, (max_tokens + 7) / 8)));
    const std::uint64_t chunk = std::max<std::uint64_t>(64, (max_tokens + token_blocks - 1) / token_blocks);
    const unsigned chunks = static_cast<unsigned>((max_tokens + chunk - 1) / chunk);
    at.kernel = plan.description;
    auto step = [&] {
        if (plan.fused) {
            plan.kernel<<<static_cast<unsigned>(plan.blocks), kThreads, plan.shared_bytes>>>(
                slot_table.get<SlotDev>(), q.get<float>(), shd, plan.split, part_out.get<float>(),
                part_ml.get<float>());
            combine_kernel<<<static_cast<unsigned>(slot_count * sh.q_heads), 128>>>(
                part_out.get<float>(), part_ml.get<float>(), out.get<float>(), plan.split.splits, shd.dv);
            KVSCOPE_CUDA(cudaGetLastError());
            return;
        }
        KVSCOPE_CUDA(cudaMemsetAsync(out.get(), 0, out_bytes));
        scores_kernel<<<dim3(static_cast<unsigned>(pairs), token_blocks), 256>>>(
            slot_table.get<SlotDev>(), q.get<float>(), scores.get<float>(), shd, dtype, max_tokens);
        softmax_kernel<<<static_cast<unsigned>(slots.size() * sh.q_heads), 256>>>(slot_table.get<SlotDev>(),
                                                                                  scores.get<float>(), shd, max_tokens);
        output_kernel<<<dim3(static_cast<unsigned>(pairs), chunks),
                        std::min<unsigned>(256, ((shd.dv + 31) / 32) * 32)>>>(
            slot_table.get<SlotDev>(), scores.get<float>(), out.get<float>(), shd, dtype, max_tokens, chunk);
        KVSCOPE_CUDA(cudaGetLastError());
    };
    auto flush_l2 = [&] {  // when the cache could stay in L2 between runs
        if (!at.cache_resident) return;
        read_kernel<<<sms * 8, 256>>>(ceiling_buffer.get<uint4>(), std::min<std::uint64_t>(ceiling_bytes, 4 * l2) / 16,
                                      sink.get<unsigned>());
    };

    // The read ceiling: a read-only pass over the ceiling buffer, several times the L2.
    control.report(0.2, "measuring the read bandwidth ceiling");
    fill_kernel<<<1024, 256>>>(ceiling_buffer.get(), ceiling_bytes / 4, kFp32, 99);
    EventTimer timer;
    std::vector<double> ceiling_runs;
    for (int run = 0; run < 6; ++run) {
        timer.start();
        read_kernel<<<sms * 8, 256>>>(ceiling_buffer.get<uint4>(), ceiling_bytes / 16, sink.get<unsigned>());
        const double ms = timer.stop_ms();
        if (run > 0) ceiling_runs.push_back(static_cast<double>(ceiling_bytes) / (ms * 1e6));
    }
    at.ceiling_gbps = median(ceiling_runs);

    std::vector<double> times;
    const int runs = std::max(1, request.timing_runs);
    for (int run = 0; run <= runs; ++run) {
        if (control.cancelled()) {
            r.status = Status::cancelled;
            r.message = "cancelled while timing; all device memory was freed";
            return;
        }
        control.report(0.3 + 0.6 * run / (runs + 1),
                       "timing decode attention, run " + std::to_string(run) + " of " + std::to_string(runs));
        flush_l2();
        timer.start();
        step();
        const double ms = timer.stop_ms();
        if (run > 0) times.push_back(ms);
    }
    at.runs = runs;
    at.median_ms = median(times);
    at.min_ms = *std::min_element(times.begin(), times.end());
    at.kv_read_gbps = static_cast<double>(at.kv_bytes_read) / (at.median_ms * 1e6);
    at.fraction_of_ceiling = at.ceiling_gbps > 0 ? at.kv_read_gbps / at.ceiling_gbps : 0;

    // Check the first and last slots against float64 on the host.
    control.report(0.95, "checking against a float64 reference");
    std::vector<float> host_out(out_bytes / sizeof(float));
    KVSCOPE_CUDA(cudaMemcpy(host_out.data(), out.get(), out_bytes, cudaMemcpyDeviceToHost));
    for (const std::size_t i : {std::size_t{0}, slots.size() - 1}) {
        const SlotDev& s = slots[i];
        std::vector<std::byte> k(s.tokens * sh.row_k * eb), v(mla ? 0 : s.tokens * sh.row_v * eb);
        KVSCOPE_CUDA(cudaMemcpy(k.data(), s.k, k.size(), cudaMemcpyDeviceToHost));
        if (!mla) KVSCOPE_CUDA(cudaMemcpy(v.data(), s.v, v.size(), cudaMemcpyDeviceToHost));
        const auto ref = attention_reference(k.data(), mla ? k.data() : v.data(), s.tokens, sh, request.dtype,
                                             host_q.data() + static_cast<std::size_t>(s.layer) * sh.q_heads * sh.dk);
        at.max_rel_error =
            std::max(at.max_rel_error, max_relative_error(host_out.data() + i * sh.q_heads * sh.dv, ref));
    }
    control.report(1.0, "done");
    r.message =
        "predicted " + format_count(a.predicted_bytes) + " bytes, allocated " + format_count(a.requested_bytes) +
        ", device memory drop " + format_count(a.measured_bytes) + "; attention reads the cache at " +
        std::to_string(static_cast<int>(at.fraction_of_ceiling * 100 + 0.5)) + "% of the measured read bandwidth";
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string& why, Status& status) {
    status = Status::no_device;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver) {
        cudaGetLastError();
        int runtime = 0, driver = 0;
        cudaRuntimeGetVersion(&runtime);
        cudaDriverGetVersion(&driver);
        if (driver == 0) {
            why = "no NVIDIA driver is loaded on this machine, so no CUDA device can answer";
            return nullptr;
        }
        status = Status::driver_mismatch;
        why = "the NVIDIA driver supports CUDA " + std::to_string(driver / 1000) + "." +
              std::to_string(driver % 1000 / 10) + " but this build needs " + std::to_string(runtime / 1000) + "." +
              std::to_string(runtime % 1000 / 10) + "; update the driver";
        return nullptr;
    }
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError();
        why = std::string("no CUDA device answers (") + (e == cudaSuccess ? "none found" : cudaGetErrorString(e)) + ")";
        return nullptr;
    }
    return std::make_unique<CudaBackend>(0);
}

}  // namespace kvscope::probe
