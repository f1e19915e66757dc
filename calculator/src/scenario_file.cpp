#include "kvscope/calculator/scenario_file.h"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <set>
#include <type_traits>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/text_file.h"
#include "scenario_notes.h"

namespace kvscope {

using json::Value;
using scenario_notes::comma_list;
using scenario_notes::line_list;

namespace {

// How each member type is read from a JSON value, written to one, and what it must be when it is not.
template <class T>
struct Typed;
template <>
struct Typed<std::uint64_t> {
    static std::optional<std::uint64_t> get(const Value& v) { return v.as_u64(); }
    static Value put(std::uint64_t x) { return Value::number(x); }
    static constexpr const char* expected = "must be a whole number of 0 or more";
    // What is wrong with a number that is not one: 1e300 is too large, not "not a whole number".
    static std::string problem(const Value& v) {
        if (!v.is_number()) return expected;
        const double d = v.as_double();
        if (d < 0) return "must be 0 or more";
        if (std::floor(d) != d) return "must be a whole number";
        return "is too large (at most 18446744073709551615)";
    }
};
template <>
struct Typed<bool> {
    static std::optional<bool> get(const Value& v) { return v.is_bool() ? std::optional(v.as_bool()) : std::nullopt; }
    static Value put(bool x) { return Value::boolean(x); }
    static constexpr const char* expected = "must be true or false";
};
template <>
struct Typed<double> {
    static std::optional<double> get(const Value& v) {
        return v.is_number() ? std::optional(v.as_double()) : std::nullopt;
    }
    static Value put(double x) { return Value::number(x); }
    static constexpr const char* expected = "must be a number";
};
template <>
struct Typed<std::string> {
    static std::optional<std::string> get(const Value& v) {
        return v.is_string() ? std::optional(v.as_string()) : std::nullopt;
    }
    static Value put(const std::string& x) { return Value::string(x); }
    static constexpr const char* expected = "must be a string";
};

// Reads typed members, collecting every problem as "file:line field: message".
class Reader {
public:
    explicit Reader(std::string source) : source_(std::move(source)) {}

