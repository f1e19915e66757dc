#include "kvscope/calculator/simulate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "block_pool.h"
#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/numbers.h"
#include "serving_loop.h"

namespace kvscope {

namespace {

using detail::BlockPool;
using detail::mix;
using detail::Req;
using detail::ServingLoop;
using detail::State;

// The hash of each full block of `r` up to `tokens` tokens: chained over the blocks' contents (span id, offset,
// length), as vLLM chains the parent block's hash with the block's tokens (kv_cache_utils.py hash_block_tokens).
void extend_hashes(Req& r, std::uint64_t tokens, std::uint64_t block) {
    const std::uint64_t full = tokens / block;
    if (r.hashes.size() >= full) return;
    // Walk the spans (then the answer) to the first block not yet hashed.
    std::uint64_t h = r.hashes.empty() ? 0x6b7673636f7065ull : r.hashes.back();
    std::size_t span = 0;
    std::uint64_t offset = r.hashes.size() * block;
    const auto span_at = [&](std::size_t i) -> PromptSpan {
        if (i < r.in->spans.size()) return r.in->spans[i];
        return {r.in->output_id, r.in->output_tokens};
    };
    const std::size_t spans = r.in->spans.size() + 1;
    while (span < spans && offset >= span_at(span).tokens) offset -= span_at(span++).tokens;
    while (r.hashes.size() < full) {
        std::uint64_t left = block;
        while (left > 0 && span < spans) {
            const PromptSpan s = span_at(span);
            const std::uint64_t n = std::min(left, s.tokens - offset);
            h = mix(mix(mix(h, s.id), offset), n);
            left -= n;
            offset += n;
            if (offset == s.tokens) {
                ++span;
                offset = 0;
            }
        }
        if (h == 0) h = 1;  // 0 marks no hash
        r.hashes.push_back(h);
    }
}

class VllmScheduler final : public ServingLoop {
public:
    VllmScheduler(const std::vector<TrafficRequest>& requests, const ServingSettings& st, const StepCost& cost)
        : ServingLoop(requests, st, cost),
          groups_(st.groups),
          pool_(st.kv_blocks),
          // vLLM 0.11 turns prefix caching off for models with recurrent state (vllm/model_executor/models/config.py
          // MambaModelConfig.verify_and_update_config: "Hybrid or mamba-based model detected without support for
          // prefix caching: disabling"); serving_setup says so.
          caching_(st.prefix_caching && st.groups.state == 0) {}

private:
    [[nodiscard]] bool fits_alone(std::uint64_t tokens) const override { return most_blocks(tokens) <= pool_.usable(); }
    // The most blocks a request of `tokens` tokens holds: a block per block_size tokens in each full group; in each
    // windowed group its window's and a prefill chunk's (a chunk's blocks are taken before the next step frees those
    // before the window; SlidingWindowSpec.max_memory_usage_bytes: window − 1 + chunk tokens and a block, chunked:
    // the chunk and a prefill chunk); its blocks in each state group.
    [[nodiscard]] std::uint64_t most_blocks(std::uint64_t tokens) const {
        const std::uint64_t b = st_.block_size, blocks = ceil_div(tokens, b), w = groups_.window;
        const std::uint64_t chunk = st_.max_num_batched_tokens;
        const std::uint64_t windowed = w == 0            ? 0
                                       : groups_.chunked ? ceil_div(w + chunk, b)
                                                         : ceil_div(w - 1 + chunk, b) + 1;
        const Checked n = Checked(groups_.full) * blocks + Checked(groups_.sliding) * std::min(blocks, windowed) +
                          Checked(groups_.state) * groups_.state_blocks;
        return n.saturated();
    }
    // A request's block list in group `g` (full groups first, then the windowed ones, then the states').
    static std::vector<std::uint32_t>& list(Req& r, std::uint64_t g) { return g == 0 ? r.blocks : r.more[g - 1]; }
    // A block's hash in group `g`: vLLM keys its cached blocks by (hash, group id) (block_pool.py
    // BlockHashToBlockMap, get_cached_block(block_hash, kv_cache_group_ids)).
    static std::uint64_t key(std::uint64_t hash, std::uint64_t g) {
        if (g == 0) return hash;
        const std::uint64_t k = mix(hash, g);
        return k == 0 ? 1 : k;
    }
    static constexpr std::uint32_t kNull = BlockPool::kNone;  // vLLM's null block, in place of a freed one

