#include "kvscope/calculator/explain.h"

#include "kvscope/calculator/derivation.h"

namespace kvscope {

Result<std::string> kv_formula_text(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                    const Parallelism& parallel, UnitSystem units) {
    auto layout = KvLayout::make(arch, dtype, workload, parallel);
    if (!layout) return layout.errors();
    auto report = kv_cache_report(*layout, arch, workload, parallel);
    if (!report) return report.errors();
    auto d = derive_kv_bytes(*layout, arch, dtype, workload, *report);
    if (!d) return d.errors();
    return derivation_text(*d, units);
}

std::string curves_csv(const Curves& curves) {
    std::string out = "tokens";
    for (const auto& s : curves.series) out += "," + s.name + " bytes";  // a unit on every column
    out += "\n";
    for (std::size_t i = 0; i < curves.tokens.size(); ++i) {
        out += std::to_string(curves.tokens[i]);
        for (const auto& s : curves.series) out += "," + std::to_string(s.bytes[i]);
        out += "\n";
    }
    return out;
}

}  // namespace kvscope