    const Value* member(const Value& object, std::string_view key, bool required = true) {
        asked_.emplace(&object, std::string(key));
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
            else if constexpr (std::is_same_v<T, std::uint64_t>)
                fail(*v, std::string(key), Typed<T>::problem(*v));
            else
                fail(*v, std::string(key), Typed<T>::expected);
        }
    }
    // A list of typed items; `not_a_list` is the message for a member that is no list.
    template <class T>
    void read_list(const Value& list, const std::string& field, std::vector<T>& out, const std::string& not_a_list,
                   const std::string& bad_item) {
        if (!list.is_array()) {
            fail(list, field, not_a_list);
            return;
        }
        for (const Value& item : list.items()) {
            if (auto x = Typed<T>::get(item))
                out.push_back(*x);
            else
                fail(item, field, bad_item);
        }
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

    // An object read member by member; `path` names it in unread() ("architecture.", "layer_specs[2].").
    void reading(const Value& object, std::string path) { objects_.emplace_back(&object, std::move(path)); }
    // The members of the objects read that nothing asked for, "path.key (line N)" in file order: fields of
    // a newer version, or a key misspelt by hand, which the numbers do not include.
    [[nodiscard]] std::vector<std::string> unread() const {
        std::vector<std::pair<int, std::string>> found;
        for (const auto& [object, path] : objects_) {
            std::map<std::string_view, std::vector<int>> lines;  // a key given more than once is one field
            std::vector<std::string_view> order;
            for (const auto& [key, value] : object->members())
                if (!asked_.contains({object, key})) {
                    auto& at = lines[key];
                    if (at.empty()) order.push_back(key);
                    at.push_back(value.line());
                }
            for (const std::string_view key : order) {
                const std::vector<int>& at = lines[key];
                found.emplace_back(at.front(), path + std::string(key) + (at.size() == 1 ? " (line " : " (lines ") +
                                                   line_list(at) + ")");
            }
        }
        std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<std::string> out;
        out.reserve(found.size());
        for (auto& f : found) out.push_back(std::move(f.second));
        return out;
    }

    // The members of the objects read given twice, "path.key (lines A and B)" in file order: json::Value::find reads
    // the last, as Python's json does; a file this program wrote never holds one, so a hand edit put it there.
    // Keys nothing reads are in unread() already, and not here.
    [[nodiscard]] std::vector<std::string> twice() const {
        std::vector<std::pair<int, std::string>> found;
        for (const auto& [object, path] : objects_) {
            std::map<std::string_view, std::vector<int>> lines;  // each key read, and every line that gives it
            for (const auto& [key, value] : object->members())
                if (asked_.contains({object, key})) lines[key].push_back(value.line());
            for (const auto& [key, at] : lines)
                if (at.size() >= 2)
                    found.emplace_back(at.front(), path + std::string(key) + " (lines " + line_list(at) + ")");
        }
        std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<std::string> out;
        out.reserve(found.size());
        for (auto& f : found) out.push_back(std::move(f.second));
        return out;
    }

private:
    std::string source_;
    Errors errors_;
    std::set<std::pair<const Value*, std::string>> asked_;
    std::vector<std::pair<const Value*, std::string>> objects_;
};

// Whether a member must be in a file, and whether it is written when it holds its default.
enum class Need {
    required,  // read: an error when missing
    optional,  // read: kept at its default when missing; always written
    when_set,  // as optional, and written only when it is not 0, false or empty
};

std::optional<KvDtype> dtype_by_id(std::string_view text) {
    for (const auto& i : all_kv_dtypes())
        if (i.id == text) return i.dtype;
    return std::nullopt;
}

// The enums a file names by their ids: how each is parsed, and the choices a wrong one is told.
template <class E>
struct Choices;
template <>
struct Choices<LayerKind> {
    static std::optional<LayerKind> parse(std::string_view t) { return parse_layer_kind(t); }
    static std::string list() { return layer_kind_ids(); }
};
template <>
struct Choices<StateKind> {
    static std::optional<StateKind> parse(std::string_view t) { return parse_state_kind(t); }
    static std::string list() { return state_kind_ids(); }
};
template <>
struct Choices<KvDtype> {
    static std::optional<KvDtype> parse(std::string_view t) { return dtype_by_id(t); }
    static std::string list() { return kv_dtype_list(); }
};
template <>
struct Choices<Engine> {
    static std::optional<Engine> parse(std::string_view t) { return parse_engine(t); }
    static std::string list() { return engine_list(); }
};

template <>
struct Choices<GgufMix> {
    static std::optional<GgufMix> parse(std::string_view t) { return parse_gguf_mix(t); }
    static std::string list() { return gguf_mix_list(); }
};

template <>
struct Choices<DraftMethod> {
    static std::optional<DraftMethod> parse(std::string_view t) { return parse_draft_method(t); }
    static std::string list() { return draft_method_list(); }
};

// Each struct's members, listed once, in the order a file holds them: the writer and the reader below
// both walk these lists, so a member is saved and opened by the same line. `Self` is the struct, const
// when it is written.
template <class Self, class T>
concept Of = std::same_as<std::remove_const_t<Self>, T>;

template <class Self, class V>
requires Of<Self, LayerSpec>
void members(Self& l, V& v) {  // only what differs from a full-attention layer of the model's heads
    v.choice("kind", l.kind);
    v.value("window", l.window, Need::when_set);
    v.value("kv_heads", l.kv_heads, Need::when_set);
    v.value("head_dim_k", l.head_dim_k, Need::when_set);
    v.value("head_dim_v", l.head_dim_v, Need::when_set);
    v.value("state", l.state, Need::when_set);
    v.value("no_indexer", l.no_indexer, Need::when_set);
}

template <class Self, class V>
requires Of<Self, RecurrentState>
void members(Self& r, V& v) {
    v.choice("kind", r.kind);
    v.value("conv_kernel", r.conv_kernel);
    v.value("conv_channels", r.conv_channels);
    v.value("groups", r.groups, Need::optional);
    v.value("heads", r.heads);
    v.value("head_dim", r.head_dim, Need::optional);
    v.value("state_size", r.state_size, Need::optional);
    v.format("conv_dtype", r.conv_dtype);
    v.format("ssm_dtype", r.ssm_dtype);
}

template <class Self, class V>
requires Of<Self, MlaDims>
void members(Self& m, V& v) {
    v.value("kv_lora_rank", m.kv_lora_rank);
    v.value("qk_rope_head_dim", m.qk_rope_head_dim);
    v.value("qk_nope_head_dim", m.qk_nope_head_dim, Need::optional);
    v.value("v_head_dim", m.v_head_dim, Need::optional);
    v.value("q_lora_rank", m.q_lora_rank, Need::optional);
    v.value("indexer_head_dim", m.indexer_head_dim, Need::when_set);
}

template <class Self, class V>
requires Of<Self, MoeDims>
void members(Self& m, V& v) {
    v.value("experts", m.experts);
    v.value("experts_per_token", m.experts_per_token);
    v.value("expert_intermediate_size", m.expert_intermediate_size, Need::optional);
    v.value("shared_experts", m.shared_experts, Need::optional);
    v.value("dense_layers", m.dense_layers, Need::optional);
    v.value("period", m.period, Need::optional);
    v.value("offset", m.offset, Need::optional);
    v.value("shared_intermediate_size", m.shared_intermediate_size, Need::when_set);
    v.value("latent_size", m.latent_size, Need::when_set);
}

template <class Self, class V>
requires Of<Self, Architecture>
void members(Self& a, V& v) {
    v.value("name", a.name);
    v.value("gguf_arch", a.gguf_arch, Need::when_set);
    v.value("layers", a.layers);
    v.value("query_heads", a.query_heads);
    v.value("kv_heads", a.kv_heads);
    v.value("head_dim_k", a.head_dim_k);
    v.value("head_dim_v", a.head_dim_v);
    v.value("hidden_size", a.hidden_size);
    v.list("layer_specs", a.layer_specs, "layer descriptions with a kind");
    v.maybe("recurrent_state", a.recurrent);
    v.texts("not_exact", a.not_exact, Need::when_set, "must be a list of texts", "must hold texts");
    v.texts("mtp_not_exact", a.mtp_not_exact, Need::when_set, "must be a list of texts", "must hold texts");
    // (a reopened file keeps saying its figures are not exact)
    v.maybe("mla", a.mla);
    v.maybe("moe", a.moe);
    v.value("vocab_size", a.vocab_size, Need::optional);
    v.value("intermediate_size", a.intermediate_size, Need::optional);
    v.value("max_positions", a.max_positions, Need::optional);
    v.value("gated_mlp", a.gated_mlp, Need::optional);
    v.value("mlp_beside_mixer", a.mlp_beside_mixer, Need::optional);
    v.value("tied_embeddings", a.tied_embeddings, Need::optional);
    v.value("attention_bias", a.attention_bias, Need::optional);
    v.value("mtp_layers", a.mtp_layers, Need::when_set);
    v.value("extra_embedding_params", a.extra_embedding_params, Need::when_set);
    v.value("extra_layer_params", a.extra_layer_params, Need::when_set);
    v.value("params_total", a.params_total, Need::optional);
    v.value("params_active", a.params_active, Need::optional);
}

template <class Self, class V>
requires Of<Self, Workload>
void members(Self& w, V& v) {
    v.value("context_tokens", w.context_tokens);
    v.value("batch", w.batch);
    v.value("block_size", w.block_size, Need::optional);
    v.value("full_window", w.full_window, Need::optional);
}

template <class Self, class V>
requires Of<Self, Parallelism>
void members(Self& p, V& v) {
    v.value("tp", p.tp, Need::optional);
    v.value("pp", p.pp, Need::optional);
}

template <class Self, class V>
requires Of<Self, GpuSpec>
void members(Self& g, V& v) {
    v.value("id", g.id);
    v.value("name", g.name);
    v.value("memory_bytes", g.memory_bytes);
    v.value("bandwidth_bytes_per_s", g.bandwidth_bytes_per_s);
    v.value("bf16_tflops", g.bf16_tflops, Need::optional);
    v.value("source", g.source, Need::optional);
    v.texts("aliases", g.aliases, Need::optional, "", "must hold strings");  // not a list: ignored
    v.value("unified_memory_bytes", g.unified_memory_bytes, Need::when_set);
    v.value("gpu_share", g.gpu_share, Need::when_set);
    v.value("share_rule", g.share_rule, Need::when_set);
}

template <class Self, class V>
requires Of<Self, VllmSettings>
void members(Self& s, V& v) {
    v.value("max_num_batched_tokens", s.max_num_batched_tokens, Need::when_set);
    v.value("max_num_seqs", s.max_num_seqs, Need::when_set);
    v.value("enforce_eager", s.enforce_eager, Need::when_set);
    v.value("version_minor", s.version_minor, Need::when_set);
    v.maybe_value("version_patch", s.version_patch);
}

template <class Self, class V>
requires Of<Self, WeightQuant>
void members(Self& q, V& v) {
    v.value("method", q.method);
    v.value("scheme", q.scheme, Need::optional);
    v.value("bits", q.bits);
    v.value("group", q.group, Need::when_set);
    v.value("per_row", q.per_row, Need::when_set);
    v.value("scale_bits", q.scale_bits, Need::when_set);
    v.value("zero_bits", q.zero_bits, Need::when_set);
    v.value("experts_only", q.experts_only, Need::when_set);
    v.value("lm_head", q.lm_head, Need::when_set);
    v.value("pad_hidden", q.pad_hidden, Need::optional);
    v.value("pad_intermediate", q.pad_intermediate, Need::optional);
}

template <class Self, class V>
requires Of<Self, LlamaCppSettings>
void members(Self& s, V& v) {
    v.value("ubatch", s.ubatch, Need::when_set);
    v.value("flash_attn_off", s.flash_attn_off, Need::when_set);
    v.maybe_value("gpu_layers", s.gpu_layers);
    v.value("gpu_layers_auto", s.gpu_layers_auto, Need::when_set);
    v.value("cpu_moe_layers", s.cpu_moe_layers, Need::when_set);
    v.value("no_kv_offload", s.no_kv_offload, Need::when_set);
}

template <class Self, class V>
requires Of<Self, HostSpec>
void members(Self& h, V& v) {
    v.value("id", h.id, Need::when_set);
    v.value("memory_bytes", h.memory_bytes, Need::when_set);
    v.value("bandwidth_bytes_per_s", h.bandwidth_bytes_per_s, Need::when_set);
}

template <class Self, class V>
requires Of<Self, BlockWeights>
void members(Self& b, V& v) {
    v.value("bytes", b.bytes);
    v.value("expert_bytes", b.expert_bytes, Need::when_set);
}

template <class Self, class V>
requires Of<Self, LayerWeights>
void members(Self& w, V& v) {
    v.list("blocks", w.blocks, "objects with bytes");
    v.value("input_bytes", w.input_bytes, Need::when_set);
    v.value("output_bytes", w.output_bytes, Need::when_set);
}

template <class Self, class V>
requires Of<Self, TrtllmSettings>
void members(Self& s, V& v) { v.value("max_num_tokens", s.max_num_tokens, Need::when_set); }

template <class Self, class V>
requires Of<Self, DraftModel>
void members(Self& m, V& v) {
    v.value("name", m.name);
    v.choice("method", m.method);
    v.object("architecture", m.arch);
    v.value("draft_vocab", m.draft_vocab, Need::when_set);
    v.value("target_hidden", m.target_hidden, Need::when_set);
    v.value("weights_bytes_exact", m.weights_bytes_exact, Need::when_set);
    v.maybe("weight_quant", m.quant);
}

template <class Self, class V>
requires Of<Self, Deployment>
void members(Self& d, V& v) {
    v.object("gpu", d.gpu);
    v.object("host", d.host, Need::when_set);
    v.value("gpu_count", d.gpu_count);
    v.choice("engine", d.engine);
    v.value("fraction", d.fraction);
    v.value("fraction_given", d.fraction_given, Need::when_set);
    v.choice("weight_dtype", d.weight_dtype);
    v.value("activation_reserve_bytes", d.activation_reserve_bytes, Need::optional);
    v.value("runtime_overhead_bytes", d.runtime_overhead_bytes, Need::optional);
    // Files written before vLLM's reserve was derived have no such key: their 1 GiB and 512 MiB were the old
    // defaults, and vLLM now derives its own.
    v.value("fixed_reserve", d.fixed_reserve, Need::when_set);
    v.value("overhead_given", d.overhead_given, Need::when_set);
    v.object("vllm", d.vllm, Need::when_set);
    v.object("llama_cpp", d.llama_cpp, Need::when_set);
    v.object("tensorrt_llm", d.tensorrt_llm, Need::when_set);
    v.value("weights_bytes_exact", d.weights_bytes_exact, Need::when_set);
    v.value("weights_source", d.weights_source, Need::when_set);
    v.maybe("weights_layers", d.weights_layers);
    v.maybe("weight_quant", d.weight_quant);
    v.maybe_choice("gguf_mix", d.gguf_mix);
    v.value("mtp", d.mtp, Need::when_set);
    v.maybe("draft", d.draft);
}

template <class Self, class V>
requires Of<Self, ModelWeights>
void members(Self& w, V& v) {
    v.choice("dtype", w.dtype);
    v.value("exact_bytes", w.exact_bytes, Need::when_set);
    v.value("source", w.source, Need::when_set);
    v.maybe_choice("engine", w.engine);
    v.maybe("quant", w.quant);
    v.maybe("layers", w.layers);
}

template <class Self, class V>
requires Of<Self, Scenario>
void members(Self& s, V& v) {
    v.value("model_id", s.model_id, Need::optional);
    v.object("architecture", s.arch);
    v.choice("kv_dtype", s.kv_dtype);
    v.object("workload", s.workload);
    v.object("parallel", s.parallel, Need::optional);
    v.maybe("deployment", s.deployment);
    v.maybe("model_weights", s.model_weights);
}

// Writes the members into a JSON object.
class Writer {
public:
    explicit Writer(Value& out) : out_(out) {}

