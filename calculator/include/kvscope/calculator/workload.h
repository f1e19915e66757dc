#pragma once
// What the engine is asked to hold: tokens per sequence, how many sequences,
// how it pages them, and how the model is split across GPUs.

#include <cstdint>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/result.h"

namespace kvscope {

struct Workload {
    std::uint64_t context_tokens = 8192;  // prompt + generated, per sequence
    std::uint64_t batch = 1;              // concurrent sequences
    std::uint64_t block_size = 1;         // paged-attention block in tokens; 1 = contiguous
    bool full_window = false;             // engine keeps the whole context on sliding layers
    friend bool operator==(const Workload&, const Workload&) = default;
};

// Which pipeline stages take a layer more when the layers do not divide among them (StageSplit below).
enum class StageSplit {
    first,        // the first ones (TensorRT-LLM; the split where no engine is named)
    before_last,  // those just before the last, from the second-to-last back (vLLM)
    last,         // the last ones (SGLang)
};

struct Parallelism {
    std::uint64_t tp = 1;                  // tensor parallel: KV heads split across GPUs
    std::uint64_t pp = 1;                  // pipeline parallel: layers split across GPUs
    StageSplit split = StageSplit::first;  // the engine's; not an input (fit sets it from the engine)
    friend bool operator==(const Parallelism&, const Parallelism&) = default;
    [[nodiscard]] std::uint64_t gpus() const { return tp * pp; }
};

// The layers [first, first + count) of pipeline stage `stage` (< p.pp): contiguous, layers / pp each and the rest one
// each to the stages `p.split` names.
struct StageLayers {
    std::uint64_t first = 0, count = 0;
};
StageLayers stage_layers(std::uint64_t layers, const Parallelism& p, std::uint64_t stage);

// Upper bounds that keep every product well inside checked 64-bit arithmetic
// while leaving room for absurd-but-explorable inputs.
constexpr std::uint64_t kMaxTpOrPp = 4096;
// The most memory a GPU may have (1 PiB): with kMaxTpOrPp x kMaxTpOrPp GPUs, 2^74 bytes in all, so the fit's
// budget over every GPU is checked against 2^63 (deployment.cpp) rather than assumed to fit.
constexpr std::uint64_t kMaxGpuMemoryBytes = 1ull << 50;

// The context a scenario starts from: 8192 tokens, or the model's limit when it is shorter.
std::uint64_t default_context_tokens(const Architecture& arch);

Errors validate(const Workload& w);
Errors validate(const Parallelism& p, const Architecture& arch);

}  // namespace kvscope
