// The parameter count of a model from its shape, layer by layer: attention on the layers that attend, the
// recurrent mixer on the layers that keep a state, the MLP or experts where the layer has one. Published
// counts win (parameters()); the estimate says it is one.
#include "kvscope/calculator/parameters.h"

#include <limits>

#include "kvscope/calculator/checked.h"

namespace kvscope {
namespace {

// q, k, v and o projections of one attention layer with its own heads and head dims (MLA: the latent's
// down and up projections; deepseek_v2 / deepseek_v3 modeling files).
Checked attention_parameters(const Architecture& a, std::uint64_t l) {
    const std::uint64_t H = a.hidden_size;
    if (a.mla) {
        const auto& m = *a.mla;
        const std::uint64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
        const Checked q = m.q_lora_rank
                              ? Checked(H) * m.q_lora_rank + m.q_lora_rank + Checked(m.q_lora_rank) * a.query_heads * qk
                              : Checked(H) * a.query_heads * qk;
        const Checked kv_down = Checked(H) * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank;
        const Checked kv_up = Checked(m.kv_lora_rank) * a.query_heads * (m.qk_nope_head_dim + m.v_head_dim);
        const Checked o = Checked(a.query_heads) * m.v_head_dim * H;
        return q + kv_down + kv_up + o;
    }
    const std::uint64_t dk = a.head_dim_k_of(l), dv = a.head_dim_v_of(l);
    const Checked q_out = Checked(a.query_heads) * dk;
    const Checked kv_out = Checked(a.kv_heads_of(l)) * (dk + dv);
    Checked p = Checked(H) * (q_out + kv_out) + Checked(a.query_heads) * dv * H;
    if (a.attention_bias) p += q_out + kv_out + H;
    return p;
}

// The weights of one recurrent mixer, from the state's dimensions and the model width, after the modeling
// file of each kind (biases and per-channel vectors included where they are whole vectors).
Checked mixer_parameters(const Architecture& a) {
    if (!a.recurrent) return {};
    const RecurrentState& r = *a.recurrent;
    const std::uint64_t H = a.hidden_size, k = r.conv_kernel;
    switch (r.kind) {
        case StateKind::mamba: {
            // modeling_mamba.py / modeling_jamba.py: in_proj H -> 2·d_inner, conv d_inner x k (+ bias),
            // x_proj d_inner -> dt_rank + 2·d_state, dt_proj dt_rank -> d_inner (+ bias), A_log d_inner x d_state,
            // D d_inner, out_proj d_inner -> H; dt_rank = ceil(H / 16).
            const std::uint64_t d = r.conv_channels, n = r.state_size, dt = (H + 15) / 16;
            return Checked(H) * 2 * d + Checked(d) * (k + 1) + Checked(d) * (dt + 2 * n) + Checked(dt) * d + d +
                   Checked(d) * n + d + Checked(d) * H;
        }
        case StateKind::mamba2: {
            // modeling_mamba2.py / nemotron_h / bamba: in_proj H -> 2·d_inner + 2·groups·d_state + heads, conv over
            // d_inner + 2·groups·d_state (+ bias), dt_bias, A_log, D per head, a gated norm of d_inner, out_proj.
            const std::uint64_t d = r.heads * r.head_dim, gn = r.groups * r.state_size;
            return Checked(H) * (2 * d + 2 * gn + r.heads) + Checked(d + 2 * gn) * (k + 1) + Checked(3) * r.heads + d +
                   Checked(d) * H;
        }
        case StateKind::gated_delta_net: {
            // modeling_qwen3_next.py: in_proj_qkvz H -> 2·key_dim + 2·value_dim, in_proj_ba H -> 2·v_heads, conv
            // over 2·key_dim + value_dim, dt_bias and A_log per value head, a norm of d_v, out_proj value_dim -> H.
            const std::uint64_t value = r.heads * r.state_size, key = (r.conv_channels - value) / 2;
            return Checked(H) * (2 * key + 2 * value) + Checked(H) * 2 * r.heads + Checked(r.conv_channels) * k +
                   Checked(2) * r.heads + r.state_size + Checked(value) * H;
        }
        case StateKind::kimi_delta: {
            // Kimi Linear's KimiDeltaAttention (vLLM kda.py): q, k, v projections H -> heads·d and o_proj back,
            // their short convolutions, low-rank gates f and g (H -> d -> heads·d), beta H -> heads, A_log, dt_bias.
            const std::uint64_t p = r.heads * r.head_dim;
            return Checked(H) * 4 * p + Checked(3) * p * k +
                   Checked(2) * (Checked(H) * r.head_dim + Checked(r.head_dim) * p) + Checked(H) * r.heads +
                   Checked(2) * p;
        }
        case StateKind::linear_attention: {
            // MiniMax lightning attention (modeling_minimax.py): qkv H -> 3·heads·d, output_gate H -> heads·d,
            // a norm of heads·d, out_proj heads·d -> H.
            const std::uint64_t p = r.heads * r.head_dim;
            return Checked(H) * 5 * p + p;
        }
        case StateKind::short_conv:
            // modeling_lfm2.py Lfm2ShortConv: in_proj H -> 3·H, a depthwise conv of H x k, out_proj H -> H.
            return Checked(H) * 4 * H + Checked(H) * k;
        case StateKind::rg_lru: {
            // modeling_recurrent_gemma.py: linear_x, linear_y H -> lru, linear_out lru -> H (each with a bias),
            // conv lru x k (+ bias), the RG-LRU's input and recurrence gates (block-diagonal: lru²/heads each, with
            // biases) and its recurrent parameter.
            const std::uint64_t lru = r.heads, width = lru / (a.query_heads > 0 ? a.query_heads : 1);
            return Checked(3) * H * lru + Checked(2) * lru + H + Checked(lru) * (k + 1) +
                   Checked(2) * (Checked(lru) * width + lru) + lru;
        }
    }
    return {};
}

}  // namespace

LayerParameters layer_parameters(const Architecture& a, std::uint64_t l) {
    const std::uint64_t H = a.hidden_size;
    const std::uint64_t mats = a.gated_mlp ? 3 : 2;
    const LayerSpec s = a.layer(l);
    Checked matrices;
    if (s.attends()) matrices += attention_parameters(a, l);
    if (s.keeps_state()) matrices += mixer_parameters(a);
    const Checked own = Checked(2) * H + matrices;  // the two norms and the mixer
    // A layer without a mixer is an MLP block; the others carry one beside their mixer unless the model
    // alternates mixers and MLPs as separate blocks (Nemotron-H).
    const bool mlp = s.kind == LayerKind::none || a.mlp_beside_mixer;
    LayerParameters p;
    if (mlp && a.moe && a.moe->has_experts(l)) {
        // Routed experts in their latent width where the model has one, with the projections into it and back
        // (vLLM nemotron_h.py NemotronHMoE fc1_latent_proj / fc2_latent_proj); shared experts at their own width.
        const std::uint64_t width = a.moe->latent_size ? a.moe->latent_size : H;
        const Checked expert = Checked(mats) * width * a.moe->expert_intermediate_size;
        const std::uint64_t shared_width =
            a.moe->shared_intermediate_size ? a.moe->shared_intermediate_size : a.moe->expert_intermediate_size;
        const Checked shared = Checked(mats) * H * shared_width * a.moe->shared_experts +
                               (a.moe->latent_size ? Checked(2) * H * a.moe->latent_size : Checked(0));
        const Checked router = Checked(H) * a.moe->experts;
        p.experts = expert * a.moe->experts;
        p.experts_active = expert * a.moe->experts_per_token;
        p.total = own + p.experts + shared + router;
        p.active = own + p.experts_active + shared + router;
        // The router stays in the model's dtype: vLLM builds it without a quantization config.
        p.linear = matrices + p.experts + shared;
        p.linear_active = matrices + p.experts_active + shared;
    } else {
        const Checked dense_mlp = mlp ? Checked(mats) * H * a.intermediate_size : Checked(0);
        p.total = p.active = own + dense_mlp;
        p.linear = p.linear_active = matrices + dense_mlp;
    }
    return p;
}

ParameterCount estimate_parameters(const Architecture& a) {
    const std::uint64_t H = a.hidden_size;
    Checked total_layers, active_layers, linear, linear_active, experts, experts_active;
    for (std::uint64_t l = 0; l < a.layers; ++l) {
        const LayerParameters p = layer_parameters(a, l);
        total_layers += p.total;
        active_layers += p.active;
        linear += p.linear;
        linear_active += p.linear_active;
        experts += p.experts;
        experts_active += p.experts_active;
    }
    const Checked head = a.tied_embeddings ? Checked(0) : Checked(a.vocab_size) * H;
    const Checked embedding = Checked(a.vocab_size) * H + a.extra_embedding_params;
    linear += Checked(a.extra_layer_params);
    linear_active += Checked(a.extra_layer_params);
    const Checked total = total_layers + a.extra_layer_params + embedding + head + H;
    const Checked active = active_layers + a.extra_layer_params + embedding + head + H;
    ParameterCount p;
    p.estimated = true;
    // A shape that overflows 64 bits of parameters is rejected by validation
    // long before; saturate rather than wrap for display.
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    const auto value = [](const Checked& c) { return c.overflow() ? kMax : c.value(); };
    p.total = value(total);
    p.active = value(active);
    p.embedding = value(embedding);
    p.linear = value(linear);
    p.linear_active = value(linear_active);
    p.experts = value(experts);
    p.experts_active = value(experts_active);
    p.head = value(head);
    return p;
}

Architecture with_mtp_layers(const Architecture& a) {
    Architecture b = a;
    const std::uint64_t n = a.mtp_layers;
    // Out of bounds (a scenario file's): left for validate() to name, never a table of that many layers.
    if (n == 0 || n > kMaxMtpLayers || a.layers > kMaxLayers) return b;
    b.layers += n;
    b.mtp_layers = 0;
    if (!b.layer_specs.empty()) b.layer_specs.insert(b.layer_specs.end(), n, LayerSpec{});
    // eh_proj (2H -> H) and the enorm / hnorm of each MTP layer.
    const Checked own = (Checked(a.hidden_size) * 2 * a.hidden_size + Checked(a.hidden_size) * 2) * n;
    Architecture shape_a = a, shape_b = b;
    shape_a.params_total = shape_a.params_active = shape_b.params_total = shape_b.params_active = 0;
    const ParameterCount pa = estimate_parameters(shape_a), pb = estimate_parameters(shape_b);
    // Without a published count the estimate of the longer model counts the layers (eh_proj and its norms, 2H² + 2H,
    // are left out: 0.1 G of DeepSeek-V3's 11.6 G).
    if (a.params_total > 0 && pb.total >= pa.total && pb.active >= pa.active) {
        const std::uint64_t active = a.params_active > 0 ? a.params_active : a.params_total;
        const Checked total = Checked(a.params_total) + (pb.total - pa.total) + own;
        const Checked act = Checked(active) + (pb.active - pa.active) + own;
        constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
        b.params_total = total.overflow() ? kMax : total.value();
        b.params_active = act.overflow() ? kMax : act.value();
    }
    return b;
}

ParameterCount parameters(const Architecture& a) {
    ParameterCount p = estimate_parameters(a);
    if (a.params_total > 0) {
        const ParameterCount shape = p;
        p.total = a.params_total;
        p.active = a.params_active > 0 ? a.params_active : a.params_total;
        p.estimated = false;
        // The published count differs from the shape's by what the shape does not see (biases, odd layers): it is
        // taken to fall in the layers' matrices, which hold nearly all of a model; the rest stays as estimated.
        const auto rest = [](std::uint64_t all, std::uint64_t part) { return all > part ? all - part : 0; };
        p.linear = rest(p.total, rest(shape.total, shape.linear));
        p.linear_active = rest(p.active, rest(shape.active, shape.linear_active));
    }
    return p;
}

std::uint64_t matmul_parameters(const Architecture& arch) {
    const ParameterCount params = parameters(arch);
    const std::uint64_t embedding_read = arch.tied_embeddings ? 0 : params.embedding;
    return params.active > embedding_read ? params.active - embedding_read : params.active;
}

}  // namespace kvscope
