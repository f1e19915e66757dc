#include "options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>

#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/offload.h"
#include "kvscope/calculator/safetensors.h"
#include "kvscope/calculator/tables.h"

namespace kvscope::cli {
namespace {

// A comma where the command line takes a decimal point (in every locale, numbers.h, so scripts work anywhere).
FieldError comma_refused(const std::string& text, const std::string& field) {
    std::string with_point = text;
    std::replace(with_point.begin(), with_point.end(), ',', '.');
    return {field, "'" + text + "': the command line takes a decimal point in every locale (" + with_point + ")"};
}

// A plain decimal (a fraction, a rate, milliseconds): a comma in it is refused as a decimal comma, whatever digits
// follow ("1,500" is no rate of 1.5 or 1500 here).
std::optional<double> plain_decimal(const std::string& text, const std::string& field, Errors& comma) {
    if (text.find(',') != std::string::npos) {
        comma.push_back(comma_refused(text, field));
        return std::nullopt;
    }
    return number_from_text(text);
}

Result<double> parse_fraction(const std::string& text, const std::string& field) {
    Errors comma;
    const auto parsed = plain_decimal(text, field, comma);
    if (!comma.empty()) return comma;
    if (!parsed) return FieldError{field, "'" + text + "' is not a number (for example 0.9)"};
    const double v = *parsed;
    if (!(v > 0.0 && v <= 1.0)) return FieldError{field, "'" + text + "' must be above 0 and at most 1"};
    return v;
}

// A requests-a-second rate: a number above 0, or inf.
Result<double> parse_rate(const std::string& text, const std::string& field) {
    if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
    Errors comma;
    const auto v = plain_decimal(text, field, comma);
    if (!comma.empty()) return comma;
    if (!v || !(*v > 0) || !std::isfinite(*v))
        return FieldError{field, "'" + text +
                                     "' is not a rate above 0 (requests a second, for example 10; inf: all "
                                     "at once)"};
    return *v;
}
// A range ratio: 0 … 1.
Result<double> parse_ratio(const std::string& text, const std::string& field) {
    Errors comma;
    const auto v = plain_decimal(text, field, comma);
    if (!comma.empty()) return comma;
    if (!v || !(*v >= 0 && *v <= 1)) return FieldError{field, "'" + text + "' is not a ratio from 0 to 1"};
    return *v;
}
Result<double> parse_milliseconds(const std::string& text, const std::string& field) {
    Errors comma;
    const auto v = plain_decimal(text, field, comma);
    if (!comma.empty()) return comma;
    if (!v || !(*v > 0) || !std::isfinite(*v))
        return FieldError{field, "'" + text + "' is not a time in milliseconds above 0"};
    return *v;
}
Result<double> parse_percentile(const std::string& text, const std::string& field) {
    const auto v = number_from_text(text);
    if (!v || (*v != 50 && *v != 90 && *v != 99)) return FieldError{field, "'" + text + "' is not 50, 90 or 99"};
    return *v;
}

}  // namespace

namespace {

// Commands as bits, for the set of commands an option belongs to.
using Commands = std::uint16_t;
constexpr Commands bit(Command c) { return static_cast<Commands>(1u << static_cast<unsigned>(c)); }
constexpr Commands kModels = bit(Command::models), kGpus = bit(Command::gpus), kKv = bit(Command::kv),
                   kCompare = bit(Command::compare), kSweep = bit(Command::sweep), kFit = bit(Command::fit),
                   kPlan = bit(Command::plan), kSimulate = bit(Command::simulate), kDevices = bit(Command::devices),
                   kProbe = bit(Command::probe), kStopwatch = bit(Command::stopwatch), kWindow = bit(Command::window);
constexpr Commands kCli = static_cast<Commands>(bit(Command::window) - 1);  // every kvscope-cli command
// The commands that compute from a scenario (a model and a workload).
constexpr Commands kScenario = kKv | kCompare | kSweep | kFit | kPlan | kSimulate | kProbe | kWindow;

struct CommandInfo {
    Command id;
    std::string_view name;
    std::string_view brief;  // in the list of commands
    std::string_view usage;
    std::string_view summary;
};
constexpr CommandInfo kCommandInfo[] = {
    {Command::models, "models", "the built-in (and your own) models",
     "models [--local] [--json|--csv] [--data-dir DIR]",
     "Lists every model: id, shape, parameters and KV bytes per token; --local: the models on this machine."},
    {Command::gpus, "gpus", "the built-in (and your own) GPUs", "gpus [--json|--csv] [--data-dir DIR]",
     "Lists every GPU: memory, bandwidth, dense bf16 TFLOP/s."},
    {Command::kv, "kv", "KV cache size: total, per GPU, per sequence, per token, per layer, and the variants",
     "kv (--model ID | --config FILE | --gguf FILE | --model-dir DIR) [options]",
     "The KV cache: total, per GPU, per sequence, per token, per layer, and the MHA/GQA/MQA variants."},
    {Command::compare, "compare", "the same model as MHA, GQA, MQA (and MLA): bytes and % of MHA",
     "compare (--model ID | --config FILE | --gguf FILE | --model-dir DIR) [options]",
     "The same model as MHA, GQA, MQA (and MLA where it has it): bytes and % of MHA."},
    {Command::sweep, "sweep", "KV bytes against context length, one column per variant",
     "sweep (--model ID | --config FILE | --gguf FILE | --model-dir DIR) [options]",
     "KV bytes against context length for each variant."},
    {Command::fit, "fit", "will it fit on these GPUs, how many sequences, how long a context, how fast",
     "fit (--model ID | --config FILE | --gguf FILE | --model-dir DIR) --gpu ID [options]",
     "Will it fit: weights, the engine's KV budget, max batch, max context, decode speed floor."},
    {Command::plan, "plan", "how many GPUs: every TP × PP layout and the replicas the sequences need",
     "plan (--model ID | --config FILE | --gguf FILE | --model-dir DIR) --gpu ID [options]",
     "How many GPUs: every tensor x pipeline parallel layout the heads allow (TP within a node, PP across "
     "nodes), each with its fit, and the replicas (data parallel) that serve --batch sequences; GPUs = TP x PP x "
     "replicas, smallest first."},
    {Command::simulate, "simulate",
     "serve a traffic of requests: throughput, TTFT, TPOT, KV blocks in use, prefix hits",
     "simulate (--model ID | --config FILE | --gguf FILE | --model-dir DIR) --gpu ID [traffic] [options]",
     "Serves a traffic of requests as vLLM's V1 scheduler does (continuous batching, chunked prefill, paged blocks "
     "from the fit's KV budget, prefix caching, preemption), each step timed by the roofline: request and token "
     "throughput, TTFT, TPOT, ITL and end-to-end latency (mean, median, P90, P99), the KV blocks in use against the "
     "budget, the prefix cache's hits and the preemptions. The traffic is described (--requests, --rate, "
     "--input-tokens, …) or read from a trace (--trace: Azure's CSV, BurstGPT's CSV, Mooncake's JSON lines); with "
     "--ttft-ms or --tpot-ms, the highest request rate that meets the target too."},
    {Command::devices, "devices", "the probe's backends and devices (cpu, cuda)", "devices [--json|--csv]",
     "Lists the probe's backends and their devices."},
    {Command::probe, "probe", "allocate the cache on this machine, check its size, time decode attention",
     "probe (--model ID | --config FILE | --gguf FILE | --model-dir DIR) --context N [options]",
     "Allocates the model's KV cache on this machine exactly as the calculator lays it out, compares the bytes, "
     "and times one decode step's attention over it against a read-bandwidth ceiling measured in the same run. "
     "With --step it runs a decode step of the whole model instead and sets its time beside the calculator's "
     "floor on that bandwidth. On a CUDA GPU, attention runs on tensor cores for 5 or more query heads per KV "
     "head, fp8 caches and MLA where the kernel takes the shape (heads of 64 or 128, 16-bit or fp8), else on CUDA "
     "cores; KVSCOPE_ATTENTION_KERNEL (auto, tensor-cores or cuda-cores) "
     "chooses. Ctrl+C cancels (everything is freed)."},
    {Command::stopwatch, "stopwatch", "a small transformer generating with and without its KV cache",
     "stopwatch [--tokens N] [--prompt TEXT] [options]",
     "A small real transformer generates N tokens (default 128) twice: with its KV cache, and recomputing the "
     "whole prefix at every step. Prints the time per token of both, the two texts, and whether they match."},
    {Command::window, "window", "the desktop app", "kvscope [options]", "The desktop app."},
};
static_assert(std::size(kCommandInfo) == kCommandCount, "one entry per Command");
constexpr bool in_order() {
    for (std::size_t i = 0; i < std::size(kCommandInfo); ++i)
        if (static_cast<std::size_t>(kCommandInfo[i].id) != i) return false;
    return true;
}
static_assert(in_order(), "kCommandInfo lists the commands in the order of the enum");

enum class Section : std::uint8_t { model, workload, deployment, sweep, plan, traffic, probe, files, output };
constexpr std::string_view kSectionNames[] = {"model",   "workload", "deployment", "sweep", "plan",
                                              "traffic", "probe",    "files",      "output"};
static_assert(std::size(kSectionNames) == static_cast<std::size_t>(Section::output) + 1);
constexpr std::uint16_t section_bit(Section s) { return static_cast<std::uint16_t>(1u << static_cast<unsigned>(s)); }

using Setter = std::function<void(Options&, const std::string& name, const std::string& value, Errors&)>;

// One option: everything about it in one place.
struct Declared {
    std::string name;     // "--context"
    std::string metavar;  // "N"; empty for a flag
    Section section;
    Commands commands;  // the commands that take it
    std::string help;
    Setter set;  // a flag's gets an empty value
    // Commands that refuse it for a reason worth more than "does not take it", and the reason.
    Commands explained = 0;
    std::string why = {};
    // The scenario's input it sets: an error on that input, still named by the input's key, is named as this option
    // (name_as_options).
    Field input = Field::none;
};

// plan tries every layout itself: a fixed one would be silently ignored.
constexpr const char* kPlanTriesLayouts =
    "plan tries every TP × PP layout and replica count itself; use fit for one layout";

// Stores the text as given.
template <class Member>
Setter text(Member member) {
    return [member](Options& o, const std::string&, const std::string& v, Errors&) { o.*member = v; };
}
// A comma the shared reader (numbers.h read_typed_decimal, which the window's fields use) would take as a decimal
// one: "1,5GiB", "0,85", "1,5k". The command line takes a decimal point in every locale, so such a comma is refused
// rather than read one way here and another in a German user's head; "131,072" groups digits and stays.
std::optional<FieldError> decimal_comma(const std::string& name, const std::string& v) {
    if (v.find(',') == std::string::npos || v.find('.') != std::string::npos) return std::nullopt;
    // The number before its unit, spaces that group digits included ("1 000,5k").
    const auto unit =
        std::find_if(v.begin(), v.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    const TypedDecimal d = read_typed_decimal(std::string_view(v.data(), static_cast<std::size_t>(unit - v.begin())));
    if (d.plain.find('.') == std::string::npos) return std::nullopt;
    return comma_refused(v, name);
}

// Parses the text with `parse` (numbers.h: the same in every locale), or records the problem.
template <class Member, class Parse>
Setter parsed(Member member, Parse parse) {
    return [member, parse](Options& o, const std::string& name, const std::string& v, Errors& errors) {
        if (auto comma = decimal_comma(name, v)) return errors.push_back(*comma);
        auto r = parse(v, name);
        if (!r)
            errors.push_back(r.errors().front());
        else
            o.*member = *r;
    };
}
template <class Member>
Setter flag(Member member) {
    return [member](Options& o, const std::string&, const std::string&, Errors&) { o.*member = true; };
}
// One of two words: `yes` sets the member true, `no` false; anything else is named.
Setter either(std::optional<bool> Options::*member, const std::string& yes, const std::string& no) {
    return [member, yes, no](Options& o, const std::string& name, const std::string& v, Errors& errors) {
        if (v == yes || v == no)
            o.*member = v == yes;
        else
            errors.push_back({name, "'" + v + "' is not " + yes + " or " + no});
    };
}
// The output format, given once: two that differ (--json --csv) are refused, never the last taken in silence.
void set_format(Options& o, Format f, const std::string& name, Errors& errors) {
    if (o.format_given && o.format != f)
        errors.push_back({name, "another output format was given already: --json, --csv and --format F take one"});
    o.format = f;
    o.format_given = true;
}
Setter format(Format f) {
    return [f](Options& o, const std::string& name, const std::string&, Errors& errors) {
        set_format(o, f, name, errors);
    };
}

std::string fractions_text() {
    std::string out;
    for (std::size_t i = 0; i < kEngineCount; ++i) {
        const auto e = static_cast<Engine>(i);
        if (!engine_takes_fraction(e)) continue;
        if (default_fraction_per_gpu(e)) {
            out += (out.empty() ? "" : ", ") + std::string(to_string(e)) + " its own for the GPU";
            continue;
        }
        char digits[16];
        const auto r = std::to_chars(digits, digits + sizeof digits, default_fraction(e), std::chars_format::fixed, 2);
        out += (out.empty() ? "" : ", ") + std::string(to_string(e)) + " " + std::string(digits, r.ptr);
    }
    return out;
}

// NOLINTBEGIN(readability-function-size): the declarative table of every option
const std::vector<Declared>& declared() {
    using S = Section;
    static const std::vector<Declared> options{
        {"--model", "ID", S::model, kScenario,
         "a catalog id (llama-3-8b), alias or Hugging Face repo id; default: the teaching model",
         text(&Options::model)},
        {"--config", "FILE", S::model, kScenario, "a Hugging Face config.json instead", text(&Options::config)},
        {"--gguf", "FILE", S::model, kScenario,
         "a GGUF file (llama.cpp, Ollama, LM Studio): its header only; engine llama.cpp, exact weight bytes",
         text(&Options::gguf)},
        {"--model-dir", "DIR", S::model, kScenario,
         "a model folder: its config.json, and the exact weight bytes of its safetensors", text(&Options::model_dir)},
        {"--weights", "PATH", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "the weights' exact bytes from safetensors headers: a file, a folder of shards or a Hugging Face snapshot",
         text(&Options::weights)},
        {"--scenario", "FILE", S::files, kScenario,
         "a .kvscope.json scenario saved in the window: its model, workload and deployment (the options given beside "
         "it override them)",
         text(&Options::scenario_file)},
        {"--local", "", S::files, kModels,
         "the models on this machine: the Hugging Face cache, Ollama and LM Studio (nothing is read but folders)",
         flag(&Options::local)},
        {"--data-dir", "DIR", S::files, kModels | kGpus | kScenario,
         "your own models/ and gpus.json, and the decode steps probe --step measured (default $KVSCOPE_DATA_DIR or "
         "~/.config/kvscope)",
         text(&Options::data_dir)},
        {"--context", "N", S::workload, kScenario,
         "tokens per sequence: 8192, 8k (= 8192), 128k, 1M; default 8k or the model's max (Ollama's for its GPU)",
         parsed(&Options::context, parse_token_count), 0, "", Field::context_tokens},
        {"--batch", "N", S::workload, kScenario & ~kSimulate, "concurrent sequences (default 1)",
         parsed(&Options::batch, parse_count), kSimulate,
         "simulate's sequences are the traffic's requests (--requests, --rate, --concurrency)", Field::batch},
        {"--kv-dtype", "D", S::workload, kScenario, kv_dtype_list() + " (default: the config's dtype)",
         text(&Options::kv_dtype)},
        {"--mamba-cache-dtype", "D", S::workload, kScenario,
         "the recurrent state's conv format, as vLLM's option: auto float32 float16 bfloat16 (default auto: the "
         "model's dtype)",
         text(&Options::mamba_cache_dtype)},
        {"--mamba-ssm-cache-dtype", "D", S::workload, kScenario,
         "the SSM state's format: auto float32 float16 bfloat16 (default auto: the format its config or vLLM names)",
         text(&Options::mamba_ssm_cache_dtype)},
        {"--block-size", "N", S::workload, kScenario, "paged-attention block in tokens (default 1 = contiguous)",
         parsed(&Options::block_size, parse_count), 0, "", Field::block_size},
        {"--tp", "N", S::workload, kScenario & ~kProbe & ~kPlan, "tensor parallel degree",
         parsed(&Options::tp, parse_count), kPlan, kPlanTriesLayouts},
        {"--pp", "N", S::workload, kScenario & ~kProbe & ~kPlan, "pipeline parallel degree",
         parsed(&Options::pp, parse_count), kPlan, kPlanTriesLayouts},
        {"--full-window", "", S::workload, kScenario,
         "the engine keeps the whole context on sliding-window and chunked layers", flag(&Options::full_window)},
        {"--gpu", "ID", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "a catalog GPU (h100-sxm, h200, a100-80gb, rtx-4090, …; kvscope-cli gpus lists them)", text(&Options::gpu)},
        {"--gpus", "N", S::deployment, kFit | kSimulate | kWindow,
         "how many GPUs (default tp x pp; alone it sets --tp)", parsed(&Options::gpus, parse_count), kPlan,
         kPlanTriesLayouts},
        {"--gpu-memory", "SIZE", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "your own GPU: memory (80GiB, 24GB) …", parsed(&Options::gpu_memory, parse_gpu_memory), 0, "",
         Field::gpu_memory},
        {"--gpu-bandwidth", "B", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "… and bandwidth in bytes/s (3350GB = 3.35 TB/s)", parsed(&Options::gpu_bandwidth, parse_bandwidth), 0, "",
         Field::gpu_bandwidth},
        {"--engine", "E", S::deployment, kFit | kPlan | kSimulate | kWindow, engine_list() + " (default vllm)",
         text(&Options::engine)},
        {"--utilization", "F", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "the engine's memory fraction (" + fractions_text() + ")", parsed(&Options::utilization, parse_fraction)},
        {"--weight-dtype", "D", S::deployment, kFit | kPlan | kSimulate | kWindow | kProbe,
         "weights' format (default: the config's dtype or quantization; probe --step multiplies fp32, fp16, bf16 "
         "or fp8_e4m3), or a GGUF mix as llama-quantize writes it: q4_k_m, q5_k_m, q6_k, iq4_xs, …",
         text(&Options::weight_dtype)},
        {"--reserve", "SIZE", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "activation reserve per GPU (default 1GiB; replaces the one vllm, tensorrt-llm, llama.cpp derive)",
         parsed(&Options::reserve, parse_bytes)},
        {"--overhead", "SIZE", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "memory in use outside the activations per GPU: CUDA context, NCCL, graphs (default 512MiB; vllm's "
         "non-torch memory)",
         parsed(&Options::overhead, parse_bytes)},
        {"--max-num-batched-tokens", "N", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "vLLM: tokens in one step of its profile run (default: vLLM's for the GPU); SGLang: chunked_prefill_size, "
         "which sizes its own fraction",
         parsed(&Options::max_num_batched_tokens, parse_token_count), 0, "", Field::max_num_batched_tokens},
        {"--max-num-seqs", "N", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "vLLM: sequences in one step, whose logits the profile run samples (default: vLLM's); SGLang: "
         "max_running_requests",
         parsed(&Options::max_num_seqs, parse_count), 0, "", Field::max_num_seqs},
        {"--enforce-eager", "", S::deployment, kFit | kPlan | kSimulate | kWindow, "vLLM: no CUDA graphs",
         flag(&Options::enforce_eager)},
        {"--max-num-tokens", "N", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "TensorRT-LLM: tokens in one step and in its profiling run, as --max_num_tokens (default 8192)",
         parsed(&Options::max_num_tokens, parse_token_count), 0, "", Field::max_num_tokens},
        {"--ubatch", "N", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "llama.cpp: the micro-batch of its compute buffer, as -ub (default 512)",
         parsed(&Options::ubatch, parse_token_count)},
        {"--flash-attn", "on|off", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "llama.cpp: flash attention, as -fa (default on, as its auto where the GPU has it)",
         text(&Options::flash_attn)},
        {"--gpu-layers", "N|all|auto", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "llama.cpp: the layers on the GPU, as -ngl, of the blocks and the output layer (default all; auto: the most "
         "that leave --fit's 1 GiB free); the rest in host memory",
         text(&Options::gpu_layers), 0, "", Field::gpu_layers},
        {"--n-cpu-moe", "N", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "llama.cpp: the experts of the first N blocks in host memory, as --n-cpu-moe",
         parsed(&Options::cpu_moe_layers, parse_count), 0, "", Field::cpu_moe_layers},
        {"--no-kv-offload", "", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "llama.cpp: every layer's cache in host memory, as --no-kv-offload", flag(&Options::no_kv_offload)},
        {"--host", "ID", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "the host's memory, for a split model's speed: " + host_platform_ids() + " (default " +
             std::string(kDefaultHostPlatform) + "), or this: this machine's RAM and read ceiling, measured",
         text(&Options::host)},
        {"--host-memory", "SIZE", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "the host's RAM, which must hold a split model's rest (64GB, 32GiB; default not checked)",
         parsed(&Options::host_memory, parse_gpu_memory), 0, "", Field::host_memory},
        {"--host-bandwidth", "B", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "the host memory's bandwidth in bytes/s (89.6GB; default --host's peak)",
         parsed(&Options::host_bandwidth, parse_bandwidth), 0, "", Field::host_bandwidth},
        {"--mtp", "", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "speculative decoding with the model's own multi-token-prediction layers (their weights and KV count)",
         flag(&Options::mtp)},
        {"--draft", "MODEL", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "speculative decoding with a draft model: a catalog id, a config.json or model folder (an EAGLE head's "
         "too); its weights and KV count; none removes a saved one",
         text(&Options::draft)},
        {"--draft-method", "M", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "how vLLM serves the draft: " + draft_method_list() +
             " (default: eagle3 or eagle when the config's class names one, else draft_model)",
         text(&Options::draft_method)},
        {"--vllm-version", "V", S::deployment, kFit | kPlan | kSimulate | kWindow,
         "the vLLM version whose startup rules apply: 0.6 and on, 0.6.4 apart (default 0." +
             std::to_string(kDefaultVllmMinor) + ")",
         text(&Options::vllm_version), 0, "", Field::vllm_version},
        {"--points", "N", S::sweep, kSweep,
         "how many context lengths (default 12 in a table, 512 in JSON/CSV; fewer where log spacing meets "
         "the same whole token count twice)",
         parsed(&Options::points, parse_count)},
        {"--from", "N", S::sweep, kSweep,
         "the first context length (default 128 in a table, 1 in JSON/CSV, as the window's chart starts)",
         parsed(&Options::from, parse_token_count)},
        {"--to", "N", S::sweep, kSweep, "the last (default the model's max positions)",
         parsed(&Options::to, parse_token_count), 0, "", Field::max_tokens},
        {"--linear", "", S::sweep, kSweep | kWindow, "linear spacing of the context lengths (default: log)",
         flag(&Options::linear)},
        {"--all-layers", "", S::output, kKv, "list every layer instead of grouping them by kind and window",
         flag(&Options::all_layers)},
        {"--gpus-per-node", "N", S::plan, kPlan, "GPUs in a node, the most tensor parallel uses (default 8)",
         parsed(&Options::gpus_per_node, parse_count), 0, "", Field::gpus_per_node},
        {"--max-pp", "N", S::plan, kPlan, "the most pipeline stages (nodes) to try (default 8)",
         parsed(&Options::max_pp, parse_count), 0, "", Field::max_pp},
        {"--requests", "N", S::traffic, kSimulate | kPlan, "requests to serve (default 1000)",
         parsed(&Options::requests, parse_count)},
        {"--rate", "R", S::traffic, kSimulate | kPlan,
         "requests a second, arriving as a Poisson process; inf: all at once (the default)",
         parsed(&Options::rate, parse_rate)},
        {"--concurrency", "N", S::traffic, kSimulate,
         "the most requests in flight, as vllm bench serve --max-concurrency (default: no limit)",
         parsed(&Options::concurrency, parse_count)},
        {"--input-tokens", "N", S::traffic, kSimulate | kPlan, "prompt tokens of each request (default 1024)",
         parsed(&Options::input_tokens, parse_token_count)},
        {"--output-tokens", "N", S::traffic, kSimulate | kPlan, "tokens each request generates (default 128)",
         parsed(&Options::output_tokens, parse_token_count)},
        {"--input-range", "R", S::traffic, kSimulate | kPlan,
         "prompts uniform in [N(1-R), N(1+R)], as --random-range-ratio (default 0)",
         parsed(&Options::input_range, parse_ratio)},
        {"--output-range", "R", S::traffic, kSimulate | kPlan, "the same for the generated tokens (default 0)",
         parsed(&Options::output_range, parse_ratio)},
        {"--shared-prefix", "N", S::traffic, kSimulate | kPlan,
         "a system prompt of N tokens before every prompt's --input-tokens (default 0)",
         parsed(&Options::shared_prefix, parse_token_count)},
        {"--prefix-groups", "G", S::traffic, kSimulate | kPlan, "G different system prompts, taken in turn (default 1)",
         parsed(&Options::prefix_groups, parse_count)},
        {"--turns", "N", S::traffic, kSimulate | kPlan,
         "conversations of N requests, each prompt the conversation so far and a new message (default 1)",
         parsed(&Options::turns, parse_count)},
        {"--trace", "FILE", S::traffic, kSimulate,
         "the requests of a trace instead: Azure's CSV, BurstGPT's CSV or Mooncake's JSON lines",
         text(&Options::trace)},
        {"--lengths-from", "FILE", S::traffic, kSimulate | kPlan,
         "prompts and answers as long as a trace's requests (drawn with the seed), at the rate and with the system "
         "prompts and turns described",
         text(&Options::lengths_from)},
        {"--prefix-caching", "on|off", S::traffic, kSimulate | kPlan, "vLLM's automatic prefix caching (default on)",
         either(&Options::prefix_caching, "on", "off")},
        {"--router", "round-robin|prefix", S::traffic, kPlan,
         "how a plan's replicas share the traffic: conversations in turn, or those of one system prompt together "
         "(default round-robin)",
         either(&Options::prefix_router, "prefix", "round-robin")},
        {"--seed", "N", S::traffic, kSimulate | kPlan, "the random lengths' and arrivals' seed (default 0)",
         [](Options& o, const std::string& name, const std::string& v, Errors& errors) {
             if (const auto n = u64_from_text(v))
                 o.seed = *n;
             else
                 errors.push_back({name, "'" + v + "' is not a whole number from 0"});
         }},
        {"--ttft-ms", "MS", S::traffic, kSimulate | kPlan,
         "a target for the time to first token: the highest rate that meets it is sought",
         parsed(&Options::ttft_ms, parse_milliseconds)},
        {"--tpot-ms", "MS", S::traffic, kSimulate | kPlan, "a target for the time per output token, the same way",
         parsed(&Options::tpot_ms, parse_milliseconds)},
        {"--percentile", "P", S::traffic, kSimulate | kPlan, "the targets' percentile: 50, 90 or 99 (default 99)",
         parsed(&Options::slo_percentile, parse_percentile)},
        {"--backend", "B", S::probe, kProbe | kStopwatch,
         "auto, or a backend kvscope-cli devices lists (default auto: a GPU when one answers)",
         text(&Options::backend)},
        {"--step", "", S::probe, kProbe,
         "time a decode step of the whole model (random weights in the model's format) against the calculator",
         flag(&Options::step)},
        {"--runs", "N", S::probe, kProbe, "timed decode steps, 1 … 1000 (default 10; 3 with --step)",
         parsed(&Options::runs, parse_count)},
        {"--memory-limit", "SIZE", S::probe, kProbe, "refuse a cache larger than this (default: the free memory)",
         parsed(&Options::memory_limit, parse_bytes)},
        {"--ceiling-size", "SIZE", S::probe, kProbe,
         "the read-only pass that sets the ceiling (default several times the last-level cache, at least 1 MiB)",
         parsed(&Options::ceiling_size, parse_bytes)},
        {"--tokens", "N", S::probe, kStopwatch, "tokens to generate, 1 … 4096 (default 128)",
         parsed(&Options::tokens, parse_count)},
        {"--prompt", "TEXT", S::probe, kStopwatch, "the prompt", text(&Options::prompt)},
        {"--json", "", S::output, kCli, "machine-readable JSON (default: a table)", format(Format::json)},
        {"--csv", "", S::output, kCli & ~kProbe & ~kStopwatch, "CSV", format(Format::csv)},
        {"--format", "F", S::output, kCli, "table, json or csv (probe and stopwatch: table or json)",
         [](Options& o, const std::string& name, const std::string& v, Errors& errors) {
             if (v == "table")
                 set_format(o, Format::table, name, errors);
             else if (v == "json")
                 set_format(o, Format::json, name, errors);
             else if (v == "csv")
                 set_format(o, Format::csv, name, errors);
             else
                 errors.push_back({name, "'" + v + "' is not a format (table, json, csv)"});
         }},
        {"--units", "U", S::output, (kCli & ~kDevices & ~kStopwatch & ~kProbe) | kWindow,
         "gib (binary, the default) or gb (decimal) units first",
         [](Options& o, const std::string& name, const std::string& v, Errors& errors) {
             if (v == "gib" || v == "binary" || v == "GiB")
                 o.units = UnitSystem::binary;
             else if (v == "gb" || v == "decimal" || v == "GB")
                 o.units = UnitSystem::decimal;
             else
                 errors.push_back({name, "'" + v + "' is not a unit system (GiB or GB)"});
         }},
        {"--help", "", S::output, kCli | kWindow, "", flag(&Options::help)},  // said in every usage line
        {"-h", "", S::output, kCli | kWindow, "", flag(&Options::help)},
    };
    return options;
}
// NOLINTEND(readability-function-size)

}  // namespace

std::string_view to_string(Command c) { return kCommandInfo[static_cast<std::size_t>(c)].name; }
std::string_view command_usage(Command c) { return kCommandInfo[static_cast<std::size_t>(c)].usage; }
std::string_view command_summary(Command c) { return kCommandInfo[static_cast<std::size_t>(c)].summary; }
std::string_view command_brief(Command c) { return kCommandInfo[static_cast<std::size_t>(c)].brief; }

std::optional<Command> parse_command(std::string_view name) {
    for (const CommandInfo& c : kCommandInfo)
        if (c.id != Command::window && c.name == name) return c.id;
    return std::nullopt;
}

std::string command_list() {
    std::string out;
    for (const CommandInfo& c : kCommandInfo)
        if (c.id != Command::window) out += (out.empty() ? "" : ", ") + std::string(c.name);
    return out;
}

bool names_scenario(const Options& o) {
    return (o.sections_given &
            (section_bit(Section::model) | section_bit(Section::workload) | section_bit(Section::deployment))) != 0;
}
bool names_deployment(const Options& o) { return (o.sections_given & section_bit(Section::deployment)) != 0; }

void name_as_options(Errors& errors) {
    for (FieldError& e : errors) {
        if (e.input == Field::none || e.field != to_string(e.input)) continue;
        for (const Declared& d : declared())
            if (d.input == e.input) e.field = d.name;
    }
}

std::string help_line(std::string_view name, std::string_view metavar, std::string_view help) {
    constexpr std::size_t kHelpColumn = 22;
    std::string head = "  " + std::string(name) + (metavar.empty() ? "" : " " + std::string(metavar));
    head +=
        head.size() < kHelpColumn ? std::string(kHelpColumn - head.size(), ' ') : "\n" + std::string(kHelpColumn, ' ');
    return head + std::string(help) + "\n";
}

std::string options_help(Command command) {
    std::string out;
    for (std::size_t section = 0; section < std::size(kSectionNames); ++section) {
        std::string lines;
        for (const Declared& d : declared()) {
            if (static_cast<std::size_t>(d.section) != section || !(d.commands & bit(command)) || d.help.empty())
                continue;
            lines += help_line(d.name, d.metavar, d.help);
        }
        if (!lines.empty()) out += std::string(kSectionNames[section]) + ":\n" + lines;
    }
    return out;
}

Result<Options> parse_options(const std::vector<std::string>& args, std::optional<Command> fixed) {
    Options o;
    Errors errors;
    const auto& options = declared();
    std::vector<const Declared*> given;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        if (!fixed && o.command.empty() && !arg.starts_with("-")) {
            o.command = arg;
            continue;
        }
        std::optional<std::string> inline_value;
        if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
            inline_value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        const auto d = std::find_if(options.begin(), options.end(), [&](const Declared& x) { return x.name == arg; });
        if (d == options.end() || (d->metavar.empty() && inline_value)) {
            errors.push_back({arg, arg.starts_with("-") ? "unknown option" : "unexpected argument"});
            continue;
        }
        given.push_back(&*d);
        o.sections_given |= section_bit(d->section);
        if (d->metavar.empty()) {
            d->set(o, arg, "", errors);
            continue;
        }
        if (!inline_value && i + 1 >= args.size()) {
            errors.push_back({arg, "needs a value"});
            continue;
        }
        d->set(o, arg, inline_value ? *inline_value : args[++i], errors);
    }
    o.command_id = fixed ? fixed : parse_command(o.command);
    if (fixed) o.command = std::string(to_string(*fixed));
    // An option the command does not take is an error naming it, never silently ignored.
    if (o.command_id && !o.help) {
        for (const Declared* d : given) {
            if (d->commands & bit(*o.command_id)) continue;
            errors.push_back({d->name, (d->explained & bit(*o.command_id)) ? d->why
                                       : *o.command_id == Command::window  ? "the window does not take this option"
                                                                           : "this command does not take it"});
        }
    }
    {
        std::vector<std::string> models;
        if (o.model) models.emplace_back("--model");
        if (o.config) models.emplace_back("--config");
        if (o.gguf) models.emplace_back("--gguf");
        if (o.model_dir) models.emplace_back("--model-dir");
        if (o.scenario_file) models.emplace_back("--scenario");
        if (models.size() > 1)
            errors.push_back({models[1], "give one of --model, --config, --gguf, --model-dir and --scenario, not " +
                                             models[0] + " and " + models[1]});
    }
    if ((o.command_id == Command::probe || o.command_id == Command::stopwatch) && o.format == Format::csv && !o.help)
        errors.push_back({"--format", o.command + " writes a table or JSON, not CSV"});
    if (!errors.empty()) return errors;
    return o;
}

}  // namespace kvscope::cli
