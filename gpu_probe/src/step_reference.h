#pragma once
// The decode step in float64, from the same stored weights and cache as a backend's step (and the step's own
// expert choices): the logits the CPU step (step.cpp) and the CUDA step (gpu_probe/cuda/cuda_step.cu) are
// checked against. The layer is theirs — the Llama layer of transformers' modeling_llama.py with norm
// weights of 1 (RMSNorm, eps 1e-6), RoPE pairs (i, i + d/2) at position × 10000^(−2i/d), each product
// scaled by 1/√(its inputs) — so any difference is the backend's arithmetic, not the model.

#include <cstdint>
#include <string>
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
    // How far the step's own arithmetic may take a value from float64, relative to the largest |value| beside it:
    // the rounding of its GEMMs' inputs (the CPU step keeps them in fp32; a GPU step's are in the weight format).
    // A chosen expert's router logit may lie this far below the k-th; a new K or V value this far (plus one step
    // of the cache format) from float64's.
    double slack = 1e-4;
};

// The step's choice for one token, checked against the router's float64 logits: kept when its experts are
// the top k within the step's rounding (no chosen logit more than slack × the largest |logit| below the
// k-th), else the float64 top k — so a step that chose wrong differs in its logits. The weights are always
// e^(logit − top) over the chosen, in float64.
Route route_checked(const std::vector<double>& logits, const Route& chosen, std::uint64_t k, double slack);

// The largest distance a new K or V value the step stored may lie from float64's value stored in the same format,
// beyond the step's slack: a value a rounding boundary away from float64's rounds to the next step of the format.
// `relative` is of the row's largest |value| (floating formats: one unit in the last place at most that; llama.cpp's
// blocks: their scale, which is at most that over 127 or 8, and a q4_0 value one scale from its own at the cap of 15,
// twice for the two scales), `absolute` the step below which that stops (subnormals, int8's fixed scale).
struct FormatStep {
    double relative = 0, absolute = 0;
};
FormatStep format_step(KvDtype kv);

// What is wrong with one new row of n values as the step stored it in format `kv` (bytes at `got`), against float64's
// values `want`: "" when every value lies within slack × the row's largest |value| plus format_step of float64's value
// stored in the same format; else the first that does not, as "element i is G where float64 gives W (S in FORMAT)".
std::string new_row_problem(KvDtype kv, const void* got, const double* want, std::size_t n, double slack);

struct ReferenceResult {
    std::vector<double> logits;  // batch × vocab, sequence-major (not all of them when a row is wrong)
    // "" when every new K and V row the step wrote holds float64's values (new_row_problem), else which row and how:
    // a wrong projection, rotation or cache offset, which the logits alone would not show (the reference attends over
    // the rows as the step wrote them).
    std::string wrong_row;
};
ReferenceResult reference_step(const ReferenceStep& s);

// The weights above which a step is not redone in float64 (a minute or more of host arithmetic), and, for a
// device's step, the cache above which it is not copied back to the host for it.
constexpr std::uint64_t kReferenceWeightBytes = 64ull << 20;
constexpr std::uint64_t kReferenceCacheBytes = 256ull << 20;

}  // namespace kvscope::probe::step
