// The CUDA backend: the cache allocated with cudaMalloc exactly as the calculator lays it
// out, the device's memory drop measured with cudaMemGetInfo, and one decode step's
// attention (cuda_attention.h) timed with CUDA events against a read-only pass over device
// memory measured in the same run, and checked against float64 on the host.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends.h"
#include "cpu_formats.h"
#include "cpu_kernels.h"
#include "cuda_attention.h"
#include "cuda_check.h"
#include "cuda_fill.h"
#include "cuda_memory.h"
#include "cuda_step.h"
#include "cuda_stopwatch.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/units.h"
#include "kvscope/probe/plugin.h"
#include "reference.h"
#include "step_common.h"
#include "tiny_transformer.h"

namespace kvscope::probe {

namespace {

using cuda::CudaError;
using cuda::DeviceBuffer;
using cuda::EventTimer;
using cuda::kFp32;
using cuda::SlotDev;

// The driver's smallest allocation granularity for device memory on `device`, looked up through
// the runtime so that nothing links libcuda; 0 when the driver does not provide it.
std::uint64_t driver_granularity(int device) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAllocationGranularity", &fn, 10020, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || fn == nullptr) {
        (void)cudaGetLastError();
        return 0;
    }
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    std::size_t granularity = 0;
    const auto query = reinterpret_cast<PFN_cuMemGetAllocationGranularity_v10020>(fn);
    return query(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS ? granularity : 0;
}

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(int device) : device_(device) {}