    template <class T>
    void value(std::string_view key, const T& x, Need need = Need::required) {
        if (need == Need::when_set && x == T{}) return;
        out_.set(std::string(key), Typed<T>::put(x));
    }
    template <class E>
    void choice(std::string_view key, E x) {
        out_.set(std::string(key), Value::string(std::string(to_string(x))));
    }
    // A state format, as the config names it; written by its id.
    void format(std::string_view key, KvDtype x) { choice(key, x); }
    void texts(std::string_view key, const std::vector<std::string>& x, Need need, std::string_view /*not_a_list*/,
               std::string_view /*bad_item*/) {
        if (need == Need::when_set && x.empty()) return;
        out_.set(std::string(key), Value::strings(x));
    }
    template <class T>
    void object(std::string_view key, const T& x, Need need = Need::required) {
        if (need == Need::when_set && x == T{}) return;
        out_.set(std::string(key), write(x));
    }
    template <class T>
    void maybe(std::string_view key, const std::optional<T>& x) {
        if (x) object(key, *x);
    }
    template <class T>
    void maybe_value(std::string_view key, const std::optional<T>& x) {
        if (x) value(key, *x);
    }
    template <class E>
    void maybe_choice(std::string_view key, const std::optional<E>& x) {
        if (x) choice(key, *x);
    }
    template <class T>
    void list(std::string_view key, const std::vector<T>& x, std::string_view /*what*/) {
        if (x.empty()) return;
        Value items = Value::array();
        for (const T& item : x) items.push(write(item));
        out_.set(std::string(key), std::move(items));
    }

