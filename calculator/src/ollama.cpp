// Ollama's choices when it starts llama-server (ollama.h), read from its source at v0.33 (github.com/ollama/ollama,
// 2026-08): server/routes.go (the default context), server/sched.go (the batch, the context a model runs at),
// llm/llama_server.go (the arguments it passes and its prediction of the memory).
#include "kvscope/calculator/ollama.h"

#include <algorithm>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"
#include "names.h"
#include "wide.h"

namespace kvscope {
namespace {

// server/sched.go: llamaServerGenerationBatch{Default,Constrained,Medium,Large} and the headroom each larger batch
// needs: the prediction within 75% (1,024) or 60% (2,048) of the memory, and its surcharge (768 MiB, 2 GiB) within
// 80% of it beside the prediction.
constexpr std::uint64_t kBatchDefault = 512, kBatchConstrained = 256, kBatchMedium = 1024, kBatchLarge = 2048;

std::uint64_t percent(std::uint64_t bytes, std::uint64_t p) { return (Checked(bytes) * p).saturated() / 100; }

bool batch_fits(std::uint64_t batch, std::uint64_t predicted, std::uint64_t available) {
    // generationBatchFits: a prediction or a memory of 0 lets any batch through.
    if (predicted == 0 || available == 0) return true;
    const std::uint64_t threshold = percent(available, 80);
    if (predicted > threshold) return false;
    if (batch >= kBatchLarge && predicted > percent(available, 60)) return false;
    if (batch >= kBatchMedium && predicted > percent(available, 75)) return false;
    const std::uint64_t surcharge = batch >= kBatchLarge ? 2 * kGiB : batch >= kBatchMedium ? 768 * kMiB : 0;
    return surcharge <= threshold - predicted;
}

}  // namespace

std::uint64_t ollama_default_context(std::uint64_t vram_bytes) {
    // "slightly lower thresholds (47/23 GiB vs. 48/24 GiB) to account for small differences in the exact value"
    if (vram_bytes >= 47 * kGiB) return 262144;
    if (vram_bytes >= 23 * kGiB) return 32768;
    return 4096;
}

std::uint64_t ollama_model_context(std::uint64_t num_ctx, const Architecture& arch) {
    return arch.max_positions > 0 ? std::min(num_ctx, arch.max_positions) : num_ctx;
}

OllamaContext ollama_context_for(const GpuSpec& gpu, std::uint64_t gpus, const Architecture& arch) {
    OllamaContext c;
    c.vram_bytes = (Checked(gpu.memory_bytes) * gpus).saturated();
    c.num_ctx = ollama_default_context(c.vram_bytes);
    c.context = ollama_model_context(c.num_ctx, arch);
    return c;
}

std::uint64_t ollama_predicted_bytes(const Architecture& arch, std::uint64_t weights_bytes,
                                     std::uint64_t context_tokens) {
    // HeadCountKVMin: the GGUF's attention.head_count_kv, an array where layers differ (0 for a layer without
    // attention), its least; 0 counts as 1. The head size is the hidden size over the most query heads.
    std::uint64_t kv_heads = arch.kv_heads;
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const LayerSpec s = arch.layer(l);
        kv_heads = std::min(kv_heads, s.caches_kv() ? (s.kv_heads > 0 ? s.kv_heads : arch.kv_heads) : 0);
    }
    kv_heads = std::max<std::uint64_t>(kv_heads, 1);
    const std::uint64_t head = arch.query_heads > 0 ? arch.hidden_size / arch.query_heads : 0;
    const Checked kv = Checked(2) * arch.layers * kv_heads * head * context_tokens * 2;
    return (kv + weights_bytes).saturated();
}

