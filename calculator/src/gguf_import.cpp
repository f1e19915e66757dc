// A GGUF header -> Architecture, with llama.cpp's own rules: every rule below follows llama.cpp's
// llama_model::load_hparams (src/llama-model.cpp), the key names of src/llama-arch.cpp (LLM_KV_NAMES) and the
// sizes of src/llama-hparams.cpp, as the engine that runs the file reads them.

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"
#include "names.h"

namespace kvscope::gguf {
namespace {

// The architectures whose hyperparameters have a rule here (LLM_ARCH_NAMES spellings). Any other is read with the
// generic keys alone and reported as not exact.
constexpr std::array<std::string_view, 30> kKnown{
    "llama",      "mistral3",  "qwen2",         "qwen2moe",  "qwen3",   "qwen3moe",  "qwen3next", "gemma",
    "gemma2",     "gemma3",    "phi3",          "command-r", "cohere2", "deepseek2", "gpt-oss",   "falcon",
    "starcoder2", "granite",   "granitemoe",    "olmo2",     "exaone4", "llama4",    "mamba",     "mamba2",
    "jamba",      "falcon-h1", "granitehybrid", "lfm2",      "lfm2moe", "starcoder"};

class Keys {
public:
    Keys(const File& f, std::string arch, const std::string& source) : f_(f), arch_(std::move(arch)), source_(source) {}

    [[nodiscard]] const std::string& arch() const { return arch_; }
    [[nodiscard]] const Errors& errors() const { return errors_; }
    [[nodiscard]] const std::set<std::string>& read() const { return read_; }

