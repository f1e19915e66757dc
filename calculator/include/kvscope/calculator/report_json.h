#pragma once
// The JSON contract of kvscope-cli (and the app's JSON export). Byte counts are
// integers; percentages and rates are numbers; names are documented in README.

#include <cstddef>
#include <string>
#include <vector>

#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/json_members.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/variants.h"

namespace kvscope {

// The architecture as a saved scenario holds it (architecture_json), then what follows from it: the
// attention kind, the layer mix, the state's layers, the parameter counts.
json::Value architecture_report_json(const Architecture& arch);
json::Value variants_json(const std::vector<Variant>& variants);
json::Value kv_report_json(const Scenario& s, const KvCacheReport& kv, const std::vector<Variant>& variants);
// `measured`: the same step measured on the deployment's GPU (Analysis::measured_step), as `measured_step`
// with its ratio to the estimate; null when there is none.
json::Value fit_report_json(const Scenario& s, const FitReport& fit, const DecodeEstimate& decode,
                            const MeasuredStep* measured = nullptr);
// Each report's members as its JSON declares them (json_members.h), each once: the tests that a new member is
// declared read them.
std::vector<DeclaredMember> declared_members(const FitReport& fit);
std::vector<DeclaredMember> declared_members(const Variant& variant);    // an entry of `variants`
std::vector<DeclaredMember> declared_members(const PlanOption& option);  // an entry of a plan's `options`
std::vector<DeclaredMember> declared_members(const Plan& plan);
std::vector<DeclaredMember> declared_members(const KvCacheReport& kv);
std::vector<DeclaredMember> declared_members(const LayerKv& layer);  // an entry of the kv report's `layers`
std::vector<DeclaredMember> declared_members(const Curves& curves);
std::vector<DeclaredMember> declared_members(const Curve& curve);  // an entry of the curves' `series`
json::Value curves_json(const Scenario& s, const Curves& curves);
// The planner's answer: the workload, the GPU and engine, then `options` smallest GPU count first.
json::Value plan_json(const Scenario& s, const Plan& plan, const PlanLimits& limits);
// A report's warnings, then the notes that say a figure is not exact (each once): what a fit's or a plan's JSON
// gives as "warnings", and the window's report as notes.
std::vector<std::string> warnings_and_not_exact(const std::vector<std::string>& warnings,
                                                const std::vector<std::string>& notes);
// `report` with `more` after its "warnings" (what the model's import said of fields it does not model): every
// program gives a report's JSON with the same import's notes.
json::Value with_warnings(json::Value report, const std::vector<std::string>& more);

}  // namespace kvscope
