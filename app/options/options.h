#pragma once
// The command-line options of kvscope-cli and kvscope, parsed into a Scenario. Each option is declared once
// (options.cpp): its name, its value, the commands that take it, and its help line; the parser, the
// scoping check (an option a command does not take is an error naming it) and the help all read that
// declaration.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"

namespace kvscope::cli {

enum class Format { table, json, csv };

// The commands of kvscope-cli, and `window`: the desktop app, which takes the scenario options too.
enum class Command : std::uint8_t {
    models,
    gpus,
    kv,
    compare,
    sweep,
    fit,
    plan,
    simulate,
    devices,
    probe,
    stopwatch,
    window,
    last_ = window
};
constexpr std::size_t kCommandCount = enum_count<Command>();
std::string_view to_string(Command c);
std::optional<Command> parse_command(std::string_view name);
// "models, gpus, kv, …, stopwatch": kvscope-cli's commands.
std::string command_list();
// The usage line and the one-line description of a kvscope-cli command.
std::string_view command_usage(Command c);
std::string_view command_summary(Command c);
std::string_view command_brief(Command c);  // a few words, for the list of commands

struct Options {
    std::string command;
    std::optional<Command> command_id;  // set when `command` is one
    std::uint16_t sections_given = 0;   // which sections of options (options.cpp) were given
    bool help = false;
    Format format = Format::table;
    bool format_given = false;  // --json, --csv or --format seen (a second, different one is refused)
    UnitSystem units = UnitSystem::binary;
    std::optional<std::string> model, config, data_dir;
    // Files users already have: a GGUF, a model folder (config.json + safetensors), the weights' safetensors.
    std::optional<std::string> gguf, model_dir, weights;
    // A scenario saved in the window (.kvscope.json): the model, workload and deployment it holds.
    std::optional<std::string> scenario_file;
    bool local = false;  // models --local: what is on this machine
    std::optional<std::uint64_t> context, batch, block_size, tp, pp;
    bool full_window = false;
    std::optional<std::string> kv_dtype;
    // The recurrent state's formats, as vLLM's --mamba-cache-dtype and --mamba-ssm-cache-dtype.
    std::optional<std::string> mamba_cache_dtype, mamba_ssm_cache_dtype;
    // fit
    std::optional<std::string> gpu, engine, weight_dtype;
    std::optional<std::uint64_t> gpus, gpu_memory, gpu_bandwidth, reserve, overhead;
    std::optional<double> utilization;
    // vLLM's profile run: its batch limits, CUDA graphs and the version whose rules apply.
    std::optional<std::uint64_t> max_num_batched_tokens, max_num_seqs;
    std::optional<std::string> vllm_version;
    // plan
    std::optional<std::uint64_t> gpus_per_node, max_pp;
    // simulate: the traffic (traffic.h), or a trace file; the engine's prefix caching; a latency target.
    std::optional<std::uint64_t> requests, concurrency, input_tokens, output_tokens, shared_prefix, prefix_groups,
        turns, seed;
    std::optional<double> rate;  // requests a second; infinity: all at once
    std::optional<double> input_range, output_range;
    std::optional<std::string> trace;
    std::optional<std::string> lengths_from;  // a trace whose requests' lengths the described traffic draws from
    std::optional<double> ttft_ms, tpot_ms, slo_percentile;
    // sweep
    std::optional<std::uint64_t> points, from, to;
    bool linear = false;
    bool all_layers = false;
    // probe, stopwatch
    std::optional<std::string> backend, prompt;
    std::optional<std::uint64_t> tokens, runs, memory_limit, ceiling_size;
    // llama.cpp: the micro-batch (-ub) and flash attention (-fa on|off) its compute buffer depends on.
    std::optional<std::uint64_t> ubatch;
    std::optional<std::string> flash_attn;
    // llama.cpp's split between the GPU and the host: -ngl (a count or all), --n-cpu-moe, --no-kv-offload; the host.
    std::optional<std::string> gpu_layers;
    std::optional<std::uint64_t> cpu_moe_layers;
    bool no_kv_offload = false;
    std::optional<std::string> host;
    std::optional<std::uint64_t> host_memory, host_bandwidth;
    std::optional<std::uint64_t> max_num_tokens;  // TensorRT-LLM: tokens in one step and in its profiling run
    // A separate draft model for speculative decoding ("none" removes a saved one), and vLLM's method for it.
    std::optional<std::string> draft, draft_method;
    bool step = false;
    bool enforce_eager = false;          // vLLM: no CUDA graphs
    bool mtp = false;                    // the model's MTP layers serve as a speculative draft
    std::optional<bool> prefix_caching;  // simulate: vLLM's automatic prefix caching (on when not given)
    std::optional<bool> prefix_router;   // plan: the replicas' router is prefix-aware (round-robin when not given)
};

// Usage errors carry the option's name: "--context: '12q' is not a whole number …", "--batch: models does not
// take --batch …". `fixed`: the command is given (the desktop app), and no word may name one.
Result<Options> parse_options(const std::vector<std::string>& args, std::optional<Command> fixed = std::nullopt);

// Whether a model, workload or deployment option was given (the window then opens on that scenario), and
// whether a deployment option was: read from the sections the options are declared in.
bool names_scenario(const Options& o);
bool names_deployment(const Options& o);

// Errors on an input an option sets (the workload's figures, the GPU's own memory and bandwidth, the engines'
// settings, plan's limits), still named by the input's key, named as that option ("--context" for
// context_tokens); a config file's own keys keep their names. Read from the options' declarations.
void name_as_options(Errors& errors);

// The options `command` takes, grouped under headings ("model:", "workload:", …), one per line with its help.
std::string options_help(Command command);
// One option's line of a help: "  --name METAVAR", padded to the help's column (or the help on the next line when the
// name is longer), then its help and a newline. The window's own options are listed with it too.
std::string help_line(std::string_view name, std::string_view metavar, std::string_view help);

}  // namespace kvscope::cli