OllamaBatch ollama_batch(const Architecture& arch, std::uint64_t weights_bytes, std::uint64_t context_tokens,
                         std::uint64_t gpu_bytes, bool flash_attn_off) {
    OllamaBatch out;
    if (flash_attn_off) {
        // Without flash attention on a CUDA GPU the batch stays small: 256 above a context of 4,096 on 8 GiB or less.
        const bool constrained = context_tokens > 4096 && gpu_bytes > 0 && gpu_bytes <= 8 * kGiB;
        out.batch = constrained ? kBatchConstrained : kBatchDefault;
        out.why = "Ollama's batch without flash attention on a CUDA GPU" +
                  std::string(constrained ? " of 8 GiB or less at a context above 4,096" : "") +
                  " (server/sched.go automaticGenerationBatch)";
        return out;
    }
    // generationBatchForContext: by the context of every sequence.
    const std::uint64_t by_context = context_tokens > 32768  ? kBatchLarge
                                     : context_tokens > 4096 ? kBatchMedium
                                                             : kBatchDefault;
    const std::uint64_t predicted = ollama_predicted_bytes(arch, weights_bytes, context_tokens);
    out.batch = by_context;
    while (out.batch > kBatchDefault && !batch_fits(out.batch, predicted, gpu_bytes))
        out.batch = out.batch > kBatchMedium ? kBatchMedium : kBatchDefault;
    out.why = "Ollama's batch for a context of " + format_count(context_tokens) +
              " (512 up to 4,096, 1,024 up to 32,768, 2,048 above; server/sched.go generationBatchForContext)";
    if (out.batch < by_context)
        out.why += ", lowered from " + format_count(by_context) + ": its prediction of the model (" +
                   format_bytes(predicted) + ", the weights and an f16 cache, llm/llama_server.go PredictServerVRAM) " +
                   "leaves too little of the GPU's " + format_bytes(gpu_bytes) +
                   " (within 75% for 1,024 with 768 MiB beside it, 60% for 2,048 with 2 GiB, of 80%)";
    return out;
}

EngineLaunch engine_launch(const Deployment& d, const Architecture& arch, const Workload& workload,
                           std::uint64_t weights_bytes, std::uint64_t gpus) {
    EngineLaunch out{d, {}};
    if (d.engine != Engine::ollama) return out;
    LlamaCppSettings& s = out.deployment.llama_cpp;
    // llm/llama_server.go: -c num_ctx x parallel, -np parallel; -b and -ub num_batch; -ngl only for num_gpu.
    const std::uint64_t context = (Checked(workload.context_tokens) * workload.batch).saturated();
    std::string batch = "-b/-ub " + format_count(s.ubatch) + ": num_batch as given (--ubatch)";
    // The memory it weighs the batch against: every GPU's it loads on (server/sched.go availableMemoryForLoad).
    const OllamaContext def = ollama_context_for(d.gpu, gpus, arch);
    const std::uint64_t vram = def.vram_bytes;
    // Its rule without flash attention is for CUDA GPUs (hasCUDADevice): the catalog's others are AMD's, Intel's
    // and Apple's by name; a GPU entered by hand is taken as NVIDIA's.
    const bool cuda =
        !d.gpu.name.starts_with("AMD ") && !d.gpu.name.starts_with("Apple ") && !d.gpu.name.starts_with("Intel ");
    if (s.ubatch == 0) {
        const OllamaBatch b = ollama_batch(arch, weights_bytes, context, vram, s.flash_attn_off && cuda);
        s.ubatch = b.batch;
        batch = "-b/-ub " + format_count(b.batch) + ", " + b.why;
    }
    if (!s.gpu_layers) s.gpu_layers_auto = true;
    out.notes.push_back("Ollama (v0.30 on) starts llama-server with -c " + format_count(context) +
                        " (num_ctx x OLLAMA_NUM_PARALLEL " + format_count(workload.batch) + "), " + batch + "; " +
                        (d.llama_cpp.gpu_layers
                             ? "-ngl as num_gpu (--gpu-layers)"
                             : "no -ngl, so llama.cpp's --fit chooses the layers (num_gpu, --gpu-layers, sets them)") +
                        "; flash attention auto unless OLLAMA_FLASH_ATTENTION (--flash-attn), the cache f16 unless "
                        "OLLAMA_KV_CACHE_TYPE (--kv-dtype) (llm/llama_server.go)");
    // server/sched.go load: "Some architectures are not safe with num_parallel > 1" (ollama#4165): numParallel = 1.
    if (workload.batch > 1 &&
        one_of(arch.gguf_arch, {"mllama", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "qwen3next", "lfm2",
                                "lfm2moe", "nemotron_h", "nemotron_h_moe", "nemotron_h_omni"}))
        out.notes.push_back("not exact: Ollama serves " + arch.gguf_arch +
                            " one request at a time (server/sched.go: OLLAMA_NUM_PARALLEL is taken as 1 for it, "
                            "ollama#4165), so it starts llama-server with -c " +
                            format_count(workload.context_tokens) + " -np 1: the " + format_count(workload.batch) +
                            " sequences counted here wait their turn there");
    if (workload.context_tokens != def.context)
        out.notes.push_back("Ollama's default num_ctx on " + format_bytes(def.vram_bytes) + " of GPU memory is " +
                            format_count(def.context) +
                            (def.context < def.num_ctx ? " (the model's own length)" : std::string()) +
                            " (server/routes.go: 4,096 below 23 GiB, 32,768 below 47 GiB, 262,144 from 47 GiB); " +
                            format_count(workload.context_tokens) +
                            " here is num_ctx as set (OLLAMA_CONTEXT_LENGTH, a Modelfile's num_ctx or a request's)");
    return out;
}

