#pragma once
// The decode step in float64, from the same stored weights and cache as a backend's step (and the step's own
// expert choices): the logits the CPU step (step.cpp) and the CUDA step (gpu_probe/cuda/cuda_step.cu) are
// checked against. The layer is theirs — the Llama layer of transformers' modeling_llama.py with norm
// weights of 1 (RMSNorm, eps 1e-6), RoPE pairs (i, i + d/2) at position × 10000^(−2i/d), each product
// scaled by 1/√(its inputs) — so any difference is the backend's arithmetic, not the model.

#include <cstdint>
#include <vector>

#include "kvscope/calculator/kv_dtype.h"
#include "step_common.h"

namespace kvscope::probe::step {

// A token's chosen experts and their weights (softmax over all experts, top-k, renormalised).
struct Route {
    std::vector<std::uint64_t> experts;
    std::vector<float> weights;
};

// One layer's weights in host memory, in the weight format, row-major [rows][inputs]: QKV (the query
// heads' rows, then the key heads', then the value heads'), O, up (the gate's rows, then the up
// projection's, when gated) and down; for MoE, each expert's up and down and the shared experts side by side.
struct ReferenceLayer {
    const void *qkv = nullptr, *o = nullptr, *up = nullptr, *down = nullptr;
    bool moe = false;
    std::vector<const void*> expert_up, expert_down;
    const void *shared_up = nullptr, *shared_down = nullptr;
    const void* router = nullptr;  // experts × hidden; when set, the step's choices are checked (route_checked)
};

// One sequence's cache in one layer, in the cache format, the step's new K and V row already written.
struct ReferenceSlot {
    const void* k = nullptr;
    const void* v = nullptr;
    std::uint64_t tokens = 0;
};

struct ReferenceStep {
    Dims dims;
    KvDtype weight_dtype = KvDtype::bf16, kv_dtype = KvDtype::bf16;
    const void* embedding = nullptr;  // vocab × hidden
    const void* head = nullptr;       // vocab × hidden (the embedding when tied)
    std::vector<ReferenceLayer> layers;
    std::vector<ReferenceSlot> slots;        // layer-major: slots[layer × batch + sequence]
    std::vector<std::vector<Route>> routes;  // [layer][sequence], for MoE layers
    std::vector<std::uint64_t> tokens;       // one per sequence
    // How far below the k-th router logit a chosen expert's may be (relative to the largest |logit|): the
    // rounding of the step's router inputs (the CPU step keeps them in fp32; a GPU step's are in the weight format).
    double route_slack = 1e-4;
};

// The step's choice for one token, checked against the router's float64 logits: kept when its experts are
// the top k within the step's rounding (no chosen logit more than slack × the largest |logit| below the
// k-th), else the float64 top k — so a step that chose wrong differs in its logits. The weights are always
// e^(logit − top) over the chosen, in float64.
Route route_checked(const std::vector<double>& logits, const Route& chosen, std::uint64_t k, double slack);

// batch × vocab logits, sequence-major.
std::vector<double> reference_logits(const ReferenceStep& s);

// The weights above which a step is not redone in float64 (a minute or more of host arithmetic), and, for a
// device's step, the cache above which it is not copied back to the host for it.
constexpr std::uint64_t kReferenceWeightBytes = 64ull << 20;
constexpr std::uint64_t kReferenceCacheBytes = 256ull << 20;

}  // namespace kvscope::probe::step
