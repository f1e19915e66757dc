#pragma once
// vLLM's page manager for models whose layers keep different things: recurrent state or sliding windows beside
// full attention (vllm_pages.cpp). The plain per-layer sum (kv_cache.h) is what vLLM allocates for every other model.

#include <cstdint>
#include <optional>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// How vLLM's hybrid KV cache manager lays out a model with recurrent and full-attention layers, on one GPU
// of each pipeline stage: the attention block is raised so that one block of one attention layer (a page)
// holds a layer's recurrent state, every state is padded to that page, and layers are grouped so that each
// group's tensors are shared page by page (vllm/platforms/interface.py _align_hybrid_block_size,
// vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size, MambaSpec: one page a sequence).
//
// Sliding-window layers beside full-attention ones (Gemma 3, gpt-oss, Cohere 2) are grouped the same way, by the
// same rule, with no state: a sliding group holds the blocks of its window, and one more when the window starts
// inside a block (single_type_kv_cache_manager.py SlidingWindowManager.remove_skipped_blocks frees the blocks
// wholly before the window); a group with fewer layers than the group size still takes a page in every tensor of
// the group (kv_cache_utils.py: "Add N padding layers, may waste at most …").
struct HybridPages {
    std::uint64_t attention_block = 0;  // tokens per attention block
    std::uint64_t page_bytes = 0;       // one block of one attention layer (= one padded state, with states)
    std::uint64_t state_bytes = 0;      // one layer's state before padding (0: sliding and full layers)
    std::uint64_t window = 0;           // the sliding layers' window in tokens (0: none)
    // The windowed layers are chunked-local attention (Llama 4), `window` their chunk: a group holds the blocks of the
    // current chunk (single_type_kv_cache_manager.py ChunkedLocalAttentionManager frees every block wholly before the
    // chunk's start) and vLLM's start check counts the chunk and a prefill chunk (ChunkedLocalAttentionSpec).
    bool chunked = false;
    // The whole model's group size and attention layers of each kind (a pipeline stage keeps every group, with its
    // own share of their layers).
    std::uint64_t model_group_size = 0;
    std::uint64_t model_full_layers = 0;
    std::uint64_t model_sliding_layers = 0;
    struct Stage {
        std::uint64_t group_size = 0;        // layers per group
        std::uint64_t attention_groups = 0;  // groups of full-attention layers
        std::uint64_t state_groups = 0;
        std::uint64_t sliding_groups = 0;
    };
    std::vector<Stage> stages;
    // State pages a sequence keeps beside its running state, one per drafted token under speculative decoding
    // (vllm/v1/kv_cache_interface.py MambaSpec num_speculative_blocks = num_speculative_tokens).
    std::uint64_t speculative_blocks = 0;
    // One sequence on the heaviest GPU at `tokens`: group size x page x (attention groups x blocks + sliding groups x
    // sliding_blocks + state groups x (1 + speculative blocks)).
    [[nodiscard]] Checked bytes_per_sequence(std::uint64_t tokens) const;
    // Blocks a sliding group holds for a sequence at `tokens`: all of them up to the window, then the window's and
    // the one it starts in, at most (the most over every length up to `tokens`, so that the figure never falls as
    // the context grows).
    [[nodiscard]] std::uint64_t sliding_blocks(std::uint64_t tokens) const;
    // The most blocks a sliding (or chunked) group holds for a sequence, however long: sliding_blocks' bound.
    [[nodiscard]] std::uint64_t window_blocks() const;
    // The longest context whose `sequences` fit in `budget` bytes on every GPU; 0 when not even one token does.
    [[nodiscard]] std::uint64_t max_tokens(std::uint64_t budget, std::uint64_t sequences) const;
    // What vLLM checks at start, on the heaviest GPU: that one request of `max_model_len` tokens fits, its sliding
    // groups holding window - 1 + `batched_tokens` tokens (a prefill chunk beside the window) and one block more
    // (vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes), each group's blocks costing
    // group size x page, padding layers included (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory ->
    // _max_memory_usage_bytes_from_groups, "correctly accounts for padding in hybrid models"; earlier releases
    // counted less: the layers' own specs without the padding, or only the first group's blocks). The same as
    // bytes_per_sequence without sliding groups.
    [[nodiscard]] Checked startup_bytes(std::uint64_t max_model_len, std::uint64_t batched_tokens) const;
    // The longest max_model_len that check passes in `budget` bytes (the most a uint64 holds: no limit).
    [[nodiscard]] std::uint64_t startup_max_tokens(std::uint64_t budget, std::uint64_t batched_tokens) const;
};

// vLLM's layout for a model with recurrent layers beside full-attention layers of one row size, or with
// sliding-window layers of one window beside full-attention layers of one row size; none for any other model (the
// plain per-layer sum is what vLLM allocates then). The attention block is vLLM's (a multiple of 16 tokens), or the
// workload's block size when that is larger.
std::optional<HybridPages> vllm_hybrid_pages(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                             const Parallelism& parallel);
// The same from a layout already made of these inputs.
std::optional<HybridPages> vllm_hybrid_pages(const KvLayout& layout, const Architecture& arch, const Workload& workload,
                                             const Parallelism& parallel);

}  // namespace kvscope
