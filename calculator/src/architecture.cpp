#include "kvscope/calculator/architecture.h"

#include <algorithm>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

std::string_view to_string(AttentionKind kind) {
    switch (kind) {
        case AttentionKind::MHA:
            return "MHA";
        case AttentionKind::GQA:
            return "GQA";
        case AttentionKind::MQA:
            return "MQA";
        case AttentionKind::MLA:
            return "MLA";
    }
    return "?";
}

namespace {

struct KindName {
    LayerKind kind;
    std::string_view id;
};
constexpr KindName kLayerKinds[] = {
    {LayerKind::full, "full"},     {LayerKind::sliding, "sliding"},     {LayerKind::chunked, "chunked"},
    {LayerKind::shared, "shared"}, {LayerKind::recurrent, "recurrent"}, {LayerKind::none, "none"},
};

struct StateName {
    StateKind kind;
    std::string_view id;
    std::string_view words;  // in the layer mix
};
constexpr StateName kStateKinds[] = {
    {StateKind::mamba, "mamba", "Mamba"},
    {StateKind::mamba2, "mamba2", "Mamba-2"},
    {StateKind::gated_delta_net, "gated_delta_net", "linear attention (gated DeltaNet)"},
    {StateKind::linear_attention, "linear_attention", "linear attention"},
    {StateKind::short_conv, "short_conv", "short convolution"},
    {StateKind::kimi_delta, "kimi_delta_attention", "linear attention (Kimi Delta Attention)"},
    {StateKind::rg_lru, "rg_lru", "RG-LRU recurrence"},
};
static_assert(std::size(kLayerKinds) == kLayerKindCount &&
                  lists_in_order(kLayerKinds, [](const KindName& k) { return k.kind; }),
              "kLayerKinds: one entry per LayerKind, in order");
static_assert(std::size(kStateKinds) == kStateKindCount &&
                  lists_in_order(kStateKinds, [](const StateName& k) { return k.kind; }),
              "kStateKinds: one entry per StateKind, in order");

}  // namespace

namespace {

// An enum's id in its table, and back.
template <class Table, class Kind>
std::string_view id_of(const Table& table, Kind kind) {
    for (const auto& k : table)
        if (k.kind == kind) return k.id;
    return "?";
}
template <class Table>
auto kind_of(const Table& table, std::string_view text) -> std::optional<decltype(table[0].kind)> {
    for (const auto& k : table)
        if (k.id == text) return k.kind;
    return std::nullopt;
}
template <class Table>
std::string ids_of(const Table& table) {
    std::string out;
    for (const auto& k : table) out += (out.empty() ? "" : ", ") + std::string(k.id);
    return out;
}

}  // namespace

std::string layer_kind_ids() { return ids_of(kLayerKinds); }
std::string state_kind_ids() { return ids_of(kStateKinds); }
std::string_view to_string(LayerKind kind) { return id_of(kLayerKinds, kind); }
std::optional<LayerKind> parse_layer_kind(std::string_view text) { return kind_of(kLayerKinds, text); }
std::string_view to_string(StateKind kind) { return id_of(kStateKinds, kind); }
std::optional<StateKind> parse_state_kind(std::string_view text) { return kind_of(kStateKinds, text); }

std::string_view layer_kind_name(const Architecture& a, LayerKind kind) {
    return kind == LayerKind::full && a.mla ? "mla" : to_string(kind);
}

bool Architecture::has_sliding_layers() const { return count_layers(LayerKind::sliding) > 0; }

std::uint64_t Architecture::count_layers(LayerKind kind) const {
    if (layer_specs.empty()) return kind == LayerKind::full ? layers : 0;
    return static_cast<std::uint64_t>(
        std::count_if(layer_specs.begin(), layer_specs.end(), [kind](const LayerSpec& s) { return s.kind == kind; }));
}

std::uint64_t Architecture::attention_layers() const {
    if (layer_specs.empty()) return layers;
    return static_cast<std::uint64_t>(
        std::count_if(layer_specs.begin(), layer_specs.end(), [](const LayerSpec& s) { return s.attends(); }));
}

std::uint64_t Architecture::state_layers() const {
    return static_cast<std::uint64_t>(
        std::count_if(layer_specs.begin(), layer_specs.end(), [](const LayerSpec& s) { return s.keeps_state(); }));
}

