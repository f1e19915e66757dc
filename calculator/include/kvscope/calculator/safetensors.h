#pragma once
// The exact bytes of a model's weights from its safetensors headers, never reading the tensors.
// A .safetensors file (huggingface/safetensors, docs and safetensors/src/tensor.rs) begins with a u64
// little-endian N, then N bytes of JSON: {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]},
// "__metadata__": {..}}; the tensors follow, each data_offsets relative to the end of the header.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"

namespace kvscope::safetensors {

// Bits per value of a safetensors dtype (safetensors/src/tensor.rs Dtype::bitsize), nullopt for an unknown one.
std::optional<std::uint32_t> dtype_bits(std::string_view dtype);

struct Header {
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;                        // the tensors' bytes: what a runtime loads
    std::map<std::string, std::uint64_t> by_dtype;  // "BF16" -> bytes
    std::vector<std::string> names;                 // the tensors', in the header's order (the skipped ones too)
    // Buffers saved beside the weights that engines skip at load (engine_skips): in the file, not in `bytes`.
    std::uint64_t skipped_tensors = 0;
    std::uint64_t skipped_bytes = 0;
    // The tensors an engine's online fp8 quantization turns into fp8 (quantized_at_load): part of `bytes`.
    std::map<std::string, std::uint64_t> linear_by_dtype;
    std::uint64_t linear_tensors = 0;
};

// Whether engines skip a tensor of this name at load: a buffer an old checkpoint saved beside the weights, which
// the model rebuilds. vLLM model_executor/models/gpt2.py and gpt_j.py load_weights skip ".attn.bias" and
// ".attn.masked_bias" (GPT-2's causal masks, float32 1024x1024 per layer: 50 MB of openai-community/gpt2's 548 MB
// file; "c_attn.bias" is a weight and is kept); llama.py and the models built on it skip "rotary_emb.inv_freq",
// "rotary_emb.cos_cached" and "rotary_emb.sin_cached"; GPT-Neo's masks are ".attn.attention.bias" and
// ".attn.attention.masked_bias". transformers registers all of them as buffers
// (models/gpt2/modeling_gpt2.py GPT2Attention, persistent=False) and ignores them in a checkpoint.
bool engine_skips(std::string_view name);

// Whether serving a float checkpoint with vLLM's --quantization fp8 turns this tensor into fp8 at load: the weight
// of a linear layer, which is what Fp8Config.get_quant_method quantizes (LinearBase and FusedMoE layers:
// vllm/model_executor/layers/quantization/fp8.py). By name and rank: a tensor of 2 or more dimensions, but not an
// embedding or the LM head (VocabParallelEmbedding and ParallelLMHead are not LinearBase), nor a MoE router (built
// with quant_config=None: models/mixtral.py MixtralMoE.gate, qwen2_moe.py gate and shared_expert_gate,
// deepseek_v2.py; "router" in Llama 4, Jamba, DBRX and GraniteMoE), nor a convolution's kernel (3 or more
// dimensions) or a state-space model's A_log (plain parameters: mamba_mixer.py).
bool quantized_at_load(std::string_view name, std::size_t rank);

// One file's header from its first bytes: `bytes` may hold the whole file or only its start (at least the
// header); `file_size` is the file's size, for checking the offsets. `source` names it in messages, which give the
// byte offset and what was expected there.
Result<Header> read_header(std::string_view bytes, std::uint64_t file_size, const std::string& source);
Result<Header> read_header_file(const std::string& path);

struct Weights {
    std::uint64_t bytes = 0;
    std::uint64_t tensors = 0;
    std::map<std::string, std::uint64_t> by_dtype;
    std::vector<std::string> files;     // the headers read
    std::uint64_t skipped_tensors = 0;  // buffers in the files engines do not load (Header::skipped_*)
    std::uint64_t skipped_bytes = 0;
    std::map<std::string, std::uint64_t> linear_by_dtype;  // Header::linear_by_dtype, over the files
    std::uint64_t linear_tensors = 0;
    // Set by served_in when an engine loads the float tensors in another format: their bytes and format in the
    // files, and the format they are loaded in; for fp8, the linear layers' values quantized (the rest in served_as).
    std::uint64_t stored_bytes = 0;
    std::string stored_as;
    std::string served_as;
    std::uint64_t fp8_values = 0;
    // "16,060,522,496 bytes, exact from 4 safetensors headers (BF16)": how reports name the figure.
    [[nodiscard]] std::string source_text() const;
    // The bytes an engine loads when it serves the model in `dtype`. A checkpoint whose float tensors share one
    // format (F16, BF16, F32 or F64) has them cast to bf16, fp16 or fp32 (a float32 checkpoint is served in bf16);
    // in fp8_e4m3 its linear layers are quantized at load (quantized_at_load), the rest in the files' half precision
    // (bf16 for float32 files); its integer buffers (I64 position ids, BOOL masks) stay as stored. One of mixed
    // formats (quantized integers, fp8 and their scales; float32 norms beside bf16) is loaded as stored, whatever
    // `dtype`. An error for a format KVScope knows no engine to make of float files at load (int8, int4, q8_0, q4_0,
    // mxfp4, fp8_e5m2): the files are not what would be served.
    [[nodiscard]] Result<Weights> served_in(KvDtype dtype) const;
    // Whether every tensor is a float one (F16, BF16, F32, F64) or an integer buffer (I64, BOOL): a checkpoint an
    // engine may cast or quantize as it loads it, not one already quantized.
    [[nodiscard]] bool float_only() const;
};

// `path`: a .safetensors file; a folder with model.safetensors.index.json (its shards, each once); a folder of
// .safetensors files; or a Hugging Face cache repo folder (models--org--name: the snapshot refs/main names).
// A tensor in two of the files read (a folder holding two copies, without an index to choose) is refused, never
// counted twice.
Result<Weights> read_weights(const std::string& path);

}  // namespace kvscope::safetensors
