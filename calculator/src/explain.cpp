#include "kvscope/calculator/explain.h"

#include <cstdio>
#include <map>

namespace kvscope {

namespace {

std::string plural(std::uint64_t n, const std::string& one, const std::string& many) {
    return format_count(n) + " " + (n == 1 ? one : many);
}

// "2 bytes (fp16)" or "1.0625 bytes (q8_0, 34 bytes per 32 values)".
std::string element_size(KvDtype dtype) {
    const KvDtypeInfo& i = info(dtype);
    if (i.values_per_block == 1 && i.bits_per_block % 8 == 0)
        return plural(i.bits_per_block / 8, "byte", "bytes") + " (" + std::string(i.id) + ")";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", bits_per_value(dtype) / 8.0);
    return std::string(buf) + " bytes (" + std::string(i.id) + ", " + std::to_string(i.bits_per_block / 8) +
           " bytes per " + std::to_string(i.values_per_block) + " values)";
}

}  // namespace

Result<std::string> kv_formula_text(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                    const Parallelism& parallel, UnitSystem units) {
    auto layout = KvLayout::make(arch, dtype, workload, parallel);
    if (!layout) return layout.errors();
    auto report = kv_cache_report(*layout, arch, workload, parallel);
    if (!report) return report.errors();
    return kv_formula_text(*layout, arch, dtype, workload, *report, units);
}

std::string kv_formula_text(const KvLayout& layout, const Architecture& arch, KvDtype dtype, const Workload& workload,
                            const KvCacheReport& report, UnitSystem units) {
    // Layers grouped by the tokens they store (sliding windows store fewer).
    std::map<std::uint64_t, std::uint64_t> layers_by_tokens;
    for (std::uint64_t l = 0; l < arch.layers; ++l)
        ++layers_by_tokens[layout.stored_tokens(layout.window(l), workload.context_tokens)];

    // What one token of one layer stores, as factors.
    std::string row;
    if (arch.mla) {
        row = "(" + format_count(arch.mla->kv_lora_rank) + " latent + " + format_count(arch.mla->qk_rope_head_dim) +
              " rope) values";
    } else if (arch.head_dim_k == arch.head_dim_v) {
        row = plural(arch.kv_heads, "KV head", "KV heads") + " × " + format_count(arch.head_dim_k) + " head dim";
    } else {
        row = plural(arch.kv_heads, "KV head", "KV heads") + " × (" + format_count(arch.head_dim_k) + " K + " +
              format_count(arch.head_dim_v) + " V) head dims";
    }
    const bool two = !arch.mla && arch.head_dim_k == arch.head_dim_v;
    std::string text = two ? "2 (K and V) × " : "";
    if (layers_by_tokens.size() == 1) {
        const auto& [tokens, layers] = *layers_by_tokens.begin();
        text += plural(layers, "layer", "layers") + " × " + row + " × " + element_size(dtype) + " × " +
                plural(tokens, "token", "tokens");
    } else {
        std::string sum;
        for (auto it = layers_by_tokens.rbegin(); it != layers_by_tokens.rend(); ++it)
            sum += (sum.empty() ? "" : " + ") + plural(it->second, "layer", "layers") + " × " +
                   plural(it->first, "token", "tokens");
        text += "(" + sum + ") × " + row + " × " + element_size(dtype);
    }
    if (workload.block_size > 1) text += " (rounded up to blocks of " + format_count(workload.block_size) + ")";
    text += " × " + plural(workload.batch, "sequence", "sequences");
    if (layout.replication() > 1)
        text += " × " + std::to_string(layout.replication()) + " copies (tensor parallel " +
                std::to_string(layout.tp()) + " replicates each KV head)";
    text += " = " + format_count(report.total_bytes) + " bytes = " + format_bytes(report.total_bytes, units);
    return text;
}

std::string curves_csv(const Curves& curves) {
    std::string out = "tokens";
    for (const auto& s : curves.series) out += "," + s.name;
    out += "\n";
    for (std::size_t i = 0; i < curves.tokens.size(); ++i) {
        out += std::to_string(curves.tokens[i]);
        for (const auto& s : curves.series) out += "," + std::to_string(s.bytes[i]);
        out += "\n";
    }
    return out;
}

}  // namespace kvscope
