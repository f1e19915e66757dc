#pragma once
// llama.cpp's quantization mixes, the GGUF file types llama-quantize writes (Q4_K_M, Q5_K_M, Q8_0, …): the ggml type
// each tensor of a model gets (src/llama-quant.cpp llama_tensor_get_type, ggml-org/llama.cpp as of 2026-08), and the
// bytes that makes, layer by layer, from the model's shape (gguf_mix.cpp). A GGUF file's own tensor list is exact;
// this is the figure for a model whose GGUF is not at hand.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/engine.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/tables.h"

namespace kvscope {

enum class GgufMix : std::uint8_t {
    q2_k,
    q3_k_m,
    q3_k_l,
    q4_0,
    q4_k_s,
    q4_k_m,  // Ollama's default
    iq4_nl,
    iq4_xs,
    q5_k_s,
    q5_k_m,
    q6_k,
    q8_0,
    mxfp4_moe,  // gpt-oss: the experts in MXFP4, every other matrix in Q8_0
    last_ = mxfp4_moe,
};
constexpr std::size_t kGgufMixCount = enum_count<GgufMix>();

std::string_view to_string(GgufMix mix);  // "q4_k_m"
// "Q4_K_M" as llama-quantize names it.
std::string gguf_mix_name(GgufMix mix);
// Any case: "q4_k_m", "Q4_K_M"; llama-quantize's aliases "q4_k", "q5_k", "q3_k" (its _M mixes).
std::optional<GgufMix> parse_gguf_mix(std::string_view text);
std::string gguf_mix_list();  // "q2_k, q3_k_m, …"

// The bytes a GGUF of `mix` holds for `arch`, by layer as llama.cpp places them (engine.h LayerWeights): each
// block's tensors (attention, MLP or experts, norms; the matrices the shape gives, in the types the rules choose),
// the token embedding and the output layer. Tensors the shape does not name one by one (MLA's projections, a
// recurrent mixer's) take the mix's base type.
Result<LayerWeights> gguf_mix_weights(const Architecture& arch, GgufMix mix);
// Their sum.
Result<std::uint64_t> gguf_mix_bytes(const Architecture& arch, GgufMix mix);

}  // namespace kvscope
