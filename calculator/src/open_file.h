#pragma once
// Inside the calculator: opening a file the importers read (a config.json, a scenario, a GGUF, a safetensors header),
// with what it is said when it is not one. Not a public header.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "kvscope/calculator/result.h"

namespace kvscope {

struct OpenedFile {
    std::ifstream in;
    std::uint64_t size = 0;
};

// PATH opened for reading, and its size. A folder (which opens as a stream of 2^63 bytes on Linux), a pipe or a device
// (a pipe would wait for a writer; /dev/zero never ends) is said as what it is, under `field`: "PATH: is a folder,
// not KIND (FOLDER_HINT)", where FOLDER_HINT says what reads a folder instead.
inline Result<OpenedFile> open_file(const std::string& path, const std::string& field, std::string_view kind,
                                    std::string_view folder_hint) {
    const std::filesystem::path p(path);
    if (std::error_code ec; std::filesystem::is_directory(p, ec))
        return FieldError{field,
                          path + ": is a folder, not " + std::string(kind) + " (" + std::string(folder_hint) + ")"};
    if (std::error_code ec; std::filesystem::exists(p, ec) && !std::filesystem::is_regular_file(p, ec))
        return FieldError{field, path + ": is not a regular file (a pipe or a device)"};
    OpenedFile f{std::ifstream(path, std::ios::binary), 0};
    if (!f.in) return FieldError{field, path + ": cannot be opened (missing, or no permission to read)"};
    f.in.seekg(0, std::ios::end);
    const auto size = f.in.tellg();
    if (size < 0) return FieldError{field, path + ": cannot be read (not a regular file?)"};
    f.in.seekg(0);
    f.size = static_cast<std::uint64_t>(size);
    return f;
}

}  // namespace kvscope
