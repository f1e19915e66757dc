#pragma once
// How fast can it decode? A memory-bandwidth floor per token, and the work the
// cache saves compared with recomputing the whole prefix at every step.

#include <cstdint>
#include <optional>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/fit.h"

namespace kvscope {

struct DecodeEstimate {
    std::uint64_t weight_bytes_read_per_gpu = 0;  // active weights, one pass per step
    std::uint64_t kv_bytes_read_per_gpu = 0;      // every sequence's cache at the context
    std::uint64_t state_bytes_read_per_gpu = 0;   // every sequence's recurrent state
    std::uint64_t bytes_read_per_step_per_gpu = 0;
    // A model split between the GPU and the host (offload.h): the bytes above are the GPU's part, and these what a
    // step reads from host memory, and at what bandwidth; 0 when every layer is on the GPU.
    std::uint64_t host_bytes_read_per_step = 0;
    std::uint64_t host_bandwidth_bytes_per_s = 0;
    double step_time_floor_s = 0;  // bytes / bandwidth, pipeline stages in turn (a split: each part at its own)
    double tokens_per_s_per_sequence = 0;
    double tokens_per_s_total = 0;
    // Work for the token at position T (the context), one sequence.
    double flops_per_token_cached = 0;    // 2·active params + attention over T cached keys
    double flops_per_token_uncached = 0;  // the whole prefix again: 2·params·T + attention Σ_{i≤T}
    // Generating T tokens from an empty context, one sequence.
    double cumulative_flops_cached = 0;    // grows linearly
    double cumulative_flops_uncached = 0;  // grows with the n(n+1)/2 sum
    // Smallest context at which the KV cache (all sequences) outweighs the weights; none when
    // sliding windows cap the cache below them.
    std::optional<std::uint64_t> kv_exceeds_weights_at_tokens;
};

// The work of generating the token at position `tokens` of one sequence, with the cache and
// recomputing the whole prefix (which is a prefill of `tokens` tokens), and of generating
// `tokens` tokens from an empty context both ways.
struct TokenWork {
    double flops_cached = 0;         // 2·matmul params + attention over the cached positions
    double flops_uncached = 0;       // 2·params·T + attention Σ_{i≤T}
    double cumulative_cached = 0;    // grows linearly
    double cumulative_uncached = 0;  // grows with the n(n+1)/2 sum
};
TokenWork token_work(const Architecture& arch, const Workload& workload, std::uint64_t tokens);

// Attention FLOPs (q·Kᵀ and ·V) for one query attending to `tokens` cached positions, all layers.
double attention_flops(const Architecture& arch, const Workload& workload, std::uint64_t tokens);

Result<DecodeEstimate> decode_estimate(const Architecture& arch, KvDtype kv_dtype, const Workload& workload,
                                       const Parallelism& parallel, const Deployment& deployment);
// The same from a fit already computed for these inputs, so callers that show both work it out once.
Result<DecodeEstimate> decode_estimate(const Architecture& arch, KvDtype kv_dtype, const Workload& workload,
                                       const Parallelism& parallel, const Deployment& deployment, const FitReport& fit);

// The floor as every program writes it: "33.57 ms per step → 29.8 tokens/s per sequence, 477 tokens/s in all"; for
// a deployment that does not fit, "if it fitted, " before it, since no speed is that deployment's own.
std::string decode_floor_text(const DecodeEstimate& estimate, bool fits);

}  // namespace kvscope