    template <class T>
    static Value write(const T& x) {
        Value o = Value::object();
        Writer w(o);
        members(x, w);
        return o;
    }

private:
    Value& out_;
};

// Reads the members from a JSON object, every problem into the Reader.
class MemberReader {
public:
    MemberReader(Reader& r, const Value& in, std::string path) : r_(r), in_(in), path_(std::move(path)) {}

    template <class T>
    void value(std::string_view key, T& x, Need need = Need::required) {
        r_.read(in_, key, x, need == Need::required);
    }
    template <class E>
    void choice(std::string_view key, E& x) {
        const Value* v = r_.member(in_, key);
        if (!v) return;
        std::string text;
        r_.read(in_, key, text);
        if (!v->is_string()) return;
        if (auto parsed = Choices<E>::parse(text))
            x = *parsed;
        else
            r_.fail(*v, std::string(key), "'" + text + "' is not one of " + Choices<E>::list());
    }
    // Any spelling parse_kv_dtype takes (bf16, bfloat16, float32, …), as in a config.
    void format(std::string_view key, KvDtype& x) {
        const Value* v = r_.member(in_, key);
        if (!v) return;
        std::string text;
        r_.read(in_, key, text);
        if (!v->is_string()) return;
        if (auto parsed = parse_kv_dtype(text))
            x = *parsed;
        else
            r_.fail(*v, std::string(key), "'" + text + "' is not one of a format name (bf16, fp16, fp32, …)");
    }
    // `not_a_list` empty: a member that is no list is ignored.
    void texts(std::string_view key, std::vector<std::string>& x, Need need, std::string_view not_a_list,
               std::string_view bad_item) {
        const Value* list = r_.member(in_, key, need == Need::required);
        if (!list || (!list->is_array() && not_a_list.empty())) return;
        r_.read_list(*list, std::string(key), x, std::string(not_a_list), std::string(bad_item));
    }
    template <class T>
    void object(std::string_view key, T& x, Need need = Need::required) {
        if (const Value* o = r_.object(in_, key, need == Need::required)) read(r_, *o, x, inner(key));
    }
    template <class E>
    void maybe_choice(std::string_view key, std::optional<E>& x) {
        if (!r_.member(in_, key, false)) return;
        E e{};
        choice(key, e);
        x = e;
    }
    template <class T>
    void maybe_value(std::string_view key, std::optional<T>& x) {
        if (!r_.member(in_, key, false)) return;
        T item{};
        value(key, item, Need::optional);
        x = item;
    }
    template <class T>
    void maybe(std::string_view key, std::optional<T>& x) {
        if (const Value* o = r_.object(in_, key, false)) {
            T item;
            read(r_, *o, item, inner(key));
            x = std::move(item);
        }
    }
    template <class T>
    void list(std::string_view key, std::vector<T>& x, std::string_view what) {
        const Value* items = r_.member(in_, key, false);
        if (!items) return;
        if (!items->is_array()) {
            r_.fail(*items, std::string(key), "must be a list of " + std::string(what));
            return;
        }
        std::size_t index = 0;
        for (const Value& item : items->items()) {
            const std::string at = path_ + std::string(key) + "[" + std::to_string(index++) + "].";
            if (!item.is_object()) {
                r_.fail(item, std::string(key), "must hold " + std::string(what));
                continue;
            }
            T one;
            read(r_, item, one, at);
            x.push_back(std::move(one));
        }
    }

