#include "kvscope/calculator/decode.h"

#include <map>

#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/weights.h"

namespace kvscope {
namespace {

using ld = long double;

// Attending layers grouped by the window the engine honours (0 = full context). Recurrent and
// MLP-only layers attend to nothing; shared layers attend over another layer's cache.
std::map<std::uint64_t, std::uint64_t> window_groups(const Architecture& arch, const Workload& workload) {
    std::map<std::uint64_t, std::uint64_t> groups;
    for (std::uint64_t l = 0; l < arch.layers; ++l)
        if (arch.layer(l).attends()) ++groups[honoured_window(arch, workload, l)];
    return groups;
}

// The bytes a step reads beyond the cache stored, on the heaviest GPU: a layer that attends over another layer's cache
// and keeps none (Gemma 3n's last layers, Phi-4-mini-flash's cross-decoder: vLLM kv_sharing_target_layer_name) reads
// that cache again, as much as a layer of its kind and window keeps. `stored` is the cache as the engine keeps it.
std::uint64_t shared_layer_reads_per_gpu(const Architecture& stored, KvDtype kv_dtype, const Workload& workload,
                                         const Parallelism& parallel) {
    if (stored.count_layers(LayerKind::shared) == 0) return 0;
    Architecture reading = stored;
    for (LayerSpec& s : reading.layer_specs)
        if (s.kind == LayerKind::shared) s.kind = s.window > 0 ? LayerKind::sliding : LayerKind::full;
    const auto with = KvLayout::make(reading, kv_dtype, workload, parallel);
    const auto without = KvLayout::make(stored, kv_dtype, workload, parallel);
    if (!with || !without) return 0;
    const Checked a = with->gpu_bytes_per_sequence(workload.context_tokens) * workload.batch;
    const Checked b = without->gpu_bytes_per_sequence(workload.context_tokens) * workload.batch;
    if (a.overflow() || b.overflow() || a.value() < b.value()) return 0;
    return a.value() - b.value();
}

// FLOPs of q·Kᵀ plus attention·V for one query over one cached position, one layer.
ld attention_flops_per_position(const Architecture& arch) {
    const ld dk = arch.mla ? static_cast<ld>(arch.mla->qk_nope_head_dim + arch.mla->qk_rope_head_dim)
                           : static_cast<ld>(arch.head_dim_k);
    const ld dv = arch.mla ? static_cast<ld>(arch.mla->v_head_dim) : static_cast<ld>(arch.head_dim_v);
    return 2.0L * static_cast<ld>(arch.query_heads) * (dk + dv);
}

// Σ_{i=1..t} min(i, w): attention positions summed over a prefix of t tokens.
ld prefix_positions(ld t, ld w) {
    if (w <= 0 || t <= w) return t * (t + 1) / 2;
    return w * (w + 1) / 2 + (t - w) * w;
}

// Σ_{t=1..n} prefix_positions(t, w).
ld prefix_positions_cumulative(ld n, ld w) {
    if (w <= 0 || n <= w) return n * (n + 1) * (n + 2) / 6;
    return w * (w + 1) * (w + 2) / 6 + (n - w) * w * (w + 1) / 2 + w * (n - w) * (n - w + 1) / 2;
}

}  // namespace

double attention_flops(const Architecture& arch, const Workload& workload, std::uint64_t tokens) {
    const ld per = attention_flops_per_position(arch);
    ld sum = 0;
    for (const auto& [w, layers] : window_groups(arch, workload)) {
        const std::uint64_t kept = w == 0 ? tokens : std::min(tokens, w);
        sum += per * static_cast<ld>(layers) * static_cast<ld>(kept);
    }
    return static_cast<double>(sum);
}

TokenWork token_work(const Architecture& arch, const Workload& workload, std::uint64_t tokens) {
    const ld n = static_cast<ld>(tokens);
    const ld two_n = 2.0L * static_cast<ld>(matmul_parameters(arch));
    const ld per = attention_flops_per_position(arch);
    ld attn_at_t = 0, attn_prefix = 0, attn_cumulative = 0;
    for (const auto& [w, layers] : window_groups(arch, workload)) {
        const ld lw = static_cast<ld>(w), count = static_cast<ld>(layers);
        attn_at_t += per * count * (w == 0 ? n : std::min(n, lw));
        attn_prefix += per * count * prefix_positions(n, lw);
        attn_cumulative += per * count * prefix_positions_cumulative(n, lw);
    }
    TokenWork t;
    t.flops_cached = static_cast<double>(two_n + attn_at_t);
    t.flops_uncached = static_cast<double>(two_n * n + attn_prefix);
    t.cumulative_cached = static_cast<double>(two_n * n + attn_prefix);
    t.cumulative_uncached = static_cast<double>(two_n * n * (n + 1) / 2 + attn_cumulative);
    return t;
}

Result<DecodeEstimate> decode_estimate(const Architecture& arch, KvDtype kv_dtype, const Workload& workload,
                                       const Parallelism& parallel, const Deployment& deployment) {
    auto f = fit(arch, kv_dtype, workload, parallel, deployment);
    if (!f) return f.errors();
    return decode_estimate(arch, kv_dtype, workload, parallel, deployment, *f);
}

Result<DecodeEstimate> decode_estimate(const Architecture& arch, KvDtype kv_dtype, const Workload& workload,
                                       const Parallelism& parallel, const Deployment& deployment, const FitReport& f) {
    auto read = read_weights_bytes(arch, deployment);
    if (!read) return read.errors();

    DecodeEstimate d;
    const std::uint64_t gpus = parallel.gpus();
    d.weight_bytes_read_per_gpu = ceil_div(*read, gpus);
    // The model's own step: a separate draft's cache is read by the draft's steps, not the model's; layers that read
    // another layer's cache read it again.
    const Workload stored = engine_workload(workload, deployment, arch);  // as the fit stored it
    const Architecture engine_arch =
        engine_architecture(arch, deployment.engine, f.ubatch > 0 ? f.ubatch : llama_cpp_ubatch(deployment));
    const Parallelism engine_parallel = engine_parallelism(parallel, deployment.engine);
    d.kv_bytes_read_per_gpu = f.kv_bytes_per_gpu - f.draft_kv_bytes_per_gpu +
                              shared_layer_reads_per_gpu(engine_arch, kv_dtype, stored, engine_parallel);
    d.state_bytes_read_per_gpu = f.state_bytes_per_gpu;  // every step reads (and rewrites) the whole state
    d.bytes_read_per_step_per_gpu = d.weight_bytes_read_per_gpu + d.kv_bytes_read_per_gpu + d.state_bytes_read_per_gpu;
    // Tensor-parallel GPUs read their shares at once; pipeline stages take their turns.
    d.step_time_floor_s = static_cast<double>(parallel.pp) * static_cast<double>(d.bytes_read_per_step_per_gpu) /
                          static_cast<double>(deployment.gpu.bandwidth_bytes_per_s);
    // A model split between the GPU and the host (llama.cpp, offload.h): the host's part at the host's bandwidth.
    // The per-GPU figures are then the GPU's part alone (what its memory serves); host_bytes_read_per_step the rest.
    if (f.offload && f.offload->read_host_bytes > 0) {
        const Offload& o = *f.offload;  // kv_on_*_bytes hold the recurrent state too
        d.kv_bytes_read_per_gpu = o.kv_on_gpu_bytes - o.state_on_gpu_bytes;
        d.state_bytes_read_per_gpu = o.state_on_gpu_bytes;
        d.weight_bytes_read_per_gpu = o.read_gpu_bytes - o.kv_on_gpu_bytes;
        d.bytes_read_per_step_per_gpu = o.read_gpu_bytes;
        d.host_bytes_read_per_step = f.offload->read_host_bytes;
        d.host_bandwidth_bytes_per_s = f.offload->host_bandwidth_bytes_per_s;
        d.step_time_floor_s = f.offload->step_time_s;
    }
    d.tokens_per_s_per_sequence = d.step_time_floor_s > 0 ? 1.0 / d.step_time_floor_s : 0.0;
    d.tokens_per_s_total = d.tokens_per_s_per_sequence * static_cast<double>(workload.batch);

    const TokenWork work = token_work(arch, workload, workload.context_tokens);
    d.flops_per_token_cached = work.flops_cached;
    d.flops_per_token_uncached = work.flops_uncached;
    d.cumulative_flops_cached = work.cumulative_cached;
    d.cumulative_flops_uncached = work.cumulative_uncached;

    // Smallest context where the cache on a GPU outweighs that GPU's share of the weights.
    auto layout = KvLayout::make(engine_arch, kv_dtype, stored, engine_parallel);
    if (!layout) return layout.errors();
    // A split model's cache and weights are each the whole model's, wherever their layers live.
    const std::uint64_t weights = f.offload && f.offload->splits() ? f.weights_bytes : f.weights_bytes_per_gpu;
    d.kv_exceeds_weights_at_tokens =
        context_where_kv_exceeds(*layout, stored, weights - f.draft_weights_bytes_per_gpu, KvScope::heaviest_gpu);
    return d;
}

std::string decode_floor_text(const DecodeEstimate& d, bool fits) {
    const double ms = d.step_time_floor_s * 1e3;
    return (fits ? "" : "if it fitted, ") + number_text(ms, Notation::fixed, ms_decimals(ms)) + " ms per step → " +
           number_text(d.tokens_per_s_per_sequence, Notation::fixed, 1) + " tokens/s per sequence, " +
           number_text(d.tokens_per_s_total, Notation::fixed, 0) + " tokens/s in all";
}

}  // namespace kvscope
