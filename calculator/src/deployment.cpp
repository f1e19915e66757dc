#include "kvscope/calculator/deployment.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
namespace {

struct EngineInfo {
    Engine engine;
    std::string_view id;
    double fraction;
    std::string_view rule;
    bool takes_fraction = true;  // the engine has a memory-fraction setting
};

constexpr std::array<EngineInfo, kEngineCount> kEngines{{
    {Engine::vllm, "vllm", 0.90, "total x gpu_memory_utilization - weights - activation reserve - runtime overhead"},
    {Engine::sglang, "sglang", 0.88, "total x mem_fraction_static - weights"},
    {Engine::tensorrt_llm, "tensorrt-llm", 0.90,
     "(total - weights - runtime overhead) x kv_cache_free_gpu_mem_fraction"},
    {Engine::llama_cpp, "llama.cpp", 1.0,
     "total - weights - compute buffers - runtime overhead; one contiguous cache for n_ctx", false},
    {Engine::plain, "plain", 1.0, "total - weights - activation reserve - runtime overhead", false},
}};
static_assert(lists_in_order(kEngines, [](const EngineInfo& e) { return e.engine; }),
              "kEngines: one entry per Engine, in order");

__extension__ using i128 = __int128;

std::int64_t clamp_i64(i128 v) {
    constexpr i128 lo = std::numeric_limits<std::int64_t>::min();
    constexpr i128 hi = std::numeric_limits<std::int64_t>::max();
    return static_cast<std::int64_t>(std::clamp(v, lo, hi));
}

// bytes x fraction, rounded down, exact: the fraction is taken in parts per million.
i128 scale(i128 bytes, double fraction) {
    const auto ppm = static_cast<i128>(std::llround(fraction * 1e6));
    return bytes * ppm / 1'000'000;
}

}  // namespace

std::string_view to_string(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).id; }
double default_fraction(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).fraction; }
bool engine_takes_fraction(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).takes_fraction; }
std::string_view budget_rule(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).rule; }

std::optional<Engine> parse_engine(std::string_view text) {
    const std::string t = ascii_lower(text);
    for (const auto& e : kEngines)
        if (t == e.id) return e.engine;
    if (t == "trt-llm" || t == "trtllm" || t == "tensorrt_llm" || t == "tensorrtllm") return Engine::tensorrt_llm;
    if (t == "llama-cpp" || t == "llamacpp" || t == "llama_cpp") return Engine::llama_cpp;
    return std::nullopt;
}

std::string engine_list() {
    std::string out;
    for (const auto& e : kEngines) out += (out.empty() ? "" : ", ") + std::string(e.id);
    return out;
}

Result<std::uint64_t> weights_bytes(std::uint64_t params, KvDtype dtype) {
    const Checked b = row_bytes(dtype, params);
    if (b.overflow()) return overflow_error(Field::weight_dtype, "the weights");
    return b.value();
}

void adopt_model_weights(Deployment& d, const ModelWeights& w) {
    d.weight_dtype = w.dtype;
    d.weights_bytes_exact = w.exact_bytes;
    d.weights_source = w.source;
    if (w.engine) {
        d.engine = *w.engine;
        d.fraction = default_fraction(d.engine);
    }
}

std::string weights_text(const Deployment& d) {
    if (d.weights_bytes_exact == 0) return "in " + std::string(to_string(d.weight_dtype));
    return d.weights_source.empty() ? format_count(d.weights_bytes_exact) + " bytes, exact" : d.weights_source;
}

Result<std::uint64_t> stored_weights_bytes(const Architecture& arch, const Deployment& d) {
    if (d.weights_bytes_exact > 0) return d.weights_bytes_exact;
    return weights_bytes(parameters(arch).total, d.weight_dtype);
}

Result<std::uint64_t> read_weights_bytes(const Architecture& arch, const Deployment& d) {
    const std::uint64_t matmul = matmul_parameters(arch);
    if (d.weights_bytes_exact == 0) return weights_bytes(matmul, d.weight_dtype);
    // The exact bytes hold every tensor; a step reads the same share of them as of the parameters.
    const std::uint64_t total = parameters(arch).total;
    if (total == 0 || matmul >= total) return d.weights_bytes_exact;
    const auto share = static_cast<i128>(d.weights_bytes_exact) * matmul / total;
    return static_cast<std::uint64_t>(share);
}

