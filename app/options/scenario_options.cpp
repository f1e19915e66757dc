// Applying parsed options to a scenario: the workload's, the deployment's (a GPU, an engine, weights, the
// engine's settings) and the model's, as every command and the window's inputs share them. Declaring and parsing
// the options is options.cpp.
#include "scenario_options.h"

#include <cctype>
#include <string_view>

#include "kvscope/calculator/draft_import.h"
#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/offload.h"
#include "kvscope/calculator/ollama.h"
#include "kvscope/calculator/safetensors.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/weights.h"
#include "options.h"

namespace kvscope::cli {
namespace {

// "0.21", "0.21.1" or "v0.19.0": the release of vLLM whose rules apply, its minor and, where given, its patch.
struct VllmVersion {
    std::uint64_t minor = 0;
    std::optional<std::uint64_t> patch;
};
Result<VllmVersion> parse_vllm_version(const std::string& text) {
    std::string_view t = text;
    if (!t.empty() && (t.front() == 'v' || t.front() == 'V')) t.remove_prefix(1);
    const auto bad = [&](const std::string& why) { return FieldError{"--vllm-version", "'" + text + "' " + why}; };
    if (!t.starts_with("0.")) return bad("is not a vLLM version such as 0.21 (releases are numbered 0.x)");
    t.remove_prefix(2);
    const std::size_t dot = t.find('.');
    const std::string_view minor_text = t.substr(0, dot);
    // After the minor only a patch release may follow: ".1", ".1.1", ".0rc1", ".4.post1"; its leading digits count.
    std::optional<std::uint64_t> patch;
    if (dot != std::string_view::npos) {
        const std::string_view rest = t.substr(dot + 1);
        const std::size_t digits = rest.find_first_not_of("0123456789");
        patch = u64_from_text(rest.substr(0, digits));
        if (!patch) return bad("is not a vLLM version such as 0.21 or 0.6.4");
    }
    const auto minor = u64_from_text(minor_text);
    if (!minor) return bad("is not a vLLM version such as 0.21");
    if (*minor < kOldestVllmMinor)
        return bad("is older than the rules the calculator has (0." + std::to_string(kOldestVllmMinor) + " on)");
    if (*minor > kLatestVllmMinor || patch > kLatestVllmMinor) return bad("is not a vLLM release");
    return VllmVersion{*minor, patch};
}

// --weight-dtype's format, or an error naming it.
std::optional<KvDtype> weight_dtype_option(const Options& o, Errors& errors) {
    if (!o.weight_dtype) return std::nullopt;
    const auto w = parse_kv_dtype(*o.weight_dtype);
    if (!w)
        errors.push_back({"--weight-dtype", "'" + *o.weight_dtype + "' is not a format (" + kv_dtype_list() +
                                                "; or a GGUF mix: " + gguf_mix_list() + ")"});
    return w;
}

// "; did you mean a, b?" or nothing.
std::string did_you_mean(const std::vector<std::string>& names) {
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    return list.empty() ? "" : "; did you mean " + list + "?";
}

}  // namespace

Errors apply_workload_options(const Options& o, Scenario& s) {
    Errors errors;
    if (o.kv_dtype) {
        if (auto d = parse_kv_dtype(*o.kv_dtype))
            s.kv_dtype = *d;
        else
            errors.push_back({"--kv-dtype", "'" + *o.kv_dtype + "' is not a KV format (" + kv_dtype_list() + ")"});
    }
    // vLLM's MambaDType: auto (the model's rule), float32, float16, bfloat16 (vllm/config/cache.py). As in
    // vLLM, --mamba-cache-dtype sets the conv state and the SSM state unless the model's own rule
    // (Nemotron-H, Qwen3.5) or --mamba-ssm-cache-dtype sets the SSM state's.
    const auto state_dtype = [&](const std::optional<std::string>& text, const char* option) -> std::optional<KvDtype> {
        if (!text || *text == "auto") return std::nullopt;
        const auto d = parse_kv_dtype(*text);
        if (!d || (*d != KvDtype::fp32 && *d != KvDtype::fp16 && *d != KvDtype::bf16)) {
            errors.push_back({option, "'" + *text + "' is not a state format (auto, float32, float16, bfloat16)"});
            return std::nullopt;
        }
        if (!s.arch.recurrent) {
            errors.push_back({option, "this model keeps no recurrent state"});
            return std::nullopt;
        }
        return d;
    };
    const auto conv = state_dtype(o.mamba_cache_dtype, "--mamba-cache-dtype");
    auto ssm = state_dtype(o.mamba_ssm_cache_dtype, "--mamba-ssm-cache-dtype");
    const bool fixed = s.arch.recurrent && ssm_format_fixed(s.arch.recurrent->kind);
    if (ssm && fixed) {
        errors.push_back({"--mamba-ssm-cache-dtype",
                          "this model's " + std::string(to_string(s.arch.recurrent->kind)) +
                              " state is always kept in fp32 (vLLM kda_state_dtype; transformers' RG-LRU); the "
                              "option does not change it"});
        ssm.reset();
    }
    if (conv && s.arch.recurrent) {
        const bool model_sets_ssm = fixed || s.arch.recurrent->ssm_dtype != s.arch.recurrent->conv_dtype;
        s.arch.recurrent->conv_dtype = *conv;
        if (!model_sets_ssm) s.arch.recurrent->ssm_dtype = *conv;
    }
    if (ssm && s.arch.recurrent) s.arch.recurrent->ssm_dtype = *ssm;
    if (o.context) s.workload.context_tokens = *o.context;
    if (o.batch) s.workload.batch = *o.batch;
    if (o.block_size) s.workload.block_size = *o.block_size;
    if (o.full_window) s.workload.full_window = true;
    if (o.tp) s.parallel.tp = *o.tp;
    if (o.pp) s.parallel.pp = *o.pp;
    return errors;
}

namespace {

// --gpu, --gpu-memory and --gpu-bandwidth: `d`'s GPU, a catalog one or the user's own; `had`: `d` is a saved
// deployment's.
void apply_gpu_options(const Options& o, const Catalog& catalog, bool had, Deployment& d, Errors& errors) {
    if (o.gpu) {
        if (const GpuSpec* g = catalog.find_gpu(*o.gpu)) {
            d.gpu = *g;
        } else {
            errors.push_back({"--gpu", "unknown GPU '" + *o.gpu + "'" + did_you_mean(catalog.suggest_gpus(*o.gpu)) +
                                           " (kvscope-cli gpus lists them; --gpu-memory and --gpu-bandwidth describe "
                                           "your own)"});
        }
    } else if (!o.gpu_memory && !had) {
        errors.push_back({"--gpu", (o.command_id == Command::window ? std::string("a deployment") : o.command) +
                                       " needs a GPU: --gpu ID (kvscope-cli gpus lists them), or --gpu-memory and "
                                       "--gpu-bandwidth"});
    } else if (o.gpu_memory && d.gpu.unified_memory_bytes == 0) {  // a unified machine stays itself (below)
        d.gpu.id = "custom";
        d.gpu.name = "custom GPU";
    }
    // A unified-memory computer's GPU takes a share of the machine's memory, never more than all of it.
    if (o.gpu_memory && d.gpu.unified_memory_bytes > 0 && *o.gpu_memory > d.gpu.unified_memory_bytes)
        errors.push_back({"--gpu-memory", "more than the machine's " + format_bytes(d.gpu.unified_memory_bytes) +
                                              " of unified memory (" + d.gpu.name + ")"});
    // A catalog GPU given other memory is no longer the catalog's: its name says so ("NVIDIA H100 SXM 80GB with
    // 40.0 GiB"), not the catalog's own size beside another (a saved one's name from the catalog's, not twice).
    if (o.gpu_memory && *o.gpu_memory != d.gpu.memory_bytes && d.gpu.id != "custom")
        d.gpu.name = name_with_memory(catalog.find_gpu(d.gpu.id), d.gpu.name, *o.gpu_memory);
    if (o.gpu_memory) d.gpu.memory_bytes = *o.gpu_memory;
    if (o.gpu_bandwidth) d.gpu.bandwidth_bytes_per_s = *o.gpu_bandwidth;
    if (!o.gpu && o.gpu_memory && !o.gpu_bandwidth && !had)
        errors.push_back(
            {"--gpu-bandwidth", "a custom GPU needs its memory bandwidth in bytes/s (for example 3350GB)"});
}

// --engine and --utilization: the engine, and its memory fraction (the new engine's default where none is given
// and the engine is new or changed).
void apply_engine_options(const Options& o, bool had, Deployment& d, Errors& errors) {
    const Engine engine_before = d.engine;
    if (o.engine) {
        if (auto e = parse_engine(*o.engine))
            d.engine = *e;
        else
            errors.push_back({"--engine", "'" + *o.engine + "' is not an engine (" + engine_list() + ")"});
    }
    if (o.utilization) {
        d.fraction = *o.utilization;
        d.fraction_given = true;
    } else if (!had || d.engine != engine_before) {
        d.fraction = default_fraction(d.engine);
        d.fraction_given = false;
    }
}

// --weight-dtype and --weights (or --model-dir's own files): the weights' format and their exact bytes.
void apply_weights_options(const Options& o, Deployment& d, Errors& errors) {
    // A GGUF mix of llama-quantize's (q4_k_m, …): its tensors' types from the model's shape. A format that is both
    // (q4_0, q8_0) counts every weight in it, as before.
    const auto mix =
        o.weight_dtype && !parse_kv_dtype(*o.weight_dtype) ? parse_gguf_mix(*o.weight_dtype) : std::nullopt;
    const auto w = mix ? std::nullopt : weight_dtype_option(o, errors);
    if (w) d.weight_dtype = *w;
    if (w || mix) {
        // Another format than the files hold: their exact bytes and quantization no longer apply.
        d.weights_bytes_exact = 0;
        d.weights_source.clear();
        d.weight_quant.reset();
        d.weights_layers.reset();
        d.gguf_mix = mix;
    }
    // The weights' files: --weights, or --model-dir's own when --weight-dtype asks for another format than its
    // config (a folder of no safetensors keeps the estimate), so that both read the same files the same way.
    // Only float files: a quantized checkpoint in another format is no longer what its files hold (the estimate).
    std::optional<std::string> weights_path = o.weights;
    const char* weights_flag = "--weights";
    if (mix && o.weights)
        errors.push_back({"--weights", "gives the weights' exact bytes, and --weight-dtype " + *o.weight_dtype +
                                           " a GGUF mix's estimate: give one of them"});
    if (!weights_path && o.weight_dtype && o.model_dir && !mix)
        if (const auto own = safetensors::read_weights(*o.model_dir); own && own->float_only() && own->bytes > 0) {
            weights_path = o.model_dir;
            weights_flag = "--model-dir";
        }
    if (weights_path) {
        // A float32 checkpoint is served in bf16, a float one with --weight-dtype fp8 quantized at load.
        const auto files = safetensors::read_weights(*weights_path);
        const auto served = files ? files->served_in(d.weight_dtype) : Result<safetensors::Weights>(files.errors());
        if (served && served->bytes == 0) {
            // Nothing an engine loads (only buffers it skips, or no tensor): said, never the estimate in silence.
            errors.push_back(
                {weights_flag, *weights_path + ": holds no weights an engine loads (" +
                                   format_count_of(files->tensors + files->skipped_tensors, "tensor", "tensors") +
                                   (files->skipped_tensors > 0 ? ", all buffers engines skip at load" : "") + ")"});
        } else if (served) {
            d.weights_bytes_exact = served->bytes;
            d.weights_source = served->source_text();
        } else {
            for (const auto& e : served.errors()) errors.push_back({files ? e.field : weights_flag, e.message});
        }
    }
}

void apply_split_options(const Options& o, Deployment& d, Errors& errors);

// The engines' own settings: --reserve, --overhead, the engines' counts, --enforce-eager and --flash-attn.

void apply_engine_settings(const Options& o, Deployment& d, Errors& errors) {
    // --reserve replaces a derived reserve (vLLM's profile peak, TensorRT-LLM's, llama.cpp's compute buffer);
    // --overhead only the memory outside it.
    if (o.reserve) {
        d.activation_reserve_bytes = *o.reserve;
        d.fixed_reserve = true;
    }
    if (o.overhead) {
        d.runtime_overhead_bytes = *o.overhead;
        d.overhead_given = true;
    }
    // An engine's count given as 0 would read as "the engine's default" in the scenario: refused, as the engines
    // refuse it.
    for (auto [given, slot, name, fallback] :
         {std::tuple{o.max_num_batched_tokens, &d.vllm.max_num_batched_tokens, "--max-num-batched-tokens",
                     "vLLM's default"},
          std::tuple{o.max_num_seqs, &d.vllm.max_num_seqs, "--max-num-seqs", "vLLM's default"},
          std::tuple{o.max_num_tokens, &d.tensorrt_llm.max_num_tokens, "--max-num-tokens", "TensorRT-LLM's 8,192"},
          std::tuple{o.ubatch, &d.llama_cpp.ubatch, "--ubatch", "llama.cpp's 512"}}) {
        if (!given) continue;
        if (*given == 0)
            errors.push_back({name, std::string("must be at least 1 (leave it out for ") + fallback + ")"});
        else
            *slot = *given;
    }
    if (o.enforce_eager) d.vllm.enforce_eager = true;
    if (o.flash_attn) {
        const std::string fa = ascii_lower(*o.flash_attn);
        if (fa == "on" || fa == "auto" || fa == "1")
            d.llama_cpp.flash_attn_off = false;
        else if (fa == "off" || fa == "0")
            d.llama_cpp.flash_attn_off = true;
        else
            errors.push_back({"--flash-attn", "'" + *o.flash_attn + "' is not on, off or auto"});
    }
    apply_split_options(o, d, errors);
}

// llama.cpp's split (--gpu-layers, --n-cpu-moe, --no-kv-offload) and the host it leaves the rest to.
void apply_split_options(const Options& o, Deployment& d, Errors& errors) {
    if (o.gpu_layers) {
        const std::string n = ascii_lower(*o.gpu_layers);
        if (n == "all" || n == "-1") {
            d.llama_cpp.gpu_layers.reset();  // llama.cpp's -1: every layer
            d.llama_cpp.gpu_layers_auto = false;
        } else if (n == "auto") {
            d.llama_cpp.gpu_layers.reset();  // llama.cpp's --fit chooses
            d.llama_cpp.gpu_layers_auto = true;
        } else if (auto count = parse_count(n, "--gpu-layers")) {
            d.llama_cpp.gpu_layers = *count;
            d.llama_cpp.gpu_layers_auto = false;
        } else {
            errors.push_back({"--gpu-layers", "'" + *o.gpu_layers + "' is not a number of layers, all or auto"});
        }
    }
    if (o.cpu_moe_layers) d.llama_cpp.cpu_moe_layers = *o.cpu_moe_layers;
    if (o.no_kv_offload) d.llama_cpp.no_kv_offload = true;
    if (o.host) {
        if (ascii_lower(*o.host) != kThisHost && find_host_platform(ascii_lower(*o.host)) == nullptr)
            errors.push_back({"--host", "'" + *o.host + "' is not a host memory of the table: " + host_platform_ids() +
                                            ", or this (this machine, measured)"});
        else {
            d.host.id = ascii_lower(*o.host);
            d.host.bandwidth_bytes_per_s = 0;  // the platform's
        }
    }
    if (o.host_memory) d.host.memory_bytes = *o.host_memory;
    if (o.host_bandwidth) d.host.bandwidth_bytes_per_s = *o.host_bandwidth;
}

// --mtp, --draft and --draft-method: the speculative method and its draft model.
void apply_draft_options(const Options& o, const Catalog& catalog, Deployment& d, Errors& errors) {
    // One speculative method, as the window keeps it: --mtp replaces a saved draft, --draft a saved --mtp (both
    // given: the fit names the conflict).
    if (o.mtp) {
        d.mtp = true;
        if (!o.draft) d.draft.reset();
    }
    if (o.draft && !o.mtp) d.mtp = false;
    std::optional<DraftMethod> method;
    if (o.draft_method) {
        method = parse_draft_method(*o.draft_method);
        if (!method)
            errors.push_back(
                {"--draft-method", "'" + *o.draft_method + "' is not a method (" + draft_method_list() + ")"});
        else if (!o.draft && !d.draft)
            errors.push_back({"--draft-method", "there is no draft model to serve: give it with --draft MODEL"});
    }
    if (o.draft && *o.draft == "none") {
        d.draft.reset();
    } else if (o.draft) {
        if (auto found = find_draft(*o.draft, method, catalog, "--draft"))
            d.draft = *found;
        else
            for (const auto& e : found.errors()) errors.push_back(e);
    } else if (method && d.draft) {
        d.draft->method = *method;  // a saved draft served another way
    }
}

// --gpus, or the count --tp and --pp give (a new deployment's, or a saved one's where they are given).
void apply_gpu_count(const Options& o, bool had, Scenario& s, Deployment& d, Errors& errors) {
    // --gpus alone sets tensor parallel; with --tp/--pp the product must match.
    if (o.gpus) {
        d.gpu_count = *o.gpus;
        // Alone it sets the tensor parallel degree, over the pipeline stages the scenario has. Where the heads do not
        // split that way, the error is --gpus's, with the layouts of that many GPUs that do: never "tensor parallel
        // 3" for a degree the user did not give.
        if (!o.tp && !o.pp && s.parallel.pp > 0 && *o.gpus % s.parallel.pp == 0) {
            Parallelism tried = s.parallel;
            tried.tp = *o.gpus / s.parallel.pp;
            const Errors refused = validate(tried, s.arch);
            if (refused.empty()) {
                s.parallel = tried;
            } else {
                // Only degrees the calculator takes (each at most kMaxTpOrPp): --gpus 1e15 is no search of 10^15.
                std::vector<std::string> layouts;
                const std::uint64_t most_tp = std::min(*o.gpus, kMaxTpOrPp);
                for (std::uint64_t tp = 1; tp <= most_tp && layouts.size() < 4; ++tp)
                    if (*o.gpus % tp == 0 && *o.gpus / tp <= kMaxTpOrPp &&
                        validate(Parallelism{tp, *o.gpus / tp}, s.arch).empty())
                        layouts.push_back(tp == 1
                                              ? "--pp " + std::to_string(*o.gpus)
                                              : "--tp " + std::to_string(tp) + " --pp " + std::to_string(*o.gpus / tp));
                std::string choices;
                for (const std::string& l : layouts) choices += (choices.empty() ? "" : " or ") + l;
                errors.push_back(
                    {"--gpus",
                     format_count(*o.gpus) + " GPUs as tensor parallel alone do not split this model (" +
                         refused.front().message + ")" +
                         (layouts.empty() ? std::string("; no split of that many GPUs does") : "; give " + choices)});
            }
        }
    } else if (!had || o.tp || o.pp) {
        d.gpu_count = s.parallel.tp * s.parallel.pp;
    }
}

// The deployment the options describe, on `s`'s own when it has one (a saved scenario's): --gpu replaces the
// GPU, the others the fields they name. Errors name the option.
void apply_deployment_options(const Options& o, const Catalog& catalog, Scenario& s, Errors& errors) {
    const bool had = s.deployment.has_value();
    Deployment d = s.deployment.value_or(Deployment{});
    // The model's own weights (exact when its files give them) and the engine its files are for.
    if (!had) adopt_model_weights(d, model_weights_of(s, catalog));
    apply_gpu_options(o, catalog, had, d, errors);
    apply_engine_options(o, had, d, errors);
    apply_weights_options(o, d, errors);
    apply_engine_settings(o, d, errors);
    apply_draft_options(o, catalog, d, errors);
    if (o.vllm_version) {
        if (const auto version = parse_vllm_version(*o.vllm_version)) {
            d.vllm.version_minor = version->minor;
            d.vllm.version_patch = version->patch;
        } else {
            errors.push_back({"--vllm-version", version.errors().front().message});
        }
    }
    apply_gpu_count(o, had, s, d, errors);
    s.deployment = d;
}

// The options of one engine given for another: taken and kept with the deployment, and said to change nothing, as a
// setting the engine has no flag for would be refused or ignored by it (engine.h setting_unread_note says which
// engine reads which, where). llama.cpp's split options say so in the fit itself (fit.cpp split()).
void note_other_engines_options(const Options& o, const Deployment& d, std::vector<std::string>& notes) {
    const bool serves = o.command_id == Command::simulate ||
                        (o.command_id == Command::plan && (o.ttft_ms.has_value() || o.tpot_ms.has_value()));
    const struct {
        bool given;
        EngineSetting setting;
        const char* option;
    } kOptions[] = {
        {o.max_num_batched_tokens.has_value(), EngineSetting::max_num_batched_tokens, "--max-num-batched-tokens"},
        {o.max_num_seqs.has_value(), EngineSetting::max_num_seqs, "--max-num-seqs"},
        {o.enforce_eager, EngineSetting::enforce_eager, "--enforce-eager"},
        {o.vllm_version.has_value(), EngineSetting::vllm_version, "--vllm-version"},
        {o.max_num_tokens.has_value(), EngineSetting::max_num_tokens, "--max-num-tokens"},
        {o.ubatch.has_value(), EngineSetting::ubatch, "--ubatch"},
        {o.flash_attn.has_value(), EngineSetting::flash_attn, "--flash-attn"},
    };
    for (const auto& opt : kOptions)
        if (opt.given)
            if (auto note = setting_unread_note(d.engine, opt.setting, serves, d.fraction_given, opt.option))
                notes.push_back(std::move(*note));
}

}  // namespace

Result<Scenario> build_scenario(const Options& o, const Catalog& catalog, ScenarioSource& source) {
    Scenario s;
    std::optional<KvDtype> model_dtype;
    // The model's figures and where they came from; `name` is how the text names it beside its id.
    const auto take = [&](const ImportedModel& imported, const std::string& id, const std::string& name) {
        s.arch = imported.arch;
        s.model_id = id;
        source.description = id + " (" + name + ")";
        source.assumed = imported.assumed;
        source.notes = imported.notes;
        source.kv_dtype_source = imported.kv_dtype_source;
        s.model_weights = imported.model_weights();
        model_dtype = imported.kv_dtype;
    };
    if (o.scenario_file) {
        // A saved scenario: every figure it holds, then what the options beside it change (as the window opens it).
        auto loaded = read_scenario_file(*o.scenario_file);
        if (!loaded) return loaded.errors();
        s = loaded->scenario;
        const CatalogModel* m = catalog.find_model(s.model_id);
        source.description = s.model_id + " (" + (m ? m->name : s.arch.name) + ", from " + *o.scenario_file + ")";
        source.notes = loaded->warnings;  // what the model's import said, kept with the file
        for (const std::string* said : {&loaded->unread, &loaded->repaired})
            if (!said->empty()) source.notes.push_back(*said);
        source.kv_dtype_source = "the scenario file";
        Errors errors = apply_scenario_options(o, catalog, s);
        if (o.kv_dtype) source.kv_dtype_source = "--kv-dtype";
        // fit and plan need a deployment: the file's, or one the options give (the same error as without a file).
        if ((o.command_id == Command::fit || o.command_id == Command::plan) && !s.deployment)
            apply_deployment_options(o, catalog, s, errors);
        if (!errors.empty()) return errors;
        if (s.deployment) note_other_engines_options(o, *s.deployment, source.notes);
        return s;
    }
    if (o.config || o.gguf || o.model_dir) {
        const std::string& path = o.config ? *o.config : (o.gguf ? *o.gguf : *o.model_dir);
        auto imported =
            o.config ? import_config_file(path) : (o.gguf ? gguf::import_file(path) : import_model_path(path));
        if (!imported) return imported.errors();
        take(*imported, path, imported->arch.name);
    } else {
        // A catalog model, else one on this machine by that name (a Hugging Face repo id, an Ollama name).
        const std::string key = o.model.value_or("kvscope-teaching-32l");
        auto found = find_model(key, catalog, NamesPaths::no);
        if (!found) return found.errors();
        if (!*found)
            return FieldError{"--model", "unknown model '" + key + "'" + did_you_mean(catalog.suggest_models(key)) +
                                             " (kvscope-cli models lists them, models --local those on this machine; "
                                             "--config FILE reads a config.json, --gguf FILE a GGUF)"};
        const FoundModel& m = **found;
        take(m.model, m.id, m.catalog ? m.catalog->name : m.model.arch.name);
        if (!o.model) source.description += " — the default; choose with --model";
    }

    s.kv_dtype = model_dtype.value_or(KvDtype::fp16);
    s.workload.context_tokens = default_context_tokens(s.arch);
    Errors errors = apply_workload_options(o, s);
    if (o.kv_dtype) source.kv_dtype_source = "--kv-dtype";
    // The config's SSM format, said by the import, no longer holds once the option sets another.
    if (o.mamba_ssm_cache_dtype && *o.mamba_ssm_cache_dtype != "auto" && errors.empty() && s.arch.recurrent) {
        std::erase_if(source.notes, [](const std::string& n) { return n.starts_with("the SSM state is kept in "); });
        source.notes.push_back("the SSM state is kept in " + std::string(to_string(s.arch.recurrent->ssm_dtype)) +
                               " (--mamba-ssm-cache-dtype)");
    }

    if (o.command_id == Command::probe) {
        // probe takes one deployment option, --weight-dtype, for --step's weights: the model's weights in that
        // format (their files' exact bytes and quantization no longer apply); the device is the one probed.
        if (o.weight_dtype && !o.step)
            errors.push_back({"--weight-dtype", "only probe --step multiplies weights (add --step)"});
        else if (const auto w = weight_dtype_option(o, errors))
            s.model_weights = ModelWeights{.dtype = *w, .exact_bytes = 0, .source = {}, .engine = {}, .quant = {}};
    } else if (o.command_id == Command::fit || o.command_id == Command::plan || names_deployment(o)) {
        apply_deployment_options(o, catalog, s, errors);
        if (s.deployment) note_other_engines_options(o, *s.deployment, source.notes);
        // Ollama's own num_ctx for the GPUs' memory where no context is given (server/routes.go), as it would run.
        if (!o.context && s.deployment && s.deployment->engine == Engine::ollama) {
            const OllamaContext c = ollama_context_for(s.deployment->gpu, s.deployment->gpu_count, s.arch);
            s.workload.context_tokens = c.context;
            source.notes.push_back("the context is Ollama's default num_ctx for " + format_bytes(c.vram_bytes) +
                                   " of GPU memory: " + format_count(c.num_ctx) +
                                   (c.context < c.num_ctx
                                        ? ", no longer than the model's " + format_count(s.workload.context_tokens)
                                        : std::string()) +
                                   " (server/routes.go; --context sets num_ctx)");
        }
    }
    if (!errors.empty()) return errors;
    return s;
}

Errors use_this_host(Scenario& s, const std::function<probe::HostReading()>& measure, std::vector<std::string>& notes) {
    if (!s.deployment || s.deployment->host.id != kThisHost) return {};
    HostSpec& h = s.deployment->host;
    h.id.clear();
    // What --host-bandwidth and --host-memory give beside it stays; the rest is measured.
    const bool bandwidth_given = h.bandwidth_bytes_per_s > 0, ram_given = h.memory_bytes > 0;
    if (bandwidth_given && ram_given) return {};
    const probe::HostReading m = measure();
    if (!bandwidth_given) {
        if (m.read_gbps <= 0)
            return {{"--host",
                     "this machine's read ceiling could not be measured here (kvscope-cli devices says why); "
                     "give --host-bandwidth"}};
        h.bandwidth_bytes_per_s = static_cast<std::uint64_t>(m.read_gbps * 1e9);
    }
    if (!ram_given) h.memory_bytes = m.ram_bytes;
    notes.push_back(
        "the host is this machine: " +
        (bandwidth_given ? "--host-bandwidth's " + format_bandwidth(h.bandwidth_bytes_per_s)
                         : format_bandwidth(h.bandwidth_bytes_per_s) +
                               ", its read ceiling measured by the CPU probe (a read-only pass over 256 "
                               "MiB on every thread)") +
        (ram_given || h.memory_bytes == 0 ? std::string() : ", and its " + format_bytes(h.memory_bytes) + " of RAM"));
    return {};
}

Errors apply_scenario_options(const Options& o, const Catalog& catalog, Scenario& s) {
    Errors errors = apply_workload_options(o, s);
    // A new deployment starts from the model's own weights (model_weights_of), as build_scenario's does.
    // --tp and --pp change a saved deployment's GPU count too.
    if (names_deployment(o) || (s.deployment && (o.tp || o.pp))) apply_deployment_options(o, catalog, s, errors);
    return errors;
}

}  // namespace kvscope::cli
