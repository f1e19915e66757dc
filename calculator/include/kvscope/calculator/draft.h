#pragma once
// A separate draft model for speculative decoding (vLLM's --speculative-config with a `model`): its weights load
// beside the target's and its attention layers keep a KV cache of every sequence's tokens, in the same cache as the
// target's. The model's own MTP layers are Deployment::mtp, not a draft model.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/weight_quant.h"

namespace kvscope {

struct ImportedModel;
class Catalog;

// vLLM's speculative methods that load a model of their own (vllm/config/speculative.py `method`).
enum class DraftMethod : std::uint8_t {
    // A small model of the same family (vllm/v1/spec_decode/draft_model.py): all its weights, its own embedding
    // and LM head (it shares neither), the same vocabulary and tensor-parallel degree as the target.
    draft_model,
    // An EAGLE head (vllm/model_executor/models/llama_eagle.py): its decoder layers and fc over [embedding; hidden]
    // (2H -> H); the target's embedding and LM head (llm_base_proposer.py _maybe_share_embeddings/_lm_head).
    eagle,
    // An EAGLE-3 head (llama_eagle3.py): its decoder layers, the first reading 2H (qkv_proj), fc over three of the
    // target's hidden states (3 x target H -> H), its own LM head over draft_vocab_size; the target's embedding.
    eagle3,
    last_ = eagle3,
};
constexpr std::size_t kDraftMethodCount = enum_count<DraftMethod>();
std::string_view to_string(DraftMethod method);
std::optional<DraftMethod> parse_draft_method(std::string_view text);
std::string draft_method_list();  // "draft_model, eagle, eagle3"

struct DraftModel {
    std::string name;  // as the user named it: a catalog id, a path, a repo
    DraftMethod method = DraftMethod::draft_model;
    Architecture arch;
    std::uint64_t draft_vocab = 0;    // eagle3: its LM head's vocabulary (draft_vocab_size; 0: vocab_size)
    std::uint64_t target_hidden = 0;  // eagle3: the target's width fc reads (target_hidden_size; 0: hidden_size)
    // A GGUF draft's exact bytes (llama.cpp loads a draft as stored; 0: estimated in the model's weight format, as
    // vLLM loads a draft in the target's dtype), and a quantized checkpoint's scheme (its quantization_config).
    std::uint64_t weights_bytes_exact = 0;
    std::optional<WeightQuant> quant;
    friend bool operator==(const DraftModel&, const DraftModel&) = default;
};

// What the draft's weights add to the target's (its embedding and LM head left out where the method shares the
// target's).
struct DraftParameters {
    std::uint64_t own = 0;         // loaded for the draft
    std::uint64_t replicated = 0;  // of `own`, what every tensor-parallel GPU holds whole (EAGLE's fc)
    bool estimated = true;         // from the shape (a draft_model with a published count: false)
};
DraftParameters draft_parameters(const DraftModel& draft);

// The target's layers followed by the draft's, as one cache: vLLM registers the draft's attention layers in the
// same KV cache config as the target's (vllm/v1/worker/gpu_model_runner.py get_kv_cache_spec), so every block
// holds both and a token costs the sum. The draft's layers keep their own KV heads and head dims. Errors (named
// `draft`): a draft with recurrent layers, or an MLA draft of a model without (or with other) MLA dims.
Result<Architecture> with_draft_layers(const Architecture& target, const DraftModel& draft);

// The draft's own problems, each named `draft` ("draft: the number of layers must be at least 1").
Errors validate(const DraftModel& draft);

}  // namespace kvscope
