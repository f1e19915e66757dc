#include "kvscope/calculator/scenario_file.h"

#include <algorithm>
#include <functional>

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/report_json.h"

namespace kvscope {

using json::Value;

namespace {

Value u64(std::uint64_t n) { return Value::number(n); }

Value architecture_value(const Architecture& a) {
    Value o = Value::object();
    o.set("name", Value::string(a.name));
    o.set("layers", u64(a.layers));
    o.set("query_heads", u64(a.query_heads));
    o.set("kv_heads", u64(a.kv_heads));
    o.set("head_dim_k", u64(a.head_dim_k));
    o.set("head_dim_v", u64(a.head_dim_v));
    o.set("hidden_size", u64(a.hidden_size));
    if (!a.layer_specs.empty()) {
        // One object a layer, with only what differs from a full-attention layer of the model's heads.
        Value specs = Value::array();
        for (const LayerSpec& l : a.layer_specs) {
            Value spec = Value::object();
            spec.set("kind", Value::string(std::string(to_string(l.kind))));
            if (l.window) spec.set("window", u64(l.window));
            if (l.kv_heads) spec.set("kv_heads", u64(l.kv_heads));
            if (l.head_dim_k) spec.set("head_dim_k", u64(l.head_dim_k));
            if (l.head_dim_v) spec.set("head_dim_v", u64(l.head_dim_v));
            if (l.state) spec.set("state", Value::boolean(true));
            specs.push(std::move(spec));
        }
        o.set("layer_specs", std::move(specs));
    }
    if (a.recurrent) o.set("recurrent_state", recurrent_state_json(*a.recurrent));
    if (!a.not_exact.empty()) {
        Value reasons = Value::array();
        for (const auto& reason : a.not_exact) reasons.push(Value::string(reason));
        o.set("not_exact", std::move(reasons));  // a reopened file keeps saying its figures are not exact
    }
    if (a.mla) {
        Value m = Value::object();
        m.set("kv_lora_rank", u64(a.mla->kv_lora_rank));
        m.set("qk_rope_head_dim", u64(a.mla->qk_rope_head_dim));
        m.set("qk_nope_head_dim", u64(a.mla->qk_nope_head_dim));
        m.set("v_head_dim", u64(a.mla->v_head_dim));
        m.set("q_lora_rank", u64(a.mla->q_lora_rank));
        if (a.mla->indexer_head_dim) m.set("indexer_head_dim", u64(a.mla->indexer_head_dim));
        o.set("mla", std::move(m));
    }
    if (a.moe) {
        Value m = Value::object();
        m.set("experts", u64(a.moe->experts));
        m.set("experts_per_token", u64(a.moe->experts_per_token));
        m.set("expert_intermediate_size", u64(a.moe->expert_intermediate_size));
        m.set("shared_experts", u64(a.moe->shared_experts));
        m.set("dense_layers", u64(a.moe->dense_layers));
        m.set("period", u64(a.moe->period));
        m.set("offset", u64(a.moe->offset));
        o.set("moe", std::move(m));
    }
    o.set("vocab_size", u64(a.vocab_size));
    o.set("intermediate_size", u64(a.intermediate_size));
    o.set("max_positions", u64(a.max_positions));
    o.set("gated_mlp", Value::boolean(a.gated_mlp));
    o.set("mlp_beside_mixer", Value::boolean(a.mlp_beside_mixer));
    o.set("tied_embeddings", Value::boolean(a.tied_embeddings));
    o.set("attention_bias", Value::boolean(a.attention_bias));
    o.set("params_total", u64(a.params_total));
    o.set("params_active", u64(a.params_active));
    return o;
}

// How each member type is read from a JSON value, and what it must be when it is not.
template <class T>
struct Typed;
template <>
struct Typed<std::uint64_t> {
    static std::optional<std::uint64_t> get(const Value& v) { return v.as_u64(); }
    static constexpr const char* expected = "must be a whole number of 0 or more";
};
template <>
struct Typed<bool> {
    static std::optional<bool> get(const Value& v) { return v.is_bool() ? std::optional(v.as_bool()) : std::nullopt; }
    static constexpr const char* expected = "must be true or false";
};
template <>
struct Typed<double> {
    static std::optional<double> get(const Value& v) {
        return v.is_number() ? std::optional(v.as_double()) : std::nullopt;
    }
    static constexpr const char* expected = "must be a number";
};
template <>
struct Typed<std::string> {
    static std::optional<std::string> get(const Value& v) {
        return v.is_string() ? std::optional(v.as_string()) : std::nullopt;
    }
    static constexpr const char* expected = "must be a string";
};

// Reads typed members, collecting every problem as "file:line field: message".
class Reader {
public:
    explicit Reader(std::string source) : source_(std::move(source)) {}

