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

// A read-only pass; the sum is written only when it equals an unlikely value so the reads stay.
__global__ void read_kernel(const uint4* data, std::size_t n, unsigned int* sink) {
    unsigned int acc = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const uint4 v = data[i];
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
    __shared__ float shared[32];
    const unsigned slot = blockIdx.x / sh.q_heads;
    const std::uint64_t n = slots[slot].tokens;
    float* row = scores + static_cast<std::size_t>(blockIdx.x) * max_tokens;
    auto block_reduce = [&](float x, bool is_max) {
        for (int off = 16; off > 0; off /= 2) {
            const float y = __shfl_down_sync(0xffffffffu, x, off);
            x = is_max ? fmaxf(x, y) : x + y;
        }
        if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = x;
        __syncthreads();
        if (threadIdx.x < 32) {
            x = threadIdx.x < blockDim.x / 32 ? shared[threadIdx.x] : (is_max ? -INFINITY : 0.0f);
            for (int off = 16; off > 0; off /= 2) {
                const float y = __shfl_down_sync(0xffffffffu, x, off);
                x = is_max ? fmaxf(x, y) : x + y;
            }
            if (threadIdx.x == 0) shared[0] = x;
        }
        __syncthreads();
        const float result = shared[0];
        __syncthreads();
        return result;
    };
    float mx = -INFINITY;
    for (std::uint64_t t = threadIdx.x; t < n; t += blockDim.x) mx = fmaxf(mx, row[t]);
    mx = block_reduce(mx, true);
    float sum = 0;
    for (std::uint64_t t = threadIdx.x; t < n; t += blockDim.x) sum += (row[t] = __expf(row[t] - mx));
    sum = block_reduce(sum, false);
    const float inv = 1.0f / sum;
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
    const std::uint64_t scores_bytes = slot_count * sh.q_heads * max_tokens * sizeof(float);
    const std::uint64_t out_bytes = slot_count * sh.q_heads * sh.dv * sizeof(float);
    const std::uint64_t q_bytes = request.arch.layers * sh.q_heads * sh.dk * sizeof(float);
    const std::uint64_t l2 = r.device.cache_bytes;
    const std::uint64_t ceiling_bytes =
        request.ceiling_bytes ? request.ceiling_bytes
                              : std::min<std::uint64_t>(std::max<std::uint64_t>({8 * l2, 1ull << 30}), free0 / 8);
    a.workspace_bytes = scores_bytes + out_bytes + q_bytes + slot_count * sizeof(SlotDev);
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
    DeviceBuffer scores(scores_bytes), out(out_bytes), q(q_bytes), slot_table(slot_count * sizeof(SlotDev));
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

    const int dtype = code_of(request.dtype);
    const std::size_t eb = cpu::element_bytes(request.dtype);
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
    const unsigned sms = std::max(1u, r.device.compute_units);
    const std::uint64_t pairs = slots.size() * sh.kv_heads;
    // Enough token blocks that every SM has several blocks in flight.
    const unsigned token_blocks = static_cast<unsigned>(
        std::max<std::uint64_t>(1, std::min<std::uint64_t>((8ull * sms + pairs - 1) / pairs, (max_tokens + 7) / 8)));
    const std::uint64_t chunk = std::max<std::uint64_t>(64, (max_tokens + token_blocks - 1) / token_blocks);
    const unsigned chunks = static_cast<unsigned>((max_tokens + chunk - 1) / chunk);
    auto step = [&] {
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

std::unique_ptr<Backend> make_cuda_backend(std::string& why) {
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
