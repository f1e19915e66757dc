// Any bytes as a .kvscope.json: a scenario or errors, never a crash; a scenario that reads
// writes back to the same scenario.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/scenario_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto s = kvscope::scenario_from_json(text, "fuzz.kvscope.json");
    if (!s) {
        if (s.errors().empty()) __builtin_trap();
        return 0;
    }
    auto again = kvscope::scenario_from_json(kvscope::scenario_to_json(s->scenario), "again");
    // What the writer wrote reads back as it was, with nothing to repair.
    if (!again || !(again->scenario == s->scenario) || !again->repaired.empty()) __builtin_trap();
    // Whatever was saved, sizing it answers or refuses; it never crashes or allocates per-layer tables of 10^15.
    auto report =
        kvscope::kv_cache_report(s->scenario.arch, s->scenario.kv_dtype, s->scenario.workload, s->scenario.parallel);
    if (!report && report.errors().empty()) __builtin_trap();
    // So does checking its deployment (a draft model's layers, MTP layers, the engine's rules).
    if (const auto& d = s->scenario.deployment) {
        auto f = kvscope::fit(s->scenario.arch, s->scenario.kv_dtype, s->scenario.workload, s->scenario.parallel, *d);
        if (!f && f.errors().empty()) __builtin_trap();
    }
    return 0;
}
