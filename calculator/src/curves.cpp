#include "kvscope/calculator/curves.h"

#include <algorithm>
#include <cmath>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/offload.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

std::vector<std::uint64_t> spaced_tokens(const CurveOptions& o) {
    std::vector<std::uint64_t> out;
    const std::uint64_t lo = std::max<std::uint64_t>(1, o.min_tokens);
    const std::uint64_t hi = std::max(lo, o.max_tokens);
    const std::uint64_t n = std::max<std::uint64_t>(2, o.points);
    out.reserve(n);
    const double log_lo = std::log(static_cast<double>(lo)), log_hi = std::log(static_cast<double>(hi));
    for (std::uint64_t i = 0; i < n; ++i) {
        const double f = static_cast<double>(i) / static_cast<double>(n - 1);
        double x;
        if (o.spacing == Spacing::log)
            x = std::exp(log_lo + f * (log_hi - log_lo));
        else
            x = static_cast<double>(lo) + f * static_cast<double>(hi - lo);
        std::uint64_t t = i == 0 ? lo : i == n - 1 ? hi : static_cast<std::uint64_t>(std::llround(x));
        t = std::clamp(t, lo, hi);
        if (out.empty() || t > out.back()) out.push_back(t);
    }
    return out;
}

Result<Curves> kv_curves(const Architecture& arch, KvDtype dtype, const Workload& workload, const Parallelism& parallel,
                         CurveOptions options, std::vector<LeftOutVariant>* too_large) {
    if (options.max_tokens == 0)
        options.max_tokens = arch.max_positions > 0 ? arch.max_positions : workload.context_tokens;
    // The same rule as the comparison: the model's own cache must work at the workload's context.
    if (auto own = kv_cache_report(arch, dtype, workload, parallel); !own) return own.errors();

    Curves c;
    if (options.lower_end_to_fit)
        for (const auto& shape : variant_shapes(arch)) {
            if (!shape.is_model) continue;
            auto layout = KvLayout::make(shape.arch, dtype, workload, parallel);
            if (!layout) break;
            const auto overflows = [&](std::uint64_t t) {
                return (layout->all_gpu_bytes_per_sequence(t, Memory::kv_and_state) * workload.batch).overflow();
            };
            if (!overflows(options.max_tokens)) break;
            // The bytes grow with the tokens and fit at the context (kv_cache_report above): the last count that
            // fits lies between the two.
            std::uint64_t fits = std::min(workload.context_tokens, options.max_tokens), over = options.max_tokens;
            while (over - fits > 1) {
                const std::uint64_t mid = fits + (over - fits) / 2;
                (overflows(mid) ? over : fits) = mid;
            }
            c.lowered_from = options.max_tokens;
            options.max_tokens = fits;
            options.min_tokens = std::min(options.min_tokens, fits);
            break;
        }
    c.tokens = spaced_tokens(options);
    for (const auto& shape : variant_shapes(arch)) {
        auto layout = KvLayout::make(shape.arch, dtype, workload, parallel);
        if (!layout) continue;  // as in compare_variants: a layout tensor parallelism cannot express
        // The curve rises with tokens: if its end fits in 64 bits, every point does.
        if ((layout->all_gpu_bytes_per_sequence(c.tokens.back(), Memory::kv_and_state) * workload.batch).overflow()) {
            if (shape.is_model)
                return overflow_error(Field::max_tokens,
                                      "the curve's end at " + format_count(c.tokens.back()) + " tokens");
            if (too_large != nullptr) too_large->push_back({shape.name, shape.series});
            continue;
        }
        Curve curve;
        curve.name = shape.name;
        curve.is_model = shape.is_model;
        curve.series = shape.series;
        curve.replication = layout->replication();
        curve.state_bytes = (layout->all_gpu_state_bytes_per_sequence() * workload.batch).value();
        curve.bytes.reserve(c.tokens.size());
        for (const auto t : c.tokens)
            curve.bytes.push_back(
                (layout->all_gpu_bytes_per_sequence(t, Memory::kv_and_state) * workload.batch).value());
        c.series.push_back(std::move(curve));
    }
    return c;
}