std::uint64_t Architecture::kv_heads_of(std::uint64_t l) const {
    const LayerSpec s = layer(l);
    return s.kv_heads > 0 ? s.kv_heads : kv_heads;
}
std::uint64_t Architecture::head_dim_k_of(std::uint64_t l) const {
    const LayerSpec s = layer(l);
    return s.head_dim_k > 0 ? s.head_dim_k : head_dim_k;
}
std::uint64_t Architecture::head_dim_v_of(std::uint64_t l) const {
    const LayerSpec s = layer(l);
    return s.head_dim_v > 0 ? s.head_dim_v : head_dim_v;
}

Architecture Architecture::all_full_attention() const {
    Architecture a = *this;
    // Every layer attends to everything; a layer's own heads and dimensions stay (Gemma 4's global layers).
    bool own_heads = false;
    for (auto& l : a.layer_specs) {
        l = {LayerKind::full, 0, l.kv_heads, l.head_dim_k, l.head_dim_v, false};
        own_heads = own_heads || l != LayerSpec{};
    }
    if (!own_heads) a.layer_specs.clear();
    a.recurrent.reset();
    a.name = name + " (every layer full attention)";
    return a;
}

std::vector<LayerSpec> sliding_layers(const std::vector<std::uint64_t>& windows) {
    std::vector<LayerSpec> out;
    out.reserve(windows.size());
    for (const auto w : windows) out.push_back({w ? LayerKind::sliding : LayerKind::full, w});
    return out;
}

std::vector<std::uint64_t> layer_windows(const Architecture& a) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t l = 0; l < a.layer_specs.size(); ++l) out.push_back(a.window_of(l));
    return out;
}

std::uint64_t attention_period(const Architecture& a) {
    if (a.state_layers() == 0) return 0;
    std::vector<std::uint64_t> attending;
    for (const LayerSpec& s : a.layer_specs)
        if (s.state && s.attends()) return 0;  // attention beside a recurrent mixer in one layer (Falcon-H1)
    for (std::uint64_t l = 0; l < a.layers; ++l)
        if (a.layer(l).kind == LayerKind::full)
            attending.push_back(l);
        else if (a.layer(l).kind != LayerKind::recurrent)
            return 0;  // other kinds: not a simple period
    if (attending.empty()) return 0;
    const std::uint64_t n = attending.size() > 1 ? attending[1] - attending[0] : a.layers;
    if (n == 0 || attending.front() >= n) return 0;
    for (std::uint64_t l = 0; l < a.layers; ++l)
        if ((l % n == attending.front()) != (a.layer(l).kind == LayerKind::full)) return 0;
    return n;
}

Architecture with_attention_period(const Architecture& a, std::uint64_t n) {
    Architecture out = a;
    if (n == 0 || a.layer_specs.empty()) return out;
    // The last layer of every n attends, as a config's full_attention_interval = n says it (transformers
    // configuration_qwen3_next.py: layer i is "full_attention" when (i + 1) % full_attention_interval == 0; Qwen3.5,
    // MiniMax's attn_type_list and Kimi Linear's full_attn_layers place it the same way). One n, one layout, whatever
    // was set before, so that the window gives what kvscope-cli reads from that config.
    for (std::uint64_t l = 0; l < out.layers; ++l) {
        LayerSpec& s = out.layer_specs[l];
        s.kind = (l + 1) % n == 0 ? LayerKind::full : LayerKind::recurrent;
        s.window = 0;
    }
    return out;
}

std::uint64_t layer_window(const Architecture& a, LayerKind kind) {
    for (const LayerSpec& s : a.layer_specs)
        if (s.kind == kind) return s.window;
    return 0;
}

Architecture with_layer_window(const Architecture& a, LayerKind kind, std::uint64_t window) {
    Architecture out = a;
    for (LayerSpec& s : out.layer_specs)
        if (s.kind == kind) s.window = window;
    return out;
}

