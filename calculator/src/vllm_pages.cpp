// vLLM's page manager for hybrid and sliding-window models (vllm_pages.h): the pages, groups and start check.
#include "kvscope/calculator/vllm_pages.h"

#include <algorithm>
#include <limits>

#include "kvscope/calculator/units.h"

namespace kvscope {

std::uint64_t HybridPages::sliding_blocks(std::uint64_t tokens) const {
    // At `tokens`, vLLM has freed the blocks that lie wholly before the window (skipped tokens: tokens - window),
    // so it holds cdiv(tokens, b) - floor((tokens - window) / b): the window's blocks, and one more while the window
    // starts inside a block. The most over every shorter length is min(cdiv(tokens, b), window_blocks()).
    if (window == 0 || attention_block == 0) return 0;
    return std::min(ceil_div(tokens, attention_block), window_blocks());
}

std::uint64_t HybridPages::window_blocks() const {
    if (window == 0 || attention_block == 0) return 0;
    // A sliding group: cdiv(window + b - 1, b). A chunked group skips floor((tokens - 1) / chunk) x chunk tokens: the
    // chunk's blocks where it starts on a block, and one more where it starts inside one (the same most as a window's).
    return chunked && window % attention_block == 0 ? window / attention_block
                                                    : ceil_div(window + attention_block - 1, attention_block);
}

namespace {

// What vLLM's start check counts for one request of max_model_len in a windowed group: a sliding group the window
// less one and a prefill chunk of `batched_tokens`, and a block more (SlidingWindowSpec.max_memory_usage_bytes); a
// chunked group the chunk and a prefill chunk (ChunkedLocalAttentionSpec.max_memory_usage_bytes,
// vllm/v1/kv_cache_interface.py). `cap` is the blocks that grow with the context, `fixed` the block more.
struct StartBlocks {
    std::uint64_t cap = 0, fixed = 0;
};
StartBlocks start_blocks(const HybridPages& h, std::uint64_t batched_tokens) {
    const Checked tokens = Checked(h.chunked ? h.window : h.window - 1) + batched_tokens;
    return {ceil_div(tokens.saturated(), h.attention_block), h.chunked ? 0u : 1u};
}

}  // namespace

Checked HybridPages::bytes_per_sequence(std::uint64_t tokens) const {
    Checked most;
    for (const Stage& s : stages) {
        const Checked pages = Checked(s.attention_groups) * ceil_div(tokens, attention_block) +
                              Checked(s.sliding_groups) * sliding_blocks(tokens) +
                              Checked(s.state_groups) * (Checked(speculative_blocks) + 1);
        const Checked bytes = Checked(s.group_size) * page_bytes * pages;
        if (bytes.overflow()) return bytes;
        if (bytes.value() > most.value()) most = bytes;
    }
    return most;
}

namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

// The most blocks c a sequence may reach with `pages` pages of a group set: attention x c + sliding x min(c, cap)
// + fixed <= pages; kNoLimit when nothing bounds it, nullopt when not even the fixed pages fit.
std::optional<std::uint64_t> most_blocks(std::uint64_t pages, std::uint64_t attention, std::uint64_t sliding,
                                         std::uint64_t cap, std::uint64_t fixed) {
    if (pages < fixed) return std::nullopt;
    const std::uint64_t left = pages - fixed;
    if (attention + sliding == 0) return kNoLimit;
    const std::uint64_t blocks = left / (attention + sliding);  // while every group grows alike, up to the cap
    if (sliding == 0 || blocks < cap) return blocks;
    if (attention == 0) return kNoLimit;        // sliding groups alone: no context is too long
    return (left - sliding * cap) / attention;  // left >= (attention + sliding) x cap here
}

}  // namespace

std::uint64_t HybridPages::max_tokens(std::uint64_t budget, std::uint64_t sequences) const {
    std::uint64_t best = kNoLimit;
    for (const Stage& s : stages) {
        const Checked per_page_set = Checked(sequences) * s.group_size * page_bytes;
        if (per_page_set.overflow() || per_page_set.value() == 0) continue;
        const Checked state_pages = Checked(s.state_groups) * (Checked(speculative_blocks) + 1);
        if (state_pages.overflow()) return 0;
        const auto blocks = most_blocks(budget / per_page_set.value(), s.attention_groups, s.sliding_groups,
                                        window_blocks(), state_pages.value());
        if (!blocks) return 0;
        if (*blocks == kNoLimit) continue;
        const Checked tokens = Checked(*blocks) * attention_block;
        best = std::min(best, tokens.overflow() ? kNoLimit : tokens.value());
    }
    return best;
}

