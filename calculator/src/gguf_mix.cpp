// llama.cpp's quantization mixes: the type llama-quantize gives each tensor (src/llama-quant.cpp,
// llama_tensor_get_type and tensor_type_fallback, ggml-org/llama.cpp 2026-08; the block sizes from ggml/src/ggml.c
// type_traits), applied to the tensors a model's shape gives, layer by layer.
#include "kvscope/calculator/gguf_mix.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "names.h"

namespace kvscope {
namespace {

// The ggml types the mixes use: values in a block and the block's bytes (ggml-common.h).
enum class Ggml : std::uint8_t {
    f32,
    f16,
    q4_0,
    q4_1,
    q5_0,
    q5_1,
    q8_0,
    q2_k,
    q3_k,
    q4_k,
    q5_k,
    q6_k,
    iq4_nl,
    iq4_xs,
    mxfp4
};
struct GgmlType {
    std::uint64_t block, bytes;
};
constexpr GgmlType traits(Ggml t) {
    switch (t) {
        case Ggml::f32:
            return {1, 4};
        case Ggml::f16:
            return {1, 2};
        case Ggml::q4_0:
            return {32, 18};
        case Ggml::q4_1:
            return {32, 20};
        case Ggml::q5_0:
            return {32, 22};
        case Ggml::q5_1:
            return {32, 24};
        case Ggml::q8_0:
            return {32, 34};
        case Ggml::q2_k:
            return {256, 84};
        case Ggml::q3_k:
            return {256, 110};
        case Ggml::q4_k:
            return {256, 144};
        case Ggml::q5_k:
            return {256, 176};
        case Ggml::q6_k:
            return {256, 210};
        case Ggml::iq4_nl:
            return {32, 18};
        case Ggml::iq4_xs:
            return {256, 136};
        case Ggml::mxfp4:
            return {32, 17};
    }
    return {1, 4};
}

struct MixInfo {
    GgufMix mix;
    std::string_view id;
    Ggml base;  // llama_ftype_get_default_type
};
constexpr std::array kMixes = {
    MixInfo{GgufMix::q2_k, "q2_k", Ggml::q2_k},
    MixInfo{GgufMix::q3_k_m, "q3_k_m", Ggml::q3_k},
    MixInfo{GgufMix::q3_k_l, "q3_k_l", Ggml::q3_k},
    MixInfo{GgufMix::q4_0, "q4_0", Ggml::q4_0},
    MixInfo{GgufMix::q4_k_s, "q4_k_s", Ggml::q4_k},
    MixInfo{GgufMix::q4_k_m, "q4_k_m", Ggml::q4_k},
    MixInfo{GgufMix::iq4_nl, "iq4_nl", Ggml::iq4_nl},
    MixInfo{GgufMix::iq4_xs, "iq4_xs", Ggml::iq4_xs},
    MixInfo{GgufMix::q5_k_s, "q5_k_s", Ggml::q5_k},
    MixInfo{GgufMix::q5_k_m, "q5_k_m", Ggml::q5_k},
    MixInfo{GgufMix::q6_k, "q6_k", Ggml::q6_k},
    MixInfo{GgufMix::q8_0, "q8_0", Ggml::q8_0},
    MixInfo{GgufMix::mxfp4_moe, "mxfp4_moe", Ggml::mxfp4},
};
static_assert(kMixes.size() == kGgufMixCount);

const MixInfo& info(GgufMix mix) { return kMixes.at(static_cast<std::size_t>(mix)); }

// tensor_type_fallback: a row whose length is no multiple of the type's block takes another type, else f16.
Ggml fits_row(Ggml t, std::uint64_t row) {
    if (row % traits(t).block == 0) return t;
    Ggml next = Ggml::f16;
    switch (t) {
        case Ggml::iq4_xs:
            next = Ggml::iq4_nl;
            break;
        case Ggml::q2_k:
        case Ggml::q3_k:
            next = Ggml::q4_0;
            break;
        case Ggml::q4_k:
            next = Ggml::q5_0;
            break;
        case Ggml::q5_k:
            next = Ggml::q5_1;
            break;
        case Ggml::q6_k:
            next = Ggml::q8_0;
            break;
        default:
            break;
    }
    return row % traits(next).block == 0 ? next : Ggml::f16;
}

// A tensor of `rows` rows of `row` values in type `t` (after the fallback).
Checked tensor_bytes(Ggml t, std::uint64_t row, const Checked& rows) {
    const GgmlType g = traits(fits_row(t, row));
    return Checked(row / g.block) * g.bytes * rows;
}

// use_more_bits: the first and last eighth of the layers, and every third between.
bool more_bits(std::uint64_t i, std::uint64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

enum class Role : std::uint8_t { attn_q, attn_k, attn_v, attn_output, ffn_up_gate, ffn_down, other };

// The architectures whose GGUF holds Q, K and V as one attn_qkv matrix (convert_hf_to_gguf.py keeps the
// checkpoint's fused projection: Phi-3's qkv_proj, Falcon's query_key_value, GPT-2's c_attn, …).
bool fused_qkv(const Architecture& a) {
    return one_of(a.gguf_arch,
                  {"phi3", "falcon", "gpt2", "gptneox", "bloom", "mpt", "starcoder", "chatglm", "dbrx", "qwen"});
}

// The rules of llama_tensor_get_type for the mixes here, past the output and embedding (which `weights` handles):
// `i` / `n` are the counters the rule reads (the attention-V tensor's ordinal among them, the layer for ffn_down).
// A fused attn_qkv takes attn_v's rules and counter (category_is_attn_v, since llama.cpp PR #19770, 2026-03).
Ggml choose(GgufMix mix, Role role, std::uint64_t i, std::uint64_t n, const Architecture& a, bool experts_tensor) {
    const Ggml base = info(mix).base;
    const bool falcon = a.gguf_arch == "falcon";  // LLM_ARCH_FALCON's own ffn_down and attn_output rules
    if (mix == GgufMix::mxfp4_moe) return experts_tensor ? Ggml::mxfp4 : Ggml::q8_0;  // tensor->ne[2] > 1
    const std::uint64_t n_expert = a.moe ? a.moe->experts : 0;
    const std::uint64_t gqa = a.kv_heads > 0 ? a.query_heads / a.kv_heads : 0;
    // llama.cpp's LLM_TYPE_70B: Llama's and Qwen2's 80 layers with grouped KV heads (src/llama-model.cpp
    // load_hparams; 80 MHA layers are Llama's 65B); Falcon 180B's 80 are no type llama.cpp names.
    const bool is_70b = a.layers == 80 && a.query_heads != a.kv_heads &&
                        (a.gguf_arch.empty() || a.gguf_arch == "llama" || a.gguf_arch == "qwen2");
    Ggml t = base;
    switch (role) {
        case Role::attn_v:
            if (mix == GgufMix::q2_k) t = gqa >= 4 ? Ggml::q4_k : Ggml::q3_k;
            if (mix == GgufMix::q3_k_m) t = i < 2 ? Ggml::q5_k : Ggml::q4_k;
            if (mix == GgufMix::q3_k_l) t = Ggml::q5_k;
            if ((mix == GgufMix::iq4_nl || mix == GgufMix::iq4_xs) && gqa >= 4) t = Ggml::q5_k;
            if ((mix == GgufMix::q4_k_m || mix == GgufMix::q5_k_m) && more_bits(i, n)) t = Ggml::q6_k;
            if (mix == GgufMix::q4_k_s && i < 4) t = Ggml::q5_k;
            if (is_70b && (t == Ggml::q3_k || t == Ggml::q4_k)) t = Ggml::q5_k;
            if (n_expert == 8) t = Ggml::q8_0;
            return t;
        case Role::attn_k:
            return n_expert == 8 ? Ggml::q8_0 : t;
        case Role::ffn_down:
            if (mix == GgufMix::q2_k) t = Ggml::q3_k;
            if (mix == GgufMix::q3_k_m)
                t = i < n / 16 ? Ggml::q5_k : !falcon || more_bits(i, n) ? Ggml::q4_k : Ggml::q3_k;
            if (mix == GgufMix::q3_k_l) t = falcon ? Ggml::q4_k : Ggml::q5_k;
            if (mix == GgufMix::q4_k_m && falcon)
                t = i < n / 16 ? Ggml::q6_k : more_bits(i, n) ? Ggml::q5_k : Ggml::q4_k;
            else if ((mix == GgufMix::q4_k_m || mix == GgufMix::q5_k_m) && more_bits(i, n))
                t = Ggml::q6_k;
            if (mix == GgufMix::q4_k_s && !falcon && i < n / 8) t = Ggml::q5_k;
            if ((mix == GgufMix::iq4_nl || mix == GgufMix::iq4_xs) && i < n / 8) t = Ggml::q5_k;  // no imatrix
            return t;
        case Role::attn_output:
            if (falcon) return mix == GgufMix::q3_k_l ? Ggml::q4_k : t;
            // 8 experts: the listed mixes take q5_K, the others (Q3_K_L among them) keep their base type.
            if (n_expert == 8)
                return mix == GgufMix::q3_k_l || mix == GgufMix::q5_k_s || mix == GgufMix::q5_k_m ||
                               mix == GgufMix::q6_k || mix == GgufMix::q8_0 || mix == GgufMix::q4_0
                           ? t
                           : Ggml::q5_k;
            if (mix == GgufMix::q2_k || mix == GgufMix::q3_k_m) return mix == GgufMix::q2_k ? Ggml::q3_k : Ggml::q4_k;
            if (mix == GgufMix::q3_k_l) return Ggml::q5_k;
            return t;
        default:
            return t;
    }
}

// The output layer's matrix (and the token embedding when the head is tied): Q6_K, or Q8_0 where the row is no
// multiple of the base type's block, the model is Falcon's or the mix is Q8_0 or MXFP4_MOE.
Ggml output_type(GgufMix mix, std::uint64_t row, const Architecture& a) {
    if (mix == GgufMix::mxfp4_moe || mix == GgufMix::q8_0 || a.gguf_arch == "falcon") return Ggml::q8_0;
    if (row % traits(info(mix).base).block != 0) return Ggml::q8_0;
    return Ggml::q6_k;
}

}  // namespace

std::string_view to_string(GgufMix mix) { return info(mix).id; }

std::string gguf_mix_name(GgufMix mix) {
    std::string out(info(mix).id);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::optional<GgufMix> parse_gguf_mix(std::string_view text) {
    std::string t(text);
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t == "q4_k") t = "q4_k_m";  // llama-quantize's aliases
    if (t == "q5_k") t = "q5_k_m";
    if (t == "q3_k") t = "q3_k_m";
    for (const MixInfo& m : kMixes)
        if (m.id == t) return m.mix;
    return std::nullopt;
}

std::string gguf_mix_list() {
    std::string out;
    for (const MixInfo& m : kMixes) out += (out.empty() ? "" : ", ") + std::string(m.id);
    return out;
}

Result<LayerWeights> gguf_mix_weights(const Architecture& a, GgufMix mix) {
    const std::uint64_t H = a.hidden_size;
    if (H == 0) return FieldError{"hidden_size", "a GGUF mix needs the model's width (hidden_size): it is 0"};
    const Ggml base = info(mix).base;
    LayerWeights w;
    w.blocks.resize(a.layers <= kMaxLayers ? a.layers : 0);
    // The attention-V tensors' counter: one for each layer with its own K and V, attn_v or a fused attn_qkv
    // (init_quantize_state_counters).
    const bool fused = fused_qkv(a);
    std::uint64_t n_v = 0, i_v = 0;
    for (std::uint64_t l = 0; l < w.blocks.size(); ++l) n_v += a.layer(l).caches_kv() && !a.mla ? 1 : 0;
    const auto mats = a.gated_mlp ? 2u : 1u;  // gate and up, or up alone
    // A published count above what the shape gives (a model whose MLP the description leaves out): the rest spread
    // over the blocks in the base type, so that the total follows the published count as the plain formats do.
    const std::uint64_t shape_total = estimate_parameters(a).total;
    const std::uint64_t missing_per_block =
        a.params_total > shape_total && !w.blocks.empty() ? (a.params_total - shape_total) / w.blocks.size() : 0;
    for (std::uint64_t l = 0; l < w.blocks.size(); ++l) {
        const LayerSpec s = a.layer(l);
        const LayerParameters p = layer_parameters(a, l);
        Checked named_params, bytes, experts;
        // The two norms, f32 (1-D tensors are never quantized).
        bytes += Checked(2) * H * 4;
        named_params += Checked(2) * H;
        if (s.attends() && !a.mla) {
            const std::uint64_t dk = a.head_dim_k_of(l), dv = a.head_dim_v_of(l), kv = a.kv_heads_of(l);
            const std::uint64_t q_out = a.query_heads * dk;
            bytes += tensor_bytes(choose(mix, Role::attn_output, 0, 0, a, false), a.query_heads * dv, Checked(H));
            named_params += Checked(2) * H * q_out;
            if (fused && s.caches_kv()) {  // one attn_qkv of q_out + kv x (dk + dv) rows
                bytes += tensor_bytes(choose(mix, Role::attn_v, i_v++, n_v, a, false), H,
                                      Checked(q_out) + Checked(kv) * (dk + dv));
                named_params += Checked(H) * kv * (dk + dv);
            } else {
                bytes += tensor_bytes(choose(mix, Role::attn_q, 0, 0, a, false), H, Checked(q_out));
            }
            if (!fused && s.caches_kv()) {
                bytes += tensor_bytes(choose(mix, Role::attn_k, 0, 0, a, false), H, Checked(kv) * dk);
                bytes += tensor_bytes(choose(mix, Role::attn_v, i_v++, n_v, a, false), H, Checked(kv) * dv);
                named_params += Checked(H) * kv * (dk + dv);
            }
            if (a.attention_bias) {  // q, k and v biases, f32 (the parameter estimate counts an output bias too)
                const Checked biases = Checked(q_out) + Checked(kv) * (dk + dv);
                bytes += biases * 4;
                named_params += biases + H;
            }
        }
        const bool mlp = s.kind == LayerKind::none || a.mlp_beside_mixer;
        if (mlp && a.moe && a.moe->has_experts(l)) {
            const MoeDims& m = *a.moe;
            const std::uint64_t width = m.latent_size ? m.latent_size : H;
            // The routed experts (ffn_{gate,up,down}_exps, the layer from their names), the router in f32, shared
            // experts (ffn_*_shexp) under the same rules.
            experts += tensor_bytes(choose(mix, Role::ffn_up_gate, l, a.layers, a, true), width,
                                    Checked(m.expert_intermediate_size) * m.experts) *
                       mats;
            experts += tensor_bytes(choose(mix, Role::ffn_down, l, a.layers, a, true), m.expert_intermediate_size,
                                    Checked(width) * m.experts);
            bytes += experts;
            bytes += Checked(H) * m.experts * 4;
            named_params += p.experts + Checked(H) * m.experts;
            const std::uint64_t shared =
                (m.shared_intermediate_size ? m.shared_intermediate_size : m.expert_intermediate_size) *
                m.shared_experts;
            if (shared > 0) {
                bytes += tensor_bytes(choose(mix, Role::ffn_up_gate, l, a.layers, a, false), H, Checked(shared)) * mats;
                bytes += tensor_bytes(choose(mix, Role::ffn_down, l, a.layers, a, false), shared, Checked(H));
                named_params += Checked(mats + 1) * H * shared;
            }
        } else if (mlp && a.intermediate_size > 0) {
            const std::uint64_t I = a.intermediate_size;
            bytes += tensor_bytes(choose(mix, Role::ffn_up_gate, l, a.layers, a, false), H, Checked(I)) * mats;
            bytes += tensor_bytes(choose(mix, Role::ffn_down, l, a.layers, a, false), I, Checked(H));
            named_params += Checked(mats + 1) * H * I;
        }
        // MLA's attn_k_b: conversion/deepseek.py splits kv_b_proj into k_b, transposed to rows of qk_nope_head_dim
        // (128: no q4_K block, so tensor_type_fallback's q5_0), and v_b; neither is a category of its own (OTHER).
        // (MiniCPM3's conversion keeps kv_b whole: its projections stay with the rest.)
        if (a.mla && s.attends() && a.mla->qk_nope_head_dim > 0 && a.gguf_arch != "minicpm3") {
            const MlaDims& m = *a.mla;
            bytes += tensor_bytes(base, m.qk_nope_head_dim, Checked(a.query_heads) * m.kv_lora_rank);
            named_params += Checked(a.query_heads) * m.kv_lora_rank * m.qk_nope_head_dim;
        }
        // What the shape does not name tensor by tensor (MLA's other projections, a recurrent mixer, a latent MoE's
        // projections): the mix's base type, in rows of the model's width.
        if (!p.total.overflow() && !named_params.overflow() && p.total.value() > named_params.value())
            bytes += tensor_bytes(base, H, Checked((p.total.value() - named_params.value()) / H));
        bytes += tensor_bytes(base, H, Checked(missing_per_block / std::max<std::uint64_t>(H, 1)));
        if (bytes.overflow() || experts.overflow())
            return overflow_error(Field::weight_dtype, "the weights of layer " + std::to_string(l));
        w.blocks[l] = {bytes.value(), experts.value()};
    }
    // The token embedding: the base type (MXFP4_MOE: Q8_0), the output's rule when the head is tied; the output
    // matrix and its norm.
    const Ggml embd = a.tied_embeddings ? output_type(mix, H, a) : mix == GgufMix::mxfp4_moe ? Ggml::q8_0 : base;
    const Checked input = tensor_bytes(embd, H, Checked(a.vocab_size));
    const Checked output =
        Checked(H) * 4 +
        (a.tied_embeddings ? Checked(0) : tensor_bytes(output_type(mix, H, a), H, Checked(a.vocab_size)));
    if (input.overflow() || output.overflow()) return overflow_error(Field::weight_dtype, "the embedding");
    w.input_bytes = input.value();
    w.output_bytes = output.value();
    return w;
}

Result<std::uint64_t> gguf_mix_bytes(const Architecture& arch, GgufMix mix) {
    auto w = gguf_mix_weights(arch, mix);
    if (!w) return w.errors();
    Checked sum = Checked(w->input_bytes) + w->output_bytes;
    for (const BlockWeights& b : w->blocks) sum += Checked(b.bytes);
    if (sum.overflow()) return overflow_error(Field::weight_dtype, "the weights");
    return sum.value();
}

}  // namespace kvscope
