#pragma once
// A serving simulation's answers (simulate.h): the latencies' percentiles, the KV blocks in use over time, the
// prefix cache's hits; as every program shows them (simulation_rows) and as JSON (simulation_json, from one
// declaration of the report's members).

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kvscope/calculator/json.h"
#include "kvscope/calculator/json_members.h"
#include "kvscope/calculator/serving.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

struct Percentiles {
    double mean = 0, median = 0, p90 = 0, p99 = 0;
};
// The figure at a target's percentile: 99 → p99, 90 → p90, else the median.
double at_percentile(const Percentiles& p, double percentile);

struct TimelinePoint {
    double t_s = 0;
    std::uint64_t running = 0, waiting = 0;
    std::uint64_t kv_used_bytes = 0;  // per GPU
    // What the same requests' blocks would take if none were shared: each request's copy of a shared prefix counted.
    std::uint64_t kv_unshared_bytes = 0;
};

// A timeline point's fields, as the JSON and the CSV timeline both give them, in order: its time, then its counts.
struct TimelineFields {
    double t_s = 0;
    std::array<std::pair<const char*, std::uint64_t>, 4> counts{};
};
TimelineFields timeline_fields(const TimelinePoint& p);

struct SimulationReport {
    std::uint64_t requests = 0;  // served to the end
    std::uint64_t refused = 0;   // longer than max_model_len or than the whole cache: vLLM refuses them
    double duration_s = 0;       // first arrival to last token
    double request_throughput = 0, output_throughput = 0, input_throughput = 0;  // per second
    Percentiles ttft_ms, tpot_ms, itl_ms, e2e_ms;
    std::uint64_t kv_budget_blocks = 0;         // usable (the null block left out)
    std::uint64_t kv_budget_bytes_per_gpu = 0;  // those blocks' bytes
    std::uint64_t kv_peak_blocks = 0;
    std::uint64_t kv_peak_bytes_per_gpu = 0;
    // The worst case the other commands size for: the most sequences that ran at once, each at max_model_len.
    std::uint64_t kv_worst_case_bytes_per_gpu = 0;
    double kv_mean_used_fraction = 0;  // blocks held by requests, time-weighted, over the budget
    double prefix_hit_rate = 0;        // prompt tokens found in the cache / prompt tokens scheduled
    std::uint64_t prefix_hit_tokens = 0;
    // What sharing saved: the blocks the running requests reference beyond those in use (a block shared by n requests
    // saves n − 1), the most at any time and time-weighted; and the prefill skipped, the hit tokens' matmul work at
    // the compute rate the steps use (GPU time of work, their attention left out).
    std::uint64_t prefix_saved_peak_bytes_per_gpu = 0;
    std::uint64_t prefix_saved_mean_bytes_per_gpu = 0;
    double prefix_saved_prefill_s = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t max_running = 0;
    double mean_running = 0, mean_waiting = 0;  // time-weighted over duration_s
    double mean_in_system = 0;                  // waiting + running, from each request's arrival
    std::uint64_t steps = 0;
    std::string step_time_source = "roofline";
    std::vector<TimelinePoint> timeline;
    std::vector<std::string> notes, warnings;
};

// A simulation's answers as every program shows them, a row each: "served", "throughput", "TTFT (ms)", …
std::vector<std::pair<std::string, std::string>> simulation_rows(const SimulationReport& r,
                                                                 const ServingSettings& settings, UnitSystem units);

json::Value simulation_json(const SimulationReport& r);
std::vector<DeclaredMember> declared_members(const SimulationReport& r);

}  // namespace kvscope
