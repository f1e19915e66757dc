#pragma once
// Inside the calculator: what every engine's serving simulation shares (simulate.cpp: vLLM's scheduler;
// simulate_sglang.cpp: SGLang's) — the requests' state, the client that sends them (arrival times, a concurrency limit,
// later turns after the turn before), the API server in front of the engine, each token's time, and the counts the
// report is made of. An engine gives the steps. Not a public header.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/serving.h"
#include "kvscope/calculator/simulate.h"

namespace kvscope::detail {

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

enum class State { pending, waiting, running, done, refused };

struct Req {
    const TrafficRequest* in = nullptr;
    std::uint64_t index = 0;
    State state = State::pending;
    double sent_s = 0;
    double first_token_s = -1, last_token_s = 0, done_s = 0;
    std::uint64_t generated = 0;
    std::uint64_t computed = 0;                    // num_computed_tokens
    std::vector<std::uint32_t> blocks;             // in the first KV cache group (full attention)
    std::vector<std::vector<std::uint32_t>> more;  // in the others, in group order (hybrid models)
    std::vector<std::uint64_t> hashes;             // of its full blocks, as far as computed
    std::uint64_t cached_blocks = 0;               // of its blocks, those hashed into the pool
    std::uint64_t dropped = 0;                     // of a windowed group's blocks, those before it, freed
    std::uint64_t scheduled = 0;                   // this step's new tokens
    bool hit_counted = false;
    // SGLang's radix cache (simulate_sglang.cpp): the node its lock holds (0: none) and its tokens in the tree.
    std::uint32_t node = 0;
    std::uint64_t in_tree = 0;
    // Tokens of the request so far: prompt + generated.
    [[nodiscard]] std::uint64_t tokens() const { return in->prompt_tokens + generated; }
};

struct Stats {
    double running_area = 0, waiting_area = 0, in_system_area = 0, used_blocks_area = 0, saved_blocks_area = 0;
    std::uint64_t peak_saved_blocks = 0;
    std::uint64_t peak_blocks = 0, max_running = 0, preemptions = 0, steps = 0;
    std::uint64_t prompt_scheduled = 0, hit_tokens = 0;
    std::vector<std::pair<double, std::uint64_t>> gaps;  // inter-token gaps, with how many tokens had each
    std::vector<TimelinePoint> timeline;
};

class ServingLoop {
public:
    ServingLoop(const std::vector<TrafficRequest>& requests, const ServingSettings& st, const StepCost& cost)
        : st_(st), cost_(cost) {
        reqs_.resize(requests.size());
        for (std::size_t i = 0; i < requests.size(); ++i) {
            reqs_[i].in = &requests[i];
            reqs_[i].index = i;
        }
        for (std::size_t i = 0; i < requests.size(); ++i)
            if (requests[i].follows != kNoRequest && requests[i].follows < requests.size())
                followers_.emplace(requests[i].follows, i);
        // First turns, in arrival order (make_traffic and read_trace give them so).
        for (std::size_t i = 0; i < requests.size(); ++i)
            if (requests[i].follows == kNoRequest) arrivals_.push_back(i);
        for (std::uint64_t i = 0; i < std::min<std::uint64_t>(st.concurrency, requests.size()); ++i)
            free_places_.push(0);
        std::stable_sort(arrivals_.begin(), arrivals_.end(),
                         [&](std::size_t a, std::size_t b) { return requests[a].arrival_s < requests[b].arrival_s; });
    }
    virtual ~ServingLoop() = default;
    ServingLoop(const ServingLoop&) = delete;
    ServingLoop& operator=(const ServingLoop&) = delete;

    // False when `progress` stopped it.
    bool run(const SimulationProgress& progress) {
        while (true) {
            send_arrived();
            reach_engine();
            if (idle()) {
                was_idle_ = true;
                if (!next_arrival()) break;
                continue;
            }
            step();
            if (progress && stats.steps % 512 == 0 &&
                !progress(static_cast<double>(ended_) / static_cast<double>(std::max<std::size_t>(1, reqs_.size()))))
                return false;
        }
        return true;
    }
    [[nodiscard]] std::uint64_t refused() const { return refused_; }

