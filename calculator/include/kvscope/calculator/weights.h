#pragma once
// The weights' bytes: as stored, as a decode step reads them, a draft's, and in words (weights.cpp).

#include <cstdint>
#include <optional>
#include <string>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/draft.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/weight_quant.h"

namespace kvscope {

// The deployment's quantization as its engine keeps it in memory (which may differ from the checkpoint's files).
WeightQuant loaded_weight_quant(const Deployment& d);

// A new deployment's weights (and engine, with its default fraction) from the model's.
void adopt_model_weights(Deployment& d, const ModelWeights& w);
// The deployment's weights in a few words: "in bf16", or "432,704 bytes, exact from the GGUF's 3 tensors".
std::string weights_text(const Deployment& d);
// Shorter, for a chart's subtitle: "bf16 weights", "awq weights", "weights from the files".
std::string weights_format_text(const Deployment& d);

// Weights in bytes for `params` parameters stored as `dtype`.
Result<std::uint64_t> weights_bytes(std::uint64_t params, KvDtype dtype);
// The deployment's weights: its exact bytes when known, else the parameter count in its weight format.
Result<std::uint64_t> stored_weights_bytes(const Architecture& arch, const Deployment& d);
// When the deployment's exact bytes come from safetensors files and are less than a quarter or more than 2.5 times what
// the model's parameters take in its weight format (or quantization scheme): a warning asking whether the files are
// this model's (a 70B config beside an 8B's shards); nullopt when they agree or the bytes are not from such files.
std::optional<std::string> weights_mismatch(const Architecture& arch, const Deployment& d);
// A separate draft model's weights as the engine loads them: a GGUF's exact bytes, a quantized draft model's scheme,
// else its parameters (draft_parameters) in `dtype`, the model's weight format; and that in a few words.
Result<std::uint64_t> draft_weights_bytes(const DraftModel& draft, KvDtype dtype);
std::string draft_weights_text(const DraftModel& draft, KvDtype dtype);
// The weights a decode step reads (every matrix multiplied once per token; an MoE's active experts): the parameter
// estimate in the weight format, or the exact bytes scaled by the same share of the parameters when known.
Result<std::uint64_t> read_weights_bytes(const Architecture& arch, const Deployment& d);

}  // namespace kvscope
