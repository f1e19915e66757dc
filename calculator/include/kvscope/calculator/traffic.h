#pragma once
// The traffic a deployment serves: requests with their prompt and output lengths, when they arrive, and which of
// their prompt tokens they share with others (a system prompt, the earlier turns of a conversation, the blocks a
// trace names). Made from a description (make_traffic: lengths fixed or uniform within a range, Poisson arrivals or
// all at once, shared prefixes, multi-turn sessions) or read from a published trace file (read_trace). The same
// description and seed give the same requests on every machine: the random numbers are the project's own
// (splitmix64), not the standard library's distributions, whose results differ between libraries.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/result.h"

namespace kvscope {

// A run of prompt tokens with one content: two spans of the same id hold the same tokens. A prompt is its spans in
// order; two prompts share the tokens of their longest common run of spans (and of the shorter of two spans of the
// same id that differ in length, as a conversation's longer history shares the shorter one's start).
struct PromptSpan {
    std::uint64_t id = 0;
    std::uint64_t tokens = 0;
    friend bool operator==(const PromptSpan&, const PromptSpan&) = default;
};

inline constexpr std::uint64_t kNoRequest = ~0ull;

struct TrafficRequest {
    double arrival_s = 0;  // when it is sent (for a later turn: the earliest, after the turn it follows ends)
    std::uint64_t prompt_tokens = 0;
    std::uint64_t output_tokens = 0;
    std::vector<PromptSpan> spans;       // summing to prompt_tokens
    std::uint64_t output_id = 0;         // the content id of its answer (a later turn's prompt holds it)
    std::uint64_t follows = kNoRequest;  // the earlier turn of its conversation, sent when that one has finished
};

// A length: `tokens`, or uniform in [tokens·(1−range), tokens·(1+range)] (as `vllm bench serve
// --random-range-ratio` reads it).
struct LengthSpec {
    std::uint64_t tokens = 0;
    double range = 0;  // 0 … 1
};

// A request's own prompt and answer lengths, as a trace gives them.
struct LengthPair {
    std::uint64_t prompt = 0, output = 0;
};

struct TrafficSpec {
    std::uint64_t requests = 1000;  // conversations × turns
    // Requests a second, arriving as a Poisson process (conversations at rate / turns); nullopt: all at once.
    std::optional<double> rate;
    LengthSpec input{1024, 0}, output{128, 0};
    // A system prompt of `shared_prefix` tokens that every request starts with; with `prefix_groups` G > 1, G
    // different ones, request i taking the (i mod G)-th.
    std::uint64_t shared_prefix = 0;
    std::uint64_t prefix_groups = 1;
    // Conversations of `turns` requests: each later turn's prompt is the whole conversation so far (the earlier
    // prompts and answers) and a new message of `input` tokens, sent when the turn before it has finished.
    std::uint64_t turns = 1;
    std::uint64_t seed = 0;
    // The lengths as a trace's requests have them instead of input and output: each request (each turn's new
    // message) takes the prompt and answer of one of `lengths`, drawn with the seed; the arrivals, system prompts and
    // turns stay as described. `lengths_from` names the trace; fill_lengths reads it into `lengths`.
    std::string lengths_from;
    std::vector<LengthPair> lengths;
    std::vector<std::string> lengths_warnings;  // what reading it said (lengths estimated from text)
};

// `spec` with its lengths_from trace read into `lengths` (its requests with a prompt and an answer); nothing to do
// without one. Errors name --lengths-from, and the file and line.
Result<TrafficSpec> fill_lengths(TrafficSpec spec);

inline constexpr std::uint64_t kMaxTurns = 1000;
inline constexpr std::uint64_t kMaxRequests = 10'000'000;      // a simulation's requests (traffic.cpp make_traffic)
inline constexpr double kMaxArrivalSeconds = 1e9;              // requests ÷ rate: the clock keeps its milliseconds
inline constexpr std::uint64_t kMaxPromptPieces = 50'000'000;  // all the conversations' prompts' spans together

// The requests, first arrival at 0 s. With turns, conversations start at rate / turns a second, so that requests
// arrive at about the rate (a later turn waits for the one before it). Errors name the option: a rate that is not above
// 0, a range outside 0 … 1, no requests, a length of 0.
Result<std::vector<TrafficRequest>> make_traffic(const TrafficSpec& spec);

// A trace file's requests, each format checked against its publisher's README and loader:
// - Azure's LLM inference trace (Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md and 2024): CSV with the
//   header TIMESTAMP,ContextTokens,GeneratedTokens; the timestamp a wall-clock date "2023-11-16 18:15:46.6805900"
//   (2024: with "+00:00", the fraction optional). No prefix information: every prompt its own.
// - The Mooncake / Kimi trace (kvcache-ai/Mooncake FAST25-release/README.md; NVIDIA Dynamo's data generator README):
//   JSON lines {"timestamp": ms since the first request, "input_length", "output_length", "hash_ids": one id per
//   512-token block of the prompt, the last block partial}; equal ids are equal blocks, so shared prefixes.
// - BurstGPT (HPMLL/BurstGPT README): CSV with the header Timestamp,Model,Request tokens,Response tokens,Total
//   tokens,Log Type (columns found by name; others ignored), Timestamp in seconds; a row with 0 response tokens is a
//   failed request and is left out, as vLLM's burstgpt loader does.
// - vLLM's custom dataset (vllm/benchmarks/datasets.py CustomDataset): JSON lines {"prompt": text, "output_tokens":
//   optional, 256 without}, sent all at once; its prompts' tokens estimated from the text (traffic.cpp says how), and
//   `warnings` says so.
// The format is told from the first line. Arrivals start at 0 s and are sorted (stably). Errors name the file and
// line: "trace.csv:12: ContextTokens: 'x' is not a whole number". `warnings`, when given, gets what is not exact.
Result<std::vector<TrafficRequest>> read_trace(std::string_view text, const std::string& source,
                                               std::vector<std::string>* warnings = nullptr);
Result<std::vector<TrafficRequest>> read_trace_file(const std::string& path,
                                                    std::vector<std::string>* warnings = nullptr);

// The Mooncake trace's block: 512 tokens a hash id.
inline constexpr std::uint64_t kMooncakeBlockTokens = 512;

// Tokens two prompts share from their start, span by span (PromptSpan).
std::uint64_t shared_tokens(const std::vector<PromptSpan>& a, const std::vector<PromptSpan>& b);

// The project's random numbers: splitmix64 (Steele, Lea and Flood 2014), the same sequence everywhere.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1), 53 bits.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    // Uniform in [lo, hi], both included.
    std::uint64_t between(std::uint64_t lo, std::uint64_t hi);

private:
    std::uint64_t state_;
};

}  // namespace kvscope
