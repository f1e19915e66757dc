// The probe's speed figures, printed with ratios (never asserted):
//   CPU decode attention against the read ceiling measured in the same run (target ≥ 60%),
//   one thread reported separately; the stopwatch's speedup against the calculator's bound; the decode step of
//   the whole model (probe --step) against the calculator's floor on the bandwidth measured in the same run.
// On a GPU machine scripts/gpu-check prints the CUDA figures.
#include <cstdio>
#include <numeric>
#include <string>

#include "kvscope/calculator/catalog.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"

using namespace kvscope;

int main(int argc, char** argv) {
    const int stopwatch_tokens = argc > 1 ? std::atoi(argv[1]) : 256;
    auto cpu = probe::make_backend("cpu");
    std::printf("device: %s, %u threads\n", (*cpu)->device().name.c_str(), (*cpu)->device().compute_units);
    for (const char* ctx : {"8k", "32k"}) {
        probe::ProbeRequest r;
        r.arch = Catalog::builtin().find_model("llama-3-8b")->model.arch;
        r.dtype = KvDtype::bf16;
        r.workload.context_tokens = std::string(ctx) == "8k" ? 8192 : 32768;
        r.timing_runs = 10;
        const probe::ProbeReport p = (*cpu)->probe(r, {});
        if (p.status != probe::Status::ok) {
            std::printf("llama-3-8b %s: %s\n", ctx, p.message.c_str());
            continue;
        }
        const auto& a = p.attention;
        std::printf(
            "llama-3-8b %-4s bf16: decode attention %8.1f ms, KV %6.2f GiB read at %5.1f GB/s | ceiling %5.1f GB/s: "
            "%.2f of it (target 0.60) | one thread %5.1f GB/s: %.2f of it\n",
            ctx, a.median_ms, static_cast<double>(a.kv_bytes_read) / (1ull << 30), a.kv_read_gbps, a.ceiling_gbps,
            a.fraction_of_ceiling, a.single_thread_gbps, a.single_thread_gbps / a.ceiling_gbps);
    }

    // The decode step: Llama 3 8B's layers in bf16 and in fp8_e4m3 (read in place, converted in registers), as
    // many as fit in 6 GiB beside its embedding and head, scaled.
    for (const KvDtype weights : {KvDtype::bf16, KvDtype::fp8_e4m3})
        for (const std::uint64_t batch : {1, 16}) {
            probe::StepRequest st;
            st.arch = Catalog::builtin().find_model("llama-3-8b")->model.arch;
            st.kv_dtype = KvDtype::bf16;
            st.weight_dtype = weights;
            st.workload.context_tokens = 8192;
            st.workload.batch = batch;
            probe::Control c;
            c.memory_limit_bytes = 6ull << 30;
            const probe::StepReport p = (*cpu)->step(st, c);
            if (p.status != probe::Status::ok) {
                std::printf("llama-3-8b step batch %llu: %s\n", static_cast<unsigned long long>(batch),
                            p.message.c_str());
                continue;
            }
            std::printf(
                "llama-3-8b 8k %s weights step, batch %-2llu: %8.1f ms (%llu of %llu layers, scaled) | calculator's "
                "floor "
                "%8.1f ms on %5.1f GB/s: measured %.2fx the floor (target <= 1.25) | weights %.0f ms, attention %.0f "
                "ms, "
                "rest %.0f ms\n",
                std::string(to_string(weights)).c_str(), static_cast<unsigned long long>(batch), p.step_ms,
                static_cast<unsigned long long>(p.layers_run), static_cast<unsigned long long>(p.layers_total),
                p.predicted_step_ms, p.ceiling_gbps, p.step_ms / p.predicted_step_ms, p.weights_ms, p.attention_ms,
                p.other_ms);
        }

    probe::StopwatchRequest s;
    s.tokens = stopwatch_tokens;
    const probe::StopwatchReport w = (*cpu)->stopwatch(s, {});
    const double cached = std::accumulate(w.cached_ms.begin(), w.cached_ms.end(), 0.0);
    const double uncached = std::accumulate(w.uncached_ms.begin(), w.uncached_ms.end(), 0.0);
    // The ratio against the calculator's bound: FLOPs of generating from scratch at every step over
    // FLOPs with the cache, both carried by the report.
    std::printf(
        "stopwatch %d tokens: %.1f ms cached, %.1f ms recomputing: %.1fx | calculator's FLOP bound %.1fx: %.2f of it | "
        "texts %s\n",
        s.tokens, cached, uncached, w.speedup, w.speedup_bound, w.speedup / w.speedup_bound,
        w.tokens_identical ? "identical" : "DIFFER");
    // The shape: recomputing step n runs about n positions, so its last third costs several times its
    // first; with the cache each step runs one position, so the thirds cost about the same.
    const auto third = [](const std::vector<double>& v, std::size_t k) {
        const std::size_t n = v.size() / 3;
        return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(k * n),
                               v.begin() + static_cast<std::ptrdiff_t>((k + 1) * n), 0.0);
    };
    std::vector<double> positions(w.uncached_ms.size());  // positions run at each recomputing step, prompt aside
    std::iota(positions.begin(), positions.end(), 1.0);
    if (w.cached_ms.size() >= 3 && third(w.uncached_ms, 0) > 0 && third(w.cached_ms, 0) > 0)
        std::printf(
            "stopwatch growth, last third over first: recomputing %.1fx (%.1fx by the positions run), "
            "cached %.2fx (1 by the positions run)\n",
            third(w.uncached_ms, 2) / third(w.uncached_ms, 0), third(positions, 2) / third(positions, 0),
            third(w.cached_ms, 2) / third(w.cached_ms, 0));
    return 0;
}
