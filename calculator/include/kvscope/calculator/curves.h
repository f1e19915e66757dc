#pragma once
// KV bytes against context length, one series per variant.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/variants.h"

namespace kvscope {

enum class Spacing { linear, log };

struct CurveOptions {
    std::uint64_t points = 512;
    std::uint64_t min_tokens = 1;
    std::uint64_t max_tokens = 0;  // 0: the model's max positions (or the context when unknown)
    Spacing spacing = Spacing::log;
    // The end is the caller's choice, not the user's (the model's max positions): where the model's cache would pass
    // 2^64 bytes there, the curves end at the last token count where it does not (Curves::lowered_from says so)
    // instead of refusing the scenario. A user's own end (sweep --to) is refused in words.
    bool lower_end_to_fit = false;
};

struct Curve {
    std::string name;  // variant name
    VariantKind series = VariantKind::mha;
    bool is_model = false;
    std::uint64_t replication = 1;     // GPUs that hold each KV head (tensor parallel beyond the heads)
    std::vector<std::uint64_t> bytes;  // KV cache + recurrent state, all sequences, all GPUs; one per token count
    std::uint64_t state_bytes = 0;     // the recurrent state in each of them: the flat part under the curve
};

struct Curves {
    std::vector<std::uint64_t> tokens;  // shared x values, strictly increasing
    std::vector<Curve> series;
    std::uint64_t lowered_from = 0;  // the end asked for, when lower_end_to_fit lowered it; else 0
};

// Integer token counts from min to max inclusive, linear or log spaced, duplicates removed.
std::vector<std::uint64_t> spaced_tokens(const CurveOptions& options);

// The model's own series past 2^64 bytes at the curve's end is an error (on max_tokens) unless the end may be lowered
// (lower_end_to_fit); another layout's is left out and named in `too_large` (when given), as compare_variants leaves
// it out of the comparison.
Result<Curves> kv_curves(const Architecture& arch, KvDtype dtype, const Workload& workload, const Parallelism& parallel,
                         CurveOptions options = {}, std::vector<LeftOutVariant>* too_large = nullptr);

// What a deployment's fit counts against its KV budget at each of the curves' token counts, over all GPUs as the
// chart draws them: the layers as the engine keeps them (vLLM's hybrid pages, llama.cpp's windows and f32 state, a
// draft's or the MTP layers' cache) on the heaviest GPU, times the GPUs, so that it crosses the budget line (the
// budget per GPU times the GPUs) where the fit stops fitting. nullopt where it is the model's own curve, point for
// point, or passes 2^64 bytes (the fit then says what does not fit).
Result<std::optional<Curve>> allocated_curve(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                             const Parallelism& parallel, const Deployment& deployment,
                                             const FitReport& fit, const Curves& curves);

// A model llama.cpp splits between the GPU and the host (fit.offload): its cache at each of the curves' token counts
// where it lives, the GPU's layers' (which the KV budget line is for, so that it crosses the line where the fit stops
// fitting) and the host's, at the fit's layers. Empty where nothing of the cache is on the host.
Result<std::vector<Curve>> split_curves(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                        const Deployment& deployment, const FitReport& fit, const Curves& curves);

}  // namespace kvscope
