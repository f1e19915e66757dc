#pragma once
// The expert layers of the CUDA decode step (cuda_step.cu), as the CPU step runs them (step.cpp): the
// router's logits (a cuBLAS GEMM there) give each token its top-k experts, softmax over the chosen; each
// chosen expert's gated MLP runs for that token; the outputs are summed with the routing weights. Here the
// choice stays on the device, so a step never waits for the host, and each (token, choice) pair reads its
// expert's rows: tokens that chose the same expert read it again (mostly from L2), where engines group
// them so an expert is read once per step.

#include <cstdint>

namespace kvscope::probe::cuda {

// At most this many experts per token (the routing keeps the chosen ones in shared memory).
constexpr unsigned kMaxTopK = 64;

// ids[b·k + j], weights[b·k + j]: token b's j-th expert by router logit (logits: batch × experts, fp32) and
// its weight, e^(logit − top) over the chosen k summed to 1.
void launch_route(const float* logits, std::uint64_t batch, std::uint32_t experts, std::uint32_t k, std::uint32_t* ids,
                  float* weights);

// y[p·rows + r] = alpha · Σ_c W_e[r][c] · x[(p / x_div)·cols + c] for each pair p < pairs, e = ids[p]:
// `experts` holds every expert's rows × cols matrix, expert-major, in the weight format (kFp32, kFp16,
// kBf16); x is in the same format. The up projection reads token p / k's input (x_div = k), the down
// projection pair p's own (x_div = 1).
void launch_expert_gemv(const void* experts, std::uint64_t rows, std::uint64_t cols, const std::uint32_t* ids,
                        std::uint64_t pairs, const void* x, std::uint32_t x_div, float alpha, float* y, int dtype);

// out[b·hidden + i] = Σ_j weights[b·k + j] · y[(b·k + j)·hidden + i].
void launch_expert_sum(const float* y, const float* weights, std::uint64_t batch, std::uint32_t k, std::uint64_t hidden,
                       float* out);

}  // namespace kvscope::probe::cuda
