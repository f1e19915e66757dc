// The probe's speed figures, printed with ratios (never asserted):
//   CPU decode attention against the read ceiling measured in the same run (target ≥ 60%),
//   one thread reported separately; the stopwatch's speedup against the calculator's bound.
// On a GPU machine scripts/gpu-check prints the CUDA figures.
#include <cstdio>
#include <numeric>

#include "kvscope/calculator/catalog.h"
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
    return 0;
}
