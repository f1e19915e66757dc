// The fit of a deployment, in named stages: what is served and how the engine keeps it, whether the inputs can be
// served, the weights on each GPU, the cache the batch needs, the engine's KV budget, vLLM's start check, the
// capacity, and the notes. Each stage assigns its part of the report; the notes that only read it come last.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/ollama.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/vllm_pages.h"
#include "kvscope/calculator/weights.h"
#include "wide.h"

namespace kvscope {

std::string unbounded_context_reason(const Architecture& arch) {
    return arch.attention_layers() == 0
               ? "no layer keeps a KV cache, so the context does not change the memory"
               : "every attention layer keeps only its window, so a longer context does not change the memory";
}

namespace {

// The model served and the layers whose cache it keeps, before the engine's own way of keeping them.
struct ServedLayers {
    Architecture model;  // with its MTP layers when they draft: layers of the model served, weights and KV
    Architecture cache;  // and a separate draft model's layers, which cache in the same KV cache (with_draft_layers)
};

// What the engine does not do that the inputs ask of it (a cache format it has no option for; llama.cpp's missing
// weight formats and tensor parallelism), each said as a figure that is not the engine's.
std::vector<std::string> engine_warnings(const Deployment& d, KvDtype kv_dtype, const Parallelism& parallel) {
    std::vector<std::string> out;
    const std::string format(to_string(kv_dtype));
    if (!engine_keeps_kv_format(d.engine, kv_dtype))
        out.push_back(runs_llama_cpp(d.engine)
                          ? "not exact: llama.cpp keeps no " + format + " cache (" +
                                std::string(kv_formats_source(d.engine)) +
                                "); counted at its size here, and --kv-dtype " +
                                (kv_dtype == KvDtype::int4 || kv_dtype == KvDtype::mxfp4 ? "q4_0" : "q8_0") +
                                " counts llama.cpp's format of about as many bits"
                          : "not exact: " + std::string(to_string(d.engine)) + " keeps no " + format + " cache (" +
                                std::string(kv_formats_source(d.engine)) + "); counted at its size here");
    if (!runs_llama_cpp(d.engine)) return out;
    // ggml's weight types (ggml/include/ggml.h enum ggml_type): f32, f16, bf16, the q*/iq* blocks, mxfp4; no fp8,
    // and no plain int8 or int4 format for a model's weights.
    const KvDtype w = d.weight_dtype;
    if (d.weights_bytes_exact == 0 &&
        (w == KvDtype::fp8_e4m3 || w == KvDtype::fp8_e5m2 || w == KvDtype::int8 || w == KvDtype::int4))
        out.push_back("not exact: llama.cpp has no " + std::string(to_string(w)) +
                      " weights (a GGUF holds f32, f16, bf16 or ggml's block formats, ggml.h ggml_type); they are "
                      "counted at its size here, and --weight-dtype " +
                      (w == KvDtype::int4 ? std::string("q4_0") : std::string("q8_0")) +
                      " counts llama.cpp's format of about as many bits");
    // llama.cpp's GPUs split a model by whole layers (--split-mode layer, its default: --pp counts that), or split
    // each weight matrix by rows while the KV cache and the activations stay on the main GPU (--split-mode row):
    // neither splits the KV heads as tensor parallelism does (src/llama-model.cpp load_tensors).
    if (parallel.tp > 1)
        out.push_back(
            "not exact: llama.cpp has no tensor parallelism that splits the KV heads: its default split gives "
            "each GPU whole layers (--pp " +
            std::to_string(parallel.tp * parallel.pp) +
            " counts it), and --split-mode row splits the weights but keeps the whole KV cache on the main "
            "GPU; TP " +
            std::to_string(parallel.tp) + " is counted here as vLLM splits the heads");
    return out;
}

Result<ServedLayers> served_layers(const Architecture& checkpoint, const Deployment& d) {
    ServedLayers out{d.mtp ? with_mtp_layers(checkpoint) : checkpoint, {}};
    Result<Architecture> cache = d.draft ? with_draft_layers(out.model, *d.draft) : out.model;
    if (!cache) return cache.errors();
    out.cache = *cache;
    return out;
}

struct Done {};  // a stage that succeeded

// The deployment as its engine starts it, for the model served and the workload (ollama.h).
EngineLaunch launch_of(const Deployment& d, const ServedLayers& served, const Workload& workload,
                       const Parallelism& parallel) {
    if (d.engine != Engine::ollama) return {d, {}};
    const auto weights = stored_weights_bytes(served.model, d);
    return engine_launch(d, served.model, workload, weights ? *weights : 0, parallel.gpus());
}

class FitStages {
public:
    FitStages(const Architecture& checkpoint_in, KvDtype kv_dtype_in, const Workload& workload_given,
              const Parallelism& parallel_given, const Deployment& deployment, ServedLayers served_in)
        : checkpoint(checkpoint_in),
          kv_dtype(kv_dtype_in),
          workload_in(workload_given),
          parallel_in(parallel_given),
          launch(launch_of(deployment, served_in, workload_given, parallel_given)),
          d(launch.deployment),
          parallel(engine_parallelism(parallel_given, deployment.engine)),  // its pipeline stages' layers
          served(std::move(served_in)),
          model_arch(served.model),
          cache_arch(&served.cache),
          workload(engine_workload(workload_given, d, served.cache)),
          ubatch(llama_cpp_ubatch(d)),
          arch(engine_architecture(served.cache, d.engine, ubatch)),
          gpus(parallel.gpus()) {}

    // It points into its own served layers: never copied or moved.
    FitStages(const FitStages&) = delete;
    FitStages& operator=(const FitStages&) = delete;

