#pragma once
// Serving real traffic: the engine's scheduler simulated step by step over the requests of traffic.h, on the KV
// budget its fit gives, with each step's time from the roofline the calculator already has. What it answers: the
// throughput, the latencies users see (TTFT, TPOT, ITL, end to end), the KV blocks in use over time against the
// budget, the prefix cache's hits, the preemptions; and the highest request rate that meets a latency target.
//
// The scheduler is vLLM's V1 (vllm/v1/core/sched/scheduler.py, Scheduler.schedule, as of v0.11, 2025-10), rule by
// rule in simulate.cpp with the file each follows: continuous batching, chunked prefill within
// max_num_batched_tokens, max_num_seqs, paged blocks of block_size from the fit's budget, automatic prefix caching of
// full blocks with LRU eviction of free blocks, preemption by recompute.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvscope/calculator/json.h"
#include "kvscope/calculator/json_members.h"
#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/traffic.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

// The share of its dense bf16 rate a GPU's prefill reaches in vLLM, fitted to published runs on that GPU (simulate.cpp
// says which); nullopt for a GPU no published run fits, which then takes kUnfittedComputeEfficiency, said as not
// exact.
std::optional<double> fitted_compute_efficiency(const std::string& gpu_id);
inline constexpr double kUnfittedComputeEfficiency = 0.5;

// What a step costs on one GPU of a replica: the bytes it reads and the work it does, and the GPU's rates.
struct StepCost {
    double weight_bytes = 0;  // read once a step (per GPU)
    // Bytes a sequence's cache adds per token, per GPU, by the window its layers keep (0: every token).
    struct KvGroup {
        std::uint64_t window = 0;
        double bytes_per_token = 0;
    };
    std::vector<KvGroup> kv_groups;
    double state_bytes_per_sequence = 0;  // a recurrent state, read once a step
    double flops_per_token = 0;           // 2 × the active matmul parameters, per GPU
    double attention_flops_per_pair = 0;  // one query against one cached key, all layers, per GPU
    double bandwidth_bytes_per_s = 0;
    double flops_per_s = 0;    // dense bf16
    std::uint64_t stages = 1;  // pipeline stages, run in turn
    // How near the rates an engine's step comes, and what a step costs besides (launches, the scheduler, sampling).
    // The bandwidth's and the overhead: what vLLM 0.11's decode steps of Qwen3-8B took on one H100 at 1–8 sequences
    // (7.2–7.7 ms, bench/published_runs.h); the compute's: fitted_compute_efficiency for the GPU.
    double bandwidth_efficiency = 0.8;
    double compute_efficiency = kUnfittedComputeEfficiency;
    double overhead_s = 0.001;
};

// The bytes a sequence of `tokens` tokens reads a step, per GPU.
double kv_read_bytes(const StepCost& cost, std::uint64_t tokens);
// A step's time: overhead + the larger of its reads over the bandwidth and its work over the compute rate, each at
// its efficiency, for each pipeline stage in turn.
double step_seconds(const StepCost& cost, double bytes, double flops);

// The step's cost for this scenario's model and deployment (the fit's weights per GPU, the cache's bytes per token by
// window, the GPU's bandwidth and bf16 rate).
Result<StepCost> step_cost(const Scenario& s);

struct ServingSettings {
    std::uint64_t block_size = 16;      // vLLM's default on CUDA (vllm/platforms/cuda.py)
    std::uint64_t kv_blocks = 0;        // num_gpu_blocks; block 0 is vLLM's null block, never handed out
    std::uint64_t bytes_per_block = 0;  // per GPU, for the bytes in use
    std::uint64_t max_num_batched_tokens = 8192;
    std::uint64_t max_num_seqs = 256;
    std::uint64_t max_model_len = 0;  // a request longer than this is refused, as vLLM refuses it
    bool prefix_caching = true;       // on by default in V1 (vllm/engine/arg_utils.py _set_default_args)
    std::uint64_t concurrency = 0;    // the most requests the client keeps in flight (0: no limit)
    // The API server in front of the engine (vllm/entrypoints/openai: the chat template, tokenizing, HTTP): each
    // request is handled one at a time for api_serial_s, then takes api_latency_s more before the scheduler sees it.
    // Defaults fitted to GPUStack's vLLM 0.11 runs (bench/published_runs.h): 1,000 requests of 128 tokens served at
    // 44 a second on an H100 whatever the GPU's speed (23 ms each, one at a time), and 60 ms to the first token at
    // one request in flight where the prefill takes 7 ms.
    double api_serial_s = 0.023;
    double api_latency_s = 0.030;
    std::uint64_t timeline_points = 200;
};

// The engine's settings for this scenario: vLLM's block size (the workload's when it is above 1), its batch limits
// for the GPU (vllm_batch), the KV budget of the fit in blocks of block_size tokens.
struct ServingSetup {
    ServingSettings settings;
    StepCost cost;
    std::string step_time_source = "roofline";  // or "measured"
    std::vector<std::string> notes, warnings;
};
// `measured`: a decode step of this scenario that probe --step timed on the deployment's GPU (find_measured_step):
// the bandwidth a step reaches is then the one it reached, and the step times say they are measured.
Result<ServingSetup> serving_setup(const Scenario& s, bool prefix_caching, std::uint64_t concurrency,
                                   const std::optional<MeasuredStep>& measured = std::nullopt);