Errors validate(const Deployment& d, const Parallelism& parallel) {
    Errors e;
    if (d.gpu.memory_bytes == 0) e.push_back({Field::gpu_memory, "the GPU's memory must be more than 0 bytes"});
    if (d.gpu.bandwidth_bytes_per_s == 0)
        e.push_back({Field::gpu_bandwidth, "the GPU's memory bandwidth must be more than 0"});
    if (d.gpu_count == 0)
        e.push_back({Field::gpus, "at least 1 GPU is needed"});
    else if (parallel.tp > 0 && parallel.pp > 0 && d.gpu_count != parallel.tp * parallel.pp)
        e.push_back({Field::gpus, std::to_string(d.gpu_count) + " GPUs, but tensor parallel " +
                                      std::to_string(parallel.tp) + " x pipeline parallel " +
                                      std::to_string(parallel.pp) + " uses " +
                                      std::to_string(parallel.tp * parallel.pp) +
                                      "; set --tp/--pp so their product is the GPU count"});
    if (!(d.fraction > 0.0 && d.fraction <= 1.0))
        e.push_back({Field::utilization, "the memory fraction must be above 0 and at most 1"});
    return e;
}

Workload engine_workload(const Workload& workload, Engine engine) {
    Workload w = workload;
    if (engine == Engine::llama_cpp) w.block_size = 1;
    return w;
}

Architecture engine_architecture(const Architecture& arch, Engine engine) {
    if (engine != Engine::llama_cpp) return arch;
    // llama.cpp keeps a sliding (or chunked) layer's window and one micro-batch more, padded to 256 tokens, per
    // sequence (src/llama-kv-cache-iswa.cpp: size_swa = min(n_ctx, GGML_PAD(n_swa + n_ubatch, 256)) for each
    // sequence's stream; common/common.h: n_ubatch = 512).
    Architecture a = arch;
    for (LayerSpec& s : a.layer_specs)
        if ((s.kind == LayerKind::sliding || s.kind == LayerKind::chunked) && s.window > 0)
            s.window = round_up(s.window + kLlamaCppUbatch, 256).value();
    return a;
}

