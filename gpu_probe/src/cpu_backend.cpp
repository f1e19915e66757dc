// The CPU backend: the same measurements as the GPU's, on host memory.
#include "cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <thread>

#include "backends.h"
#include "cpu_attention.h"
#include "cpu_formats.h"
#include "cpu_kernels.h"
#include "host_memory.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/units.h"
#include "reference.h"
#include "step.h"
#include "step_common.h"
#include "tiny_transformer.h"

namespace kvscope::probe {

namespace {

using cpu::attend;
using cpu::Buffer;
using cpu::kTile;
using cpu::parallel_for;
using cpu::Scratch;
using cpu::Shape;
using cpu::Slot;
using cpu::uses_bf16_dot;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

class CpuBackend final : public Backend {
public:
    DeviceInfo device() const override {
        DeviceInfo d;
        d.backend = "cpu";
        d.name = host::cpu_name();
        d.total_bytes = host::total_bytes();
        d.free_bytes = host::available_bytes();
        d.compute_units = host::threads();
        d.cache_bytes = host::last_level_cache_bytes();
        d.note = std::string(!cpu::vectorized()    ? "plain conversion loops"
                             : cpu::has_bf16_dot() ? "AVX2 + F16C conversion; bf16 caches read with AVX-512 BF16 dot "
                                                     "products (queries rounded to bf16)"
                                                   : "AVX2 + F16C conversion") +
                 "; cache and read-ceiling buffers on transparent huge pages where the system grants them";
        return d;
    }

