#pragma once
// The shape of a transformer, as far as memory and decode cost care.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/result.h"

namespace kvscope {

enum class AttentionKind { MHA, GQA, MQA, MLA };
std::string_view to_string(AttentionKind kind);

// Multi-head latent attention (DeepSeek-V2/V3): one compressed latent of
// kv_lora_rank values plus a shared rotary key of qk_rope_head_dim values per token.
struct MlaDims {
    std::uint64_t kv_lora_rank = 0;
    std::uint64_t qk_rope_head_dim = 0;
    std::uint64_t qk_nope_head_dim = 0;
    std::uint64_t v_head_dim = 0;
    std::uint64_t q_lora_rank = 0;  // 0: queries are projected directly
    friend bool operator==(const MlaDims&, const MlaDims&) = default;
};

// Mixture of experts. Layers before `dense_layers` use the dense MLP.
struct MoeDims {
    std::uint64_t experts = 0;
    std::uint64_t experts_per_token = 0;
    std::uint64_t expert_intermediate_size = 0;
    std::uint64_t shared_experts = 0;
    std::uint64_t dense_layers = 0;
    friend bool operator==(const MoeDims&, const MoeDims&) = default;
};

struct Architecture {
    std::string name;
    std::uint64_t layers = 0;
    std::uint64_t query_heads = 0;
    std::uint64_t kv_heads = 0;
    std::uint64_t head_dim_k = 0;
    std::uint64_t head_dim_v = 0;
    std::uint64_t hidden_size = 0;
    // Empty: every layer attends to the full context. Otherwise one entry per
    // layer: 0 = full attention, w > 0 = sliding window of w tokens.
    std::vector<std::uint64_t> layer_windows;
    std::optional<MlaDims> mla;
    std::optional<MoeDims> moe;
    std::uint64_t vocab_size = 0;
    std::uint64_t intermediate_size = 0;
    std::uint64_t max_positions = 0;
    bool gated_mlp = true;  // SwiGLU/GeGLU: three matrices; false: two (GPT-2, Falcon)
    bool tied_embeddings = false;
    bool attention_bias = false;
    // Published counts (0 = estimate from the shape).
    std::uint64_t params_total = 0;
    std::uint64_t params_active = 0;
    // Why the figures for this model are not exact: config fields that change which layers cache
    // what (hybrid, chunked, shared-KV layouts) that the calculator does not model yet. Every
    // report of this model carries them as warnings; empty for a model that is described exactly.
    std::vector<std::string> not_exact;

    friend bool operator==(const Architecture&, const Architecture&) = default;

    [[nodiscard]] std::uint64_t window_of(std::uint64_t layer) const {
        return layer_windows.empty() ? 0 : layer_windows.at(layer);
    }
    [[nodiscard]] bool has_sliding_layers() const;
};

// Upper bounds far above any published model (the largest have about 130 layers and
// 128 heads) that keep per-layer tables and divisor lists small: a typo such as
// 10^15 layers is an error, not an attempt to allocate a table that large.
constexpr std::uint64_t kMaxLayers = 1ull << 16;
constexpr std::uint64_t kMaxHeads = 1ull << 20;

// Every problem, each with the field it belongs to (layers, query_heads, kv_heads, …).
Errors validate(const Architecture& arch);

AttentionKind attention_kind(const Architecture& arch);

// "GQA-8" style label: MHA, GQA-8, MQA, MLA.
std::string attention_label(const Architecture& arch);

struct ParameterCount {
    std::uint64_t total = 0;
    std::uint64_t active = 0;     // per token (MoE: routed experts in use + shared)
    std::uint64_t embedding = 0;  // the input embedding table (read one row per token)
    bool estimated = false;       // true: computed from the shape, not published
};

// Published counts when the architecture carries them, else the estimate.
ParameterCount parameters(const Architecture& arch);
// Always the count computed from the shape (embeddings, attention, MLP/experts, norms).
ParameterCount estimate_parameters(const Architecture& arch);

// The lesson's teaching model: 32 layers, 32 heads, model dim 4096, head dim 128.
Architecture teaching_model();

}  // namespace kvscope
