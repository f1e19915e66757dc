#include "commands.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "catalog_commands.h"
#include "kvscope/calculator/analysis.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/explain.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/weights.h"
#include "probe_commands.h"
#include "scenario_options.h"
#include "simulate_command.h"
#include "table.h"

namespace kvscope::cli {

using json::Value;

std::string usage_error(const Errors& errors_in, const std::string& command) {
    Errors errors = errors_in;
    name_as_options(errors);  // the inputs as the options that set them
    std::string line = "kvscope-cli" + (command.empty() ? "" : " " + command) + ": " + join_errors(errors);
    return line + "\n";
}

namespace {

// Layers of more than full attention and sliding windows, or a recurrent state: the text says what each keeps.
bool mixed_layers(const Architecture& a) {
    return a.attention_layers() != a.layers || a.state_layers() > 0 || a.count_layers(LayerKind::chunked) > 0 ||
           std::any_of(a.layer_specs.begin(), a.layer_specs.end(),
                       [](const LayerSpec& l) { return l.kv_heads > 0 || l.head_dim_k > 0 || l.head_dim_v > 0; });
}

}  // namespace

std::string header(const Scenario& s, const ScenarioSource& src) {
    std::vector<std::pair<std::string, std::string>> rows{
        {"model", src.description},
        {"attention",
         s.arch.attention_layers() == 0
             ? "none — " + std::to_string(s.arch.layers) + " recurrent layers, no KV cache"
             : attention_label(s.arch) + " — " + std::to_string(s.arch.layers) + " layers, " +
                   std::to_string(s.arch.query_heads) + " query heads, " +
                   (s.arch.mla
                        ? "MLA latent " + std::to_string(s.arch.mla->kv_lora_rank) + " + rope " +
                              std::to_string(s.arch.mla->qk_rope_head_dim) +
                              (s.arch.mla->indexer_head_dim > 0
                                   ? " + indexer key " + std::to_string(s.arch.mla->indexer_head_dim)
                                   : "")
                        : format_count_of(s.arch.kv_heads, "KV head", "KV heads") + ", head dim " +
                              std::to_string(s.arch.head_dim_k) +
                              (s.arch.head_dim_v != s.arch.head_dim_k ? "/" + std::to_string(s.arch.head_dim_v) : ""))},
        {"workload", format_tokens(s.workload.context_tokens) + " tokens × " + std::to_string(s.workload.batch) +
                         (s.workload.batch == 1 ? " sequence" : " sequences") +
                         (s.workload.block_size > 1 ? ", blocks of " + std::to_string(s.workload.block_size) : "") +
                         (s.parallel.tp > 1 ? ", TP " + std::to_string(s.parallel.tp) : "") +
                         (s.parallel.pp > 1 ? ", PP " + std::to_string(s.parallel.pp) : "")},
        {"KV dtype",
         std::string(to_string(s.kv_dtype)) + (src.kv_dtype_source.empty() ? "" : " (" + src.kv_dtype_source + ")")},
    };
    if (s.arch.has_sliding_layers()) {
        std::uint64_t sliding = 0, window = 0;
        for (std::uint64_t l = 0; l < s.arch.layers; ++l)
            if (const auto w = s.arch.window_of(l)) ++sliding, window = w;
        rows.emplace_back("windows", std::to_string(sliding) + " of " + std::to_string(s.arch.layers) +
                                         " layers slide over " + format_tokens(window) + " tokens" +
                                         (s.workload.full_window ? " (ignored: --full-window)" : ""));
    }
    if (mixed_layers(s.arch)) rows.emplace_back("layer mix", layer_mix_text(s.arch));
    std::string out = key_values(rows);
    for (const auto& a : src.assumed) out += "assumed: " + a + "\n";
    for (const auto& n : src.notes) out += "note: " + n + "\n";
    return out;
}

namespace {

Table variants_table(const std::vector<Variant>& variants, UnitSystem units) {
    // A hybrid model's layouts also keep a recurrent state: its own column, so that the cache and the state
    // are both in view (the percentages compare the KV cache).
    const bool state =
        std::any_of(variants.begin(), variants.end(), [](const Variant& v) { return v.state_bytes > 0; });
    std::vector<std::string> head{"variant", "KV heads", "KV cache", "per token", "% of MHA", ""};
    if (state) head.insert(head.begin() + 3, "+ state");
    Table t(head);
    double top = 0;
    for (const auto& v : variants) top = std::max(top, v.percent_of_mha);
    for (const auto& v : variants) {
        const auto bar = static_cast<std::size_t>(top > 0 ? 20.0 * v.percent_of_mha / top + 0.5 : 0);
        std::string bars;
        for (std::size_t i = 0; i < bar; ++i) bars += "█";
        std::vector<std::string> row{
            v.name + (v.is_model ? " *" : "") + (v.replication > 1 ? " (" + replication_text(v.replication) + ")" : ""),
            std::to_string(v.kv_heads),
            format_bytes(v.kv_cache_bytes, units),
            format_bytes(v.bytes_per_token, units),
            format_percent(v.percent_of_mha),
            bars};
        if (state) row.insert(row.begin() + 3, format_bytes(v.state_bytes, units));
        t.add(row);
    }
    return t;
}

std::string warnings_text(const std::vector<std::string>& warnings) {
    std::string out;
    for (const auto& w : warnings) out += "warning: " + w + "\n";
    return out;
}

Output cmd_kv(const Options& o, const Scenario& s, const ScenarioSource& src, bool compare_only) {
    Output r;
    auto analysis = analyze(s, {.units = o.units, .curves = {}, .with_curves = false});
    if (!analysis) return {"", usage_error(analysis.errors(), o.command), kExitUsage};
    const KvCacheReport* kv = &analysis->kv;
    const std::vector<Variant>* variants = &analysis->variants;
    if (o.format == Format::json) {
        Value v = compare_only ? Value::object() : kv_report_json(s, *kv, *variants);
        if (compare_only) {
            v.set("model", Value::string(s.model_id));
            v.set("context_tokens", Value::number(s.workload.context_tokens));
            v.set("batch", Value::number(s.workload.batch));
            v.set("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
            v.set("variants", variants_json(*variants));
            v.set("warnings", Value::strings(kv->warnings));  // as kv --json gives them
        }
        r.out = with_warnings(std::move(v), src.notes).dump() + "\n";
        return r;
    }
    if (o.format == Format::csv) {
        if (compare_only) {
            Table t({"name", "kv_heads", "kv_cache_bytes", "bytes_per_token", "percent_of_mha", "is_model",
                     "replication", "state_bytes"});
            for (const auto& v : *variants)
                t.add({v.name, std::to_string(v.kv_heads), std::to_string(v.kv_cache_bytes),
                       std::to_string(v.bytes_per_token), fixed(v.percent_of_mha, 3), v.is_model ? "true" : "false",
                       std::to_string(v.replication), std::to_string(v.state_bytes)});
            r.out = t.csv();
        } else {
            Table t({"model", "context_tokens", "batch", "kv_dtype", "tp", "pp", "kv_cache_bytes",
                     "kv_cache_bytes_per_gpu", "bytes_per_sequence", "bytes_per_token", "state_bytes", "memory_bytes"});
            t.add({s.model_id, std::to_string(s.workload.context_tokens), std::to_string(s.workload.batch),
                   std::string(to_string(s.kv_dtype)), std::to_string(s.parallel.tp), std::to_string(s.parallel.pp),
                   std::to_string(kv->total_bytes), std::to_string(kv->per_gpu_bytes),
                   std::to_string(kv->per_sequence_bytes), std::to_string(kv->bytes_per_token),
                   std::to_string(kv->state_bytes), std::to_string(kv->memory_bytes)});
            r.out = t.csv();
        }
        return r;
    }
    r.out = header(s, src) + "\n";
    if (!compare_only) {
        std::vector<std::pair<std::string, std::string>> rows{
            {"KV cache", format_bytes_both(kv->total_bytes, o.units) + " — " + format_count(kv->total_bytes) +
                             " bytes" + (kv->exact ? "" : " — NOT EXACT: see the warnings below")},
        };
        if (kv->state_bytes > 0) {
            rows.emplace_back("state", format_bytes_both(kv->state_bytes, o.units) + " — " +
                                           format_count(kv->state_bytes) + " bytes of recurrent state, " +
                                           format_bytes(kv->state_bytes_per_sequence, o.units) +
                                           " per sequence whatever the context");
            rows.emplace_back("KV + state", format_bytes_both(kv->memory_bytes, o.units) + " — " +
                                                format_count(kv->memory_bytes) + " bytes");
        }
        if (kv->gpus > 1)
            rows.emplace_back("per GPU", format_bytes_both(kv->per_gpu_bytes, o.units) + " on the busiest of " +
                                             std::to_string(kv->gpus) + " GPUs");
        rows.emplace_back("per sequence", format_bytes_both(kv->per_sequence_bytes, o.units));
        rows.emplace_back("per token", format_bytes(kv->bytes_per_token, o.units) + " (" +
                                           format_count(kv->bytes_per_token) + " bytes, all layers)");
        r.out += key_values(rows) + "\n";
        // Per layer: grouped by what they keep unless --all-layers. A model with layers of several kinds
        // (or a recurrent state) gets the kind and state columns.
        const bool state = kv->state_bytes > 0, mixed = mixed_layers(s.arch);
        std::vector<std::string> head{"layers"};
        if (mixed) head.emplace_back("kind");
        for (const char* h : {"window", "tokens kept", "bytes per layer"}) head.emplace_back(h);
        if (state) head.emplace_back("state per layer");
        Table layers(head);
        const auto kind_text = [&](const LayerKv& l) { return std::string(layer_kind_name(s.arch, l.kind)); };
        const auto row = [&](const std::string& count, const LayerKv& l) {
            const bool caches =
                l.kind == LayerKind::full || l.kind == LayerKind::sliding || l.kind == LayerKind::chunked;
            std::vector<std::string> cells{count};
            if (mixed) cells.push_back(kind_text(l));
            cells.push_back(!caches ? "—" : l.window ? format_tokens(l.window) : "full");
            cells.push_back(format_count(l.stored_tokens));
            cells.push_back(format_bytes(l.bytes, o.units));
            if (state) cells.push_back(format_bytes(l.state_bytes, o.units));
            layers.add(cells);
        };
        if (o.all_layers) {
            for (const auto& l : kv->layers) row(std::to_string(l.layer), l);
        } else {
            // Groups in the order of their first layer.
            std::vector<std::pair<std::uint64_t, const LayerKv*>> groups;
            for (const auto& l : kv->layers) {
                auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
                    return g.second->kind == l.kind && g.second->window == l.window && g.second->bytes == l.bytes &&
                           g.second->state_bytes == l.state_bytes;
                });
                if (it == groups.end())
                    groups.emplace_back(1, &l);
                else
                    ++it->first;
            }
            if (!mixed)  // as before: full attention first, then the windows in increasing order
                std::stable_sort(groups.begin(), groups.end(),
                                 [](const auto& a, const auto& b) { return a.second->window < b.second->window; });
            for (const auto& [count, l] : groups) row(std::to_string(count), *l);
        }
        r.out += layers.text() + "\n";
    }
    r.out += variants_table(*variants, o.units).text();
    r.out += "(* the model's own layout)\n";
    r.out += warnings_text(kv->warnings);
    return r;
}

Output cmd_sweep(const Options& o, const Scenario& s, const ScenarioSource& src) {
    CurveOptions c;
    c.points = o.points.value_or(o.format == Format::table ? 12 : 512);
    c.spacing = o.linear ? Spacing::linear : Spacing::log;
    // Without --to: the model's max positions or the context, whichever is more, as the window's chart ends (so that
    // the JSON and CSV are the window's export, point for point).
    c.max_tokens = o.to.value_or(std::max(s.arch.max_positions, s.workload.context_tokens));
    // An end the user did not choose is lowered where the model's cache would pass 2^64 bytes, and said; --to's is
    // refused in words.
    c.lower_end_to_fit = !o.to;
    // Without --from: 1, as the window's chart starts; the table's dozen rows from 128 (or 1 for a curve that ends
    // before it), where the first rows of 1, 2, 5 tokens would say little.
    c.min_tokens = o.from.value_or(o.format != Format::table || o.linear || c.max_tokens < 128 ? 0 : 128);
    if (c.points < 2 || c.points > 100000)
        return {"", usage_error({{"--points", "must be between 2 and 100000"}}, o.command), kExitUsage};
    const std::string end_source = o.to ? ""
                                   : s.arch.max_positions >= s.workload.context_tokens
                                       ? " (the model's max positions; --to sets it)"
                                       : " (the context; --to sets it)";
    if (c.min_tokens > c.max_tokens)
        return {"",
                usage_error({{o.from ? "--from" : "--to", "the curve starts at " + format_count(c.min_tokens) +
                                                              " tokens, after its end at " +
                                                              format_count(c.max_tokens) + " tokens" + end_source}},
                            o.command),
                kExitUsage};
    auto analysis = analyze(s, {.units = o.units, .curves = c});
    if (!analysis) return {"", usage_error(analysis.errors(), o.command), kExitUsage};
    const Curves* curves = &analysis->curves;
    // An end lowered below the --from given (the cache would pass 2^64 bytes before it): refused, never a curve that
    // starts earlier than asked.
    if (o.from && curves->lowered_from > 0 && !curves->tokens.empty() && curves->tokens.back() < *o.from)
        return {"",
                usage_error({{"--from", "the curve starts at " + format_count(*o.from) + " tokens, after its end at " +
                                            format_count(curves->tokens.back()) +
                                            " (past it the cache would pass 2^64 bytes; --to sets the end)"}},
                            o.command),
                kExitUsage};
    Output r;
    if (o.format == Format::json) {
        Value v = curves_json(s, *curves);
        v.set("warnings", Value::strings(curve_warnings(*analysis)));  // the cache's, then a layout left out, …
        r.out = v.dump() + "\n";
        return r;
    }
    // The window's chart exports the same CSV, each column named as the JSON names it.
    if (o.format == Format::csv) {
        r.out = curves_csv(*curves);
        return r;
    }
    std::vector<std::string> head{"tokens"};
    for (const auto& series : curves->series) head.push_back(series.name + (series.is_model ? " *" : ""));
    Table t(head);
    for (std::size_t i = 0; i < curves->tokens.size(); ++i) {
        std::vector<std::string> row{format_tokens(curves->tokens[i])};
        for (const auto& series : curves->series) row.push_back(format_bytes(series.bytes[i], o.units));
        t.add(row);
    }
    r.out =
        header(s, src) + "\n" + t.text() + "(* the model's own layout)\n" + warnings_text(curve_warnings(*analysis));
    return r;
}

Output cmd_fit(const Options& o, const Scenario& s, const ScenarioSource& src, const Catalog& catalog) {
    // A decode step of this scenario measured on the deployment's GPU (probe --step) is shown beside the estimate.
    const std::vector<MeasuredStep> steps = read_measured_steps(measured_steps_path(catalog.user_folder()));
    auto analysis = analyze(s, {.units = o.units, .curves = {}, .with_curves = false, .measured_steps = &steps});
    if (!analysis) return {"", usage_error(analysis.errors(), o.command), kExitUsage};
    if (!analysis->fit || !analysis->decode)
        return {"", usage_error({{"--gpu", "fit needs a deployment"}}, o.command), kExitUsage};
    const FitReport* f = &*analysis->fit;
    const DecodeEstimate* d = &*analysis->decode;
    const MeasuredStep* measured = analysis->measured_step ? &*analysis->measured_step : nullptr;
    Output r;
    if (o.format == Format::json) {
        r.out = with_warnings(fit_report_json(s, *f, *d, measured), src.notes).dump() + "\n";
        return r;
    }
    if (o.format == Format::csv) {
        Table t({"model",
                 "gpu",
                 "gpus",
                 "engine",
                 "context_tokens",
                 "batch",
                 "kv_dtype",
                 "weights_bytes",
                 "kv_budget_bytes",
                 "kv_cache_bytes_per_gpu",
                 "state_bytes_per_gpu",
                 "memory_bytes_needed_per_gpu",
                 "fits",
                 "headroom_bytes_per_gpu",
                 "headroom_from_startup",
                 "vllm_startup_bytes_per_gpu",
                 "max_batch",
                 "max_context",
                 "decode_tokens_per_s",
                 "measured_decode_tokens_per_s"});
        t.add({s.model_id,
               s.deployment->gpu.id,
               std::to_string(f->gpus),
               std::string(to_string(f->engine)),
               std::to_string(s.workload.context_tokens),
               std::to_string(s.workload.batch),
               std::string(to_string(s.kv_dtype)),
               std::to_string(f->weights_bytes),
               std::to_string(f->kv_budget_bytes),
               std::to_string(f->kv_bytes_per_gpu),
               std::to_string(f->state_bytes_per_gpu),
               std::to_string(f->memory_bytes_per_gpu_needed),
               f->fits ? "true" : "false",
               std::to_string(f->headroom_bytes_per_gpu),
               f->headroom_from_startup ? "true" : "false",
               std::to_string(f->startup_bytes_per_gpu),
               std::to_string(f->max_batch),
               f->max_context_unbounded ? std::string() : std::to_string(f->max_context),
               fixed(d->tokens_per_s_total, 1),
               measured ? fixed(measured->tokens_per_s() * static_cast<double>(s.workload.batch), 1) : std::string()});
        r.out = t.csv();
        return r;
    }
    const auto& dep = *s.deployment;
    const UnitSystem u = o.units;
    std::vector<std::pair<std::string, std::string>> rows{
        {"GPUs", std::to_string(f->gpus) + " × " + dep.gpu.name + ", " + format_bytes_both(f->memory_bytes_per_gpu, u) +
                     " each"},
        {"engine", std::string(to_string(dep.engine)) + " (fraction " + fraction_text(f->fraction) +
                       "): " + std::string(budget_rule(dep.engine))},
        {"weights", format_bytes_both(f->weights_bytes, u) +
                        (f->weights_exact            ? ", " + f->weights_source + " ("
                         : dep.gguf_mix              ? " estimated " + weights_text(dep) + " ("
                         : !f->weights_quant.empty() ? " estimated for " + f->weights_quant + ", the rest in " +
                                                           std::string(to_string(dep.weight_dtype)) + " ("
                                                     : " in " + std::string(to_string(dep.weight_dtype)) + " (") +
                        format_si(static_cast<double>(f->parameters)) + " parameters" +
                        (f->parameters_estimated ? ", estimated" : "") + "); " +
                        format_bytes(f->weights_bytes_per_gpu, u) + " per GPU"},
        {"reserved", format_bytes(f->reserve_bytes_per_gpu, u) + " per GPU" +
                         (f->reserve_estimated ? " (estimate)" : "") + ": " + reserve_text(*f, u)},
        {"KV budget", kv_budget_text(*f, u)},
        {"KV needed", f->state_bytes_per_gpu == 0 && f->engine_pages ? format_bytes(f->memory_bytes_per_gpu_needed, u) +
                                                                           " per GPU in vLLM's hybrid layout (plain "
                                                                           "sum " +
                                                                           format_bytes(f->kv_bytes_per_gpu, u) + ")"
                      : f->state_bytes_per_gpu == 0
                          ? format_bytes(f->kv_bytes_per_gpu, u) + " per GPU"
                          : format_bytes(f->memory_bytes_per_gpu_needed, u) + " per GPU" +
                                (f->engine_pages ? " in vLLM's hybrid layout (plain sum " +
                                                       format_bytes(f->plain_memory_bytes_per_gpu, u) + ": "
                                                 : " (") +
                                format_bytes(f->kv_bytes_per_gpu, u) + " KV cache + " +
                                format_bytes(f->state_bytes_per_gpu, u) + " recurrent state)"},
        {"verdict", f->fits ? "FITS with " + format_signed_bytes(f->headroom_bytes_per_gpu, u) + " to spare per GPU"
                    : f->offload && f->offload->host_short_bytes() > 0 && f->headroom_bytes_per_gpu >= 0
                        ? "DOES NOT FIT: the host's RAM is short by " +
                              format_bytes(f->offload->host_short_bytes(), u) + " (the GPU has " +
                              format_signed_bytes(f->headroom_bytes_per_gpu, u) + " to spare)"
                        : "DOES NOT FIT: short by " + format_signed_bytes(-f->headroom_bytes_per_gpu, u) + " per GPU" +
                              (f->headroom_from_startup ? " at vLLM's start check (see the warning)" : "") +
                              (f->short_at_startup ? "; decoding alone would fit" : "")},
        {"max batch", std::to_string(f->max_batch) + (f->max_batch == 1 ? " sequence at " : " sequences at ") +
                          format_tokens(s.workload.context_tokens) + " tokens"},
        {"max context", f->max_context_unbounded
                            ? "no limit: " + f->unbounded_reason
                            : format_count(f->max_context) + " tokens at batch " + std::to_string(s.workload.batch) +
                                  (f->max_context_limited_by_model ? " (the model's limit; memory allows more)" : "")},
        {"cache holds",
         // A draft's layers keep a KV cache beside a state-space model's state.
         s.arch.attention_layers() == 0 && !dep.draft ? "no KV cache"
                                                      : format_count(f->tokens_capacity) + " tokens in all"},
        {"decode floor", decode_floor_text(*d, f->fits)},
    };
    if (f->offload) {
        rows.insert(rows.begin() + 4, {{"split", offload_text(*f->offload)}, {"host", offload_host_text(*f->offload)}});
    }
    if (dep.draft)
        rows.insert(rows.begin() + 3,
                    {"draft", dep.draft->name + " (" + std::string(to_string(dep.draft->method)) +
                                  "): " + format_si(static_cast<double>(f->draft_parameters)) + " parameters, " +
                                  format_bytes_both(f->draft_weights_bytes, u) + " (in the weights above); its KV " +
                                  format_count(f->draft_kv_bytes_per_token) + " bytes a token, " +
                                  format_bytes(f->draft_kv_bytes_per_gpu, u) + " per GPU (in the KV needed)"});
    if (measured != nullptr) rows.emplace_back("decode measured", measured_step_text(*measured, *d));
    rows.insert(
        rows.end(),
        {
            {"bytes per step",
             format_bytes(d->bytes_read_per_step_per_gpu, u) +
                 (d->host_bytes_read_per_step > 0 ? " from the GPU's memory (" : " per GPU (") +
                 format_bytes(d->weight_bytes_read_per_gpu, u) + " weights + " +
                 format_bytes(d->kv_bytes_read_per_gpu, u) + " KV" +
                 (d->state_bytes_read_per_gpu > 0 ? " + " + format_bytes(d->state_bytes_read_per_gpu, u) + " state"
                                                  : std::string()) +
                 ")" +
                 (d->host_bytes_read_per_step > 0
                      ? " + " + format_bytes(d->host_bytes_read_per_step, u) + " from host memory at " +
                            format_bandwidth(d->host_bandwidth_bytes_per_s)
                      : std::string())},
            {"FLOPs/token", format_si(d->flops_per_token_cached) + " with the cache, " +
                                format_si(d->flops_per_token_uncached) + " recomputing the prefix"},
            {"KV > weights", d->kv_exceeds_weights_at_tokens
                                 ? "from " + format_count(*d->kv_exceeds_weights_at_tokens) +
                                       " tokens per sequence at batch " + std::to_string(s.workload.batch)
                             : s.arch.attention_layers() == 0
                                 ? (dep.draft ? "never (the model keeps no KV cache; the draft's is not in the step)"
                                              : "never (no layer keeps a KV cache)")
                                 : "never (sliding windows or chunks cap the cache)"},
        });
    r.out = header(s, src) + "\n" + key_values(rows);
    for (const auto& n : f->notes) r.out += "note: " + n + "\n";
    r.out += warnings_text(f->warnings);
    return r;
}

Output cmd_plan(const Options& o, const Scenario& s, const ScenarioSource& src) {
    PlanLimits limits;
    if (o.gpus_per_node) limits.gpus_per_node = *o.gpus_per_node;
    if (o.max_pp) limits.max_pp = *o.max_pp;
    auto plan = plan_deployments(s.arch, s.kv_dtype, s.workload, *s.deployment, limits);
    if (!plan) {
        return {"", usage_error(plan.errors(), o.command), kExitUsage};
    }
    std::optional<PlanService> service;
    if (o.ttft_ms || o.tpot_ms) {
        if (Errors e = refused_beside_lengths(o); !e.empty()) return {"", usage_error(e, o.command), kExitUsage};
        PlanService p{traffic_question(o), {}};
        auto layouts = serve_plan(s, *plan, p.question);
        if (!layouts) return {"", usage_error(layouts.errors(), o.command), kExitUsage};
        p.layouts = std::move(layouts.value());
        service = std::move(p);
    } else if (o.rate) {
        return {"",
                usage_error({{"--rate",
                              "plan serves a traffic to weigh its layouts against a target: give "
                              "--ttft-ms or --tpot-ms with it"}},
                            o.command),
                kExitUsage};
    }
    Output r;
    if (o.format == Format::json) {
        Value v = plan_json(s, *plan, limits);
        if (service) add_service_json(v, o, *service);
        r.out = with_warnings(std::move(v), src.notes).dump() + "\n";
        return r;
    }
    if (o.format == Format::csv) {
        Table t({"gpus", "tp", "pp", "replicas", "fits", "sequences_per_replica", "headroom_bytes_per_gpu", "max_batch",
                 "max_context", "decode_tokens_per_s_per_sequence", "decode_tokens_per_s"});
        for (const PlanOption& p : plan->options)
            if (!p.dominated)
                t.add({std::to_string(p.gpus), std::to_string(p.tp), std::to_string(p.pp), std::to_string(p.replicas),
                       p.fits ? "true" : "false", std::to_string(p.sequences_per_replica),
                       std::to_string(p.headroom_bytes_per_gpu), std::to_string(p.max_batch),
                       std::to_string(p.max_context), fixed(p.decode_tokens_per_s_per_sequence, 1),
                       fixed(p.decode_tokens_per_s, 1)});
        r.out = t.csv();
        return r;
    }
    const auto& dep = *s.deployment;
    const UnitSystem u = o.units;
    Table t({"GPUs", "TP × PP × replicas", "fits", "headroom per GPU", "max seqs", "max context", "tok/s per seq",
             "tok/s in all"});
    for (const PlanOption& p : plan->options)
        if (!p.dominated)
            t.add({std::to_string(p.gpus), plan_layout_text(p), p.fits ? "yes" : "no",
                   p.fits ? format_signed_bytes(p.headroom_bytes_per_gpu, u) : "—",
                   p.fits ? std::to_string(p.max_batch) : "0",
                   !p.fits ? "—"
                   : p.max_context_unbounded
                       ? "no limit"
                       : format_count(p.max_context) + (p.max_context_limited_by_model ? " (model max)" : ""),
                   p.fits ? fixed(p.decode_tokens_per_s_per_sequence, 1) : "—",
                   p.fits ? fixed(p.decode_tokens_per_s, 0) : "—"});
    std::vector<std::pair<std::string, std::string>> rows{
        {"GPU", dep.gpu.name + ", " + format_bytes_both(dep.gpu.memory_bytes, u) + " each"},
        {"engine", std::string(to_string(dep.engine)) +
                       (default_fraction_per_gpu(dep.engine) && !dep.fraction_given
                            ? std::string(" (fraction: SGLang's own for the GPU and each layout)")
                            : " (fraction " + fraction_text(dep.fraction) + ")")},
        {"weights", weights_text(dep)},
    };
    r.out = header(s, src) + "\n" + key_values(rows) + "\n" + t.text();
    r.out += "max seqs: sequences one replica holds at this context; headroom at the sequences each replica serves\n";
    for (const auto& n : plan->notes) r.out += "note: " + n + "\n";
    for (const PlanOption& p : plan->options)
        if (!p.fits) r.out += "TP " + std::to_string(p.tp) + " × PP " + std::to_string(p.pp) + ": " + p.why_not + "\n";
    if (service) r.out += service_text(*service);
    r.out += warnings_text(plan->warnings);
    return r;
}

}  // namespace

