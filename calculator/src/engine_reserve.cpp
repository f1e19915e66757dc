// What each engine keeps back on a GPU beside the weights, as its own startup derives it: vLLM's profile run,
// TensorRT-LLM's profiling run, llama.cpp's compute buffer, SGLang's memory in use before loading; or the reserve
// given. The fit (deployment.cpp) subtracts it by the engine's rule.
#include <algorithm>
#include <limits>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"
#include "wide.h"

namespace kvscope {

std::uint64_t llama_cpp_ubatch(const Deployment& d) {
    return d.llama_cpp.ubatch > 0 ? d.llama_cpp.ubatch : kLlamaCppUbatch;
}

namespace {
std::uint64_t widest_intermediate(const Architecture& arch);
}  // namespace

LlamaCppGraph llama_cpp_graph(const Architecture& arch, std::uint64_t context_tokens, std::uint64_t ubatch,
                              bool flash_attn) {
    // src/llama-context.cpp (sched_reserve): the graph reserved is one micro-batch of n_tokens = min(n_ctx, n_ubatch)
    // tokens, every one an output, over the whole cache (n_kv = n_ctx, padded to 256 in the constructor); the
    // buffer is its peak, as ggml-alloc.c lays the tensors out. Two stages peak:
    //   attention without flash attention (llm_build_kqv): the f32 KQ of n_kv x n_tokens x n_head, the softmax
    //     in place (ggml_op_can_inplace), the mask's copy on the GPU (n_kv x n_tokens f32) and about four
    //     hidden-state tensors of n_embd x n_tokens;
    //   the output: the f32 logits of n_vocab x n_tokens (n_outputs = n_tokens) and the hidden state beside them.
    // With flash attention (-fa, on by default where the GPU has it) KQ is never formed: the output stage.
    // Five of six published logs to the MiB (tests/calculator/engine_logs_test.cpp, docs/vllm-logs.md); the sixth,
    // at 128k, logged 4.4% more.
    const std::uint64_t n_ctx = round_up(std::max<std::uint64_t>(context_tokens, 1), 256).value();
    const std::uint64_t n_tokens = std::min(n_ctx, ubatch);
    // The widest attention layer's cache: a model whose layers all slide keeps its window (engine_architecture).
    std::uint64_t n_kv = 0;
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const LayerSpec s = arch.layer(l);
        if (!s.caches_kv()) continue;
        const bool windowed = (s.kind == LayerKind::sliding || s.kind == LayerKind::chunked) && s.window > 0;
        n_kv = std::max(n_kv, windowed ? std::min(n_ctx, s.window) : n_ctx);
    }
    const auto bytes = [](const Checked& c) { return c.saturated(); };
    LlamaCppGraph g;
    g.output = bytes(Checked(4) * n_tokens * (Checked(arch.vocab_size) + arch.hidden_size));
    if (!flash_attn && n_kv > 0)
        g.attention = bytes(Checked(4) * n_tokens *
                            (Checked(n_kv) * (Checked(arch.query_heads) + 1) + Checked(4) * arch.hidden_size));
    g.inputs = bytes(Checked(4) * n_tokens * Checked(3) * arch.hidden_size);
    // The MLP: gate, up and their product (f32, the widest layer's) beside three hidden states, and the mask held
    // through every layer (f16 with flash attention, ggml_cast in build_attn_inp_kv; f32 without). Build 10357's
    // logs of Qwen2.5 7B with every layer on the GPU (132.51, 134.01, 136.01 MiB at 512, 2,048 and 4,096 tokens:
    // docs/vllm-logs.md) are this stage to the MiB; older builds' logits outweighed it in every log above.
    g.mlp = bytes(Checked(4) * n_tokens * Checked(3) * (Checked(widest_intermediate(arch)) + arch.hidden_size) +
                  Checked(flash_attn ? 2 : 4) * n_kv * n_tokens);
    return g;
}

std::uint64_t llama_cpp_compute_buffer(const Architecture& arch, std::uint64_t context_tokens, std::uint64_t ubatch,
                                       bool flash_attn) {
    const LlamaCppGraph g = llama_cpp_graph(arch, context_tokens, ubatch, flash_attn);
    return std::max({g.output, g.attention, g.mlp});
}

std::uint64_t vllm_minor(const Deployment& d) {
    return d.vllm.version_minor > 0 ? d.vllm.version_minor : kDefaultVllmMinor;
}

