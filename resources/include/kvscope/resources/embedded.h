#pragma once
// Files under resources/, compiled in. Paths are relative to resources/ ("models/gpt2.json").

#include <span>
#include <string_view>

namespace kvscope::resources {

struct EmbeddedFile {
    std::string_view path;
    std::string_view content;
};

std::span<const EmbeddedFile> files();

}  // namespace kvscope::resources
