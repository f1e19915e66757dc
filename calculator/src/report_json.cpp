#include "kvscope/calculator/report_json.h"

#include <algorithm>
#include <optional>

#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/json_members.h"
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

// The workload's keys, which every report gives beside its own members.
template <class V>
void workload_keys(const Scenario& s, V& v) {
    v.also("context_tokens", Value::number(s.workload.context_tokens));
    v.also("batch", Value::number(s.workload.batch));
    v.also("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
    v.also("block_size", Value::number(s.workload.block_size));
    v.also("full_window", Value::boolean(s.workload.full_window));
    v.also("tp", Value::number(s.parallel.tp));
    v.also("pp", Value::number(s.parallel.pp));
}

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

// Every member of LayerKv once, as each entry of the kv report's `layers` writes them (`arch` names the kind).
template <class V>
void layer_members(const LayerKv& l, const Architecture& arch, V& v) {
    v.field(l.layer, "layer");
    v.value(l.kind, "kind", Value::string(std::string(layer_kind_name(arch, l.kind))));
    // Tokens the layer keeps: null = all of them; 0 for a layer that keeps no KV of its own.
    const bool caches = l.kind == LayerKind::full || l.kind == LayerKind::sliding || l.kind == LayerKind::chunked;
    v.value(l.window, "window", caches && l.window == 0 ? Value() : Value::number(caches ? l.window : 0));
    v.field(l.stored_tokens, "stored_tokens");
    v.field(l.bytes, "bytes");
    v.field(l.state_bytes, "state_bytes");
}

// Every member of KvCacheReport once, in the order `kv --json` writes them, with the scenario's keys among them.
template <class V>
void kv_members(const KvCacheReport& kv, const Scenario& s, const std::vector<Variant>& variants, V& v) {
    v.also("model", Value::string(s.model_id));
    v.field(kv.total_bytes, "kv_cache_bytes");
    v.field(kv.per_gpu_bytes, "kv_cache_bytes_per_gpu");
    v.field(kv.per_sequence_bytes, "bytes_per_sequence");
    v.field(kv.bytes_per_token, "bytes_per_token");
    v.field(kv.bytes_per_token_per_gpu, "bytes_per_token_per_gpu");
    v.field(kv.state_bytes, "state_bytes");
    v.field(kv.state_bytes_per_sequence, "state_bytes_per_sequence");
    v.field(kv.state_bytes_per_gpu, "state_bytes_per_gpu");
    v.field(kv.memory_bytes, "memory_bytes");
    v.field(kv.memory_bytes_per_gpu, "memory_bytes_per_gpu");
    workload_keys(s, v);
    v.field(kv.gpus, "gpus");
    v.field(kv.kv_heads_per_gpu, "kv_heads_per_gpu");
    v.field(kv.replication, "replication");
    v.also("architecture", architecture_report_json(s.arch));
    v.also("variants", variants_json(variants));
    Value layers = Value::array();
    for (const LayerKv& l : kv.layers)
        layers.push(members_json(l, [&](const LayerKv& r, auto& w) { layer_members(r, s.arch, w); }));
    v.value(kv.layers, "layers", std::move(layers));
    v.field(kv.warnings, "warnings");
    v.elsewhere(kv.exact, "not in the JSON: a warning that starts \"not exact:\" says so");
}

// Every member of Curve once, as each entry of the curves' `series` writes them.
template <class V>
void curve_members(const Curve& curve, V& v) {
    v.field(curve.name, "name");
    v.elsewhere(curve.series, "not in the JSON: the name says it");
    v.field(curve.is_model, "is_model");
    v.elsewhere(curve.replication, "not in the JSON: the kv report's variants give it");
    // kv_cache_bytes is the attention KV alone, as everywhere; memory_bytes adds the flat recurrent state.
    Value bytes = Value::array(), memory = Value::array();
    for (const std::uint64_t b : curve.bytes) {
        bytes.push(Value::number(b - curve.state_bytes));
        memory.push(Value::number(b));
    }
    v.value(curve.bytes, "kv_cache_bytes", std::move(bytes));
    v.field(curve.state_bytes, "state_bytes");
    v.also("memory_bytes", std::move(memory));
}

// Every member of Curves once, in the order `curves --json` writes them, with the scenario's keys before them.
template <class V>
void curves_members(const Curves& c, const Scenario& s, V& v) {
    v.also("model", Value::string(s.model_id));
    workload_keys(s, v);
    Value tokens = Value::array();
    for (const std::uint64_t t : c.tokens) tokens.push(Value::number(t));
    v.value(c.tokens, "tokens", std::move(tokens));
    Value series = Value::array();
    for (const Curve& curve : c.series)
        series.push(members_json(curve, [](const Curve& r, auto& w) { curve_members(r, w); }));
    v.value(c.series, "series", std::move(series));
    v.elsewhere(c.lowered_from, "not in the JSON: the last of `tokens`, and the text's note");
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
    for (const Variant& v : variants)
        list.push(members_json(v, [](const Variant& r, auto& w) { variant_members(r, w); }));
    return list;
}

Value kv_report_json(const Scenario& s, const KvCacheReport& kv, const std::vector<Variant>& variants) {
    return members_json(kv, [&](const KvCacheReport& r, auto& v) { kv_members(r, s, variants, v); });
}

namespace {

// The settings vLLM's startup profile was taken with: given, or vLLM's defaults for the version and GPU.
Value vllm_settings_json(const Scenario& s) {
    const Deployment& dep = *s.deployment;
    const VllmBatch b = vllm_batch(s.workload, dep);
    Value v = Value::object();
    v.set("version", Value::string(vllm_version_text(dep)));
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
    // A GGUF mix the weights are estimated for (gguf_mix.h), null otherwise.
    o.set("gguf_mix", dep.gguf_mix && dep.weights_bytes_exact == 0
                          ? Value::string(std::string(to_string(*dep.gguf_mix)))
                          : Value());
    if (dep.engine == Engine::vllm) o.set("vllm", vllm_settings_json(s));
    if (runs_llama_cpp(dep.engine)) {
        Value l = Value::object();
        // The micro-batch the fit took; Ollama's own choice, made for each fit's context, is null without one.
        if (f && f->ubatch > 0)
            l.set("ubatch", Value::number(f->ubatch));
        else if (dep.engine == Engine::ollama && dep.llama_cpp.ubatch == 0)
            l.set("ubatch", Value());
        else
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

// llama.cpp's split between the GPU and the host (offload.h), null where it does not apply.
template <class V>
void offload_members(const Offload& o, V& v) {
    v.field(o.gpu_layers, "gpu_layers");
    v.field(o.total_layers, "total_layers");
    v.field(o.gpu_layers_given, "gpu_layers_given");
    v.field(o.gpu_layers_auto, "gpu_layers_auto");
    v.field(o.most_gpu_layers, "most_gpu_layers");
    v.field(o.most_fit_host, "most_fit_host");
    v.field(o.cpu_moe_layers, "cpu_moe_layers");
    v.field(o.kv_offload, "kv_offload");
    v.field(o.weights_gpu_bytes, "weights_gpu_bytes");
    v.field(o.weights_host_bytes, "weights_host_bytes");
    v.field(o.kv_on_gpu_bytes, "kv_on_gpu_bytes");
    v.field(o.kv_on_host_bytes, "kv_on_host_bytes");
    v.elsewhere(o.state_on_gpu_bytes, "state_bytes_per_gpu: the fit's, of kv_on_gpu_bytes");
    v.field(o.state_on_host_bytes, "state_on_host_bytes");
    v.field(o.input_bytes, "input_bytes");
    v.field(o.compute_buffer_gpu_bytes, "compute_buffer_gpu_bytes");
    v.field(o.compute_buffer_host_bytes, "compute_buffer_host_bytes");
    v.field(o.overhead_gpu_bytes, "overhead_gpu_bytes");
    v.field(o.gpu_bytes, "gpu_bytes");
    v.field(o.host_bytes, "host_bytes");
    v.field(o.gpu_usable_bytes, "gpu_usable_bytes");
    v.field(o.host_memory_bytes, "host_memory_bytes");
    v.field(o.fits_gpu, "fits_gpu");
    v.field(o.fits_host, "fits_host");
    v.field(o.host_bandwidth_bytes_per_s, "host_bandwidth_bytes_per_s");
    v.field(o.read_gpu_bytes, "read_gpu_bytes_per_step");
    v.field(o.read_host_bytes, "read_host_bytes_per_step");
    v.field(o.step_time_s, "step_time_s");
    v.field(o.decode_tokens_per_s, "decode_tokens_per_s");
    v.field(o.weights_exact, "weights_exact");
    v.elsewhere(o.notes, "notes: the fit's");
}

Value offload_json(const std::optional<Offload>& o) {
    if (!o) return {};
    return members_json(*o, [](const Offload& x, auto& w) { offload_members(x, w); });
}

// Every member of FitReport once, in the order the fit's JSON writes them: its key and value, or where the report
// gives it instead (the deployment's keys, the draft's object, the notes) or why it is not in the JSON. A member
// added to FitReport and not here fails ReportJson.EveryFitReportMemberIsDeclaredOnce.
template <class V>
void fit_members(const FitReport& f, V& v) {
    v.elsewhere(f.engine, "engine: the deployment's");
    v.elsewhere(f.ubatch, "llama_cpp.ubatch");
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
    v.value(f.offload, "offload", offload_json(f.offload));
    v.elsewhere(f.notes, "notes, after the decode figures");
    v.elsewhere(f.warnings, "warnings, after the notes");
}

// Every member of Plan once, in the order `plan --json` writes them, with the scenario's and the limits' keys.
template <class V>
void plan_members(const Plan& plan, const Scenario& s, const PlanLimits& limits, V& v) {
    v.also("model", Value::string(s.model_id));
    v.also("context_tokens", Value::number(s.workload.context_tokens));
    v.field(plan.sequences, "sequences");
    v.also("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
    v.also("block_size", Value::number(s.workload.block_size));
    if (s.deployment) {
        v.also("gpu", Value::string(s.deployment->gpu.id));
        v.also("gpu_name", Value::string(s.deployment->gpu.name));
        v.also("engine", Value::string(std::string(to_string(s.deployment->engine))));
        // SGLang's own default differs per layout: null then (each option's fit applies its own).
        v.also("utilization", default_fraction_per_gpu(s.deployment->engine) && !s.deployment->fraction_given
                                  ? Value()
                                  : Value::number(s.deployment->fraction));
        Value settings = Value::object();
        weights_and_engine_settings(s, settings, nullptr);
        for (const auto& [key, value] : settings.members()) v.also(key.c_str(), value);
    }
    v.also("gpus_per_node", Value::number(limits.gpus_per_node));
    v.also("max_pp", Value::number(limits.max_pp));
    Value options = Value::array();
    for (const PlanOption& p : plan.options)
        options.push(members_json(p, [](const PlanOption& r, auto& w) { plan_option_members(r, w); }));
    v.value(plan.options, "options", std::move(options));
    v.field(plan.notes, "notes");
    v.elsewhere(plan.scope_note, "notes: one of them, on its own for the window's caption");
    v.elsewhere(plan.dominated_note, "notes: one of them, on its own for the window's caption");
    v.value(plan.warnings, "warnings", warnings_json(plan.warnings, plan.notes));
}

}  // namespace

std::vector<DeclaredMember> declared_members(const FitReport& f) {
    return list_members(f, [](const FitReport& r, auto& v) { fit_members(r, v); });
}
std::vector<DeclaredMember> declared_members(const Variant& x) {
    return list_members(x, [](const Variant& r, auto& v) { variant_members(r, v); });
}
std::vector<DeclaredMember> declared_members(const PlanOption& p) {
    return list_members(p, [](const PlanOption& r, auto& v) { plan_option_members(r, v); });
}
std::vector<DeclaredMember> declared_members(const LayerKv& l) {
    return list_members(l, [](const LayerKv& r, auto& v) { layer_members(r, Architecture{}, v); });
}
std::vector<DeclaredMember> declared_members(const KvCacheReport& kv) {
    return list_members(kv, [](const KvCacheReport& r, auto& v) { kv_members(r, Scenario{}, {}, v); });
}
std::vector<DeclaredMember> declared_members(const Curve& c) {
    return list_members(c, [](const Curve& r, auto& v) { curve_members(r, v); });
}
std::vector<DeclaredMember> declared_members(const Curves& c) {
    return list_members(c, [](const Curves& r, auto& v) { curves_members(r, Scenario{}, v); });
}
std::vector<DeclaredMember> declared_members(const Plan& p) {
    return list_members(p, [](const Plan& r, auto& v) { plan_members(r, Scenario{}, PlanLimits{}, v); });
}

Value fit_report_json(const Scenario& s, const FitReport& f, const DecodeEstimate& d, const MeasuredStep* measured) {
    Value o = Value::object();
    o.set("model", Value::string(s.model_id));
    JsonWriter writer{o};
    workload_keys(s, writer);
    if (s.deployment) {
        o.set("gpu", Value::string(s.deployment->gpu.id));
        o.set("gpu_name", Value::string(s.deployment->gpu.name));
        o.set("gpu_count", Value::number(s.deployment->gpu_count));
        o.set("engine", Value::string(std::string(to_string(s.deployment->engine))));
        o.set("utilization", Value::number(f.fraction));
        weights_and_engine_settings(s, o, &f);
    }
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
    return members_json(c, [&](const Curves& r, auto& v) { curves_members(r, s, v); });
}

Value plan_json(const Scenario& s, const Plan& plan, const PlanLimits& limits) {
    return members_json(plan, [&](const Plan& r, auto& v) { plan_members(r, s, limits, v); });
}

}  // namespace kvscope
