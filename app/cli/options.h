#pragma once
// Command-line options of kvscope-cli, parsed into a Scenario.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/units.h"

namespace kvscope::cli {

enum class Format { table, json, csv };

struct Options {
    std::string command;
    bool help = false;
    Format format = Format::table;
    UnitSystem units = UnitSystem::binary;
    std::optional<std::string> model, config, data_dir;
    std::optional<std::uint64_t> context, batch, block_size, tp, pp;
    bool full_window = false;
    std::optional<std::string> kv_dtype;
    // The recurrent state's formats, as vLLM's --mamba-cache-dtype and --mamba-ssm-cache-dtype.
    std::optional<std::string> mamba_cache_dtype, mamba_ssm_cache_dtype;
    // fit
    std::optional<std::string> gpu, engine, weight_dtype;
    std::optional<std::uint64_t> gpus, gpu_memory, gpu_bandwidth, reserve, overhead;
    std::optional<double> utilization;
    // plan
    std::optional<std::uint64_t> gpus_per_node, max_pp;
    // sweep
    std::optional<std::uint64_t> points, from, to;
    bool linear = false;
    bool all_layers = false;
    // probe, stopwatch
    std::optional<std::string> backend, prompt;
    std::optional<std::uint64_t> tokens, runs, memory_limit, ceiling_size;
};

// Usage errors carry the option's name: "--context: '12q' is not a whole number …".
Result<Options> parse_options(const std::vector<std::string>& args);

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

}  // namespace kvscope::cli