    Result<FitReport> run() {
        engine_notes();
        for (auto stage : {&FitStages::check_inputs, &FitStages::weights, &FitStages::split, &FitStages::cache_needs,
                           &FitStages::budget_of_engine})
            if (auto done = (this->*stage)(); !done) return done.errors();
        startup_check();
        capacity();
        closing_notes();
        return r;
    }

private:
    // How the engine keeps the layers, said where it is not what kvscope-cli kv counts.
    void engine_notes() {
        r.notes.insert(r.notes.end(), launch.notes.begin(), launch.notes.end());
        if (runs_llama_cpp(d.engine)) r.ubatch = ubatch;
        if (workload.block_size != workload_in.block_size)
            r.notes.emplace_back("llama.cpp keeps one contiguous cache: the block size is taken as 1");
        if (arch.layer_specs != cache_arch->layer_specs && !workload.full_window) {
            // The window and what llama.cpp keeps for it, both read from the layers (engine_architecture made them).
            const LayerKind kind =
                layer_window(*cache_arch, LayerKind::sliding) > 0 ? LayerKind::sliding : LayerKind::chunked;
            const std::uint64_t w = layer_window(*cache_arch, kind), kept = layer_window(arch, kind);
            r.notes.push_back("llama.cpp keeps a sliding layer's window and one micro-batch (n_ubatch " +
                              format_count(ubatch) + ") more, padded to 256 tokens" +
                              (w > 0 && kept > 0 ? ": " + format_count(kept) + " for a window of " + format_count(w)
                                                 : std::string()) +
                              " (llama-kv-cache-iswa.cpp)");
        }
        // Layers left over from an even split go where the engine puts them: said, with the stages' layers, when that
        // is not the first stages (where kvscope-cli kv and the Overview put them).
        if (parallel.pp > 1 && arch.layers % parallel.pp != 0 && parallel.split != StageSplit::first) {
            std::string counts;
            for (std::uint64_t s = 0; s < parallel.pp; ++s)
                counts += (s == 0 ? "" : ", ") + std::to_string(stage_layers(arch.layers, parallel, s).count);
            const bool last = parallel.split == StageSplit::last;
            r.notes.push_back(std::string(last ? "SGLang" : "vLLM") + " gives the " +
                              format_count_of(arch.layers % parallel.pp, "layer", "layers") + " left over from " +
                              format_count(arch.layers) + " on " + std::to_string(parallel.pp) + " stages to the " +
                              (last ? "last stages" : "stages before the last") + ": " + counts + " layers (" +
                              (last ? "sglang/srt" : "vllm") + "/distributed/utils.py get_pp_indices)");
        }
        if (arch.recurrent && cache_arch->recurrent && arch.recurrent != cache_arch->recurrent)
            r.notes.emplace_back("llama.cpp keeps the recurrent state in f32 whatever the model's dtype (conv " +
                                 std::string(to_string(cache_arch->recurrent->conv_dtype)) + ", SSM " +
                                 std::string(to_string(cache_arch->recurrent->ssm_dtype)) +
                                 " elsewhere; src/llama-model.cpp create_memory)");
    }

    // Whether the engine serves these inputs at all, and the cache's layout.
    Result<Done> check_inputs() {
        Errors errors = validate(as_drafted(d, checkpoint), parallel);
        // vLLM shares an EAGLE head's embedding and runs a drafter only without pipeline parallelism
        // (llm_base_proposer.py _maybe_share_embeddings: "if PP disabled"); a draft's layers on a stage are not
        // modelled.
        if (d.draft && parallel.pp > 1)
            errors.push_back({Field::draft, "a draft model with pipeline parallelism (PP " +
                                                std::to_string(parallel.pp) +
                                                ") is not modelled: vLLM drafts without it; use tensor parallelism"});
        // vllm/config/speculative.py: one method per server.
        // The draft's heads are split over the same tensor-parallel GPUs as the model's (vLLM shards the drafter as it
        // shards the model): the same rule as the model's, on the draft's own heads.
        if (d.draft)
            for (const FieldError& e : validate(Parallelism{parallel.tp, 1}, d.draft->arch))
                if (e.input == Field::tp)
                    errors.push_back({Field::draft, "the draft " + d.draft->name + ": " + e.message});
        if (d.mtp && d.draft)
            errors.push_back({Field::draft,
                              "vLLM serves one speculative method: the model's MTP layers (--mtp) or a "
                              "draft model (--draft), not both"});
        // vLLM refuses a step of fewer tokens than sequences (vllm/config/scheduler.py verify_max_model_len, earlier
        // SchedulerConfig._verify_args: "max_num_batched_tokens (…) must be greater than or equal to max_num_seqs
        // (…)").
        if (d.engine == Engine::vllm) {
            const VllmBatch b = vllm_batch(workload, d);
            if (b.max_num_batched_tokens < b.max_num_seqs && !(b.tokens_default && b.seqs_default)) {
                const auto given = [](std::uint64_t n, bool by_default) {
                    return format_count(n) + (by_default ? ", vLLM's default here" : "");
                };
                errors.push_back({b.tokens_default ? Field::max_num_seqs : Field::max_num_batched_tokens,
                                  "vLLM does not start when a step's tokens (max_num_batched_tokens " +
                                      given(b.max_num_batched_tokens, b.tokens_default) +
                                      ") are fewer than its sequences (max_num_seqs " +
                                      given(b.max_num_seqs, b.seqs_default) +
                                      "): \"max_num_batched_tokens must be greater than or equal to max_num_seqs\" "
                                      "(vllm/config/scheduler.py); raise the tokens or lower the sequences"});
            }
        }
        auto made = KvLayout::make(arch, kv_dtype, workload, parallel);
        auto report = made ? kv_cache_report(*made, arch, workload, parallel) : Result<KvCacheReport>(made.errors());
        if (!report)
            for (const auto& e : report.errors()) errors.push_back(e);
        if (!errors.empty()) return errors;
        layout_or = *made;
        kv = *report;
        r.warnings = kv->warnings;  // the model's own "not exact:" reasons among them
        return Done{};
    }

