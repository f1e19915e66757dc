// SGLang's scheduler, step by step (serving_loop.h gives the client, the API server and the counts): the rules of
// SGLang v0.5.6 (2025-12), each with the file it follows (python/sglang/srt/...):
// - a radix tree of cached tokens at token granularity (page size 1, mem_cache/radix_cache.py): a request matches its
//   longest cached prefix (at most its tokens less one), locks it while it runs, inserts its prompt once prefilled
//   (cache_unfinished_req) and its whole sequence when done (cache_finished_req); unlocked leaves are evicted least
//   recently used when tokens run out (evict);
// - prefill first: each iteration builds a prefill batch if any request can be admitted, else decodes every running
//   request (managers/scheduler.py get_next_batch_to_run); the two are never mixed (enable_mixed_chunk off);
// - admission in arrival order (schedule_policy fcfs) by PrefillAdder (managers/schedule_policy.py): a request needs
//   its new tokens and its answer (at most 4,096 tokens, SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION) below what is free
//   and evictable less each running request's answer still to come times new_token_ratio; at most max_prefill_tokens
//   of input a batch (the first request may pass it), chunked_prefill_size a batch, a longer prompt cut into chunks
//   with one chunked request at a time, run before any other; at most max_running_requests running;
// - new_token_ratio from 0.7 down to 0.098 over 600 decode steps, back to 0.7 when idle (scheduler.py);
// - a decode step short of tokens retracts requests, the fewest answer tokens first (on a tie the longest prompt),
//   until the rest fit; a retracted request's own tokens are freed, its prompt left in the tree, and it waits at the
//   end of the queue, to be prefilled again (managers/schedule_batch.py retract_decode).
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "kvscope/calculator/numbers.h"
#include "serving_loop.h"

namespace kvscope::detail {

namespace {

// The runs of tokens of `r` (its prompt's spans, then its answer so far), each as (content id, length), up to `limit`
// tokens; `f` returns false to stop.
template <class F>
void for_runs(const Req& r, std::uint64_t limit, F f) {
    std::uint64_t left = limit;
    const auto give = [&](std::uint64_t id, std::uint64_t n) {
        const std::uint64_t take = std::min(n, left);
        if (take == 0) return false;
        left -= take;
        return f(id, take) && left > 0;
    };
    for (const PromptSpan& s : r.in->spans)
        if (!give(s.id, s.tokens)) return;
    give(r.in->output_id, r.generated);
}

// ---- The radix tree (mem_cache/radix_cache.py RadixCache). A node holds a run of one content id's tokens
// [start, start + len); its children are found by (node, id, start of their run).
class RadixTree {
public:
    RadixTree() {
        nodes_.emplace_back();
        nodes_[0].lock = 1;  // the root: never evicted
    }
    [[nodiscard]] std::uint64_t tokens() const { return tokens_; }
    [[nodiscard]] std::uint64_t evictable() const { return evictable_; }