std::string vllm_version_text(const Deployment& d) {
    return "0." + std::to_string(vllm_minor(d)) +
           (d.vllm.version_minor > 0 && d.vllm.version_patch ? "." + std::to_string(*d.vllm.version_patch) : "");
}

bool vllm_counts_cuda_context(const Deployment& d) { return vllm_minor(d) == 6 && d.vllm.version_patch == 4; }

bool vllm_subtracts_cuda_graphs(const Deployment& d) { return vllm_minor(d) >= 21 && !d.vllm.enforce_eager; }

namespace {

// The V0 engine's rules: vLLM 0.7 and before (0.8 made the V1 engine the default).
constexpr std::uint64_t kLastV0Minor = 7;

// The MLP's widest intermediate in one layer: the dense MLP's, or the chosen experts' together (a fused MoE
// kernel holds every token's top-k experts' outputs at once) with the shared experts'.
std::uint64_t widest_intermediate(const Architecture& arch) {
    if (!arch.moe) return arch.intermediate_size;
    const MoeDims& m = *arch.moe;
    const Checked experts = (Checked(m.experts_per_token) + m.shared_experts) * m.expert_intermediate_size;
    const bool dense_layers = m.dense_layers > 0 || m.period > 1;
    const std::uint64_t width = experts.saturated();
    return std::max(dense_layers ? arch.intermediate_size : 0, width);
}

// The activations of a forward pass of `tokens` tokens, at their peak in the MLP of one layer: the residual, the
// hidden states and the normed input (3 x hidden) beside the gate/up output and its product (3 x intermediate, split
// over tensor parallel), in the model's dtype. Calibrated on published vLLM V0 logs, where the forward dominates:
// Llama 3.1 8B at 20,000 and 29,000 tokens logged 2.07 and 2.99 GiB, 109,700 bytes a token, against 110,592 here
// (tests/calculator/vllm_logs_test.cpp).
i128 forward_activation_bytes(const Architecture& arch, std::uint64_t tokens, const Parallelism& parallel,
                              KvDtype weight_dtype) {
    const std::uint64_t tp = std::max<std::uint64_t>(1, parallel.tp);
    const i128 value_bytes = weight_dtype == KvDtype::fp32 ? 4 : 2;  // activations: the model's dtype (bf16)
    const i128 per_token =
        (3 * static_cast<i128>(arch.hidden_size) + 3 * static_cast<i128>(ceil_div(widest_intermediate(arch), tp))) *
        value_bytes;
    return static_cast<i128>(tokens) * per_token;
}

// How a runtime-overhead item came about: given with --overhead, else the rule's own `default_how`.
std::string overhead_how(const Deployment& d, std::string default_how) {
    return d.overhead_given ? std::string("as given (--overhead)") : std::move(default_how);
}

}  // namespace

VllmBatch vllm_batch(const Workload& workload, const Deployment& d) {
    const std::uint64_t minor = vllm_minor(d);
    const std::uint64_t max_model_len = std::max<std::uint64_t>(1, workload.context_tokens);
    VllmBatch b;
    if (minor <= kLastV0Minor) {
        // The V0 engine (vllm/engine/arg_utils.py, 0.6.5 - 0.7): 256 sequences; chunked prefill turns itself on
        // above 32,768 tokens of context with 2,048 tokens a step, else a step holds a whole prompt, at least 2,048.
        b.max_num_seqs = 256;
        b.max_num_batched_tokens = max_model_len > 32768 ? 2048 : std::max<std::uint64_t>(max_model_len, 2048);
    } else {
        // The V1 engine (vllm/engine/arg_utils.py, get_batch_defaults; `vllm serve`): on a GPU of at least 70 GiB
        // that is not an A100, 8,192 tokens a step and 1,024 sequences; else 2,048 and 256 (from 0.8.5; 0.8's
        // earlier releases told GPUs apart by name, taken as the same here). The default is capped at
        // max_num_seqs x max_model_len.
        const std::string id = ascii_lower(d.gpu.id + " " + d.gpu.name);
        const bool big = d.gpu.memory_bytes >= 70 * kGiB && id.find("a100") == std::string::npos;
        b.max_num_seqs = big ? 1024 : 256;
        const i128 cap =
            static_cast<i128>(d.vllm.max_num_seqs > 0 ? d.vllm.max_num_seqs : b.max_num_seqs) * max_model_len;
        b.max_num_batched_tokens = clamp_u64(std::min<i128>(big ? 8192 : 2048, cap));
    }
    b.tokens_default = d.vllm.max_num_batched_tokens == 0;
    b.seqs_default = d.vllm.max_num_seqs == 0;
    if (d.vllm.max_num_batched_tokens > 0) b.max_num_batched_tokens = d.vllm.max_num_batched_tokens;
    if (d.vllm.max_num_seqs > 0) b.max_num_seqs = d.vllm.max_num_seqs;
    b.sampled_sequences = std::min(b.max_num_seqs, b.max_num_batched_tokens);
    return b;
}

