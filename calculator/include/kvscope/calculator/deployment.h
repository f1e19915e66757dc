#pragma once
// Will it fit? Weights, the engine's KV budget rule, and what the budget buys.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/draft.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/vllm_pages.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/weight_quant.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

struct GpuSpec {
    std::string id;    // "h100-sxm"
    std::string name;  // "NVIDIA H100 SXM 80GB"
    std::uint64_t memory_bytes = 0;
    std::uint64_t bandwidth_bytes_per_s = 0;
    double bf16_tflops = 0;  // dense
    std::string source;
    std::vector<std::string> aliases;
    friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// How an inference engine decides what memory the KV cache may use.
enum class Engine { vllm, sglang, tensorrt_llm, llama_cpp, plain, last_ = plain };
constexpr std::size_t kEngineCount = enum_count<Engine>();
std::string_view to_string(Engine engine);
std::optional<Engine> parse_engine(std::string_view text);
std::string engine_list();
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

// vLLM's startup settings that decide its profile run, and so what it keeps back from the KV cache
// (vllm/engine/arg_utils.py, vllm/v1/worker/gpu_worker.py determine_available_memory).
struct VllmSettings {
    std::uint64_t max_num_batched_tokens = 0;  // 0: vLLM's default for its version and the GPU
    std::uint64_t max_num_seqs = 0;            // 0: vLLM's default
    bool enforce_eager = false;                // no CUDA graphs
    std::uint64_t version_minor = 0;           // 0.x: the version whose rules apply (0: kDefaultVllmMinor)
    friend bool operator==(const VllmSettings&, const VllmSettings&) = default;
};
// llama.cpp's settings its compute buffer depends on (common/common.h defaults).
struct LlamaCppSettings {
    std::uint64_t ubatch = 0;     // -ub, the micro-batch a graph runs (0: 512)
    bool flash_attn_off = false;  // -fa off (its default, auto, turns flash attention on where the GPU has it)
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

struct Deployment {
    GpuSpec gpu;
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
    // A quantized checkpoint (config.json's quantization_config): its layers' matrices stored as it says, the rest
    // in weight_dtype. Used when the exact bytes are not known; an estimate.
    std::optional<WeightQuant> weight_quant;
    // Speculative decoding with the model's own MTP layers (Architecture::mtp_layers): their weights and KV count.
    bool mtp = false;
    // Speculative decoding with a separate draft model (vLLM --speculative-config model=…): its weights, in
    // weight_dtype as vLLM loads a draft in the target's dtype (vllm/config/speculative.py), and its KV cache count.
    std::optional<DraftModel> draft;
    friend bool operator==(const Deployment&, const Deployment&) = default;
};

Errors validate(const Deployment& d, const Parallelism& parallel);

// The vLLM version whose rules apply to the deployment (its own, else kDefaultVllmMinor).
std::uint64_t vllm_minor(const Deployment& d);
// Whether that version subtracts an estimate of its CUDA graphs (0.21 on, unless enforce_eager).
bool vllm_subtracts_cuda_graphs(const Deployment& d);

// What a model's own files say about its weights, for the deployment it is checked on: their format (the config's
// dtype or quantization), their exact bytes when the files give them (GGUF tensor infos, safetensors headers; 0:
// estimate from the parameter count) and where from, and the engine the files are made for (llama.cpp for a GGUF).
struct ModelWeights {
    KvDtype dtype = KvDtype::bf16;
    std::uint64_t exact_bytes = 0;
    std::string source;
    std::optional<Engine> engine;
    std::optional<WeightQuant> quant;  // the checkpoint's quantization (dtype: the unquantized parts')
    friend bool operator==(const ModelWeights&, const ModelWeights&) = default;
};
// The deployment's quantization as its engine keeps it in memory (which may differ from the checkpoint's files).
WeightQuant loaded_weight_quant(const Deployment& d);
// SGLang's default mem_fraction_static for the deployment's GPU and layout (sglang/srt/server_args.py
// _handle_gpu_memory_settings, v0.5.3 on), and what it keeps back in MiB to get there.
struct SglangDefault {
    double fraction = 0.88;
    std::uint64_t chunked_prefill_size = 0;
    std::uint64_t cuda_graph_max_bs = 0;
    std::uint64_t reserved_mib = 0;
};
SglangDefault sglang_default_fraction(const Deployment& d, const Parallelism& parallel);
// The fraction the fit applies: the given one, or SGLang's own default when none was given.
double effective_fraction(const Deployment& d, const Parallelism& parallel);
// What SGLang finds in use before it loads the weights (CUDA context, NCCL): its fraction applies to the rest.
constexpr std::uint64_t kSglangContextBytes = 1ull << 30;

// A new deployment's weights (and engine, with its default fraction) from the model's.
void adopt_model_weights(Deployment& d, const ModelWeights& w);
// The deployment's weights in a few words: "in bf16", or "432,704 bytes, exact from the GGUF's 3 tensors".
std::string weights_text(const Deployment& d);
// Shorter, for a chart's subtitle: "bf16 weights", "awq weights", "weights from the files".
std::string weights_format_text(const Deployment& d);

// The workload as the engine stores it: llama.cpp keeps one contiguous cache (block size 1); vLLM without its
// hybrid KV cache manager keeps the whole context on sliding or chunked layers that sit beside full ones, and SGLang
// on every sliding or chunked layer.
// `cache_arch`: the layers whose cache is counted.
Workload engine_workload(const Workload& workload, const Deployment& d, const Architecture& cache_arch);
// The parallel layout as the engine splits the layers into pipeline stages (StageSplit): vLLM gives a layer more to
// the stages before the last, SGLang to the last ones, TensorRT-LLM and llama.cpp to the first.
Parallelism engine_parallelism(const Parallelism& parallel, Engine engine);
// Whether SGLang keeps the whole context on the model's sliding and chunked layers: one token pool for every layer,
// as it does for every family but those whose hybrid SWA memory it turns on (not modelled: a warning says so).
bool sglang_keeps_full_context(const Deployment& d, const Architecture& cache_arch);
// Whether that vLLM rule applies: sliding layers beside full ones before 0.10, or chunked-local layers beside full
// ones before kVllmChunkedHybridMinor.
bool vllm_keeps_full_context(const Deployment& d, const Architecture& cache_arch);
// The layers as the engine keeps them: llama.cpp's sliding and chunked layers hold their window plus one
// micro-batch (n_ubatch, kLlamaCppUbatch unless set) tokens, padded to 256; every other engine keeps the window.
// llama.cpp also keeps the recurrent state in f32.
constexpr std::uint64_t kLlamaCppUbatch = 512;
Architecture engine_architecture(const Architecture& arch, Engine engine, std::uint64_t ubatch = kLlamaCppUbatch);
// The deployment's micro-batch for llama.cpp (its own, else kLlamaCppUbatch).
std::uint64_t llama_cpp_ubatch(const Deployment& d);
// llama.cpp's compute buffer on the GPU for one sequence's context: the worst-case graph of one micro-batch,
// reserved when the context is made (src/llama-context.cpp). Bytes; saturates rather than overflows.
std::uint64_t llama_cpp_compute_buffer(const Architecture& arch, std::uint64_t context_tokens, std::uint64_t ubatch,
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

struct FitReport {
    Engine engine = Engine::vllm;
    std::uint64_t gpus = 1;
    std::uint64_t memory_bytes_per_gpu = 0;
    std::uint64_t weights_bytes = 0;  // all GPUs
    std::uint64_t weights_bytes_per_gpu = 0;
    std::uint64_t parameters = 0;
    bool parameters_estimated = false;
    bool draft_parameters_estimated = false;  // the draft's (below) from its shape, not a published count
    // The weights' bytes are exact (from the model's files), not the parameter count in a format; where from.
    bool weights_exact = false;
    std::string weights_source;
    // Not exact: the checkpoint's quantization the estimate follows (weight_quant_label), and the parameters it
    // stores quantized; empty and 0 for weights in one format.
    std::string weights_quant;
    std::uint64_t weights_quantized_parameters = 0;
    // A separate draft model's share (Deployment::draft), included in weights_bytes and the KV figures: its
    // parameters, their bytes, and its layers' KV cache per token (all GPUs). 0 without a draft.
    std::uint64_t draft_parameters = 0;
    std::uint64_t draft_weights_bytes = 0;
    std::uint64_t draft_kv_bytes_per_token = 0;
    std::uint64_t draft_kv_bytes_per_gpu = 0;       // of kv_bytes_per_gpu, at the workload
    std::uint64_t draft_weights_bytes_per_gpu = 0;  // of weights_bytes_per_gpu (its replicated part whole)
    std::uint64_t reserve_bytes_per_gpu = 0;        // activation reserve + runtime overhead the rule subtracts
    std::vector<ReserveItem> reserve_items;         // its parts (summing to reserve_bytes_per_gpu)
    bool reserve_estimated = false;                 // derived from the engine's profile run, not given or fixed
    double fraction = 0;                            // the engine's fraction applied (SGLang: its default if not given)
    std::int64_t kv_budget_bytes_per_gpu = 0;       // negative: the weights alone do not fit
    std::int64_t kv_budget_bytes = 0;               // all GPUs
    std::uint64_t kv_bytes_per_gpu = 0;             // what the workload's KV cache needs on the heaviest GPU
    std::uint64_t state_bytes_per_gpu = 0;          // its recurrent state there (flat in the context)
    std::uint64_t memory_bytes_per_gpu_needed = 0;  // KV + state on the heaviest GPU: what the budget must hold
    // The plain per-layer sum of KV + state there; it differs from the need above when the engine lays the
    // cache out otherwise (vLLM's hybrid cache manager pads each state to an attention page).
    std::uint64_t plain_memory_bytes_per_gpu = 0;
    std::optional<HybridPages> engine_pages;  // vLLM's hybrid layout, when it applies
    // What vLLM's check at start requires beside sliding layers (HybridPages::startup_bytes), 0 when none applies;
    // when it is over the budget the deployment does not fit, and the headroom is the check's.
    std::uint64_t startup_bytes_per_gpu = 0;
    bool short_at_startup = false;       // decoding alone would fit: only the start check does not pass
    bool headroom_from_startup = false;  // the headroom is budget - the start check's need (it is the larger)
    bool fits = false;
    std::int64_t headroom_bytes_per_gpu = 0;    // budget - need; negative = short by
    std::uint64_t free_bytes_per_gpu = 0;       // memory the rule leaves unused (fraction < 1)
    std::uint64_t max_batch = 0;                // concurrent sequences at the workload's context
    std::uint64_t max_context = 0;              // tokens per sequence at the workload's batch
    bool max_context_limited_by_model = false;  // the budget allows more than max positions
    // No max positions and a memory the context does not change beyond the windows (no KV cache, as a pure
    // state-space model, or attention layers that all keep only a window): max_context is only the search's
    // bound, never shown as a figure (unbounded_context_reason says why).
    bool max_context_unbounded = false;
    std::string unbounded_reason;       // why, of the layers the fit counts (a draft's too): unbounded_context_reason
    std::uint64_t tokens_capacity = 0;  // tokens the budget holds (full attention per token)
                                        // after the recurrent state of the workload's sequences
    std::vector<std::string> notes;
    // The cache's own warnings, as kv_cache_report gives them for the same inputs (a context past the model's max
    // positions, KV heads copied by tensor parallelism, what is not exact): every report of a fit shows them.
    std::vector<std::string> warnings;
};

// How the fit's note under pipeline parallelism begins (the weights split evenly, the embedding and LM head not on
// their own stages): a plan says it once for all its layouts.
constexpr const char* kEvenPipelineNote = "not exact: the weights are split evenly";

// Why a fit's max context is no limit (max_context_unbounded), as every report says it after its own "no limit".
std::string unbounded_context_reason(const Architecture& arch);

// The reserve's parts in a few words, as every report shows them: "profile peak 0.92 GiB, non-torch memory 150 MiB".
std::string reserve_text(const FitReport& f, UnitSystem units = UnitSystem::binary);

// The layers whose cache the fit counts: the model's, its MTP layers' when they draft, a draft model's, as the
// engine keeps them (engine_architecture).
Result<Architecture> fit_cache_architecture(const Architecture& checkpoint, const Deployment& d);

Result<FitReport> fit(const Architecture& arch, KvDtype kv_dtype, const Workload& workload, const Parallelism& parallel,
                      const Deployment& deployment);

// Weights in bytes for `params` parameters stored as `dtype`.
Result<std::uint64_t> weights_bytes(std::uint64_t params, KvDtype dtype);
// The deployment's weights: its exact bytes when known, else the parameter count in its weight format.
Result<std::uint64_t> stored_weights_bytes(const Architecture& arch, const Deployment& d);
// When the deployment's exact bytes come from safetensors files and are less than a quarter or more than 2.5 times what
// the model's parameters take in its weight format (or quantization scheme): a warning asking whether the files are
// this model's (a 70B config beside an 8B's shards); nullopt when they agree or the bytes are not from such files.
std::optional<std::string> weights_mismatch(const Architecture& arch, const Deployment& d);
// A separate draft model's weights as the engine loads them: a GGUF's exact bytes, a quantized draft model's scheme,
// else its parameters (draft_parameters) in `dtype`, the model's weight format; and that in a few words.
Result<std::uint64_t> draft_weights_bytes(const DraftModel& draft, KvDtype dtype);
std::string draft_weights_text(const DraftModel& draft, KvDtype dtype);
// The weights a decode step reads (every matrix multiplied once per token; an MoE's active experts): the parameter
// estimate in the weight format, or the exact bytes scaled by the same share of the parameters when known.
Result<std::uint64_t> read_weights_bytes(const Architecture& arch, const Deployment& d);

}  // namespace kvscope