std::string layer_mix_text(const Architecture& a) {
    if (a.layer_specs.empty()) return "";
    const std::string state_words = [&] {
        if (!a.recurrent) return std::string("recurrent");
        for (const auto& k : kStateKinds)
            if (k.kind == a.recurrent->kind) return std::string(k.words);
        return std::string("recurrent");
    }();
    // Parts in the order of first appearance, each a description and a count.
    std::vector<std::pair<std::string, std::uint64_t>> parts;
    for (std::uint64_t l = 0; l < a.layer_specs.size(); ++l) {
        const LayerSpec& s = a.layer_specs[l];
        std::string what;
        switch (s.kind) {
            case LayerKind::full:
                what = a.mla ? "MLA" : "full attention";
                break;
            case LayerKind::sliding:
                what = "sliding window " + format_count(s.window);
                break;
            case LayerKind::chunked:
                what = "chunked attention " + format_count(s.window);
                break;
            case LayerKind::shared:
                what = "shared KV (no cache of their own)";
                break;
            case LayerKind::recurrent:
                what = state_words;
                break;
            case LayerKind::none:
                what = "MLP only";
                break;
        }
        if (s.state && s.kind != LayerKind::recurrent) what += " + " + state_words;
        if (s.no_indexer && s.caches_kv()) what += " without an indexer key";
        if (s.attends() && (s.kv_heads > 0 || s.head_dim_k > 0))
            what += " (" + std::to_string(a.kv_heads_of(l)) + " KV heads × " + std::to_string(a.head_dim_k_of(l)) +
                    (a.head_dim_v_of(l) != a.head_dim_k_of(l) ? "/" + std::to_string(a.head_dim_v_of(l)) : "") + ")";
        auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == what; });
        if (it == parts.end())
            parts.emplace_back(what, 1);
        else
            ++it->second;
    }
    if (parts.size() == 1 && parts.front().first == "full attention") return "";
    std::string out = std::to_string(a.layers) + " layers: ";
    for (std::size_t i = 0; i < parts.size(); ++i)
        out += (i ? ", " : "") + std::to_string(parts[i].second) + " " + parts[i].first;
    return out;
}