    DeviceInfo device() const override {
        DeviceInfo d;
        d.backend = "cuda";
        d.host_memory = false;
        d.units_name = "SMs";
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
            d.available = false;
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

    StepReport step(const StepRequest& request, const Control& control) override {
        StepReport r;
        r.device = device();
        try {
            KVSCOPE_CUDA(cudaSetDevice(device_));
            r = cuda::run_cuda_step(request, control, r.device);
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

// The current device's free memory before the cache (its context already created), with the allocation check's
// prediction, request and granularity, and the memory already taken (this context and whatever else holds some).
std::size_t check_allocation(const std::vector<KvTensor>& tensors, const KvCacheReport& kv, int device,
                             AllocationCheck& a) {
    std::size_t free0 = 0, total = 0;
    KVSCOPE_CUDA(cudaMemGetInfo(&free0, &total));
    a.context_bytes = total - free0;  // this context plus whatever else holds device memory
    a.predicted_bytes = kv.memory_bytes;
    a.predicted_state_bytes = kv.state_bytes;
    for (const KvTensor& t : tensors) a.requested_bytes += t.bytes;
    a.allocations = tensors.size();
    if (const std::uint64_t g = driver_granularity(device)) {
        a.granularity_bytes = g;
        a.granularity_source = "the driver (cuMemGetAllocationGranularity)";
    } else {
        a.granularity_bytes = 2ull << 20;  // cudaMalloc hands out large allocations in 2 MiB pages
        a.granularity_source = "CUDA's documented 2 MiB pages (the driver did not report its granularity)";
    }
    return free0;
}

// The read ceiling's buffer: --ceiling-size (at least 1 MiB), else eight times the L2 (at least 1 GiB) within an
// eighth of the free memory.
std::uint64_t ceiling_size(const ProbeRequest& request, std::uint64_t l2, std::size_t free0) {
    return (request.ceiling_bytes ? std::max<std::uint64_t>(request.ceiling_bytes, 1ull << 20)
                                  : std::min<std::uint64_t>(std::max<std::uint64_t>({8 * l2, 1ull << 30}), free0 / 8)) /
           16 * 16;  // whole 16-byte loads
}

// The workspace's bytes into r.allocation, and whether the cache, the workspace and the read ceiling's buffer fit
// the free memory (or the limit); when they do not, `r` says so.
bool workspace_fits(const Control& control, const cuda::DecodePlan& plan, std::uint64_t q_bytes,
                    std::uint64_t slot_count, std::uint64_t ceiling_bytes, std::size_t free0, ProbeReport& r) {
    AllocationCheck& a = r.allocation;
    a.workspace_bytes = plan.scores_bytes + plan.part_out_bytes + plan.part_ml_bytes + plan.out_bytes + q_bytes +
                        slot_count * sizeof(SlotDev);
    const std::uint64_t limit =
        control.memory_limit_bytes ? std::min<std::uint64_t>(control.memory_limit_bytes, free0) : free0;
    if (a.requested_bytes + a.workspace_bytes + ceiling_bytes + (a.allocations * a.granularity_bytes) > limit) {
        r.status = Status::out_of_memory;
        r.message = "the cache needs " + format_bytes(a.requested_bytes) + " (plus " +
                    format_bytes(a.workspace_bytes + ceiling_bytes) + " of workspace) but " + format_bytes(limit) +
                    " of device memory is free" + (control.memory_limit_bytes ? " or allowed" : "") +
                    "; lower the context, the batch or the precision";
        return false;
    }
    return true;
}

// One device buffer per tensor into `buffers`, and the device's memory drop; false (`r` says why, every buffer
// freed once `buffers` goes) when cancelled.
bool allocate_cache(const Control& control, const std::vector<KvTensor>& tensors, std::vector<DeviceBuffer>& buffers,
                    ProbeReport& r) {
    AllocationCheck& a = r.allocation;
    control.report(0.05, "allocating the cache on " + r.device.name);
    std::size_t free1 = 0, free2 = 0, total = 0;
    KVSCOPE_CUDA(cudaMemGetInfo(&free1, &total));
    buffers.reserve(tensors.size());
    for (const KvTensor& t : tensors) {
        if (control.cancelled()) {
            r.status = Status::cancelled;
            r.message = "cancelled while allocating; all device memory was freed";
            return false;
        }
        buffers.emplace_back(t.bytes);
    }
    KVSCOPE_CUDA(cudaMemGetInfo(&free2, &total));
    a.measured_bytes = free1 > free2 ? free1 - free2 : 0;
    return true;
}

// The slots, one per K tensor (its V the next tensor's buffer, MLA's the same), the longest first.
std::vector<SlotDev> slots_longest_first(const std::vector<KvTensor>& tensors, const std::vector<DeviceBuffer>& buffers,
                                         bool mla) {
    std::vector<SlotDev> slots;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const KvTensor& t = tensors[i];
        if (!t.is_key()) continue;
        slots.push_back({buffers[i].get(), mla ? buffers[i].get() : buffers[i + 1].get(), t.attended,
                         static_cast<std::uint32_t>(t.layer)});
    }
    // The longest slots first: a fused kernel numbers its blocks slot by slot and the GPU starts them in that order,
    // so the splits that read the most start at once, and the short ones (sliding-window layers: 128 tokens of
    // gpt-oss-20b's beside 32k) run in the places they leave. On an H200 (2026-12-04, docs/gpu-results.md)
    // gpt-oss-20b at 32k went from 0.785 to 0.83 of the read ceiling with it, Gemma 3 27B from 0.92 to 0.97. Each
    // slot keeps its layer's queries and its output rows; the check below takes the first and last slots, so both
    // kinds are checked.
    std::stable_sort(slots.begin(), slots.end(),
                     [](const SlotDev& x, const SlotDev& y) { return x.tokens > y.tokens; });
    return slots;
}

// The slots into `slot_table` and random queries into `q`, on the device before any run: the queries, as the host
// keeps them for the check.
std::vector<float> upload_inputs(const std::vector<SlotDev>& slots, const DeviceBuffer& slot_table,
                                 const DeviceBuffer& q, std::uint64_t q_bytes) {
    KVSCOPE_CUDA(cudaMemcpy(slot_table.get(), slots.data(), slots.size() * sizeof(SlotDev), cudaMemcpyHostToDevice));
    std::vector<float> host_q(q_bytes / sizeof(float));
    cpu::fill_random(KvDtype::fp32, host_q.data(), host_q.size(), 7919);  // random, never zero
    KVSCOPE_CUDA(cudaMemcpy(q.get(), host_q.data(), q_bytes, cudaMemcpyHostToDevice));
    KVSCOPE_CUDA(cudaDeviceSynchronize());
    return host_q;
}

// What r.attention knows before any run: the bytes a step reads, the SMs, whether the cache could stay in the L2
// (`l2` bytes), and the plan's kernel.
void describe_attention(const std::vector<KvTensor>& tensors, const cuda::DecodePlan& plan, std::uint64_t l2,
                        ProbeReport& r) {
    AttentionTiming& at = r.attention;
    at.kv_bytes_read = kv_bytes_read(tensors);
    at.threads = r.device.compute_units;
    at.cache_resident = at.kv_bytes_read < 2 * l2;

    at.kernel = plan.description;
    at.tensor_cores = plan.tensor_cores;
}

// The timed runs of `plan` over `decode_buffers` (`flush_l2` before each), into r.attention; false (`r` says why)
// when cancelled.
bool time_decode(const ProbeRequest& request, const Control& control, const cuda::DecodePlan& plan,
                 const cuda::DecodeBuffers& decode_buffers, const auto& flush_l2, const AttentionShape& sh,
                 ProbeReport& r) {
    AttentionTiming& at = r.attention;
    EventTimer timer;

    std::vector<double> times;
    const int runs = std::max(1, request.timing_runs);
    for (int run = 0; run <= runs; ++run) {
        if (control.cancelled()) {
            r.status = Status::cancelled;
            r.message = "cancelled while timing; all device memory was freed";
            return false;
        }
        control.report(0.3 + 0.6 * run / (runs + 1),
                       "timing decode attention, run " + std::to_string(run) + " of " + std::to_string(runs));
        flush_l2();
        timer.start();
        cuda::launch_decode(plan, decode_buffers);
        const double ms = timer.stop_ms();
        if (run > 0) times.push_back(ms);
    }
    at.runs = runs;
    at.median_ms = step::median_of(times);
    at.min_ms = *std::min_element(times.begin(), times.end());
    at.kv_read_gbps = static_cast<double>(at.kv_bytes_read) / (at.median_ms * 1e6);
    at.fraction_of_ceiling = at.ceiling_gbps > 0 ? at.kv_read_gbps / at.ceiling_gbps : 0;
    at.heads_per_row = sh.kv_heads > 0 ? sh.q_heads / sh.kv_heads : 0;
    return true;
}

// The first and last of `slots` checked against float64 on the host (their output in `out`, their queries
// `host_q`'s), then the report's message.
void check_against_reference(const ProbeRequest& request, const Control& control, const cuda::DecodePlan& plan,
                             const DeviceBuffer& out, const std::vector<SlotDev>& slots,
                             const std::vector<float>& host_q, const AttentionShape& sh, bool mla, ProbeReport& r) {
    const AllocationCheck& a = r.allocation;
    AttentionTiming& at = r.attention;
    // Bytes of a run of values in the cache's format (whole blocks of 32 for q8_0 and q4_0).
    const auto bytes_of = [&](std::uint64_t values) { return cpu::row_size(request.dtype, values); };
    // Check the first and last slots against float64 on the host.
    control.report(0.95, "checking against a float64 reference");
    std::vector<float> host_out(plan.out_bytes / sizeof(float));
    KVSCOPE_CUDA(cudaMemcpy(host_out.data(), out.get(), plan.out_bytes, cudaMemcpyDeviceToHost));
    for (const std::size_t i : {std::size_t{0}, slots.size() - 1}) {
        const SlotDev& s = slots[i];
        std::vector<std::byte> k(bytes_of(s.tokens * sh.row_k)), v(mla ? 0 : bytes_of(s.tokens * sh.row_v));
        KVSCOPE_CUDA(cudaMemcpy(k.data(), s.k, k.size(), cudaMemcpyDeviceToHost));
        if (!mla) KVSCOPE_CUDA(cudaMemcpy(v.data(), s.v, v.size(), cudaMemcpyDeviceToHost));
        const auto ref = attention_reference(k.data(), mla ? k.data() : v.data(), s.tokens, sh, request.dtype,
                                             host_q.data() + static_cast<std::size_t>(s.layer) * sh.q_heads * sh.dk);
        at.max_rel_error =
            std::max(at.max_rel_error, max_relative_error(host_out.data() + i * sh.q_heads * sh.dv, ref));
    }
    control.report(1.0, "done");
    r.message = "predicted " + format_count(a.predicted_bytes) + " bytes, allocated " +
                format_count(a.requested_bytes) + ", device memory drop " + format_count(a.measured_bytes) +
                "; attention reads the cache at " + std::to_string(std::lround(at.fraction_of_ceiling * 100)) +
                "% of the measured read bandwidth";
}

void CudaBackend::run(const ProbeRequest& request, const Control& control, ProbeReport& r) {
    auto tensors = kv_tensors(request);  // refuses, with the reason, the formats neither backend stores
    if (!tensors) {
        r.status = Status::invalid_input;
        r.message = tensors.error_text();
        return;
    }
    const KernelWishRead wish = attention_kernel_wish_from_environment();
    if (!wish.error.empty()) {
        r.status = Status::invalid_input;
        r.message = wish.error;
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
    const std::size_t free0 = check_allocation(*tensors, *kv, device_, r.allocation);
    const AllocationCheck& a = r.allocation;

    const bool mla = request.arch.mla.has_value();
    const AttentionShape sh = attention_shape(request.arch);
    std::uint64_t max_tokens = 1;
    for (const KvTensor& t : *tensors) max_tokens = std::max(max_tokens, t.tokens);
    // One slot per K tensor: layers without a KV cache of their own (recurrent, shared, MLP-only) attend nothing here.
    const std::uint64_t slot_count = static_cast<std::uint64_t>(
        std::count_if(tensors->begin(), tensors->end(), [](const KvTensor& t) { return t.is_key(); }));
    const unsigned sms = std::max(1u, r.device.compute_units);
    const int dtype = cuda::code_of(request.dtype);
    // No slot (nothing attends): no plan, whose shape would divide by 0 KV heads; its buffers stay 1 byte.
    const cuda::DecodePlan plan =
        slot_count > 0 ? cuda::plan_decode(sh, request.dtype, slot_count, max_tokens, sms, wish.wish, wish.splits)
                       : cuda::DecodePlan{};
    const std::uint64_t q_bytes = request.arch.layers * sh.q_heads * sh.dk * sizeof(float);
    const std::uint64_t l2 = r.device.cache_bytes;
    const std::uint64_t ceiling_bytes = ceiling_size(request, l2, free0);
    if (!workspace_fits(control, plan, q_bytes, slot_count, ceiling_bytes, free0, r)) return;

    // Workspace first, so that the memory drop measured next is the cache alone.
    DeviceBuffer scores(plan.scores_bytes), part_out(plan.part_out_bytes), part_ml(plan.part_ml_bytes),
        out(plan.out_bytes), q(q_bytes), slot_table(slot_count * sizeof(SlotDev));
    DeviceBuffer ceiling_buffer(ceiling_bytes), sink(sizeof(unsigned));
    std::vector<DeviceBuffer> buffers;
    if (!allocate_cache(control, *tensors, buffers, r)) return;

    for (std::size_t i = 0; i < buffers.size(); ++i)
        cuda::fill_random(buffers[i].get(), cpu::values_in(request.dtype, (*tensors)[i].bytes), dtype, i + 1);
    if (slot_count == 0) {  // a model none of whose layers keeps a KV cache: the state is allocated, nothing attends
        KVSCOPE_CUDA(cudaDeviceSynchronize());
        control.report(1.0, "done");
        r.message = "predicted " + format_count(a.predicted_bytes) + " bytes (recurrent state), allocated " +
                    format_count(a.requested_bytes) + ", device memory drop " + format_count(a.measured_bytes) +
                    "; no layer attends, so there is no attention to time";
        return;
    }
    const std::vector<SlotDev> slots = slots_longest_first(*tensors, buffers, mla);
    const std::vector<float> host_q = upload_inputs(slots, slot_table, q, q_bytes);

    describe_attention(*tensors, plan, l2, r);
    AttentionTiming& at = r.attention;
    const cuda::DecodeBuffers decode_buffers{slot_table.get<SlotDev>(), q.get<float>(),       scores.get<float>(),
                                             part_out.get<float>(),     part_ml.get<float>(), out.get<float>()};
    auto flush_l2 = [&] {  // when the cache could stay in L2 between runs
        if (!at.cache_resident) return;
        cuda::read_pass(ceiling_buffer.get(), std::min<std::uint64_t>(ceiling_bytes, 4 * l2) / 16 * 16, sms,
                        sink.get<unsigned>());
    };

    // The read ceiling: a read-only pass over the ceiling buffer, several times the L2.
    control.report(0.2, "measuring the read bandwidth ceiling");
    cuda::fill_random(ceiling_buffer.get(), ceiling_bytes / 4, kFp32, 99);
    at.ceiling_gbps = cuda::read_ceiling_gbps(ceiling_buffer.get(), ceiling_bytes, sms, sink.get<unsigned>());
    if (!time_decode(request, control, plan, decode_buffers, flush_l2, sh, r)) return;
    check_against_reference(request, control, plan, out, slots, host_q, sh, mla, r);
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

// The plugin's two entry points (kvscope/probe/plugin.h).
KVSCOPE_PLUGIN_EXPORT int kvscope_probe_plugin_abi() { return kvscope::probe::kPluginAbi; }

KVSCOPE_PLUGIN_EXPORT void kvscope_probe_plugin_create(kvscope::probe::BackendChoice* out) {
    try {
        out->backend = kvscope::probe::make_cuda_backend(out->message, out->status);
    } catch (const std::exception& e) {
        out->backend.reset();
        out->status = kvscope::probe::Status::no_device;
        out->message = std::string("the CUDA backend could not start: ") + e.what();
    }
}