Checked HybridPages::startup_bytes(std::uint64_t max_model_len, std::uint64_t batched_tokens) const {
    if (window == 0) return bytes_per_sequence(max_model_len);
    Checked most;
    const StartBlocks start = start_blocks(*this, batched_tokens);
    const std::uint64_t held = std::min(start.cap, ceil_div(max_model_len, attention_block)) + start.fixed;
    for (const Stage& s : stages) {
        const Checked pages = Checked(s.attention_groups) * ceil_div(max_model_len, attention_block) +
                              Checked(s.sliding_groups) * held +
                              Checked(s.state_groups) * (Checked(speculative_blocks) + 1);
        const Checked bytes = Checked(s.group_size) * page_bytes * pages;
        if (bytes.overflow()) return bytes;
        if (bytes.value() > most.value()) most = bytes;
    }
    return most;
}

std::uint64_t HybridPages::startup_max_tokens(std::uint64_t budget, std::uint64_t batched_tokens) const {
    if (window == 0) return max_tokens(budget, 1);
    std::uint64_t best = kNoLimit;
    const StartBlocks start = start_blocks(*this, batched_tokens);
    for (const Stage& s : stages) {
        const Checked per_page_set = Checked(s.group_size) * page_bytes;
        if (per_page_set.overflow() || per_page_set.value() == 0) continue;
        // Each sliding group's one block more is fixed, beside the states'.
        const Checked fixed =
            Checked(s.sliding_groups) * start.fixed + Checked(s.state_groups) * (Checked(speculative_blocks) + 1);
        if (fixed.overflow()) return 0;
        const auto blocks =
            most_blocks(budget / per_page_set.value(), s.attention_groups, s.sliding_groups, start.cap, fixed.value());
        if (!blocks) return 0;
        if (*blocks == kNoLimit) continue;
        const Checked tokens = Checked(*blocks) * attention_block;
        best = std::min(best, tokens.overflow() ? kNoLimit : tokens.value());
    }
    return best;
}

namespace {

// Layers of one kind (`layers` says which hold it; a layer may hold two, as Falcon-H1's attention and Mamba mixers),
// and the stage's count its groups go to.
struct Kind {
    std::vector<bool> layers;
    std::uint64_t HybridPages::Stage::*groups;
};

// The model's groups of several kinds of layer and each pipeline stage's share (vllm/v1/core/kv_cache_utils.py
// _get_kv_cache_groups_uniform_page_size: groups of the fewest layers any kind has, or of the most where that is
// under 1.5 times the fewest; each kind's layers in order, dealt round-robin into its groups, layers[i::num_groups];
// get_kv_cache_configs: the groups are built from every worker's layers, then each worker keeps every group with
// its own layers of it). A stage's tensors are as many as its fullest group has layers there. Fills the stages'
// group sizes and counts; returns the model's group size.
std::uint64_t group_kinds(const std::vector<Kind>& kinds, const Architecture& arch, const Parallelism& parallel,
                          HybridPages& h) {
    std::uint64_t fewest = 0, most = 0;
    std::vector<std::uint64_t> counts;
    for (const Kind& k : kinds) {
        const auto n = static_cast<std::uint64_t>(std::count(k.layers.begin(), k.layers.end(), true));
        counts.push_back(n);
        if (n == 0) continue;
        fewest = fewest == 0 ? n : std::min(fewest, n);
        most = std::max(most, n);
    }
    const std::uint64_t size = 2 * most < 3 * fewest ? most : fewest;
    // Each layer's group of each kind, the groups numbered across the kinds.
    std::vector<std::vector<std::uint64_t>> group(kinds.size(), std::vector<std::uint64_t>(arch.layers, 0));
    std::vector<std::uint64_t> groups(kinds.size(), 0);
    std::uint64_t first_group = 0;
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        groups[k] = counts[k] > 0 ? ceil_div(counts[k], size) : 0;
        std::uint64_t next = 0;
        for (std::uint64_t l = 0; l < arch.layers; ++l)
            if (kinds[k].layers[l]) group[k][l] = first_group + next++ % groups[k];
        first_group += groups[k];
    }
    for (std::uint64_t s = 0; s < parallel.pp; ++s) {
        const auto [first, layers] = stage_layers(arch.layers, parallel, s);
        std::vector<std::uint64_t> in_group(first_group + 1, 0);
        HybridPages::Stage st;
        for (std::uint64_t l = first; l < first + layers; ++l)
            for (std::size_t k = 0; k < kinds.size(); ++k)
                if (kinds[k].layers[l]) ++in_group[group[k][l]];
        st.group_size = *std::max_element(in_group.begin(), in_group.end());
        for (std::size_t k = 0; k < kinds.size(); ++k) st.*(kinds[k].groups) += groups[k];
        h.stages.push_back(st);
    }
    return size;
}

