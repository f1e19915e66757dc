#include "kvscope/calculator/serving.h"

#include <algorithm>
#include <limits>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/vllm_pages.h"

namespace kvscope {

double kv_read_bytes(const StepCost& cost, std::uint64_t tokens) {
    double bytes = cost.state_bytes_per_sequence;
    for (const StepCost::KvGroup& g : cost.kv_groups)
        bytes += static_cast<double>(g.window == 0 ? tokens : std::min(tokens, g.window)) * g.bytes_per_token;
    return bytes;
}

double step_seconds(const StepCost& cost, double bytes, double flops) {
    const double read_s =
        cost.bandwidth_bytes_per_s > 0 ? bytes / (cost.bandwidth_bytes_per_s * cost.bandwidth_efficiency) : 0;
    const double work_s = cost.flops_per_s > 0 ? flops / (cost.flops_per_s * cost.compute_efficiency) : 0;
    return cost.overhead_s + static_cast<double>(cost.stages) * std::max(read_s, work_s);
}

namespace {

// One sequence of one token: each layer's bytes for a token (all GPUs; the heaviest GPU holds per_gpu_bytes of
// total_bytes) and one sequence's recurrent state. The step's reads and vLLM's pages are both counted from it.
Result<KvCacheReport> one_token_report(const Scenario& s) {
    Workload one = s.workload;
    one.context_tokens = 1;
    one.batch = 1;
    one.block_size = 1;
    return kv_cache_report(s.arch, s.kv_dtype, one, s.parallel);
}

// The step's cost from the deployment's fit and the one-token report.
StepCost cost_of(const Scenario& s, const FitReport& fitted, const KvCacheReport& kv) {
    const Deployment& d = *s.deployment;
    const double gpu_share =
        kv.total_bytes > 0 ? static_cast<double>(kv.per_gpu_bytes) / static_cast<double>(kv.total_bytes) : 0;
    StepCost c;
    for (const LayerKv& l : kv.layers) {
        if (l.bytes == 0) continue;
        const std::uint64_t window = s.workload.full_window ? 0 : l.window;
        auto group = std::find_if(c.kv_groups.begin(), c.kv_groups.end(),
                                  [&](const StepCost::KvGroup& g) { return g.window == window; });
        if (group == c.kv_groups.end()) group = c.kv_groups.insert(c.kv_groups.end(), {window, 0});
        group->bytes_per_token += static_cast<double>(l.bytes) * gpu_share;
    }
    c.state_bytes_per_sequence = static_cast<double>(kv.state_bytes_per_gpu);
    c.stages = std::max<std::uint64_t>(1, s.parallel.pp);
    // Per stage: the weights of one GPU; the cache of a stage's layers (the per-GPU figures above are the heaviest
    // GPU's, so one stage's); the work of a stage's share of the parameters, split over tensor parallel.
    c.weight_bytes = static_cast<double>(fitted.weights_bytes_per_gpu);
    const ParameterCount p = parameters(s.arch);
    const double gpus = static_cast<double>(std::max<std::uint64_t>(1, s.parallel.gpus()));
    c.flops_per_token = 2.0 * static_cast<double>(p.active) / gpus;
    const std::uint64_t pairs = 4096;
    c.attention_flops_per_pair = attention_flops(s.arch, s.workload, pairs) / static_cast<double>(pairs) / gpus;
    c.bandwidth_bytes_per_s = static_cast<double>(d.gpu.bandwidth_bytes_per_s);
    c.flops_per_s = d.gpu.bf16_tflops * 1e12;
    c.compute_efficiency = fitted_compute_efficiency(d.gpu.id).value_or(kUnfittedComputeEfficiency);
    return c;
}

// vLLM's hybrid manager for the fit's pages (vllm_pages.h): the groups, the block (a page in each of a group's
// layers), and the blocks the budget holds, the fewest any pipeline stage's GPU holds (each worker's num_blocks is
// available // (page size x tensors), kv_cache_utils.py get_num_blocks, and the workers take the least,
// get_kv_cache_configs). An error text, or empty.
std::string page_groups(const HybridPages& h, std::uint64_t budget, ServingSetup& out) {
    ServingSettings& st = out.settings;
    if (h.stages.empty() || h.page_bytes == 0) return "vLLM's hybrid layout has no pages";
    st.block_size = h.attention_block;
    st.bytes_per_block = 0;
    st.kv_blocks = std::numeric_limits<std::uint64_t>::max();
    for (const HybridPages::Stage& stage : h.stages) {
        const Checked block = Checked(std::max<std::uint64_t>(1, stage.group_size)) * h.page_bytes;
        if (block.overflow()) return "a block of these tokens passes 2^64 bytes";
        st.bytes_per_block = std::max(st.bytes_per_block, block.value());
        st.kv_blocks = std::min(st.kv_blocks, budget / block.value());
    }
    const HybridPages::Stage& first = h.stages.front();  // every stage keeps every group
    st.groups.full = first.attention_groups;
    st.groups.sliding = first.sliding_groups;
    st.groups.state = first.state_groups;
    st.groups.window = h.window;
    st.groups.chunked = h.chunked;
    st.groups.state_blocks = 1 + h.speculative_blocks;
    const Checked worst = h.bytes_per_sequence(st.max_model_len);
    st.worst_case_bytes_per_sequence = worst.saturated();
    const auto groups = [](std::uint64_t n, const std::string& what) {
        return std::to_string(n) + " " + what + (n == 1 ? " group" : " groups");
    };
    std::string kinds = st.groups.full > 0 ? groups(st.groups.full, "full-attention") : std::string();
    const auto comma = [&kinds] { return kinds.empty() ? "" : ", "; };
    if (st.groups.sliding > 0)
        kinds += comma() + groups(st.groups.sliding, h.chunked ? "chunked-attention" : "sliding-window") + " (" +
                 format_count(h.window) +
                 (h.chunked ? "-token chunks: the blocks of the current chunk held"
                            : "-token window: the blocks before it freed") +
                 ")";
    if (st.groups.state > 0)
        kinds += comma() + groups(st.groups.state, "recurrent-state") + " (" + std::to_string(st.groups.state_blocks) +
                 (st.groups.state_blocks == 1 ? " block" : " blocks") + " a sequence)";
    out.notes.push_back("vLLM's hybrid KV cache manager: " + kinds + " of " + std::to_string(first.group_size) +
                        " layers, each block one page in every layer of its group");
    if (st.groups.state > 0 && st.prefix_caching)
        out.notes.emplace_back(
            "prefix caching off: vLLM 0.11 turns it off for models with recurrent state (\"Hybrid or mamba-based model "
            "detected without support for prefix caching: disabling\")");
    return {};
}

// SGLang's settings for the GPU (python/sglang/srt/server_args.py, v0.5.6) and its pool of tokens
// (model_executor/model_runner.py profile_max_num_token: the budget over one token's cache on every layer; page
// size 1). A --max-num-batched-tokens or --max-num-seqs given sets chunked_prefill_size or max_running_requests.
void sglang_settings(const Deployment& d, std::uint64_t bytes_per_token, std::uint64_t budget, ServingSetup& out) {
    ServingSettings& st = out.settings;
    st.engine = Engine::sglang;
    st.block_size = 1;
    st.bytes_per_block = bytes_per_token;
    st.kv_blocks = budget / bytes_per_token;  // max_total_num_tokens
    // _handle_gpu_memory_settings: chunked_prefill_size by the GPU's memory, unless given (the layout changes only
    // the CUDA-graph batch).
    st.max_num_batched_tokens = sglang_default_fraction(d, {}).chunked_prefill_size;
    st.max_prefill_tokens = 16384;
    // max_running_requests: min(max_total_num_tokens / 2, the request pool), the pool
    // min(max(max_total_num_tokens / context_len x 512, 2048), 4096) (tp_worker.py, model_runner.py init_memory_pool).
    const auto context = static_cast<double>(std::max<std::uint64_t>(1, st.max_model_len));
    const auto requests = static_cast<std::uint64_t>(static_cast<double>(st.kv_blocks) / context * 512);
    const std::uint64_t pool = std::clamp<std::uint64_t>(requests, 2048, 4096);
    st.max_num_seqs = d.vllm.max_num_seqs > 0 ? d.vllm.max_num_seqs : std::min(st.kv_blocks / 2, pool);
    // Its API server, fitted as vLLM's is (bench/published_runs.h): GPUStack's SGLang v0.5.5 run of 1,000 prompts of
    // 128 tokens all at once on an H100 served 128.21 a second whatever the GPU's speed, 7.8 ms each, one at a time.
    st.api_serial_s = 0.0078;  // 1 / 128.21 s
    // And nothing besides: GPUStack's SGLang v0.5.3 runs of Qwen3-8B at 4 in flight on an H100 had their first token
    // 27 ms after sending (33 ms in FP8), less than that handling and a prefill step already take here (35 ms).
    st.api_latency_s = 0;
    out.notes.push_back("SGLang's scheduler (v0.5.6): a radix cache of " + format_count(st.kv_blocks) +
                        " tokens (page size 1), chunked_prefill_size " + std::to_string(st.max_num_batched_tokens) +
                        ", max_prefill_tokens 16384, max_running_requests " + std::to_string(st.max_num_seqs) +
                        "; a prefill batch runs before any decode, the two not mixed, requests admitted in arrival "
                        "order (schedule_policy fcfs)");
    out.warnings.emplace_back(
        "not exact: the step's overhead and the compute efficiency are fitted to published vLLM runs (SGLang's API "
        "server, 7.8 ms a request, to published SGLang runs)");
}

}  // namespace

Result<StepCost> step_cost(const Scenario& s) {
    if (!s.deployment) return FieldError{"--gpu", "simulate needs a deployment (a GPU)"};
    auto fitted = fit(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment);
    if (!fitted) return fitted.errors();
    auto kv = one_token_report(s);
    if (!kv) return kv.errors();
    return cost_of(s, *fitted, *kv);
}

std::optional<double> fitted_compute_efficiency(const std::string& gpu_id) {
    // GPUStack's vLLM 0.11 runs of Qwen3-14B with prompts of 2,000 to 32,000 tokens (bench/published_runs.h), whose
    // time is the prefill's: on an A100, 0.55–0.60 of its 312 dense bf16 TFLOP/s; on an H100 SXM, 0.37–0.40 of its
    // 989. The H100's siblings (the same SM: H100 PCIe, H800, H200, H20) take the H100's, the A800 the A100's.
    static const std::pair<const char*, double> kFitted[] = {
        {"a100-40gb", 0.59}, {"a100-80gb", 0.59}, {"a800-80gb", 0.59}, {"h100-sxm", 0.39},
        {"h100-pcie", 0.39}, {"h800", 0.39},      {"h200", 0.39},      {"h20", 0.39},
    };
    for (const auto& [id, efficiency] : kFitted)
        if (gpu_id == id) return efficiency;
    return std::nullopt;
}

Result<ServingSetup> serving_setup(const Scenario& s, bool prefix_caching, std::uint64_t concurrency,
                                   const std::optional<MeasuredStep>& measured) {
    if (!s.deployment) return FieldError{"--gpu", "simulate needs a deployment (a GPU)"};
    const Deployment& d = *s.deployment;
    if (d.engine != Engine::vllm && d.engine != Engine::sglang)
        return FieldError{"--engine", "simulate follows vLLM's and SGLang's schedulers; " +
                                          std::string(to_string(d.engine)) +
                                          "'s is not simulated yet (use vllm or sglang)"};
    auto fitted = fit(s.arch, s.kv_dtype, s.workload, s.parallel, d);
    if (!fitted) return fitted.errors();
    auto kv = one_token_report(s);
    if (!kv) return kv.errors();
    ServingSetup out;
    out.cost = cost_of(s, *fitted, *kv);
    ServingSettings& st = out.settings;
    st.block_size = s.workload.block_size > 1 ? s.workload.block_size : 16;
    const VllmBatch b = vllm_batch(s.workload, d);
    st.max_num_batched_tokens = b.max_num_batched_tokens;
    st.max_num_seqs = b.max_num_seqs;
    st.max_model_len = s.workload.context_tokens;
    st.prefix_caching = prefix_caching;
    st.concurrency = concurrency;
    // vLLM's num_gpu_blocks: the budget over a block's page on every layer (vllm/v1/core/kv_cache_utils.py
    // get_num_blocks: available_memory // page_size // num_layers), per GPU; here the bytes one token of every
    // layer takes on the heaviest GPU, times the block.
    if (kv->bytes_per_token_per_gpu == 0)
        return FieldError{"--model", "the model keeps no KV cache per token: nothing for paged blocks to hold"};
    const Checked block = Checked(kv->bytes_per_token_per_gpu) * st.block_size;
    if (block.overflow()) return FieldError{"--block-size", "a block of these tokens passes 2^64 bytes"};
    st.bytes_per_block = block.value();
    if (fitted->kv_budget_bytes_per_gpu <= 0)
        return FieldError{"--gpu", "the weights alone do not fit: " + std::string(to_string(d.engine)) +
                                       " leaves no KV budget on this GPU (fit says why)"};
    st.kv_blocks = static_cast<std::uint64_t>(fitted->kv_budget_bytes_per_gpu) / st.bytes_per_block;
    const bool all_full =
        kv->state_bytes_per_gpu == 0 && kv->layers.size() == s.arch.layers &&
        std::none_of(kv->layers.begin(), kv->layers.end(), [](const LayerKv& l) { return l.kind != LayerKind::full; });
    if (d.engine == Engine::sglang) {
        sglang_settings(d, kv->bytes_per_token_per_gpu, static_cast<std::uint64_t>(fitted->kv_budget_bytes_per_gpu),
                        out);
        if (!all_full)
            out.warnings.emplace_back(
                "not exact: the model's layers are not all full attention; SGLang's caches for windows and recurrent "
                "state (its SWA and Mamba radix caches) are not simulated: every layer is paged as full attention");
    } else if (fitted->engine_pages) {
        if (auto e =
                page_groups(*fitted->engine_pages, static_cast<std::uint64_t>(fitted->kv_budget_bytes_per_gpu), out);
            !e.empty())
            return FieldError{"--block-size", e};
    } else if (!all_full) {
        out.warnings.emplace_back(
            "not exact: the model's layers are not all full attention and not of two kinds vLLM's hybrid manager "
            "pages as modelled here; simulate pages every layer as full attention");
    }
    if (st.kv_blocks < 2)
        return FieldError{"--gpu",
                          "the KV budget holds less than one block of " + std::to_string(st.block_size) + " tokens"};
    if (d.engine == Engine::vllm)
        out.notes.push_back("vLLM V1's scheduler (v0.11): " + format_count(st.kv_blocks) + " blocks of " +
                            std::to_string(st.block_size) + " tokens, max_num_batched_tokens " +
                            std::to_string(st.max_num_batched_tokens) + ", max_num_seqs " +
                            std::to_string(st.max_num_seqs) +
                            (b.tokens_default || b.seqs_default ? " (vLLM's defaults for the GPU)" : ""));
    // A decode step this machine's probe timed for the scenario on this GPU: it read the step's bytes at
    // predicted_step_ms / step_ms of the ceiling it measured, so that is the bandwidth a step reaches here
    // (measured_step.h); the engine's 1 ms a step stays beside it.
    if (measured && measured->step_ms > 0 && measured->predicted_step_ms > 0 && measured->ceiling_gbps > 0 &&
        out.cost.bandwidth_bytes_per_s > 0) {
        const double reached = measured->ceiling_gbps * 1e9 * measured->predicted_step_ms / measured->step_ms;
        out.cost.bandwidth_efficiency = reached / out.cost.bandwidth_bytes_per_s;
        out.step_time_source = "measured";
        out.notes.push_back("the bandwidth a step reaches measured: probe --step on " + measured->device + ", " +
                            measured->measured_on + ", " + number_text(measured->step_ms, Notation::fixed, 2) +
                            " ms a step, " + number_text(reached / 1e9, Notation::fixed, 0) + " GB/s");
    }
    const auto fitted_compute = fitted_compute_efficiency(d.gpu.id);
    out.notes.push_back(
        "step times from the roofline: the weights and each sequence's cache read once a step at " +
        number_text(100 * out.cost.bandwidth_efficiency, Notation::fixed, 0) +
        "% of the bandwidth, the new tokens' "
        "work at " +
        number_text(100 * out.cost.compute_efficiency, Notation::fixed, 0) + "% of the dense bf16 rate" +
        (fitted_compute ? " (fitted to published vLLM runs on this GPU)" : "") + ", " +
        number_text(out.cost.overhead_s * 1e3, Notation::shortest) + " ms a step besides; the API server " +
        number_text(st.api_serial_s * 1e3, Notation::shortest) + " ms a request, one at a time, and " +
        number_text(st.api_latency_s * 1e3, Notation::shortest) + " ms more before the engine sees it");
    // A GPU no vendor document gives a dense BF16 rate for (gpus.json: 0): the new tokens' work is not timed.
    if (d.gpu.bf16_tflops <= 0)
        out.warnings.push_back("not exact: the " + d.gpu.name +
                               " has no dense BF16 rate in the catalog (no vendor document gives one, and none "
                               "is guessed), so the new tokens' work is not timed: each step is its reads alone, and "
                               "prefill, TTFT and throughput under load come out faster than the GPU runs them");
    else if (!fitted_compute)
        out.warnings.push_back("not exact: no published run on the " + d.gpu.name + " fits its compute efficiency; " +
                               number_text(100 * kUnfittedComputeEfficiency, Notation::fixed, 0) +
                               "% of its dense bf16 rate is assumed for the prefill (TTFT and throughput under load "
                               "follow it)");
    if (d.weight_dtype == KvDtype::fp8_e4m3 || d.weight_dtype == KvDtype::fp8_e5m2)
        out.warnings.emplace_back(
            "not exact: FP8 weights' matmuls run at the FP8 tensor-core rate where the GPU has one (twice bf16 on "
            "Ada, Hopper and Blackwell); the steps count the new tokens' work at the dense bf16 rate");
    if (s.parallel.tp > 1)
        out.warnings.emplace_back(
            "not exact: tensor parallel's all-reduces (two a layer) are not in the step's time: its steps are timed "
            "as if the GPUs shared the work for free");
    if (s.parallel.pp > 1)
        out.warnings.emplace_back(
            "not exact: pipeline stages are simulated in turn, one step at a time (vLLM overlaps micro-batches)");
    if (auto unserved = unserved_model_warning(s.arch, d.engine)) out.warnings.push_back(std::move(*unserved));
    return out;
}

}  // namespace kvscope