    // The longest cached prefix of `r`'s first `limit` tokens: its last node (a node the match ends inside is split
    // there, as match_prefix splits it) and its length; each node on the way accessed `now`.
    std::pair<std::uint32_t, std::uint64_t> match(const Req& r, std::uint64_t limit, double now) {
        const Walk w = walk(r, limit, now, false);
        return {w.node, w.matched};
    }
    // `r`'s first `upto` tokens into the tree (insert): the nodes it lacks made, unlocked. Its last node.
    std::uint32_t insert(const Req& r, std::uint64_t upto, double now) { return walk(r, upto, now, true).node; }
    // inc_lock_ref / dec_lock_ref: a node and every node above it; a node's tokens are evictable while none locks it.
    void lock(std::uint32_t n) {
        for (; n != 0; n = nodes_[n].parent)
            if (nodes_[n].lock++ == 0) evictable_ -= nodes_[n].len;
    }
    void unlock(std::uint32_t n) {
        for (; n != 0; n = nodes_[n].parent)
            if (--nodes_[n].lock == 0) {
                evictable_ += nodes_[n].len;
                if (nodes_[n].children == 0) offer(n);
            }
    }
    // evict: unlocked leaves, least recently used first, until `want` tokens are freed or none is left; the tokens
    // freed.
    std::uint64_t evict(std::uint64_t want) {
        std::uint64_t freed = 0;
        while (freed < want && !leaves_.empty()) {
            const Leaf leaf = leaves_.top();
            leaves_.pop();
            Node& node = nodes_[leaf.node];
            if (node.generation != leaf.generation || node.lock > 0 || node.children > 0) continue;
            if (node.last_access != leaf.access) {  // used since: its place in the queue is later
                offer(leaf.node);
                continue;
            }
            freed += node.len;
            tokens_ -= node.len;
            evictable_ -= node.len;
            children_.erase(Key{node.parent, node.id, node.start});
            const std::uint32_t parent = node.parent;
            node.generation++;
            node.len = 0;
            free_.push_back(leaf.node);
            if (parent != 0 && --nodes_[parent].children == 0 && nodes_[parent].lock == 0) offer(parent);
            if (parent == 0) --nodes_[0].children;
        }
        return freed;
    }

private:
    struct Node {
        std::uint32_t parent = 0;
        std::uint64_t id = 0, start = 0, len = 0;
        std::uint32_t lock = 0, children = 0, generation = 0;
        double last_access = 0;
    };
    struct Key {
        std::uint64_t parent, id, start;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const { return mix(mix(k.parent, k.id), k.start); }
    };
    struct Leaf {
        double access;
        std::uint32_t node, generation;
        // Least recently used first; ties by node, so that every library's heap takes them in one order.
        bool operator>(const Leaf& o) const {
            if (access != o.access) return access > o.access;
            if (node != o.node) return node > o.node;
            return generation > o.generation;
        }
    };

    // Down the tree along `r`'s first `limit` tokens, splitting a node the path leaves inside and, with `make`,
    // making the nodes it lacks: the last node and the tokens found.
    struct Walk {
        std::uint32_t node = 0;
        std::uint64_t matched = 0;
    };
    Walk walk(const Req& r, std::uint64_t limit, double now, bool make_missing) {
        Walk w;
        for_runs(r, limit, [&](std::uint64_t id, std::uint64_t len) {
            for (std::uint64_t off = 0; off < len;) {
                std::uint32_t n = 0;
                if (const auto c = child(w.node, id, off)) {
                    n = *c;
                    const std::uint64_t m = std::min(nodes_[n].len, len - off);
                    if (m < nodes_[n].len) n = split(n, m);
                    w.matched += m;
                    off += m;
                } else if (make_missing) {
                    n = make(w.node, id, off, len - off);
                    off = len;
                } else {
                    return false;
                }
                touch(n, now);
                w.node = n;
            }
            return true;
        });
        return w;
    }
    [[nodiscard]] std::optional<std::uint32_t> child(std::uint32_t node, std::uint64_t id, std::uint64_t start) const {
        const auto it = children_.find(Key{node, id, start});
        if (it == children_.end()) return std::nullopt;
        return it->second;
    }
    void touch(std::uint32_t n, double now) { nodes_[n].last_access = now; }
    void offer(std::uint32_t n) { leaves_.push({nodes_[n].last_access, n, nodes_[n].generation}); }
    // A node's place: one an evicted node left, or a new one; its generation kept (the leaves' queue tells them so).
    std::uint32_t place(const Node& node) {
        std::uint32_t n = 0;
        if (!free_.empty()) {
            n = free_.back();
            free_.pop_back();
        } else {
            n = static_cast<std::uint32_t>(nodes_.size());
            nodes_.emplace_back();
        }
        const std::uint32_t generation = nodes_[n].generation;
        nodes_[n] = node;
        nodes_[n].generation = generation;
        return n;
    }
    std::uint32_t make(std::uint32_t parent, std::uint64_t id, std::uint64_t start, std::uint64_t len) {
        const std::uint32_t n = place(Node{parent, id, start, len, 0, 0, 0, 0});
        children_[Key{parent, id, start}] = n;
        ++nodes_[parent].children;
        tokens_ += len;
        evictable_ += len;
        offer(n);
        return n;
    }
    // _split_node: `n`'s first `m` tokens become a new node above it, with its locks.
    std::uint32_t split(std::uint32_t n, std::uint64_t m) {
        const Node old = nodes_[n];
        const std::uint32_t top = place(Node{old.parent, old.id, old.start, m, old.lock, 1, 0, old.last_access});
        children_[Key{old.parent, old.id, old.start}] = top;
        Node& rest = nodes_[n];
        rest.parent = top;
        rest.start = old.start + m;
        rest.len = old.len - m;
        children_[Key{top, rest.id, rest.start}] = n;
        return top;
    }