    ProbeReport probe(const ProbeRequest& request, const Control& control) override;
    StopwatchReport stopwatch(const StopwatchRequest& request, const Control& control) override {
        StopwatchReport r = run_stopwatch(request, control);
        r.device = device();
        return r;
    }
    StepReport step(const StepRequest& request, const Control& control) override {
        return run_cpu_step(request, control, device());
    }
};

// Sets `r`'s status and message, and returns it: the report of a probe that stops there.
ProbeReport& fail(ProbeReport& r, Status s, std::string message) {
    r.status = s;
    r.message = std::move(message);
    return r;
}

// The cache (`count` buffers), the workspace and the read ceiling's buffer against the memory the probe may use:
// the read ceiling's size, or nothing (`r` says why) when they do not fit.
std::optional<std::uint64_t> ceiling_bytes_that_fit(const ProbeRequest& request, const Control& control,
                                                    std::uint64_t count, const KvCacheReport& kv, ProbeReport& r) {
    const AllocationCheck& a = r.allocation;
    const host::Budget budget = host::budget(control.memory_limit_bytes);
    const std::uint64_t limit = budget.bytes;
    const std::uint64_t ceiling_bytes = request.ceiling_bytes ? request.ceiling_bytes : host::ceiling_buffer_bytes();
    // Each buffer's entry in the list and its pointer are memory too.
    const std::uint64_t bookkeeping = count * (sizeof(KvTensor) + sizeof(Buffer));
    const Checked total = Checked(kv.memory_bytes) + a.workspace_bytes + ceiling_bytes + bookkeeping;
    if (total.overflow() || total.value() > limit) {
        fail(r, Status::out_of_memory,
             "the cache needs " + format_bytes(kv.memory_bytes) + ", and the probe " +
                 format_bytes(a.workspace_bytes + bookkeeping) + " of workspace and " + format_bytes(ceiling_bytes) +
                 " for the read ceiling (--ceiling-size): more than the " + format_bytes(limit) + " " + budget.why +
                 "; lower the context, the batch or the precision" +
                 (kv.memory_bytes <= limit ? ", or the read ceiling's size" : ""));
        return std::nullopt;
    }
    return ceiling_bytes;
}

// One buffer per tensor into `buffers`, and the resident memory's growth; false (`r` says why, every buffer freed
// once `buffers` goes) when cancelled or refused.
bool allocate_cache(const ProbeRequest& request, const Control& control, const std::vector<KvTensor>& tensors,
                    unsigned threads, std::vector<Buffer>& buffers, ProbeReport& r) {
    AllocationCheck& a = r.allocation;
    // 1. Allocation check: one buffer per tensor, filled with random values (which also makes every page resident).
    control.report(0.0, "allocating the cache");
    buffers.reserve(tensors.size());
    const std::uint64_t before = host::resident_bytes();
    try {
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            if (control.cancelled()) {
                fail(r, Status::cancelled, "cancelled while allocating; all memory was freed");
                return false;
            }
            void* p = std::malloc(std::max<std::uint64_t>(tensors[i].bytes, 1));
            if (!p) throw std::bad_alloc();
            host::advise_huge_pages(p, tensors[i].bytes);
            buffers.emplace_back(p);
        }
        parallel_for(tensors.size(), threads, [&](std::size_t i, unsigned) {
            // The indexer's keys are fp8 whatever the cache's format (probe.cpp); the rest is in the cache's.
            const KvDtype format = tensors[i].is_indexer ? KvDtype::fp8_e4m3 : request.dtype;
            cpu::fill_random(format, buffers[i].get(), cpu::values_in(format, tensors[i].bytes), i + 1);
        });
    } catch (const std::bad_alloc&) {
        buffers.clear();
        fail(r, Status::out_of_memory,
             "the system refused to allocate " + format_bytes(a.requested_bytes) + "; all memory was freed");
        return false;
    }
    const std::uint64_t after = host::resident_bytes();
    a.measured_bytes = after > before ? after - before : 0;
    control.report(0.2, "cache allocated");
    return true;
}

// Times `step` (one decode step's attention on that many threads) on all threads, then on one, into r.attention;
// false (`r` says why) when cancelled.
bool time_decode(const ProbeRequest& request, const Control& control, unsigned threads, const auto& step,
                 ProbeReport& r) {
    AttentionTiming& at = r.attention;
    // 3. Decode attention: one warm-up, then timed runs.
    std::vector<double> times;
    const int runs = std::max(1, request.timing_runs);
    for (int run = 0; run <= runs; ++run) {
        if (control.cancelled()) {
            fail(r, Status::cancelled, "cancelled while timing; all memory was freed");
            return false;
        }
        control.report(0.3 + 0.55 * run / (runs + 1),
                       "timing decode attention, run " + std::to_string(run) + " of " + std::to_string(runs));
        const auto start = Clock::now();
        step(threads);
        if (run > 0) times.push_back(ms_since(start));
    }
    at.runs = runs;
    at.median_ms = step::median_of(times);
    at.min_ms = *std::min_element(times.begin(), times.end());
    at.kv_read_gbps = static_cast<double>(at.kv_bytes_read) / (at.median_ms * 1e6);
    at.fraction_of_ceiling = at.ceiling_gbps > 0 ? at.kv_read_gbps / at.ceiling_gbps : 0;
    if (threads > 1) {
        control.report(0.86, "timing one thread");
        const auto start = Clock::now();
        step(1);
        at.single_thread_gbps = static_cast<double>(at.kv_bytes_read) / (ms_since(start) * 1e6);
    } else {
        at.single_thread_gbps = at.kv_read_gbps;
    }
    return true;
}

// The first and last of `slots` attended again (`attend_slot`) and checked against float64, then the report's
// message.
void check_against_reference(const ProbeRequest& request, const Control& control, const Shape& sh,
                             const std::vector<Slot>& slots, const std::vector<std::vector<float>>& queries,
                             std::vector<Scratch>& scratch, const auto& attend_slot, ProbeReport& r) {
    const AllocationCheck& a = r.allocation;
    AttentionTiming& at = r.attention;
    // 4. Correctness: the first and last slots against float64.
    control.report(0.95, "checking against a float64 reference");
    for (const std::size_t i : {std::size_t{0}, slots.size() - 1}) {
        Scratch& sc = scratch[0];
        const Slot& s = slots[i];
        attend_slot(s, sc);
        const std::vector<double> ref =
            attention_reference(s.k, s.v, s.tokens, sh, request.dtype, queries[s.layer].data());
        at.max_rel_error = std::max(at.max_rel_error, max_relative_error(sc.out.data(), ref));
    }
    control.report(1.0, "done");
    r.message = "predicted " + format_count(a.predicted_bytes) + " bytes, allocated " +
                format_count(a.requested_bytes) + ", resident growth " + format_count(a.measured_bytes) +
                "; attention reads the cache at " + std::to_string(std::lround(at.fraction_of_ceiling * 100)) +
                "% of the measured read bandwidth";
    if (at.cache_resident) r.message += " (the cache fits in the CPU caches, so this is optimistic)";
}

// Decode attention over the cache in `buffers` (one per tensor): the read ceiling, the timed runs and the check
// against float64, into `r`.
void measure_attention(const ProbeRequest& request, const Control& control, const std::vector<KvTensor>& tensors,
                       const std::vector<Buffer>& buffers, const Shape& sh, unsigned threads,
                       std::vector<Scratch>& scratch, std::uint64_t ceiling_bytes, ProbeReport& r) {
    // Slots: K and V of one layer for one sequence.
    std::vector<Slot> slots;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const KvTensor& t = tensors[i];
        if (!t.is_key()) continue;
        slots.push_back(
            {buffers[i].get(), request.arch.mla ? buffers[i].get() : buffers[i + 1].get(), t.layer, t.attended});
    }
    AttentionTiming& at = r.attention;
    at.threads = threads;
    at.kv_bytes_read = kv_bytes_read(tensors);
    at.cache_resident = at.kv_bytes_read < host::last_level_cache_bytes();
    at.heads_per_row = sh.kv_heads > 0 ? sh.q_heads / sh.kv_heads : 0;
    at.kernel = "flash-decoding order on " + std::to_string(threads) + " threads: " + std::to_string(kTile) +
                "-token tiles, each K/V row read once for its query group" +
                (uses_bf16_dot(request.dtype, sh) ? ", K by AVX-512 BF16 dot products" : "");

