#pragma once
// Inside the calculator: vLLM's pool of KV blocks as the serving simulation (simulate.cpp) keeps it — the free queue in
// LRU order, reference counts, and the prefix cache's block hashes. Not a public header.

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace kvscope::detail {

// Block hashes to the block that caches each: open addressing with linear probing in a power-of-two table twice the
// pool's size (the pool never holds more hashes than blocks), deletion by backward shift. Hash 0 marks an empty slot
// (extend_hashes never gives 0). The standard unordered_map's divisions and scattered nodes made it most of the time.
class BlockHashes {
public:
    explicit BlockHashes(std::uint64_t blocks) {
        std::uint64_t size = 16;
        while (size < 2 * blocks) size *= 2;
        keys_.assign(size, 0);
        values_.assign(size, 0);
        mask_ = size - 1;
    }
    [[nodiscard]] std::optional<std::uint32_t> find(std::uint64_t key) const {
        for (std::uint64_t i = slot(key);; i = (i + 1) & mask_) {
            if (keys_[i] == key) return values_[i];
            if (keys_[i] == 0) return std::nullopt;
        }
    }
    // False when the key is there already (its block kept).
    bool insert(std::uint64_t key, std::uint32_t value) {
        std::uint64_t i = slot(key);
        for (; keys_[i] != 0; i = (i + 1) & mask_)
            if (keys_[i] == key) return false;
        keys_[i] = key;
        values_[i] = value;
        return true;
    }
    void erase(std::uint64_t key) {
        std::uint64_t i = slot(key);
        while (keys_[i] != key) {
            if (keys_[i] == 0) return;
            i = (i + 1) & mask_;
        }
        // Backward shift: move each later entry of the run into the gap when its home slot allows.
        for (std::uint64_t j = (i + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
            const std::uint64_t home = slot(keys_[j]);
            if (((j - home) & mask_) >= ((j - i) & mask_)) {
                keys_[i] = keys_[j];
                values_[i] = values_[j];
                i = j;
            }
        }
        keys_[i] = 0;
    }

private:
    [[nodiscard]] std::uint64_t slot(std::uint64_t key) const { return (key * 0x9e3779b97f4a7c15ull >> 17) & mask_; }
    std::vector<std::uint64_t> keys_;
    std::vector<std::uint32_t> values_;
    std::uint64_t mask_ = 0;
};

// ---- The block pool: vllm/v1/core/block_pool.py (BlockPool) and kv_cache_utils.py (FreeKVCacheBlockQueue).
class BlockPool {
public:
    explicit BlockPool(std::uint64_t blocks)
        : ref_(blocks, 0), hash_(blocks, 0), prev_(blocks, kNone), next_(blocks, kNone), by_hash_(blocks) {
        // The free queue starts in block-id order; block 0 is the null block, never free (BlockPool.__init__).
        for (std::uint32_t b = 1; b < blocks; ++b) push_back(b);
    }
    [[nodiscard]] std::uint64_t free_blocks() const { return free_; }
    [[nodiscard]] std::uint64_t usable() const { return ref_.size() - 1; }
    [[nodiscard]] std::uint32_t ref(std::uint32_t b) const { return ref_[b]; }

    // A cached block by its hash, or kNone.
    [[nodiscard]] std::uint32_t cached(std::uint64_t hash) const { return by_hash_.find(hash).value_or(kNone); }
    // A hit: out of the free queue when no request held it (BlockPool.touch).
    void touch(std::uint32_t b) {
        if (ref_[b]++ == 0) unlink(b);
    }
    // A new block from the head of the free queue (least recently freed); a cached one loses its hash there and
    // then (BlockPool.get_new_blocks, _maybe_evict_cached_block).
    std::uint32_t take() {
        const std::uint32_t b = head_;
        unlink(b);
        if (hash_[b] != 0) {
            if (by_hash_.find(hash_[b]) == b) by_hash_.erase(hash_[b]);
            hash_[b] = 0;
        }
        ref_[b] = 1;
        return b;
    }
    // A full block's hash, kept while the block is free until it is taken (BlockPool.cache_full_blocks). A hash
    // already cached in another block stays with that one.
    void cache(std::uint32_t b, std::uint64_t hash) {
        if (hash_[b] != 0) return;
        if (by_hash_.insert(hash, b)) hash_[b] = hash;
    }
    // A request's blocks, last first, to the tail of the free queue: its tail is evicted before its prefix
    // (SingleTypeKVCacheManager.free passes reversed(req_blocks); BlockPool.free_blocks).
    // The null block (kNone) in a windowed group's list is skipped.
    void release(const std::vector<std::uint32_t>& blocks) {
        for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
            if (*it != kNone) release_one(*it);
    }
    void release_one(std::uint32_t b) {
        if (--ref_[b] == 0) push_back(b);
    }

    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

private:
    void push_back(std::uint32_t b) {
        prev_[b] = tail_;
        next_[b] = kNone;
        if (tail_ != kNone)
            next_[tail_] = b;
        else
            head_ = b;
        tail_ = b;
        ++free_;
    }
    void unlink(std::uint32_t b) {
        if (prev_[b] != kNone)
            next_[prev_[b]] = next_[b];
        else
            head_ = next_[b];
        if (next_[b] != kNone)
            prev_[next_[b]] = prev_[b];
        else
            tail_ = prev_[b];
        prev_[b] = next_[b] = kNone;
        --free_;
    }
    std::vector<std::uint32_t> ref_;
    std::vector<std::uint64_t> hash_;
    std::vector<std::uint32_t> prev_, next_;
    std::uint32_t head_ = kNone, tail_ = kNone;
    std::uint64_t free_ = 0;
    BlockHashes by_hash_;
};

}  // namespace kvscope::detail