struct Percentiles {
    double mean = 0, median = 0, p90 = 0, p99 = 0;
};
// The figure at a target's percentile: 99 → p99, 90 → p90, else the median.
double at_percentile(const Percentiles& p, double percentile);

struct TimelinePoint {
    double t_s = 0;
    std::uint64_t running = 0, waiting = 0;
    std::uint64_t kv_used_bytes = 0;  // per GPU
};

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
    std::uint64_t preemptions = 0;
    std::uint64_t max_running = 0;
    double mean_running = 0, mean_waiting = 0;  // time-weighted over duration_s
    double mean_in_system = 0;                  // waiting + running, from each request's arrival
    std::uint64_t steps = 0;
    std::string step_time_source = "roofline";
    std::vector<TimelinePoint> timeline;
    std::vector<std::string> notes, warnings;
};

// Called every few hundred steps with the share of the requests ended; false stops the simulation (an error
// "cancelled" under "simulate").
using SimulationProgress = std::function<bool(double fraction)>;

Result<SimulationReport> simulate_serving(const std::vector<TrafficRequest>& requests, const ServingSettings& settings,
                                          const StepCost& cost, const SimulationProgress& progress = {});

// The serving curve: the traffic `spec` at `points` Poisson rates, from a tenth of the throughput it gets all at once
// to a little past it, each simulated with the same seed: what a report plots as latency against request rate.
struct ServingPoint {
    double rate = 0;
    double request_throughput = 0;
    Percentiles ttft_ms, tpot_ms;
};
Result<std::vector<ServingPoint>> serving_curve(const TrafficSpec& spec, const ServingSettings& settings,
                                                const StepCost& cost, std::size_t points = 10,
                                                const SimulationProgress& progress = {});

// The traffic in words ("2,000 requests, 4/s (Poisson), prompts of 2,000 ± 50% tokens, …"); `trace`: the file the
// requests came from, or empty.
std::string traffic_text(const TrafficSpec& spec, const std::string& trace, std::uint64_t requests,
                         std::uint64_t concurrency);
// A simulation's answers as every program shows them, a row each: "served", "throughput", "TTFT (ms)", …
std::vector<std::pair<std::string, std::string>> simulation_rows(const SimulationReport& r,
                                                                 const ServingSettings& settings, UnitSystem units);

// The highest Poisson rate (requests a second) at which the percentile `percentile` of TTFT stays within ttft_ms and
// of TPOT within tpot_ms (either may be absent), for the traffic `spec` at that rate: a bisection over simulations
// with the same seed; a rate at which a request is refused misses. Infinity when every request at once meets it;
// nullopt when even a rate of 1/1000 of the first guess misses.
struct SloTarget {
    std::optional<double> ttft_ms, tpot_ms;
    double percentile = 99;  // 50, 90 or 99
};
Result<std::optional<double>> max_rate_meeting_slo(const TrafficSpec& spec, const ServingSettings& settings,
                                                   const StepCost& cost, const SloTarget& target,
                                                   const SimulationProgress& progress = {});
// The target and the highest rate meeting it, two rows ("target", "highest rate").
std::vector<std::pair<std::string, std::string>> slo_rows(const SloTarget& target, const std::optional<double>& best);

// One question about traffic, as the CLI's options and the Traffic tab's fields put it, and every answer to it: the
// engine's settings, the simulation, and with a target the highest rate meeting it, and the serving curve when asked.
struct TrafficQuestion {
    TrafficSpec spec;
    std::string trace;  // a trace file's requests instead of spec's (the first spec.requests of them when limit_trace)
    bool limit_trace = false;
    std::uint64_t concurrency = 0;
    bool prefix_caching = true;
    SloTarget target;
    bool curve = false;                    // the serving curve too
    std::optional<MeasuredStep> measured;  // this scenario's decode step measured on its GPU (serving_setup)
};
struct TrafficAnswer {
    ServingSetup setup;
    std::uint64_t requests = 0;  // the traffic's, before any was refused
    SimulationReport report;
    std::optional<double> max_rate;  // with a target: the highest rate meeting it (nullopt: none does)
    std::vector<ServingPoint> curve;
    std::vector<std::string> warnings;  // the setup's and the simulation's
};
Result<TrafficAnswer> answer_traffic(const Scenario& s, const TrafficQuestion& q,
                                     const SimulationProgress& progress = {});

// The described traffic at its rate (q.spec.rate) served by each tensor × pipeline layout the plan found fitting,
// in as many replicas as it takes to meet the target: the fewest, up to max_replicas, behind a round-robin router
// (conversation k on replica k mod R, its later turns with it), each replica simulated on its share; a layout meets
// the target when its slowest replica does. Those that meet it come first, fewest GPUs first.
struct LayoutService {
    std::uint64_t tp = 1, pp = 1, replicas = 1, gpus = 1;
    bool meets = false;                 // false: even max_replicas replicas miss the target
    double ttft_ms = 0, tpot_ms = 0;    // at the target's percentile, the slowest replica's
    double request_throughput = 0;      // all replicas
    std::vector<std::string> warnings;  // what its setup says is not exact (serving_setup)
};
Result<std::vector<LayoutService>> serve_plan(const Scenario& s, const Plan& plan, const TrafficQuestion& q,
                                              std::uint64_t max_replicas = 64);

json::Value simulation_json(const SimulationReport& r);
std::vector<DeclaredMember> declared_members(const SimulationReport& r);

}  // namespace kvscope
