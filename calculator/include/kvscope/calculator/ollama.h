#pragma once
// Ollama's choices when it starts llama.cpp for a model (ollama.cpp; v0.30 on, where Ollama runs llama-server and
// leaves the layers to llama.cpp's --fit): the default context by the GPUs' memory, the batch by the context, and
// llama.cpp's own rules for everything it does not pass.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/engine.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// Ollama's default num_ctx for GPUs of this much memory in all, less OLLAMA_GPU_OVERHEAD (server/routes.go, since
// v0.15.5): 4,096; 32,768 from 23 GiB; 262,144 from 47 GiB. OLLAMA_CONTEXT_LENGTH or a request's num_ctx replaces it.
std::uint64_t ollama_default_context(std::uint64_t vram_bytes);
// The context Ollama runs a model at: num_ctx, but no longer than the model's own (llm/server.go NewLlamaServer
// lowers opts.NumCtx to the GGUF's context_length before it passes -c; server/sched.go effectiveModelContext
// predicts with the same; a model without a length keeps num_ctx).
std::uint64_t ollama_model_context(std::uint64_t num_ctx, const Architecture& arch);

// Ollama's default context for a model on `gpus` of `gpu`: their memory in all, the num_ctx it gives it, and the
// context the model runs at (no longer than its own).
struct OllamaContext {
    std::uint64_t vram_bytes = 0, num_ctx = 0, context = 0;
};
OllamaContext ollama_context_for(const GpuSpec& gpu, std::uint64_t gpus, const Architecture& arch);

// Ollama's own prediction of the memory a model takes, which chooses its batch (llm/llama_server.go
// PredictServerVRAM): the model file's bytes and an f16 cache of 2 x blocks x the fewest KV heads x
// (hidden size / heads) x tokens, whatever the model's layers are.
std::uint64_t ollama_predicted_bytes(const Architecture& arch, std::uint64_t weights_bytes,
                                     std::uint64_t context_tokens);

// The batch Ollama passes llama-server as -b and -ub when num_batch is not set (server/sched.go
// automaticGenerationBatch), and why.
struct OllamaBatch {
    std::uint64_t batch = 512;
    std::string why;
};
OllamaBatch ollama_batch(const Architecture& arch, std::uint64_t weights_bytes, std::uint64_t context_tokens,
                         std::uint64_t gpu_bytes, bool flash_attn_off);

// The deployment as its engine starts: for Ollama, the llama.cpp settings it passes llama-server (the batch by
// the context unless given, the layers by --fit unless num_gpu is given), with notes saying so; any other engine's
// unchanged. `weights_bytes`: the model's, for Ollama's prediction; `gpus`: the GPUs it sees.
struct EngineLaunch {
    Deployment deployment;
    std::vector<std::string> notes;
};
EngineLaunch engine_launch(const Deployment& d, const Architecture& arch, const Workload& workload,
                           std::uint64_t weights_bytes, std::uint64_t gpus);

// Ollama's own estimate before v0.12.11 (Nov 2025), which chose the layers it offloaded and which its logs print as
// `msg=offload … layers.offload=… memory.required.full=…` (llm/memory.go estimateGPULayers, fs/ggml/ggml.go
// GraphSize, at v0.12.10): a graph size by architecture, one layer's worth kept free beside 457 MiB (512 on Metal),
// the blocks from the last down while they fit, then the output layer. For one GPU (or none).
struct OllamaEstimateInputs {
    std::string gguf_architecture;  // general.architecture: "llama", "qwen2", "gemma2", … (its graph formula)
    std::uint64_t num_ctx = 2048;   // per sequence (Ollama's default before v0.6.4: 2,048)
    std::uint64_t parallel = 1;     // OLLAMA_NUM_PARALLEL (or the 4 Ollama chose where memory allowed, v0.2 - 0.5)
    std::uint64_t num_batch = 512;
    std::uint64_t gpu_free_bytes = 0;      // the GPU's free memory as Ollama saw it ("memory.available"); 0: no GPU
    std::uint64_t gpu_overhead = 0;        // OLLAMA_GPU_OVERHEAD
    std::optional<std::uint64_t> num_gpu;  // the layers asked for (num_gpu); none: as many as fit
    KvDtype kv_dtype = KvDtype::fp16;      // OLLAMA_KV_CACHE_TYPE: f16, q8_0 or q4_0 (with flash attention)
    bool metal = false;                    // Apple's GPU: 512 MiB kept, no partial-offload graph of its own
    // Before v0.6.1 the weights it printed held each block's cache: "memory.weights.total" the blocks with their
    // cache, "repeating" that less the output layer (llm/memory.go memoryWeights += layerSize).
    bool weights_hold_cache = false;
};
struct OllamaEstimate {
    std::uint64_t layers_model = 0;      // blocks + the output layer
    std::uint64_t layers_offload = 0;    // on the GPU
    std::uint64_t required_full = 0;     // "memory.required.full": everything, wherever it goes
    std::uint64_t required_partial = 0;  // "memory.required.partial": what goes on the GPU
    std::uint64_t required_kv = 0;
    std::uint64_t weights_total = 0, weights_repeating = 0, weights_nonrepeating = 0;  // as the log prints them
    std::uint64_t graph_full = 0, graph_partial = 0;
    bool graph_by_rule = true;  // the architecture has a formula of its own (else Ollama's fallback, said in notes)
    std::vector<std::string> notes;
};
Result<OllamaEstimate> ollama_estimate(const Architecture& arch, const LayerWeights& weights,
                                       const OllamaEstimateInputs& in);
// A size as Ollama's logs print it (format/bytes.go HumanBytes2): "9.2 GiB", "916.1 MiB", "512 B".
std::string ollama_bytes_text(std::uint64_t bytes);

}  // namespace kvscope
