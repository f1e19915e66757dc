#pragma once
// What serving costs on a deployment: a step's time from the roofline (the weights and each sequence's cache read, the
// new tokens' work), with efficiencies fitted to published vLLM runs or the bandwidth probe --step measured, and the
// engine's settings the scheduler (simulate.h) pages with: vLLM's blocks from the fit's KV budget, its batch limits.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope {

// The share of its dense bf16 rate a GPU's prefill reaches in vLLM, fitted to published runs on that GPU (serving.cpp
// says which); nullopt for a GPU no published run fits, which then takes kUnfittedComputeEfficiency, said as not
// exact.
std::optional<double> fitted_compute_efficiency(const std::string& gpu_id);
inline constexpr double kUnfittedComputeEfficiency = 0.5;

// What a step costs on one GPU of a replica: the bytes it reads and the work it does, and the GPU's rates.
struct StepCost {
    double weight_bytes = 0;  // read once a step (per GPU)
    // Bytes a sequence's cache adds per token, per GPU, by the window its layers keep (0: every token).
    struct KvGroup {
        std::uint64_t window = 0;
        double bytes_per_token = 0;
    };
    std::vector<KvGroup> kv_groups;
    double state_bytes_per_sequence = 0;  // a recurrent state, read once a step
    double flops_per_token = 0;           // 2 × the active matmul parameters, per GPU
    double attention_flops_per_pair = 0;  // one query against one cached key, all layers, per GPU
    double bandwidth_bytes_per_s = 0;
    double flops_per_s = 0;    // dense bf16
    std::uint64_t stages = 1;  // pipeline stages, run in turn
    // How near the rates an engine's step comes, and what a step costs besides (launches, the scheduler, sampling).
    // The bandwidth's and the overhead: what vLLM 0.11's decode steps of Qwen3-8B took on one H100 at 1–8 sequences
    // (7.2–7.7 ms, bench/published_runs.h); the compute's: fitted_compute_efficiency for the GPU.
    double bandwidth_efficiency = 0.8;
    double compute_efficiency = kUnfittedComputeEfficiency;
    double overhead_s = 0.001;
};

// The bytes a sequence of `tokens` tokens reads a step, per GPU.
double kv_read_bytes(const StepCost& cost, std::uint64_t tokens);
// A step's time: overhead + the larger of its reads over the bandwidth and its work over the compute rate, each at
// its efficiency, for each pipeline stage in turn.
double step_seconds(const StepCost& cost, double bytes, double flops);

// The step's cost for this scenario's model and deployment (the fit's weights per GPU, the cache's bytes per token by
// window, the GPU's bandwidth and bf16 rate).
Result<StepCost> step_cost(const Scenario& s);

struct ServingSettings {
    Engine engine = Engine::vllm;       // whose scheduler: vLLM's (simulate.cpp) or SGLang's (simulate_sglang.cpp)
    std::uint64_t block_size = 16;      // vLLM's default on CUDA (vllm/platforms/cuda.py)
    std::uint64_t kv_blocks = 0;        // num_gpu_blocks; block 0 is vLLM's null block, never handed out
    std::uint64_t bytes_per_block = 0;  // per GPU, for the bytes in use
    std::uint64_t max_num_batched_tokens = 8192;  // SGLang: chunked_prefill_size
    std::uint64_t max_num_seqs = 256;             // SGLang: max_running_requests
    std::uint64_t max_prefill_tokens = 16384;     // SGLang's (server_args.py), a prefill batch's input at most
    std::uint64_t max_model_len = 0;              // a request longer than this is refused, as vLLM refuses it
    bool prefix_caching = true;                   // on by default in V1 (vllm/engine/arg_utils.py _set_default_args)
    std::uint64_t concurrency = 0;                // the most requests the client keeps in flight (0: no limit)
    // The API server in front of the engine (vllm/entrypoints/openai: the chat template, tokenizing, HTTP): each
    // request is handled one at a time for api_serial_s, then takes api_latency_s more before the scheduler sees it.
    // Defaults fitted to GPUStack's vLLM 0.11 runs (bench/published_runs.h): 1,000 requests of 128 tokens served at
    // 44 a second on an H100 whatever the GPU's speed (23 ms each, one at a time), and 60 ms to the first token at
    // one request in flight where the prefill takes 7 ms.
    double api_serial_s = 0.023;
    double api_latency_s = 0.030;
    std::uint64_t timeline_points = 200;
    // vLLM's KV cache groups (vllm/v1/core/kv_cache_utils.py get_kv_cache_config): one group of every layer, or, for
    // a model whose layers keep different things, the hybrid manager's groups of group-size layers (vllm_pages.h
    // HybridPages). Every group takes its own blocks from the one pool: a block id is a page in each of a group's
    // layers' tensors, and bytes_per_block is that (group size x page). A request holds, in each full-attention
    // group, a block per block_size tokens; in each sliding group, those of its window, the blocks wholly before it
    // freed (SlidingWindowManager.remove_skipped_blocks), or, chunked, those of its chunk
    // (ChunkedLocalAttentionManager); in each state group, state_blocks (MambaManager: its state and one a drafted
    // token).
    struct Groups {
        std::uint64_t full = 1, sliding = 0, state = 0;
        std::uint64_t window = 0;  // the sliding groups' window, or the chunk with `chunked`, in tokens
        bool chunked = false;
        std::uint64_t state_blocks = 1;
        [[nodiscard]] std::uint64_t count() const { return full + sliding + state; }
    };
    Groups groups;
    // One sequence at max_model_len, per GPU, for the worst case (0: ceil(max_model_len / block_size) blocks).
    std::uint64_t worst_case_bytes_per_sequence = 0;
};

// The engine's settings for this scenario: vLLM's block size (the workload's when it is above 1), its batch limits
// for the GPU (vllm_batch), the KV budget of the fit in blocks of block_size tokens.
struct ServingSetup {
    ServingSettings settings;
    StepCost cost;
    std::string step_time_source = "roofline";  // or "measured"
    std::vector<std::string> notes, warnings;
};
// `measured`: a decode step of this scenario that probe --step timed on the deployment's GPU (find_measured_step):
// the bandwidth a step reaches is then the one it reached, and the step times say they are measured.
Result<ServingSetup> serving_setup(const Scenario& s, bool prefix_caching, std::uint64_t concurrency,
                                   const std::optional<MeasuredStep>& measured = std::nullopt);

}  // namespace kvscope