    // "{arch}.suffix" (or a general key given whole).
    const Value* get(const std::string& suffix) {
        const std::string key = suffix.starts_with("general.") ? suffix : arch_ + "." + suffix;
        read_.insert(key);
        return f_.find(key);
    }
    void error(const std::string& suffix, const std::string& what) {
        errors_.push_back({arch_ + "." + suffix, source_ + ": " + arch_ + "." + suffix + " " + what});
    }
    // A whole number, or nullopt when absent; an error when it is there but is not one.
    std::optional<std::uint64_t> number(const std::string& suffix) {
        const Value* v = get(suffix);
        if (!v) return std::nullopt;
        if (const auto n = v->as_u64(); n && v->type != Type::boolean) return n;
        error(suffix, "must be a whole number, not " + v->describe());
        return std::nullopt;
    }
    std::uint64_t required(const std::string& suffix) {
        const Value* v = get(suffix);
        if (!v) {
            error(suffix, "is missing (llama.cpp requires it for " + arch_ + ")");
            return 0;
        }
        return number(suffix).value_or(0);
    }
    // llama.cpp get_key_or_arr: one number for every layer, or an array of exactly `layers` numbers.
    std::vector<std::uint64_t> per_layer(const std::string& suffix, std::uint64_t layers) {
        const Value* v = get(suffix);
        if (!v) return {};
        if (!v->is_array()) {
            const auto n = number(suffix);
            return n ? std::vector<std::uint64_t>(layers, *n) : std::vector<std::uint64_t>{};
        }
        if (v->item_type == Type::string || v->item_type == Type::array) {
            error(suffix, "must hold whole numbers, not " + v->describe());
            return {};
        }
        if (v->count != layers) {
            error(suffix, "holds " + format_count(v->count) + " values but the model has " + format_count(layers) +
                              " layers (one each expected)");
            return {};
        }
        if (v->items.size() != layers) {
            error(suffix, "was not kept: the file's arrays hold more numbers in all than a model's header does");
            return {};
        }
        std::vector<std::uint64_t> out;
        for (const Value& item : v->items) {
            const auto n = item.as_u64();
            if (!n || item.type == Type::boolean) {
                error(suffix, "must hold whole numbers, not " + item.describe());
                return {};
            }
            out.push_back(*n);
        }
        return out;
    }

private:
    const File& f_;
    std::string arch_;
    const std::string& source_;
    Errors errors_;
    std::set<std::string> read_;
};

std::uint64_t first_nonzero(const std::vector<std::uint64_t>& v) {
    for (const auto n : v)
        if (n > 0) return n;
    return 0;
}

// llama_hparams::set_swa_pattern(n): layer il slides when il % n < n - 1, so the last layer of every period
// attends to the whole context (n = 1: none slides; n = 0: all do).
bool slides(std::uint64_t layer, std::uint64_t period) { return period == 0 || layer % period < period - 1; }

// The state of a recurrent layer, from the ssm.* keys (llama-hparams.cpp n_embd_r / n_embd_s: a conv state of
// (conv_kernel - 1) x (inner + 2·groups·state) and an SSM state of state x inner values per sequence).
std::optional<RecurrentState> read_state(Keys& k, const Architecture& a) {
    const std::string& t = k.arch();
    RecurrentState st;
    if (one_of(t, {"lfm2", "lfm2moe"})) {
        st.kind = StateKind::short_conv;  // n_embd_r = n_embd x (l_cache - 1); no SSM state
        st.conv_kernel = k.required("shortconv.l_cache");
        st.conv_channels = a.hidden_size;
    } else if (one_of(t, {"mamba", "jamba"})) {
        st.kind = StateKind::mamba;  // Mamba-1: no groups
        st.conv_kernel = k.required("ssm.conv_kernel");
        st.conv_channels = st.heads = k.required("ssm.inner_size");
        st.head_dim = 1;
        st.state_size = k.required("ssm.state_size");
        (void)k.required("ssm.time_step_rank");
    } else if (one_of(t, {"mamba2", "falcon-h1", "granitehybrid"})) {
        st.kind = StateKind::mamba2;  // ssm.time_step_rank is the number of SSM heads
        st.conv_kernel = k.required("ssm.conv_kernel");
        st.conv_channels = k.required("ssm.inner_size");
        st.state_size = k.required("ssm.state_size");
        st.heads = k.required("ssm.time_step_rank");
        st.groups = k.required("ssm.group_count");
        if (st.heads == 0 || st.conv_channels % st.heads != 0) {
            k.error("ssm.inner_size", "(" + format_count(st.conv_channels) + ") must be a multiple of " + t +
                                          ".ssm.time_step_rank (" + format_count(st.heads) + ")");
            return std::nullopt;
        }
        st.head_dim = st.conv_channels / st.heads;
    } else if (t == "qwen3next") {
        // Gated DeltaNet: state_size = key head dim, group_count = key heads, time_step_rank = value heads,
        // inner_size = value heads x value head dim.
        st.kind = StateKind::gated_delta_net;
        st.conv_kernel = k.required("ssm.conv_kernel");
        const std::uint64_t dk = k.required("ssm.state_size"), hk = k.required("ssm.group_count");
        const std::uint64_t hv = k.required("ssm.time_step_rank"), inner = k.required("ssm.inner_size");
        if (hv == 0 || inner % hv != 0) {
            k.error("ssm.inner_size", "(" + format_count(inner) + ") must be a multiple of " + t +
                                          ".ssm.time_step_rank (" + format_count(hv) + ")");
            return std::nullopt;
        }
        st.conv_channels = 2 * hk * dk + inner;
        st.heads = hv, st.head_dim = dk, st.state_size = inner / hv;
    } else {
        return std::nullopt;
    }
    // llama.cpp keeps recurrent states in f32 whatever the KV cache type (llama-model.cpp create_memory:
    // llama_memory_recurrent / llama_memory_hybrid with GGML_TYPE_F32 for both).
    st.conv_dtype = st.ssm_dtype = KvDtype::fp32;
    return st;
}

void read_layers(Keys& k, ImportedModel& out, const std::vector<std::uint64_t>& kv) {
    Architecture& a = out.arch;
    const std::string& t = k.arch();
    const std::uint64_t n = a.layers;
    std::vector<LayerSpec> specs(n);
    bool described = false;

    // Layers with no KV heads: the recurrent layers of a hybrid (llama-model.cpp: jamba, granitehybrid, lfm2 set
    // recurrent_layer_arr[i] = n_head_kv(i) == 0); elsewhere a layer with nothing to cache.
    const bool zero_kv_is_recurrent = one_of(t, {"jamba", "granitehybrid", "lfm2", "lfm2moe"});
    // Every layer with none: a model with nothing that attends, which only a recurrent architecture is (llama.cpp
    // would build no attention for a llama); said, not shown as a model whose cache is 0 bytes.
    // llama-arch.cpp llm_arch_is_recurrent: mamba, mamba2, rwkv6, rwkv6qwen2, rwkv7, arwkv7.
    const bool recurrent_arch =
        zero_kv_is_recurrent || one_of(t, {"mamba", "mamba2", "arwkv7"}) || t.starts_with("rwkv");
    if (!kv.empty() && !recurrent_arch && std::all_of(kv.begin(), kv.end(), [](std::uint64_t h) { return h == 0; })) {
        k.error("attention.head_count_kv",
                "is 0 on every layer, so no layer of this " + t + " would attend; it needs at least one KV head");
        return;
    }
    for (std::uint64_t l = 0; l < n && !kv.empty(); ++l) {
        if (kv[l] == 0) {
            specs[l].kind = zero_kv_is_recurrent ? LayerKind::recurrent : LayerKind::none;
            described = true;
        } else if (kv[l] != a.kv_heads) {
            specs[l].kv_heads = kv[l];
            described = true;
        }
    }
    if (one_of(t, {"mamba", "mamba2"})) {
        for (auto& s : specs) s.kind = LayerKind::recurrent;  // llm_arch_is_recurrent: every layer
        described = true;
    } else if (t == "falcon-h1") {
        for (auto& s : specs) s.state = true;  // every layer runs attention and a Mamba-2 mixer side by side
        described = true;
    } else if (t == "qwen3next") {
        // A per-layer attention.recurrent_layers array when given, else every full_attention_interval-th layer
        // attends (default 4: layer i is recurrent when (i + 1) % 4 != 0).
        const Value* list = k.get("attention.recurrent_layers");
        if (list && list->is_array() && list->items.size() == n) {
            for (std::uint64_t l = 0; l < n; ++l)
                if (list->items[l].as_u64().value_or(0) != 0) specs[l].kind = LayerKind::recurrent;
        } else {
            const std::uint64_t interval = k.number("full_attention_interval").value_or(4);
            if (interval == 0) {
                k.error("full_attention_interval", "must be at least 1");
                return;
            }
            if (!k.get("full_attention_interval"))
                out.assumed.emplace_back(t + ".full_attention_interval = 4 (llama.cpp's default; not in the file)");
            for (std::uint64_t l = 0; l < n; ++l)
                if ((l + 1) % interval != 0) specs[l].kind = LayerKind::recurrent;
        }
        described = true;
    }

    // Sliding and chunked layers.
    std::uint64_t period = 0, window = 0;
    LayerKind kind = LayerKind::sliding;
    const auto window_key = k.number("attention.sliding_window");
    if (t == "gemma2") {
        period = 2, window = window_key.value_or(4096);
        if (!window_key) out.assumed.emplace_back("gemma2.attention.sliding_window = 4096 (llama.cpp's default)");
    } else if (one_of(t, {"gemma3", "cohere2", "gpt-oss"})) {
        period = t == "gemma3" ? 6 : (t == "cohere2" ? 4 : 2);
        window = window_key.value_or(0);
        if (!window_key && t != "gemma3") k.error("attention.sliding_window", "is missing (llama.cpp requires it)");
    } else if (t == "olmo2" && window_key.value_or(0) > 0) {
        period = 4, window = *window_key;  // Olmo 3: only when the window is above 0
    } else if (t == "exaone4" && n == 64) {
        period = 4, window = window_key.value_or(4096);  // only the 64-layer model slides
    } else if (t == "llama4" && !(window_key && *window_key == 0)) {
        // Chunked attention in chunks of 8,192 tokens on three layers of every four; there is no key for the chunk.
        period = 4, window = 8192, kind = LayerKind::chunked;
        out.notes.emplace_back("llama4: chunks of 8,192 tokens on three layers of four, as llama.cpp fixes them");
    } else if (t == "phi3" && window_key.value_or(0) > 0) {
        out.notes.emplace_back(
            "phi3.attention.sliding_window is set, but llama.cpp runs every phi3 layer over the "
            "whole context (it turns the window off), and so does this figure");
    }
    if (period > 0 && window > 0) {
        // A scalar attention.sliding_window_pattern overrides the period (newer llama.cpp, src/models/*.cpp); an
        // array of booleans marks each sliding layer (true) as the converter writes it for some models.
        if (const Value* p = k.get("attention.sliding_window_pattern")) {
            if (p->is_array() && p->items.size() == n) {
                for (std::uint64_t l = 0; l < n; ++l)
                    if (specs[l].kind == LayerKind::full && p->items[l].as_u64().value_or(0) != 0)
                        specs[l] = LayerSpec{kind, window, specs[l].kv_heads, 0, 0, specs[l].state};
                described = true;
                period = 0, window = 0;
            } else if (const auto np = p->as_u64(); np && !p->is_array()) {
                period = *np;
            } else {
                k.error("attention.sliding_window_pattern",
                        "must be a number or one boolean per layer, not " + p->describe());
            }
        }
        for (std::uint64_t l = 0; l < n && window > 0; ++l)
            if (specs[l].kind == LayerKind::full && slides(l, period)) {
                specs[l].kind = kind, specs[l].window = window;
                described = true;
            }
    } else if (window_key.value_or(0) > 0 && !one_of(t, {"phi3", "olmo2", "exaone4", "llama4"})) {
        // llama, qwen2, qwen3, mistral … : llama.cpp reads no window for them and attends over the whole context.
        out.notes.push_back(t + ".attention.sliding_window = " + format_count(*window_key) +
                            " is not used by llama.cpp for " + t + "; every layer attends over the whole context");
    }
    if (described) a.layer_specs = std::move(specs);

    if (std::any_of(a.layer_specs.begin(), a.layer_specs.end(), [](const LayerSpec& s) { return s.keeps_state(); })) {
        a.recurrent = read_state(k, a);
        if (!a.recurrent && k.errors().empty())
            a.not_exact.push_back(t + " has recurrent layers whose state has no rule here; the state is not counted");
    }
}

void read_moe(Keys& k, ImportedModel& out) {
    Architecture& a = out.arch;
    const std::string& t = k.arch();
    const auto experts = k.number("expert_count").value_or(0);
    if (experts == 0) return;
    MoeDims m;
    m.experts = experts;
    m.experts_per_token = k.number("expert_used_count").value_or(0);
    if (m.experts_per_token == 0) k.error("expert_used_count", "must be above 0 when the model has experts");
    m.expert_intermediate_size = k.number("expert_feed_forward_length").value_or(a.intermediate_size);
    m.shared_experts = k.number("expert_shared_count").value_or(0);
    m.dense_layers = k.number("leading_dense_block_count").value_or(0);
    if (t == "llama4") {
        // Every expert layer has a shared expert (llama.cpp's graph reads ffn_*_shexp), with or without the key.
        if (!k.number("expert_shared_count")) m.shared_experts = 1;
        // A layer has experts when (il + 1) % interleave_moe_layer_step == 0.
        const std::uint64_t step = k.number("interleave_moe_layer_step").value_or(1);
        if (step > 1) m.period = step, m.offset = step - 1;
    } else if (t == "jamba") {
        m.period = 2, m.offset = 1;  // llama-model.cpp: jamba's odd layers hold the experts
    }
    a.moe = m;
}

// Exact parameter counts from the tensor infos: every element, and per token the elements a step uses (the
// experts' tensors, named *_exps with the expert count as their last dimension, count expert_used_count of them).
void count_parameters(const File& f, ImportedModel& out) {
    Checked total(0), active(0);
    const std::uint64_t experts = out.arch.moe ? out.arch.moe->experts : 0;
    const std::uint64_t used = out.arch.moe ? out.arch.moe->experts_per_token : 0;
    for (const TensorInfo& t : f.tensors) {
        Checked elements(1);
        for (const auto d : t.dims) elements = elements * d;
        total += elements;
        const bool expert = experts > 0 && t.name.find("_exps") != std::string::npos && t.dims.back() == experts;
        active += expert ? Checked(elements.value() / experts) * used : elements;
    }
    if (total.overflow() || active.overflow() || total.value() == 0) return;
    out.arch.params_total = total.value();
    out.arch.params_active = active.value();
}

// `by_type`: the tensors' bytes by ggml type, summed once where the weights are.
KvDtype weight_format(const std::map<std::uint32_t, std::uint64_t>& by_type, ImportedModel& out) {
    // The ggml type holding the most bytes names the weights' format when the calculator has it.
    std::uint32_t top = 1;
    std::uint64_t most = 0;
    for (const auto& [type, bytes] : by_type)
        if (bytes > most) top = type, most = bytes;
    const std::string name(type_info(top) ? type_info(top)->name : "unknown");
    std::string mix;
    for (const auto& [type, bytes] : by_type)
        if (const auto i = type_info(type)) mix += (mix.empty() ? "" : ", ") + std::string(i->name);
    out.weight_dtype_source = "the GGUF's tensors (" + mix + ")";
    if (const auto d = parse_kv_dtype(name == "f32" ? "fp32" : (name == "f16" ? "fp16" : name))) return *d;
    // A k-quant or i-quant mix (Q4_K_M: q4_K, q6_K, f32): the exact bytes are what counts while the shape is the
    // file's; the format named is llama.cpp's plain one nearest the file's bits a weight, which an estimate falls
    // back on once the shape is changed (bf16 would be about 3.5 times a Q4_K_M file).
    std::uint64_t bytes = 0;
    for (const auto& [type, b] : by_type) bytes += b;  // bounded: the sum the caller checked
    if (out.arch.params_total == 0) return KvDtype::bf16;
    const double bits = 8.0 * static_cast<double>(bytes) / static_cast<double>(out.arch.params_total);
    KvDtype nearest = KvDtype::bf16;
    for (const KvDtype d : {KvDtype::q4_0, KvDtype::q8_0, KvDtype::bf16})
        if (std::abs(bits_per_value(d) - bits) < std::abs(bits_per_value(nearest) - bits)) nearest = d;
    out.weight_dtype_source += "; " + number_text(bits, Notation::fixed, 2) + " bits a weight in all, nearest " +
                               std::string(to_string(nearest)) + " (" +
                               number_text(bits_per_value(nearest), Notation::fixed, 1) + ")";
    return nearest;
}

// The layer count, the heads and the sizes every architecture gives; `kv` gets the KV heads of each layer. The
// errors that stop the import, or none.
Errors read_dimensions(const File& f, Keys& k, const std::string& source, ImportedModel& out,
                       std::vector<std::uint64_t>& kv) {
    Architecture& a = out.arch;
    const std::string& t = k.arch();
    // Required for every architecture (llama-model.cpp load_hparams).
    a.max_positions = k.required("context_length");
    a.hidden_size = k.required("embedding_length");
    a.layers = k.required("block_count");
    if (!k.errors().empty()) return k.errors();
    if (a.layers == 0)
        return {FieldError{Field::layers, source + ": " + t + ".block_count is 0; a model has at least one layer"}};
    if (a.layers > kMaxLayers)
        return {FieldError{Field::layers, source + ": " + t + ".block_count is " + format_count(a.layers) +
                                              ", more layers than any model has"}};
    const std::vector<std::uint64_t> heads = k.per_layer("attention.head_count", a.layers);
    kv = k.per_layer("attention.head_count_kv", a.layers);
    if (!k.errors().empty()) return k.errors();
    if (kv.empty()) kv = heads;  // head_count_kv defaults to head_count
    a.query_heads = first_nonzero(heads);
    a.kv_heads = first_nonzero(kv);
    const std::uint64_t head0 = heads.empty() ? 0 : heads.front();
    if (std::any_of(heads.begin(), heads.end(), [&](std::uint64_t h) { return h != 0 && h != a.query_heads; }))
        out.notes.push_back(t + ".attention.head_count differs between layers; the query heads of the first are shown");

    // Head dimensions: key_length / value_length, else embedding_length / head_count of layer 0.
    const auto key_length = k.number("attention.key_length"), value_length = k.number("attention.value_length");
    const std::uint64_t split = head0 > 0 ? a.hidden_size / head0 : 0;
    a.head_dim_k = key_length.value_or(split);
    a.head_dim_v = value_length.value_or(split);
    const std::vector<std::uint64_t> ffn = k.per_layer("feed_forward_length", a.layers);
    a.intermediate_size = first_nonzero(ffn);
    if (const auto vocab = k.number("vocab_size")) {
        a.vocab_size = *vocab;
    } else if (const Value* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->is_array()) {
        a.vocab_size = tokens->count;
    }
    return {};
}

// deepseek2's attention keys; `kv` gets every layer's KV heads when the latent is cached.
void read_mla(Keys& k, ImportedModel& out, std::vector<std::uint64_t>& kv) {
    Architecture& a = out.arch;
    const auto rank = k.number("attention.kv_lora_rank");
    const auto k_mla = k.number("attention.key_length_mla"), v_mla = k.number("attention.value_length_mla");
    const std::uint64_t rope = k.number("rope.dimension_count").value_or(a.head_dim_k);
    if (rank && k_mla && v_mla && *k_mla > rope) {
        // MLA as llama.cpp caches it: one latent of kv_lora_rank and the rotary key per token and layer
        // (key_length = kv_lora_rank + rope; K only, the values are read back from the latent).
        a.mla = MlaDims{*rank, rope, *k_mla - rope, *v_mla, k.number("attention.q_lora_rank").value_or(0), 0};
        a.head_dim_k = *k_mla, a.head_dim_v = *v_mla;
        a.kv_heads = a.query_heads;  // every query head reads the one latent (as the config.json's count)
        kv.assign(a.layers, a.kv_heads);
    } else if (rank && k_mla && *k_mla <= rope) {
        // Present but no larger than the rotary part: no latent fits in it, and no rule here reads the file.
        a.not_exact.push_back("deepseek2.attention.key_length_mla is " + std::to_string(*k_mla) +
                              ", not more than the rotary dimension " + std::to_string(rope) +
                              ", so it holds no latent; the cache is counted as full keys and values for every "
                              "head, as a GGUF without it is");
    } else if (rank) {
        out.notes.emplace_back(
            "this GGUF has no deepseek2.attention.key_length_mla: it predates llama.cpp's MLA cache, and "
            "llama.cpp caches full keys and values for every head (convert the model again for the latent cache)");
    }
}

// The not-exact reasons for an architecture without a rule here and for the keys no rule read.
void find_unread_keys(const File& f, const Keys& k, Architecture& a) {
    const std::string& t = k.arch();
    if (std::find(kKnown.begin(), kKnown.end(), t) == kKnown.end())
        a.not_exact.push_back("general.architecture '" + t +
                              "' has no rule here: every layer is taken as attention over the whole context with " + t +
                              ".attention.head_count_kv heads");
    // Keys that change what a layer keeps and that no rule above read.
    for (const auto& [key, value] : f.metadata) {
        if (!key.starts_with(t + ".") || k.read().contains(key)) continue;
        for (const char* word : {"sliding", "swa", "chunk", "recurrent", "shared_kv", "nextn", "ssm.", "shortconv",
                                 "attention_interval", "kv_lora"})
            if (key.find(word) != std::string::npos) {
                a.not_exact.push_back(key + " (" + value.describe() +
                                      ") may change what the cache holds and is "
                                      "not read here");
                break;
            }
    }
}

// A tensor's bytes to the layer llama.cpp places it with (src/llama-arch.cpp LLM_TENSOR_INFOS: the token embeddings,
// their norm, the position and token-type embeddings and Gemma 3n's per-layer embeddings are the input layer's, kept
// in host memory; blk.N.* is block N's, its routed experts named *_exps; the rest, output and output_norm, the output
// layer's). A block past the layer count (a model's next-token-prediction layers) goes with the output layer.
void place_tensor(std::string_view name, std::uint64_t bytes, LayerWeights& layers) {
    // The sums are bounded by the file's total, checked by the caller.
    const auto stem = name.substr(0, name.find('.'));
    if (one_of(stem, {"token_embd", "token_embd_norm", "pos_embd", "token_types", "per_layer_token_embd"})) {
        layers.input_bytes += bytes;
        return;
    }
    if (name.starts_with("blk.")) {
        const std::string_view rest = name.substr(4);
        const auto number = u64_from_text(rest.substr(0, rest.find('.')));
        if (number && *number < layers.blocks.size()) {
            BlockWeights& block = layers.blocks[*number];
            block.bytes += bytes;
            if (rest.find("_exps.") != std::string_view::npos) block.expert_bytes += bytes;
            return;
        }
    }
    layers.output_bytes += bytes;
}

// The weights, their format and the MLP's shape from the tensor infos. The errors that stop the import, or none.
Errors read_weights(const File& f, const std::string& source, ImportedModel& out) {
    Architecture& a = out.arch;
    // Weights exactly as stored, and the shape of the MLP from the tensors' names.
    Checked weights(0);
    std::map<std::uint32_t, std::uint64_t> by_type;
    bool gate = false, ffn_tensors = false, bias = false, output = false;
    LayerWeights layers;
    layers.blocks.resize(a.layers <= kMaxLayers ? a.layers : 0);
    for (const TensorInfo& tensor : f.tensors) {
        auto b = tensor_bytes(tensor);
        if (!b) return {FieldError{"gguf", source + ": " + b.errors().front().message}};
        weights += Checked(*b);
        by_type[tensor.type] += *b;  // bounded by `weights`, checked in the same loop
        place_tensor(tensor.name, *b, layers);
        if (tensor.name.starts_with("blk.") && tensor.name.find(".ffn_") != std::string::npos) ffn_tensors = true;
        if (tensor.name.starts_with("blk.") && tensor.name.find(".ffn_gate") != std::string::npos) gate = true;
        if (tensor.name.starts_with("blk.") && tensor.name.find(".attn_q.bias") != std::string::npos) bias = true;
        if (tensor.name == "output.weight") output = true;
    }
    if (weights.overflow()) return {FieldError{"gguf", source + ": the tensors' sizes overflow 64 bits"}};
    out.weights_bytes = weights.value();
    out.weights_layers = std::move(layers);
    out.weights_source = format_count(out.weights_bytes) + " bytes, exact from the GGUF's " +
                         format_count_of(f.tensors.size(), "tensor", "tensors");
    // A file without its tensors' data: the sizes are the ones its tensor list gives, never a model that loads.
    if (const auto missing = missing_tensor_data(f)) {
        out.weights_source = format_count(out.weights_bytes) + " bytes, as the GGUF's tensor list gives its " +
                             format_count_of(f.tensors.size(), "tensor", "tensors") + " (the file lacks their data)";
        out.notes.push_back(*missing);
    }
    a.gated_mlp = ffn_tensors ? gate : !one_of(out.model_type, {"falcon", "starcoder2", "starcoder"});
    a.gguf_arch = out.model_type;  // general.architecture
    a.attention_bias = bias;
    a.tied_embeddings = !f.tensors.empty() && !output;  // llama.cpp reuses token_embd when output.weight is absent
    count_parameters(f, out);
    out.weight_dtype = weight_format(by_type, out);
    return {};
}

// validate()'s problems with the architecture `t` of `f` read, each said as the file's keys.
Errors said_as_keys(const File& f, const std::string& t, const std::string& source, const Architecture& a) {
    // The calculator's checks, said as the file's keys (llama-model.cpp load_hparams reads them): a missing head
    // count is one problem, not also the head dimensions it would have given.
    Errors problems = validate(a);
    const auto key_is = [&](const std::string& suffix) {
        const Value* v = f.find(t + "." + suffix);
        return t + "." + suffix + (v ? " is " + v->describe() : " is missing");
    };
    const bool heads_bad = std::any_of(problems.begin(), problems.end(),
                                       [](const FieldError& e) { return e.input == Field::query_heads; });
    Errors said;
    for (FieldError& p : problems) {
        std::string key;
        if (p.input == Field::query_heads) key = key_is("attention.head_count");
        if (p.input == Field::kv_heads) {
            if (heads_bad && !f.find(t + ".attention.head_count_kv")) continue;  // it defaults to head_count
            key = key_is("attention.head_count_kv");
        }
        if (p.input == Field::head_dim || p.input == Field::head_dim_v) {
            const std::string length = p.input == Field::head_dim ? "attention.key_length" : "attention.value_length";
            const bool given = f.find(t + "." + length) != nullptr;
            if (!given && heads_bad) continue;  // it would have been embedding_length / head_count
            key = given ? key_is(length)
                        : t + "." + length + " is missing and " + t + ".embedding_length / " + t +
                              ".attention.head_count is 0";
        }
        p.message = source + ": " + (key.empty() ? "" : key + ": ") + p.message;
        said.push_back(std::move(p));
    }
    return said;
}

}  // namespace

Result<ImportedModel> import(const File& f, const std::string& source) {
    ImportedModel out;
    const Value* arch_value = f.find("general.architecture");
    if (!arch_value || arch_value->type != Type::string || arch_value->s.empty())
        return FieldError{"general.architecture",
                          source + ": general.architecture is missing; llama.cpp cannot load a GGUF without it"};
    const std::string t = arch_value->s;
    out.model_type = t;
    Keys k(f, t, source);
    Architecture& a = out.arch;
    if (const Value* name = f.find("general.name"); name && name->type == Type::string) a.name = name->s;

    std::vector<std::uint64_t> kv;
    if (Errors e = read_dimensions(f, k, source, out, kv); !e.empty()) return e;
    if (t == "deepseek2") read_mla(k, out, kv);
    read_moe(k, out);
    read_layers(k, out, kv);
    if (!k.errors().empty()) return k.errors();

    find_unread_keys(f, k, a);
    if (Errors e = read_weights(f, source, out); !e.empty()) return e;

    // llama.cpp caches keys and values in f16 unless told otherwise (common/common.h cache_type_k/v).
    out.kv_dtype = KvDtype::fp16;
    out.kv_dtype_source = "llama.cpp's default cache type; its --cache-type-k/-v change it";
    out.engine = Engine::llama_cpp;

    if (Errors said = said_as_keys(f, t, source, a); !said.empty()) return said;
    return out;
}

std::optional<SplitName> split_name(std::string_view file_name) {
    // llama.cpp's gguf-split (examples/gguf-split, llama_split_path): PREFIX-%05d-of-%05d.gguf.
    constexpr std::string_view kOf = "-of-";
    const auto of = file_name.rfind(kOf);
    if (of == std::string_view::npos || of < 6 || file_name.size() != of + kOf.size() + 5 + 5) return std::nullopt;
    if (file_name.substr(of + kOf.size() + 5) != ".gguf" || file_name[of - 6] != '-') return std::nullopt;
    const auto digits = [](std::string_view d) -> std::optional<std::uint64_t> {
        std::uint64_t n = 0;
        for (const char c : d) {
            if (c < '0' || c > '9') return std::nullopt;
            n = n * 10 + static_cast<std::uint64_t>(c - '0');
        }
        return n;
    };
    const auto no = digits(file_name.substr(of - 5, 5)), count = digits(file_name.substr(of + kOf.size(), 5));
    if (!no || !count || *no == 0 || *no > *count) return std::nullopt;
    return SplitName{std::string(file_name.substr(0, of - 6)), *no, *count};
}

std::string split_piece_name(const SplitName& split, std::uint64_t no) {
    const auto five = [](std::uint64_t n) {
        std::string d = std::to_string(n);
        return std::string(d.size() < 5 ? 5 - d.size() : 0, '0') + d;
    };
    return split.prefix + "-" + five(no) + "-of-" + five(split.count) + ".gguf";
}

Result<ImportedModel> import_file(const std::string& path) {
    auto file = read_file(path);
    if (!file) return file.errors();
    // A model split into pieces (split.count, split.no): the first holds the metadata, and the tensors are spread
    // over all of them, so every piece's tensor infos are read for the weights.
    const Value* count = file->find("split.count");
    const std::uint64_t pieces = count ? count->as_u64().value_or(1) : 1;
    std::vector<std::string> cut_short;  // the pieces that end before their tensors' data
    if (pieces > 1) {
        const std::filesystem::path p(path);
        const auto split = split_name(p.filename().string());
        if (!split || split->count != pieces)
            return FieldError{"gguf", path + ": is one of " + std::to_string(pieces) +
                                          " pieces of a split model, but its name is not gguf-split's "
                                          "NAME-00001-of-" +
                                          split_piece_name({"", 1, pieces}, pieces).substr(13)};
        if (split->no != 1)
            return FieldError{"gguf", path + ": is piece " + std::to_string(split->no) + " of " +
                                          std::to_string(pieces) + " of a split model; open the first, " +
                                          split_piece_name(*split, 1)};
        // Each piece holds its own tensors' data: checked piece by piece, then the list is one.
        if (const auto missing = missing_tensor_data(*file))
            cut_short.push_back(p.filename().string() + ": " + *missing);
        for (std::uint64_t k = 2; k <= pieces; ++k) {
            const std::string piece = (p.parent_path() / split_piece_name(*split, k)).string();
            auto more = read_file(piece);
            if (!more) return more.errors();
            if (const auto missing = missing_tensor_data(*more))
                cut_short.push_back(split_piece_name(*split, k) + ": " + *missing);
            for (auto& t : more.value().tensors) file.value().tensors.emplace_back(std::move(t));
        }
        file.value().file_bytes = 0;  // the pieces were checked above, each against its own size
    }
    auto imported = import(*file, path);
    if (!imported) return imported;
    ImportedModel& m = imported.value();
    if (!cut_short.empty()) {
        m.weights_source = format_count(m.weights_bytes) + " bytes, as the GGUF's tensor list gives them (" +
                           format_count_of(cut_short.size(), "piece lacks", "pieces lack") + " their data)";
        m.notes.insert(m.notes.end(), cut_short.begin(), cut_short.end());
    }
    if (m.arch.name.empty()) m.arch.name = std::filesystem::path(path).stem().string();
    if (pieces > 1) m.weights_source += " in " + std::to_string(pieces) + " files";
    return imported;
}

}  // namespace kvscope::gguf