    // The weights on each GPU: the model's, a draft's, what tensor parallelism cannot split.
    Result<Done> weights() {
        params = parameters(model_arch);
        auto stored_or = stored_weights_bytes(model_arch, d);
        if (!stored_or) return stored_or.errors();
        stored = *stored_or;
        std::uint64_t weights = stored;
        // Tensor parallel splits the weights, but what a draft keeps whole (EAGLE's fc) is on every GPU.
        std::uint64_t replicated = 0;
        if (d.draft) {
            const DraftParameters dp = draft_parameters(*d.draft);
            auto bytes = draft_weights_bytes(*d.draft, d.weight_dtype);
            if (!bytes) return bytes.errors();
            if (d.draft->weights_bytes_exact == 0 && dp.replicated > 0)
                if (auto rep = weights_bytes(dp.replicated, d.weight_dtype); rep && *rep <= *bytes) replicated = *rep;
            const Checked all = Checked(weights) + *bytes;
            if (all.overflow()) return overflow_error(Field::draft, "the weights with the draft's");
            weights = all.value();
            r.draft_parameters = dp.own;
            r.draft_parameters_estimated = dp.estimated;
            r.draft_weights_bytes = *bytes;
            // Its layers' share of the cache, a token's and a GPU's: the cache with them less the cache without.
            const Architecture own = engine_architecture(model_arch, d.engine, ubatch);
            auto without = KvLayout::make(own, kv_dtype, workload, parallel);
            if (!without) return without.errors();
            auto without_kv = kv_cache_report(*without, own, workload, parallel);
            if (!without_kv) return without_kv.errors();
            const auto minus = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
            r.draft_kv_bytes_per_token =
                minus(layout_or->bytes_per_token_all_gpus().value(), without->bytes_per_token_all_gpus().value());
            r.draft_kv_bytes_per_gpu = minus(kv->per_gpu_bytes, without_kv->per_gpu_bytes);
        }
        r.engine = d.engine;
        r.gpus = gpus;
        r.parameters = params.total;
        r.parameters_estimated = params.estimated;
        r.memory_bytes_per_gpu = d.gpu.memory_bytes;
        unified_memory_notes(d.gpu);
        r.weights_bytes_per_gpu = ceil_div(weights - replicated, gpus) + replicated;
        const Checked all_gpus = Checked(weights) + Checked(replicated) * (gpus - 1);
        if (all_gpus.overflow()) return overflow_error(Field::draft, "the weights with the draft's on every GPU");
        r.weights_bytes = all_gpus.value();
        if (d.draft) r.draft_weights_bytes_per_gpu = r.weights_bytes_per_gpu - ceil_div(stored, gpus);
        return Done{};
    }

    // A computer whose GPU shares the system's memory: what share the GPU uses, by whose rule (gpu.h); where the GPU
    // takes what the system leaves free, the system's own share is not known here.
    void unified_memory_notes(const GpuSpec& g) {
        if (g.unified_memory_bytes == 0) return;
        const double share = static_cast<double>(g.memory_bytes) / static_cast<double>(g.unified_memory_bytes);
        const bool default_share =
            g.memory_bytes == static_cast<std::uint64_t>(static_cast<double>(g.unified_memory_bytes) * g.gpu_share);
        r.notes.push_back("unified memory: the GPU uses " + format_bytes(g.memory_bytes) + " (" +
                          number_text(100 * share, Notation::fixed, 0) + "%) of the machine's " +
                          format_bytes(g.unified_memory_bytes) + (default_share ? ": " + g.share_rule : ", as given") +
                          "; --gpu-memory SIZE sets another share");
        if (default_share && share >= 1)
            r.warnings.emplace_back(
                "not exact: the GPU shares all of the machine's memory with the system; what the firmware reserves and "
                "what the operating system and other programs hold are not counted (give --gpu-memory SIZE for what "
                "is left to it)");
    }

    // llama.cpp on one GPU: which layers live in VRAM and which in RAM (offload.h); the GPU's weights are its part.
    // Its settings elsewhere change nothing, and say so.
    Result<Done> split() {
        const LlamaCppSettings& s = d.llama_cpp;
        const bool asked = s.gpu_layers || s.gpu_layers_auto || s.cpu_moe_layers > 0 || s.no_kv_offload;
        if (!runs_llama_cpp(d.engine)) {
            if (asked)
                r.notes.push_back("--gpu-layers, --n-cpu-moe and --no-kv-offload are llama.cpp's: " +
                                  std::string(to_string(d.engine)) + " keeps every layer on the GPU");
            return Done{};
        }
        if (gpus > 1 || d.draft || d.mtp) {
            if (asked)
                r.notes.emplace_back(
                    "not modelled: llama.cpp's split between GPU and host with several GPUs or a draft; every layer "
                    "is counted on the GPUs");
            return Done{};
        }
        auto o = llama_cpp_offload(model_arch, arch, kv_dtype, workload, d);
        if (!o) return o.errors();
        offload = *o;
        r.weights_bytes_per_gpu = offload->weights_gpu_bytes;
        return Done{};
    }