    std::vector<Node> nodes_;
    std::vector<std::uint32_t> free_;
    std::unordered_map<Key, std::uint32_t, KeyHash> children_;
    std::priority_queue<Leaf, std::vector<Leaf>, std::greater<>> leaves_;
    std::uint64_t tokens_ = 0, evictable_ = 0;
};

constexpr double kInitRatio = 0.7;                              // SGLANG_INIT_NEW_TOKEN_RATIO
constexpr double kMinRatio = kInitRatio * 0.14;                 // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
constexpr double kRatioDecay = (kInitRatio - kMinRatio) / 600;  // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
constexpr std::uint64_t kClipNewTokens = 4096;                  // SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
constexpr std::uint64_t kRetractSteps = 20;                     // SGLANG_RETRACT_DECODE_STEPS
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

class SglangScheduler final : public ServingLoop {
public:
    SglangScheduler(const std::vector<TrafficRequest>& requests, const ServingSettings& st, const StepCost& cost)
        : ServingLoop(requests, st, cost), pool_(st.kv_blocks), caching_(st.prefix_caching) {}

private:
    [[nodiscard]] bool fits_alone(std::uint64_t tokens) const override { return tokens < pool_; }
    // The pool's tokens neither in the tree nor a request's own (none rather than fewer than none: a chunk or a
    // decode that found too few after evicting holds more than the pool, which the peak then shows).
    [[nodiscard]] std::uint64_t available() const {
        const std::uint64_t held = tree_.tokens() + private_;
        return held >= pool_ ? 0 : pool_ - held;
    }

    void step() override {
        if (was_idle_) ratio_ = kInitRatio;  // idle before this step (self_check_during_idle)
        was_idle_ = false;
        if (!prefill()) decode();
    }

