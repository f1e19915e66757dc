#include "kvscope/calculator/kv_cache.h"

#include <algorithm>
#include <limits>

#include "kvscope/calculator/units.h"

namespace kvscope {

FieldError overflow_error(Field field, const std::string& what) {
    return {field, what + " needs more than 2^64 bytes (16 EiB); no machine holds that — reduce it"};
}

std::uint64_t honoured_window(const LayerSpec& s, const Workload& workload) {
    if (s.kind != LayerKind::sliding && s.kind != LayerKind::chunked && s.kind != LayerKind::shared) return 0;
    return workload.full_window ? 0 : s.window;
}

std::uint64_t honoured_window(const Architecture& arch, const Workload& workload, std::uint64_t layer) {
    return honoured_window(arch.layer(layer), workload);
}

StateValues state_values_per_gpu(const RecurrentState& r, std::uint64_t tp) {
    // vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator): each state tensor is
    // split over the tensor-parallel GPUs along its channels or heads. Mamba-2 pads its B/C groups to a
    // multiple of the GPUs when they do not divide (extra_groups_for_head_shards: a single group is
    // replicated on every GPU).
    Checked conv;
    if (r.conv_kernel > 1) {
        std::uint64_t groups = r.groups;
        if (r.kind == StateKind::mamba2 && groups > 0 && groups % tp != 0) groups += tp - groups;
        const Checked channels = Checked(r.conv_channels) + Checked(2) * groups * r.state_size;
        conv = (channels.overflow() ? channels : Checked(channels.value() / tp)) * (r.conv_kernel - 1);
    }
    Checked ssm;
    if (r.heads > 0) ssm = Checked(r.heads / tp) * r.head_dim * r.state_size;
    return {conv, ssm};
}

Checked indexer_row_bytes(const MlaDims& mla) {
    if (mla.indexer_head_dim == 0) return {};
    return Checked(mla.indexer_head_dim) + Checked(ceil_div(mla.indexer_head_dim, 128)) * 4;
}

Checked mla_row_bytes(const MlaDims& mla, KvDtype dtype, bool with_indexer) {
    if (mla.indexer_head_dim == 0) return row_bytes(dtype, mla.kv_lora_rank + mla.qk_rope_head_dim);
    // A layer without an indexer keeps the model's latent format (the model is still V3.2's kind).
    const Checked indexer = with_indexer ? indexer_row_bytes(mla) : Checked(0);
    // vLLM stores any fp8 cache of DeepSeek V3.2 as its 656-byte fp8_ds_mla row (model_executor/models/config.py
    // DeepseekV32ForCausalLM.verify_and_update_config: cache_dtype.startswith("fp8") -> "fp8_ds_mla").
    const bool fp8 = dtype == KvDtype::fp8_e4m3 || dtype == KvDtype::fp8_e5m2;
    const bool ds_mla = fp8 && mla.kv_lora_rank == 512 && mla.qk_rope_head_dim == 64;
    const Checked latent = ds_mla ? Checked(656) : row_bytes(dtype, mla.kv_lora_rank + mla.qk_rope_head_dim);
    return latent + indexer;
}

Checked state_bytes_per_gpu(const RecurrentState& r, std::uint64_t tp) {
    const StateValues v = state_values_per_gpu(r, tp);
    if (v.conv.overflow() || v.ssm.overflow()) return Checked::overflowed();
    return row_bytes(r.conv_dtype, v.conv.value()) + row_bytes(r.ssm_dtype, v.ssm.value());
}

namespace {

// A cache stored in blocks (llama.cpp's q8_0 and q4_0, mxfp4: 32 values a block) views each head's row as whole
// blocks, so a head dimension that is not a multiple of the block is refused: llama.cpp's llama_init_from_model
// (src/llama-context.cpp) stops with "K cache type q8_0 with block size 32 does not divide n_embd_head_k=72" (and
// the same for V). Rounding the row up to blocks would give a figure for a cache no engine makes.
std::optional<FieldError> block_format_problem(const Architecture& arch, KvDtype dtype) {
    const KvDtypeInfo& f = info(dtype);
    if (f.values_per_block < 32) return std::nullopt;
    const auto problem = [&](const char* what, std::uint64_t dim) -> std::optional<FieldError> {
        if (dim % f.values_per_block == 0) return std::nullopt;
        return FieldError{
            Field::kv_dtype,
            std::string(f.id) + " stores blocks of " + std::to_string(f.values_per_block) + " values, and the " + what +
                " head dimension " + format_count(dim) + " is not a multiple of " + std::to_string(f.values_per_block) +
                ": llama.cpp refuses such a cache (\"" + (what[0] == 'k' ? "K" : "V") + " cache type " +
                std::string(f.id) + " with block size " + std::to_string(f.values_per_block) +
                " does not divide n_embd_head_" + (what[0] == 'k' ? "k" : "v") + "\"); choose fp16 or bf16"};
    };
    // MLA: llama.cpp caches the latent and the rotary key as one row of K (n_embd_head_k = kv_lora_rank + rope) and
    // reads V from the latent (n_embd_head_v = kv_lora_rank); both are checked.
    if (arch.mla) {
        if (auto e = problem("key (MLA latent and rotary part)", arch.mla->kv_lora_rank + arch.mla->qk_rope_head_dim))
            return e;
        return problem("value (MLA latent)", arch.mla->kv_lora_rank);
    }
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        if (!arch.layer_specs.empty() && !arch.layer_specs[l].caches_kv()) continue;
        if (auto e = problem("key", arch.head_dim_k_of(l))) return e;
        if (auto e = problem("value", arch.head_dim_v_of(l))) return e;
    }
    return std::nullopt;
}

}  // namespace