    // The cache the batch needs on each GPU, in the engine's layout.
    Result<Done> cache_needs() {
        r.kv_bytes_per_gpu = kv->per_gpu_bytes;
        r.state_bytes_per_gpu = kv->state_bytes_per_gpu;
        r.memory_bytes_per_gpu_needed = r.plain_memory_bytes_per_gpu = kv->memory_bytes_per_gpu;
        // vLLM's hybrid cache manager lays out a model with recurrent and attention layers in pages of its own.
        if (d.engine == Engine::vllm) r.engine_pages = vllm_hybrid_pages(*layout_or, arch, workload, parallel);
        if (!workload_in.full_window && sglang_keeps_full_context(d, *cache_arch))
            r.warnings.emplace_back(
                "not exact: SGLang keeps the whole context on sliding-window and chunked-attention layers, as counted "
                "here, for every family but those it gives a second pool (gpt-oss, Llama 4, MiMo-V2, Step-3.5, Gemma "
                "4, "
                "Laguna, DeepSeek V4: 0.8 x the full layers' tokens, --swa-full-tokens-ratio), which this does not "
                "model "
                "and a model's shape does not tell apart: for them the figure is off by up to 18% (over beyond 1.25 "
                "windows, under below); for the rest, Gemma 2 and 3 among them, it is SGLang's (sglang/srt/configs/"
                "model_config.py is_hybrid_swa_model, model_executor/pool_configurator.py)");
        // Which side of the change 0.13 - 0.15 are on is not certain (an EAGLE or MTP drafter keeps the whole context
        // in every release, so that figure is).
        const std::uint64_t minor = vllm_minor(d);
        const bool freeing = minor >= kVllmChunkedHybridMinor, keeps_full = vllm_keeps_full_context(d, *cache_arch);
        if (d.engine == Engine::vllm && !workload_in.full_window && cache_arch->count_layers(LayerKind::chunked) > 0 &&
            cache_arch->count_layers(LayerKind::full) > 0 && minor >= kVllmChunkedUnsureFirst &&
            minor <= kVllmChunkedUnsureLast && freeing != keeps_full)
            r.warnings.push_back(
                "not exact: whether vLLM 0." + std::to_string(minor) +
                " frees the chunked-attention layers' blocks before the current chunk by default is not known here "
                "(its "
                "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE became \"1\" between 0.12 and 0.16); counted as " +
                (freeing ? "freeing them, as --vllm-version 0.16 does; 0.12 gives the other figure"
                         : "keeping the whole context, as --vllm-version 0.12 does; 0.16 gives the other figure"));
        if (!workload_in.full_window && keeps_full) {
            if (cache_arch->has_sliding_layers())
                r.notes.emplace_back(
                    "vLLM before 0.10 (no hybrid KV cache manager) keeps the whole context on the sliding-window "
                    "layers "
                    "beside full ones, as --full-window counts them: its block tables are the model's, every layer's "
                    "(vllm/v1/core/kv_cache_utils.py unify_hybrid_kv_cache_specs; V0's block manager)");
            else
                r.notes.push_back(
                    "vLLM 0." + std::to_string(minor) +
                    " keeps the whole context on the chunked-attention layers beside full ones, as --full-window "
                    "counts "
                    "them: its hybrid KV cache manager, which frees the blocks before the current chunk, " +
                    (freeing ? std::string("is off for models with attention_chunk_size under EAGLE or MTP drafting")
                     : minor < 10 ? std::string("came with 0.10")
                                  : "is off for models with attention_chunk_size before 0." +
                                        std::to_string(kVllmChunkedHybridMinor) +
                                        " unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1") +
                    " (vllm/config/vllm.py, vllm/envs.py; vllm/v1/core/kv_cache_utils.py unify_hybrid_kv_cache_specs "
                    "makes them full-attention specs)");
        }
        // Speculative decoding keeps a state page per drafted token beside each running state: as many as the MTP
        // layers when --mtp serves them (vllm/config/speculative.py: num_speculative_tokens defaults to n_predict).
        if (r.engine_pages && d.mtp) r.engine_pages->speculative_blocks = checkpoint.mtp_layers;
        if (offload) {  // the layers on the GPU, their cache there unless it is kept in host memory
            r.state_bytes_per_gpu = offload->state_on_gpu_bytes;
            r.kv_bytes_per_gpu = offload->kv_on_gpu_bytes - offload->state_on_gpu_bytes;
            r.memory_bytes_per_gpu_needed = r.plain_memory_bytes_per_gpu = offload->kv_on_gpu_bytes;
        }
        if (r.engine_pages) {
            const Checked need = r.engine_pages->bytes_per_sequence(workload.context_tokens) * workload.batch;
            if (need.overflow())
                return overflow_error(Field::batch, "the cache of " + std::to_string(workload.batch) + " sequences");
            r.memory_bytes_per_gpu_needed = need.value();
        }

        return Done{};
    }

    // What the engine lets the KV cache use on each GPU, and whether the need fits in it.
    Result<Done> budget_of_engine() {
        const i128 mem = d.gpu.memory_bytes, w = r.weights_bytes_per_gpu;
        EngineReserve parts = engine_reserve(model_arch, workload, parallel, d);
        r.reserve_items = std::move(parts.items);
        if (offload)  // the GPU's compute buffer and overhead as the split reserves them (offload.h)
            for (ReserveItem& item : r.reserve_items) {
                if (item.kind == ReserveKind::compute_buffer || item.kind == ReserveKind::activation)
                    item.bytes = offload->compute_buffer_gpu_bytes;
                if (item.kind == ReserveKind::overhead) item.bytes = offload->overhead_gpu_bytes;
            }
        r.reserve_estimated = parts.estimated;
        r.notes.insert(r.notes.end(), parts.notes.begin(), parts.notes.end());
        i128 reserve = 0;
        for (const ReserveItem& item : r.reserve_items) reserve += item.bytes;
        const double fraction = effective_fraction(as_drafted(d, checkpoint), parallel);
        r.fraction = fraction;
        if (d.engine == Engine::sglang && !d.fraction_given) {
            const SglangDefault g = sglang_default_fraction(as_drafted(d, checkpoint), parallel);
            r.notes.push_back("SGLang's default mem_fraction_static for this GPU and layout: " +
                              number_text(g.fraction, Notation::fixed, 3) + " = 1 - " + format_count(g.reserved_mib) +
                              " MiB kept back (" + sglang_reserved_terms(g) + ") of " +
                              format_bytes(d.gpu.memory_bytes) +
                              " (sglang/srt/server_args.py, v0.5.3 on); --utilization sets it");
        }
        i128 unused = 0;
        switch (d.engine) {
            case Engine::vllm:
            case Engine::llama_cpp:
            case Engine::ollama:
            case Engine::plain:
                budget = scale(mem, fraction) - w - reserve;
                unused = mem - scale(mem, fraction);
                break;
            case Engine::sglang: {
                // model_runner profile_max_num_token: rest = free after loading - free before x (1 - fraction), the
                // free memory before loading being the GPU's less what is already in use (the first reserve item); a
                // reserve given is kept back beside it.
                const i128 in_use = r.reserve_items.front().bytes;
                const i128 before = mem - in_use;
                budget = scale(before, fraction) - w - (reserve - in_use);
                unused = before - scale(before, fraction);
                break;
            }
            case Engine::tensorrt_llm: {
                // The fraction of what is free once the model is loaded: the C++ runtime's
                // cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp calculateMaxNumBlocks (free memory after the
                // engine, its execution context and buffers), the PyTorch backend's
                // tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator (total less the peak of a profiling run). The
                // reserve stands for what is in use then.
                const i128 free_after_load = mem - w - reserve;
                budget = free_after_load > 0 ? scale(free_after_load, fraction) : free_after_load;
                unused = free_after_load > 0 ? free_after_load - budget : 0;
                break;
            }
        }
        r.reserve_bytes_per_gpu = clamp_u64(reserve);
        r.free_bytes_per_gpu = static_cast<std::uint64_t>(std::max<i128>(0, unused));
        r.kv_budget_bytes_per_gpu = clamp_i64(budget);
        const i128 all_budget = budget * static_cast<i128>(gpus);
        if (all_budget > std::numeric_limits<std::int64_t>::max() ||
            all_budget < std::numeric_limits<std::int64_t>::min())
            return overflow_error(Field::gpus, "the KV budget of " + format_count(gpus) + " GPUs");
        r.kv_budget_bytes = static_cast<std::int64_t>(all_budget);
        kv_need = r.memory_bytes_per_gpu_needed;
        r.headroom_bytes_per_gpu = clamp_i64(budget - kv_need);
        r.fits = budget >= 0 && budget >= kv_need && (!offload || offload->fits_host);
        if (budget < 0) r.notes.emplace_back("the weights and reserves alone exceed the memory the engine may use");
        // The headroom's magnitude must be shown as a positive number: never the one int64 value with no negation.
        r.headroom_bytes_per_gpu = std::max(r.headroom_bytes_per_gpu, -std::numeric_limits<std::int64_t>::max());
        return Done{};
    }