    // ---- allocate_slots (vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots): first the blocks a
    // windowed group no longer sees are freed (remove_skipped_blocks at the tokens computed before this step), then
    // the blocks for computed + new tokens, after `hit_n` hit blocks (hits_), in every group; false (nothing more
    // changed) when the free queue is short, counting the hit blocks no request holds, which the free queue counts as
    // free.
    bool allocate(Req& r, std::uint64_t new_tokens, std::uint64_t hit_n) {
        const std::uint64_t b = st_.block_size;
        const std::uint64_t start = r.computed + hit_n * b;
        const std::uint64_t need_tokens = std::min(start + new_tokens, r.tokens());
        const std::uint64_t blocks = ceil_div(need_tokens, b);
        const std::uint64_t groups = groups_.count(), paged = groups_.full + groups_.sliding;
        if (groups > 1 && r.more.empty()) r.more.resize(groups - 1);
        if (groups_.sliding > 0) drop_skipped(r);
        const std::uint64_t held = r.blocks.size() + hit_n;
        const bool states_due = groups_.state > 0 && r.more.back().empty();
        // The common case, a decode within its last block that fills none: nothing to take or cache.
        if (hit_n == 0 && blocks <= held && !states_due && (!caching_ || r.cached_blocks >= need_tokens / b))
            return true;
        const std::uint64_t fresh_each = blocks > held ? blocks - held : 0;
        const std::uint64_t fresh = paged * fresh_each + (states_due ? groups_.state * groups_.state_blocks : 0);
        std::uint64_t free_hits = 0, hit_blocks = 0;
        for (std::uint64_t k = 0; hit_n > 0 && k < hits_.size(); ++k) {
            if (hits_[k] == kNull) continue;
            ++hit_blocks;
            if (pool_.ref(hits_[k]) == 0) ++free_hits;
        }
        if (fresh + free_hits > pool_.free_blocks()) return false;
        // Every group's hits out of the free queue first, then the new blocks, so that no group takes another's hit
        // as a new block (KVCacheManager.allocate_slots: the computed blocks touched before allocate_new_blocks).
        for (std::uint64_t g = 0; g < paged; ++g) {
            std::vector<std::uint32_t>& l = list(r, g);
            if (l.capacity() == 0) l.reserve((r.in->prompt_tokens + r.in->output_tokens) / b + 1);
            for (std::uint64_t k = 0; k < hit_n; ++k) {
                const std::uint32_t h = hits_[g * hit_n + k];
                if (h != kNull) pool_.touch(h);
                l.push_back(h);
            }
        }
        for (std::uint64_t g = 0; g < paged; ++g)
            for (std::uint64_t i = 0; i < fresh_each; ++i) list(r, g).push_back(pool_.take());
        if (states_due)
            for (std::uint64_t g = paged; g < groups; ++g)
                for (std::uint64_t i = 0; i < groups_.state_blocks; ++i) list(r, g).push_back(pool_.take());
        if (hit_n > 0) r.dropped = hit_first_;
        used_ += fresh + free_hits;
        referenced_ += fresh + hit_blocks;
        // The blocks full after this step are cached now, so a request admitted later in the same step hits them
        // (KVCacheManager.allocate_slots: cache_blocks(request, num_computed + num_new_tokens)); a null block is not
        // (BlockPool.cache_full_blocks skips them).
        if (caching_) {
            extend_hashes(r, need_tokens, b);
            const std::uint64_t full = need_tokens / b;
            for (; r.cached_blocks < full && r.cached_blocks < r.blocks.size(); ++r.cached_blocks)
                for (std::uint64_t g = 0; g < paged; ++g) {
                    const std::uint32_t blk = list(r, g)[r.cached_blocks];
                    if (blk != kNull) pool_.cache(blk, key(r.hashes[r.cached_blocks], g));
                }
        }
        return true;
    }
    // SlidingWindowManager.remove_skipped_blocks at the tokens computed: the blocks wholly before the window
    // (computed - window + 1 tokens skipped, get_num_skipped_tokens), or, chunked, before the current chunk
    // (ChunkedLocalAttentionManager.get_num_skipped_tokens: computed // chunk x chunk), freed, the last first, group
    // by group, a null block in each one's place.
    void drop_skipped(Req& r) {
        const std::uint64_t w = groups_.window, c = r.computed;
        if (w == 0) return;
        const std::uint64_t skipped = groups_.chunked ? c / w * w : (c + 1 > w ? c + 1 - w : 0);
        const std::uint64_t target = std::min<std::uint64_t>(skipped / st_.block_size, r.blocks.size());
        if (target <= r.dropped) return;
        for (std::uint64_t g = groups_.full; g < groups_.full + groups_.sliding; ++g) {
            std::vector<std::uint32_t>& l = list(r, g);
            for (std::uint64_t k = target; k-- > r.dropped;) {
                const std::uint32_t blk = l[k];
                if (blk == kNull) continue;
                if (pool_.ref(blk) == 1) --used_;
                --referenced_;
                pool_.release_one(blk);
                l[k] = kNull;
            }
        }
        r.dropped = target;
    }
    void release(Req& r) {
        for (std::uint64_t g = 0; g < 1 + r.more.size(); ++g) {
            std::vector<std::uint32_t>& l = list(r, g);
            for (const std::uint32_t blk : l) {
                if (blk == kNull) continue;
                if (pool_.ref(blk) == 1) --used_;
                --referenced_;
            }
            pool_.release(l);
            l.clear();
        }
        r.cached_blocks = 0;
        r.dropped = 0;
    }
    // get_computed_blocks (kv_cache_manager.py): the longest prefix of cached full blocks, at most (tokens − 1)
    // tokens so the last token is computed for its logits (max_cache_hit_length = num_tokens − 1). The full groups
    // left to right, a block a hit when every full group caches it (FullAttentionManager.find_longest_cache_hit); then
    // within that, a sliding group's hit ends at the last run, right to left, of ceil((window − 1) / block) blocks
    // every sliding group caches, the blocks before it null (SlidingWindowManager.find_longest_cache_hit), or, chunked,
    // runs from the start of the chunk the full hit ends in (ChunkedLocalAttentionManager.find_longest_cache_hit); the
    // full hit is cut to it (HybridKVCacheCoordinator.find_longest_cache_hit, one pass for full attention beside one
    // other kind). Fills hits_ group by group (hit_n blocks each) and hit_first_; returns hit_n.
    std::uint64_t cache_hits(Req& r) {
        hits_.clear();
        hit_first_ = 0;
        if (!caching_ || r.tokens() == 0) return 0;
        const std::uint64_t b = st_.block_size, full = groups_.full, windowed = groups_.sliding;
        const std::uint64_t max_blocks = (r.tokens() - 1) / b;
        extend_hashes(r, max_blocks * b, b);
        const auto cached_in_all = [&](std::uint64_t k, std::uint64_t first, std::uint64_t count) {
            for (std::uint64_t g = first; g < first + count; ++g)
                if (pool_.cached(key(r.hashes[k], g)) == BlockPool::kNone) return false;
            return true;
        };
        std::uint64_t n = 0;
        while (n < max_blocks && cached_in_all(n, 0, full)) ++n;
        if (windowed > 0 && n > 0) {
            if (groups_.chunked) {
                hit_first_ = n * b / groups_.window * groups_.window / b;
                std::uint64_t k = hit_first_;
                while (k < n && cached_in_all(k, full, windowed)) ++k;
                n = k;
            } else {
                const std::uint64_t want = std::max<std::uint64_t>(1, ceil_div(groups_.window - 1, b));
                std::uint64_t run = 0;
                bool found = false;
                for (std::uint64_t i = n; i-- > 0;) {
                    if (!cached_in_all(i, full, windowed)) {
                        run = 0;
                        continue;
                    }
                    if (++run >= want) {
                        hit_first_ = i;
                        n = i + run;
                        found = true;
                        break;
                    }
                }
                if (!found) n = run;
            }
        }
        for (std::uint64_t g = 0; g < full + windowed; ++g)
            for (std::uint64_t k = 0; k < n; ++k)
                hits_.push_back(g >= full && k < hit_first_ ? kNull : pool_.cached(key(r.hashes[k], g)));
        return n;
    }
    // A running request's blocks freed, its work recomputed from the start: back to the front of the waiting
    // queue (scheduler.py: self.running.pop(), num_computed_tokens = 0, self.waiting.prepend_request).
    void preempt(std::size_t i) {
        Req& r = reqs_[i];
        release(r);
        r.computed = 0;
        r.state = State::waiting;
        r.scheduled = 0;
        waiting_.push_front(i);
        ++stats.preemptions;
    }