Result<std::optional<Curve>> allocated_curve(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                             const Parallelism& parallel, const Deployment& deployment,
                                             const FitReport& fit, const Curves& curves) {
    auto cache = fit_cache_architecture(arch, deployment, fit);
    if (!cache) return cache.errors();
    const Workload w = engine_workload(workload, deployment, *cache);
    auto layout = KvLayout::make(*cache, dtype, w, engine_parallelism(parallel, deployment.engine));
    if (!layout) return layout.errors();
    const auto model =
        std::find_if(curves.series.begin(), curves.series.end(), [](const Curve& c) { return c.is_model; });
    Curve out;
    out.series = VariantKind::allocated;
    out.name = "as " + std::string(to_string(deployment.engine)) + " allocates it" +
               (fit.gpus > 1 ? " (the fullest GPU × " + std::to_string(fit.gpus) + ")" : "");
    const Checked state = Checked(fit.state_bytes_per_gpu) * fit.gpus;
    if (state.overflow()) return std::optional<Curve>{};
    out.state_bytes = state.value();
    bool differs = model == curves.series.end();
    for (std::size_t i = 0; i < curves.tokens.size(); ++i) {
        const std::uint64_t t = curves.tokens[i];
        // As the fit counts one sequence on its fullest GPU (fit: per_seq).
        const Checked per_gpu = fit.engine_pages ? fit.engine_pages->bytes_per_sequence(t)
                                                 : layout->gpu_bytes_per_sequence(t, Memory::kv_and_state);
        const Checked all = per_gpu * w.batch * fit.gpus;
        if (all.overflow()) return std::optional<Curve>{};
        out.bytes.push_back(all.value());
        differs = differs || model->bytes.size() != curves.tokens.size() || model->bytes[i] != all.value();
    }
    if (!differs) return std::optional<Curve>{};
    return std::optional<Curve>(std::move(out));
}

Result<std::vector<Curve>> split_curves(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                        const Deployment& deployment, const FitReport& fit, const Curves& curves) {
    std::vector<Curve> out;
    if (!fit.offload || !fit.offload->splits() || curves.tokens.empty()) return out;
    const Offload& o = *fit.offload;
    auto cache = fit_cache_architecture(arch, deployment, fit);
    if (!cache) return cache.errors();
    Curve gpu, host;
    gpu.series = VariantKind::on_gpu;
    host.series = VariantKind::on_host;
    gpu.name = "KV on the GPU (" + format_count(o.gpu_layers) + " of " + format_count(o.total_layers) + " layers)";
    host.name = "KV in host RAM";
    gpu.state_bytes = o.state_on_gpu_bytes;
    host.state_bytes = o.state_on_host_bytes;
    for (const std::uint64_t t : curves.tokens) {
        Workload w = engine_workload(workload, deployment, *cache);
        w.context_tokens = t;
        auto report = kv_cache_report(*cache, dtype, w);
        if (!report) return report.errors();
        Checked on_gpu(0), on_host(0);
        for (const LayerKv& l : report->layers) {
            const bool g = o.kv_offload && llama_cpp_block_on_gpu(l.layer, cache->layers, o.gpu_layers);
            (g ? on_gpu : on_host) += Checked(l.bytes) + l.state_bytes;
        }
        if (on_gpu.overflow() || on_host.overflow()) return out;  // past 2^64: the fit says what does not fit
        gpu.bytes.push_back(on_gpu.value());
        host.bytes.push_back(on_host.value());
    }
    if (std::any_of(host.bytes.begin(), host.bytes.end(), [](std::uint64_t b) { return b > 0; })) {
        out.push_back(std::move(gpu));
        out.push_back(std::move(host));
    }
    return out;
}

}  // namespace kvscope