namespace {

// kvCacheBytesPerElement (fs/ggml/ggml.go): q8_0 1, q4_0 0.5, f32 4, else 2 — in quarters of a byte.
std::uint64_t kv_quarter_bytes(KvDtype dtype) {
    switch (dtype) {
        case KvDtype::q8_0:
            return 4;
        case KvDtype::q4_0:
            return 2;
        case KvDtype::fp32:
            return 16;
        default:
            return 8;
    }
}

struct Graph {
    i128 full = 0, partial = 0;
    bool by_rule = true;
};

// GraphSize's graph for a micro-batch of `batch` over `context` tokens (every sequence's), by architecture: the
// formulas of fs/ggml/ggml.go at v0.12.10, for the dense architectures people run (llama, gemma*, command-r, qwen2,
// phi2, stablelm); 0 and 0 for the others, which take the fallback below.
Graph graph_size(const Architecture& a, const std::string& family, i128 context, i128 batch) {
    const i128 embedding = a.hidden_size, heads = a.query_heads, heads_kv = a.kv_heads, vocab = a.vocab_size;
    const i128 embedding_heads = a.query_heads > 0 ? a.hidden_size / a.query_heads : 0;  // EmbeddingHeadCountMax
    const i128 heads_k = a.head_dim_k;                                                   // attention.key_length
    Graph g;
    if (family == "llama" || family == "llama4") {
        g.full = std::max(4 * batch * (1 + 4 * embedding + context * (1 + heads)), 4 * batch * (embedding + vocab));
        g.partial = 4 * batch * embedding + std::max(4 * batch * (1 + embedding + std::max(context, embedding)) +
                                                         embedding * embedding * 9 / 16 +
                                                         4 * context * (batch * heads + embedding_heads * heads_kv),
                                                     4 * batch * (embedding + vocab) + embedding * vocab * 105 / 128);
    } else if (family == "gemma" || family == "gemma2" || family == "gemma3" || family == "gemma3n") {
        g.full = std::max(4 * batch * (embedding + vocab),
                          4 * batch * (2 + context + context * heads + 2 * embedding + 2 * heads_k * heads));
        g.partial = std::max(4 * embedding * batch + embedding * vocab * 105 / 128 + 4 * vocab * batch,
                             4 * batch * (2 * embedding + 1 + 2 * heads_k * heads + context + context * heads) +
                                 4 * heads_k * context * 8 + embedding * heads_k * heads * 9 / 16);
        if (family == "gemma3n") g.full *= 4, g.partial *= 4;
    } else if (family == "command-r") {
        g.full = std::max(4 * batch * (embedding + vocab), 4 * batch * (2 + 4 * embedding + context * (1 + heads)));
        g.partial = std::max(4 * batch * (embedding + vocab) + embedding * vocab * 105 / 128,
                             4 * batch * (1 + 2 * embedding + context * (1 + heads)) + 4 * embedding * context +
                                 embedding * embedding * 9 / 16);
    } else if (family == "qwen2") {
        g.full = std::max(4 * batch * (embedding + vocab), 4 * batch * (1 + 2 * embedding + context + context * heads));
        g.partial = std::max(4 * batch * (embedding + vocab) + embedding * vocab * 105 / 128,
                             4 * (batch * (1 + 2 * embedding + context * (1 + heads)) + embedding * (1 + context)));
    } else if (family == "phi2") {
        g.full = std::max(4 * batch * (embedding + vocab), 4 * batch * (1 + 4 * embedding + context + context * heads));
        g.partial = std::max(4 * batch * (2 * embedding + vocab) + embedding * vocab * 105 / 128,
                             4 * batch * (2 + 3 * embedding + context + context * heads));
    } else if (family == "stablelm") {
        g.full = 4 * batch * (context * (1 + heads) + 3 * embedding + 2);
        g.partial = std::max(4 * batch * (vocab + 2 * embedding), g.full);
    } else {
        g.by_rule = false;
    }
    return g;
}

}  // namespace

