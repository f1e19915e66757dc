#pragma once
// The CPU backend's decode attention over the allocated cache, shared by the probe's attention timing and the
// decode step: the cache's slots, one thread's scratch, and the flash-decoding kernel.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "cpu_kernels.h"
#include "reference.h"

namespace kvscope::probe::cpu {

// Runs fn(i, worker) for i in [0, n) on `threads` threads (worker in [0, threads)), handing out
// items one at a time.
template <class Fn>
void parallel_for(std::size_t n, unsigned threads, Fn fn) {
    std::atomic<std::size_t> next{0};
    auto work = [&](unsigned worker) {
        for (std::size_t i = next++; i < n; i = next++) fn(i, worker);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& t : pool) t.join();
}

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, FreeDeleter>;

// One sequence × layer of cache, as the attention reads it.
struct Slot {
    const void* k = nullptr;
    const void* v = nullptr;  // MLA: the latent again (its first kv_lora_rank values)
    std::uint64_t layer = 0;
    std::uint64_t tokens = 0;  // tokens attended (not the block padding)
};

using Shape = AttentionShape;

// A bf16 cache on a CPU with a BF16 dot instruction, in groups of four with rows of whole vectors:
// the queries are rounded to bf16, as GPU kernels keep them.
inline bool uses_bf16_dot(KvDtype dtype, const Shape& sh) {
    return dtype == KvDtype::bf16 && has_bf16_dot() && (sh.q_heads / sh.kv_heads) % 4 == 0 && sh.dk % 16 == 0;
}

constexpr std::uint64_t kTile = 128;  // tokens per tile: its scores stay in L1, its V rows in L2

// One thread's working memory for attend: a tile's scores ([token][query head]), the output, and
// the running softmax. Allocated once per probe; its size is the report's workspace.
struct Scratch {
    // `dtype`: the cache's format; fp8 and block formats add a tile of K and V rows converted to fp32.
    explicit Scratch(const Shape& sh, KvDtype dtype = KvDtype::fp32)
        : scores(sh.q_heads * kTile),
          out(sh.q_heads * sh.dv),
          run_max(sh.q_heads),
          run_sum(sh.q_heads),
          tile_max(sh.q_heads),
          k_tile(direct(dtype) ? 0 : kTile * sh.row_k),
          v_tile(direct(dtype) ? 0 : kTile * sh.row_v) {}
    std::uint64_t bytes() const {
        return (scores.size() + out.size() + run_max.size() + run_sum.size() + tile_max.size() + k_tile.size() +
                v_tile.size()) *
               sizeof(float);
    }
    std::vector<float> scores, out, run_max, run_sum, tile_max, k_tile, v_tile;
    double checksum = 0;
};

void attend(const Slot& s, const Shape& sh, KvDtype dtype, const float* q, const std::uint16_t* q_bf16, Scratch& sc);

}  // namespace kvscope::probe::cpu