    template <class T>
    static void read(Reader& r, const Value& in, T& x, std::string path = {}) {
        r.reading(in, path);
        MemberReader m(r, in, std::move(path));
        members(x, m);
    }

private:
    [[nodiscard]] std::string inner(std::string_view key) const { return path_ + std::string(key) + "."; }

    Reader& r_;
    const Value& in_;
    std::string path_;  // where in_ is in the file, "" at the top
};

}  // namespace

Value architecture_json(const Architecture& arch) { return Writer::write(arch); }

Value scenario_json(const Scenario& s, const std::vector<std::string>& warnings) {
    Value o = Value::object();
    o.set("kvscope_scenario", Value::number(kScenarioFormatVersion));
    Writer w(o);
    members(s, w);
    // Only when there are some: a file without them reads the same in versions that predate them.
    if (!warnings.empty()) o.set("warnings", Value::strings(warnings));
    return o;
}

std::string scenario_to_json(const Scenario& s, const std::vector<std::string>& warnings) {
    return scenario_json(s, warnings).dump() + "\n";
}

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
        repaired = scenario_notes::repair_note(source, fixed->repairs);
    }
    const Value& root = *parsed.value;
    if (!root.is_object()) return FieldError{source, "is not a KVScope scenario (expected a JSON object)"};
    const Value* version = root.find("kvscope_scenario");
    if (!version) {
        return FieldError{source,
                          "is not a KVScope scenario (no \"kvscope_scenario\" version field; "
                          "a Hugging Face config.json is opened with Import model)"};
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
    r.member(root, "kvscope_scenario");
    Scenario s;
    MemberReader::read(r, root, s);
    // Files of earlier versions give one window a layer (0 = full attention) instead of layer_specs.
    if (const Value* arch = root.find("architecture"); arch && arch->is_object())
        if (const Value* w = r.member(*arch, "layer_windows", false)) {
            std::vector<std::uint64_t> windows;
            r.read_list(*w, "layer_windows", windows, "must be a list of whole numbers (0 = full attention)",
                        "must hold whole numbers (0 = full attention)");
            if (s.arch.layer_specs.empty() &&
                std::any_of(windows.begin(), windows.end(), [](auto x) { return x != 0; }))
                s.arch.layer_specs = sliding_layers(windows);
        }
    // A file written before the architecture kept llama.cpp's name for it: a catalog model's, where the rest is the
    // catalog's, so that the model is not shown as edited and its GGUF mix follows its own rules.
    if (const Value* arch = root.find("architecture"); arch && arch->is_object() && !arch->find("gguf_arch"))
        if (const CatalogModel* m = Catalog::builtin().find_model(s.model_id)) {
            Architecture named = s.arch;
            named.gguf_arch = m->model.arch.gguf_arch;
            if (named == m->model.arch) s.arch = std::move(named);
        }
    // A file written before vLLM's reserve was derived holds the old defaults (1 GiB, 512 MiB) and no
    // fixed_reserve: vLLM then derives its own. Other figures there were set by hand: they stay fixed.
    if (s.deployment && !s.deployment->fixed_reserve &&
        (s.deployment->activation_reserve_bytes != Deployment{}.activation_reserve_bytes ||
         (s.deployment->runtime_overhead_bytes != Deployment{}.runtime_overhead_bytes &&
          !s.deployment->overhead_given)))
        s.deployment->fixed_reserve = true;
    // A file written before SGLang's default fraction was derived: 0.88 was that default; any other was set.
    if (s.deployment && s.deployment->engine == Engine::sglang && !s.deployment->fraction_given &&
        s.deployment->fraction != default_fraction(Engine::sglang))
        s.deployment->fraction_given = true;
    std::vector<std::string> warnings;
    if (const Value* w = r.member(root, "warnings", false))
        r.read_list(*w, "warnings", warnings, "must be a list of strings", "must hold strings");
    const std::vector<std::string> unread = r.unread();
    Errors errors = r.take();
    // A required key misspelt by hand is missing under its name and unread under the other: both are said, so that
    // "context_tokens: is missing" comes with the "contxt_tokens (line 12)" the file holds.
    if (!errors.empty() && !unread.empty()) {
        errors.push_back({source, "also holds fields this version of KVScope does not read: " + comma_list(unread)});
    }
    if (!errors.empty()) return errors;
    std::string note = scenario_notes::unread_note(source, unread);
    const std::string twice = scenario_notes::twice_note(source, r.twice());
    note += (note.empty() || twice.empty() ? "" : " ") + twice;
    return LoadedScenario{s, repaired, warnings, note};
}

Result<LoadedScenario> read_scenario_file(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.errors();
    return scenario_from_json(*text, path);
}

}  // namespace kvscope
