#include "kvscope/calculator/report_json.h"

#include <algorithm>
#include <optional>

#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/weights.h"

namespace kvscope {

using json::Value;

namespace {

// The cache's warnings, then the notes that say a figure is not exact, which the JSON gives as warnings too (as
// kv --json gives its own).
Value warnings_json(const std::vector<std::string>& warnings, const std::vector<std::string>& notes) {
    return Value::strings(warnings_and_not_exact(warnings, notes));
}

Value workload_json(const Scenario& s, Value& out) {
    out.set("context_tokens", Value::number(s.workload.context_tokens));
    out.set("batch", Value::number(s.workload.batch));
    out.set("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
    out.set("block_size", Value::number(s.workload.block_size));
    out.set("full_window", Value::boolean(s.workload.full_window));
    out.set("tp", Value::number(s.parallel.tp));
    out.set("pp", Value::number(s.parallel.pp));
    return out;
}

// A member written as it is: its JSON follows from its type (a count, a signed byte difference, a ratio, a flag, a
// name).
Value plain_json(std::uint64_t n) { return Value::number(n); }
Value plain_json(std::int64_t n) { return Value::number_signed(n); }
Value plain_json(double d) { return Value::number(d); }
Value plain_json(bool b) { return Value::boolean(b); }
Value plain_json(const std::string& text) { return Value::string(text); }

// Writes the members a declaration (fit_members, variant_members) gives a key into a report's object.
struct JsonWriter {
    Value& out;
    template <class M>
    void field(const M& member, const char* key) {
        out.set(key, plain_json(member));
    }
    template <class M>
    void value(const M&, const char* key, Value v) {
        out.set(key, std::move(v));
    }
    template <class M>
    void elsewhere(const M&, const char*) {}
};

// Lists a declaration's members, with their keys or where they are given instead (the tests read it).
struct MemberList {
    std::vector<DeclaredMember> members;
    template <class M>
    void field(const M& member, const char* key) {
        members.push_back({&member, sizeof(M), key, ""});
    }
    template <class M>
    void value(const M& member, const char* key, const Value&) {
        members.push_back({&member, sizeof(M), key, ""});
    }
    template <class M>
    void elsewhere(const M& member, const char* where) {
        members.push_back({&member, sizeof(M), "", where});
    }
};

// Every member of PlanOption once, in the order each entry of a plan's `options` writes them.
template <class V>
void plan_option_members(const PlanOption& p, V& v) {
    v.field(p.tp, "tp");
    v.field(p.pp, "pp");
    v.field(p.replicas, "replicas");
    v.field(p.gpus, "gpus");
    v.field(p.fits, "fits");
    // More GPUs than a layout above, no faster: not listed in the tables, kept here flagged.
    v.field(p.dominated, "dominated");
    v.field(p.sequences_per_replica, "sequences_per_replica");
    v.field(p.headroom_bytes_per_gpu, "headroom_bytes_per_gpu");
    v.field(p.max_batch, "max_batch");
    v.value(p.max_context, "max_context", p.max_context_unbounded ? Value() : Value::number(p.max_context));
    v.elsewhere(p.max_context_unbounded, "max_context: null");
    v.field(p.max_context_limited_by_model, "max_context_limited_by_model");
    v.field(p.decode_tokens_per_s_per_sequence, "decode_tokens_per_s_per_sequence");
    v.field(p.decode_tokens_per_s, "decode_tokens_per_s");
    v.value(p.why_not, "why_not", p.fits ? Value() : Value::string(p.why_not));
}

// Every member of Variant once, in the order its JSON object writes them (as fit_members for FitReport).
template <class V>
void variant_members(const Variant& x, V& v) {
    v.field(x.name, "name");
    v.elsewhere(x.series, "not in the JSON: the chart's line for it, which the name names");
    v.elsewhere(x.kind, "not in the JSON: the name says it (MHA, GQA-8, MQA, MLA)");
    v.field(x.kv_heads, "kv_heads");
    v.field(x.kv_cache_bytes, "kv_cache_bytes");
    v.field(x.bytes_per_token, "bytes_per_token");
    v.field(x.state_bytes, "state_bytes");
    v.field(x.percent_of_mha, "percent_of_mha");
    v.field(x.is_model, "is_model");
    v.field(x.replication, "replication");
}

}  // namespace

Value architecture_report_json(const Architecture& a) {
    // Every member as a scenario file holds it, then what follows from them.
    Value o = architecture_json(a);
    o.set("head_dim", Value::number(a.head_dim_k));  // reports before head_dim_k named it so
    o.set("attention",
          Value::string(a.attention_layers() == 0 ? std::string("none") : std::string(to_string(attention_kind(a)))));
    o.set("sliding_window_layers", Value::number(a.count_layers(LayerKind::sliding)));
    // Layers by what they keep (MLA models' full-attention layers are "mla").
    Value kinds = Value::object();
    for (const LayerKind k : {LayerKind::full, LayerKind::sliding, LayerKind::chunked, LayerKind::shared,
                              LayerKind::recurrent, LayerKind::none}) {
        const std::uint64_t n = a.count_layers(k);
        if (n > 0) kinds.set(std::string(layer_kind_name(a, k)), Value::number(n));
    }
    o.set("layer_kinds", std::move(kinds));
    o.set("layer_mix", Value::string(layer_mix_text(a)));
    if (const Value* state = o.find("recurrent_state")) {
        Value m = *state;
        m.set("layers", Value::number(a.state_layers()));
        o.set("recurrent_state", std::move(m));
    }
    const ParameterCount p = parameters(a);
    o.set("parameters", Value::number(p.total));
    o.set("active_parameters", Value::number(p.active));
    o.set("parameters_estimated", Value::boolean(p.estimated));
    return o;
}

Value variants_json(const std::vector<Variant>& variants) {
    Value list = Value::array();
    for (const auto& v : variants) {
        Value o = Value::object();
        JsonWriter writer{o};
        variant_members(v, writer);
        list.push(std::move(o));
    }
    return list;
}

Value kv_report_json(const Scenario& s, const KvCacheReport& kv, const std::vector<Variant>& variants) {
    Value o = Value::object();
    o.set("model", Value::string(s.model_id));
    o.set("kv_cache_bytes", Value::number(kv.total_bytes));
    o.set("kv_cache_bytes_per_gpu", Value::number(kv.per_gpu_bytes));
    o.set("bytes_per_sequence", Value::number(kv.per_sequence_bytes));
    o.set("bytes_per_token", Value::number(kv.bytes_per_token));
    o.set("bytes_per_token_per_gpu", Value::number(kv.bytes_per_token_per_gpu));
    o.set("state_bytes", Value::number(kv.state_bytes));
    o.set("state_bytes_per_sequence", Value::number(kv.state_bytes_per_sequence));
    o.set("state_bytes_per_gpu", Value::number(kv.state_bytes_per_gpu));
    o.set("memory_bytes", Value::number(kv.memory_bytes));
    o.set("memory_bytes_per_gpu", Value::number(kv.memory_bytes_per_gpu));
    workload_json(s, o);
    o.set("gpus", Value::number(kv.gpus));
    o.set("kv_heads_per_gpu", Value::number(kv.kv_heads_per_gpu));
    o.set("replication", Value::number(kv.replication));
    o.set("architecture", architecture_report_json(s.arch));
    o.set("variants", variants_json(variants));
    Value layers = Value::array();
    for (const auto& l : kv.layers) {
        Value x = Value::object();
        x.set("layer", Value::number(l.layer));
        x.set("kind", Value::string(std::string(layer_kind_name(s.arch, l.kind))));
        // Tokens the layer keeps: null = all of them; 0 for a layer that keeps no KV of its own.
        const bool caches = l.kind == LayerKind::full || l.kind == LayerKind::sliding || l.kind == LayerKind::chunked;
        x.set("window", caches && l.window == 0 ? Value() : Value::number(caches ? l.window : 0));
        x.set("stored_tokens", Value::number(l.stored_tokens));
        x.set("bytes", Value::number(l.bytes));
        x.set("state_bytes", Value::number(l.state_bytes));
        layers.push(std::move(x));
    }
    o.set("layers", std::move(layers));
    o.set("warnings", Value::strings(kv.warnings));
    return o;
}

namespace {

// The settings vLLM's startup profile was taken with: given, or vLLM's defaults for the version and GPU.
Value vllm_settings_json(const Scenario& s) {
    const Deployment& dep = *s.deployment;
    const VllmBatch b = vllm_batch(s.workload, dep);
    Value v = Value::object();
    v.set("version", Value::string("0." + std::to_string(vllm_minor(dep))));
    v.set("max_num_batched_tokens", Value::number(b.max_num_batched_tokens));
    v.set("max_num_seqs", Value::number(b.max_num_seqs));
    v.set("sampled_sequences", Value::number(b.sampled_sequences));
    v.set("enforce_eager", Value::boolean(dep.vllm.enforce_eager));
    v.set("fixed_reserve", Value::boolean(dep.fixed_reserve));
    return v;
}

// The deployment's weight format, the checkpoint's quantization when it has one, vLLM's startup settings and the
// draft model; with a fit `f`, what it counted (quantized parameters, the draft's weights and KV).
void weights_and_engine_settings(const Scenario& s, Value& o, const FitReport* f) {
    const Deployment& dep = *s.deployment;
    o.set("weight_dtype", Value::string(std::string(to_string(dep.weight_dtype))));
    if (dep.weight_quant && dep.weights_bytes_exact == 0) {
        const WeightQuant q = loaded_weight_quant(dep);
        Value w = Value::object();
        w.set("method", Value::string(q.method));
        w.set("scheme", Value::string(weight_quant_label(q)));
        w.set("bits", Value::number(q.bits));
        w.set("group", q.per_row ? Value::string("row") : Value::number(q.group));
        w.set("scale_bits", Value::number(q.scale_bits));
        w.set("zero_bits", Value::number(q.zero_bits));
        w.set("experts_only", Value::boolean(q.experts_only));
        w.set("lm_head", Value::boolean(q.lm_head));
        if (f) w.set("quantized_parameters", Value::number(f->weights_quantized_parameters));
        o.set("weight_quantization", std::move(w));
    }
    if (dep.engine == Engine::vllm) o.set("vllm", vllm_settings_json(s));
    if (dep.engine == Engine::llama_cpp) {
        Value l = Value::object();
        l.set("ubatch", Value::number(llama_cpp_ubatch(dep)));
        l.set("flash_attn", Value::boolean(!dep.llama_cpp.flash_attn_off));
        l.set("fixed_reserve", Value::boolean(dep.fixed_reserve));
        o.set("llama_cpp", std::move(l));
    }
    if (dep.engine == Engine::tensorrt_llm) {
        Value t = Value::object();
        t.set("max_num_tokens", Value::number(trtllm_max_num_tokens(dep)));
        t.set("fixed_reserve", Value::boolean(dep.fixed_reserve));
        o.set("tensorrt_llm", std::move(t));
    }
    // A separate draft model: which, and how served; with a fit, what it takes.
    if (dep.draft) {
        Value dr = Value::object();
        dr.set("name", Value::string(dep.draft->name));
        dr.set("method", Value::string(std::string(to_string(dep.draft->method))));
        dr.set("layers", Value::number(dep.draft->arch.layers));
        if (f) {
            dr.set("parameters", Value::number(f->draft_parameters));
            dr.set("parameters_estimated", Value::boolean(f->draft_parameters_estimated));
            dr.set("weights_bytes", Value::number(f->draft_weights_bytes));
            dr.set("weights_bytes_per_gpu", Value::number(f->draft_weights_bytes_per_gpu));
            dr.set("weights_exact", Value::boolean(dep.draft->weights_bytes_exact > 0));
            dr.set("kv_bytes_per_token", Value::number(f->draft_kv_bytes_per_token));
            dr.set("kv_bytes_per_gpu", Value::number(f->draft_kv_bytes_per_gpu));
        }
        o.set("draft", std::move(dr));
    } else {
        o.set("draft", Value());
    }
}

// vLLM's hybrid page layout as the fit's JSON gives it (null when it does not apply).
Value hybrid_layout_json(const std::optional<HybridPages>& pages) {
    if (!pages) return Value();
    Value p = Value::object();
    p.set("attention_block_tokens", Value::number(pages->attention_block));
    p.set("page_bytes", Value::number(pages->page_bytes));
    p.set("state_bytes_per_layer", Value::number(pages->state_bytes));
    p.set("group_size",
          Value::number(pages->model_group_size > 0 ? pages->model_group_size : pages->stages.front().group_size));
    p.set("attention_groups", Value::number(pages->stages.front().attention_groups));
    p.set("state_groups", Value::number(pages->stages.front().state_groups));
    p.set("sliding_groups", Value::number(pages->stages.front().sliding_groups));
    p.set("sliding_window_tokens", Value::number(pages->window));
    // What the windowed groups hold: "sliding" windows, or "chunked" local attention (the window is the chunk).
    p.set("windowed_layers", pages->window == 0 ? Value() : Value::string(pages->chunked ? "chunked" : "sliding"));
    return p;
}

Value reserve_items_json(const std::vector<ReserveItem>& reserve_items) {
    Value items = Value::array();
    for (const ReserveItem& item : reserve_items) {
        Value it = Value::object();
        it.set("name", Value::string(item.name));
        it.set("bytes", Value::number(item.bytes));
        it.set("how", Value::string(item.how));
        items.push(std::move(it));
    }
    return items;
}

// Every member of FitReport once, in the order the fit's JSON writes them: its key and value, or where the report
// gives it instead (the deployment's keys, the draft's object, the notes) or why it is not in the JSON. A member
// added to FitReport and not here fails ReportJson.EveryFitReportMemberIsDeclaredOnce.
template <class V>
void fit_members(const FitReport& f, V& v) {
    v.elsewhere(f.engine, "engine: the deployment's");
    v.elsewhere(f.gpus, "gpu_count: the deployment's");
    v.elsewhere(f.fraction, "utilization, beside the deployment's keys");
    v.elsewhere(f.weights_quant, "weight_quantization.scheme");
    v.elsewhere(f.weights_quantized_parameters, "weight_quantization.quantized_parameters");
    v.elsewhere(f.draft_parameters, "draft.parameters");
    v.elsewhere(f.draft_parameters_estimated, "draft.parameters_estimated");
    v.elsewhere(f.draft_weights_bytes, "draft.weights_bytes");
    v.elsewhere(f.draft_weights_bytes_per_gpu, "draft.weights_bytes_per_gpu");
    v.elsewhere(f.draft_kv_bytes_per_token, "draft.kv_bytes_per_token");
    v.elsewhere(f.draft_kv_bytes_per_gpu, "draft.kv_bytes_per_gpu");
    v.field(f.memory_bytes_per_gpu, "memory_bytes_per_gpu");
    v.field(f.parameters, "parameters");
    v.field(f.parameters_estimated, "parameters_estimated");
    v.field(f.weights_bytes, "weights_bytes");
    v.field(f.weights_bytes_per_gpu, "weights_bytes_per_gpu");
    v.field(f.weights_exact, "weights_exact");
    if (f.weights_exact)
        v.field(f.weights_source, "weights_source");
    else
        v.elsewhere(f.weights_source, "weights_source: only where the weights are exact");
    v.field(f.reserve_bytes_per_gpu, "reserve_bytes_per_gpu");
    v.value(f.reserve_items, "reserve_items", reserve_items_json(f.reserve_items));
    v.field(f.reserve_estimated, "reserve_estimated");
    v.field(f.kv_budget_bytes, "kv_budget_bytes");
    v.field(f.kv_budget_bytes_per_gpu, "kv_budget_bytes_per_gpu");
    v.field(f.kv_bytes_per_gpu, "kv_cache_bytes_per_gpu");
    v.field(f.state_bytes_per_gpu, "state_bytes_per_gpu");
    v.field(f.memory_bytes_per_gpu_needed, "memory_bytes_needed_per_gpu");
    v.field(f.plain_memory_bytes_per_gpu, "plain_memory_bytes_per_gpu");
    v.value(f.engine_pages, "vllm_hybrid_layout", hybrid_layout_json(f.engine_pages));
    v.field(f.startup_bytes_per_gpu, "vllm_startup_bytes_per_gpu");
    v.field(f.short_at_startup, "short_at_startup");
    v.field(f.headroom_from_startup, "headroom_from_startup");
    v.field(f.fits, "fits");
    v.field(f.headroom_bytes_per_gpu, "headroom_bytes_per_gpu");
    v.elsewhere(f.free_bytes_per_gpu, "not in the JSON: memory_bytes_per_gpu less the budget and reserve");
    v.field(f.max_batch, "max_batch");
    // null: no limit
    v.value(f.max_context, "max_context", f.max_context_unbounded ? Value() : Value::number(f.max_context));
    v.elsewhere(f.max_context_unbounded, "max_context: null");
    v.elsewhere(f.unbounded_reason, "not in the JSON: max_context null, and the text's reason");
    v.field(f.max_context_limited_by_model, "max_context_limited_by_model");
    v.field(f.tokens_capacity, "tokens_capacity");
    v.elsewhere(f.notes, "notes, after the decode figures");
    v.elsewhere(f.warnings, "warnings, after the notes");
}

}  // namespace

std::vector<DeclaredMember> variant_report_members(const Variant& v) {
    MemberList list;
    variant_members(v, list);
    return list.members;
}

std::vector<DeclaredMember> plan_option_report_members(const PlanOption& p) {
    MemberList list;
    plan_option_members(p, list);
    return list.members;
}

std::vector<DeclaredMember> fit_report_members(const FitReport& f) {
    MemberList list;
    fit_members(f, list);
    return list.members;
}

Value fit_report_json(const Scenario& s, const FitReport& f, const DecodeEstimate& d, const MeasuredStep* measured) {
    Value o = Value::object();
    o.set("model", Value::string(s.model_id));
    workload_json(s, o);
    if (s.deployment) {
        o.set("gpu", Value::string(s.deployment->gpu.id));
        o.set("gpu_name", Value::string(s.deployment->gpu.name));
        o.set("gpu_count", Value::number(s.deployment->gpu_count));
        o.set("engine", Value::string(std::string(to_string(s.deployment->engine))));
        o.set("utilization", Value::number(f.fraction));
        weights_and_engine_settings(s, o, &f);
    }
    JsonWriter writer{o};
    fit_members(f, writer);
    o.set("weight_bytes_read_per_step_per_gpu", Value::number(d.weight_bytes_read_per_gpu));
    o.set("kv_bytes_read_per_step_per_gpu", Value::number(d.kv_bytes_read_per_gpu));
    o.set("state_bytes_read_per_step_per_gpu", Value::number(d.state_bytes_read_per_gpu));
    o.set("decode_step_ms", Value::number(d.step_time_floor_s * 1e3));
    o.set("decode_tokens_per_s", Value::number(d.tokens_per_s_total));
    o.set("decode_tokens_per_s_per_sequence", Value::number(d.tokens_per_s_per_sequence));
    o.set("flops_per_token_cached", Value::number(d.flops_per_token_cached));
    o.set("flops_per_token_uncached", Value::number(d.flops_per_token_uncached));
    if (d.kv_exceeds_weights_at_tokens)
        o.set("kv_exceeds_weights_at_tokens", Value::number(*d.kv_exceeds_weights_at_tokens));
    else
        o.set("kv_exceeds_weights_at_tokens", Value());
    if (measured != nullptr) {
        Value m = measured_step_json(*measured);
        // The estimate over the measured step: 1 when the GPU decodes at the bandwidth floor, less when slower.
        m.set("fraction_of_estimate",
              Value::number(measured->step_ms > 0 ? d.step_time_floor_s * 1e3 / measured->step_ms : 0));
        o.set("measured_step", std::move(m));
    } else {
        o.set("measured_step", Value());
    }
    o.set("notes", Value::strings(f.notes));
    o.set("warnings", warnings_json(f.warnings, f.notes));
    return o;
}

std::vector<std::string> warnings_and_not_exact(const std::vector<std::string>& warnings,
                                                const std::vector<std::string>& notes) {
    std::vector<std::string> out = warnings;
    for (const std::string& n : notes)
        if (n.starts_with("not exact:") && std::find(warnings.begin(), warnings.end(), n) == warnings.end())
            out.push_back(n);
    return out;
}

Value with_warnings(Value report, const std::vector<std::string>& more) {
    if (more.empty()) return report;
    Value warnings = Value::array();
    if (const Value* old = report.find("warnings"); old && old->is_array())
        for (const Value& w : old->items()) warnings.push(w);
    for (const std::string& w : more) warnings.push(Value::string(w));
    report.set("warnings", std::move(warnings));
    return report;
}

Value curves_json(const Scenario& s, const Curves& c) {
    Value o = Value::object();
    o.set("model", Value::string(s.model_id));
    workload_json(s, o);
    Value tokens = Value::array();
    for (auto t : c.tokens) tokens.push(Value::number(t));
    o.set("tokens", std::move(tokens));
    Value series = Value::array();
    for (const auto& curve : c.series) {
        Value x = Value::object();
        x.set("name", Value::string(curve.name));
        x.set("is_model", Value::boolean(curve.is_model));
        // kv_cache_bytes is the attention KV alone, as everywhere; memory_bytes adds the flat recurrent state.
        Value bytes = Value::array(), memory = Value::array();
        for (auto b : curve.bytes) {
            bytes.push(Value::number(b - curve.state_bytes));
            memory.push(Value::number(b));
        }
        x.set("kv_cache_bytes", std::move(bytes));
        x.set("state_bytes", Value::number(curve.state_bytes));
        x.set("memory_bytes", std::move(memory));
        series.push(std::move(x));
    }
    o.set("series", std::move(series));
    return o;
}

Value plan_json(const Scenario& s, const Plan& plan, const PlanLimits& limits) {
    Value o = Value::object();
    o.set("model", Value::string(s.model_id));
    o.set("context_tokens", Value::number(s.workload.context_tokens));
    o.set("sequences", Value::number(plan.sequences));
    o.set("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
    o.set("block_size", Value::number(s.workload.block_size));
    if (s.deployment) {
        o.set("gpu", Value::string(s.deployment->gpu.id));
        o.set("gpu_name", Value::string(s.deployment->gpu.name));
        o.set("engine", Value::string(std::string(to_string(s.deployment->engine))));
        // SGLang's own default differs per layout: null then (each option's fit applies its own).
        o.set("utilization", default_fraction_per_gpu(s.deployment->engine) && !s.deployment->fraction_given
                                 ? Value()
                                 : Value::number(s.deployment->fraction));
        weights_and_engine_settings(s, o, nullptr);
    }
    o.set("gpus_per_node", Value::number(limits.gpus_per_node));
    o.set("max_pp", Value::number(limits.max_pp));
    Value options = Value::array();
    for (const PlanOption& p : plan.options) {
        Value x = Value::object();
        JsonWriter writer{x};
        plan_option_members(p, writer);
        options.push(std::move(x));
    }
    o.set("options", std::move(options));
    o.set("notes", Value::strings(plan.notes));
    o.set("warnings", warnings_json(plan.warnings, plan.notes));
    return o;
}

}  // namespace kvscope
