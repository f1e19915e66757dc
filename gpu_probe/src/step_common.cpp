#include "step_common.h"

#include <algorithm>
#include <cmath>

#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"

namespace kvscope::probe::step {

bool expert_layer(const Architecture& a, const Dims& d, std::uint64_t l) {
    return a.moe && d.experts > 0 && a.moe->has_experts(l);
}

bool weight_format(KvDtype d) {
    return d == KvDtype::fp32 || d == KvDtype::fp16 || d == KvDtype::bf16 || d == KvDtype::fp8_e4m3;
}

std::string dims_of(const StepRequest& req, Dims& d) {
    const Architecture& a = req.arch;
    if (!weight_format(req.weight_dtype))
        return "weight_dtype: the step multiplies fp32, fp16, bf16 or fp8_e4m3 weights (not " +
               std::string(to_string(req.weight_dtype)) + "); give --weight-dtype bf16";
    if (const Errors e = validate(a); !e.empty()) return join_errors(e);
    if (a.mla)
        return "the step does not run MLA layers yet (this model's attention is MLA); the probe times attention "
               "over its latent cache";
    for (const LayerSpec& l : a.layer_specs)
        if (!l.caches_kv())
            return "the step runs only layers that attend with a K and V cache of their own, not yet this model's "
                   "others (" +
                   layer_mix_text(a) + "); the probe allocates its cache and state and times its attention layers";
    if (a.hidden_size == 0 || a.vocab_size == 0 || (a.intermediate_size == 0 && !a.moe))
        return "the step needs the model's hidden_size, intermediate_size and vocab_size (the config gives none of "
               "at least one)";
    if (a.head_dim_k % 2 != 0) return "head_dim: RoPE rotates pairs of values, so the key head dimension must be even";
    d = Dims{};
    d.hidden = a.hidden_size;
    d.q_heads = a.query_heads;
    d.kv_heads = a.kv_heads;
    d.dk = a.head_dim_k;
    d.dv = a.head_dim_v;
    d.intermediate = a.intermediate_size;
    d.vocab = a.vocab_size;
    d.gated = a.gated_mlp;
    if (a.moe) {
        d.experts = a.moe->experts;
        d.top_k = std::min(a.moe->experts_per_token, a.moe->experts);
        d.expert_intermediate = a.moe->expert_intermediate_size ? a.moe->expert_intermediate_size : a.intermediate_size;
        d.shared = a.moe->shared_experts;
    }
    return {};
}

namespace {
ProbeRequest cache_request(const StepRequest& req) {
    ProbeRequest cache;
    cache.arch = req.arch;
    cache.dtype = req.kv_dtype;
    cache.workload = req.workload;
    return cache;
}
}  // namespace

Result<std::vector<KvTensor>> cache_tensors(const StepRequest& req) { return kv_tensors(cache_request(req)); }

Result<std::uint64_t> cache_tensor_count(const StepRequest& req) { return kv_tensor_count(cache_request(req)); }

std::string whole_cache_problem(const StepRequest& req) {
    auto kv = kv_cache_report(req.arch, req.kv_dtype, req.workload, {});
    return kv ? std::string() : kv.error_text();
}

StepReport fail(StepReport r, Status s, std::string message) {
    r.status = s;
    r.message = std::move(message);
    return r;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

std::string non_finite_logits(const std::vector<float>& logits) {
    return std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); })
               ? std::string()
               : "the step's logits are not finite numbers; its time is not reported";
}

std::string experts_not_run(const StepRequest& req, std::uint64_t layers_run) {
    const Architecture& a = req.arch;
    if (!a.moe || a.moe->experts == 0 || layers_run >= a.layers) return {};
    for (std::uint64_t l = 0; l < layers_run; ++l)
        if (a.moe->has_experts(l)) return {};
    return "the memory holds the first " + std::to_string(layers_run) + " of " + std::to_string(a.layers) +
           " layers, and they have no experts: the step would time none of the model's expert layers; allow more "
           "memory (--memory-limit) or lower the batch or the context";
}

std::string ms_text(double ms) { return number_text(ms, Notation::fixed, ms < 10 ? 2 : 1) + " ms"; }

void predict(StepReport& r, const StepRequest& req, std::uint64_t memory_bytes) {
    Deployment here;
    here.gpu.name = r.device.name;
    here.gpu.memory_bytes = std::max<std::uint64_t>(memory_bytes, 1);
    here.gpu.bandwidth_bytes_per_s = static_cast<std::uint64_t>(r.ceiling_gbps * 1e9);
    here.engine = Engine::plain;
    here.fraction = 1.0;
    here.weight_dtype = req.weight_dtype;
    if (auto est = decode_estimate(req.arch, req.kv_dtype, req.workload, Parallelism{}, here)) {
        r.predicted_step_ms = est->step_time_floor_s * 1000.0;
        r.predicted_bytes_read = est->bytes_read_per_step_per_gpu;
    }
}

std::string finished_message(const StepReport& r) {
    auto one_decimal = [](double v) { return number_text(v, Notation::fixed, 1); };
    return "decode step " + ms_text(r.step_ms) + " (" + one_decimal(r.tokens_per_s()) +
           " tokens/s per sequence) against the calculator's floor of " + ms_text(r.predicted_step_ms) + " on the " +
           one_decimal(r.ceiling_gbps) + " GB/s measured here" +
           (r.scaled ? "; " + std::to_string(r.layers_run) + " of " + std::to_string(r.layers_total) +
                           " layers fit in memory, so their time was scaled to the whole model"
                     : std::string());
}

}  // namespace kvscope::probe::step