    // vLLM's start check, which a model with sliding layers may fail although a decoding batch fits.
    void startup_check() {
        // vLLM refuses to start unless one request of max_model_len fits as it counts one at most, a sliding group
        // holding a prefill chunk beside its window: with sliding layers, more than a decoding sequence keeps.
        // With no budget at all the weights and reserves are the reason, said above; the check is not reached.
        if (r.engine_pages && r.engine_pages->window > 0 && budget > 0) {
            const std::uint64_t chunk = vllm_batch(workload, d).max_num_batched_tokens;
            const Checked start = r.engine_pages->startup_bytes(workload.context_tokens, chunk);
            r.startup_bytes_per_gpu = start.saturated();
            startup_limit =
                r.engine_pages->startup_max_tokens(budget > 0 ? static_cast<std::uint64_t>(budget) : 0, chunk);
            const i128 start_need = r.startup_bytes_per_gpu;
            if (start_need > budget) {
                r.short_at_startup = r.fits;  // a decoding batch fits: it is the start that does not
                r.fits = false;
                if (start_need > kv_need) {
                    r.headroom_bytes_per_gpu =
                        std::max(clamp_i64(budget - start_need), -std::numeric_limits<std::int64_t>::max());
                    r.headroom_from_startup = true;
                }
                r.warnings.push_back(
                    "vLLM would not start: its check that one request of max_model_len " +
                    format_count(workload.context_tokens) + " tokens fits needs " +
                    (start.overflow() ? std::string("more than 64 bits of bytes") : format_bytes(start.value())) +
                    " per GPU (each " +
                    (r.engine_pages->chunked
                         ? "chunked group counted with its chunk and a prefill chunk of " + format_count(chunk) +
                               " tokens (max_num_batched_tokens)"
                         : "sliding group counted with its window less one, a prefill chunk of " + format_count(chunk) +
                               " tokens (max_num_batched_tokens) and a block "
                               "more") +
                    "), more than the KV budget of " +
                    format_bytes(static_cast<std::uint64_t>(std::max<i128>(0, budget))) +
                    "; the longest context it passes is " + format_count(startup_limit) +
                    " tokens, and a smaller --max-num-batched-tokens lowers the need (vllm/v1/kv_cache_interface.py " +
                    (r.engine_pages->chunked ? "ChunkedLocalAttentionSpec" : "SlidingWindowSpec") +
                    ".max_memory_usage_bytes, vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory)");
            }
        }
    }

    // The most sequences, tokens and context the budget holds.
    void capacity() {
        if (offload && offload->splits()) return split_capacity_of();
        const KvLayout& layout = *layout_or;
        const std::uint64_t budget_u = budget > 0 ? static_cast<std::uint64_t>(budget) : 0;
        // A sequence needs its KV cache and its recurrent state; both count against the budget.
        const Checked per_seq = r.engine_pages
                                    ? r.engine_pages->bytes_per_sequence(workload.context_tokens)
                                    : layout.gpu_bytes_per_sequence(workload.context_tokens, Memory::kv_and_state);
        r.max_batch = per_seq.value() > 0 ? budget_u / per_seq.value() : 0;
        if (startup_limit < workload.context_tokens) r.max_batch = 0;  // vLLM would not start at this context
        const Checked per_token = layout.bytes_per_token_per_gpu();
        const std::uint64_t after_state = budget_u > r.state_bytes_per_gpu ? budget_u - r.state_bytes_per_gpu : 0;
        r.tokens_capacity = per_token.value() > 0 ? after_state / per_token.value() : 0;

        // Largest context whose cache and state for `batch` sequences fit: one token before it first exceeds
        // the budget (0 when the state alone does not fit).
        const std::uint64_t cap = arch.max_positions > 0 ? arch.max_positions : (1ull << 40);
        const auto over =
            context_where_kv_exceeds(layout, workload, budget_u, KvScope::heaviest_gpu, cap, Memory::kv_and_state);
        r.max_context = over ? (*over > 0 ? *over - 1 : 0) : cap;
        r.max_context_limited_by_model = !over && arch.max_positions > 0;
        // No max positions and a memory that stops growing (no KV cache, or every attention layer keeps only its
        // window, as RecurrentGemma's): the search's bound is no limit of the model's, and is never shown as one.
        auto flat = [&](auto bytes_at) { return bytes_at(cap / 2).value() == bytes_at(cap).value(); };
        r.max_context_unbounded = !over && arch.max_positions == 0 && flat([&](std::uint64_t t) {
            return layout.gpu_bytes_per_sequence(t, Memory::kv_and_state);
        });
        if (r.engine_pages) {
            const std::uint64_t tokens = std::min(r.engine_pages->max_tokens(budget_u, workload.batch), startup_limit);
            r.max_context = std::min(cap, tokens);
            r.max_context_limited_by_model = tokens > cap && arch.max_positions > 0;
            r.max_context_unbounded = tokens >= cap && arch.max_positions == 0 &&
                                      flat([&](std::uint64_t t) { return r.engine_pages->bytes_per_sequence(t); });
            hybrid_pages_note();
        }
    }

    // A split model's capacity: the longest context and largest batch whose split fits the GPU and the host.
    void split_capacity_of() {
        const std::uint64_t cap = arch.max_positions > 0 ? arch.max_positions : (1ull << 40);
        constexpr std::uint64_t kBatchCap = 1ull << 20;  // far past any machine that splits a model
        // The layers as chosen for this context stay where they are while the context and batch grow.
        Deployment fixed = d;
        fixed.llama_cpp.gpu_layers = offload->gpu_layers;
        fixed.llama_cpp.gpu_layers_auto = false;
        const SplitCapacity c = split_capacity(model_arch, arch, kv_dtype, workload, fixed, cap, kBatchCap);
        r.max_context = c.max_context;
        r.max_context_limited_by_model = c.max_context == cap && arch.max_positions > 0;
        // No max positions and no memory limit before the search's bound: no limit, never the bound as a figure.
        r.max_context_unbounded = c.max_context == cap && arch.max_positions == 0;
        r.max_batch = c.max_batch;
        if (c.max_batch == kBatchCap)
            r.notes.push_back(
                "no memory limits the batch before " + format_count(kBatchCap) + " sequences" +
                (offload->host_memory_bytes == 0 ? ": the host's RAM is not known (--host-memory)" : std::string()));
        // The tokens both memories hold at this batch: the longest context's, every sequence.
        const Checked tokens = Checked(r.max_context) * workload.batch;
        r.tokens_capacity = tokens.saturated();
    }