Result<FitReport> fit(const Architecture& model_arch, KvDtype kv_dtype, const Workload& workload_in,
                      const Parallelism& parallel, const Deployment& d) {
    const Workload workload = engine_workload(workload_in, d.engine);
    const Architecture arch = engine_architecture(model_arch, d.engine);
    FitReport r;
    if (workload.block_size != workload_in.block_size)
        r.notes.emplace_back("llama.cpp keeps one contiguous cache: the block size is taken as 1");
    if (arch.layer_specs != model_arch.layer_specs && !workload.full_window) {
        // The window and what llama.cpp keeps for it, both read from the layers (engine_architecture made them).
        const LayerKind kind =
            layer_window(model_arch, LayerKind::sliding) > 0 ? LayerKind::sliding : LayerKind::chunked;
        const std::uint64_t w = layer_window(model_arch, kind), kept = layer_window(arch, kind);
        r.notes.push_back(
            "llama.cpp keeps a sliding layer's window and one micro-batch (n_ubatch 512) more, padded to "
            "256 tokens" +
            (w > 0 && kept > 0 ? ": " + format_count(kept) + " for a window of " + format_count(w) : std::string()) +
            " (llama-kv-cache-iswa.cpp)");
    }
    Errors errors = validate(d, parallel);
    auto layout_or = KvLayout::make(arch, kv_dtype, workload, parallel);
    auto kv =
        layout_or ? kv_cache_report(*layout_or, arch, workload, parallel) : Result<KvCacheReport>(layout_or.errors());
    if (!kv)
        for (const auto& e : kv.errors()) errors.push_back(e);
    if (!errors.empty()) return errors;
    const KvLayout& layout = *layout_or;

    const ParameterCount params = parameters(arch);
    auto weights = stored_weights_bytes(arch, d);
    if (!weights) return weights.errors();
    const std::uint64_t gpus = parallel.gpus();
    r.engine = d.engine;
    r.gpus = gpus;
    r.parameters = params.total;
    r.parameters_estimated = params.estimated;
    r.memory_bytes_per_gpu = d.gpu.memory_bytes;
    r.weights_bytes = *weights;
    r.weights_bytes_per_gpu = ceil_div(*weights, gpus);
    r.kv_bytes_per_gpu = kv->per_gpu_bytes;
    r.state_bytes_per_gpu = kv->state_bytes_per_gpu;
    r.memory_bytes_per_gpu_needed = r.plain_memory_bytes_per_gpu = kv->memory_bytes_per_gpu;
    // vLLM's hybrid cache manager lays out a model with recurrent and attention layers in pages of its own.
    if (d.engine == Engine::vllm) r.engine_pages = vllm_hybrid_pages(*layout_or, arch, workload, parallel);
    if (r.engine_pages) {
        const Checked need = r.engine_pages->bytes_per_sequence(workload.context_tokens) * workload.batch;
        if (need.overflow())
            return overflow_error(Field::batch, "the cache of " + std::to_string(workload.batch) + " sequences");
        r.memory_bytes_per_gpu_needed = need.value();
    }

    const i128 mem = d.gpu.memory_bytes, w = r.weights_bytes_per_gpu;
    const i128 act = d.activation_reserve_bytes, overhead = d.runtime_overhead_bytes;
    i128 budget = 0, reserve = 0, unused = 0;
    switch (d.engine) {
        case Engine::vllm:
        case Engine::llama_cpp:
        case Engine::plain:
            budget = scale(mem, d.fraction) - w - act - overhead;
            reserve = act + overhead;
            unused = mem - scale(mem, d.fraction);
            break;
        case Engine::sglang:
            budget = scale(mem, d.fraction) - w;
            unused = mem - scale(mem, d.fraction);
            break;
        case Engine::tensorrt_llm: {
            const i128 free_after_load = mem - w - overhead;
            budget = free_after_load > 0 ? scale(free_after_load, d.fraction) : free_after_load;
            reserve = overhead;
            unused = free_after_load > 0 ? free_after_load - budget : 0;
            break;
        }
    }
    r.reserve_bytes_per_gpu = static_cast<std::uint64_t>(reserve);
    r.free_bytes_per_gpu = static_cast<std::uint64_t>(std::max<i128>(0, unused));
    r.kv_budget_bytes_per_gpu = clamp_i64(budget);
    r.kv_budget_bytes = clamp_i64(budget * static_cast<i128>(gpus));
    const i128 need = r.memory_bytes_per_gpu_needed;
    r.headroom_bytes_per_gpu = clamp_i64(budget - need);
    r.fits = budget >= 0 && budget >= need;
    if (budget < 0) r.notes.emplace_back("the weights and reserves alone exceed the memory the engine may use");

    const std::uint64_t budget_u = budget > 0 ? static_cast<std::uint64_t>(budget) : 0;
    // A sequence needs its KV cache and its recurrent state; both count against the budget.
    const Checked per_seq = r.engine_pages
                                ? r.engine_pages->bytes_per_sequence(workload.context_tokens)
                                : layout.gpu_bytes_per_sequence(workload.context_tokens, Memory::kv_and_state);
    r.max_batch = per_seq.value() > 0 ? budget_u / per_seq.value() : 0;
    const Checked per_token = layout.bytes_per_token_per_gpu();
    const std::uint64_t after_state = budget_u > r.state_bytes_per_gpu ? budget_u - r.state_bytes_per_gpu : 0;
    r.tokens_capacity = per_token.value() > 0 ? after_state / per_token.value() : 0;

    // Largest context whose cache and state for `batch` sequences fit: one token before it first exceeds
    // the budget (0 when the state alone does not fit).
    const std::uint64_t cap = arch.max_positions > 0 ? arch.max_positions : (1ull << 40);
    const auto over =
        context_where_kv_exceeds(layout, workload, budget_u, KvScope::heaviest_gpu, cap, Memory::kv_and_state);
    r.max_context = over ? (*over > 0 ? *over - 1 : 0) : cap;
    r.max_context_limited_by_model = !over && arch.max_positions > 0;
    r.max_context_unbounded = !over && arch.max_positions == 0 && per_token.value() == 0;
    if (r.engine_pages) {
        const std::uint64_t tokens = r.engine_pages->max_tokens(budget_u, workload.batch);
        r.max_context = std::min(cap, tokens);
        r.max_context_limited_by_model = tokens > cap && arch.max_positions > 0;
        const HybridPages& h = *r.engine_pages;
        const HybridPages::Stage& st = h.stages.front();
        r.notes.push_back("vLLM's hybrid cache manager: attention blocks of " + format_count(h.attention_block) +
                          " tokens so that one page (" + format_count(h.page_bytes) +
                          " bytes) holds a layer's recurrent state (" + format_count(h.state_bytes) +
                          " bytes, padded), layers in groups of " + format_count(st.group_size) + " (" +
                          std::to_string(st.attention_groups) + " attention, " + std::to_string(st.state_groups) +
                          " state); " + format_bytes(r.memory_bytes_per_gpu_needed) + " per GPU against " +
                          format_bytes(r.plain_memory_bytes_per_gpu) +
                          " as the plain per-layer sum (vllm/platforms/interface.py, vllm/v1/core/kv_cache_utils.py; "
                          "--engine plain for the plain figure)");
    }
    r.weights_exact = d.weights_bytes_exact > 0;
    r.weights_source = r.weights_exact && d.weights_source.empty()
                           ? format_count(d.weights_bytes_exact) + " bytes, exact"
                           : d.weights_source;
    if (params.estimated && !r.weights_exact)
        r.notes.push_back("parameter count estimated from the architecture: " + format_count(params.total));
    if (r.state_bytes_per_gpu > 0)
        r.notes.push_back("the recurrent state of " + format_count_of(workload.batch, "sequence", "sequences") +
                          " takes " + format_bytes(r.state_bytes_per_gpu) +
                          " per GPU beside the KV cache, whatever the context");
    for (const auto& reason : arch.not_exact) r.notes.push_back("not exact: " + reason);
    return r;
}

}  // namespace kvscope
