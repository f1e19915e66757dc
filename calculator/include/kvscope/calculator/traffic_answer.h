#pragma once
// The questions users bring about traffic, each answered by simulations (simulate.h): the highest rate that meets a
// latency target, latency against request rate, the traffic as the CLI's options and the Traffic tab's fields ask
// it (answer_traffic), and a plan's layouts in the replicas that meet a target at a rate.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/simulate.h"
#include "kvscope/calculator/traffic.h"

namespace kvscope {

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
// How a plan's replicas share the traffic.
enum class Router : std::uint8_t {
    round_robin,  // conversation k on replica k mod R
    // The conversations of one shared system prompt on the same replicas: a group a replica when there are at least
    // as many groups as replicas (the largest first, each to the replica with the fewest conversations; a replica
    // that reaches its even share passes the rest of the group on), else each group its own replicas (replica r to
    // group r mod G), its conversations among them in turn. The prefix-aware
    // routers of SGLang (sgl-router cache_aware) and vLLM's production stack also weigh each replica's load as it
    // changes; this one routes by the prompts alone, so its figures are said to be not exact.
    prefix,
};

struct TrafficQuestion {
    TrafficSpec spec;
    std::string trace;  // a trace file's requests instead of spec's (the first spec.requests of them when limit_trace)
    bool limit_trace = false;
    std::uint64_t concurrency = 0;
    bool prefix_caching = true;
    Router router = Router::round_robin;  // a plan's replicas (serve_plan)
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
// in as many replicas as it takes to meet the target: the fewest, up to max_replicas, behind q.router (a
// conversation's later turns always on its replica), each replica simulated on its share; a layout meets the target
// when its slowest replica does. Those that meet it come first, fewest GPUs first.
struct LayoutService {
    std::uint64_t tp = 1, pp = 1, replicas = 1, gpus = 1;
    bool meets = false;                     // false: even max_replicas replicas miss the target
    double ttft_ms = 0, tpot_ms = 0;        // at the target's percentile, the slowest replica's
    double request_throughput = 0;          // all replicas
    std::uint64_t prefix_hit_tokens = 0;    // all replicas: the prompt tokens their prefix caches served
    std::uint64_t served = 0, refused = 0;  // all replicas: a layout that refuses a request meets no target
    std::vector<std::string> warnings;      // what its setup says is not exact (serving_setup), and the router's
};
// A latency of the layout as the plan's table and JSON show it: `decimals` digits, "—" where it served no request
// (its latencies are no figure, never 0 ms).
std::string service_ms_text(const LayoutService& l, double ms, int decimals);
// The replica of each conversation (numbered by its first request's order) among `replicas`, by the router.
// `first_span` is each conversation's first prompt span (its shared system prompt where the traffic has one).
std::vector<std::uint64_t> route_conversations(const std::vector<std::uint64_t>& first_span, std::uint64_t replicas,
                                               Router router);
// `progress` is told the share of the layouts finished, and stops the work when it returns false ("cancelled").
Result<std::vector<LayoutService>> serve_plan(const Scenario& s, const Plan& plan, const TrafficQuestion& q,
                                              std::uint64_t max_replicas = 64, const SimulationProgress& progress = {});

}  // namespace kvscope
