#include "kvscope/calculator/analysis.h"

#include <algorithm>

#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/weights.h"

namespace kvscope {

Result<Analysis> analyze(const Scenario& s, const AnalysisOptions& options) {
    Errors errors;
    auto collect = [&errors](const Errors& e) { errors.insert(errors.end(), e.begin(), e.end()); };

    Analysis r;
    r.scenario = s;
    // One layout for the report, the formula and the crossing search.
    auto layout = KvLayout::make(s.arch, s.kv_dtype, s.workload, s.parallel);
    auto kv =
        layout ? kv_cache_report(*layout, s.arch, s.workload, s.parallel) : Result<KvCacheReport>(layout.errors());
    if (!kv) collect(kv.errors());
    if (s.deployment) collect(validate(*s.deployment, s.parallel));
    if (!errors.empty()) return errors;

    r.kv = *kv;
    auto derivation = derive_kv_bytes(*layout, s.arch, s.kv_dtype, s.workload, *kv);
    if (!derivation) return derivation.errors();
    r.derivation = *derivation;
    r.formula = derivation_text(*derivation, options.units);
    r.state_formula = state_derivation_text(s.arch, s.parallel, s.workload.batch, options.units);

    std::vector<LeftOutVariant> too_large;
    auto variants = compare_variants(s.arch, s.kv_dtype, s.workload, s.parallel, &too_large);
    CurveOptions curve_options = options.curves;
    if (curve_options.max_tokens == 0) {
        curve_options.max_tokens = std::max(s.arch.max_positions, s.workload.context_tokens);
        curve_options.lower_end_to_fit = true;
    }
    std::vector<LeftOutVariant> off_chart;
    auto curves = options.with_curves ? kv_curves(s.arch, s.kv_dtype, s.workload, s.parallel, curve_options, &off_chart)
                                      : Result<Curves>(Curves{});
    // The deployment's weight format when there is one (the fit counts the same weights).
    const ParameterCount params = parameters(s.arch);
    // The deployment's weights; without one, the model's own as published (its format, its files' exact bytes), as
    // a deployment starts with them (adopt_model_weights): never bf16 for an MXFP4 or GGUF model by default.
    const Deployment weights_of = s.deployment ? *s.deployment : [&s] {
        Deployment d;
        if (s.model_weights) adopt_model_weights(d, *s.model_weights);
        return d;
    }();
    auto weights = stored_weights_bytes(s.arch, weights_of);
    for (const Errors* e : {&variants.errors(), &curves.errors(), &weights.errors()}) collect(*e);
    if (!errors.empty()) return errors;
    r.variants = *variants;
    // A layout left out of the comparison or the chart is said, never silently missing (the percentages still
    // compare with MHA).
    for (const LeftOutVariant& v : too_large) {
        const bool also = std::find(off_chart.begin(), off_chart.end(), v) != off_chart.end();
        r.kv.warnings.push_back(v.name + " is left out of the comparison" + (also ? " and the chart" : "") +
                                ": its cache at this context and batch would pass 2^64 bytes (16 EiB)" +
                                (v.series == VariantKind::mha ? "; the % of MHA still compares with its size" : ""));
    }
    if (curves->lowered_from > 0 && !curves->tokens.empty())
        r.curve_warnings.push_back("the chart ends at " + format_count(curves->tokens.back()) + " tokens, not at " +
                                   format_count(curves->lowered_from) + ": past it the cache of " +
                                   format_count_of(s.workload.batch, "sequence", "sequences") +
                                   " would pass 2^64 bytes (16 EiB)");
    for (const LeftOutVariant& v : off_chart)
        if (std::find(too_large.begin(), too_large.end(), v) == too_large.end())
            r.curve_warnings.push_back(v.name +
                                       " is left out of the chart: its cache would pass 2^64 bytes (16 EiB) before "
                                       "the chart's end at " +
                                       format_count(curves->tokens.empty() ? 0 : curves->tokens.back()) + " tokens");
    r.curves = *curves;
    r.weights_bytes = *weights;
    // A quantized checkpoint's bytes are an estimate from its scheme, even with a published parameter count.
    const bool exact = weights_of.weights_bytes_exact > 0;
    r.weights_estimated = !exact && (params.estimated || weights_of.weight_quant);
    r.weights_format = weights_format_text(weights_of);
    r.kv_exceeds_weights_at = context_where_kv_exceeds(*layout, s.workload, r.weights_bytes);

    if (s.deployment) {
        auto f = fit(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment);
        if (!f) return f.errors();
        auto d = decode_estimate(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment, *f);
        if (!d) return d.errors();
        r.fit = *f;
        r.decode = *d;
        // Where the engine keeps more than the plain per-layer sum (vLLM's hybrid pages, llama.cpp's windows, a
        // draft's layers), the curves show what it allocates too: the line that meets the budget where the fit
        // stops fitting.
        if (options.with_curves) {
            auto allocated = allocated_curve(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment, *f, r.curves);
            if (!allocated) return allocated.errors();
            if (*allocated) r.curves.series.push_back(**allocated);
            // A model llama.cpp splits: where its cache lives, the GPU's part against the budget.
            auto split = split_curves(s.arch, s.kv_dtype, s.workload, *s.deployment, *f, r.curves);
            if (!split) return split.errors();
            for (Curve& c : split.value()) r.curves.series.push_back(std::move(c));
        }
        if (f->max_context > 0 && f->max_context < curve_options.max_tokens && !f->max_context_limited_by_model)
            r.stops_fitting_at = f->max_context + 1;
        if (options.measured_steps != nullptr) r.measured_step = find_measured_step(*options.measured_steps, s);
    }
    return r;
}

std::vector<std::string> curve_warnings(const Analysis& analysis) {
    std::vector<std::string> out = analysis.kv.warnings;
    out.insert(out.end(), analysis.curve_warnings.begin(), analysis.curve_warnings.end());
    return out;
}

}  // namespace kvscope
