#pragma once
// Will it fit? The engine's KV budget and what it buys: fit runs in named stages (fit.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/offload.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/vllm_pages.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

struct FitReport {
    Engine engine = Engine::vllm;
    // llama.cpp's micro-batch (n_ubatch) the compute buffer and a sliding layer's cache follow, as given or as the
    // engine chose it (Ollama's by the context); 0 for the other engines.
    std::uint64_t ubatch = 0;
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
    // llama.cpp on one GPU: which layers live in VRAM and which in RAM (offload.h). The per-GPU figures above are
    // the GPU's part of it (never the token embedding, which llama.cpp keeps in host memory), and a split fits only
    // when the host holds the rest.
    std::optional<Offload> offload;
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

// The warning that an engine does not serve this model at all (RecurrentGemma under vLLM or SGLang), its figures
// being the engine's rules applied to the layers; nullopt where it does, or where KVScope does not know it not to.
std::optional<std::string> unserved_model_warning(const Architecture& model, Engine engine);

// The reserve's parts in a few words, as every report shows them: "profile peak 0.92 GiB, non-torch memory 150 MiB".
std::string reserve_text(const FitReport& f, UnitSystem units = UnitSystem::binary);

// The KV budget per GPU as every report says it: "3.38 GiB per GPU", or, where the weights and reserves alone take
// more than the engine may use, "none: the weights and reserves exceed the memory the engine may use by 111 GiB per
// GPU" (never a negative size, which reads as a budget).
std::string kv_budget_text(const FitReport& f, UnitSystem units = UnitSystem::binary);

// The layers whose cache the fit counts: the model's, its MTP layers' when they draft, a draft model's, as the
// engine keeps them (engine_architecture).
Result<Architecture> fit_cache_architecture(const Architecture& checkpoint, const Deployment& d, const FitReport& fit);

Result<FitReport> fit(const Architecture& arch, KvDtype kv_dtype, const Workload& workload, const Parallelism& parallel,
                      const Deployment& deployment);

}  // namespace kvscope
