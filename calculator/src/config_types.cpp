// What a config's model_type means where its file is silent: the defaults of transformers' configuration class for
// the fields KVScope reads, the shape of its MLP, llama.cpp's name for it, and torch's dtype names.
#include <map>
#include <string>
#include <utility>

#include "config_reader.h"
#include "names.h"

namespace kvscope::importer {

// Defaults of transformers' configuration classes, for the fields KVScope reads.
// Only these are ever assumed, and each use is listed in the import's output.
const std::map<std::string, std::map<std::string, std::uint64_t>>& type_defaults() {
    static const std::map<std::string, std::map<std::string, std::uint64_t>> kDefaults{
        {"llama",
         {{"vocab_size", 32000},
          {"hidden_size", 4096},
          {"intermediate_size", 11008},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"max_position_embeddings", 2048},
          {"tie_word_embeddings", 0}}},
        {"mistral",
         {{"vocab_size", 32000},
          {"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"max_position_embeddings", 131072},
          {"tie_word_embeddings", 0}}},
        {"mixtral",
         {{"vocab_size", 32000},
          {"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"max_position_embeddings", 131072},
          {"num_local_experts", 8},
          {"num_experts_per_tok", 2},
          {"tie_word_embeddings", 0}}},
        {"qwen2",
         {{"vocab_size", 151936},
          {"hidden_size", 4096},
          {"intermediate_size", 22016},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 32},
          {"max_position_embeddings", 32768},
          {"max_window_layers", 28},
          {"tie_word_embeddings", 0}}},
        {"qwen3",
         {{"vocab_size", 151936},
          {"hidden_size", 4096},
          {"intermediate_size", 22016},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 32},
          {"head_dim", 128},
          {"max_position_embeddings", 32768},
          {"max_window_layers", 28},
          {"tie_word_embeddings", 0}}},
        // configuration_recurrent_gemma.py.
        {"recurrent_gemma",
         {{"vocab_size", 256000},
          {"hidden_size", 2560},
          {"intermediate_size", 7680},
          {"num_hidden_layers", 26},
          {"num_attention_heads", 10},
          {"tie_word_embeddings", 1}}},
        {"gemma2",
         {{"vocab_size", 256000},
          {"hidden_size", 2304},
          {"intermediate_size", 9216},
          {"num_hidden_layers", 26},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 4},
          {"head_dim", 256},
          {"max_position_embeddings", 8192},
          {"sliding_window", 4096},
          {"tie_word_embeddings", 1}}},
        {"gemma3_text",
         {{"vocab_size", 262208},
          {"hidden_size", 2304},
          {"intermediate_size", 9216},
          {"num_hidden_layers", 26},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 4},
          {"head_dim", 256},
          {"max_position_embeddings", 131072},
          {"sliding_window", 4096},
          {"sliding_window_pattern", 6},
          {"tie_word_embeddings", 1}}},
        // transformers configuration_gemma3n.py: Gemma3nTextConfig ties the LM head to the embedding.
        {"gemma3n_text", {{"tie_word_embeddings", 1}}},
        {"phi3",
         {{"vocab_size", 32064},
          {"hidden_size", 3072},
          {"intermediate_size", 8192},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"max_position_embeddings", 4096},
          {"tie_word_embeddings", 0}}},
        {"falcon",
         {{"vocab_size", 65024},
          {"hidden_size", 4544},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 71},
          {"max_position_embeddings", 2048},
          {"tie_word_embeddings", 1}}},
        {"gpt2",
         {{"vocab_size", 50257},
          {"hidden_size", 768},
          {"num_hidden_layers", 12},
          {"num_attention_heads", 12},
          {"max_position_embeddings", 1024},
          {"tie_word_embeddings", 1}}},
        {"deepseek_v3",
         {{"vocab_size", 129280},
          {"hidden_size", 7168},
          {"intermediate_size", 18432},
          {"moe_intermediate_size", 2048},
          {"num_hidden_layers", 61},
          {"num_attention_heads", 128},
          {"num_key_value_heads", 128},
          {"n_shared_experts", 1},
          {"n_routed_experts", 256},
          {"kv_lora_rank", 512},
          {"q_lora_rank", 1536},
          {"qk_rope_head_dim", 64},
          {"v_head_dim", 128},
          {"qk_nope_head_dim", 128},
          {"num_experts_per_tok", 8},
          {"first_k_dense_replace", 3},
          {"max_position_embeddings", 4096},
          {"tie_word_embeddings", 0}}},
        // configuration_afmoe.py (Arcee's Trinity): the sliding layers' window when the file gives none.
        {"afmoe", {{"sliding_window", 1024}}},
        {"gpt_oss",
         {{"vocab_size", 201088},
          {"hidden_size", 2880},
          {"intermediate_size", 2880},
          {"num_hidden_layers", 36},
          {"num_attention_heads", 64},
          {"num_key_value_heads", 8},
          {"head_dim", 64},
          {"sliding_window", 128},
          {"max_position_embeddings", 131072},
          {"num_local_experts", 128},
          {"num_experts_per_tok", 4},
          {"tie_word_embeddings", 0}}},
    };
    return kDefaults;
}

