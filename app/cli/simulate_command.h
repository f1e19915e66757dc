#pragma once
// kvscope-cli simulate: a traffic of requests served by the engine's scheduler (kvscope/calculator/simulate.h).

#include "commands.h"
#include "kvscope/calculator/traffic_answer.h"
#include "scenario_options.h"

namespace kvscope::cli {

// A decode step of the scenario that probe --step kept in the catalog's user folder times the steps (measured_step.h).
// The traffic question the options ask (their defaults where one is not given).
TrafficQuestion traffic_question(const Options& o);
// Beside --lengths-from: --trace, and the length options its lengths replace, each named.
Errors refused_beside_lengths(const Options& o);
// The traffic as the JSON gives it ("traffic").
json::Value traffic_json(const Options& o, const TrafficSpec& spec, std::uint64_t requests);

// With a target, plan's layouts each serving the traffic at its rate (serve_plan): the keys plan --json adds
// (traffic, slo, layouts_serving, smallest_meeting_slo), and the text after its table.
struct PlanService {
    TrafficQuestion question;
    std::vector<LayoutService> layouts;
};
void add_service_json(json::Value& v, const Options& o, const PlanService& p);
std::string service_text(const PlanService& p);
// What the layouts' setups say is not exact, each once.
std::vector<std::string> service_warnings(const PlanService& p);

Output cmd_simulate(const Options& o, const Scenario& s, const ScenarioSource& src, const Catalog& catalog);

}  // namespace kvscope::cli
