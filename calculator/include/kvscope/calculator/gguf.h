#pragma once
// GGUF, the file format of llama.cpp, Ollama and LM Studio: the header only (metadata and tensor infos),
// never the tensor data, so a 400 GB file opens in the time it takes to read a few megabytes.
// Layout (ggml docs/gguf.md; ggml/src/gguf.cpp): "GGUF", u32 version (2 or 3; 1 used u32 counts),
// u64 tensor count, u64 metadata count, the metadata (key string, u32 type, value), then one info per
// tensor (name, u32 dimensions, u64 each, u32 ggml type, u64 offset). Strings are a u64 length and bytes;
// all little-endian.

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/result.h"

namespace kvscope::gguf {

// gguf_type (ggml/include/gguf.h).
enum class Type : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
std::string_view to_string(Type type);

struct Value {
    Type type = Type::u8;
    std::uint64_t u = 0;  // unsigned integers and booleans
    std::int64_t i = 0;   // signed integers
    double f = 0;         // f32 and f64
    std::string s;
    // Arrays: the item type and count; the items themselves are kept for arrays of up to kKeptItems numbers or
    // booleans (per-layer settings), not for the tokenizer's vocabulary.
    Type item_type = Type::u8;
    std::uint64_t count = 0;
    std::vector<Value> items;

    [[nodiscard]] bool is_array() const { return type == Type::array; }
    [[nodiscard]] bool is_integer() const;
    // A whole number >= 0 (any integer type, or a bool as 0/1); nullopt for negatives, floats, strings.
    [[nodiscard]] std::optional<std::uint64_t> as_u64() const;
    [[nodiscard]] std::optional<double> as_double() const;
    // "u32 4096", "array of 32 i32", "string 'llama'": how a message describes it.
    [[nodiscard]] std::string describe() const;
};
constexpr std::uint64_t kKeptItems = 1u << 16;

struct TensorInfo {
    std::string name;
    std::vector<std::uint64_t> dims;  // ne[0] (the row) first, as ggml stores them
    std::uint32_t type = 0;           // enum ggml_type
    std::uint64_t offset = 0;         // from the start of the data section
};

struct File {
    std::uint32_t version = 0;
    std::vector<std::pair<std::string, Value>> metadata;  // in file order
    std::vector<TensorInfo> tensors;
    std::uint64_t header_bytes = 0;  // where the tensor infos end
    std::uint64_t file_bytes = 0;    // the file's size (0: not known, nothing checked against it)
    [[nodiscard]] const Value* find(std::string_view key) const;
};

// When the file ends before its tensors' data does (a header-only file, a download cut short), what is missing, in
// words: llama.cpp refuses such a file ("tensor data is not within the file bounds", llama-model-loader.cpp). The
// data starts at the end of the tensor infos rounded up to general.alignment (32 by default, ggml's
// GGUF_DEFAULT_ALIGNMENT).
std::optional<std::string> missing_tensor_data(const File& file);

// Reads the header from `in` (positioned at the file's start) of a file of `size` bytes; `source` names it in
// messages, which give the byte offset and what was expected there. Counts and lengths that could not fit in
// the rest of the file are refused before anything is allocated.
Result<File> read(std::istream& in, std::uint64_t size, const std::string& source);
Result<File> read(std::string_view bytes, const std::string& source);
Result<File> read_file(const std::string& path);

// ggml's storage types (ggml/src/ggml.c type_traits; the block structs of ggml-common.h): a row of n values
// takes n / block blocks of `block_bytes` each.
struct TypeInfo {
    std::string_view name;
    std::uint32_t block = 0;
    std::uint32_t block_bytes = 0;
};
std::optional<TypeInfo> type_info(std::uint32_t type);
// The tensor's bytes, or an error naming it (an unknown type, a row that is not whole blocks, an overflow).
Result<std::uint64_t> tensor_bytes(const TensorInfo& tensor);

// The model a GGUF describes, as llama.cpp loads it: kvscope/calculator/gguf_import.h.

}  // namespace kvscope::gguf