Errors validate(const Architecture& a) {
    Errors e;
    auto need_positive = [&](std::uint64_t v, Field field, const char* what) {
        if (v == 0) e.push_back({field, std::string(what) + " must be at least 1"});
    };
    need_positive(a.layers, Field::layers, "the number of layers");
    // A model none of whose layers attends (a pure state-space model) has no heads to check; a draft's layers
    // (with_draft_layers) carry their own heads and head dimensions.
    const bool attends = a.layers == 0 || a.layer_specs.empty() ||
                         std::any_of(a.layer_specs.begin(), a.layer_specs.end(),
                                     [](const LayerSpec& s) { return s.attends() && !s.draft; });
    if (attends) need_positive(a.query_heads, Field::query_heads, "the number of query heads");
    auto at_most = [&](std::uint64_t v, std::uint64_t limit, Field field, const char* what) {
        if (v > limit)
            e.push_back({field, std::string(what) + " (" + format_count(v) + ") is more than the " +
                                    format_count(limit) + " supported"});
    };
    at_most(a.layers, kMaxLayers, Field::layers, "the number of layers");
    at_most(a.mtp_layers, kMaxMtpLayers, Field::mtp_layers, "the number of MTP layers");
    at_most(a.query_heads, kMaxHeads, Field::query_heads, "the number of query heads");
    if (!a.mla && attends) {
        need_positive(a.kv_heads, Field::kv_heads, "the number of KV heads");
        need_positive(a.head_dim_k, Field::head_dim, "the key head dimension");
        need_positive(a.head_dim_v, Field::head_dim_v, "the value head dimension");
    }
    if (a.kv_heads > 0 && a.query_heads > 0 && !a.mla) {
        if (a.kv_heads > a.query_heads)
            e.push_back({Field::kv_heads, "KV heads (" + std::to_string(a.kv_heads) + ") cannot exceed query heads (" +
                                              std::to_string(a.query_heads) + ")"});
        else if (a.query_heads % a.kv_heads != 0)
            e.push_back({Field::kv_heads, "KV heads (" + std::to_string(a.kv_heads) +
                                              ") must divide the query heads (" + std::to_string(a.query_heads) +
                                              ") so each KV head serves a whole group"});
    }
    if (!a.layer_specs.empty() && a.layers > 0 && a.layer_specs.size() != a.layers)  // 0 layers is said once
        e.push_back({Field::layer_specs, "there are " + std::to_string(a.layer_specs.size()) +
                                             " per-layer descriptions for " + std::to_string(a.layers) + " layers"});
    for (std::size_t l = 0; l < a.layer_specs.size(); ++l) {
        const LayerSpec& s = a.layer_specs[l];
        // Named only when something is wrong: validation runs on every recompute, layer by layer.
        const auto which = [&] { return "layer " + std::to_string(l) + " (" + std::string(to_string(s.kind)) + ")"; };
        if ((s.kind == LayerKind::sliding || s.kind == LayerKind::chunked) && s.window == 0) {
            e.push_back({s.kind == LayerKind::sliding ? Field::sliding_window : Field::attention_chunk_size,
                         which() + " needs a window of at least 1 token"});
            break;
        }
        if (s.kv_heads > kMaxHeads || s.head_dim_k > kMaxHeads || s.head_dim_v > kMaxHeads) {
            e.push_back({Field::kv_heads, which() + ": its heads or head dimensions are beyond the " +
                                              format_count(kMaxHeads) + " supported"});
            break;
        }
        if (s.kv_heads > 0 && a.query_heads > 0 && a.query_heads % s.kv_heads != 0 && !s.draft) {
            e.push_back({Field::kv_heads, which() + ": KV heads (" + std::to_string(s.kv_heads) +
                                              ") must divide the query heads (" + std::to_string(a.query_heads) + ")"});
            break;
        }
        if (s.keeps_state() && !a.recurrent) {
            e.push_back({Field::recurrent_state, which() + " keeps a recurrent state, but the model describes none"});
            break;
        }
    }
    if (a.recurrent) {
        const RecurrentState& r = *a.recurrent;
        for (const std::uint64_t v : {r.conv_kernel, r.conv_channels, r.groups, r.heads, r.head_dim, r.state_size})
            if (v > (1ull << 24)) {
                e.push_back({Field::recurrent_state, "a recurrent state dimension (" + format_count(v) +
                                                         ") is beyond the 16,777,216 supported"});
                break;
            }
        if (r.conv_kernel == 1 || (r.conv_kernel == 0 && r.heads == 0))
            e.push_back(
                {Field::conv_kernel, "the recurrent state needs a convolution of width 2 or more, or SSM heads"});
        else if ((r.conv_kernel < 2 || r.conv_channels + r.groups * r.state_size == 0) &&
                 (r.heads == 0 || r.head_dim == 0 || r.state_size == 0))
            e.push_back({Field::state_size,
                         "the recurrent state has no values: its convolution has no channels and its "
                         "SSM state no heads (expand, n_groups or num_heads may be 0)"});
        if (r.heads > 0 && (r.head_dim == 0 || r.state_size == 0))
            e.push_back({Field::state_size, "the SSM state needs a head dimension and a state size of at least 1"});
    }
    if (a.mla) {
        need_positive(a.mla->kv_lora_rank, Field::kv_lora_rank, "the MLA latent rank");
        need_positive(a.mla->v_head_dim, Field::v_head_dim, "the MLA value head dimension");
        if (a.mla->qk_nope_head_dim + a.mla->qk_rope_head_dim == 0)
            e.push_back({Field::qk_nope_head_dim, "MLA query/key head dimensions must not both be 0"});
    }
    if (a.moe) {
        need_positive(a.moe->experts, Field::num_experts, "the number of experts");
        need_positive(a.moe->experts_per_token, Field::experts_per_token, "experts per token");
        if (a.moe->experts_per_token > a.moe->experts)
            e.push_back({Field::experts_per_token, "experts per token (" + std::to_string(a.moe->experts_per_token) +
                                                       ") cannot exceed the number of experts (" +
                                                       std::to_string(a.moe->experts) + ")"});
        if (a.moe->dense_layers > a.layers)
            e.push_back({Field::first_k_dense_replace, "more dense layers than layers"});
        if (a.moe->period == 0 || (a.moe->period > 1 && a.moe->offset >= a.moe->period))
            e.push_back(
                {Field::expert_layer_period, "the experts' layer offset must be below their period (at least 1)"});
    }
    if (a.params_active > a.params_total) e.push_back({Field::params_active, "active parameters exceed the total"});
    return e;
}

AttentionKind attention_kind(const Architecture& a) {
    if (a.mla) return AttentionKind::MLA;
    if (a.kv_heads == 0) return AttentionKind::MHA;
    if (a.kv_heads == a.query_heads) return AttentionKind::MHA;
    if (a.kv_heads == 1) return AttentionKind::MQA;
    return AttentionKind::GQA;
}

std::string attention_label(const Architecture& a) {
    if (a.attention_layers() == 0) return "no attention";
    const auto kind = attention_kind(a);
    if (kind == AttentionKind::GQA) return "GQA-" + std::to_string(a.kv_heads);
    return std::string(to_string(kind));
}

Architecture teaching_model() {
    Architecture a;
    a.name = "Teaching model (32 layers, 32 heads, d=4096)";
    a.layers = 32;
    a.query_heads = 32;
    a.kv_heads = 32;
    a.head_dim_k = 128;
    a.head_dim_v = 128;
    a.hidden_size = 4096;
    a.vocab_size = 32000;
    a.intermediate_size = 11008;
    a.max_positions = 8192;
    return a;
}

}  // namespace kvscope
