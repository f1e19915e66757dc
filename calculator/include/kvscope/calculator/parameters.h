#pragma once
// How many parameters a model has, from its published counts or its shape, layer by layer (parameters.cpp).

#include <cstdint>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/checked.h"

namespace kvscope {

struct ParameterCount {
    std::uint64_t total = 0;
    std::uint64_t active = 0;     // per token (MoE: routed experts in use + shared)
    std::uint64_t embedding = 0;  // the input embedding table (read one row per token)
    // What quantized checkpoints quantize (vLLM's quantization methods apply to the decoder layers' linear
    // layers and fused experts, not to embeddings, the LM head, norms or routers): the matrices of the layers
    // (attention projections, recurrent mixers, MLPs, shared and routed experts), in all and per token; the
    // routed experts alone; the LM head (0 when tied to the embedding). Always from the shape; with a published
    // total, `linear` is the total less the estimated rest.
    std::uint64_t linear = 0;
    std::uint64_t linear_active = 0;
    std::uint64_t experts = 0;
    std::uint64_t experts_active = 0;
    std::uint64_t head = 0;
    bool estimated = false;  // true: computed from the shape, not published
};

// One decoder layer's parameters from the shape (norms, mixer, MLP or experts): in all, per token, the matrices a
// quantized checkpoint quantizes, and the routed experts.
struct LayerParameters {
    Checked total, active, linear, linear_active, experts, experts_active;
};
LayerParameters layer_parameters(const Architecture& arch, std::uint64_t layer);

// Published counts when the architecture carries them, else the estimate.
ParameterCount parameters(const Architecture& arch);
// Always the count computed from the shape (embeddings, attention, MLP/experts, norms).
ParameterCount estimate_parameters(const Architecture& arch);

// Parameters every generated token is multiplied through: the active ones, less the input
// embedding when it is a lookup (untied).
std::uint64_t matmul_parameters(const Architecture& arch);

// The model with its MTP layers as engines run them for speculative decoding (vLLM's deepseek_mtp / qwen3_next_mtp):
// each a full-attention decoder layer (experts where the model's layers have them) with its own KV cache, plus
// the projection of [embedding; hidden] back to the hidden size and its two norms; the embedding and LM head are
// the model's own (vllm/model_executor/models/deepseek_mtp.py DeepSeekMultiTokenPredictorLayer). A published
// count gains the layers' estimate.
Architecture with_mtp_layers(const Architecture& arch);

}  // namespace kvscope
