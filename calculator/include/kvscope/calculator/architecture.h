#pragma once
// The shape of a transformer, as far as memory and decode cost care.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/tables.h"

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
    // DeepSeek-V3.2's sparse-attention indexer keeps its own key of this many values per token and
    // layer (0: none); see mla_row_bytes.
    std::uint64_t indexer_head_dim = 0;
    friend bool operator==(const MlaDims&, const MlaDims&) = default;
};

// Mixture of experts. Layers before `dense_layers` use the dense MLP, and so do the layers between the experts'
// layers when they come every `period` layers (at `offset` within it: Jamba, Llama 4 Maverick).
struct MoeDims {
    std::uint64_t experts = 0;
    std::uint64_t experts_per_token = 0;
    std::uint64_t expert_intermediate_size = 0;
    std::uint64_t shared_experts = 0;
    std::uint64_t dense_layers = 0;
    std::uint64_t period = 1;
    std::uint64_t offset = 0;
    // The shared experts' width where it differs from the routed ones' (moe_shared_expert_intermediate_size,
    // shared_expert_intermediate_size; 0: expert_intermediate_size).
    std::uint64_t shared_intermediate_size = 0;
    // The width the routed experts work in where it is not the hidden size (Nemotron 3 Super's moe_latent_size: the
    // hidden state projected down to it before the experts and back after; 0: hidden_size).
    std::uint64_t latent_size = 0;
    friend bool operator==(const MoeDims&, const MoeDims&) = default;
    [[nodiscard]] bool has_experts(std::uint64_t layer) const {
        return layer >= dense_layers && (period <= 1 || layer % period == offset);
    }
};

// What one layer keeps per sequence. The importer's rule for each spelling names its source
// (transformers' configuration_*.py, vLLM's model and cache files) beside it.
enum class LayerKind : std::uint8_t {
    full,       // attention over the whole context: K and V (or the MLA latent) of every token
    sliding,    // attention over the last `window` tokens (Mistral, Gemma 2/3, gpt-oss)
    chunked,    // attention within chunks of `window` tokens (Llama 4): the cache keeps one chunk
    shared,     // attention over another layer's cache (Gemma 3n): no bytes of its own
    recurrent,  // no KV: a fixed state per sequence (Mamba, linear attention, short convolution)
    none,       // keeps nothing (an MLP-only block)
    last_ = none,
};
constexpr std::size_t kLayerKindCount = enum_count<LayerKind>();
std::string_view to_string(LayerKind kind);
std::optional<LayerKind> parse_layer_kind(std::string_view text);
std::string layer_kind_ids();  // "full, sliding, …": the names parse_layer_kind reads

struct LayerSpec {
    LayerKind kind = LayerKind::full;
    std::uint64_t window = 0;      // sliding: tokens kept; chunked: the chunk
    std::uint64_t kv_heads = 0;    // 0: the model's kv_heads
    std::uint64_t head_dim_k = 0;  // 0: the model's
    std::uint64_t head_dim_v = 0;  // 0: the model's
    bool state = false;            // keeps the model's recurrent state (recurrent layers; Falcon-H1's
                                   // attention layers, which run a Mamba mixer beside the attention)
    // A separate draft model's layer in the model's cache (draft.h with_draft_layers): its KV heads serve the
    // draft's own query heads, which the draft's validation checked, not the model's.
    bool draft = false;
    // A layer of an MLA model with a sparse-attention indexer that keeps no index key (GLM-5.2's layers that skip the
    // top-k selection: vLLM deepseek_v2.py builds them no Indexer).
    bool no_indexer = false;
    friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
    [[nodiscard]] bool attends() const {
        return kind == LayerKind::full || kind == LayerKind::sliding || kind == LayerKind::chunked ||
               kind == LayerKind::shared;
    }
    [[nodiscard]] bool caches_kv() const { return attends() && kind != LayerKind::shared; }
    [[nodiscard]] bool keeps_state() const { return state || kind == LayerKind::recurrent; }
};

