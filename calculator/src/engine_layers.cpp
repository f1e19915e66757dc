// What each engine keeps of the model's layers: the whole context or the window on sliding and chunked layers, the
// layers of each pipeline stage, llama.cpp's padded windows and f32 state.
#include "kvscope/calculator/deployment.h"

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/engine_reserve.h"

namespace kvscope {

bool vllm_keeps_full_context(const Deployment& d, const Architecture& cache_arch) {
    if (d.engine != Engine::vllm || cache_arch.count_layers(LayerKind::full) == 0) return false;
    const std::uint64_t minor = vllm_minor(d);
    // V0's block tables are shared by every layer, so a sliding layer beside full ones holds the blocks of the
    // whole context (its kernel reads only the window); V1 before the hybrid KV cache manager turned sliding specs
    // into full ones (vllm/v1/core/kv_cache_utils.py unify_hybrid_kv_cache_specs), as it still does when the manager
    // is disabled. The manager came with 0.10.
    if (cache_arch.has_sliding_layers() && minor < 10) return true;
    // Chunked-local layers (Llama 4) kept the whole context too until the manager grouped them: before 0.10, and from
    // 0.10.1 while vllm/config/vllm.py disabled the manager for any model with attention_chunk_size unless
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (vllm/envs.py, default "0" from PR #21761 until PR #29627
    // made it "1"); unify_hybrid_kv_cache_specs then makes them FullAttentionSpec, blocks for every token.
    // With an EAGLE drafter the manager is off for them in every release (vllm/config/vllm.py: "Hybrid KV cache manager
    // is not yet supported with chunked local attention + eagle"; SpeculativeConfig.use_eagle: eagle, eagle3, mtp).
    const bool eagle = (d.draft && d.draft->method != DraftMethod::draft_model) || d.mtp;
    return cache_arch.count_layers(LayerKind::chunked) > 0 && (minor < kVllmChunkedHybridMinor || eagle);
}

Workload engine_workload(const Workload& workload, const Deployment& d, const Architecture& cache_arch) {
    Workload w = workload;
    if (runs_llama_cpp(d.engine)) w.block_size = 1;
    if (vllm_keeps_full_context(d, cache_arch) || sglang_keeps_full_context(d, cache_arch)) w.full_window = true;
    return w;
}

bool sglang_keeps_full_context(const Deployment& d, const Architecture& cache_arch) {
    // SGLang keeps every layer in one token pool (mem_cache/memory_pool.py MHATokenToKVPool over all layers; the window
    // is the attention kernel's alone) unless its hybrid SWA memory is on, which it is only for the families listed in
    // configs/model_config.py is_hybrid_swa_model (gpt-oss, Llama 4, MiMo-V2, Step-3.5, Gemma 4, Laguna, DeepSeek V4);
    // Gemma 2 and 3 are forced off (model_overrides/gemma2_gemma3.py). Those families' second pool is not modelled.
    return d.engine == Engine::sglang &&
           (cache_arch.has_sliding_layers() || cache_arch.count_layers(LayerKind::chunked) > 0);
}

Parallelism engine_parallelism(const Parallelism& parallel, Engine engine) {
    Parallelism p = parallel;
    // llama.cpp's layer split (--split-mode layer) follows --tensor-split or the GPUs' free memory
    // (src/llama-model.cpp load_tensors); on GPUs alike it is taken as the even split with the first stages' extra.
    p.split = engine == Engine::vllm     ? StageSplit::before_last
              : engine == Engine::sglang ? StageSplit::last
                                         : StageSplit::first;
    return p;
}

Architecture engine_architecture(const Architecture& arch, Engine engine, std::uint64_t ubatch) {
    if (!runs_llama_cpp(engine)) return arch;
    // llama.cpp keeps a sliding (or chunked) layer's window and one micro-batch more, padded to 256 tokens, per
    // sequence (src/llama-kv-cache-iswa.cpp: size_swa = min(n_ctx, GGML_PAD(n_swa + n_ubatch, 256)) for each
    // sequence's stream; common/common.h: n_ubatch = 512).
    Architecture a = arch;
    for (LayerSpec& s : a.layer_specs)
        if ((s.kind == LayerKind::sliding || s.kind == LayerKind::chunked) && s.window > 0)
            s.window = round_up(s.window + ubatch, 256).value();
    // It keeps recurrent states in f32 whatever the model's dtype or the KV cache type (src/llama-model.cpp
    // create_memory: llama_memory_recurrent / llama_memory_hybrid with GGML_TYPE_F32 for both tensors).
    if (a.recurrent) a.recurrent->conv_dtype = a.recurrent->ssm_dtype = KvDtype::fp32;
    return a;
}

}  // namespace kvscope
