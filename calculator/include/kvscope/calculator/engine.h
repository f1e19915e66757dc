#pragma once
// The inference engines whose memory rules the calculator follows, their settings, and what a model's files say
// about its weights (engine.cpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/weight_quant.h"

namespace kvscope {

// How an inference engine decides what memory the KV cache may use.
enum class Engine { vllm, sglang, tensorrt_llm, llama_cpp, ollama, plain, last_ = plain };
constexpr std::size_t kEngineCount = enum_count<Engine>();
std::string_view to_string(Engine engine);
std::optional<Engine> parse_engine(std::string_view text);
std::string engine_list();
// Whether the engine runs llama.cpp and keeps its memory as llama.cpp does: llama.cpp itself, and Ollama, which
// starts llama-server with settings of its own choosing (ollama.h).
constexpr bool runs_llama_cpp(Engine engine) { return engine == Engine::llama_cpp || engine == Engine::ollama; }
// The engine's own default fraction (vLLM gpu_memory_utilization 0.90, SGLang
// mem_fraction_static 0.88, TensorRT-LLM kv_cache_free_gpu_mem_fraction 0.90; 1 otherwise).
double default_fraction(Engine engine);
// Whether the engine has a memory-fraction setting (llama.cpp and plain take what is left).
bool engine_takes_fraction(Engine engine);
// Whether the engine's default fraction is derived for the GPU and layout rather than one number (SGLang's:
// sglang_default_fraction), so that help and tables say so instead of default_fraction's.
bool default_fraction_per_gpu(Engine engine);
// One line describing the engine's rule, for help and reports.
std::string_view budget_rule(Engine engine);
// Whether the engine has an option for a KV cache in this format: vLLM and SGLang keep none of ggml's block formats
// nor 4-bit caches, llama.cpp (and Ollama, which starts it) no fp8 and no plain int8, int4 or mxfp4 (engine.cpp
// names each engine's list). A format it lacks is counted at its size, and said not exact.
bool engine_keeps_kv_format(Engine engine, KvDtype dtype);
// Where the engine lists the formats it keeps, for that note ("" for an engine that keeps every format).
std::string_view kv_formats_source(Engine engine);

// The engines' own settings a deployment carries (VllmSettings, LlamaCppSettings, TrtllmSettings below).
enum class EngineSetting : std::uint8_t {
    max_num_batched_tokens,  // vLLM's; SGLang's chunked_prefill_size
    max_num_seqs,            // vLLM's; SGLang's max_running_requests
    enforce_eager,
    vllm_version,
    max_num_tokens,  // TensorRT-LLM's
    ubatch,          // llama.cpp's -ub
    flash_attn,      // llama.cpp's -fa
    last_ = flash_attn,
};
// What reads a setting: the fit (the memory the cache may use), or the serving simulation (simulate, a plan's
// traffic, the Traffic tab).
enum class SettingUse : std::uint8_t { fit, serving };
// Whether the engine reads the setting there. Each reads its own. SGLang reads vLLM's two batch limits as
// chunked_prefill_size and max_running_requests in its scheduler (serving.cpp sglang_settings), and the first in
// its default mem_fraction_static (deployment.cpp sglang_default_fraction), which a fraction given replaces.
// Ollama starts llama.cpp with llama.cpp's.
bool engine_reads(Engine engine, EngineSetting setting, SettingUse use, bool fraction_given = false);
// Whether the engine reads the setting in any use: the window offers it for that engine.
bool engine_has_setting(Engine engine, EngineSetting setting);
// What a setting given for an engine that does not read it where `serving` says (a fit alone, or its serving
// too) changes: a note naming `option`, whose setting it is and why it changes nothing; nullopt where the engine
// reads it.
std::optional<std::string> setting_unread_note(Engine engine, EngineSetting setting, bool serving, bool fraction_given,
                                               std::string_view option);

// vLLM's startup settings that decide its profile run, and so what it keeps back from the KV cache
// (vllm/engine/arg_utils.py, vllm/v1/worker/gpu_worker.py determine_available_memory).
struct VllmSettings {
    std::uint64_t max_num_batched_tokens = 0;    // 0: vLLM's default for its version and the GPU
    std::uint64_t max_num_seqs = 0;              // 0: vLLM's default
    bool enforce_eager = false;                  // no CUDA graphs
    std::uint64_t version_minor = 0;             // 0.x: the version whose rules apply (0: kDefaultVllmMinor)
    std::optional<std::uint64_t> version_patch;  // 0.x.y's y where given: 0.6.4 profiled as no other release did
    friend bool operator==(const VllmSettings&, const VllmSettings&) = default;
};
// llama.cpp's settings its compute buffer depends on (common/common.h defaults).
struct LlamaCppSettings {
    std::uint64_t ubatch = 0;     // -ub, the micro-batch a graph runs (0: 512)
    bool flash_attn_off = false;  // -fa off (its default, auto, turns flash attention on where the GPU has it)
    // -ngl: the layers on the GPU, of the blocks and the output layer (n_layer + 1); none given: all, llama.cpp's
    // default (-1, common/common.h). The split between the GPU and the host: offload.h.
    std::optional<std::uint64_t> gpu_layers;
    // --gpu-layers auto: the most layers that leave llama.cpp's --fit-target free (its --fit, on by default since
    // late 2025, when -ngl is not given); gpu_layers is then unset.
    bool gpu_layers_auto = false;
    std::uint64_t cpu_moe_layers = 0;  // --n-cpu-moe N: the experts of the first N blocks stay in host memory
    bool no_kv_offload = false;        // --no-kv-offload: every layer's cache in host memory
    friend bool operator==(const LlamaCppSettings&, const LlamaCppSettings&) = default;
};
// TensorRT-LLM's setting its profiling run depends on (tensorrt_llm/llmapi/llm_args.py, trtllm-serve's options).
struct TrtllmSettings {
    std::uint64_t max_num_tokens = 0;  // --max_num_tokens: tokens in one step and in the profiling run (0: 8,192)
    friend bool operator==(const TrtllmSettings&, const TrtllmSettings&) = default;
};
// trtllm-serve's and the LLM API's default max_num_tokens.
constexpr std::uint64_t kTrtllmMaxNumTokens = 8192;
// The largest micro-batch taken: far above llama.cpp's own (512; -ub up to n_batch, 2,048 by default).
constexpr std::uint64_t kMaxLlamaCppUbatch = 1ull << 20;

// The version line assumed when none is given: 0.20, the last before CUDA-graph memory was subtracted.
constexpr std::uint64_t kDefaultVllmMinor = 20;
// The versions whose rules the calculator has (0.6 … 0.21); later ones follow 0.21's, and a version past
// kLatestVllmMinor is refused as a typo.
constexpr std::uint64_t kOldestVllmMinor = 6;
// The first release whose hybrid KV cache manager groups chunked-local layers (Llama 4) by default, keeping only the
// current chunk (vllm/envs.py VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to "1"); before it they
// keep the whole context (vllm_keeps_full_context). The docs of 0.12 give the default as False and those of 0.16 as
// True; the change (PR #29627) was merged on 2025-12-16, after 0.13 was cut: 0.14 is taken as the first, and 0.13 to
// 0.15 are said to be not exact (kVllmChunkedUnsure*).
constexpr std::uint64_t kVllmChunkedHybridMinor = 14;
constexpr std::uint64_t kVllmChunkedUnsureFirst = 13, kVllmChunkedUnsureLast = 15;
constexpr std::uint64_t kNewestVllmRules = 21;
constexpr std::uint64_t kLatestVllmMinor = 99;

// Far above any deployment (vLLM's published configurations step at most a few hundred thousand tokens and a
// few thousand sequences), so that a typo is an error rather than an exabyte of reserve.
constexpr std::uint64_t kMaxVllmBatchedTokens = 1ull << 24;
constexpr std::uint64_t kMaxVllmSeqs = 1ull << 20;

// What a model's own files say about its weights, for the deployment it is checked on: their format (the config's
// dtype or quantization), their exact bytes when the files give them (GGUF tensor infos, safetensors headers; 0:
// estimate from the parameter count) and where from, and the engine the files are made for (llama.cpp for a GGUF).
// A GGUF's tensors by the layer llama.cpp places them with (src/llama-model.cpp load_tensors): each block's
// (blk.N.*, of which the routed experts' *_exps), the input layer's (token_embd and other lookup tables, always in
// host memory) and the output layer's (output, output_norm and whatever else belongs to no block).
struct BlockWeights {
    std::uint64_t bytes = 0;
    std::uint64_t expert_bytes = 0;
    friend bool operator==(const BlockWeights&, const BlockWeights&) = default;
};
struct LayerWeights {
    std::vector<BlockWeights> blocks;
    std::uint64_t input_bytes = 0;
    std::uint64_t output_bytes = 0;
    friend bool operator==(const LayerWeights&, const LayerWeights&) = default;
};

struct ModelWeights {
    KvDtype dtype = KvDtype::bf16;
    std::uint64_t exact_bytes = 0;
    std::string source;
    std::optional<Engine> engine;
    std::optional<WeightQuant> quant;    // the checkpoint's quantization (dtype: the unquantized parts')
    std::optional<LayerWeights> layers;  // a GGUF's exact bytes by layer (summing to exact_bytes)
    friend bool operator==(const ModelWeights&, const ModelWeights&) = default;
};

}  // namespace kvscope