    // ---- One step (Scheduler.schedule, then the model runs it, then update_from_output).
    void step() override {
        std::uint64_t budget = st_.max_num_batched_tokens;
        std::vector<std::size_t>& scheduled = scheduled_;
        scheduled.clear();
        bool preempted = false;
        // RUNNING first, in admission order; each takes min(what it has left, the budget): 1 for a decode.
        for (std::size_t k = 0; k < running_.size() && budget > 0; ++k) {
            const std::size_t i = running_[k];
            Req& r = reqs_[i];
            const std::uint64_t n = std::min(r.tokens() - r.computed, budget);
            bool scheduled_it = true;
            while (!allocate(r, n, 0)) {
                // The last running request is preempted until this one fits, or it is itself the last.
                const std::size_t victim = running_.back();
                running_.pop_back();
                preempt(victim);
                preempted = true;
                if (victim == i) {
                    scheduled_it = false;
                    break;
                }
            }
            if (!scheduled_it) break;
            r.scheduled = n;
            budget -= n;
            scheduled.push_back(i);
        }
        // WAITING, only in a step that preempted none, in queue order while the budget and max_num_seqs allow; the
        // first that does not fit stops admission (allocate_slots returning None: break).
        while (!preempted && !waiting_.empty() && budget > 0 && running_.size() < st_.max_num_seqs) {
            const std::size_t i = waiting_.front();
            Req& r = reqs_[i];
            if (caching_ && r.hashes.capacity() == 0)  // its whole length's hashes, once
                r.hashes.reserve((r.in->prompt_tokens + r.in->output_tokens) / st_.block_size + 1);
            hits_.clear();
            const std::uint64_t hit_n = r.computed == 0 ? cache_hits(r) : 0;
            const std::uint64_t hit_tokens = hit_n * st_.block_size;
            const std::uint64_t n = std::min(r.tokens() - r.computed - hit_tokens, budget);
            if (!allocate(r, n, hit_n)) break;
            waiting_.pop_front();
            r.computed += hit_tokens;
            if (!r.hit_counted) {  // a request's first admission: its prompt against the cache
                r.hit_counted = true;
                stats.prompt_scheduled += r.in->prompt_tokens;
                stats.hit_tokens += std::min(hit_tokens, r.in->prompt_tokens);
            }
            r.state = State::running;
            r.scheduled = n;
            budget -= n;
            running_.push_back(i);
            scheduled.push_back(i);
        }
        if (scheduled.empty()) {  // not even the first could run (fits_alone let it by): never loop on it
            Req& r = reqs_[waiting_.front()];
            waiting_.pop_front();
            release(r);
            mark_refused(r);
            return;
        }
        const double dt = step_time(scheduled);
        account(dt);
        now += dt;
        ++stats.steps;
        // update_from_output: a request whose computed tokens reach its tokens samples one (the step that computes
        // the last prompt token gives the first output token; gpu_model_runner.py discards unfinished chunks').
        std::vector<std::size_t>& finished = finished_;
        finished.clear();
        for (const std::size_t i : scheduled) {
            Req& r = reqs_[i];
            r.computed += r.scheduled;
            r.scheduled = 0;
            if (r.computed < r.tokens()) continue;
            if (sample(r)) finished.push_back(i);
        }
        for (const std::size_t i : finished) {
            Req& r = reqs_[i];
            release(r);
            std::vector<std::uint32_t>().swap(r.blocks);  // its memory back for the requests still to come
            std::vector<std::vector<std::uint32_t>>().swap(r.more);
            std::vector<std::uint64_t>().swap(r.hashes);
            finish(i);
        }
    }