    // The split's own notes, and what to ask of llama.cpp when the model does not fit whole.
    void split_notes() {
        if (!offload) return;
        const Offload& o = *offload;
        r.notes.insert(r.notes.end(), o.notes.begin(), o.notes.end());
        r.notes.push_back("llama.cpp keeps the token embedding (" + format_bytes(o.input_bytes) +
                          ") in host memory (src/llama-model.cpp: the input layer stays on the CPU)");
        if (o.gpu_layers_auto)
            r.notes.push_back(
                "--gpu-layers auto: " + format_count(o.gpu_layers) + " of " + format_count(o.total_layers) +
                " layers leave llama.cpp's --fit target (" + format_bytes(kLlamaCppFitTargetBytes) +
                ") free (common/common.h fit_params_target; --fit is on by default when -ngl is not given); not "
                "modelled: --fit " +
                (d.engine == Engine::ollama ? std::string("keeps the context Ollama gives it (-c), but ")
                                            : std::string("also lowers a context it was not given (to 4,096 at the "
                                                          "least) and ")) +
                "moves experts to the CPU before whole layers");
        if (!o.fits_gpu && o.most_gpu_layers > 0 && !o.gpu_layers_auto)
            r.notes.push_back("--gpu-layers " + format_count(o.most_gpu_layers) +
                              " fits the GPU: " + format_count(o.most_gpu_layers) + " of " +
                              format_count(o.total_layers) + " layers, the rest in host memory" +
                              (o.most_fit_host ? std::string() : ", more than the host's RAM holds"));
        if (!o.fits_gpu && o.most_gpu_layers == 0)
            r.notes.emplace_back(
                "not one layer fits the GPU beside its runtime and compute buffer (which llama.cpp keeps there at "
                "--gpu-layers 0 too): the model runs on the CPU, or on a larger GPU");
        if (!o.fits_host)
            r.notes.push_back("the host's part (" + format_bytes(o.host_bytes) + ") is more than its RAM (" +
                              format_bytes(o.host_memory_bytes) + ")");
        r.offload = std::move(offload);
    }

    // A sliding group's blocks, as the notes say them.
    static std::string sliding_group_text(const HybridPages& h) {
        const std::uint64_t blocks = h.sliding_blocks(h.window);
        return "a sliding group holding its " + format_count(h.window) + "-token window's " +
               format_count_of(blocks, "block", "blocks") + " and one more where the window starts inside a block";
    }

    void hybrid_pages_note() {
        const HybridPages& h = *r.engine_pages;
        const HybridPages::Stage& st = h.stages.front();
        if (h.window > 0 && h.state_bytes == 0) {
            const std::uint64_t padding = h.model_group_size * (st.attention_groups + st.sliding_groups) -
                                          h.model_full_layers - h.model_sliding_layers;
            const std::string kind = h.chunked ? "chunked" : "sliding";
            r.notes.push_back(
                "vLLM's hybrid cache manager: the " + format_count(h.model_sliding_layers) +
                (h.chunked ? " chunked-attention and " : " sliding-window and ") + format_count(h.model_full_layers) +
                " full-attention layers in groups of " + format_count(h.model_group_size) + " (" +
                std::to_string(st.sliding_groups) + " " + kind + ", " + std::to_string(st.attention_groups) + " full" +
                (padding > 0
                     ? "; " + format_count_of(padding, "padding layer", "padding layers") + ", as vLLM adds them"
                     : "") +
                (h.stages.size() > 1 ? "; each pipeline stage keeps every group, with its share of their layers" : "") +
                "), blocks of " + format_count(h.attention_block) + " tokens, " +
                (h.chunked ? "a chunked group holding the current chunk's blocks, " + format_count(h.window_blocks()) +
                                 " at most"
                           : sliding_group_text(h)) +
                "; " + format_bytes(r.memory_bytes_per_gpu_needed) + " per GPU against " +
                format_bytes(r.plain_memory_bytes_per_gpu) +
                " as the plain per-layer sum (vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size, "
                "vllm/v1/core/single_type_kv_cache_manager.py " +
                (h.chunked ? "ChunkedLocalAttentionManager" : "SlidingWindowManager") +
                "; --engine plain for the plain figure)");
        } else {
            // Padding: every group holds group-size layers (a state layer that attends too, Falcon-H1's, fills one of
            // each).
            const std::uint64_t groups = st.attention_groups + st.sliding_groups + st.state_groups;
            std::uint64_t layers = h.model_full_layers + h.model_sliding_layers;
            for (std::uint64_t l = 0; l < arch.layers; ++l) layers += arch.layer(l).keeps_state() ? 1 : 0;
            const std::uint64_t padding =
                h.model_group_size * groups > layers ? h.model_group_size * groups - layers : 0;
            r.notes.push_back(
                "vLLM's hybrid cache manager: attention blocks of " + format_count(h.attention_block) +
                " tokens so that one page (" + format_count(h.page_bytes) +
                " bytes) holds a layer's recurrent state (" + format_count(h.state_bytes) +
                " bytes, padded), layers in groups of " + format_count(h.model_group_size) + " (" +
                (h.window > 0 ? (st.attention_groups > 0 ? std::to_string(st.attention_groups) + " full, " : "") +
                                    std::to_string(st.sliding_groups) + " sliding"
                              : std::to_string(st.attention_groups) + " attention") +
                ", " + std::to_string(st.state_groups) + " state)" +
                (padding > 0
                     ? "; " + format_count_of(padding, "padding layer", "padding layers") + ", as vLLM adds them"
                     : "") +
                (h.window > 0 ? ", " + sliding_group_text(h) +
                                    " (vllm/v1/core/single_type_kv_cache_manager.py SlidingWindowManager)"
                              : std::string()) +
                "; " + format_bytes(r.memory_bytes_per_gpu_needed) + " per GPU against " +
                format_bytes(r.plain_memory_bytes_per_gpu) +
                " as the plain per-layer sum (vllm/platforms/interface.py, vllm/v1/core/kv_cache_utils.py; "
                "--engine plain for the plain figure)");
        }
    }

