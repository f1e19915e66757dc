#pragma once
// A whole text file read at once (a config.json, a scenario, the catalog, a model store's index), with what it is
// said when it cannot be: a folder, a pipe, missing, too large.

#include <cstddef>
#include <string>

#include "kvscope/calculator/result.h"

namespace kvscope {

// Reads a whole file, or an error naming the path and the reason (under the field "file"); one over `max_bytes` is
// refused with both sizes.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = 64ull << 20);

}  // namespace kvscope