Result<KvLayout> KvLayout::make(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                const Parallelism& parallel) {
    Errors errors = validate(arch);
    for (auto& e : validate(workload)) errors.push_back(std::move(e));
    for (auto& e : validate(parallel, arch)) errors.push_back(std::move(e));
    if (!errors.empty()) return errors;
    if (auto e = block_format_problem(arch, dtype)) return *e;

    KvLayout k;
    k.dtype_ = dtype;
    k.tp_ = parallel.tp;
    k.block_ = workload.block_size;
    k.layers_ = arch.layers;
    if (arch.mla) {
        // The latent is shared by every head, so every tensor-parallel rank keeps all of it.
        k.kv_heads_per_gpu_ = 1;
        k.replication_ = parallel.tp;
    } else if (arch.kv_heads > 0) {
        k.kv_heads_per_gpu_ = std::max<std::uint64_t>(1, arch.kv_heads / parallel.tp);
        k.replication_ = parallel.tp > arch.kv_heads ? parallel.tp / arch.kv_heads : 1;
    }
    std::uint64_t state = 0;
    if (arch.recurrent) {
        const Checked s = state_bytes_per_gpu(*arch.recurrent, parallel.tp);
        if (s.overflow()) return overflow_error(Field::recurrent_state, "a recurrent state of these dimensions");
        state = s.value();
    }

    k.layer_row_.resize(arch.layers);
    std::optional<std::uint64_t> model_row;  // the row of a layer with the model's own heads, made once
    static const LayerSpec kFull{};
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const LayerSpec& spec = arch.layer_specs.empty() ? kFull : arch.layer_specs[l];
        Row& row = k.layer_row_[l];
        row.window = honoured_window(spec, workload);
        if (spec.keeps_state()) row.state = state;
        if (!spec.caches_kv()) continue;
        const bool own_heads = spec.kv_heads == 0 && spec.head_dim_k == 0 && spec.head_dim_v == 0 && !spec.no_indexer;
        if (own_heads && model_row) {
            row.kv = *model_row;
            continue;
        }
        Checked bytes;
        if (arch.mla) {
            bytes = mla_row_bytes(*arch.mla, dtype, !spec.no_indexer);
        } else {
            const std::uint64_t heads = std::max<std::uint64_t>(1, arch.kv_heads_of(l) / parallel.tp);
            const Checked values_k = Checked(heads) * arch.head_dim_k_of(l);
            const Checked values_v = Checked(heads) * arch.head_dim_v_of(l);
            if (values_k.overflow() || values_v.overflow())
                return overflow_error(Field::head_dim, "a KV row of these heads and head dimensions");
            bytes = row_bytes(dtype, values_k.value()) + row_bytes(dtype, values_v.value());
        }
        if (bytes.overflow()) return overflow_error(Field::head_dim, "a KV row of these dimensions");
        row.kv = bytes.value();
        if (own_heads) model_row = row.kv;
    }

    // Contiguous pipeline stages, the layers that do not divide among them given as the engine gives them.
    for (std::uint64_t s = 0; s < parallel.pp; ++s) {
        const auto [next, count] = stage_layers(arch.layers, parallel, s);
        std::vector<Group> groups;
        Checked stage_state;
        for (std::uint64_t l = next; l < next + count; ++l) {
            const Row& row = k.layer_row_[l];
            stage_state += Checked(row.state);
            if (row.kv == 0) continue;
            auto it = std::find_if(groups.begin(), groups.end(),
                                   [&row](const Group& g) { return g.window == row.window && g.row_bytes == row.kv; });
            if (it == groups.end())
                groups.push_back({row.window, row.kv, 1, 0});
            else
                ++it->layers;
        }
        if (stage_state.overflow())
            return overflow_error(Field::recurrent_state, "the recurrent state of these layers");
        for (auto& g : groups) {
            const Checked bytes = Checked(g.layers) * g.row_bytes;  // one token of every layer of the group
            if (bytes.overflow()) return overflow_error(Field::layers, "one token across these layers");
            g.token_bytes = bytes.value();
        }
        k.stages_.push_back(std::move(groups));
        k.stage_state_.push_back(stage_state.value());
    }
    return k;
}