// Sliding-window layers of one window beside full-attention layers, every one of one row size, with no state.
std::optional<HybridPages> vllm_sliding_pages(const KvLayout& layout, const Architecture& arch,
                                              const Workload& workload, const Parallelism& parallel) {
    std::uint64_t row = 0, window = 0, full = 0;
    std::optional<bool> chunked;  // whether the windowed layers are chunked-local rather than sliding
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const std::uint64_t r = layout.row_bytes_per_gpu(l);
        if (r == 0) continue;  // a layer reading another's cache, or none: no pages of its own
        if (row > 0 && r != row) return std::nullopt;
        row = r;
        const std::uint64_t w = layout.window(l);  // 0 under --full-window, as vLLM's layers without one
        if (w == 0) {
            ++full;
        } else {
            if (window > 0 && w != window) return std::nullopt;  // two windows: three kinds, not modelled here
            const bool c = arch.layer(l).kind == LayerKind::chunked;
            if (chunked && *chunked != c) return std::nullopt;  // sliding and chunked: three kinds, not modelled
            chunked = c;
            window = w;
        }
    }
    if (window == 0 || full == 0) return std::nullopt;  // one kind: the plain per-layer sum
    HybridPages h;
    h.chunked = chunked.value_or(false);
    h.attention_block = std::max<std::uint64_t>(workload.block_size, 16);  // vLLM's CUDA default block
    h.page_bytes = h.attention_block * row;
    h.window = window;
    std::vector<bool> is_full(arch.layers, false), is_sliding(arch.layers, false);
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        if (layout.row_bytes_per_gpu(l) == 0) continue;
        (layout.window(l) == 0 ? is_full : is_sliding)[l] = true;
    }
    h.model_group_size = group_kinds(
        {{is_full, &HybridPages::Stage::attention_groups}, {is_sliding, &HybridPages::Stage::sliding_groups}}, arch,
        parallel, h);
    h.model_full_layers = full;
    h.model_sliding_layers = static_cast<std::uint64_t>(std::count(is_sliding.begin(), is_sliding.end(), true));
    return h;
}

}  // namespace

std::optional<HybridPages> vllm_hybrid_pages(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                             const Parallelism& parallel) {
    if (arch.attention_layers() == 0) return std::nullopt;
    auto layout = KvLayout::make(arch, dtype, workload, parallel);
    if (!layout) return std::nullopt;
    return vllm_hybrid_pages(*layout, arch, workload, parallel);
}

std::optional<HybridPages> vllm_hybrid_pages(const KvLayout& made, const Architecture& arch, const Workload& workload,
                                             const Parallelism& parallel) {
    if (arch.attention_layers() == 0) return std::nullopt;
    if (!arch.recurrent || arch.state_layers() == 0) return vllm_sliding_pages(made, arch, workload, parallel);
    const KvLayout* layout = &made;
    std::uint64_t row = 0, state = 0, window = 0;
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const LayerSpec spec = arch.layer(l);
        // Full attention, or a sliding window of one length (PLaMo 2's attention layers); chunked or shared
        // layers beside a state are not modelled here.
        if (spec.attends() && spec.kind != LayerKind::full && spec.kind != LayerKind::sliding) return std::nullopt;
        const std::uint64_t r = layout->row_bytes_per_gpu(l);
        if (r > 0 && row > 0 && r != row) return std::nullopt;
        if (r > 0) row = r;
        if (const std::uint64_t w = r > 0 ? layout->window(l) : 0; w > 0) {  // 0 under --full-window
            if (window > 0 && w != window) return std::nullopt;
            window = w;
        }
        if (spec.keeps_state()) state = layout->layer_state_bytes_per_gpu(l);
    }
    if (row == 0 || state == 0) return std::nullopt;
    HybridPages h;
    // _align_hybrid_block_size (vllm/model_executor/models/config.py HybridAttentionMambaModelConfig): the attention
    // block, a multiple of the kernel block, such that one block of one attention layer holds one layer's state; the
    // state's page is then padded to that size. A sliding layer's page is a full one's (the block is sized from
    // FullAttentionSpec's bytes a token, which a SlidingWindowSpec shares).
    // (aligned to vLLM's 16-token kernel block; a larger --block-size of the user's is kept when it is larger)
    h.attention_block = std::max<std::uint64_t>(workload.block_size, 16 * ceil_div(state, 16 * row));
    h.page_bytes = h.attention_block * row;
    h.state_bytes = state;
    h.window = window;
    // The model's groups of full-attention, sliding and state layers, each pipeline stage keeping every group.
    std::vector<bool> full(arch.layers, false), sliding(arch.layers, false), states(arch.layers, false);
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        if (layout->row_bytes_per_gpu(l) > 0) (layout->window(l) == 0 ? full : sliding)[l] = true;
        states[l] = arch.layer(l).keeps_state();
    }
    h.model_group_size = group_kinds({{full, &HybridPages::Stage::attention_groups},
                                      {sliding, &HybridPages::Stage::sliding_groups},
                                      {states, &HybridPages::Stage::state_groups}},
                                     arch, parallel, h);
    h.model_full_layers = static_cast<std::uint64_t>(std::count(full.begin(), full.end(), true));
    h.model_sliding_layers = static_cast<std::uint64_t>(std::count(sliding.begin(), sliding.end(), true));
    return h;
}

}  // namespace kvscope