    // ---- get_new_batch_prefill with PrefillAdder: false when no request can be admitted.
    bool prefill() {
        if (waiting_.empty() && chunked_ == kNone) return false;
        const std::uint64_t decoding = running_.size() - (chunked_ == kNone ? 0 : 1);
        if (chunked_ == kNone && (batch_is_full_ || decoding >= st_.max_num_seqs)) return false;
        // PrefillAdder's budgets: what is free and evictable now (a hit locked on the way is no longer evictable)
        // less the offsets: the running requests' answers still to come at the ratio, and what this batch takes.
        double total_offset = 0, cur_offset = 0;
        for (const std::size_t i : running_) {
            if (i == chunked_) continue;
            const Req& r = reqs_[i];
            total_offset += static_cast<double>(std::min(r.in->output_tokens - r.generated, kClipNewTokens)) * ratio_;
        }
        const auto room = [&] { return static_cast<double>(available() + tree_.evictable()); };
        const auto rem_total = [&] { return room() - total_offset; };
        const auto cur_rem = [&] { return room() - cur_offset; };
        std::int64_t rem_input = static_cast<std::int64_t>(st_.max_prefill_tokens);
        std::int64_t rem_chunk = static_cast<std::int64_t>(st_.max_num_batched_tokens);
        batch_.clear();
        const auto take = [&](std::uint64_t n, std::uint64_t answer) {
            total_offset += static_cast<double>(n + answer);
            cur_offset += static_cast<double>(n);
            rem_input -= static_cast<std::int64_t>(n);
            rem_chunk -= static_cast<std::int64_t>(n);
        };
        // The chunked request's next chunk first (add_chunked_req): what the chunk and the tokens allow; its answer
        // reserved with its last chunk.
        if (chunked_ != kNone) {
            Req& r = reqs_[chunked_];
            const std::uint64_t left = r.tokens() - r.computed;
            const auto most =
                static_cast<std::uint64_t>(std::max(0.0, std::min(static_cast<double>(rem_chunk), rem_total())));
            const std::uint64_t n = std::min(left, most);
            if (n > 0) {
                r.scheduled = n;
                take(n, n == left ? std::min(r.in->output_tokens - r.generated, kClipNewTokens) : 0);
                batch_.push_back(chunked_);
            }
        }
        std::uint64_t admitted = 0;
        // Then the waiting, in order, while the budgets last (each add's budget_state); the chunked request took the
        // whole chunk unless this was its last.
        while (!waiting_.empty() && rem_total() > 0 && cur_rem() > 0 && rem_input > 0 && rem_chunk > 0 &&
               decoding + admitted < st_.max_num_seqs) {
            const std::size_t i = waiting_.front();
            Req& r = reqs_[i];
            // match_prefix over what it must compute (its prompt, and a retracted request's answer so far), at most
            // all but its last token (Req.init_next_round_input).
            std::pair<std::uint32_t, std::uint64_t> hit{0, 0};
            if (caching_ && r.tokens() > 1) hit = tree_.match(r, r.tokens() - 1, now);
            const std::uint64_t extend = r.tokens() - hit.second;
            const std::uint64_t answer = std::min(r.in->output_tokens - r.generated, kClipNewTokens);
            const auto need = static_cast<double>(extend + answer);
            if (need >= rem_total()) {  // NO_TOKEN
                batch_is_full_ = true;
                break;
            }
            if (static_cast<std::int64_t>(extend) >= rem_input && !batch_.empty()) break;  // OTHER
            // Checked again with the hit locked: its tokens are no longer evictable (add_one_req, _lock_node).
            if (caching_) tree_.lock(hit.first);
            if (need >= rem_total()) {
                if (caching_) tree_.unlock(hit.first);
                batch_is_full_ = true;
                break;
            }
            waiting_.pop_front();
            r.state = State::running;
            r.computed = hit.second;
            r.in_tree = hit.second;
            r.node = hit.first;
            referenced_ += hit.second;
            if (!r.hit_counted) {  // a request's first admission: its prompt against the cache
                r.hit_counted = true;
                stats.prompt_scheduled += r.in->prompt_tokens;
                stats.hit_tokens += std::min(hit.second, r.in->prompt_tokens);
            }
            running_.push_back(i);
            batch_.push_back(i);
            ++admitted;
            if (static_cast<std::int64_t>(extend) <= rem_chunk) {
                r.scheduled = extend;
                take(extend, answer);
            } else {  // cut to the chunk left: the chunked request, its answer not reserved yet
                r.scheduled = static_cast<std::uint64_t>(rem_chunk);
                chunked_ = i;
                take(r.scheduled, 0);
                break;
            }
            if (rem_total() <= 0 || cur_rem() <= 0) batch_is_full_ = true;
        }
        if (batch_.empty()) return false;
        std::uint64_t need = 0;
        for (const std::size_t i : batch_) need += reqs_[i].scheduled;
        make_room(need);
        run_batch();
        for (const std::size_t i : batch_) {
            Req& r = reqs_[i];
            if (r.computed < r.tokens()) {  // a chunk: what it computed into the tree, the rest to come
                cache_unfinished(r);
                continue;
            }
            if (i == chunked_) chunked_ = kNone;
            if (sample(r))
                done(i);
            else
                cache_unfinished(r);
        }
        return true;
    }

    // ---- A decode step of every running request but the chunked one, after retract_decode if tokens are short.
    void decode() {
        batch_.clear();
        for (const std::size_t i : running_)
            if (i != chunked_) batch_.push_back(i);
        if (batch_.empty()) {  // nothing can run: never loop on it (a request no cache could hold)
            if (!waiting_.empty()) {
                Req& r = reqs_[waiting_.front()];
                waiting_.pop_front();
                mark_refused(r);
            } else if (chunked_ != kNone) {
                const std::size_t i = chunked_;
                chunked_ = kNone;
                drop(i);
                mark_refused(reqs_[i]);
            }
            return;
        }
        if (available() + tree_.evictable() < batch_.size()) {
            retract();
        } else {
            ratio_ = std::max(kMinRatio, ratio_ - kRatioDecay);
        }
        for (const std::size_t i : batch_) reqs_[i].scheduled = 1;
        make_room(batch_.size());
        run_batch();
        finished_.clear();
        for (const std::size_t i : batch_)
            if (sample(reqs_[i])) finished_.push_back(i);
        for (const std::size_t i : finished_) done(i);
    }

