// Any bytes as a Hugging Face config.json: an imported model or errors naming the field, never a
// crash; an imported model is one the calculator either sizes or refuses with a message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/kv_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto imported = kvscope::import_config(text, "fuzz.json");
    if (!imported) {
        if (imported.errors().empty()) __builtin_trap();  // a failure must say why
        return 0;
    }
    kvscope::Workload w;
    w.context_tokens = 4096;
    auto report = kvscope::kv_cache_report(imported->arch, imported->kv_dtype, w, {});
    if (!report && report.errors().empty()) __builtin_trap();
    return 0;
}
