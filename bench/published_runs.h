#pragma once
// Published serving benchmarks of vLLM and SGLang on one GPU, copied as printed by `vllm bench serve` (the request
// throughput, median TTFT and median TPOT), with the workload each ran. bench/simulate_bench.cpp simulates each and
// prints the error. The lengths of a ShareGPT run are its mean prompt and output (its totals over its prompts); a
// random run's are as asked (--random-input-len / --random-output-len, rate inf).

#include <cstdint>

namespace kvscope::bench {

struct PublishedRun {
    const char* name;
    const char* model;  // a catalog id, or "qwen3-14b" (config in simulate_bench.cpp)
    const char* gpu;
    std::uint64_t max_model_len;
    std::uint64_t prompts, input_tokens, output_tokens;
    std::uint64_t concurrency;  // 0: none (rate inf)
    double request_throughput, median_ttft_ms, median_tpot_ms;
    const char* source;
    // A system prompt of `shared_prefix` tokens before the `input_tokens`, one of `prefix_groups` (vllm bench serve
    // --dataset-name prefix_repetition: --prefix-repetition-prefix-len, -num-prefixes).
    std::uint64_t shared_prefix = 0, prefix_groups = 1;
    // Where the source printed means rather than medians: its TTFT and ITL means stand in the median columns,
    // and are compared with the simulation's means.
    bool means = false;
    double rate = 0;           // requests a second (Poisson) beside the concurrency limit; 0: all at once
    bool sglang = false;       // served by SGLang (else vLLM)
    bool fp8_weights = false;  // an FP8 checkpoint (else bf16)
};

// GPUStack's performance lab (github.com/gpustack/gpustack, docs/performance-lab/), vLLM v0.11.0, `vllm serve MODEL`
// with its defaults (max_model_len the model's 40,960), `vllm bench serve --backend openai-chat`.
inline constexpr const char* kQwen3_8bH100 = "gpustack docs/performance-lab/qwen3-8b/h100-latency.md (commit 1dbc3b81)";
inline constexpr const char* kQwen3_14bH100 = "gpustack docs/performance-lab/qwen3-14b/h100.md (commit 7ae332aa)";
inline constexpr const char* kQwen3_14bA100 = "gpustack docs/performance-lab/qwen3-14b/a100.md (commit 10e9444a)";
// A blog post, "LLM 최적화 실전 프로젝트 — 단일 인스턴스 처리량 최대화" (jinwoong, 2026-09-06), its Prefix Repetition
// baseline.
inline constexpr const char* kQwen3_14bL40s = "blog post deep-learning/llm-optimization-capstone (2026-09-06)";

// The same page's SGLang runs: SGLang v0.5.5.post1, `python3 -m sglang.launch_server --model-path Qwen/Qwen3-14B-FP8`
// with its defaults, the same `vllm bench serve` random runs (500 prompts; 1,000 of 128 tokens), all at once.
inline constexpr const char* kQwen3_14bFp8H100Sglang = kQwen3_14bH100;

inline constexpr PublishedRun kPublishedRuns[] = {
    // ShareGPT, 100 prompts: 23,260 prompt and 22,061 generated tokens in all.
    {"qwen3-8b h100 sharegpt c1", "qwen3-8b", "h100-sxm", 40960, 100, 233, 221, 1, 0.60, 60.38, 7.22, kQwen3_8bH100},
    {"qwen3-8b h100 sharegpt c2", "qwen3-8b", "h100-sxm", 40960, 100, 233, 221, 2, 1.17, 64.78, 7.30, kQwen3_8bH100},
    {"qwen3-8b h100 sharegpt c4", "qwen3-8b", "h100-sxm", 40960, 100, 233, 221, 4, 2.25, 60.26, 7.40, kQwen3_8bH100},
    {"qwen3-8b h100 sharegpt c8", "qwen3-8b", "h100-sxm", 40960, 100, 233, 221, 8, 4.16, 60.77, 7.67, kQwen3_8bH100},
    // Random lengths, --seed 42, all at once.
    {"qwen3-14b h100 32000/100", "qwen3-14b", "h100-sxm", 40960, 100, 32000, 100, 0, 0.26, 191051.49, 284.52,
     kQwen3_14bH100},
    {"qwen3-14b h100 4000/200", "qwen3-14b", "h100-sxm", 40960, 500, 3996, 200, 0, 2.20, 110734.54, 139.68,
     kQwen3_14bH100},
    {"qwen3-14b h100 2000/100", "qwen3-14b", "h100-sxm", 40960, 500, 1996, 100, 0, 5.06, 49138.28, 231.62,
     kQwen3_14bH100},
    {"qwen3-14b h100 128/4", "qwen3-14b", "h100-sxm", 40960, 1000, 128, 4, 0, 44.02, 18061.13, 597.29, kQwen3_14bH100},
    // The same on an A100 (80 GB taken; the page says "A100"); vLLM's A100 defaults: 2,048 tokens a step, 256
    // sequences.
    {"qwen3-14b a100 32000/100", "qwen3-14b", "a100-80gb", 40960, 100, 32000, 100, 0, 0.14, 359424.54, 462.54,
     kQwen3_14bA100},
    {"qwen3-14b a100 4000/200", "qwen3-14b", "a100-80gb", 40960, 500, 3996, 200, 0, 1.23, 196621.85, 272.93,
     kQwen3_14bA100},
    {"qwen3-14b a100 2000/100", "qwen3-14b", "a100-80gb", 40960, 500, 1996, 100, 0, 2.85, 86575.09, 334.17,
     kQwen3_14bA100},
    {"qwen3-14b a100 128/4", "qwen3-14b", "a100-80gb", 40960, 1000, 128, 4, 0, 37.33, 19150.52, 238.61, kQwen3_14bA100},
    // One L40S, vLLM 0.28.0 with its defaults: 1,000 prompts of one of 10 shared 256-token prefixes and a 256-token
    // suffix, 128 tokens out, --request-rate 5 --max-concurrency 10 (ten in flight: it served 1.75 a second).
    // Output 223.7 tokens/s (1.75 requests/s at 128 each), mean TTFT 144.1 ms, mean ITL 43.7 ms.
    {"qwen3-14b l40s prefix c10", "qwen3-14b", "l40s", 40960, 1000, 256, 128, 10, 223.7 / 128, 144.1, 43.7,
     kQwen3_14bL40s, 256, 10, true, 5},
    // SGLang v0.5.3.post3 on the Qwen3-8B latency page (`python3 -m sglang.launch_server --model-path
    // Qwen/Qwen3-8B`, then -FP8), the same ShareGPT prompts at 4 in flight.
    {"sglang qwen3-8b h100 sharegpt c4", "qwen3-8b", "h100-sxm", 40960, 100, 233, 221, 4, 2.38, 27.25, 7.14,
     kQwen3_8bH100, 0, 1, false, 0, true, false},
    {"sglang qwen3-8b-fp8 h100 sharegpt c4", "qwen3-8b", "h100-sxm", 40960, 100, 233, 221, 4, 2.98, 33.38, 5.58,
     kQwen3_8bH100, 0, 1, false, 0, true, true},
    // SGLang, FP8 weights: 1,997,942 prompt tokens over 500 (99,814 of 100,000 generated: a few stopped early).
    {"sglang qwen3-14b-fp8 h100 4000/200", "qwen3-14b", "h100-sxm", 40960, 500, 3996, 200, 0, 2.92, 85092.81, 83.43,
     kQwen3_14bFp8H100Sglang, 0, 1, false, 0, true, true},
    {"sglang qwen3-14b-fp8 h100 2000/100", "qwen3-14b", "h100-sxm", 40960, 500, 1996, 100, 0, 7.04, 33169.68, 146.25,
     kQwen3_14bFp8H100Sglang, 0, 1, false, 0, true, true},
    {"sglang qwen3-14b-fp8 h100 128/4", "qwen3-14b", "h100-sxm", 40960, 1000, 128, 4, 0, 128.21, 4057.99, 962.87,
     kQwen3_14bFp8H100Sglang, 0, 1, false, 0, true, true},
};

}  // namespace kvscope::bench
