#include "kvscope/calculator/text_file.h"

#include "kvscope/calculator/units.h"
#include "open_file.h"

namespace kvscope {

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
    auto file =
        open_file(path, "file", "a file", "--model-dir and the window's Import model folder read a model's folder");
    if (!file) return file.errors();
    if (file->size > max_bytes)
        return FieldError{"file", path + ": is " + format_bytes(file->size) + ", more than the " +
                                      format_bytes(max_bytes) + " a config.json or a scenario may be"};
    std::string text(static_cast<std::size_t>(file->size), '\0');
    if (!file.value().in.read(text.data(), static_cast<std::streamsize>(file->size)))
        return FieldError{"file", path + ": read failed"};
    return text;
}

}  // namespace kvscope
