#include "kvscope/calculator/variants.h"

#include <algorithm>
#include <optional>

#include "kvscope/calculator/kv_cache.h"

namespace kvscope {

std::vector<std::uint64_t> kv_head_choices(const Architecture& arch) {
    std::vector<std::uint64_t> divisors;
    const std::uint64_t q = arch.query_heads;
    for (std::uint64_t d = 1; q <= kMaxHeads && d * d <= q; ++d) {
        if (q % d != 0) continue;
        divisors.push_back(d);
        if (d != q / d) divisors.push_back(q / d);
    }
    std::sort(divisors.rbegin(), divisors.rend());
    return divisors;
}

Architecture with_kv_heads(const Architecture& arch, std::uint64_t kv_heads) {
    Architecture a = arch;
    if (a.mla) {
        a.head_dim_k = a.mla->qk_nope_head_dim + a.mla->qk_rope_head_dim;
        a.head_dim_v = a.mla->v_head_dim;
        a.mla.reset();
    }
    a.kv_heads = kv_heads;
    for (auto& l : a.layer_specs) l.kv_heads = 0;  // the variant applies to every attention layer
    return a;
}

std::uint64_t comparison_gqa_heads(const Architecture& arch) {
    if (!arch.mla && attention_kind(arch) == AttentionKind::GQA) return arch.kv_heads;
    const std::uint64_t q = arch.query_heads;
    for (std::uint64_t g = 8; g > 1; --g)
        if (g < q && q % g == 0) return g;
    return 0;
}

std::vector<VariantShape> variant_shapes(const Architecture& arch) {
    std::vector<VariantShape> shapes;
    auto add = [&](std::string name, VariantKind series, AttentionKind kind, Architecture a) {
        const bool own = a == arch;
        shapes.push_back({std::move(name), series, kind, std::move(a), own});
    };
    using V = VariantKind;
    if (arch.attention_layers() == 0) {
        // No layer attends (a pure state-space model): nothing to vary, only the model itself.
        add("no attention", V::own, AttentionKind::MHA, arch);
        return shapes;
    }
    add("MHA", V::mha, AttentionKind::MHA, with_kv_heads(arch, arch.query_heads));
    if (const auto g = comparison_gqa_heads(arch); g > 0)
        add("GQA-" + std::to_string(g), V::gqa, AttentionKind::GQA, with_kv_heads(arch, g));
    if (arch.query_heads > 1) add("MQA", V::mqa, AttentionKind::MQA, with_kv_heads(arch, 1));
    if (arch.mla) add("MLA", V::mla, AttentionKind::MLA, arch);
    // Layers with heads of their own (Gemma 4's global layers) match none of the uniform variants.
    if (std::none_of(shapes.begin(), shapes.end(), [](const VariantShape& v) { return v.is_model; }))
        add(attention_label(arch) + " (per-layer heads)", V::own, attention_kind(arch), arch);
    // A model whose layers are not all full attention (hybrid, chunked, shared, sliding) is compared with
    // itself as if every layer were: the saving of its design, as a number and a line.
    if (!arch.layer_specs.empty())
        add("all full attention", V::all_full, attention_kind(arch), arch.all_full_attention());
    return shapes;
}

std::string replication_text(std::uint64_t replication) {
    return replication > 1 ? "replicated on " + std::to_string(replication) + " GPUs" : std::string();
}

Result<std::vector<Variant>> compare_variants(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                              const Parallelism& parallel, std::vector<LeftOutVariant>* too_large) {
    // The model's own layout must work; a variant the parallel layout cannot
    // express (tensor parallel against its head count) is left out.
    const auto own = kv_cache_report(arch, dtype, workload, parallel);
    if (!own) return own.errors();
    std::vector<Variant> out;
    // MHA's KV bytes for the percentages: exact when they fit in 64 bits, else in long double (0: no MHA row).
    long double mha_bytes = 0;
    for (auto& shape : variant_shapes(arch)) {
        Variant v;
        if (shape.is_model) {
            v.kv_cache_bytes = own->total_bytes;
            v.bytes_per_token = own->bytes_per_token;
            v.state_bytes = own->state_bytes;
            v.replication = own->replication;
        } else {
            // The other shapes need only their totals: the layout's, without a per-layer report.
            auto layout = KvLayout::make(shape.arch, dtype, workload, parallel);
            if (!layout) continue;
            const Checked total = layout->all_gpu_bytes_per_sequence(workload.context_tokens) * workload.batch;
            const Checked per_token = layout->bytes_per_token_all_gpus();
            const Checked state = layout->all_gpu_state_bytes_per_sequence() * workload.batch;
            if (total.overflow() || per_token.overflow() || state.overflow()) {
                // Left out, never shown as a wrapped or clamped figure; named so that every report can say so.
                if (too_large != nullptr) too_large->push_back({shape.name, shape.series});
                if (shape.series == VariantKind::mha)
                    mha_bytes = layout->all_gpu_bytes_per_sequence_approx(workload.context_tokens) *
                                static_cast<long double>(workload.batch);
                continue;
            }
            v.state_bytes = state.value();
            v.kv_cache_bytes = total.value();
            v.bytes_per_token = per_token.value();
            v.replication = layout->replication();
        }
        v.name = std::move(shape.name);
        v.kind = shape.kind;
        v.series = shape.series;
        v.kv_heads = shape.kind == AttentionKind::MLA ? 1 : shape.arch.kv_heads;
        v.is_model = shape.is_model;
        out.push_back(std::move(v));
    }
    const auto mha =
        std::find_if(out.begin(), out.end(), [](const Variant& v) { return v.series == VariantKind::mha; });
    if (mha != out.end()) mha_bytes = static_cast<long double>(mha->kv_cache_bytes);
    for (auto& v : out)
        v.percent_of_mha =
            mha_bytes > 0 ? static_cast<double>(100.0L * static_cast<long double>(v.kv_cache_bytes) / mha_bytes) : 0.0;
    return out;
}

}  // namespace kvscope
