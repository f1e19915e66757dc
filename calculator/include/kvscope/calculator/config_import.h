#pragma once
// Hugging Face config.json -> Architecture. Every spelling in use is read; a field
// missing with no documented default, or two spellings that disagree, is an error
// naming the field and its line. Where transformers' config class for the model
// type defines a default, it is used and listed in `assumed`.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"

namespace kvscope {

struct ImportedModel {
    Architecture arch;
    std::string model_type;
    std::string hf_repo;  // from _name_or_path when it names a repo
    KvDtype kv_dtype = KvDtype::fp16;
    std::string kv_dtype_source;  // "torch_dtype bfloat16" or why the default was used
    KvDtype weight_dtype = KvDtype::fp16;
    std::string weight_dtype_source;
    std::vector<std::string> assumed;  // "max_position_embeddings = 2048 (falcon default)"
    std::vector<std::string> notes;
    // The weights' exact bytes as stored (a GGUF's tensor infos, safetensors headers), 0 when only the parameter
    // count is known; weights_source says where the figure came from ("exact from 4 safetensors headers").
    std::uint64_t weights_bytes = 0;
    std::string weights_source;
    std::optional<Engine> engine;  // the engine the file is made for (llama.cpp for a GGUF), when it says
    // A quantized checkpoint's scheme (quantization_config); weight_dtype is then its unquantized parts' format.
    std::optional<WeightQuant> weight_quant;
    std::optional<LayerWeights> weights_layers;  // a GGUF's exact bytes by layer (llama.cpp's placement)
    // What a speculative-decoding head's config says of itself (draft.h): the class it names first in
    // `architectures` (EagleLlamaForCausalLM, LlamaForCausalLMEagle3), and an EAGLE-3 head's own vocabulary
    // (draft_vocab_size) and the target width its fc reads (target_hidden_size); 0 when not given.
    std::string architecture;
    std::uint64_t draft_vocab_size = 0;
    std::uint64_t target_hidden_size = 0;

    [[nodiscard]] ModelWeights model_weights() const {
        return {weight_dtype, weights_bytes, weights_source, engine, weight_quant, weights_layers};
    }
};

// `source` names the file in messages ("config.json", a path).
Result<ImportedModel> import_config(std::string_view text, const std::string& source);
// Reads `path`; the model is named, in this order, by the config's `_name_or_path` when it names a
// repo, by the Hugging Face cache folder it lies in (org/name), or by its folder.
Result<ImportedModel> import_config_file(const std::string& path);

// "org/name" for a file in a Hugging Face cache snapshot, else the name of the folder holding it.
std::string model_name_from_path(const std::string& path);

}  // namespace kvscope