    // What the report says beside its figures: weights, MTP and draft, the state.
    void closing_notes() {
        split_notes();
        if (r.max_context_unbounded) r.unbounded_reason = unbounded_context_reason(arch);
        r.weights_exact = d.weights_bytes_exact > 0;
        r.weights_source = r.weights_exact && d.weights_source.empty()
                               ? format_count(d.weights_bytes_exact) + " bytes, exact"
                               : d.weights_source;
        if (auto mismatch = weights_mismatch(model_arch, d)) r.warnings.push_back(std::move(*mismatch));
        for (std::string& said : engine_warnings(d, kv_dtype, parallel_in)) r.warnings.push_back(std::move(said));
        if (auto unserved = unserved_model_warning(model_arch, d.engine)) r.warnings.push_back(std::move(*unserved));
        if (!r.weights_exact && d.gguf_mix)
            r.notes.push_back("weights estimated as a GGUF " + gguf_mix_name(*d.gguf_mix) +
                              " holds them: llama-quantize's type for each tensor of the model's shape "
                              "(src/llama-quant.cpp llama_tensor_get_type); a GGUF file (--gguf) gives them exactly");
        if (!r.weights_exact && d.weight_quant) {
            r.weights_quant = weight_quant_label(loaded_weight_quant(d));
            if (auto q = quantized_weights(model_arch, loaded_weight_quant(d), d.weight_dtype, false)) {
                r.weights_quantized_parameters = q->quantized;
                r.notes.push_back("weights estimated for the checkpoint's quantization (" + r.weights_quant +
                                  "): " + format_count(q->quantized) + " parameters quantized, the other " +
                                  format_count(q->rest) + " (embeddings, norms, routers, …) in " +
                                  std::string(to_string(d.weight_dtype)) +
                                  ", as vLLM loads them; an estimate from the parameter count");
                if (d.weight_quant->pad_hidden > 1 || d.weight_quant->pad_intermediate > 1)
                    r.notes.emplace_back(
                        "the experts are padded as vLLM's Marlin MXFP4 backend lays them out (A100; H100 up to 0.10); "
                        "its Triton backend (Hopper, later versions) pads none, about 8% less, and FlashInfer's on "
                        "Blackwell pads both sizes to 256, about 4% more (vllm/model_executor/layers/fused_moe/oracle/"
                        "mxfp4.py)");
            }
        }
        if (params.estimated && !r.weights_exact)
            r.notes.push_back("parameter count estimated from the architecture: " + format_count(params.total));
        // Under pipeline parallelism the weights are split evenly here; vLLM keeps the embedding on the first stage and
        // the LM head (a copy of a tied embedding too) on the last, beside their layers (vllm/model_executor/models/
        // utils.py make_layers, vllm/distributed/utils.py get_pp_indices): those GPUs hold more than the even share.
        if (parallel.pp > 1 && model_arch.vocab_size > 0) {
            const Checked embedding = Checked(model_arch.vocab_size) * model_arch.hidden_size;
            if (auto bytes = weights_bytes(embedding.value(), d.weight_dtype); bytes && !embedding.overflow()) {
                const std::uint64_t per_gpu = ceil_div(*bytes, parallel.tp);
                r.notes.push_back(
                    std::string(kEvenPipelineNote) + " over the " + std::to_string(parallel.pp) +
                    " pipeline stages; engines keep the embedding (" + format_bytes(per_gpu) +
                    " per GPU) on the first stage and the LM head (" + format_bytes(per_gpu) +
                    (model_arch.tied_embeddings ? ", a copy of the tied embedding" : "") +
                    ") on the last (vLLM: utils.py make_layers), so their GPUs hold up to that much more than shown");
            }
        }
        if (r.state_bytes_per_gpu > 0)
            r.notes.push_back("the recurrent state of " + format_count_of(workload.batch, "sequence", "sequences") +
                              " takes " + format_bytes(r.state_bytes_per_gpu) +
                              " per GPU beside the KV cache, whatever the context");
        if (d.mtp && checkpoint.mtp_layers == 0)
            r.notes.emplace_back(
                "--mtp: the model has no multi-token-prediction layers to serve as a draft "
                "(num_nextn_predict_layers or mtp_num_hidden_layers in its config.json); none counted");
        else if (d.mtp)
            for (const std::string& reason : checkpoint.mtp_not_exact) r.warnings.push_back("not exact: " + reason);
        if (d.mtp && checkpoint.mtp_layers > 0)
            r.notes.push_back("speculative decoding with the model's " +
                              format_count_of(checkpoint.mtp_layers, "MTP layer", "MTP layers") + ": " +
                              format_count(parameters(model_arch).total - parameters(checkpoint).total) +
                              " parameters (" + (r.weights_exact ? "in the files' exact bytes" : "in the weights") +
                              ") and their KV cache more (vLLM's --speculative-config method mtp); the decode estimate "
                              "is the model's "
                              "own step, as the speed-up depends on how many drafted tokens are accepted");
        else if (checkpoint.mtp_layers > 0)
            r.notes.push_back("the checkpoint's " + format_count_of(checkpoint.mtp_layers, "MTP layer", "MTP layers") +
                              (checkpoint.mtp_layers == 1 ? " is" : " are") + " not served" +
                              (r.weights_exact ? ", though the files' exact bytes hold it" : " and not counted") +
                              " (--mtp serves them as a speculative draft)");
        if (d.draft) draft_notes();
        if (d.mtp && checkpoint.mtp_layers > 0 && model_arch.state_layers() > 0)
            r.notes.push_back(
                r.engine_pages
                    ? "vLLM keeps " +
                          format_count_of(checkpoint.mtp_layers, "more recurrent-state page",
                                          "more recurrent-state pages") +
                          " per layer group and sequence, one per drafted token (num_speculative_tokens, its default: "
                          "the MTP layers' count; model_executor/layers/mamba/abstract.py num_speculative_blocks)"
                    : "not exact: vLLM keeps one more recurrent-state page per layer for each drafted token "
                      "(model_executor/layers/mamba/abstract.py num_speculative_blocks); this engine's layout does not "
                      "count them");
        // A separate draft keeps the same pages beside a model's recurrent state, one per drafted token; vLLM has no
        // default for a draft's num_speculative_tokens, so none is counted, and that is said.
        if (d.draft && model_arch.state_layers() > 0)
            r.notes.emplace_back(
                "not exact: with a draft model vLLM keeps one more recurrent-state page per layer group and sequence "
                "for "
                "each drafted token (num_speculative_tokens, which the draft's --speculative-config sets; "
                "model_executor/layers/mamba/abstract.py num_speculative_blocks); they are not counted here");
    }

