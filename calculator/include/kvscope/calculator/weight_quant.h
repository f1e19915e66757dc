#pragma once
// A quantized checkpoint's weights as the engine loads them: which matrices are quantized (config.json's
// quantization_config), in how many bits, with how many scale and zero-point bits per group, and the bytes
// that makes from the parameter count's split (architecture.h ParameterCount). The figure is an estimate —
// the split is the shape's, and engines add small tensors (activation scales, index maps) — and is
// always shown as one. A checkpoint's safetensors headers, when given, are exact and win.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"

namespace kvscope {
namespace json {
class Value;
}

struct WeightQuant {
    std::string method;            // as the config names it: awq, gptq, fp8, compressed-tensors, modelopt, mxfp4, …
    std::string scheme;            // in words: "4-bit int, a scale and zero point per 128 weights"
    std::uint64_t bits = 16;       // of one quantized weight
    std::uint64_t group = 0;       // weights sharing one scale; 0: one scale per tensor (a few bytes, not counted)
    bool per_row = false;          // one scale per output row (taken as a row of hidden_size weights)
    std::uint64_t scale_bits = 0;  // of each group's scale (and of whatever else each group stores, in bits)
    std::uint64_t zero_bits = 0;   // of each group's zero point (asymmetric schemes); 0: symmetric
    bool experts_only = false;     // only the routed experts are quantized (gpt-oss's MXFP4)
    bool lm_head = false;          // the LM head is quantized too (GPTQ's lm_head: true)
    // The experts' matrices as the engine pads them (hidden and intermediate rounded up to these multiples).
    std::uint64_t pad_hidden = 1;
    std::uint64_t pad_intermediate = 1;
    friend bool operator==(const WeightQuant&, const WeightQuant&) = default;
};

// "AWQ 4-bit, group 128" — the method and the scheme, for the fit's weights line and the window.
std::string weight_quant_label(const WeightQuant& q);

// What is wrong with a scheme (from a config or a scenario file) that no format has: "must have 1 to 16 bits a
// weight, not 400"; nullopt when it is in range.
std::optional<std::string> weight_quant_problem(const WeightQuant& q);

// The quantization a config's `quantization_config` object describes, with vLLM's defaults where a key is
// absent; nullopt (and a line in `notes` naming the method) when the method is not one KVScope models.
std::optional<WeightQuant> weight_quant_from_config(const json::Value& config, std::vector<std::string>& notes);

struct QuantizedWeights {
    std::uint64_t bytes = 0;      // quantized part + the rest in the model's dtype
    std::uint64_t quantized = 0;  // parameters stored quantized
    std::uint64_t rest = 0;       // parameters left in the model's dtype (embeddings, head, norms, routers, …)
};
// The stored weights (per_token false) or those one decode step reads (per_token true: the active experts, no
// embedding table), the rest in `rest_dtype`.
Result<QuantizedWeights> quantized_weights(const Architecture& arch, const WeightQuant& q, KvDtype rest_dtype,
                                           bool per_token);

}  // namespace kvscope