    // retract_decode: the requests sorted by (answer tokens, −prompt tokens), the last retracted first, until the rest
    // fit a token each; never the last one. The cache is then evicted to leave the rest 20 steps of tokens.
    void retract() {
        std::stable_sort(batch_.begin(), batch_.end(), [&](std::size_t a, std::size_t b) {  // Python's sort: stable
            const Req &x = reqs_[a], &y = reqs_[b];
            if (x.generated != y.generated) return x.generated > y.generated;
            return x.in->prompt_tokens < y.in->prompt_tokens;
        });
        while (batch_.size() > 1 && available() + tree_.evictable() < batch_.size()) {
            const std::size_t i = batch_.back();
            batch_.pop_back();
            drop(i);
            reqs_[i].state = State::waiting;
            waiting_.push_back(i);
            ++stats.preemptions;
        }
        const std::uint64_t want = kRetractSteps * batch_.size();
        if (available() < want) tree_.evict(want - available());
        std::uint64_t out = 0, most = 0;
        for (const std::size_t i : batch_) {
            out += reqs_[i].generated;
            most += reqs_[i].in->output_tokens;
        }
        ratio_ =
            std::min(1.0, static_cast<double>(out + kRetractSteps * batch_.size()) / static_cast<double>(most + 1));
        batch_is_full_ = false;
    }

    // A request out of the running, its own tokens freed and its lock on the tree let go (release_req).
    void drop(std::size_t i) {
        Req& r = reqs_[i];
        private_ -= r.computed - r.in_tree;
        referenced_ -= r.computed;
        if (caching_) tree_.unlock(r.node);
        r.computed = r.in_tree = 0;
        r.node = 0;
        running_.erase(std::find(running_.begin(), running_.end(), i));
    }

    // Tokens for `need` new ones, the cache evicted for them when the free ones are short (alloc_token_slots).
    void make_room(std::uint64_t need) {
        if (available() < need) tree_.evict(need - available());
    }

    // The batch's step: its time (the roofline as vLLM's steps take it), then its tokens computed.
    void run_batch() {
        std::uint64_t added = 0;
        for (const std::size_t i : batch_) added += reqs_[i].scheduled;
        private_ += added;
        referenced_ += added;
        used_ = tree_.tokens() - tree_.evictable() + private_;
        const double dt = step_time(batch_);
        account(dt);
        now += dt;
        ++stats.steps;
        for (const std::size_t i : batch_) {
            Req& r = reqs_[i];
            r.computed += r.scheduled;
            r.scheduled = 0;
        }
    }

    // cache_unfinished_req: what `r` computed into the tree, its lock moved to the new end; tokens the tree held
    // already are freed from the request.
    void cache_unfinished(Req& r) {
        if (!caching_) return;
        const std::uint32_t node = tree_.insert(r, r.computed, now);
        private_ -= r.computed - r.in_tree;
        tree_.lock(node);
        tree_.unlock(r.node);
        r.node = node;
        r.in_tree = r.computed;
    }
    // cache_finished_req: its whole sequence computed into the tree, unlocked; then the request is done.
    void done(std::size_t i) {
        Req& r = reqs_[i];
        if (caching_) {
            tree_.insert(r, r.computed, now);
            tree_.unlock(r.node);
        }
        private_ -= r.computed - r.in_tree;
        referenced_ -= r.computed;
        r.node = 0;
        r.in_tree = 0;
        batch_is_full_ = false;
        finish(i);
    }

    std::uint64_t pool_;  // max_total_num_tokens
    bool caching_;        // the radix cache (off: --disable-radix-cache, every token the request's own)
    RadixTree tree_;
    std::uint64_t private_ = 0;  // tokens the running requests hold outside the tree
    double ratio_ = kInitRatio;  // new_token_ratio
    bool batch_is_full_ = false;
    std::size_t chunked_ = kNone;
    std::vector<std::size_t> batch_, finished_;
};

}  // namespace

std::unique_ptr<ServingLoop> sglang_loop(const std::vector<TrafficRequest>& requests, const ServingSettings& st,
                                         const StepCost& cost) {
    return std::make_unique<SglangScheduler>(requests, st, cost);
}

}  // namespace kvscope::detail