std::vector<ReserveItem> vllm_reserve(const Architecture& arch, const Workload& workload, const Parallelism& parallel,
                                      const Deployment& d) {
    const std::uint64_t minor = vllm_minor(d);
    const VllmBatch b = vllm_batch(workload, d);
    const std::uint64_t tp = std::max<std::uint64_t>(1, parallel.tp);
    const i128 seqs = b.sampled_sequences;
    const bool v0 = minor <= kLastV0Minor;
    // The forward pass of the profile run (gpu_model_runner.py profile_run -> _dummy_run(max_num_batched_tokens)).
    const i128 forward = forward_activation_bytes(arch, b.max_num_batched_tokens, parallel, d.weight_dtype);
    // The sampler's dummy run over max_num_seqs sequences (_dummy_sampler_run): the logits of each sequence's last
    // token over the vocabulary, their fp32 copy, probabilities and the top-k/top-p sort's values and indices.
    // Bytes per sequence and vocabulary entry, fitted to the published logs of each line (docs/vllm-logs.md): the
    // V0 engine 40 (Llama 3 8B, Qwen2.5 7B and 1.5B, Orpheus 3B: 38.5 - 41), V1 up to 0.11 38 (gpt-oss-120b at
    // 1,024 sequences), 0.12 on 20 (gpt-oss-20b, Qwen3 8B at 256 sequences).
    const i128 per_entry = v0 ? 40 : minor <= 11 ? 38 : 20;
    const i128 sampler = seqs * static_cast<i128>(arch.vocab_size) * per_entry;
    std::vector<ReserveItem> items;
    const std::string defaults = "vLLM " + vllm_version_text(d) + "'s default for this GPU";
    const std::string inputs = format_count(b.max_num_batched_tokens) + " tokens (max_num_batched_tokens" +
                               (b.tokens_default ? ", " + defaults : std::string()) + "), " +
                               format_count(b.sampled_sequences) + " sequences sampled (max_num_seqs " +
                               format_count(b.max_num_seqs) + (b.seqs_default ? ", " + defaults : std::string()) +
                               "; at most one a token)";
    items.push_back({ReserveKind::profile_peak, "profile peak", clamp_u64(std::max(forward, sampler)),
                     "the larger of the forward pass's activations (" + format_bytes(clamp_u64(forward)) +
                         ") and the sampler's logits (" + format_bytes(clamp_u64(sampler)) + ") for " + inputs +
                         (v0 ? " (vllm/worker/model_runner.py profile_run)"
                             : " (vllm/v1/worker/gpu_model_runner.py profile_run)")});
    // Memory outside torch's allocator that grows during the profile run (cuBLAS workspaces, kernels loaded on
    // first use); the CUDA context and NCCL come before the snapshot and are not counted (vllm/utils/mem_utils.py
    // memory_profiling). The published logs' single-GPU figures lie between 0.01 and 0.20 GiB (median 0.12).
    // vLLM 0.6.4 alone counted everything in use on the GPU outside torch once the profile had run, the CUDA
    // context and any other process's memory included (vllm/worker/worker.py determine_num_available_blocks:
    // mem_get_info's used memory less torch's allocated bytes; PR #9352, replaced by PR #10511's baseline snapshot
    // in 0.6.5). Its published logs print that figure as non_torch_memory: 0.35 GiB on an RTX 3090 (vllm#10517,
    // beside 14.99 GiB of weights), 0.73 GiB on an H200, 0.15 GiB on an 8 GB card.
    const bool context_counted = vllm_counts_cuda_context(d);
    const std::string how =
        context_counted
            ? "the CUDA context and all other memory outside torch, as vLLM 0.6.4 counted it: an estimate, its "
              "published logs give 0.15 - 0.73 GiB"
            : "grown outside torch during the profile run: an estimate, published logs give 0.01 - 0.20 GiB";
    items.push_back({ReserveKind::non_torch, "non-torch memory",
                     d.overhead_given  ? d.runtime_overhead_bytes
                     : context_counted ? kVllm064NonTorchBytes
                                       : 150ull << 20,
                     overhead_how(d, how)});
    // From 0.21 vLLM captures its largest CUDA graphs during profiling and subtracts what they took
    // (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, gpu_model_runner.py). KVScope's own figure, not vLLM's: the
    // published estimates are 0.41 - 0.52 GiB at TP 1 and 0.14 - 0.49 GiB per GPU at TP 2 and 4, so 512 MiB over
    // the tensor parallel degree is a rough rule beyond TP 1.
    if (vllm_subtracts_cuda_graphs(d))
        items.push_back({ReserveKind::cuda_graphs, "CUDA graphs", (512ull << 20) / tp,
                         "an estimate of what vLLM 0.21's captured graphs take: 512 MiB over tensor parallel "
                         "(published: 0.41 - 0.52 GiB at TP 1; --enforce-eager: none)"});
    return items;
}

