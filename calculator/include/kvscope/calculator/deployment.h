#pragma once
// A deployment: the GPUs, the engine and its settings, the weights' format, a draft (deployment.cpp validates it and
// derives SGLang's default fraction).

#include <cstdint>
#include <optional>
#include <string>

#include "kvscope/calculator/draft.h"
#include "kvscope/calculator/engine.h"
#include "kvscope/calculator/gguf_mix.h"
#include "kvscope/calculator/gpu.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/weight_quant.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

struct Deployment {
    GpuSpec gpu;
    HostSpec host;  // the computer's RAM and bandwidth, for a model split between the GPU and the host
    std::uint64_t gpu_count = 1;
    Engine engine = Engine::vllm;
    double fraction = 0.90;  // the engine's memory fraction
    // The fraction was set by the user (--utilization, the window, a file): SGLang otherwise takes its own default
    // for the GPU and layout (sglang_default_fraction).
    bool fraction_given = false;
    KvDtype weight_dtype = KvDtype::bf16;
    // The reserve of the engines whose rule takes a fixed one (plain). vLLM, TensorRT-LLM and llama.cpp derive
    // their activations (profile peak, compute buffer) unless `fixed_reserve` is set (--reserve given, or a file
    // written before they did); the runtime overhead stands for what is in use outside them (vLLM's non-torch
    // memory when `overhead_given`, TensorRT-LLM's memory outside torch, llama.cpp's and plain's overhead).
    std::uint64_t activation_reserve_bytes = 1ull << 30;  // activations at peak prefill
    std::uint64_t runtime_overhead_bytes = 1ull << 29;    // CUDA context, graphs, library workspaces
    bool fixed_reserve = false;
    bool overhead_given = false;  // --overhead given: every rule takes it in place of its own figure
    VllmSettings vllm;
    LlamaCppSettings llama_cpp;
    TrtllmSettings tensorrt_llm;
    // The weights' exact bytes as stored (GGUF tensor infos, safetensors headers): used instead of the parameter
    // count in weight_dtype when set (0: estimate). weights_source says where the figure came from.
    std::uint64_t weights_bytes_exact = 0;
    std::string weights_source;
    // A GGUF's exact bytes by layer, for llama.cpp's split (offload.h); used only while they sum to the exact bytes.
    std::optional<LayerWeights> weights_layers;
    // A quantized checkpoint (config.json's quantization_config): its layers' matrices stored as it says, the rest
    // in weight_dtype. Used when the exact bytes are not known; an estimate.
    std::optional<WeightQuant> weight_quant;
    // A GGUF of llama.cpp's quantization mixes (Q4_K_M, …) that is not at hand: its tensors' types from
    // llama-quantize's rules on the model's shape (gguf_mix.h), the rest (norms) f32. Used when the exact bytes are not
    // known; an estimate.
    std::optional<GgufMix> gguf_mix;
    // Speculative decoding with the model's own MTP layers (Architecture::mtp_layers): their weights and KV count.
    bool mtp = false;
    // Speculative decoding with a separate draft model (vLLM --speculative-config model=…): its weights, in
    // weight_dtype as vLLM loads a draft in the target's dtype (vllm/config/speculative.py), and its KV cache count.
    std::optional<DraftModel> draft;
    friend bool operator==(const Deployment&, const Deployment&) = default;
};

Errors validate(const Deployment& d, const Parallelism& parallel);

// SGLang's default mem_fraction_static for the deployment's GPU and layout (sglang/srt/server_args.py
// _handle_gpu_memory_settings, v0.5.3 on), and what it keeps back in MiB to get there.
struct SglangDefault {
    double fraction = 0.88;  // at or below 0 where reserved_mib is the whole GPU (validate refuses it)
    std::uint64_t chunked_prefill_size = 0;
    bool chunked_prefill_given = false;  // the deployment's max_num_batched_tokens, as --chunked-prefill-size
    std::uint64_t cuda_graph_max_bs = 0;
    std::uint64_t draft_mib = 0;  // kept back for a speculative draft: 6 GiB a separate model, 2 GiB EAGLE or MTP
    std::uint64_t reserved_mib = 0;
};
SglangDefault sglang_default_fraction(const Deployment& d, const Parallelism& parallel);
// The terms of reserved_mib as the fit's note and errors write them: "512 + 1.5 x chunked prefill 8,192 + …".
std::string sglang_reserved_terms(const SglangDefault& g);
// The deployment as the engine's memory rules see it beside this model: --mtp on a model without MTP layers drafts
// nothing, so SGLang keeps nothing back for it (the fit says none was counted).
Deployment as_drafted(const Deployment& d, const Architecture& model);
// The fraction the fit applies: the given one, or SGLang's own default when none was given (of as_drafted's
// deployment, as the fit and the window take it).
double effective_fraction(const Deployment& d, const Parallelism& parallel);
// What SGLang finds in use before it loads the weights (CUDA context, NCCL): its fraction applies to the rest.
constexpr std::uint64_t kSglangContextBytes = 1ull << 30;

}  // namespace kvscope