std::uint64_t KvLayout::stored_tokens(std::uint64_t window, std::uint64_t tokens) const {
    const Checked rounded = round_up(kept_tokens(window, tokens), block_);
    return rounded.saturated();
}

Checked KvLayout::stage_bytes_per_sequence(std::size_t stage, std::uint64_t tokens, Memory what) const {
    Checked sum;
    for (const auto& g : stages_[stage]) {
        const std::uint64_t kept = g.window == 0 ? tokens : std::min(tokens, g.window);
        // Curves evaluate this thousands of times: no division when the cache is contiguous.
        sum += (block_ == 1 ? Checked(kept) : round_up(kept, block_)) * g.token_bytes;
    }
    if (what == Memory::kv_and_state) sum += Checked(stage_state_[stage]);
    return sum;
}

Checked KvLayout::gpu_bytes_per_sequence(std::uint64_t tokens, Memory what) const {
    Checked most;
    for (std::size_t s = 0; s < stages_.size(); ++s) {
        const Checked b = stage_bytes_per_sequence(s, tokens, what);
        if (b.overflow()) return b;
        if (b.value() > most.value()) most = b;
    }
    return most;
}

Checked KvLayout::all_gpu_bytes_per_sequence(std::uint64_t tokens, Memory what) const {
    Checked sum;
    for (std::size_t s = 0; s < stages_.size(); ++s) sum += stage_bytes_per_sequence(s, tokens, what);
    return sum * tp_;
}

