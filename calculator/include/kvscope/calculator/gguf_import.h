#pragma once
// A GGUF as the model llama.cpp loads (gguf_import.cpp), from the file's header that gguf.h reads; and gguf-split's
// pieces.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/result.h"

namespace kvscope::gguf {

// The model a GGUF describes, as llama.cpp loads it: the architecture from general.architecture
// and its {arch}.* keys with llama.cpp's defaults, the exact weight bytes and parameter counts from the tensor infos,
// the KV format llama.cpp uses by default (f16) and the engine llama.cpp. Keys that could change the cache and that
// no rule reads are listed in arch.not_exact.
Result<ImportedModel> import(const File& file, const std::string& source);
// A file: a whole model, or the first piece of one that gguf-split cut into NAME-00001-of-0000N.gguf files (the
// others' tensor infos are read too); another piece is an error naming the first.
Result<ImportedModel> import_file(const std::string& path);

// gguf-split's file names: "Llama-3.1-405B-Q4_K_M-00002-of-00005.gguf" -> {"Llama-3.1-405B-Q4_K_M", 2, 5}.
struct SplitName {
    std::string prefix;
    std::uint64_t no = 0;  // from 1
    std::uint64_t count = 0;
};
std::optional<SplitName> split_name(std::string_view file_name);
std::string split_piece_name(const SplitName& split, std::uint64_t no);

}  // namespace kvscope::gguf