// The recurrent state one layer keeps per sequence, in the shapes vLLM allocates
// (vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateShapeCalculator):
//   conv state: (conv_kernel - 1) x conv channels, the channels split over tensor parallelism;
//   SSM state:  heads x head_dim x state_size, the heads split over tensor parallelism.
enum class StateKind : std::uint8_t {
    mamba,             // Mamba-1: conv (k-1) x d_inner; SSM d_inner x d_state
    mamba2,            // Mamba-2: conv (k-1) x (d_inner + 2·groups·d_state); SSM heads x head_dim x d_state
    gated_delta_net,   // Qwen3-Next: conv (k-1) x (2·k_heads·d_k + v_heads·d_v); SSM v_heads x d_k x d_v
    linear_attention,  // MiniMax lightning attention: no conv; SSM heads x head_dim x head_dim
    short_conv,        // LFM2: conv (k-1) x hidden; no SSM state
    kimi_delta,        // Kimi Linear's KDA: conv (k-1) x 3·heads·head_dim (q, k, v); SSM heads x head_dim x head_dim
    rg_lru,            // RecurrentGemma's RG-LRU: conv (k-1) x hidden; a recurrence of lru_width values
    last_ = rg_lru,
};
constexpr std::size_t kStateKindCount = enum_count<StateKind>();
std::string_view to_string(StateKind kind);
std::optional<StateKind> parse_state_kind(std::string_view text);
std::string state_kind_ids();  // the names parse_state_kind reads
// Kinds whose SSM state is always fp32 whatever the engine's settings (vLLM kda_state_dtype; transformers'
// RG-LRU): --mamba-ssm-cache-dtype does not apply to them.
constexpr bool ssm_format_fixed(StateKind kind) { return kind == StateKind::kimi_delta || kind == StateKind::rg_lru; }

struct RecurrentState {
    StateKind kind = StateKind::mamba2;
    std::uint64_t conv_kernel = 0;    // the convolution's width; the state keeps conv_kernel - 1 steps (0: none)
    std::uint64_t conv_channels = 0;  // channels of the conv state besides the Mamba-2 B and C groups
    std::uint64_t groups = 0;         // Mamba-2 B/C groups (each adds 2·state_size conv channels)
    std::uint64_t heads = 0;          // SSM state heads (split over tensor parallelism; 0: no SSM state)
    std::uint64_t head_dim = 0;
    std::uint64_t state_size = 0;
    // Formats of the two tensors (vLLM: both follow the model's dtype unless mamba_cache_dtype /
    // mamba_ssm_cache_dtype say otherwise; vllm/config/cache.py, mamba_utils.py MambaStateDtypeCalculator).
    KvDtype conv_dtype = KvDtype::bf16;
    KvDtype ssm_dtype = KvDtype::bf16;
    friend bool operator==(const RecurrentState&, const RecurrentState&) = default;
};

struct Architecture {
    std::string name;
    // llama.cpp's name for the architecture (a GGUF's general.architecture: "llama", "phi3", "falcon", …), empty when
    // not known. A GGUF's tensor layout and llama-quantize's rules follow it (gguf_mix.cpp): Phi-3's and Falcon's
    // files hold Q, K and V as one attn_qkv matrix, and Falcon's mixes type ffn_down and attn_output by rules of
    // their own.
    std::string gguf_arch;
    std::uint64_t layers = 0;
    std::uint64_t query_heads = 0;
    std::uint64_t kv_heads = 0;
    std::uint64_t head_dim_k = 0;
    std::uint64_t head_dim_v = 0;
    std::uint64_t hidden_size = 0;
    // What each layer keeps. Empty: every layer is full attention with the model's heads.
    // Otherwise one entry per layer.
    std::vector<LayerSpec> layer_specs;
    // The state of the layers that keep one (LayerSpec::keeps_state).
    std::optional<RecurrentState> recurrent;
    std::optional<MlaDims> mla;
    std::optional<MoeDims> moe;
    std::uint64_t vocab_size = 0;
    std::uint64_t intermediate_size = 0;
    std::uint64_t max_positions = 0;
    bool gated_mlp = true;  // SwiGLU/GeGLU: three matrices; false: two (GPT-2, Falcon)
    // false: a layer is a mixer (attention, recurrent) or an MLP, never both (Nemotron-H's pattern); true: every
    // mixer has an MLP beside it. For the parameter estimate.
    bool mlp_beside_mixer = true;
    bool tied_embeddings = false;
    bool attention_bias = false;
    // Multi-token-prediction layers the checkpoint carries beside its decoder (num_nextn_predict_layers,
    // mtp_num_hidden_layers): counted only when the deployment serves them as a speculative draft (with_mtp_layers).
    std::uint64_t mtp_layers = 0;
    // Parameters beside the blocks the estimate builds from the shape (0 for most models): more embedding tables,
    // read one row per token, and more matrices in the layers. Gemma 3n's per-layer input embeddings, and its AltUp,
    // Laurel and per-layer-input projections (config_import.cpp read_gemma3n_parameters).
    std::uint64_t extra_embedding_params = 0;
    std::uint64_t extra_layer_params = 0;
    // Published counts (0 = estimate from the shape).
    std::uint64_t params_total = 0;
    std::uint64_t params_active = 0;
    // Why the figures for this model are not exact: config fields that change which layers cache
    // what (hybrid, chunked, shared-KV layouts) that the calculator does not model yet. Every
    // report of this model carries them as warnings; empty for a model that is described exactly.
    std::vector<std::string> not_exact;
    // Why the MTP layers' figures are not exact (kinds other than full attention in their layout): said by a fit
    // whose --mtp counts them, and by nothing else.
    std::vector<std::string> mtp_not_exact;