long double KvLayout::all_gpu_bytes_per_sequence_approx(std::uint64_t tokens) const {
    long double sum = 0;
    for (const auto& stage : stages_)
        for (const auto& g : stage) {
            const std::uint64_t kept = g.window == 0 ? tokens : std::min(tokens, g.window);
            // Rounded up to whole blocks as stage_bytes_per_sequence rounds, without its overflow.
            const std::uint64_t blocks = kept / block_ + (kept % block_ != 0 ? 1 : 0);
            sum += static_cast<long double>(blocks) * static_cast<long double>(block_) *
                   static_cast<long double>(g.token_bytes);
        }
    return sum * static_cast<long double>(tp_);
}

Checked KvLayout::all_gpu_state_bytes_per_sequence() const {
    Checked sum;
    for (const std::uint64_t s : stage_state_) sum += Checked(s);
    return sum * tp_;
}

Checked KvLayout::bytes_per_token_all_gpus() const {
    Checked sum;
    for (const auto& stage : stages_)
        for (const auto& g : stage) sum += Checked(g.token_bytes);
    return sum * tp_;
}

Checked KvLayout::bytes_per_token_per_gpu() const {
    Checked most;
    for (const auto& stage : stages_) {
        Checked sum;
        for (const auto& g : stage) sum += Checked(g.token_bytes);
        if (sum.overflow()) return sum;
        if (sum.value() > most.value()) most = sum;
    }
    return most;
}

Result<KvCacheReport> kv_cache_report(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                      const Parallelism& parallel) {
    auto layout = KvLayout::make(arch, dtype, workload, parallel);
    if (!layout) return layout.errors();
    return kv_cache_report(*layout, arch, workload, parallel);
}

