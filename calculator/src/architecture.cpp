#include "kvscope/calculator/architecture.h"

#include <algorithm>

#include "kvscope/calculator/checked.h"
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

bool Architecture::has_sliding_layers() const {
    return std::any_of(layer_windows.begin(), layer_windows.end(), [](auto w) { return w != 0; });
}

Errors validate(const Architecture& a) {
    Errors e;
    auto need_positive = [&](std::uint64_t v, const char* field, const char* what) {
        if (v == 0) e.push_back({field, std::string(what) + " must be at least 1"});
    };
    need_positive(a.layers, "layers", "the number of layers");
    need_positive(a.query_heads, "query_heads", "the number of query heads");
    auto at_most = [&](std::uint64_t v, std::uint64_t limit, const char* field, const char* what) {
        if (v > limit)
            e.push_back({field, std::string(what) + " (" + format_count(v) + ") is more than the " +
                                    format_count(limit) + " supported"});
    };
    at_most(a.layers, kMaxLayers, "layers", "the number of layers");
    at_most(a.query_heads, kMaxHeads, "query_heads", "the number of query heads");
    if (!a.mla) {
        need_positive(a.kv_heads, "kv_heads", "the number of KV heads");
        need_positive(a.head_dim_k, "head_dim", "the key head dimension");
        need_positive(a.head_dim_v, "head_dim_v", "the value head dimension");
    }
    if (a.kv_heads > 0 && a.query_heads > 0 && !a.mla) {
        if (a.kv_heads > a.query_heads)
            e.push_back({"kv_heads", "KV heads (" + std::to_string(a.kv_heads) + ") cannot exceed query heads (" +
                                         std::to_string(a.query_heads) + ")"});
        else if (a.query_heads % a.kv_heads != 0)
            e.push_back({"kv_heads", "KV heads (" + std::to_string(a.kv_heads) + ") must divide the query heads (" +
                                         std::to_string(a.query_heads) + ") so each KV head serves a whole group"});
    }
    if (!a.layer_windows.empty() && a.layers > 0 && a.layer_windows.size() != a.layers)  // 0 layers is said once
        e.push_back({"layer_windows", "there are " + std::to_string(a.layer_windows.size()) +
                                          " per-layer windows for " + std::to_string(a.layers) + " layers"});
    if (a.mla) {
        need_positive(a.mla->kv_lora_rank, "kv_lora_rank", "the MLA latent rank");
        need_positive(a.mla->v_head_dim, "v_head_dim", "the MLA value head dimension");
        if (a.mla->qk_nope_head_dim + a.mla->qk_rope_head_dim == 0)
            e.push_back({"qk_nope_head_dim", "MLA query/key head dimensions must not both be 0"});
    }
    if (a.moe) {
        need_positive(a.moe->experts, "num_experts", "the number of experts");
        need_positive(a.moe->experts_per_token, "experts_per_token", "experts per token");
        if (a.moe->experts_per_token > a.moe->experts)
            e.push_back({"experts_per_token", "experts per token (" + std::to_string(a.moe->experts_per_token) +
                                                  ") cannot exceed the number of experts (" +
                                                  std::to_string(a.moe->experts) + ")"});
        if (a.moe->dense_layers > a.layers) e.push_back({"first_k_dense_replace", "more dense layers than layers"});
    }
    if (a.params_active > a.params_total) e.push_back({"params_active", "active parameters exceed the total"});
    return e;
}

AttentionKind attention_kind(const Architecture& a) {
    if (a.mla) return AttentionKind::MLA;
    if (a.kv_heads == a.query_heads) return AttentionKind::MHA;
    if (a.kv_heads == 1) return AttentionKind::MQA;
    return AttentionKind::GQA;
}

std::string attention_label(const Architecture& a) {
    const auto kind = attention_kind(a);
    if (kind == AttentionKind::GQA) return "GQA-" + std::to_string(a.kv_heads);
    return std::string(to_string(kind));
}

ParameterCount estimate_parameters(const Architecture& a) {
    const std::uint64_t H = a.hidden_size;
    Checked attention;
    if (a.mla) {
        const auto& m = *a.mla;
        const std::uint64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
        const Checked q = m.q_lora_rank
                              ? Checked(H) * m.q_lora_rank + m.q_lora_rank + Checked(m.q_lora_rank) * a.query_heads * qk
                              : Checked(H) * a.query_heads * qk;
        const Checked kv_down = Checked(H) * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank;
        const Checked kv_up = Checked(m.kv_lora_rank) * a.query_heads * (m.qk_nope_head_dim + m.v_head_dim);
        const Checked o = Checked(a.query_heads) * m.v_head_dim * H;
        attention = q + kv_down + kv_up + o;
    } else {
        const Checked q_out = Checked(a.query_heads) * a.head_dim_k;
        const Checked kv_out = Checked(a.kv_heads) * (a.head_dim_k + a.head_dim_v);
        attention = Checked(H) * (q_out + kv_out) + Checked(a.query_heads) * a.head_dim_v * H;
        if (a.attention_bias) attention += q_out + kv_out + H;
    }
    const std::uint64_t mats = a.gated_mlp ? 3 : 2;
    const Checked dense_mlp = Checked(mats) * H * a.intermediate_size;
    const Checked norms = Checked(2) * H;

    Checked total_layers, active_layers;
    for (std::uint64_t l = 0; l < a.layers; ++l) {
        Checked mlp_total = dense_mlp, mlp_active = dense_mlp;
        if (a.moe && l >= a.moe->dense_layers) {
            const Checked expert = Checked(mats) * H * a.moe->expert_intermediate_size;
            const Checked shared = expert * a.moe->shared_experts;
            const Checked router = Checked(H) * a.moe->experts;
            mlp_total = expert * a.moe->experts + shared + router;
            mlp_active = expert * a.moe->experts_per_token + shared + router;
        }
        total_layers += attention + mlp_total + norms;
        active_layers += attention + mlp_active + norms;
    }
    const Checked embedding = Checked(a.vocab_size) * H;
    const Checked head = a.tied_embeddings ? Checked(0) : embedding;
    const Checked total = total_layers + embedding + head + H;
    const Checked active = active_layers + embedding + head + H;
    ParameterCount p;
    p.estimated = true;
    // A shape that overflows 64 bits of parameters is rejected by validation
    // long before; saturate rather than wrap for display.
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    p.total = total.overflow() ? kMax : total.value();
    p.active = active.overflow() ? kMax : active.value();
    p.embedding = embedding.overflow() ? kMax : embedding.value();
    return p;
}

ParameterCount parameters(const Architecture& a) {
    ParameterCount p = estimate_parameters(a);
    if (a.params_total > 0) {
        p.total = a.params_total;
        p.active = a.params_active > 0 ? a.params_active : a.params_total;
        p.estimated = false;
    }
    return p;
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
