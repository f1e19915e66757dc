#include "kvscope/calculator/workload.h"

#include <algorithm>
#include <string>

#include "kvscope/calculator/units.h"

namespace kvscope {

std::uint64_t default_context_tokens(const Architecture& arch) {
    constexpr std::uint64_t kDefault = 8192;
    return arch.max_positions > 0 ? std::min(kDefault, arch.max_positions) : kDefault;
}

Errors validate(const Workload& w) {
    Errors e;
    if (w.context_tokens == 0) e.push_back({Field::context_tokens, "the context must be at least 1 token"});
    if (w.batch == 0) e.push_back({Field::batch, "at least 1 concurrent sequence is needed"});
    if (w.block_size == 0) e.push_back({Field::block_size, "the block size must be at least 1 token (1 = contiguous)"});
    // Engines' blocks hold 1 to a few thousand tokens (vllm/config/cache.py BlockSize up to 256; a hybrid model's
    // attention block grows to its state's page, a thousand-odd); far past that, a block is a mistyped figure whose
    // rounding would be blamed on the context.
    constexpr std::uint64_t kMaxBlock = 1ull << 20;
    if (w.block_size > kMaxBlock)
        e.push_back({Field::block_size, "a block of " + format_count(w.block_size) +
                                            " tokens is more than the 1,048,576 (2^20) any engine uses"});
    return e;
}

Errors validate(const Parallelism& p, const Architecture& arch) {
    Errors e;
    auto check_degree = [&](std::uint64_t v, Field field, const char* what) {
        if (v == 0)
            e.push_back({field, std::string(what) + " must be at least 1"});
        else if (v > kMaxTpOrPp)
            e.push_back({field, std::string(what) + " of " + std::to_string(v) + " is more than the " +
                                    std::to_string(kMaxTpOrPp) + " supported"});
    };
    check_degree(p.tp, Field::tp, "the tensor-parallel degree");
    check_degree(p.pp, Field::pp, "the pipeline-parallel degree");
    if (p.pp > 0 && arch.layers > 0 && p.pp > arch.layers)
        e.push_back({Field::pp, "pipeline parallel " + std::to_string(p.pp) +
                                    " needs at least that many layers (the model has " + std::to_string(arch.layers) +
                                    ")"});
    if (p.tp > 1 && arch.recurrent) {
        // vLLM splits each recurrent state tensor evenly (mamba_utils.py uses divide(), which asserts).
        const RecurrentState& r = *arch.recurrent;
        if (r.heads > 0 && r.heads % p.tp != 0)
            e.push_back({Field::tp, "tensor parallel " + std::to_string(p.tp) + " must divide the " +
                                        std::to_string(r.heads) + " heads of the recurrent state"});
        else if (r.kind == StateKind::mamba2 && r.groups > 1 && r.groups % p.tp != 0)
            // vLLM's MambaMixer2 shards the B/C groups: n_groups % tp == 0, or a single group replicated.
            e.push_back({Field::tp, "tensor parallel " + std::to_string(p.tp) + " must divide the " +
                                        std::to_string(r.groups) + " groups of the Mamba-2 state"});
        else if (r.conv_kernel > 1 && r.conv_channels % p.tp != 0)
            e.push_back({Field::tp, "tensor parallel " + std::to_string(p.tp) + " must divide the " +
                                        std::to_string(r.conv_channels) +
                                        " channels of the recurrent state's convolution"});
    }
    if (p.tp > 1 && arch.query_heads > 0 && arch.query_heads % p.tp != 0)
        e.push_back({Field::tp, "tensor parallel " + std::to_string(p.tp) + " must divide the query heads (" +
                                    std::to_string(arch.query_heads) + ")"});
    if (p.tp > 1 && !arch.mla && arch.kv_heads > 0 && arch.kv_heads % p.tp != 0 && p.tp % arch.kv_heads != 0)
        e.push_back({Field::tp, "tensor parallel " + std::to_string(p.tp) + " must divide the KV heads (" +
                                    std::to_string(arch.kv_heads) + ") or be a multiple of them"});
    return e;
}

StageLayers stage_layers(std::uint64_t layers, const Parallelism& p, std::uint64_t stage) {
    const std::uint64_t pp = std::max<std::uint64_t>(1, p.pp);
    const std::uint64_t base = layers / pp, extra = layers % pp;
    // The stages before `stage` that took a layer more, and whether `stage` takes one.
    std::uint64_t before = 0;
    bool more = false;
    switch (p.split) {
        case StageSplit::first:
            // TensorRT-LLM: tensorrt_llm/mapping.py pp_layers, torch.tensor_split ("first n ranks get one extra
            // layer").
            before = std::min(stage, extra);
            more = stage < extra;
            break;
        case StageSplit::before_last: {
            // vLLM: vllm/distributed/utils.py get_pp_indices, partitions[-i] += 1 for i in 2 .. extra + 1 (the last
            // stage never takes one); VLLM_PP_LAYER_PARTITION, which sets the split by hand, is not modelled.
            const std::uint64_t from = pp - 1 - extra;  // the first stage with one more
            before = stage > from ? std::min(stage, pp - 1) - from : 0;
            more = extra > 0 && stage >= from && stage < pp - 1;
            break;
        }
        case StageSplit::last:
            // SGLang: python/sglang/srt/distributed/utils.py get_pp_indices, "the last N partitions will have one extra
            // layer, where N = remainder" (from late 2025; earlier releases gave the whole remainder to the last
            // stage).
            before = stage > pp - extra ? stage - (pp - extra) : 0;
            more = stage >= pp - extra;
            break;
    }
    return {stage * base + before, base + (more ? 1 : 0)};
}

}  // namespace kvscope
