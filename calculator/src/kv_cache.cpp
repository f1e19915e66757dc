#include "kvscope/calculator/kv_cache.h"

#include <algorithm>

#include "kvscope/calculator/units.h"

namespace kvscope {

FieldError overflow_error(const std::string& field, const std::string& what) {
    return {field, what + " needs more than 2^64 bytes (16 EiB); no machine holds that — reduce it"};
}

std::uint64_t honoured_window(const Architecture& arch, const Workload& workload, std::uint64_t layer) {
    return workload.full_window ? 0 : arch.window_of(layer);
}

Result<KvLayout> KvLayout::make(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                const Parallelism& parallel) {
    Errors errors = validate(arch);
    for (auto& e : validate(workload)) errors.push_back(std::move(e));
    for (auto& e : validate(parallel, arch)) errors.push_back(std::move(e));
    if (!errors.empty()) return errors;

    KvLayout k;
    k.tp_ = parallel.tp;
    k.block_ = workload.block_size;
    k.layers_ = arch.layers;
    Checked row;
    if (arch.mla) {
        // The latent is shared by every head, so every tensor-parallel rank keeps all of it.
        k.kv_heads_per_gpu_ = 1;
        k.replication_ = parallel.tp;
        row = row_bytes(dtype, arch.mla->kv_lora_rank + arch.mla->qk_rope_head_dim);
    } else {
        k.kv_heads_per_gpu_ = std::max<std::uint64_t>(1, arch.kv_heads / parallel.tp);
        k.replication_ = parallel.tp > arch.kv_heads ? parallel.tp / arch.kv_heads : 1;
        const Checked values_k = Checked(k.kv_heads_per_gpu_) * arch.head_dim_k;
        const Checked values_v = Checked(k.kv_heads_per_gpu_) * arch.head_dim_v;
        if (values_k.overflow() || values_v.overflow())
            return overflow_error("head_dim", "a KV row of these heads and head dimensions");
        row = row_bytes(dtype, values_k.value()) + row_bytes(dtype, values_v.value());
    }
    if (row.overflow()) return overflow_error("head_dim", "a KV row of these dimensions");
    k.row_bytes_ = row.value();

    k.layer_windows_.resize(arch.layers);
    for (std::uint64_t l = 0; l < arch.layers; ++l) k.layer_windows_[l] = honoured_window(arch, workload, l);

    // Contiguous pipeline stages; the first (layers % pp) stages take one layer more.
    const std::uint64_t base = arch.layers / parallel.pp, extra = arch.layers % parallel.pp;
    std::uint64_t next = 0;
    for (std::uint64_t s = 0; s < parallel.pp; ++s) {
        const std::uint64_t count = base + (s < extra ? 1 : 0);
        std::vector<Group> groups;
        for (std::uint64_t l = next; l < next + count; ++l) {
            const std::uint64_t w = k.layer_windows_[l];
            auto it = std::find_if(groups.begin(), groups.end(), [w](const Group& g) { return g.window == w; });
            if (it == groups.end())
                groups.push_back({w, 1});
            else
                ++it->layers;
        }
        next += count;
        k.stages_.push_back(std::move(groups));
    }
    return k;
}

std::uint64_t KvLayout::stored_tokens(std::uint64_t window, std::uint64_t tokens) const {
    const Checked rounded = round_up(kept_tokens(window, tokens), block_);
    return rounded.overflow() ? std::numeric_limits<std::uint64_t>::max() : rounded.value();
}

Checked KvLayout::stage_bytes_per_sequence(std::size_t stage, std::uint64_t tokens) const {
    Checked sum;
    for (const auto& g : stages_[stage]) {
        const std::uint64_t kept = g.window == 0 ? tokens : std::min(tokens, g.window);
        sum += round_up(kept, block_) * g.layers * row_bytes_;
    }
    return sum;
}

Checked KvLayout::gpu_bytes_per_sequence(std::uint64_t tokens) const {
    Checked most;
    for (std::size_t s = 0; s < stages_.size(); ++s) {
        const Checked b = stage_bytes_per_sequence(s, tokens);
        if (b.overflow()) return b;
        if (b.value() > most.value()) most = b;
    }
    return most;
}

Checked KvLayout::all_gpu_bytes_per_sequence(std::uint64_t tokens) const {
    Checked sum;
    for (std::size_t s = 0; s < stages_.size(); ++s) sum += stage_bytes_per_sequence(s, tokens);
    return sum * tp_;
}

Checked KvLayout::bytes_per_token_all_gpus() const { return Checked(layers_) * row_bytes_ * tp_; }

Checked KvLayout::bytes_per_token_per_gpu() const {
    std::uint64_t most = 0;
    for (const auto& stage : stages_) {
        std::uint64_t layers = 0;
        for (const auto& g : stage) layers += g.layers;
        most = std::max(most, layers);
    }
    return Checked(most) * row_bytes_;
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
    if (per_sequence.overflow()) return overflow_error("context_tokens", "a context of " + format_count(T) + " tokens");
    const Checked total = per_sequence * workload.batch;
    if (total.overflow())
        return overflow_error(
            "batch", std::to_string(workload.batch) + " concurrent sequences at " + format_count(T) + " tokens");
    const Checked per_gpu = layout.gpu_bytes_per_sequence(T) * workload.batch;
    const Checked per_token = layout.bytes_per_token_all_gpus();
    if (per_token.overflow()) return overflow_error("layers", "one token across these layers");

    KvCacheReport r;
    r.total_bytes = total.value();
    r.per_gpu_bytes = per_gpu.value();
    r.per_sequence_bytes = per_sequence.value();
    r.bytes_per_token = per_token.value();
    r.bytes_per_token_per_gpu = layout.bytes_per_token_per_gpu().value();
    r.kv_heads_per_gpu = layout.kv_heads_per_gpu();
    r.replication = layout.replication();
    r.gpus = parallel.gpus();
    r.layers.reserve(arch.layers);
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const std::uint64_t w = layout.window(l);
        const std::uint64_t stored = layout.stored_tokens(w, T);
        // Each factor is bounded by the checked total above, so these products fit.
        r.layers.push_back({l, w, stored, stored * layout.row_bytes_per_gpu() * workload.batch * parallel.tp});
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
        r.warnings.emplace_back("sliding-window layers keep the full context (the engine ignores their windows)");
    for (const auto& reason : arch.not_exact) r.warnings.push_back("not exact: " + reason);
    return r;
}

std::optional<std::uint64_t> context_where_kv_exceeds(const KvLayout& layout, const Workload& workload,
                                                      std::uint64_t limit_bytes, KvScope scope,
                                                      std::uint64_t search_limit) {
    // The cache never shrinks as the context grows, so the first token over the limit is found by bisection.
    auto exceeds = [&](std::uint64_t t) {
        const Checked per_sequence =
            scope == KvScope::all_gpus ? layout.all_gpu_bytes_per_sequence(t) : layout.gpu_bytes_per_sequence(t);
        const Checked kv = per_sequence * workload.batch;
        return kv.overflow() || kv.value() > limit_bytes;
    };
    if (!exceeds(search_limit)) return std::nullopt;
    std::uint64_t lo = 0, hi = search_limit;  // !exceeds(lo), exceeds(hi)
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (exceeds(mid) ? hi : lo) = mid;
    }
    return hi;
}

}  // namespace kvscope