    Stats stats;
    std::vector<Req> reqs_;
    double now = 0;

protected:
    // One step of the engine: it advances `now` by the step's time (account) and samples its tokens (sample).
    virtual void step() = 0;
    // Whether a request of `tokens` tokens fits the whole cache alone.
    [[nodiscard]] virtual bool fits_alone(std::uint64_t tokens) const = 0;
    [[nodiscard]] virtual bool idle() const { return running_.empty() && waiting_.empty(); }

    // Refused (or, past the checks above, never servable): its place in flight and its conversation go on.
    void mark_refused(Req& r) {
        r.state = State::refused;
        ++refused_;
        ++ended_;
        if (st_.concurrency > 0) free_places_.push(r.sent_s);
        finish_follow_ups(r.index, now);
    }
    void finish_follow_ups(std::size_t index, double at) {
        const auto [first, last] = followers_.equal_range(index);
        for (auto it = first; it != last; ++it)
            ready_.emplace(std::max(at, reqs_[it->second].in->arrival_s), it->second);
    }

    // A token sampled for `r` at `now`: its first, or one more after a gap; true when it was the last.
    bool sample(Req& r) {
        if (r.first_token_s < 0) {
            r.first_token_s = now;
        } else {
            const double gap = now - r.last_token_s;
            if (!stats.gaps.empty() && stats.gaps.back().first == gap)
                ++stats.gaps.back().second;
            else
                stats.gaps.emplace_back(gap, 1);
        }
        r.last_token_s = now;
        ++r.generated;
        return r.generated >= r.in->output_tokens;
    }
    // The time of a step of `batch`: the weights once, each request's cache up to its new tokens (`scheduled`), the
    // new tokens' work and their attention over the positions before them.
    [[nodiscard]] double step_time(const std::vector<std::size_t>& batch) const {
        double bytes = cost_.weight_bytes, flops = 0;
        for (const std::size_t i : batch) {
            const Req& r = reqs_[i];
            bytes += kv_read_bytes(cost_, r.computed + r.scheduled);
            const double n = static_cast<double>(r.scheduled);
            flops += n * cost_.flops_per_token +
                     n * (static_cast<double>(r.computed) + (n + 1) / 2) * cost_.attention_flops_per_pair;
        }
        return step_seconds(cost_, bytes, flops);
    }
    // A request done (its memory already given back by the engine): out of the running, its place in flight and its
    // conversation go on.
    void finish(std::size_t i) {
        Req& r = reqs_[i];
        r.state = State::done;
        r.done_s = now;
        ++ended_;
        running_.erase(std::find(running_.begin(), running_.end(), i));
        if (st_.concurrency > 0) free_places_.push(now);
        finish_follow_ups(i, now);
    }
    // A step of `dt` seconds from `now`, with the requests' memory as the engine counts it.
    void account(double dt) {
        const auto run = static_cast<double>(running_.size()), wait = static_cast<double>(waiting_.size());
        stats.running_area += run * dt;
        stats.waiting_area += wait * dt;
        stats.in_system_area += (run + wait) * dt;
        stats.used_blocks_area += static_cast<double>(used_) * dt;
        stats.saved_blocks_area += static_cast<double>(referenced_ - used_) * dt;
        stats.peak_blocks = std::max(stats.peak_blocks, used_);
        stats.peak_saved_blocks = std::max(stats.peak_saved_blocks, referenced_ - used_);
        stats.max_running = std::max<std::uint64_t>(stats.max_running, running_.size());
        stats.timeline.push_back({now, running_.size(), waiting_.size(), used_, referenced_});
    }