Result<OllamaEstimate> ollama_estimate(const Architecture& arch, const LayerWeights& weights,
                                       const OllamaEstimateInputs& in) {
    // Far past any context or batch Ollama takes: the formulas stay well inside 128 bits.
    constexpr std::uint64_t kMost = 1ull << 32;
    if (in.num_ctx == 0 || in.num_ctx > kMost || in.parallel == 0 || in.parallel > (1u << 16) || in.num_batch == 0 ||
        in.num_batch > kMost)
        return FieldError{Field::context_tokens,
                          "Ollama's estimate takes a context and batch of 1 to 2^32 tokens and 1 to 65,536 sequences"};
    if (weights.blocks.size() != arch.layers)
        return FieldError{Field::weight_dtype, "Ollama's estimate needs each block's bytes"};
    if (arch.recurrent || arch.mla || (arch.moe && arch.moe->experts > 0))
        return FieldError{Field::none, "Ollama's estimate is modelled for dense attention models only"};
    // Architectures GraphSize has formulas of its own for that are not modelled here: never its fallback instead.
    for (const char* other : {"mllama", "deepseek2", "chatglm", "gptoss", "gpt-oss"})
        if (in.gguf_architecture == other)
            return FieldError{Field::none, "Ollama's graph for '" + in.gguf_architecture + "' is not modelled"};
    OllamaEstimate e;
    const i128 context = static_cast<i128>(in.num_ctx) * in.parallel;  // GraphSize: context *= numParallel
    const i128 batch = std::min(in.num_ctx, in.num_batch);             // min(NumCtx, NumBatch)
    // The cache of each block: every attention layer the whole context (K and V heads at the cache type's bytes),
    // but Gemma 3's sliding layers (all but every sixth) their window of each sequence and one batch.
    std::vector<i128> kv(arch.layers, 0);
    const bool gemma3 = in.gguf_architecture == "gemma3";
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        if (!arch.layer(l).caches_kv()) continue;
        const i128 per_token = static_cast<i128>(arch.head_dim_k_of(l) + arch.head_dim_v_of(l)) * arch.kv_heads_of(l);
        i128 tokens = context;
        if (gemma3 && (l + 1) % 6 != 0) {
            std::uint64_t window = 0;
            for (std::uint64_t w = 0; w < arch.layers && window == 0; ++w) window = arch.window_of(w);
            tokens = static_cast<i128>(in.parallel) * window + batch;
        }
        // uint64(float64(…) * bytesPerElement): quarters of a byte are exact here.
        kv[l] = tokens * per_token * kv_quarter_bytes(in.kv_dtype) / 4;
    }
    i128 kv_total = 0;
    for (const i128 k : kv) kv_total += k;
    e.required_kv = clamp_u64(kv_total);
    Graph g = graph_size(arch, in.gguf_architecture, context, batch);
    e.graph_by_rule = g.by_rule;
    if (g.partial == 0) {
        // No formula: HeadCountMax / HeadCountKVMin x the cache / 6.
        std::uint64_t kv_min = arch.kv_heads;
        for (std::uint64_t l = 0; l < arch.layers; ++l) kv_min = std::min(kv_min, arch.kv_heads_of(l));
        const i128 gqa = arch.query_heads / std::max<std::uint64_t>(kv_min, 1);
        g.partial = gqa * kv_total / 6;
        e.notes.push_back("Ollama has no graph formula for '" + in.gguf_architecture +
                          "': its fallback, heads / KV heads x the cache / 6");
    }
    if (g.full == 0) g.full = g.partial;
    if (in.metal) g.partial = g.full;  // "on metal there's no partial offload overhead"
    e.graph_full = clamp_u64(g.full);
    e.graph_partial = clamp_u64(g.partial);
    const i128 graph = std::max(g.full, g.partial);

    // The output layer: output_norm and output, or the token embedding where the head is tied (no output tensor).
    const i128 output = static_cast<i128>(weights.output_bytes) + (arch.tied_embeddings ? weights.input_bytes : 0);
    e.weights_nonrepeating = clamp_u64(output);
    e.layers_model = arch.layers + 1;
    const i128 minimum = static_cast<i128>(in.metal ? 512 : 457) * kMiB;  // MinimumMemory
    const i128 overhead = in.gpu_overhead;
    const i128 free = in.gpu_free_bytes;
    // One layer's worth kept free: block 0 and its cache.
    i128 layer = arch.layers > 0 ? static_cast<i128>(weights.blocks[0].bytes) + kv[0] : 0;
    bool gpu = free > 0 && free >= overhead + graph + minimum + 2 * layer;
    i128 allocated = gpu ? minimum + layer : 0;
    i128 overflow = 0, repeating = 0;
    std::uint64_t count = 0;
    for (std::uint64_t i = arch.layers; i-- > 0;) {
        layer = static_cast<i128>(weights.blocks[i].bytes) + kv[i];
        repeating += weights.blocks[i].bytes;
        if (in.num_gpu && count >= *in.num_gpu) {
            overflow += layer;
            continue;
        }
        if (gpu && free > overhead + allocated + graph + layer) {
            allocated += layer;
            ++count;
        } else {
            gpu = false;  // a GPU without room for this block takes no more
            overflow += layer;
        }
    }
    if (in.weights_hold_cache) {
        e.weights_total = clamp_u64(repeating + kv_total);
        e.weights_repeating = clamp_u64(repeating + kv_total - output);
    } else {
        e.weights_total = clamp_u64(repeating + output);
        e.weights_repeating = clamp_u64(repeating);
    }
    bool fully = count >= arch.layers;
    if (output > 0) {
        if ((!in.num_gpu || count < *in.num_gpu) && gpu && free > overhead + allocated + graph + output) {
            allocated += output;
            ++count;
        }
        if (count < arch.layers + 1) {
            fully = false;
            overflow += output;
        }
    }
    if (count > 0) allocated += fully ? g.full : g.partial;
    e.layers_offload = count;
    e.required_partial = count > 0 ? clamp_u64(allocated) : 0;
    e.required_full = clamp_u64(allocated + overflow);
    return e;
}

std::string ollama_bytes_text(std::uint64_t bytes) {
    // As Go prints them (format/bytes.go HumanBytes2: one decimal), written by the project's locale-free number_text.
    const auto d = static_cast<double>(bytes);
    if (bytes >= kGiB) return number_text(d / static_cast<double>(kGiB), Notation::fixed, 1) + " GiB";
    if (bytes >= kMiB) return number_text(d / static_cast<double>(kMiB), Notation::fixed, 1) + " MiB";
    if (bytes >= 1024) return number_text(d / 1024.0, Notation::fixed, 1) + " KiB";
    return std::to_string(bytes) + " B";
}

}  // namespace kvscope