    const ServingSettings::Groups& groups_;
    BlockPool pool_;
    bool caching_;
    std::vector<std::size_t> scheduled_;  // this step's requests (kept to reuse its memory)
    std::vector<std::size_t> finished_;
    std::vector<std::uint32_t> hits_;  // the admitted request's hit blocks, group by group
    std::uint64_t hit_first_ = 0;      // of them, the windowed groups' leading null blocks
};

// The percentiles as numpy's percentile gives them (linear between the two nearest ranks), which vllm bench serve
// reports (vllm/benchmarks/serve.py calculate_metrics: np.percentile).
Percentiles percentiles(std::vector<double> v) {
    Percentiles p;
    if (v.empty()) return p;
    std::sort(v.begin(), v.end());
    const auto at = [&](double q) {
        const double rank = q / 100 * static_cast<double>(v.size() - 1);
        const auto lo = static_cast<std::size_t>(std::floor(rank));
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
    };
    p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    p.median = at(50);
    p.p90 = at(90);
    p.p99 = at(99);
    return p;
}

// The same over values each given with a count (the inter-token gaps: every token of a step has the step's).
Percentiles weighted_percentiles(std::vector<std::pair<double, std::uint64_t>> v) {
    Percentiles p;
    std::uint64_t n = 0;
    double sum = 0;
    for (const auto& [x, c] : v) {
        n += c;
        sum += x * static_cast<double>(c);
    }
    if (n == 0) return p;
    std::sort(v.begin(), v.end());
    const auto nth = [&](std::uint64_t k) {  // the k-th value (from 0) of the sorted list
        for (const auto& [x, c] : v) {
            if (k < c) return x;
            k -= c;
        }
        return v.back().first;
    };
    const auto at = [&](double q) {
        const double rank = q / 100 * static_cast<double>(n - 1);
        const auto lo = static_cast<std::uint64_t>(std::floor(rank));
        const double a = nth(lo), b = nth(std::min(lo + 1, n - 1));
        return a + (b - a) * (rank - static_cast<double>(lo));
    };
    p.mean = sum / static_cast<double>(n);
    p.median = at(50);
    p.p90 = at(90);
    p.p99 = at(99);
    return p;
}

Percentiles in_ms(Percentiles p) { return {p.mean * 1e3, p.median * 1e3, p.p90 * 1e3, p.p99 * 1e3}; }

}  // namespace

Result<SimulationReport> simulate_serving(const std::vector<TrafficRequest>& requests, const ServingSettings& settings,
                                          const StepCost& cost, const SimulationProgress& progress) {
    if (requests.empty()) return FieldError{"--requests", "no requests to serve"};
    if (settings.kv_blocks < 2) return FieldError{"--gpu", "the KV budget holds no block"};
    if (settings.engine != Engine::sglang && settings.kv_blocks > std::numeric_limits<std::uint32_t>::max() - 1)
        return FieldError{"--block-size", "more than 2^32 blocks: choose a larger block"};
    if (settings.block_size == 0) return FieldError{"--block-size", "must be at least 1 token"};
    if (settings.max_num_batched_tokens == 0) return FieldError{"--max-num-batched-tokens", "must be at least 1"};
    if (settings.max_num_seqs == 0) return FieldError{"--max-num-seqs", "must be at least 1"};
    for (const TrafficRequest& r : requests)
        if (!std::isfinite(r.arrival_s) || r.arrival_s < 0)
            return FieldError{"--trace", "a request's arrival time is not a time from the start (" +
                                             number_text(r.arrival_s) + " s)"};
    const std::unique_ptr<ServingLoop> loop = settings.engine == Engine::sglang
                                                  ? detail::sglang_loop(requests, settings, cost)
                                                  : std::make_unique<VllmScheduler>(requests, settings, cost);
    ServingLoop& sim = *loop;
    if (!sim.run(progress)) return FieldError{"simulate", "cancelled"};
    SimulationReport r;
    r.refused = sim.refused();
    std::vector<double> ttft, tpot, e2e;
    std::uint64_t input = 0, output = 0;
    for (const Req& q : sim.reqs_) {
        if (q.state != State::done) continue;
        ++r.requests;
        ttft.push_back(q.first_token_s - q.sent_s);
        e2e.push_back(q.done_s - q.sent_s);
        if (q.in->output_tokens > 1)
            tpot.push_back((q.done_s - q.first_token_s) / static_cast<double>(q.in->output_tokens - 1));
        input += q.in->prompt_tokens;
        output += q.in->output_tokens;
    }
    r.duration_s = sim.now;
    if (r.duration_s > 0) {
        r.request_throughput = static_cast<double>(r.requests) / r.duration_s;
        r.output_throughput = static_cast<double>(output) / r.duration_s;
        r.input_throughput = static_cast<double>(input) / r.duration_s;
        r.mean_running = sim.stats.running_area / r.duration_s;
        r.mean_waiting = sim.stats.waiting_area / r.duration_s;
        r.mean_in_system = sim.stats.in_system_area / r.duration_s;
    }
    r.ttft_ms = in_ms(percentiles(ttft));
    r.tpot_ms = in_ms(percentiles(tpot));
    r.e2e_ms = in_ms(percentiles(e2e));
    r.itl_ms = in_ms(weighted_percentiles(sim.stats.gaps));
    r.max_running = sim.stats.max_running;
    // vLLM holds block 0 back as its null block; SGLang's pool is tokens, every one usable.
    r.kv_budget_blocks = settings.engine == Engine::sglang ? settings.kv_blocks : settings.kv_blocks - 1;
    r.kv_budget_bytes_per_gpu = r.kv_budget_blocks * settings.bytes_per_block;  // within the fit's budget
    r.kv_peak_blocks = sim.stats.peak_blocks;
    r.kv_peak_bytes_per_gpu = sim.stats.peak_blocks * settings.bytes_per_block;
    const Checked per_sequence =
        settings.worst_case_bytes_per_sequence > 0
            ? Checked(settings.worst_case_bytes_per_sequence)
            : Checked(ceil_div(settings.max_model_len, settings.block_size)) * settings.bytes_per_block;
    const Checked worst = Checked(r.max_running) * per_sequence;
    r.kv_worst_case_bytes_per_gpu = worst.saturated();
    if (worst.overflow()) r.warnings.emplace_back("the worst case passes 2^64 bytes; its figure is that limit");
    if (r.duration_s > 0 && r.kv_budget_blocks > 0)
        r.kv_mean_used_fraction = sim.stats.used_blocks_area / r.duration_s / static_cast<double>(r.kv_budget_blocks);
    r.prefix_hit_tokens = sim.stats.hit_tokens;
    r.prefix_hit_rate = sim.stats.prompt_scheduled > 0 ? static_cast<double>(sim.stats.hit_tokens) /
                                                             static_cast<double>(sim.stats.prompt_scheduled)
                                                       : 0;
    // Many requests each referencing a long shared prompt can count past 2^64 bytes: saturated, never wrapped.
    const auto bytes_of = [&](std::uint64_t blocks) {
        const Checked b = Checked(blocks) * settings.bytes_per_block;
        return b.saturated();
    };
    r.prefix_saved_peak_bytes_per_gpu = bytes_of(sim.stats.peak_saved_blocks);
    if (r.duration_s > 0)
        r.prefix_saved_mean_bytes_per_gpu = static_cast<std::uint64_t>(
            std::llround(sim.stats.saved_blocks_area / r.duration_s * static_cast<double>(settings.bytes_per_block)));
    // The hit tokens' matmul work (step_seconds' compute term, each pipeline stage in turn; their attention over the
    // prefix left out): GPU time of work, not the latency it would have added, since a step takes the longer of its
    // reads and its work.
    r.prefix_saved_prefill_s =
        step_seconds(cost, 0, static_cast<double>(sim.stats.hit_tokens) * cost.flops_per_token) - cost.overhead_s;
    r.preemptions = sim.stats.preemptions;
    r.steps = sim.stats.steps;
    // At most timeline_points points, evenly over the steps, the last one kept.
    const std::vector<TimelinePoint>& all = sim.stats.timeline;
    const std::size_t points = std::max<std::size_t>(2, settings.timeline_points);
    const std::size_t stride = std::max<std::size_t>(1, (all.size() + points - 1) / points);
    for (std::size_t i = 0; i < all.size(); i += stride) r.timeline.push_back(all[i]);
    if (!all.empty() && (r.timeline.empty() || r.timeline.back().t_s != all.back().t_s))
        r.timeline.push_back(all.back());
    for (TimelinePoint& p : r.timeline) {
        p.kv_used_bytes *= settings.bytes_per_block;  // within the budget
        p.kv_unshared_bytes = bytes_of(p.kv_unshared_bytes);
    }
    if (r.requests + r.refused != requests.size())
        r.warnings.push_back(std::to_string(requests.size() - r.requests - r.refused) +
                             " requests were neither served nor refused: the simulation is not complete");
    if (r.refused > 0)
        r.warnings.push_back(std::to_string(r.refused) + " request" + (r.refused == 1 ? "" : "s") +
                             " refused: longer than max_model_len (" + std::to_string(settings.max_model_len) +
                             " tokens, the context) or than the whole cache");
    return r;
}

}  // namespace kvscope