std::string general_help() {
    std::string out =
        "kvscope-cli — KV cache memory, deployment fit and decode cost for transformer models\n\n"
        "usage: kvscope-cli COMMAND [options]\n\ncommands:\n";
    for (std::size_t i = 0; i < kCommandCount; ++i) {
        const auto c = static_cast<Command>(i);
        if (c == Command::window) continue;
        std::string name(to_string(c));
        out += "  " + name + std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') + std::string(command_brief(c)) +
               "\n";
    }
    return out + R"(
Run 'kvscope-cli COMMAND --help' for a command's options; 'kvscope-cli --version' prints the version.
Examples:
  kvscope-cli kv --model llama-3-8b --context 128k --batch 8
  kvscope-cli fit --model llama-3.1-70b --context 32k --batch 16 --gpu h100-sxm --gpus 2 --kv-dtype fp8
  kvscope-cli plan --model llama-3.1-70b --context 32k --batch 64 --gpu h100-sxm --kv-dtype fp8
  kvscope-cli sweep --config ./config.json --csv > curve.csv
)";
}

// `text` in lines of at most `width` characters, broken between words.
std::string wrapped(std::string_view text, std::size_t width = 100) {
    std::string out, line;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view word = text.substr(start, end - start);
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            out += line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + std::string(word);
        start = end + 1;
    }
    return out + line + "\n";
}