    const ServingSettings& st_;
    const StepCost& cost_;
    std::deque<std::size_t> waiting_;
    std::vector<std::size_t> running_;
    bool was_idle_ = true;          // nothing ran or waited before this step (the engine had been idle)
    std::uint64_t used_ = 0;        // blocks (SGLang: tokens) held by requests
    std::uint64_t referenced_ = 0;  // the requests' own views together: what is shared by n counted n times

private:
    // ---- Arrivals: the client sends a request at its time; with a concurrency limit, when a request in flight has
    // ended and freed its place (as vllm bench serve --max-concurrency waits on its semaphore), its latencies
    // counting from then; a later turn of a conversation when the turn before it has ended.
    [[nodiscard]] std::optional<double> next_ready_time() const {
        std::optional<double> t;
        if (!incoming_.empty()) t = incoming_.top().first;
        // A request the client has not sent waits for a free place when there is a limit.
        if (st_.concurrency > 0 && free_places_.empty()) return t;
        if (!ready_.empty() && (!t || ready_.top().first < *t)) t = ready_.top().first;
        if (next_ < arrivals_.size()) {
            const double a = reqs_[arrivals_[next_]].in->arrival_s;
            if (!t || a < *t) t = a;
        }
        return t;
    }
    bool next_arrival() {
        const auto t = next_ready_time();
        if (!t || !std::isfinite(*t)) return false;
        now = std::max(now, *t);
        return true;
    }
    void send_arrived() {
        while (st_.concurrency == 0 || !free_places_.empty()) {
            std::size_t i = 0;
            double at = 0;
            const bool ready_first = !ready_.empty() && (next_ >= arrivals_.size() ||
                                                         ready_.top().first <= reqs_[arrivals_[next_]].in->arrival_s);
            if (ready_first && ready_.top().first <= now) {
                at = ready_.top().first;
                i = ready_.top().second;
                ready_.pop();
            } else if (!ready_first && next_ < arrivals_.size() && reqs_[arrivals_[next_]].in->arrival_s <= now) {
                i = arrivals_[next_++];
                at = reqs_[i].in->arrival_s;
            } else {
                break;
            }
            Req& r = reqs_[i];
            r.sent_s = at;
            if (st_.concurrency > 0) {
                r.sent_s = std::max(at, free_places_.top());
                free_places_.pop();
            }
            if (refuse(r)) continue;
            // The API server: each request's handling one at a time (api_serial_s), then its latency besides
            // (api_latency_s), before the engine's scheduler sees it.
            const double handled = std::max(r.sent_s, api_free_) + st_.api_serial_s;
            api_free_ = handled;
            incoming_.emplace(handled + st_.api_latency_s, i);
        }
    }
    void reach_engine() {
        while (!incoming_.empty() && incoming_.top().first <= now) {
            const std::size_t i = incoming_.top().second;
            incoming_.pop();
            Req& r = reqs_[i];
            stats.in_system_area += now - r.sent_s;  // in the server since it was sent, until this step
            r.state = State::waiting;
            waiting_.push_back(i);
        }
    }
    // The engines refuse a prompt + output longer than the context at the API (vLLM:
    // vllm/entrypoints/openai/serving_engine.py _validate_input; SGLang: tokenizer_manager.py _validate_one_request);
    // one that needs more than the whole cache could never run.
    bool refuse(Req& r) {
        const Checked sum = Checked(r.in->prompt_tokens) + r.in->output_tokens;
        const std::uint64_t total = sum.overflow() ? std::numeric_limits<std::uint64_t>::max() : sum.value();
        // SGLang refuses input + max_new_tokens >= context_len, vLLM more than max_model_len.
        const bool too_long = st_.max_model_len > 0 &&
                              (st_.engine == Engine::sglang ? total >= st_.max_model_len : total > st_.max_model_len);
        if (sum.overflow() || too_long || !fits_alone(total)) {
            mark_refused(r);
            return true;
        }
        return false;
    }

    std::vector<std::size_t> arrivals_;
    std::size_t next_ = 0;
    // Later turns, when each may be sent, earliest first (then the earlier request).
    std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>, std::greater<>>
        ready_;
    // With a concurrency limit: when each free place was freed, earliest first.
    std::priority_queue<double, std::vector<double>, std::greater<>> free_places_;
    // Requests sent, each with when the engine's scheduler sees it (after the API server).
    std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>, std::greater<>>
        incoming_;
    double api_free_ = 0;  // when the API server is done with the requests before
    std::unordered_multimap<std::size_t, std::size_t> followers_;
    std::uint64_t refused_ = 0;
    std::uint64_t ended_ = 0;  // served or refused
};

// SGLang's scheduler over these requests (simulate_sglang.cpp).
std::unique_ptr<ServingLoop> sglang_loop(const std::vector<TrafficRequest>& requests, const ServingSettings& st,
                                         const StepCost& cost);

}  // namespace kvscope::detail