std::uint64_t trtllm_max_num_tokens(const Deployment& d) {
    return d.tensorrt_llm.max_num_tokens > 0 ? d.tensorrt_llm.max_num_tokens : kTrtllmMaxNumTokens;
}

std::vector<ReserveItem> trtllm_reserve(const Architecture& arch, const Parallelism& parallel, const Deployment& d) {
    // The PyTorch backend (trtllm-serve's default since 1.0), tensorrt_llm/_torch/pyexecutor/_util.py
    // KvCacheCreator.configure_kv_cache_capacity: after the weights load it runs dummy context requests of
    // max_num_tokens tokens in all (_create_dummy_context_requests, each at most max_seq_len) and takes the peak:
    // torch's peak allocation (the weights and the forward's activations) plus what is in use outside torch (the
    // CUDA context, NCCL, CUDA graphs). The KV cache gets free_gpu_memory_fraction of the total less that peak
    // (_cal_max_memory; the estimation's temporary KV cache is added back). Only the last token of each request
    // reaches the LM head, so its logits are a few requests' rows: left out.
    const std::uint64_t tokens = trtllm_max_num_tokens(d);
    const i128 forward = forward_activation_bytes(arch, tokens, parallel, d.weight_dtype);
    std::vector<ReserveItem> items;
    items.push_back({ReserveKind::profile_peak, "profile peak", clamp_u64(forward),
                     "the forward pass's activations for " + format_count(tokens) + " tokens (max_num_tokens" +
                         (d.tensorrt_llm.max_num_tokens == 0 ? ", TensorRT-LLM's default" : std::string()) +
                         "), estimated as vLLM's (tensorrt_llm/_torch/pyexecutor/_util.py "
                         "configure_kv_cache_capacity)"});
    items.push_back(
        {ReserveKind::non_torch, "outside torch", d.runtime_overhead_bytes,
         overhead_how(d, "CUDA context, NCCL and CUDA graphs: the runtime overhead's default (--overhead)")});
    return items;
}

