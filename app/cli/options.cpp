#include "options.h"

#include <algorithm>
#include <functional>
#include <map>

#include "kvscope/calculator/numbers.h"

namespace kvscope::cli {
namespace {

// Command-line numbers are the same in every locale (numbers.h), so scripts work anywhere.
Result<double> parse_fraction(const std::string& text, const std::string& field) {
    const auto parsed = number_from_text(text);
    if (!parsed && text.find(',') != std::string::npos) {
        std::string with_point = text;
        std::replace(with_point.begin(), with_point.end(), ',', '.');
        return FieldError{
            field, "'" + text + "': the command line takes a decimal point in every locale (" + with_point + ")"};
    }
    if (!parsed) return FieldError{field, "'" + text + "' is not a number (for example 0.9)"};
    const double v = *parsed;
    if (!(v > 0.0 && v <= 1.0)) return FieldError{field, "'" + text + "' must be above 0 and at most 1"};
    return v;
}

// "; did you mean a, b?" or nothing.
std::string did_you_mean(const std::vector<std::string>& names) {
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    return list.empty() ? "" : "; did you mean " + list + "?";
}

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
    Options o;
    Errors errors;
    using Setter = std::function<void(const std::string&, const std::string&)>;
    // Parses a value with `parse` into `slot`, or records the problem under the option's name.
    auto parsed = [&errors](auto& slot, auto parse) -> Setter {
        return [&slot, &errors, parse](const std::string& name, const std::string& v) {
            auto r = parse(v, name);
            if (!r)
                errors.push_back(r.errors().front());
            else
                slot = *r;
        };
    };
    auto text = [](std::optional<std::string>& slot) -> Setter {
        return [&slot](const std::string&, const std::string& v) { slot = v; };
    };
    const std::map<std::string, Setter> with_value{
        {"--model", text(o.model)},
        {"--config", text(o.config)},
        {"--data-dir", text(o.data_dir)},
        {"--context", parsed(o.context, parse_token_count)},
        {"--batch", parsed(o.batch, parse_count)},
        {"--block-size", parsed(o.block_size, parse_count)},
        {"--tp", parsed(o.tp, parse_count)},
        {"--pp", parsed(o.pp, parse_count)},
        {"--kv-dtype", text(o.kv_dtype)},
        {"--mamba-cache-dtype", text(o.mamba_cache_dtype)},
        {"--mamba-ssm-cache-dtype", text(o.mamba_ssm_cache_dtype)},
        {"--gpu", text(o.gpu)},
        {"--gpus", parsed(o.gpus, parse_count)},
        {"--engine", text(o.engine)},
        {"--weight-dtype", text(o.weight_dtype)},
        {"--gpu-memory", parsed(o.gpu_memory, parse_bytes)},
        {"--gpu-bandwidth", parsed(o.gpu_bandwidth, parse_bytes)},
        {"--reserve", parsed(o.reserve, parse_bytes)},
        {"--overhead", parsed(o.overhead, parse_bytes)},
        {"--utilization", parsed(o.utilization, parse_fraction)},
        {"--points", parsed(o.points, parse_count)},
        {"--from", parsed(o.from, parse_token_count)},
        {"--to", parsed(o.to, parse_token_count)},
        {"--backend", text(o.backend)},
        {"--prompt", text(o.prompt)},
        {"--tokens", parsed(o.tokens, parse_count)},
        {"--runs", parsed(o.runs, parse_count)},
        {"--memory-limit", parsed(o.memory_limit, parse_bytes)},
        {"--ceiling-size", parsed(o.ceiling_size, parse_bytes)},
        {"--gpus-per-node", parsed(o.gpus_per_node, parse_count)},
        {"--max-pp", parsed(o.max_pp, parse_count)},
        {"--units",
         [&](const std::string& name, const std::string& v) {
             if (v == "gib" || v == "binary" || v == "GiB")
                 o.units = UnitSystem::binary;
             else if (v == "gb" || v == "decimal" || v == "GB")
                 o.units = UnitSystem::decimal;
             else
                 errors.push_back({name, "'" + v + "' is not a unit system (GiB or GB)"});
         }},
        {"--format",
         [&](const std::string& name, const std::string& v) {
             if (v == "table")
                 o.format = Format::table;
             else if (v == "json")
                 o.format = Format::json;
             else if (v == "csv")
                 o.format = Format::csv;
             else
                 errors.push_back({name, "'" + v + "' is not a format (table, json, csv)"});
         }},
    };
    const std::map<std::string, std::function<void()>> flags{
        {"--help", [&] { o.help = true; }},
        {"-h", [&] { o.help = true; }},
        {"--json", [&] { o.format = Format::json; }},
        {"--csv", [&] { o.format = Format::csv; }},
        {"--full-window", [&] { o.full_window = true; }},
        {"--linear", [&] { o.linear = true; }},
        {"--all-layers", [&] { o.all_layers = true; }},
    };

    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        if (o.command.empty() && !arg.starts_with("-")) {
            o.command = arg;
            continue;
        }
        std::optional<std::string> inline_value;
        if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
            inline_value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        if (const auto f = flags.find(arg); f != flags.end() && !inline_value) {
            f->second();
            continue;
        }
        const auto s = with_value.find(arg);
        if (s == with_value.end()) {
            errors.push_back({arg, arg.starts_with("-") ? "unknown option" : "unexpected argument"});
            continue;
        }
        if (!inline_value && i + 1 >= args.size()) {
            errors.push_back({arg, "needs a value"});
            continue;
        }
        s->second(arg, inline_value ? *inline_value : args[++i]);
    }
    if (o.model && o.config) errors.push_back({"--config", "give either --model or --config, not both"});
    if (!errors.empty()) return errors;
    return o;
}

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
    const auto ssm = state_dtype(o.mamba_ssm_cache_dtype, "--mamba-ssm-cache-dtype");
    if (conv && s.arch.recurrent) {
        const bool model_sets_ssm = s.arch.recurrent->ssm_dtype != s.arch.recurrent->conv_dtype;
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

Result<Scenario> build_scenario(const Options& o, const Catalog& catalog, ScenarioSource& source) {
    Scenario s;
    std::optional<KvDtype> model_dtype;
    std::optional<KvDtype> model_weight_dtype;
    if (o.config) {
        auto imported = import_config_file(*o.config);
        if (!imported) return imported.errors();
        s.arch = imported->arch;
        s.model_id = *o.config;
        source.description = *o.config + " (" + s.arch.name + ")";
        source.assumed = imported->assumed;
        source.notes = imported->notes;
        source.kv_dtype_source = imported->kv_dtype_source;
        model_dtype = imported->kv_dtype;
        model_weight_dtype = imported->weight_dtype;
    } else {
        const std::string key = o.model.value_or("kvscope-teaching-32l");
        const CatalogModel* m = catalog.find_model(key);
        if (!m) {
            return FieldError{"--model", "unknown model '" + key + "'" + did_you_mean(catalog.suggest_models(key)) +
                                             " (kvscope-cli models lists them; --config FILE reads a config.json)"};
        }
        s.arch = m->model.arch;
        s.model_id = m->id;
        source.description = m->id + " (" + m->name + ")" + (o.model ? "" : " — the default; choose with --model");
        source.assumed = m->model.assumed;
        source.notes = m->model.notes;
        source.kv_dtype_source = m->model.kv_dtype_source;
        model_dtype = m->model.kv_dtype;
        model_weight_dtype = m->model.weight_dtype;
    }

    s.kv_dtype = model_dtype.value_or(KvDtype::fp16);
    s.workload.context_tokens = default_context_tokens(s.arch);
    Errors errors = apply_workload_options(o, s);
    if (o.kv_dtype) source.kv_dtype_source = "--kv-dtype";

    // The planner tries every layout itself: a fixed one would be silently ignored.
    if (o.command == "plan")
        for (const auto& [given, name] : {std::pair{o.tp.has_value(), "--tp"}, std::pair{o.pp.has_value(), "--pp"},
                                          std::pair{o.gpus.has_value(), "--gpus"}})
            if (given)
                errors.push_back({name,
                                  "plan tries every TP × PP layout and replica count itself; use fit for one "
                                  "layout"});
    const bool wants_deployment = o.command == "fit" || o.command == "plan" || o.gpu || o.gpu_memory;
    if (wants_deployment) {
        Deployment d;
        if (o.gpu) {
            if (const GpuSpec* g = catalog.find_gpu(*o.gpu)) {
                d.gpu = *g;
            } else {
                errors.push_back(
                    {"--gpu",
                     "unknown GPU '" + *o.gpu + "'" + did_you_mean(catalog.suggest_gpus(*o.gpu)) +
                         " (kvscope-cli gpus lists them; --gpu-memory and --gpu-bandwidth describe your own)"});
            }
        } else if (!o.gpu_memory) {
            errors.push_back(
                {"--gpu",
                 o.command +
                     " needs a GPU: --gpu ID (kvscope-cli gpus lists them), or --gpu-memory and --gpu-bandwidth"});
        } else {
            d.gpu.id = "custom";
            d.gpu.name = "custom GPU";
        }
        if (o.gpu_memory) d.gpu.memory_bytes = *o.gpu_memory;
        if (o.gpu_bandwidth) d.gpu.bandwidth_bytes_per_s = *o.gpu_bandwidth;
        if (!o.gpu && o.gpu_memory && !o.gpu_bandwidth)
            errors.push_back(
                {"--gpu-bandwidth", "a custom GPU needs its memory bandwidth in bytes/s (for example 3350GB)"});
        if (o.engine) {
            if (auto e = parse_engine(*o.engine))
                d.engine = *e;
            else
                errors.push_back({"--engine", "'" + *o.engine + "' is not an engine (" + engine_list() + ")"});
        }
        d.fraction = o.utilization.value_or(default_fraction(d.engine));
        d.weight_dtype = model_weight_dtype.value_or(KvDtype::bf16);
        if (o.weight_dtype) {
            if (auto w = parse_kv_dtype(*o.weight_dtype))
                d.weight_dtype = *w;
            else
                errors.push_back(
                    {"--weight-dtype", "'" + *o.weight_dtype + "' is not a format (" + kv_dtype_list() + ")"});
        }
        if (o.reserve) d.activation_reserve_bytes = *o.reserve;
        if (o.overhead) d.runtime_overhead_bytes = *o.overhead;
        // --gpus alone sets tensor parallel; with --tp/--pp the product must match.
        if (o.gpus) {
            d.gpu_count = *o.gpus;
            if (!o.tp && !o.pp) s.parallel.tp = *o.gpus;
        } else {
            d.gpu_count = s.parallel.tp * s.parallel.pp;
        }
        s.deployment = d;
    }
    if (!errors.empty()) return errors;
    return s;
}

}  // namespace kvscope::cli
