#pragma once
// The numbers behind the Learn tab, all from the current scenario: prefill against decode,
// the cost of recomputing without a cache, one-click what-ifs, and what a conversation
// longer than the context window leaves each layer able to see.

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope {

// The weight format a scenario's weights are counted in: its deployment's, else bf16.
KvDtype weight_dtype_of(const Scenario& scenario);

// The prompt's one parallel pass against one decode step, for every sequence of the scenario.
struct PhaseCosts {
    std::uint64_t prompt_tokens = 0;  // per sequence: the scenario's context
    std::uint64_t sequences = 1;
    double prefill_flops = 0;                    // every prompt token at once, every sequence
    std::uint64_t prefill_kv_written_bytes = 0;  // the whole cache, written once
    std::uint64_t decode_weight_bytes_read = 0;  // every weight multiplied once per step
    std::uint64_t weights_bytes = 0;             // every weight stored (the quiz's and the fit's figure)
    // Why a step reads fewer bytes than are stored, when it does ("the embedding table is looked up, one
    // row per token"); empty when the two are equal.
    std::string weights_read_reason;
    std::uint64_t decode_kv_bytes_read = 0;   // the whole cache read once per step
    double decode_flops_cached = 0;           // one new token per sequence
    double decode_flops_uncached = 0;         // the same token without a cache: a prefill again
    double arithmetic_intensity_prefill = 0;  // FLOPs per byte moved (weights + KV)
    double arithmetic_intensity_decode = 0;
};
Result<PhaseCosts> phase_costs(const Scenario& scenario);

// Work per generated token and cumulative work, one sequence, from an empty context to `max_tokens`.
struct RecomputeCurve {
    std::vector<std::uint64_t> tokens;  // 1 … max_tokens, evenly spaced
    std::vector<double> per_token_cached, per_token_uncached;
    std::vector<double> cumulative_cached, cumulative_uncached;
    // Total uncached work over total cached work at max_tokens: the most the cache can save.
    double speedup_bound = 1;
};
Result<RecomputeCurve> recompute_curve(const Architecture& arch, const Workload& workload, std::uint64_t max_tokens,
                                       std::size_t points = 200);

// One change to try on the current scenario, with the cache before and after.
struct WhatIf {
    std::string id;     // "halve_kv_heads", "mqa", "fp8", "double_context", "tp2"
    std::string title;  // "Halve the KV heads (8 → 4)"
    std::string why;    // what the change does to the formula, one sentence
    bool available = false;
    std::string unavailable_reason;                       // when not available
    Scenario scenario;                                    // the changed scenario
    std::uint64_t total_before = 0, total_after = 0;      // all GPUs
    std::uint64_t per_gpu_before = 0, per_gpu_after = 0;  // the heaviest GPU
    bool per_gpu = false;       // the change that matters is per GPU (tensor parallel, or several GPUs)
    double percent_change = 0;  // of the total, or of the heaviest GPU's share when per_gpu
};
std::vector<WhatIf> what_ifs(const Scenario& scenario);

// A conversation of `conversation_tokens` against the model's context window and each
// sliding-window layer group's window.
struct WindowRow {
    std::string label;  // "32 full-attention layers", "21 sliding-window layers (4,096)"
    std::uint64_t layers = 0;
    std::uint64_t window = 0;   // tokens these layers can attend to; 0 = the whole context window
    std::uint64_t visible = 0;  // the last `visible` tokens of the conversation
    // Recurrent layers attend to no token: their fixed state summarises every token so far, the first ones too
    // (visible is then the whole conversation).
    bool summarised = false;
};
struct ContextWindowView {
    std::uint64_t conversation = 0;
    std::uint64_t context_window = 0;  // the model's limit (max positions); 0 when unknown
    std::uint64_t in_window = 0;       // the last tokens the model still has
    std::uint64_t dropped = 0;         // the earliest tokens that have left the window
    std::vector<WindowRow> rows;       // full attention first, then windows from widest
};
ContextWindowView context_window_view(const Architecture& arch, std::uint64_t conversation_tokens);

// Why sizing for the worst case overstates the cache real traffic uses, for the scenario's sequences: all at the full
// context, against the same sequences at the lengths requests have (a prompt and, on average, half their answer),
// paged in blocks as vLLM and SGLang keep them, and with a system prompt they all share counted once (prefix
// caching). Each step's bytes are the calculator's for those lengths (kv_cache_report: windows and recurrent state
// included); the shared prefix's saving is its full blocks' bytes per sequence but one's.
struct TrafficLessonStep {
    std::string title;        // "Every sequence at the full context (16,384 tokens)"
    std::string why;          // one sentence
    std::uint64_t bytes = 0;  // all sequences, all GPUs
    double of_worst = 0;      // bytes over the first step's (the worst case), 0 … 1
};
struct TrafficLesson {
    std::uint64_t sequences = 0, context = 0;
    std::uint64_t prompt_tokens = 0, output_tokens = 0, shared_prefix = 0, block_size = 16;
    std::vector<TrafficLessonStep> steps;  // worst case first, then each refinement
};
Result<TrafficLesson> traffic_lesson(const Scenario& scenario, std::uint64_t prompt_tokens, std::uint64_t output_tokens,
                                     std::uint64_t shared_prefix, std::uint64_t block_size = 16);

}  // namespace kvscope
