#pragma once
// What each engine keeps back from the KV cache on every GPU: vLLM's profile run, TensorRT-LLM's profiling run,
// llama.cpp's compute buffer (engine_reserve.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// The vLLM version whose rules apply to the deployment (its own, else kDefaultVllmMinor).
std::uint64_t vllm_minor(const Deployment& d);
// That version as a release is named: "0.21", or "0.6.4" where the patch is given.
std::string vllm_version_text(const Deployment& d);
// Whether that version subtracts an estimate of its CUDA graphs (0.21 on, unless enforce_eager).
bool vllm_subtracts_cuda_graphs(const Deployment& d);
// Whether that version counts the CUDA context (and other processes) as memory outside torch: 0.6.4 alone.
bool vllm_counts_cuda_context(const Deployment& d);
// KVScope's estimate of what vLLM 0.6.4 counted outside torch (the CUDA context with the profile's growth): the
// RTX 3090 log's figure, mid-way in its published logs' 0.15 - 0.73 GiB (engine_reserve.cpp).
constexpr std::uint64_t kVllm064NonTorchBytes = 350ull << 20;

// The deployment's micro-batch for llama.cpp (its own, else kLlamaCppUbatch).
std::uint64_t llama_cpp_ubatch(const Deployment& d);
// llama.cpp's compute buffer on the GPU for one sequence's context: the worst-case graph of one micro-batch,
// reserved when the context is made (src/llama-context.cpp). Bytes; saturates rather than overflows.
std::uint64_t llama_cpp_compute_buffer(const Architecture& arch, std::uint64_t context_tokens, std::uint64_t ubatch,
                                       bool flash_attn);

// The stages of that graph whose tensors set a buffer's size, each a peak of its own (bytes, saturating): the output
// (the f32 logits and the hidden state), the attention scores without flash attention (0 with it), the MLP's (its
// three widest f32 tensors, three hidden states and the mask), and the inputs staged in host memory (llama.cpp's
// CUDA_Host compute buffer: three f32 tensors of n_embd x n_tokens, 24.01 MiB for Llama 3 8B at n_ubatch 512 in
// published logs). A split model (offload.h) reserves the same on the GPU at any number of layers; the host adds the
// attention where --no-kv-offload runs it there.
struct LlamaCppGraph {
    std::uint64_t output = 0, attention = 0, mlp = 0, inputs = 0;
};
LlamaCppGraph llama_cpp_graph(const Architecture& arch, std::uint64_t context_tokens, std::uint64_t ubatch,
                              bool flash_attn);

// One part of what the engine keeps back from the KV cache on each GPU, as the fit's breakdown names it.
enum class ReserveKind : std::uint8_t { profile_peak, non_torch, cuda_graphs, activation, overhead, compute_buffer };
struct ReserveItem {
    ReserveKind kind = ReserveKind::activation;
    std::string name;  // "profile peak", "non-torch memory", "CUDA graphs", "activation reserve", …
    std::uint64_t bytes = 0;
    std::string how;  // how the figure was reached, with its source
    friend bool operator==(const ReserveItem&, const ReserveItem&) = default;
};
// What vLLM keeps back on each GPU at startup, as its profile run would measure it: the peak of a forward pass of
// max_num_batched_tokens tokens or of the sampler over max_num_seqs sequences' logits (the forward's activations
// are freed before sampling, so the larger counts), the memory outside torch's allocator, and from 0.21 on the
// CUDA graphs' estimate unless enforce_eager. Each item says its inputs; the defaults follow the version line.
std::vector<ReserveItem> vllm_reserve(const Architecture& arch, const Workload& workload, const Parallelism& parallel,
                                      const Deployment& d);
// What TensorRT-LLM keeps back on each GPU, as its PyTorch backend's profiling run measures it (the peak of a
// forward pass of max_num_tokens tokens above the weights, and the memory outside torch), unless fixed_reserve.
std::vector<ReserveItem> trtllm_reserve(const Architecture& arch, const Parallelism& parallel, const Deployment& d);
// The tokens of that run: the given max_num_tokens, else kTrtllmMaxNumTokens.
std::uint64_t trtllm_max_num_tokens(const Deployment& d);
// What the deployment's engine keeps back on each GPU beside the weights (engine_reserve.cpp): its parts, whether
// they are derived (vLLM's profile run, TensorRT-LLM's profiling run, llama.cpp's compute buffer) rather than given
// or fixed, and the notes that say how.
struct EngineReserve {
    std::vector<ReserveItem> items;
    bool estimated = false;
    std::vector<std::string> notes;
};
EngineReserve engine_reserve(const Architecture& model_arch, const Workload& workload, const Parallelism& parallel,
                             const Deployment& d);
// The batch limits the profile run uses: the given ones, else vLLM's defaults for the version and GPU.
struct VllmBatch {
    std::uint64_t max_num_batched_tokens = 0, max_num_seqs = 0;
    std::uint64_t sampled_sequences = 0;  // the sequences the sampler's dummy run takes: at most one a token
    bool tokens_default = false, seqs_default = false;  // the figure is vLLM's default, not one given
};
VllmBatch vllm_batch(const Workload& workload, const Deployment& d);

}  // namespace kvscope