std::string command_help(const std::string& command) {
    const auto c = parse_command(command);
    if (!c) return general_help();
    // The usage line and what it does, then the options it takes: all from their declarations (options.cpp).
    return "usage: kvscope-cli " + std::string(command_usage(*c)) + "\n" + wrapped(command_summary(*c)) + "\n" +
           options_help(*c);
}

Output run(const std::vector<std::string>& args) {
    // The version alone, as the window's --version prints its own.
    if (args.size() == 1 && args[0] == "--version")
        return {std::string("kvscope-cli ") + KVSCOPE_VERSION + "\n", "", kExitOk};
    auto parsed = parse_options(args);
    const std::string command = parsed ? parsed->command : (args.empty() ? "" : args[0]);
    if (!parsed) {
        std::string line = usage_error(parsed.errors(), command);
        line.pop_back();  // one line: the problem, then where the options are listed
        return {"", line + " (kvscope-cli " + (command.empty() ? "" : command + " ") + "--help lists the options)\n",
                kExitUsage};
    }
    const Options& o = *parsed;
    if (o.command.empty() || o.command == "help")
        return {general_help(), "", o.command.empty() && !o.help ? kExitUsage : kExitOk};
    if (!o.command_id)
        return {"", "kvscope-cli: unknown command '" + o.command + "' (" + command_list() + ")\n", kExitUsage};
    if (o.help) return {command_help(o.command), "", kExitOk};

    std::vector<std::string> problems;
    const Catalog catalog = Catalog::with_user_folder(o.data_dir.value_or(default_user_folder()), problems);
    std::string warnings;
    for (const auto& p : problems) warnings += "kvscope-cli: skipped from your data folder: " + p + "\n";

    const auto with_scenario = [&](auto&& run) -> Output {
        ScenarioSource src;
        auto s = build_scenario(o, catalog, src);
        if (!s) return {"", usage_error(s.errors(), o.command), kExitUsage};
        if (const Errors e = use_this_host(s.value(), probe::read_this_host, src.notes); !e.empty())
            return {"", usage_error(e, o.command), kExitUsage};
        return run(o, *s, src);
    };
    Output result;
    switch (*o.command_id) {
        case Command::models:
            result = cmd_models(o, catalog);
            break;
        case Command::gpus:
            result = cmd_gpus(o, catalog);
            break;
        case Command::devices:
            result = cmd_devices(o);
            break;
        case Command::stopwatch:
            result = cmd_stopwatch(o);
            break;
        case Command::kv:
            result = with_scenario([](const Options& opts, const Scenario& sc, const ScenarioSource& src) {
                return cmd_kv(opts, sc, src, false);
            });
            break;
        case Command::compare:
            result = with_scenario([](const Options& opts, const Scenario& sc, const ScenarioSource& src) {
                return cmd_kv(opts, sc, src, true);
            });
            break;
        case Command::sweep:
            result = with_scenario(cmd_sweep);
            break;
        case Command::fit:
            result = with_scenario([&catalog](const Options& opts, const Scenario& sc, const ScenarioSource& src) {
                return cmd_fit(opts, sc, src, catalog);
            });
            break;
        case Command::plan:
            result = with_scenario(cmd_plan);
            break;
        case Command::simulate:
            result = with_scenario([&catalog](const Options& opts, const Scenario& sc, const ScenarioSource& src) {
                return cmd_simulate(opts, sc, src, catalog);
            });
            break;
        case Command::probe:
            result = with_scenario([&catalog](const Options& opts, const Scenario& sc, const ScenarioSource& src) {
                return cmd_probe(opts, sc, src, catalog);
            });
            break;
        case Command::window:
            break;  // parse_command never names it
    }
    result.err = warnings + result.err;
    return result;
}

}  // namespace kvscope::cli