    // Random queries, one set per layer (fresh inputs, never zeros).
    std::vector<std::vector<float>> queries(request.arch.layers, std::vector<float>(sh.q_heads * sh.dk));
    for (std::uint64_t l = 0; l < request.arch.layers; ++l)
        cpu::fill_random(KvDtype::fp32, queries[l].data(), queries[l].size(), 7919 + l);
    std::vector<std::vector<std::uint16_t>> queries_bf16(uses_bf16_dot(request.dtype, sh) ? request.arch.layers : 0);
    for (std::size_t l = 0; l < queries_bf16.size(); ++l) {
        queries_bf16[l].resize(queries[l].size());
        cpu::to_bf16(queries[l].data(), queries_bf16[l].data(), queries[l].size());
    }
    auto attend_slot = [&](const Slot& s, Scratch& sc) {
        attend(s, sh, request.dtype, queries[s.layer].data(),
               queries_bf16.empty() ? nullptr : queries_bf16[s.layer].data(), sc);
    };
    auto step = [&](unsigned use_threads) {
        parallel_for(slots.size(), use_threads, [&](std::size_t i, unsigned worker) {
            attend_slot(slots[i], scratch[worker]);
            scratch[worker].checksum += scratch[worker].out[0];
        });
    };

    // 2. The read ceiling: a read-only pass over memory several times the last-level cache.
    control.report(0.25, "measuring the read bandwidth ceiling");
    at.ceiling_gbps = measure_host_read_gbps(ceiling_bytes);
    if (at.ceiling_gbps <= 0) {
        fail(r, Status::out_of_memory, "could not allocate the " + format_bytes(ceiling_bytes) + " bandwidth buffer");
        return;
    }

    if (!time_decode(request, control, threads, step, r)) return;
    check_against_reference(request, control, sh, slots, queries, scratch, attend_slot, r);
}

ProbeReport CpuBackend::probe(const ProbeRequest& request, const Control& control) {
    ProbeReport r;
    r.device = device();
    // The checks and the count of the buffers first: the list of them is built only once the cache fits.
    auto count = kv_tensor_count(request);
    if (!count) return fail(r, Status::invalid_input, count.error_text());
    auto kv = kv_cache_report(request.arch, request.dtype, request.workload, Parallelism{});
    if (!kv) return fail(r, Status::invalid_input, kv.error_text());

    const Shape sh = attention_shape(request.arch);
    const unsigned threads = host::threads();
    AllocationCheck& a = r.allocation;
    a.predicted_bytes = kv->memory_bytes;
    a.predicted_state_bytes = kv->state_bytes;
    a.granularity_bytes = host::page_bytes();
    a.granularity_source = "the system's page size";
    std::vector<Scratch> scratch(threads, Scratch(sh, request.dtype));
    a.workspace_bytes = threads * scratch.front().bytes();

    const std::optional<std::uint64_t> ceiling_bytes = ceiling_bytes_that_fit(request, control, *count, *kv, r);
    if (!ceiling_bytes) return r;
    auto tensors = kv_tensors(request);
    if (!tensors) return fail(r, Status::invalid_input, tensors.error_text());
    for (const KvTensor& t : *tensors) a.requested_bytes += t.bytes;
    a.allocations = tensors->size();

    std::vector<Buffer> buffers;
    if (!allocate_cache(request, control, *tensors, threads, buffers, r)) return r;
    if (std::none_of(tensors->begin(), tensors->end(), [](const KvTensor& t) { return !t.is_state; })) {
        // A model none of whose layers keeps a KV cache: the state is allocated and measured, nothing attends.
        control.report(1.0, "done");
        r.message = "predicted " + format_count(a.predicted_bytes) + " bytes (recurrent state), allocated " +
                    format_count(a.requested_bytes) + ", resident growth " + format_count(a.measured_bytes) +
                    "; no layer attends, so there is no attention to time";
        return r;
    }
    measure_attention(request, control, *tensors, buffers, sh, threads, scratch, *ceiling_bytes, r);
    return r;
}

}  // namespace

double measure_host_read_gbps(std::uint64_t bytes) {
    const unsigned threads = host::threads();
    const std::size_t words = bytes / 8;
    Buffer big(std::malloc(words * 8));
    if (!big) return 0;
    host::advise_huge_pages(big.get(), words * 8);  // allocated as the cache is, so the two compare
    std::memset(big.get(), 0x5a, words * 8);        // any non-zero pattern: only the reads matter here
    const std::size_t chunk = (words + threads - 1) / threads;
    const auto* data = static_cast<const std::uint64_t*>(big.get());
    std::atomic<std::uint64_t> sink{0};
    std::vector<double> runs;
    for (int run = 0; run < 6; ++run) {
        const auto start = Clock::now();
        parallel_for(threads, threads, [&](std::size_t t, unsigned) {
            const std::size_t lo = std::min(words, t * chunk), hi = std::min(words, lo + chunk);
            if (lo < hi) sink += cpu::read_pass(data + lo, hi - lo);
        });
        const double ms = ms_since(start);
        if (run > 0) runs.push_back(static_cast<double>(words * 8) / (ms * 1e6));
    }
    return sink.load() == 42 ? 0 : step::median_of(runs);  // the comparison keeps the passes observable
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace kvscope::probe