EngineReserve engine_reserve(const Architecture& model_arch, const Workload& workload, const Parallelism& parallel,
                             const Deployment& d) {
    EngineReserve out;
    const std::uint64_t ubatch = llama_cpp_ubatch(d);
    if (d.engine == Engine::vllm && !d.fixed_reserve) {
        out.estimated = true;
        out.items = vllm_reserve(model_arch, workload, parallel, d);
        out.notes.push_back(
            "vLLM " + vllm_version_text(d) + "'s startup profile" +
            (d.vllm.version_minor == 0 ? " (the version assumed; --vllm-version for another)" : "") +
            ": the reserve is an estimate from the run's inputs, checked against eleven published startup "
            "logs at TP 1 (docs/vllm-logs.md); --reserve fixes it instead, --overhead sets the non-torch memory" +
            (vllm_minor(d) == 6 && !d.vllm.version_patch
                 ? "; 0.6.4 alone also counted the CUDA context outside torch (--vllm-version 0.6.4)"
                 : ""));
    } else if (d.engine == Engine::sglang) {
        // What is in use before the weights load; SGLang keeps its activations in the 1 - mem_fraction_static it
        // leaves free, so a reserve given (--reserve) is kept back beside that, as asked.
        out.items.push_back(
            {ReserveKind::overhead, "in use before loading",
             d.overhead_given ? d.runtime_overhead_bytes : kSglangContextBytes,
             overhead_how(d,
                          "CUDA context and NCCL: SGLang's fraction applies to the memory free before the "
                          "weights load (0.84 - 1.06 GiB in published logs)")});
        if (d.fixed_reserve)
            out.items.push_back({ReserveKind::activation, "activation reserve", d.activation_reserve_bytes,
                                 "as given (--reserve), beside what SGLang's fraction leaves free"});
    } else if (d.engine == Engine::tensorrt_llm && !d.fixed_reserve) {
        out.estimated = true;
        out.items = trtllm_reserve(model_arch, parallel, d);
        out.notes.emplace_back(
            "not exact: TensorRT-LLM's reserve follows its PyTorch backend's profiling run (trtllm-serve's default): "
            "the activations of max_num_tokens tokens are vLLM's estimate (0.66 GiB for gpt-oss-120b at 8,192, "
            "where a published log measured 0.85 GiB) and the memory outside torch is the runtime overhead "
            "(512 MiB unless --overhead); a TensorRT engine (--backend tensorrt) also holds its execution context "
            "and decoder buffers: --reserve replaces the activations with a figure that counts them");
    } else if (runs_llama_cpp(d.engine) && !d.fixed_reserve) {
        // llama.cpp reserves its compute buffer when it makes the context (a draft model's context has its own).
        out.estimated = true;
        const bool fa = !d.llama_cpp.flash_attn_off;
        const std::string how = "one micro-batch of " + format_count(ubatch) + " tokens (n_ubatch" +
                                (d.llama_cpp.ubatch == 0 ? ", llama.cpp's default" : std::string()) + "), " +
                                (fa ? "flash attention on (the default where the GPU has it): the larger of the "
                                      "logits and the MLP's stage"
                                    : "flash attention off: the largest of the attention scores, the logits and the "
                                      "MLP's stage") +
                                " (src/llama-context.cpp)";
        out.items.push_back({ReserveKind::compute_buffer, "compute buffer",
                             llama_cpp_compute_buffer(engine_architecture(model_arch, d.engine, ubatch),
                                                      workload.context_tokens, ubatch, fa),
                             how});
        if (d.draft)
            out.items.push_back({ReserveKind::compute_buffer, "draft's compute buffer",
                                 llama_cpp_compute_buffer(engine_architecture(d.draft->arch, d.engine, ubatch),
                                                          workload.context_tokens, ubatch, fa),
                                 "the draft's own context, as the model's"});
        out.items.push_back({ReserveKind::overhead, "runtime overhead", d.runtime_overhead_bytes,
                             overhead_how(d, "the default (--overhead): CUDA context and library workspaces")});
        out.notes.push_back(
            "llama.cpp's compute buffer: " + how +
            "; it matches five published logs of dense models on one GPU to the MiB (docs/vllm-logs.md); builds "
            "from June 2026 on reserve one output a sequence instead of a micro-batch's logits (llama.cpp#23861), "
            "so at most this (136 MiB where it gives 304 for Qwen2.5 7B at 4,096); --ubatch and --flash-attn change "
            "it, --reserve fixes the reserve instead");
        if (model_arch.moe || parallel.gpus() > 1)
            out.notes.emplace_back(
                "not exact: llama.cpp's compute buffer was checked on dense models on one GPU; an MoE's expert "
                "buffers and a split over GPUs (each reserving its own) may differ");
    } else {
        out.items.push_back({ReserveKind::activation, "activation reserve", d.activation_reserve_bytes,
                             d.fixed_reserve ? "as given (--reserve)" : "the default (--reserve)"});
        out.items.push_back({ReserveKind::overhead, "runtime overhead", d.runtime_overhead_bytes,
                             overhead_how(d, "the default (--overhead)")});
        // The engine's settings that size a derived reserve change nothing once it is fixed: said, not ignored.
        std::vector<std::string> idle;
        if (d.engine == Engine::vllm && (d.vllm.max_num_batched_tokens > 0 || d.vllm.max_num_seqs > 0 ||
                                         d.vllm.enforce_eager || d.vllm.version_minor > 0))
            idle.emplace_back("vLLM's batch limits, CUDA graphs and version");
        if (d.engine == Engine::tensorrt_llm && d.tensorrt_llm.max_num_tokens > 0) idle.emplace_back("max_num_tokens");
        if (runs_llama_cpp(d.engine) && d.llama_cpp.flash_attn_off) idle.emplace_back("flash attention");
        for (const std::string& setting : idle)
            out.notes.push_back("the reserve is fixed (--reserve): it is not derived from " + setting + " given");
    }
    return out;
}

}  // namespace kvscope
