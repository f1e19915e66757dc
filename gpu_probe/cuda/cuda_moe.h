#pragma once
// The expert layers of the CUDA decode step (cuda_step.cu), as the CPU step runs them (step.cpp): the
// router's logits (a cuBLAS GEMM there) give each token its top-k experts, softmax over the chosen; each
// chosen expert's gated MLP runs for that token; the outputs are summed with the routing weights. Here the
// choice stays on the device, so a step never waits for the host. The (token, choice) pairs are grouped by
// expert on the device first, and each chosen expert's rows are read once for all the tokens that chose it,
// as engines' fused MoE kernels do (vLLM's moe_align_block_size sorts the pairs by expert before its grouped
// GEMM): the bytes a step reads are those of the experts it touches, as the calculator counts them.

#include <cstdint>

namespace kvscope::probe::cuda {

// At most this many experts per token (the routing keeps the chosen ones in shared memory).
constexpr unsigned kMaxTopK = 64;

// ids[b·k + j], weights[b·k + j]: token b's j-th expert by router logit (logits: batch × experts, fp32) and
// its weight, e^(logit − top) over the chosen k summed to 1. 0 < k ≤ min(experts, kMaxTopK), else CudaError.
void launch_route(const float* logits, std::uint64_t batch, std::uint32_t experts, std::uint32_t k, std::uint32_t* ids,
                  float* weights);

// At most this many experts in a layer (the grouping counts them in shared memory; models have up to 512).
constexpr unsigned kMaxExperts = 8192;

// The step's (token, choice) pairs grouped by expert: device arrays, filled by launch_group_pairs. groups[0]
// is the number of experts chosen; group g < groups[0] is expert[g], chosen by the pairs order[start[g]] to
// order[start[g + 1] − 1]. expert and order hold `pairs` entries, start pairs + 1. `experts` is the layer's count
// of experts, so there are at most that many groups.
struct ExpertGroups {
    std::uint32_t* groups;
    std::uint32_t* expert;
    std::uint32_t* start;
    std::uint32_t* order;
    std::uint32_t experts;
};

// Groups the pairs p < pairs by ids[p] (< g.experts ≤ kMaxExperts), experts in increasing order.
void launch_group_pairs(const std::uint32_t* ids, std::uint64_t pairs, const ExpertGroups& g);

// y[p·rows + r] = alpha · Σ_c W_e[r][c] · x[(p / x_div)·cols + c] for each pair p < pairs, e its expert:
// `experts` holds every expert's rows × cols matrix, expert-major, in the weight format `dtype` (kFp32, kFp16,
// kBf16, kFp8E4m3); x is in `x_dtype`: the same, or kBf16 beside fp8 weights. The up projection reads token p / k's
// input (x_div = k), the down projection pair p's own (x_div = 1). A block takes one group, so an expert's rows are
// read once for up to 8 of its pairs at a time (again, from cache, for each further 8); each pair's sum is formed in
// the same order whatever its group, so the result does not depend on the grouping.
void launch_expert_gemv(const void* experts, std::uint64_t rows, std::uint64_t cols, const ExpertGroups& g,
                        std::uint64_t pairs, const void* x, std::uint32_t x_div, float alpha, float* y, int dtype,
                        int x_dtype);

// out[b·hidden + i] = Σ_j weights[b·k + j] · y[(b·k + j)·hidden + i].
void launch_expert_sum(const float* y, const float* weights, std::uint64_t batch, std::uint32_t k, std::uint64_t hidden,
                       float* out);

}  // namespace kvscope::probe::cuda