    const Value* member(const Value& object, std::string_view key, bool required = true) {
        const Value* v = object.find(key);
        if (!v && required) fail(object, std::string(key), "is missing");
        return v;
    }
    // One typed member: converted, or the reason it could not be recorded against its line.
    template <class T>
    void read(const Value& object, std::string_view key, T& out, bool required = true) {
        if (const Value* v = member(object, key, required)) {
            if (auto x = Typed<T>::get(*v))
                out = *x;
            else
                fail(*v, std::string(key), Typed<T>::expected);
        }
    }
    // A list of typed items; `not_a_list` is the message for a member that is no list (empty: ignore it).
    template <class T>
    void read_list(const Value& list, const std::string& field, std::vector<T>& out, const std::string& not_a_list,
                   const std::string& bad_item) {
        if (!list.is_array()) {
            if (!not_a_list.empty()) fail(list, field, not_a_list);
            return;
        }
        for (const Value& item : list.items()) {
            if (auto x = Typed<T>::get(item))
                out.push_back(*x);
            else
                fail(item, field, bad_item);
        }
    }
    template <class T>
    void read_enum(const Value& object, std::string_view key, T& out,
                   const std::function<std::optional<T>(std::string_view)>& parse, const std::string& choices) {
        std::string text;
        const Value* v = member(object, key);
        if (!v) return;
        read(object, key, text);
        if (!v->is_string()) return;
        if (auto parsed = parse(text))
            out = *parsed;
        else
            fail(*v, std::string(key), "'" + text + "' is not one of " + choices);
    }
    const Value* object(const Value& parent, std::string_view key, bool required = true) {
        const Value* v = member(parent, key, required);
        if (v && !v->is_object()) {
            fail(*v, std::string(key), "must be an object");
            return nullptr;
        }
        return v;
    }
    void fail(const Value& at, const std::string& field, const std::string& message) {
        errors_.push_back({source_ + ":" + std::to_string(at.line()) + " " + field, message});
    }
    Errors take() { return std::move(errors_); }

private:
    std::string source_;
    Errors errors_;
};

void read_architecture(Reader& r, const Value& o, Architecture& a) {
    r.read(o, "name", a.name);
    r.read(o, "layers", a.layers);
    r.read(o, "query_heads", a.query_heads);
    r.read(o, "kv_heads", a.kv_heads);
    r.read(o, "head_dim_k", a.head_dim_k);
    r.read(o, "head_dim_v", a.head_dim_v);
    r.read(o, "hidden_size", a.hidden_size);
    if (const Value* w = r.member(o, "layer_windows", false)) {
        // Files of earlier versions: one window a layer, 0 = full attention.
        std::vector<std::uint64_t> windows;
        r.read_list(*w, "layer_windows", windows, "must be a list of whole numbers (0 = full attention)",
                    "must hold whole numbers (0 = full attention)");
        if (std::any_of(windows.begin(), windows.end(), [](auto x) { return x != 0; }))
            a.layer_specs = sliding_layers(windows);
    }
    if (const Value* specs = r.member(o, "layer_specs", false)) {
        static const std::vector<Value> kNone;
        if (!specs->is_array()) r.fail(*specs, "layer_specs", "must be a list of layer descriptions");
        for (const Value& item : specs->is_array() ? specs->items() : kNone) {
            if (!item.is_object()) {
                r.fail(item, "layer_specs", "must hold objects with a kind");
                continue;
            }
            LayerSpec l;
            r.read_enum<LayerKind>(item, "kind", l.kind, parse_layer_kind, layer_kind_ids());
            r.read(item, "window", l.window, false);
            r.read(item, "kv_heads", l.kv_heads, false);
            r.read(item, "head_dim_k", l.head_dim_k, false);
            r.read(item, "head_dim_v", l.head_dim_v, false);
            r.read(item, "state", l.state, false);
            a.layer_specs.push_back(l);
        }
    }
    if (const Value* m = r.object(o, "recurrent_state", false)) {
        RecurrentState st;
        r.read_enum<StateKind>(*m, "kind", st.kind, parse_state_kind, state_kind_ids());
        r.read(*m, "conv_kernel", st.conv_kernel);
        r.read(*m, "conv_channels", st.conv_channels);
        r.read(*m, "groups", st.groups, false);
        r.read(*m, "heads", st.heads);
        r.read(*m, "head_dim", st.head_dim, false);
        r.read(*m, "state_size", st.state_size, false);
        r.read_enum<KvDtype>(*m, "conv_dtype", st.conv_dtype, parse_kv_dtype, "a format name (bf16, fp16, fp32, …)");
        r.read_enum<KvDtype>(*m, "ssm_dtype", st.ssm_dtype, parse_kv_dtype, "a format name (bf16, fp16, fp32, …)");
        a.recurrent = st;
    }
    if (const Value* n = r.member(o, "not_exact", false))
        r.read_list(*n, "not_exact", a.not_exact, "must be a list of texts", "must hold texts");
    if (const Value* m = r.object(o, "mla", false)) {
        MlaDims d;
        r.read(*m, "kv_lora_rank", d.kv_lora_rank);
        r.read(*m, "qk_rope_head_dim", d.qk_rope_head_dim);
        r.read(*m, "qk_nope_head_dim", d.qk_nope_head_dim, false);
        r.read(*m, "v_head_dim", d.v_head_dim, false);
        r.read(*m, "q_lora_rank", d.q_lora_rank, false);
        r.read(*m, "indexer_head_dim", d.indexer_head_dim, false);
        a.mla = d;
    }
    if (const Value* m = r.object(o, "moe", false)) {
        MoeDims d;
        r.read(*m, "experts", d.experts);
        r.read(*m, "experts_per_token", d.experts_per_token);
        r.read(*m, "expert_intermediate_size", d.expert_intermediate_size, false);
        r.read(*m, "shared_experts", d.shared_experts, false);
        r.read(*m, "dense_layers", d.dense_layers, false);
        r.read(*m, "period", d.period, false);
        r.read(*m, "offset", d.offset, false);
        a.moe = d;
    }
    r.read(o, "vocab_size", a.vocab_size, false);
    r.read(o, "intermediate_size", a.intermediate_size, false);
    r.read(o, "max_positions", a.max_positions, false);
    r.read(o, "gated_mlp", a.gated_mlp, false);
    r.read(o, "mlp_beside_mixer", a.mlp_beside_mixer, false);
    r.read(o, "tied_embeddings", a.tied_embeddings, false);
    r.read(o, "attention_bias", a.attention_bias, false);
    r.read(o, "params_total", a.params_total, false);
    r.read(o, "params_active", a.params_active, false);
}

std::optional<KvDtype> dtype_by_id(std::string_view text) {
    for (const auto& i : all_kv_dtypes())
        if (i.id == text) return i.dtype;
    return std::nullopt;
}

void read_deployment(Reader& r, const Value& o, Deployment& d) {
    if (const Value* g = r.object(o, "gpu")) {
        r.read(*g, "id", d.gpu.id);
        r.read(*g, "name", d.gpu.name);
        r.read(*g, "memory_bytes", d.gpu.memory_bytes);
        r.read(*g, "bandwidth_bytes_per_s", d.gpu.bandwidth_bytes_per_s);
        r.read(*g, "bf16_tflops", d.gpu.bf16_tflops, false);
        r.read(*g, "source", d.gpu.source, false);
        if (const Value* a = r.member(*g, "aliases", false))
            r.read_list(*a, "aliases", d.gpu.aliases, "", "must hold strings");
    }
    r.read(o, "gpu_count", d.gpu_count);
    r.read_enum<Engine>(o, "engine", d.engine, parse_engine, engine_list());
    r.read(o, "fraction", d.fraction);
    r.read_enum<KvDtype>(o, "weight_dtype", d.weight_dtype, dtype_by_id, kv_dtype_list());
    r.read(o, "activation_reserve_bytes", d.activation_reserve_bytes, false);
    r.read(o, "runtime_overhead_bytes", d.runtime_overhead_bytes, false);
}

}  // namespace

Value scenario_json(const Scenario& s) {
    Value o = Value::object();
    o.set("kvscope_scenario", u64(kScenarioFormatVersion));
    o.set("model_id", Value::string(s.model_id));
    o.set("architecture", architecture_value(s.arch));
    o.set("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
    Value w = Value::object();
    w.set("context_tokens", u64(s.workload.context_tokens));
    w.set("batch", u64(s.workload.batch));
    w.set("block_size", u64(s.workload.block_size));
    w.set("full_window", Value::boolean(s.workload.full_window));
    o.set("workload", std::move(w));
    Value p = Value::object();
    p.set("tp", u64(s.parallel.tp));
    p.set("pp", u64(s.parallel.pp));
    o.set("parallel", std::move(p));
    if (s.deployment) {
        const Deployment& d = *s.deployment;
        Value g = Value::object();
        g.set("id", Value::string(d.gpu.id));
        g.set("name", Value::string(d.gpu.name));
        g.set("memory_bytes", u64(d.gpu.memory_bytes));
        g.set("bandwidth_bytes_per_s", u64(d.gpu.bandwidth_bytes_per_s));
        g.set("bf16_tflops", Value::number(d.gpu.bf16_tflops));
        g.set("source", Value::string(d.gpu.source));
        Value aliases = Value::array();
        for (const auto& a : d.gpu.aliases) aliases.push(Value::string(a));
        g.set("aliases", std::move(aliases));
        Value dv = Value::object();
        dv.set("gpu", std::move(g));
        dv.set("gpu_count", u64(d.gpu_count));
        dv.set("engine", Value::string(std::string(to_string(d.engine))));
        dv.set("fraction", Value::number(d.fraction));
        dv.set("weight_dtype", Value::string(std::string(to_string(d.weight_dtype))));
        dv.set("activation_reserve_bytes", u64(d.activation_reserve_bytes));
        dv.set("runtime_overhead_bytes", u64(d.runtime_overhead_bytes));
        o.set("deployment", std::move(dv));
    }
    return o;
}

std::string scenario_to_json(const Scenario& s) { return scenario_json(s).dump() + "\n"; }

namespace {

// The repairs in one sentence: "source was written with decimal commas …: line 40 fraction 0,85 -> 0.85".
std::string repair_note(const std::string& source, const std::vector<json::DecimalCommaRepair>& repairs) {
    std::string list;
    for (const auto& r : repairs)
        list += (list.empty() ? "" : ", ") + (r.key.empty() ? "" : r.key + " ") + r.before + " -> " + r.after +
                " (line " + std::to_string(r.line) + ")";
    return source +
           " held numbers written with a decimal comma (KVScope 0.1 saved them so in a German, French or "
           "other comma locale); they were read as decimals: " +
           list + ". Save the scenario to store the repaired file.";
}

}  // namespace

Result<LoadedScenario> scenario_from_json(std::string_view text, const std::string& source) {
    json::ParseResult parsed = json::parse(text);
    std::string repaired;
    if (!parsed) {
        // Only the exact damage of the 0.1 writer is repaired, and only when the result then reads.
        auto fixed = json::repair_decimal_commas(text);
        json::ParseResult again = fixed ? json::parse(fixed->text) : json::ParseResult{};
        if (!again)
            return FieldError{source + ":" + std::to_string(parsed.error.line),
                              "not valid JSON: " + parsed.error.message};
        parsed = std::move(again);
        repaired = repair_note(source, fixed->repairs);
    }
    const Value& root = *parsed.value;
    if (!root.is_object()) return FieldError{source, "is not a KVScope scenario (expected a JSON object)"};
    const Value* version = root.find("kvscope_scenario");
    if (!version) {
        return FieldError{source,
                          "is not a KVScope scenario (no \"kvscope_scenario\" version field; "
                          "a Hugging Face config.json is opened with Import config.json)"};
    }
    const auto v = version->as_u64();
    if (!v || *v == 0)
        return FieldError{source + ":" + std::to_string(version->line()) + " kvscope_scenario",
                          "must be a format version number such as 1"};
    if (*v > kScenarioFormatVersion) {
        return FieldError{source + ":" + std::to_string(version->line()) + " kvscope_scenario",
                          "was written by a newer KVScope (format " + std::to_string(*v) +
                              "; this version reads up to " + std::to_string(kScenarioFormatVersion) +
                              "); update KVScope to open it"};
    }

    Reader r(source);
    Scenario s;
    r.read(root, "model_id", s.model_id, false);
    if (const Value* a = r.object(root, "architecture")) read_architecture(r, *a, s.arch);
    r.read_enum<KvDtype>(root, "kv_dtype", s.kv_dtype, dtype_by_id, kv_dtype_list());
    if (const Value* w = r.object(root, "workload")) {
        r.read(*w, "context_tokens", s.workload.context_tokens);
        r.read(*w, "batch", s.workload.batch);
        r.read(*w, "block_size", s.workload.block_size, false);
        r.read(*w, "full_window", s.workload.full_window, false);
    }
    if (const Value* p = r.object(root, "parallel", false)) {
        r.read(*p, "tp", s.parallel.tp, false);
        r.read(*p, "pp", s.parallel.pp, false);
    }
    if (const Value* d = r.object(root, "deployment", false)) {
        Deployment dep;
        read_deployment(r, *d, dep);
        s.deployment = dep;
    }
    Errors errors = r.take();
    if (!errors.empty()) return errors;
    return LoadedScenario{s, repaired};
}

Result<LoadedScenario> read_scenario_file(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.errors();
    return scenario_from_json(*text, path);
}

}  // namespace kvscope