std::optional<KvDtype> dtype_from_torch(const std::string& name) {
    if (name == "bfloat16") return KvDtype::bf16;
    if (name == "float16" || name == "half") return KvDtype::fp16;
    if (name == "float32" || name == "float") return KvDtype::fp32;
    return std::nullopt;
}

// Model types whose MLP has two matrices (up, down) rather than a gated three.
bool ungated_mlp(const std::string& type) {
    // nemotron_h: NemotronHMLP is up_proj and down_proj with relu2 (modeling_nemotron_h.py).
    return one_of(type, {"gpt2", "falcon", "gpt_neox", "gptj", "opt", "bloom", "gpt_bigcode", "phi", "starcoder2",
                         "mpt", "gpt_neo", "nemotron_h"});
}

// llama.cpp's architecture for a transformers model_type (convert_hf_to_gguf.py: the model class each HF
// architecture registers, and its MODEL_ARCH in gguf-py/gguf/constants.py), for the types whose GGUF layout or
// quantization rules differ from the common case (gguf_mix.cpp) and the families most deployed; empty otherwise.
std::string gguf_arch_of(const std::string& type) {
    static const std::pair<const char*, const char*> kArchs[] = {
        {"llama", "llama"},
        {"mistral", "llama"},
        {"mixtral", "llama"},
        {"qwen2", "qwen2"},
        {"qwen2_moe", "qwen2moe"},
        {"qwen3", "qwen3"},
        {"qwen3_moe", "qwen3moe"},
        {"gemma2", "gemma2"},
        {"gemma3_text", "gemma3"},
        {"phi3", "phi3"},
        {"falcon", "falcon"},
        {"gpt2", "gpt2"},
        {"gpt_neox", "gptneox"},
        {"bloom", "bloom"},
        {"mpt", "mpt"},
        {"gpt_bigcode", "starcoder"},
        {"chatglm", "chatglm"},
        {"dbrx", "dbrx"},
        {"qwen", "qwen"},
        {"deepseek_v2", "deepseek2"},
        {"deepseek_v3", "deepseek2"},
        {"gpt_oss", "gpt-oss"},
        {"qwen3_5", "qwen35"},
        {"qwen3_5_moe", "qwen35moe"},
        {"qwen3_5_text", "qwen35"},
        {"qwen3_5_moe_text", "qwen35moe"},
        {"qwen3_next", "qwen3next"},
        {"qwen3_vl", "qwen3vl"},
        {"qwen3_vl_moe", "qwen3vlmoe"},
        {"lfm2", "lfm2"},
        {"lfm2_moe", "lfm2moe"},
        {"nemotron_h", "nemotron_h"},
        {"mllama", "mllama"},
    };
    for (const auto& [hf, arch] : kArchs)
        if (type == hf) return arch;
    return {};
}

}  // namespace kvscope::importer