Result<KvCacheReport> kv_cache_report(const KvLayout& layout, const Architecture& arch, const Workload& workload,
                                      const Parallelism& parallel) {
    const std::uint64_t T = workload.context_tokens;

    const Checked per_sequence = layout.all_gpu_bytes_per_sequence(T);
    if (per_sequence.overflow())
        return overflow_error(Field::context_tokens, "a context of " + format_count(T) + " tokens");
    const Checked total = per_sequence * workload.batch;
    if (total.overflow())
        return overflow_error(
            Field::batch, std::to_string(workload.batch) + " concurrent sequences at " + format_count(T) + " tokens");
    const Checked per_gpu = layout.gpu_bytes_per_sequence(T) * workload.batch;
    const Checked per_token = layout.bytes_per_token_all_gpus();
    if (per_token.overflow()) return overflow_error(Field::layers, "one token across these layers");
    const Checked state_per_sequence = layout.all_gpu_state_bytes_per_sequence();
    std::uint64_t state_per_gpu = 0;
    for (std::size_t s = 0; s < layout.stages(); ++s)
        state_per_gpu = std::max(state_per_gpu, layout.stage_state_bytes_per_sequence(s));
    const Checked state = state_per_sequence * workload.batch;
    const Checked memory = total + state;
    const Checked memory_per_gpu = layout.gpu_bytes_per_sequence(T, Memory::kv_and_state) * workload.batch;
    if (state.overflow() || memory.overflow() || memory_per_gpu.overflow())
        return overflow_error(Field::batch, "the recurrent state of " + std::to_string(workload.batch) + " sequences");

    KvCacheReport r;
    r.total_bytes = total.value();
    r.per_gpu_bytes = per_gpu.value();
    r.per_sequence_bytes = per_sequence.value();
    r.bytes_per_token = per_token.value();
    r.bytes_per_token_per_gpu = layout.bytes_per_token_per_gpu().value();
    r.state_bytes = state.value();
    r.state_bytes_per_sequence = state_per_sequence.value();
    r.state_bytes_per_gpu = (Checked(state_per_gpu) * workload.batch).value();
    r.memory_bytes = memory.value();
    r.memory_bytes_per_gpu = memory_per_gpu.value();
    r.kv_heads_per_gpu = layout.kv_heads_per_gpu();
    r.replication = layout.replication();
    r.gpus = parallel.gpus();
    r.layers.reserve(arch.layers);
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const std::uint64_t w = layout.window(l);
        const std::uint64_t row = layout.row_bytes_per_gpu(l);
        const std::uint64_t stored = row > 0 ? layout.stored_tokens(w, T) : 0;
        // Each factor is bounded by the checked totals above, so these products fit.
        r.layers.push_back({l, arch.layer(l).kind, w, stored, stored * row * workload.batch * parallel.tp,
                            layout.layer_state_bytes_per_gpu(l) * workload.batch * parallel.tp});
    }

    if (arch.max_positions > 0 && T > arch.max_positions)
        r.warnings.push_back("the context of " + format_count(T) + " tokens exceeds the model's " +
                             format_count(arch.max_positions) + " max positions");
    if (layout.replication() > 1 && !arch.mla)
        r.warnings.push_back("tensor parallel " + std::to_string(parallel.tp) + " exceeds the " +
                             std::to_string(arch.kv_heads) + " KV heads: each KV head is stored on " +
                             std::to_string(layout.replication()) + " GPUs");
    if (arch.mla && parallel.tp > 1)
        r.warnings.push_back("the MLA latent is shared by all heads: each of the " + std::to_string(parallel.tp) +
                             " tensor-parallel GPUs keeps a full copy");
    if (workload.full_window && arch.has_sliding_layers())
        r.warnings.emplace_back(
            "sliding-window layers keep every token (the engine stores the whole context; attention still reads the "
            "window)");
    if (workload.full_window && arch.count_layers(LayerKind::chunked) > 0)
        r.warnings.emplace_back(
            "chunked-attention layers keep every token (the engine stores the whole context; attention still reads the "
            "chunk)");
    if (arch.attention_layers() == 0)
        r.warnings.emplace_back("no layer of this model attends: it keeps no KV cache, only its recurrent state");
    // Integer caches are counted as their bits a value alone: exact for TensorRT-LLM's INT8 cache, whose one
    // scale per tensor lives beside the layer (kv_cache_quant_algo INT8), but LMDeploy's int8 and int4 caches
    // (quant_policy 8 and 4, lmdeploy/turbomind) also keep a scale and a zero point per token and KV head.
    if (layout.dtype() == KvDtype::int8)
        r.warnings.emplace_back(
            "int8: counted at one byte a value, with one scale per tensor beside the layer, as "
            "TensorRT-LLM stores it; LMDeploy's int8 cache also keeps a scale and a zero point "
            "per token and KV head, which this leaves out");
    if (layout.dtype() == KvDtype::int4)
        r.warnings.emplace_back(
            "not exact: int4 is counted at half a byte a value, with no scales; LMDeploy's int4 cache also keeps a "
            "scale and a zero point per token and KV head, which this leaves out");
    for (const auto& reason : arch.not_exact) r.warnings.push_back("not exact: " + reason);
    r.exact = std::none_of(r.warnings.begin(), r.warnings.end(),
                           [](const std::string& w) { return w.starts_with("not exact:"); });
    return r;
}

std::optional<std::uint64_t> context_where_kv_exceeds(const KvLayout& layout, const Workload& workload,
                                                      std::uint64_t limit_bytes, KvScope scope,
                                                      std::uint64_t search_limit, Memory what) {
    // The cache never shrinks as the context grows, so the first token over the limit is found by bisection.
    auto exceeds = [&](std::uint64_t t) {
        const Checked per_sequence = scope == KvScope::all_gpus ? layout.all_gpu_bytes_per_sequence(t, what)
                                                                : layout.gpu_bytes_per_sequence(t, what);
        const Checked kv = per_sequence * workload.batch;
        return kv.overflow() || kv.value() > limit_bytes;
    };
    if (exceeds(0)) return 0;  // the recurrent state alone is over the limit
    if (!exceeds(search_limit)) return std::nullopt;
    std::uint64_t lo = 0, hi = search_limit;  // !exceeds(lo), exceeds(hi)
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (exceeds(mid) ? hi : lo) = mid;
    }
    return hi;
}

}  // namespace kvscope