    void draft_notes() {
        const DraftModel& dm = *d.draft;
        const std::string shared = dm.method == DraftMethod::draft_model ? std::string()
                                   : dm.method == DraftMethod::eagle
                                       ? "; the model's embedding and LM head serve it (not counted again)"
                                       : "; the model's embedding serves it, its LM head over " +
                                             format_count(dm.draft_vocab > 0 ? dm.draft_vocab : dm.arch.vocab_size) +
                                             " tokens is its own";
        r.notes.push_back(
            "speculative decoding with the draft " + dm.name + " (vLLM's --speculative-config method " +
            std::string(to_string(dm.method)) + "): " + format_count(r.draft_parameters) + " parameters" +
            (r.draft_parameters_estimated ? " (estimated)" : "") + ", " + format_bytes(r.draft_weights_bytes) + " " +
            draft_weights_text(dm, d.weight_dtype) + ", and its " +
            format_count_of(dm.arch.attention_layers(), "attention layer's", "attention layers'") + " KV cache, " +
            format_count(r.draft_kv_bytes_per_token) + " bytes a token, in the model's cache" + shared +
            "; the decode estimate is the model's own step");
        if (r.weights_exact && dm.weights_bytes_exact == 0)
            r.notes.push_back("not exact: the draft's " + format_bytes(r.draft_weights_bytes) +
                              " are estimated beside the model files' exact bytes");
        if (d.engine == Engine::vllm && !d.fixed_reserve)
            r.notes.emplace_back(
                "not exact: the reserve is the model's profile run; the draft's own run and CUDA graphs are not "
                "counted (vllm/v1/worker/gpu_model_runner.py runs the drafter in its dummy run)");
        if (runs_llama_cpp(d.engine) && dm.method != DraftMethod::draft_model)
            r.notes.push_back("llama.cpp serves a separate draft model (llama-server -md); the " +
                              std::string(to_string(dm.method)) + " method is vLLM's and SGLang's");
        if (dm.method == DraftMethod::draft_model && dm.arch.vocab_size != checkpoint.vocab_size &&
            dm.arch.vocab_size > 0 && checkpoint.vocab_size > 0)
            r.notes.push_back("the draft's vocabulary (" + format_count(dm.arch.vocab_size) + ") is not the model's (" +
                              format_count(checkpoint.vocab_size) +
                              "): vLLM refuses a draft model whose vocabulary differs "
                              "(vllm/v1/spec_decode/draft_model.py)");
    }

    const Architecture& checkpoint;
    const KvDtype kv_dtype;
    const Workload& workload_in;
    const Parallelism& parallel_in;
    const EngineLaunch launch;  // the deployment as its engine starts it (Ollama's settings for llama.cpp)
    const Deployment& d;
    const Parallelism parallel;
    const ServedLayers served;
    const Architecture& model_arch;
    const Architecture* cache_arch;
    const Workload workload;
    const std::uint64_t ubatch;
    const Architecture arch;
    const std::uint64_t gpus;
    FitReport r;
    std::optional<KvLayout> layout_or;
    std::optional<KvCacheReport> kv;
    std::optional<Offload> offload;  // llama.cpp's split on one GPU
    ParameterCount params;
    std::uint64_t stored = 0;      // the model's weights, before a draft's
    i128 budget = 0, kv_need = 0;  // per GPU: what the engine lets the cache use, what the batch needs
    std::uint64_t startup_limit = std::numeric_limits<std::uint64_t>::max();
};

}  // namespace

Result<Architecture> fit_cache_architecture(const Architecture& checkpoint, const Deployment& d, const FitReport& fit) {
    auto served = served_layers(checkpoint, d);
    if (!served) return served.errors();
    return engine_architecture(served->cache, d.engine, fit.ubatch > 0 ? fit.ubatch : llama_cpp_ubatch(d));
}

Result<FitReport> fit(const Architecture& checkpoint, KvDtype kv_dtype, const Workload& workload_in,
                      const Parallelism& parallel_in, const Deployment& d) {
    auto served = served_layers(checkpoint, d);
    if (!served) return served.errors();
    return FitStages(checkpoint, kv_dtype, workload_in, parallel_in, d, *served).run();
}

std::optional<std::string> unserved_model_warning(const Architecture& model, Engine engine) {
    // RecurrentGemma's RG-LRU layers: vLLM and SGLang have no model for it (no recurrent_gemma.py in
    // vllm/model_executor/models or python/sglang/srt/models); TensorRT-LLM serves it (examples/recurrentgemma).
    if (model.recurrent && model.recurrent->kind == StateKind::rg_lru &&
        (engine == Engine::vllm || engine == Engine::sglang))
        return "not exact: " + std::string(engine == Engine::vllm ? "vLLM" : "SGLang") +
               " does not serve RecurrentGemma (no recurrent_gemma.py among its models): the figures are its memory "
               "rules applied to these layers; TensorRT-LLM serves it";
    return std::nullopt;
}

std::string reserve_text(const FitReport& f, UnitSystem units) {
    std::string text;
    for (const ReserveItem& item : f.reserve_items)
        text += (text.empty() ? "" : ", ") + item.name + " " + format_bytes(item.bytes, units);
    return text.empty() ? "none" : text;
}

std::string kv_budget_text(const FitReport& f, UnitSystem units) {
    const std::int64_t budget = f.kv_budget_bytes_per_gpu;
    if (budget >= 0) return format_bytes(static_cast<std::uint64_t>(budget), units) + " per GPU";
    return "none: the weights and reserves exceed the memory the engine may use by " +
           format_bytes(static_cast<std::uint64_t>(-(budget + 1)) + 1, units) + " per GPU";
}

}  // namespace kvscope
