#pragma once
// The whole pipeline for one scenario, run once, in one place: the window's model, kvscope-cli and the
// exports all present its result and compute nothing of their own.
//
//   layout -> KV report -> its derivation -> the variants -> the curves -> the weights
//          -> (with a deployment) the fit -> the decode estimate -> the allocated curve -> the measured step

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/variants.h"

namespace kvscope {

struct AnalysisOptions {
    UnitSystem units = UnitSystem::binary;  // of the derivation's text
    // The memory-vs-context curves; max_tokens 0: the model's max positions or the context, whichever is more, an end
    // of the curves' own choosing, lowered where the model's cache would pass 2^64 bytes before it.
    CurveOptions curves;
    // false: no curves (a caller that shows none, whose figures must not fail on a curve's overflow).
    bool with_curves = true;
    // Decode steps measured on this machine (read_measured_steps): the one for this scenario on its
    // deployment's GPU, if any, is shown beside the estimate. None: nothing measured is shown.
    const std::vector<MeasuredStep>* measured_steps = nullptr;
};

// Everything shown for one valid scenario.
struct Analysis {
    Scenario scenario;  // the inputs these results belong to
    KvCacheReport kv;
    std::vector<Variant> variants;
    Curves curves;
    // What the curves leave out, or where they end before the model's limit, said beside them (the chart, sweep's and
    // the exports' curve warnings, after the cache's own): nothing of the cache's figures, so not among kv.warnings.
    std::vector<std::string> curve_warnings;
    KvDerivation derivation;          // the formula factor by factor
    std::string formula;              // the same as one line
    std::string state_formula;        // the recurrent state as one line; empty for a model without one
    std::uint64_t weights_bytes = 0;  // all GPUs, in the deployment's (or the model's) weight format
    bool weights_estimated = false;
    std::string weights_format;  // what weights_bytes counts, in a few words: "bf16 weights", "mxfp4 weights"
    std::optional<FitReport> fit;
    std::optional<DecodeEstimate> decode;
    std::optional<MeasuredStep> measured_step;  // this scenario's step measured on the deployment's GPU
    // Tokens per sequence at which the cache (all sequences, all GPUs) outgrows the weights,
    // and at which it stops fitting the deployment's budget.
    std::optional<std::uint64_t> kv_exceeds_weights_at;
    std::optional<std::uint64_t> stops_fitting_at;
};

// Every stage in order; the errors of the first stages that fail, each with its field.
Result<Analysis> analyze(const Scenario& s, const AnalysisOptions& options = {});

// What is said beside the curves (sweep, the chart, the exports' curves): the cache's warnings, then the curves' own.
std::vector<std::string> curve_warnings(const Analysis& analysis);

}  // namespace kvscope