    friend bool operator==(const Architecture&, const Architecture&) = default;

    [[nodiscard]] LayerSpec layer(std::uint64_t l) const {
        return layer_specs.empty() ? LayerSpec{} : layer_specs.at(l);
    }
    // The window of a sliding layer, else 0.
    [[nodiscard]] std::uint64_t window_of(std::uint64_t l) const {
        const LayerSpec s = layer(l);
        return s.kind == LayerKind::sliding ? s.window : 0;
    }
    [[nodiscard]] bool has_sliding_layers() const;
    [[nodiscard]] std::uint64_t count_layers(LayerKind kind) const;
    // Layers that attend (full, sliding, chunked or shared): the variants MHA/GQA/MQA apply to these.
    [[nodiscard]] std::uint64_t attention_layers() const;
    [[nodiscard]] std::uint64_t state_layers() const;
    // The layer's KV heads and head dimensions (its own, or the model's).
    [[nodiscard]] std::uint64_t kv_heads_of(std::uint64_t l) const;
    [[nodiscard]] std::uint64_t head_dim_k_of(std::uint64_t l) const;
    [[nodiscard]] std::uint64_t head_dim_v_of(std::uint64_t l) const;
    // Every layer full attention with the model's heads: the comparison a hybrid design is measured against.
    [[nodiscard]] Architecture all_full_attention() const;
};

// Upper bounds far above any published model (the largest have about 130 layers and
// 128 heads) that keep per-layer tables and divisor lists small: a typo such as
// 10^15 layers is an error, not an attempt to allocate a table that large.
constexpr std::uint64_t kMaxLayers = 1ull << 16;
constexpr std::uint64_t kMaxHeads = 1ull << 20;
// Published checkpoints carry one to a few multi-token-prediction layers.
constexpr std::uint64_t kMaxMtpLayers = 64;

// Every problem, each with the field it belongs to (layers, query_heads, kv_heads, …).
Errors validate(const Architecture& arch);

AttentionKind attention_kind(const Architecture& arch);

// The kind as reports name it: "mla" for an MLA model's full-attention layers, else to_string(kind).
std::string_view layer_kind_name(const Architecture& arch, LayerKind kind);

// One spec a layer from one window a layer: 0 = full attention, w = a sliding window of w tokens.
std::vector<LayerSpec> sliding_layers(const std::vector<std::uint64_t>& windows);
// The sliding window of each layer (0 for any other layer); empty when the model has no per-layer description.
std::vector<std::uint64_t> layer_windows(const Architecture& arch);

// Edits a learner makes to the layer mix. The attention layers of a hybrid model are every n-th layer when
// they are evenly spaced (Qwen3-Next: n = 4, Jamba: n = 8); attention_period is that n, or 0. Setting it makes the
// last layer of every n attend and the others recurrent, as full_attention_interval = n places them (Qwen3-Next).
std::uint64_t attention_period(const Architecture& arch);
Architecture with_attention_period(const Architecture& arch, std::uint64_t n);
// The window of the sliding layers (or the chunk of the chunked ones), 0 when none; setting it changes them all.
std::uint64_t layer_window(const Architecture& arch, LayerKind kind);
Architecture with_layer_window(const Architecture& arch, LayerKind kind, std::uint64_t window);

// "48 layers: 12 full attention, 36 linear attention"-style summary of the layer mix; "" when every
// layer is full attention.
std::string layer_mix_text(const Architecture& arch);

// "GQA-8" style label: MHA, GQA-8, MQA, MLA.
std::string attention_label(const Architecture& arch);

// The lesson's teaching model: 32 layers, 32 heads, model dim 4096, head dim 128.
Architecture teaching_model();

}  // namespace kvscope
