#pragma once
// The scenario the options describe (scenario_options.cpp): the model from the catalog or a file, the workload,
// and the deployment, each option applied as kvscope-cli and the window read it.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/probe/plugins.h"
#include "options.h"

namespace kvscope::cli {

// What the scenario was built from, for the table header.
struct ScenarioSource {
    std::string description;           // "llama-3-8b (Llama 3 8B)" or a path
    std::vector<std::string> assumed;  // from config import
    std::vector<std::string> notes;
    std::string kv_dtype_source;
};

// Sets what the workload options give (--kv-dtype, --mamba-cache-dtype, --mamba-ssm-cache-dtype, --context,
// --batch, --block-size, --full-window, --tp, --pp) on `s`, keeping the rest; errors name the option.
Errors apply_workload_options(const Options& o, Scenario& s);

// Resolves the model (catalog or config file), the workload, and for `fit` the deployment.
Result<Scenario> build_scenario(const Options& o, const Catalog& catalog, ScenarioSource& source);

// Every scenario option given in `o` set on `s`, which came from elsewhere (a saved scenario): the workload,
// and the deployment when a deployment option is given (on the file's own deployment, if it has one).
Errors apply_scenario_options(const Options& o, const Catalog& catalog, Scenario& s);

// --host this: the machine the program runs on, as the CPU probe reads it (probe::read_this_host: its read ceiling, a
// read-only pass over 256 MiB on every thread, and its RAM).
constexpr std::string_view kThisHost = "this";
// Where the scenario asks for this machine as its host, its measured read ceiling (and its RAM unless
// --host-memory gave one) in place of a platform of the table, said in `notes`; errors name --host. `measure`
// reads it (probe::read_this_host; tests give their own).
Errors use_this_host(Scenario& s, const std::function<probe::HostReading()>& measure, std::vector<std::string>& notes);

}  // namespace kvscope::cli
