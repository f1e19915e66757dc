#pragma once
// The stopwatch's model: a small real decoder-only transformer (token embeddings,
// RMSNorm, rotary attention, a SiLU MLP, an LM head) with fixed-seed weights and a
// vocabulary of English words, so what it generates reads as (odd) text.
// It generates twice: with a KV cache, and recomputing the whole prefix at every step.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kvscope/probe/probe.h"

namespace kvscope::probe {

class TinyTransformer {
public:
    static constexpr int kLayers = 4, kModel = 128, kHeads = 4, kHeadDim = kModel / kHeads, kHidden = 4 * kModel;

    explicit TinyTransformer(std::uint64_t seed = 2024);

    [[nodiscard]] int vocab() const;
    // The model's shape for the calculator (its decode-cost formulas give the stopwatch's bound).
    [[nodiscard]] static Architecture architecture();
    [[nodiscard]] std::vector<int> encode(const std::string& text) const;
    [[nodiscard]] std::string decode(const std::vector<int>& tokens) const;

    // Logits for the token after `prefix`, computed from scratch over the whole prefix.
    [[nodiscard]] std::vector<float> logits_uncached(const std::vector<int>& prefix) const;

    // Incremental generation: append one token and get the logits for the next.
    struct Cache {
        std::vector<std::vector<float>> k, v;  // per layer: positions × kModel
    };
    std::vector<float> step_cached(int token, Cache& cache) const;

    // The weights, for backends that run the same model elsewhere (row-major, out × in).
    struct Layer {
        std::vector<float> wq, wk, wv, wo, w1, w2, w3, norm1, norm2;
    };
    [[nodiscard]] const std::vector<float>& embedding() const { return embed_; }
    [[nodiscard]] const std::vector<Layer>& layers() const { return layers_; }

    // Greedy choice that skips words used in the last few tokens (a random small model otherwise
    // repeats one word forever); the same rule in every run, so the runs must agree.
    static int pick(const std::vector<float>& logits, const std::vector<int>& history);

private:
    void forward_position(int token, int position, std::vector<std::vector<float>>& k,
                          std::vector<std::vector<float>>& v, std::vector<float>& x) const;
    [[nodiscard]] std::vector<float> head(const std::vector<float>& x) const;

    std::vector<float> embed_;  // vocab × kModel (tied LM head)
    std::vector<Layer> layers_;
    std::vector<float> final_norm_;
};

// How a backend runs the model: the prompt into a fresh cache, one more token at a position,
// and a forward over a whole prefix from scratch; each returns the logits for the next token.
struct Generator {
    std::function<std::vector<float>(const std::vector<int>& prompt)> prefill;
    std::function<std::vector<float>(int token, int position)> step;
    std::function<std::vector<float>(const std::vector<int>& prefix)> recompute;
    std::string where;  // " on the GPU (cuBLAS)", for the message
};

// Generates request.tokens twice (cached, then recomputing), timing every token.
StopwatchReport generate_both(const TinyTransformer& model, const StopwatchRequest& request, const Control& control,
                              const Generator& generator);

// Runs the stopwatch on the host.
StopwatchReport run_stopwatch(const StopwatchRequest& request, const Control& control);

}  // namespace kvscope::probe
