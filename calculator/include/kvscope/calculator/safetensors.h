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
    std::vector<std::string> names;                 // the tensors', in the header's order
};

// One file's header from its first bytes: `bytes` may hold the whole file or only its start (at least the
// header); `file_size` is the file's size, for checking the offsets. `source` names it in messages, which give the
// byte offset and what was expected there.
Result<Header> read_header(std::string_view bytes, std::uint64_t file_size, const std::string& source);
Result<Header> read_header_file(const std::string& path);

struct Weights {
    std::uint64_t bytes = 0;
    std::uint64_t tensors = 0;
    std::map<std::string, std::uint64_t> by_dtype;
    std::vector<std::string> files;  // the headers read
    // Set by served_in when an engine loads the float tensors in another float format: their bytes and format in the
    // files, and the format they are loaded in.
    std::uint64_t stored_bytes = 0;
    std::string stored_as;
    std::string served_as;
    // "16,060,522,496 bytes, exact from 4 safetensors headers (BF16)": how reports name the figure.
    [[nodiscard]] std::string source_text() const;
    // The bytes an engine loads when it serves the model in `dtype` (bf16, fp16 or fp32): a checkpoint whose float
    // tensors share one format (F16, BF16, F32 or F64) has them cast to it (a float32 checkpoint is served in bf16),
    // its integer buffers (I64 position ids, BOOL masks) as stored; one of mixed formats (quantized integers, fp8 and
    // their scales; float32 norms beside bf16) is loaded as stored, and so is any other `dtype`.
    [[nodiscard]] Weights served_in(KvDtype dtype) const;
};

// `path`: a .safetensors file; a folder with model.safetensors.index.json (its shards, each once); a folder of
// .safetensors files; or a Hugging Face cache repo folder (models--org--name: the snapshot refs/main names).
// A tensor in two of the files read (a folder holding two copies, without an index to choose) is refused, never
// counted twice.
Result<Weights> read_weights(const std::string& path);

}  // namespace kvscope::safetensors
