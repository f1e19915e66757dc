// Any bytes as a GGUF file: a header and the model llama.cpp would load, or errors naming the byte and what was
// expected, never a crash, a hang or an allocation the file's size does not justify; an imported model is one the
// calculator either sizes or refuses with a message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/kv_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    auto file = kvscope::gguf::read(bytes, "fuzz.gguf");
    if (!file) {
        if (file.errors().empty()) __builtin_trap();  // a failure must say why
        return 0;
    }
    auto imported = kvscope::gguf::import(*file, "fuzz.gguf");
    if (!imported) {
        if (imported.errors().empty()) __builtin_trap();
        return 0;
    }
    kvscope::Workload w;
    w.context_tokens = 4096;
    auto report = kvscope::kv_cache_report(imported->arch, imported->kv_dtype, w, {});
    if (!report && report.errors().empty()) __builtin_trap();
    return 0;
}
