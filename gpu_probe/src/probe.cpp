#include "kvscope/probe/probe.h"

#include "backends.h"
#include "cpu_kernels.h"
#include "kvscope/calculator/kv_cache.h"

namespace kvscope::probe {

std::string_view to_string(Status status) {
    switch (status) {
        case Status::ok:
            return "ok";
        case Status::cancelled:
            return "cancelled";
        case Status::out_of_memory:
            return "out_of_memory";
        case Status::no_device:
            return "no_device";
        case Status::driver_mismatch:
            return "driver_mismatch";
        case Status::invalid_input:
            return "invalid_input";
        case Status::failed:
            return "failed";
    }
    return "failed";
}

bool can_store(KvDtype dtype) { return cpu::stores(dtype); }

std::string storable_list() { return "fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, q8_0 or q4_0"; }

namespace {

// kv_tensors without the count's guard.
Result<std::vector<KvTensor>> build_tensors(const ProbeRequest& request) {
    if (!can_store(request.dtype))
        return FieldError{Field::kv_dtype,
                          "the probe stores " + storable_list() + " (not " + std::string(to_string(request.dtype)) +
                              (request.dtype == KvDtype::int4
                                   ? ": engines that store 4-bit caches keep scales beside the values, which the "
                                     "calculator's 4 bits a value leave out, so no allocation of it would be exact)"
                                   : ")")};
    auto layout = KvLayout::make(request.arch, request.dtype, request.workload, Parallelism{});
    if (!layout) return layout.errors();
    std::vector<KvTensor> tensors;
    const Architecture& arch = request.arch;
    for (const LayerSpec& l : arch.layer_specs)
        if (l.caches_kv() && (l.kv_heads > 0 || l.head_dim_k > 0 || l.head_dim_v > 0))
            return FieldError{Field::kv_heads,
                              "the probe times one head layout for every layer, and this model's layers have KV "
                              "heads or head dimensions of their own; the calculator's figures still apply"};
    // DeepSeek-V3.2's indexer keys are stored beside each latent, in their own fp8 format whatever the cache
    // format (vLLM deepseek_v2.py Indexer), allocated and measured but not attended.
    const std::uint64_t indexer_row = arch.mla ? indexer_row_bytes(*arch.mla).value() : 0;
    const bool mla = request.arch.mla.has_value();
    const std::uint64_t heads = mla ? 1 : request.arch.kv_heads;
    const std::uint64_t dims_k =
        mla ? request.arch.mla->kv_lora_rank + request.arch.mla->qk_rope_head_dim : request.arch.head_dim_k;
    // A K or V row of one token, all heads, in the cache's format (the calculator's row_bytes). llama.cpp's
    // blocks of 32 never straddle two heads (ggml requires the head size to be a multiple of the block).
    const std::uint64_t dims_v = mla ? 0 : request.arch.head_dim_v;
    if (const KvDtypeInfo& f = info(request.dtype);
        f.values_per_block > 1 && (dims_k % f.values_per_block != 0 || dims_v % f.values_per_block != 0))
        return FieldError{Field::head_dim, std::string(f.id) + " stores blocks of " +
                                               std::to_string(f.values_per_block) + " values, and a head of " +
                                               std::to_string(dims_k) + " values is not a whole number of them"};
    const std::uint64_t k_row = cpu::row_size(request.dtype, heads * dims_k);
    const std::uint64_t v_row = cpu::row_size(request.dtype, heads * dims_v);
    const std::uint64_t context = request.workload.context_tokens;
    for (std::uint64_t layer = 0; layer < request.arch.layers; ++layer) {
        if (layout->row_bytes_per_gpu(layer) == 0) continue;  // shared, recurrent or MLP-only: no KV of its own
        const std::uint64_t tokens = layout->stored_tokens(layout->window(layer), context);
        const std::uint64_t attended = KvLayout::kept_tokens(layout->window(layer), context);
        for (std::uint64_t seq = 0; seq < request.workload.batch; ++seq) {
            tensors.push_back({layer, false, false, seq, tokens, attended, tokens * k_row});
            if (indexer_row > 0 && !arch.layer(layer).no_indexer) {
                KvTensor indexer{layer, false, false, seq, tokens, 0, tokens * indexer_row};
                indexer.is_indexer = true;
                tensors.push_back(indexer);
            }
            if (!mla) tensors.push_back({layer, true, false, seq, tokens, attended, tokens * v_row});
        }
    }
    // The recurrent state, in vLLM's shapes and formats (the calculator's state_values_per_gpu).
    if (arch.recurrent) {
        const StateValues v = state_values_per_gpu(*arch.recurrent, 1);
        const std::uint64_t conv = row_bytes(arch.recurrent->conv_dtype, v.conv.value()).value();
        const std::uint64_t ssm = row_bytes(arch.recurrent->ssm_dtype, v.ssm.value()).value();
        for (std::uint64_t layer = 0; layer < arch.layers; ++layer) {
            if (!arch.layer(layer).keeps_state()) continue;
            for (std::uint64_t seq = 0; seq < request.workload.batch; ++seq)
                for (const std::uint64_t bytes : {conv, ssm})
                    if (bytes > 0) tensors.push_back({layer, false, true, seq, 0, 0, bytes});
        }
    }
    return tensors;
}

}  // namespace

Result<std::uint64_t> kv_tensor_count(const ProbeRequest& request) {
    // Every sequence has the same tensors: one sequence's list, checked as kv_tensors checks it, times the batch.
    ProbeRequest one = request;
    one.workload.batch = std::min<std::uint64_t>(request.workload.batch, 1);
    auto per_sequence = build_tensors(one);
    if (!per_sequence) return per_sequence.errors();
    const Checked count = Checked(per_sequence->size()) * request.workload.batch;
    if (count.overflow() || count.value() > kMaxProbeTensors)
        return FieldError{Field::batch,
                          "the probe allocates each sequence's K and V of each layer on its own: " +
                              format_count(per_sequence->size()) + " buffers a sequence x " +
                              format_count_of(request.workload.batch, "sequence", "sequences") + " is more than the " +
                              format_count(kMaxProbeTensors) +
                              " buffers it keeps track of; lower the batch (the calculator's figures need no probe)"};
    return count.value();
}

Result<std::vector<KvTensor>> kv_tensors(const ProbeRequest& request) {
    // The count first, so that a batch no memory could hold is refused before a list of its buffers is built.
    if (auto count = kv_tensor_count(request); !count) return count.errors();
    return build_tensors(request);
}

AttentionShape attention_shape(const Architecture& a) {
    if (a.mla) {
        const std::uint64_t latent = a.mla->kv_lora_rank + a.mla->qk_rope_head_dim;
        return {a.query_heads, 1, latent, a.mla->kv_lora_rank, latent, latent};
    }
    return {
        a.query_heads, a.kv_heads, a.head_dim_k, a.head_dim_v, a.kv_heads * a.head_dim_k, a.kv_heads * a.head_dim_v};
}

std::string arithmetic_bound_note(const AttentionTiming& at) {
    // Each byte read feeds heads_per_row multiply-adds per value; at 16 and more a CPU's or GPU's arithmetic (for
    // the CUDA-core kernel) runs out before its memory does (measured on the CPU: 42% of the ceiling for Llama 3 8B's
    // groups of 4, 30% for 70B's 8, 1% for DeepSeek-V3's latent read by 128 heads).
    if (at.heads_per_row < 16 || at.tensor_cores) return {};
    return "each cached row is read by " + std::to_string(at.heads_per_row) +
           " query heads, so this step is bound by arithmetic, not by reading the cache: the fraction of the "
           "ceiling measures the kernel, not the memory";
}

std::uint64_t kv_bytes_read(const std::vector<KvTensor>& tensors) {
    std::uint64_t sum = 0;
    for (const KvTensor& t : tensors) sum += t.tokens ? t.bytes / t.tokens * t.attended : 0;
    return sum;
}

}  // namespace kvscope::probe
