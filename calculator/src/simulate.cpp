#include "kvscope/calculator/simulate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

using json::Value;

double kv_read_bytes(const StepCost& cost, std::uint64_t tokens) {
    double bytes = cost.state_bytes_per_sequence;
    for (const StepCost::KvGroup& g : cost.kv_groups)
        bytes += static_cast<double>(g.window == 0 ? tokens : std::min(tokens, g.window)) * g.bytes_per_token;
    return bytes;
}

double step_seconds(const StepCost& cost, double bytes, double flops) {
    const double read_s =
        cost.bandwidth_bytes_per_s > 0 ? bytes / (cost.bandwidth_bytes_per_s * cost.bandwidth_efficiency) : 0;
    const double work_s = cost.flops_per_s > 0 ? flops / (cost.flops_per_s * cost.compute_efficiency) : 0;
    return cost.overhead_s + static_cast<double>(cost.stages) * std::max(read_s, work_s);
}

Result<StepCost> step_cost(const Scenario& s) {
    if (!s.deployment) return FieldError{"--gpu", "simulate needs a deployment (a GPU)"};
    const Deployment& d = *s.deployment;
    auto fitted = fit(s.arch, s.kv_dtype, s.workload, s.parallel, d);
    if (!fitted) return fitted.errors();
    // The cache per token by window, per GPU: a one-token report gives each layer's bytes for one token (all GPUs);
    // the heaviest GPU holds per_gpu_bytes of total_bytes.
    Workload one = s.workload;
    one.context_tokens = 1;
    one.batch = 1;
    one.block_size = 1;
    auto kv = kv_cache_report(s.arch, s.kv_dtype, one, s.parallel);
    if (!kv) return kv.errors();
    const double gpu_share =
        kv->total_bytes > 0 ? static_cast<double>(kv->per_gpu_bytes) / static_cast<double>(kv->total_bytes) : 0;
    StepCost c;
    for (const LayerKv& l : kv->layers) {
        if (l.bytes == 0) continue;
        const std::uint64_t window = s.workload.full_window ? 0 : l.window;
        auto group = std::find_if(c.kv_groups.begin(), c.kv_groups.end(),
                                  [&](const StepCost::KvGroup& g) { return g.window == window; });
        if (group == c.kv_groups.end()) group = c.kv_groups.insert(c.kv_groups.end(), {window, 0});
        group->bytes_per_token += static_cast<double>(l.bytes) * gpu_share;
    }
    c.state_bytes_per_sequence = static_cast<double>(kv->state_bytes_per_gpu);
    const std::uint64_t stages = std::max<std::uint64_t>(1, s.parallel.pp);
    c.stages = stages;
    // Per stage: the weights of one GPU; the cache of a stage's layers (the per-GPU figures above are the heaviest
    // GPU's, so one stage's); the work of a stage's share of the parameters, split over tensor parallel.
    c.weight_bytes = static_cast<double>(fitted->weights_bytes_per_gpu);
    const ParameterCount p = parameters(s.arch);
    const double gpus = static_cast<double>(std::max<std::uint64_t>(1, s.parallel.gpus()));
    c.flops_per_token = 2.0 * static_cast<double>(p.active) / gpus;
    const std::uint64_t pairs = 4096;
    c.attention_flops_per_pair = attention_flops(s.arch, s.workload, pairs) / static_cast<double>(pairs) / gpus;
    c.bandwidth_bytes_per_s = static_cast<double>(d.gpu.bandwidth_bytes_per_s);
    c.flops_per_s = d.gpu.bf16_tflops * 1e12;
    c.compute_efficiency = fitted_compute_efficiency(d.gpu.id).value_or(kUnfittedComputeEfficiency);
    return c;
}

std::optional<double> fitted_compute_efficiency(const std::string& gpu_id) {
    // GPUStack's vLLM 0.11 runs of Qwen3-14B with prompts of 2,000 to 32,000 tokens (bench/published_runs.h), whose
    // time is the prefill's: on an A100, 0.55–0.60 of its 312 dense bf16 TFLOP/s; on an H100 SXM, 0.37–0.40 of its
    // 989. The H100's siblings (the same SM: H100 PCIe, H800, H200, H20) take the H100's, the A800 the A100's.
    static const std::pair<const char*, double> kFitted[] = {
        {"a100-40gb", 0.59}, {"a100-80gb", 0.59}, {"a800-80gb", 0.59}, {"h100-sxm", 0.39},
        {"h100-pcie", 0.39}, {"h800", 0.39},      {"h200", 0.39},      {"h20", 0.39},
    };
    for (const auto& [id, efficiency] : kFitted)
        if (gpu_id == id) return efficiency;
    return std::nullopt;
}

Result<ServingSetup> serving_setup(const Scenario& s, bool prefix_caching, std::uint64_t concurrency,
                                   const std::optional<MeasuredStep>& measured) {
    if (!s.deployment) return FieldError{"--gpu", "simulate needs a deployment (a GPU)"};
    const Deployment& d = *s.deployment;
    if (d.engine != Engine::vllm)
        return FieldError{"--engine", "simulate follows vLLM's scheduler; " + std::string(to_string(d.engine)) +
                                          "'s is not simulated yet (use vllm)"};
    auto fitted = fit(s.arch, s.kv_dtype, s.workload, s.parallel, d);
    if (!fitted) return fitted.errors();
    auto cost = step_cost(s);
    if (!cost) return cost.errors();
    ServingSetup out;
    out.cost = *cost;
    ServingSettings& st = out.settings;
    st.block_size = s.workload.block_size > 1 ? s.workload.block_size : 16;
    const VllmBatch b = vllm_batch(s.workload, d);
    st.max_num_batched_tokens = b.max_num_batched_tokens;
    st.max_num_seqs = b.max_num_seqs;
    st.max_model_len = s.workload.context_tokens;
    st.prefix_caching = prefix_caching;
    st.concurrency = concurrency;
    // vLLM's num_gpu_blocks: the budget over a block's page on every layer (vllm/v1/core/kv_cache_utils.py
    // get_num_blocks: available_memory // page_size // num_layers), per GPU; here the bytes one token of every
    // layer takes on the heaviest GPU, times the block.
    Workload one = s.workload;
    one.context_tokens = 1;
    one.batch = 1;
    one.block_size = 1;
    auto kv = kv_cache_report(s.arch, s.kv_dtype, one, s.parallel);
    if (!kv) return kv.errors();
    if (kv->bytes_per_token_per_gpu == 0)
        return FieldError{"--model", "the model keeps no KV cache per token: nothing for paged blocks to hold"};
    st.bytes_per_block = kv->bytes_per_token_per_gpu * st.block_size;
    if (fitted->kv_budget_bytes_per_gpu <= 0)
        return FieldError{"--gpu", "the weights alone do not fit: " + std::string(to_string(d.engine)) +
                                       " leaves no KV budget on this GPU (fit says why)"};
    const std::uint64_t state = kv->state_bytes_per_gpu;
    if (state > 0 || fitted->engine_pages || kv->layers.size() != s.arch.layers ||
        std::any_of(kv->layers.begin(), kv->layers.end(), [](const LayerKv& l) { return l.kind != LayerKind::full; }))
        out.warnings.emplace_back(
            "not exact: the model's layers are not all full attention; simulate pages every layer as full attention "
            "(vLLM's hybrid manager frees what windows no longer see and pages the recurrent state apart)");
    st.kv_blocks = static_cast<std::uint64_t>(fitted->kv_budget_bytes_per_gpu) / st.bytes_per_block;
    if (st.kv_blocks < 2)
        return FieldError{"--gpu",
                          "the KV budget holds less than one block of " + std::to_string(st.block_size) + " tokens"};
    out.notes.push_back(
        "vLLM V1's scheduler (v0.11): " + format_count(st.kv_blocks) + " blocks of " + std::to_string(st.block_size) +
        " tokens, max_num_batched_tokens " + std::to_string(st.max_num_batched_tokens) + ", max_num_seqs " +
        std::to_string(st.max_num_seqs) + (b.tokens_default || b.seqs_default ? " (vLLM's defaults for the GPU)" : ""));
    // A decode step this machine's probe timed for the scenario on this GPU: it read the step's bytes at
    // predicted_step_ms / step_ms of the ceiling it measured, so that is the bandwidth a step reaches here
    // (measured_step.h); the engine's 1 ms a step stays beside it.
    if (measured && measured->step_ms > 0 && measured->predicted_step_ms > 0 && measured->ceiling_gbps > 0 &&
        out.cost.bandwidth_bytes_per_s > 0) {
        const double reached = measured->ceiling_gbps * 1e9 * measured->predicted_step_ms / measured->step_ms;
        out.cost.bandwidth_efficiency = reached / out.cost.bandwidth_bytes_per_s;
        out.step_time_source = "measured";
        out.notes.push_back("the bandwidth a step reaches measured: probe --step on " + measured->device + ", " +
                            measured->measured_on + ", " + number_text(measured->step_ms, Notation::fixed, 2) +
                            " ms a step, " + number_text(reached / 1e9, Notation::fixed, 0) + " GB/s");
    }
    const auto fitted_compute = fitted_compute_efficiency(d.gpu.id);
    out.notes.push_back(
        "step times from the roofline: the weights and each sequence's cache read once a step at " +
        number_text(100 * out.cost.bandwidth_efficiency, Notation::fixed, 0) +
        "% of the bandwidth, the new tokens' "
        "work at " +
        number_text(100 * out.cost.compute_efficiency, Notation::fixed, 0) + "% of the dense bf16 rate" +
        (fitted_compute ? " (fitted to published vLLM runs on this GPU)" : "") + ", " +
        number_text(out.cost.overhead_s * 1e3, Notation::shortest) + " ms a step besides; the API server " +
        number_text(st.api_serial_s * 1e3, Notation::shortest) + " ms a request, one at a time, and " +
        number_text(st.api_latency_s * 1e3, Notation::shortest) + " ms more before the engine sees it");
    if (!fitted_compute)
        out.warnings.push_back("not exact: no published run on the " + d.gpu.name + " fits its compute efficiency; " +
                               number_text(100 * kUnfittedComputeEfficiency, Notation::fixed, 0) +
                               "% of its dense bf16 rate is assumed for the prefill (TTFT and throughput under load "
                               "follow it)");
    if (s.parallel.tp > 1)
        out.warnings.emplace_back(
            "not exact: tensor parallel's all-reduces (two a layer) are not in the step's time: its steps are timed "
            "as if the GPUs shared the work for free");
    if (s.parallel.pp > 1)
        out.warnings.emplace_back(
            "not exact: pipeline stages are simulated in turn, one step at a time (vLLM overlaps micro-batches)");
    return out;
}

namespace {

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
    void release(const std::vector<std::uint32_t>& blocks) {
        for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
            if (--ref_[*it] == 0) push_back(*it);
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

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

enum class State { pending, waiting, running, done, refused };

struct Sim;

struct Req {
    const TrafficRequest* in = nullptr;
    std::uint64_t index = 0;
    State state = State::pending;
    double sent_s = 0;
    double first_token_s = -1, last_token_s = 0, done_s = 0;
    std::uint64_t generated = 0;
    std::uint64_t computed = 0;  // num_computed_tokens
    std::vector<std::uint32_t> blocks;
    std::vector<std::uint64_t> hashes;  // of its full blocks, as far as computed
    std::uint64_t cached_blocks = 0;    // of its blocks, those hashed into the pool
    std::uint64_t scheduled = 0;        // this step's new tokens
    bool hit_counted = false;
    // Tokens of the request so far: prompt + generated.
    [[nodiscard]] std::uint64_t tokens() const { return in->prompt_tokens + generated; }
};

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

struct Stats {
    double running_area = 0, waiting_area = 0, in_system_area = 0, used_blocks_area = 0;
    std::uint64_t peak_blocks = 0, max_running = 0, preemptions = 0, steps = 0;
    std::uint64_t prompt_scheduled = 0, hit_tokens = 0;
    std::vector<std::pair<double, std::uint64_t>> gaps;  // inter-token gaps, with how many tokens had each
    std::vector<TimelinePoint> timeline;
};

class Scheduler {
public:
    Scheduler(const std::vector<TrafficRequest>& requests, const ServingSettings& st, const StepCost& cost)
        : st_(st), cost_(cost), pool_(st.kv_blocks) {
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

    // False when `progress` stopped it.
    bool run(const SimulationProgress& progress) {
        while (true) {
            send_arrived();
            reach_engine();
            if (running_.empty() && waiting_.empty()) {
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

    Stats stats;
    std::vector<Req> reqs_;
    double now = 0;

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
    // vLLM refuses a prompt + output longer than max_model_len at the API (vllm/entrypoints/openai/serving_engine.py
    // _validate_input); one that needs more blocks than the whole cache could never run.
    bool refuse(Req& r) {
        const Checked sum = Checked(r.in->prompt_tokens) + r.in->output_tokens;
        const std::uint64_t total = sum.overflow() ? std::numeric_limits<std::uint64_t>::max() : sum.value();
        const std::uint64_t blocks = ceil_div(total, st_.block_size);
        if (sum.overflow() || (st_.max_model_len > 0 && total > st_.max_model_len) || blocks > pool_.usable()) {
            mark_refused(r);
            return true;
        }
        return false;
    }
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

    // ---- allocate_slots (vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots): the blocks for
    // computed + new tokens, after the hits; false (nothing changed) when the free queue is short, counting the hit
    // blocks no request holds, which the free queue counts as free.
    bool allocate(Req& r, std::uint64_t new_tokens, const std::vector<std::uint32_t>& hits) {
        const std::uint64_t start = r.computed + hits.size() * st_.block_size;
        const std::uint64_t need_tokens = std::min(start + new_tokens, r.tokens());
        const std::uint64_t blocks = (need_tokens + st_.block_size - 1) / st_.block_size;
        const std::uint64_t held = r.blocks.size() + hits.size();
        // The common case, a decode within its last block that fills none: nothing to take or cache.
        if (hits.empty() && blocks <= held && (!st_.prefix_caching || r.cached_blocks >= need_tokens / st_.block_size))
            return true;
        const std::uint64_t fresh = blocks > held ? blocks - held : 0;
        std::uint64_t free_hits = 0;
        for (const std::uint32_t b : hits)
            if (pool_.ref(b) == 0) ++free_hits;
        if (fresh + free_hits > pool_.free_blocks()) return false;
        for (const std::uint32_t b : hits) {
            pool_.touch(b);
            r.blocks.push_back(b);
        }
        for (std::uint64_t i = 0; i < fresh; ++i) r.blocks.push_back(pool_.take());
        used_ += fresh + free_hits;
        // The blocks full after this step are cached now, so a request admitted later in the same step hits them
        // (KVCacheManager.allocate_slots: cache_blocks(request, num_computed + num_new_tokens)).
        if (st_.prefix_caching) {
            extend_hashes(r, need_tokens, st_.block_size);
            const std::uint64_t full = need_tokens / st_.block_size;
            for (; r.cached_blocks < full && r.cached_blocks < r.blocks.size(); ++r.cached_blocks)
                pool_.cache(r.blocks[r.cached_blocks], r.hashes[r.cached_blocks]);
        }
        return true;
    }
    void release(Req& r) {
        for (const std::uint32_t b : r.blocks)
            if (pool_.ref(b) == 1) --used_;
        pool_.release(r.blocks);
        r.blocks.clear();
        r.cached_blocks = 0;
    }
    // get_computed_blocks (kv_cache_manager.py): the longest run of cached full blocks from the start, at most
    // (tokens − 1) tokens so the last token is computed for its logits (max_cache_hit_length = num_tokens − 1;
    // FullAttentionManager.find_longest_cache_hit).
    void cache_hits(Req& r, std::vector<std::uint32_t>& hits) {
        if (!st_.prefix_caching || r.tokens() == 0) return;
        const std::uint64_t max_blocks = (r.tokens() - 1) / st_.block_size;
        extend_hashes(r, max_blocks * st_.block_size, st_.block_size);
        for (std::uint64_t k = 0; k < max_blocks; ++k) {
            const std::uint32_t b = pool_.cached(r.hashes[k]);
            if (b == BlockPool::kNone) break;
            hits.push_back(b);
        }
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
    void step() {
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
            while (!allocate(r, n, no_hits_)) {
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
            if (r.blocks.capacity() == 0) {  // its whole length's blocks and hashes, once
                const std::uint64_t all = (r.in->prompt_tokens + r.in->output_tokens) / st_.block_size + 1;
                r.blocks.reserve(all);
                if (st_.prefix_caching) r.hashes.reserve(all);
            }
            hits_.clear();
            if (r.computed == 0) cache_hits(r, hits_);
            const std::vector<std::uint32_t>& hits = hits_;
            const std::uint64_t hit_tokens = hits.size() * st_.block_size;
            const std::uint64_t n = std::min(r.tokens() - r.computed - hit_tokens, budget);
            if (!allocate(r, n, hits)) break;
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
        if (scheduled.empty()) {  // cannot happen (an empty pool takes any first chunk); never loop on it
            Req& r = reqs_[waiting_.front()];
            waiting_.pop_front();
            release(r);
            mark_refused(r);
            return;
        }
        // The step's time: the weights once, each scheduled request's cache up to its new tokens, the new tokens'
        // work and their attention over the positions before them.
        double bytes = cost_.weight_bytes, flops = 0;
        for (const std::size_t i : scheduled) {
            const Req& r = reqs_[i];
            bytes += kv_read_bytes(cost_, r.computed + r.scheduled);
            const double n = static_cast<double>(r.scheduled);
            flops += n * cost_.flops_per_token +
                     n * (static_cast<double>(r.computed) + (n + 1) / 2) * cost_.attention_flops_per_pair;
        }
        const double dt = step_seconds(cost_, bytes, flops);
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
            if (r.generated >= r.in->output_tokens) finished.push_back(i);
        }
        for (const std::size_t i : finished) {
            Req& r = reqs_[i];
            r.state = State::done;
            r.done_s = now;
            ++ended_;
            release(r);
            std::vector<std::uint32_t>().swap(r.blocks);  // its memory back for the requests still to come
            std::vector<std::uint64_t>().swap(r.hashes);
            running_.erase(std::find(running_.begin(), running_.end(), i));
            if (st_.concurrency > 0) free_places_.push(now);
            finish_follow_ups(i, now);
        }
    }

    void account(double dt) {
        const auto run = static_cast<double>(running_.size()), wait = static_cast<double>(waiting_.size());
        stats.running_area += run * dt;
        stats.waiting_area += wait * dt;
        stats.in_system_area += (run + wait) * dt;
        stats.used_blocks_area += static_cast<double>(used_) * dt;
        stats.peak_blocks = std::max(stats.peak_blocks, used_);
        stats.max_running = std::max<std::uint64_t>(stats.max_running, running_.size());
        stats.timeline.push_back({now, running_.size(), waiting_.size(), used_});
    }

    const ServingSettings& st_;
    const StepCost& cost_;
    BlockPool pool_;
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
    std::deque<std::size_t> waiting_;
    std::vector<std::size_t> running_;
    std::vector<std::size_t> scheduled_;  // this step's requests (kept to reuse its memory)
    std::vector<std::size_t> finished_;
    const std::vector<std::uint32_t> no_hits_;
    std::vector<std::uint32_t> hits_;
    std::uint64_t used_ = 0;  // blocks held by requests
    std::uint64_t refused_ = 0;
    std::uint64_t ended_ = 0;  // served or refused

public:
    [[nodiscard]] std::uint64_t refused() const { return refused_; }
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
    if (settings.kv_blocks > std::numeric_limits<std::uint32_t>::max() - 1)
        return FieldError{"--block-size", "more than 2^32 blocks: choose a larger block"};
    if (settings.block_size == 0) return FieldError{"--block-size", "must be at least 1 token"};
    if (settings.max_num_batched_tokens == 0) return FieldError{"--max-num-batched-tokens", "must be at least 1"};
    if (settings.max_num_seqs == 0) return FieldError{"--max-num-seqs", "must be at least 1"};
    for (const TrafficRequest& r : requests)
        if (!std::isfinite(r.arrival_s) || r.arrival_s < 0)
            return FieldError{"--trace", "a request's arrival time is not a time from the start (" +
                                             number_text(r.arrival_s) + " s)"};
    Scheduler sim(requests, settings, cost);
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
    r.kv_budget_blocks = settings.kv_blocks - 1;
    r.kv_budget_bytes_per_gpu = r.kv_budget_blocks * settings.bytes_per_block;  // within the fit's budget
    r.kv_peak_blocks = sim.stats.peak_blocks;
    r.kv_peak_bytes_per_gpu = sim.stats.peak_blocks * settings.bytes_per_block;
    const Checked worst =
        Checked(r.max_running) * ceil_div(settings.max_model_len, settings.block_size) * settings.bytes_per_block;
    r.kv_worst_case_bytes_per_gpu = worst.overflow() ? std::numeric_limits<std::uint64_t>::max() : worst.value();
    if (worst.overflow()) r.warnings.emplace_back("the worst case passes 2^64 bytes; its figure is that limit");
    if (r.duration_s > 0 && r.kv_budget_blocks > 0)
        r.kv_mean_used_fraction = sim.stats.used_blocks_area / r.duration_s / static_cast<double>(r.kv_budget_blocks);
    r.prefix_hit_tokens = sim.stats.hit_tokens;
    r.prefix_hit_rate = sim.stats.prompt_scheduled > 0 ? static_cast<double>(sim.stats.hit_tokens) /
                                                             static_cast<double>(sim.stats.prompt_scheduled)
                                                       : 0;
    r.preemptions = sim.stats.preemptions;
    r.steps = sim.stats.steps;
    // At most timeline_points points, evenly over the steps, the last one kept.
    const std::vector<TimelinePoint>& all = sim.stats.timeline;
    const std::size_t points = std::max<std::size_t>(2, settings.timeline_points);
    const std::size_t stride = std::max<std::size_t>(1, (all.size() + points - 1) / points);
    for (std::size_t i = 0; i < all.size(); i += stride) r.timeline.push_back(all[i]);
    if (!all.empty() && (r.timeline.empty() || r.timeline.back().t_s != all.back().t_s))
        r.timeline.push_back(all.back());
    for (TimelinePoint& p : r.timeline) p.kv_used_bytes *= settings.bytes_per_block;
    if (r.requests + r.refused != requests.size())
        r.warnings.push_back(std::to_string(requests.size() - r.requests - r.refused) +
                             " requests were neither served nor refused: the simulation is not complete");
    if (r.refused > 0)
        r.warnings.push_back(std::to_string(r.refused) + " request" + (r.refused == 1 ? "" : "s") +
                             " refused: longer than max_model_len (" + std::to_string(settings.max_model_len) +
                             " tokens, the context) or than the whole cache");
    return r;
}

double at_percentile(const Percentiles& p, double percentile) {
    return percentile >= 99 ? p.p99 : percentile >= 90 ? p.p90 : p.median;
}

Result<std::optional<double>> max_rate_meeting_slo(const TrafficSpec& spec, const ServingSettings& settings,
                                                   const StepCost& cost, const SloTarget& target,
                                                   const SimulationProgress& progress) {
    if (!target.ttft_ms && !target.tpot_ms) return FieldError{"--ttft-ms", "a target needs --ttft-ms or --tpot-ms"};
    const auto pick = [&](const Percentiles& p) { return at_percentile(p, target.percentile); };
    // At most 52 simulations (30 doublings or 10 halvings, then 12 bisections): the progress counts them.
    int runs = 0;
    const auto meets = [&](std::optional<double> rate) -> Result<bool> {
        if (progress && !progress(std::min(1.0, runs++ / 52.0))) return FieldError{"simulate", "cancelled"};
        TrafficSpec at = spec;
        at.rate = rate;
        auto requests = make_traffic(at);
        if (!requests) return requests.errors();
        auto r = simulate_serving(*requests, settings, cost);
        if (!r) return r.errors();
        // A refused request is no latency met: a traffic the deployment refuses in part meets no target.
        return r->refused == 0 && (!target.ttft_ms || pick(r->ttft_ms) <= *target.ttft_ms) &&
               (!target.tpot_ms || pick(r->tpot_ms) <= *target.tpot_ms);
    };
    // Met with every request at once: at any rate.
    auto at_once = meets(std::nullopt);
    if (!at_once) return at_once.errors();
    if (*at_once) return std::optional<double>(std::numeric_limits<double>::infinity());
    // From 1 request a second: up by doubling while it meets the target, down by halving while it does not.
    double lo = 0, hi = 0, rate = 1;
    auto ok = meets(rate);
    if (!ok) return ok.errors();
    if (*ok) {
        lo = rate;
        for (int i = 0; i < 30; ++i) {
            rate *= 2;
            ok = meets(rate);
            if (!ok) return ok.errors();
            if (!*ok) break;
            lo = rate;
        }
        hi = rate;
        if (*ok) return std::optional<double>(lo);  // met up to 2^30 a second (all at once, the check above, not)
    } else {
        hi = rate;
        for (int i = 0; i < 10 && !*ok; ++i) {
            rate /= 2;
            ok = meets(rate);
            if (!ok) return ok.errors();
            if (*ok)
                lo = rate;
            else
                hi = rate;
        }
        if (!*ok) return std::optional<double>();
    }
    for (int i = 0; i < 12; ++i) {  // to within 0.03% of the answer
        const double mid = (lo + hi) / 2;
        ok = meets(mid);
        if (!ok) return ok.errors();
        (*ok ? lo : hi) = mid;
    }
    return std::optional<double>(lo);
}

Result<std::vector<ServingPoint>> serving_curve(const TrafficSpec& spec, const ServingSettings& settings,
                                                const StepCost& cost, std::size_t points,
                                                const SimulationProgress& progress) {
    if (points < 2) return FieldError{"points", "a curve needs 2 points at least"};
    const double runs = static_cast<double>(points + 1);
    const auto part = [&](std::size_t run) -> SimulationProgress {
        if (!progress) return {};
        return [&progress, run, runs](double f) { return progress((static_cast<double>(run) + f) / runs); };
    };
    // The throughput all at once: the most the deployment serves of this traffic.
    TrafficSpec all = spec;
    all.rate.reset();
    auto at_once = make_traffic(all);
    if (!at_once) return at_once.errors();
    auto most = simulate_serving(*at_once, settings, cost, part(0));
    if (!most) return most.errors();
    if (most->request_throughput <= 0) return FieldError{"simulate", "no request was served"};
    std::vector<ServingPoint> curve;
    for (std::size_t i = 0; i < points; ++i) {
        // From 0.1 to 1.1 of that throughput, evenly.
        const double rate = most->request_throughput * (0.1 + static_cast<double>(i) / static_cast<double>(points - 1));
        TrafficSpec at = spec;
        at.rate = rate;
        auto requests = make_traffic(at);
        if (!requests) return requests.errors();
        auto r = simulate_serving(*requests, settings, cost, part(i + 1));
        if (!r) return r.errors();
        curve.push_back({rate, r->request_throughput, r->ttft_ms, r->tpot_ms});
    }
    return curve;
}

Result<TrafficAnswer> answer_traffic(const Scenario& s, const TrafficQuestion& q, const SimulationProgress& progress) {
    auto requests = q.trace.empty() ? make_traffic(q.spec) : read_trace_file(q.trace);
    if (!requests) return requests.errors();
    if (!q.trace.empty() && q.limit_trace && q.spec.requests < requests->size())
        requests.value().resize(static_cast<std::size_t>(q.spec.requests));
    auto setup = serving_setup(s, q.prefix_caching, q.concurrency, q.measured);
    if (!setup) return setup.errors();
    TrafficAnswer a;
    a.setup = *setup;
    a.requests = requests->size();
    // The share of the work each part takes, for one progress from 0 to 1: the simulation, the curve, the search.
    const bool target = q.target.ttft_ms || q.target.tpot_ms;
    const double parts = 1.0 + (q.curve ? 1.0 : 0.0) + (target ? 1.0 : 0.0);
    double done = 0;
    const auto part = [&]() -> SimulationProgress {
        if (!progress) return {};
        return [&progress, &done, parts](double f) { return progress((done + f) / parts); };
    };
    auto report = simulate_serving(*requests, a.setup.settings, a.setup.cost, part());
    if (!report) return report.errors();
    a.report = *report;
    a.report.step_time_source = a.setup.step_time_source;
    done += 1;
    if (q.curve && q.trace.empty()) {
        auto curve = serving_curve(q.spec, a.setup.settings, a.setup.cost, 10, part());
        if (!curve) return curve.errors();
        a.curve = *curve;
        done += 1;
    }
    if (target) {
        if (!q.trace.empty())
            return FieldError{"--ttft-ms",
                              "a target is sought over a described traffic's rates, "
                              "not over a trace's own times"};
        auto best = max_rate_meeting_slo(q.spec, a.setup.settings, a.setup.cost, q.target, part());
        if (!best) return best.errors();
        a.max_rate = *best;
    }
    a.warnings = a.setup.warnings;
    a.warnings.insert(a.warnings.end(), a.report.warnings.begin(), a.report.warnings.end());
    return a;
}

Result<std::vector<LayoutService>> serve_plan(const Scenario& s, const Plan& plan, const TrafficQuestion& q,
                                              std::uint64_t max_replicas) {
    if (!q.spec.rate)
        return FieldError{"--rate",
                          "a plan is weighed at a rate of requests a second (for example 10), not all at once"};
    if (q.concurrency > 0) return FieldError{"--concurrency", "a plan's replicas share the traffic: not with a limit"};
    if (!q.target.ttft_ms && !q.target.tpot_ms)
        return FieldError{"--ttft-ms", "a plan's layouts are weighed against a target: give --ttft-ms or --tpot-ms"};
    if (!s.deployment) return FieldError{"--gpu", "a plan needs a GPU"};
    auto requests = make_traffic(q.spec);
    if (!requests) return requests.errors();
    // The conversation each request belongs to: its first turn's.
    std::vector<std::size_t> conversation(requests->size());
    std::size_t conversations = 0;
    for (std::size_t i = 0; i < requests->size(); ++i)
        conversation[i] = (*requests)[i].follows == kNoRequest ? conversations++ : conversation[(*requests)[i].follows];
    std::vector<LayoutService> out;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> tried;
    for (const PlanOption& o : plan.options) {
        if (!o.fits || std::find(tried.begin(), tried.end(), std::pair{o.tp, o.pp}) != tried.end()) continue;
        tried.emplace_back(o.tp, o.pp);
        Scenario layout = s;
        layout.parallel.tp = o.tp;
        layout.parallel.pp = o.pp;
        layout.deployment->gpu_count = o.tp * o.pp;
        auto setup = serving_setup(layout, q.prefix_caching, q.concurrency);
        if (!setup) return setup.errors();  // an engine the simulation does not follow, say
        // `replicas` copies of the layout, each serving its share (conversation k on replica k mod R).
        const auto serve = [&](std::uint64_t replicas) -> Result<LayoutService> {
            LayoutService service;
            service.tp = o.tp;
            service.pp = o.pp;
            service.replicas = replicas;
            service.gpus = o.tp * o.pp * replicas;
            service.warnings = setup->warnings;
            for (std::uint64_t replica = 0; replica < replicas; ++replica) {
                std::vector<TrafficRequest> share;
                std::vector<std::size_t> index(requests->size(), kNoRequest);
                for (std::size_t i = 0; i < requests->size(); ++i) {
                    if (conversation[i] % replicas != replica) continue;
                    index[i] = share.size();
                    share.push_back((*requests)[i]);
                    if (share.back().follows != kNoRequest) share.back().follows = index[share.back().follows];
                }
                if (share.empty()) continue;
                auto r = simulate_serving(share, setup->settings, setup->cost);
                if (!r) return r.errors();
                service.ttft_ms = std::max(service.ttft_ms, at_percentile(r->ttft_ms, q.target.percentile));
                service.tpot_ms = std::max(service.tpot_ms, at_percentile(r->tpot_ms, q.target.percentile));
                service.request_throughput += r->request_throughput;
            }
            service.meets = (!q.target.ttft_ms || service.ttft_ms <= *q.target.ttft_ms) &&
                            (!q.target.tpot_ms || service.tpot_ms <= *q.target.tpot_ms);
            return service;
        };
        // The fewest replicas that meet the target: doubling, then halving the gap.
        auto best = serve(1);
        if (!best) return best.errors();
        std::uint64_t missed = 0;
        while (!best->meets && best->replicas < max_replicas) {
            missed = best->replicas;
            auto more = serve(std::min(max_replicas, best->replicas * 2));
            if (!more) return more.errors();
            best = std::move(more);
        }
        while (best->meets && best->replicas - missed > 1) {
            auto fewer = serve(missed + (best->replicas - missed) / 2);
            if (!fewer) return fewer.errors();
            if (fewer->meets)
                best = std::move(fewer);
            else
                missed = fewer->replicas;
        }
        out.push_back(*best);
    }
    // Fewest GPUs first (then the narrower tensor parallel); those that meet the target before those that do not.
    std::stable_sort(out.begin(), out.end(), [](const LayoutService& a, const LayoutService& b) {
        return std::tuple(!a.meets, a.gpus, a.tp) < std::tuple(!b.meets, b.gpus, b.tp);
    });
    return out;
}

std::string traffic_text(const TrafficSpec& t, const std::string& trace, std::uint64_t requests,
                         std::uint64_t concurrency) {
    const std::string limit = concurrency > 0 ? ", at most " + format_count(concurrency) + " in flight" : "";
    if (!trace.empty()) return format_count(requests) + " requests of " + trace + limit;
    const auto length = [](const LengthSpec& l) {
        return format_count(l.tokens) +
               (l.range > 0 ? " ± " + number_text(100 * l.range, Notation::fixed, 0) + "%" : "");
    };
    std::string out = format_count(requests) + " requests, " +
                      (t.rate ? number_text(*t.rate, Notation::shortest) + "/s (Poisson)" : "all at once") +
                      ", prompts of " + length(t.input) + " tokens, answers of " + length(t.output);
    if (t.shared_prefix > 0)
        out += ", a shared prefix of " + format_count(t.shared_prefix) +
               (t.prefix_groups > 1 ? " (" + std::to_string(t.prefix_groups) + " different)" : "");
    if (t.turns > 1) out += ", conversations of " + std::to_string(t.turns) + " turns";
    return out + limit;
}

namespace {

std::string ms_text(double v) { return number_text(v, Notation::fixed, v < 10 ? 2 : 1); }
std::string percentiles_text(const Percentiles& p) {
    return "mean " + ms_text(p.mean) + "   median " + ms_text(p.median) + "   P90 " + ms_text(p.p90) + "   P99 " +
           ms_text(p.p99);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> simulation_rows(const SimulationReport& r, const ServingSettings& st,
                                                                 UnitSystem units) {
    const double used = r.kv_budget_blocks > 0
                            ? 100.0 * static_cast<double>(r.kv_peak_blocks) / static_cast<double>(r.kv_budget_blocks)
                            : 0;
    const auto per_s = [](double v) { return format_count(static_cast<std::uint64_t>(std::llround(v))); };
    return {
        {"served", format_count(r.requests) + " requests in " + number_text(r.duration_s, Notation::fixed, 1) + " s" +
                       (r.refused > 0 ? ", " + format_count(r.refused) + " refused" : "")},
        {"throughput", number_text(r.request_throughput, Notation::fixed, 2) + " requests/s, " +
                           per_s(r.output_throughput) + " output tokens/s, " + per_s(r.input_throughput) +
                           " input tokens/s"},
        {"TTFT (ms)", percentiles_text(r.ttft_ms)},
        {"TPOT (ms)", percentiles_text(r.tpot_ms)},
        {"ITL (ms)", percentiles_text(r.itl_ms)},
        {"E2E (ms)", percentiles_text(r.e2e_ms)},
        {"KV blocks", "peak " + format_count(r.kv_peak_blocks) + " of " + format_count(r.kv_budget_blocks) + " (" +
                          number_text(used, Notation::fixed, 1) + "%), " +
                          format_bytes(r.kv_peak_bytes_per_gpu, units) + " per GPU; " +
                          number_text(100 * r.kv_mean_used_fraction, Notation::fixed, 1) +
                          "% in use on average; blocks of " + std::to_string(st.block_size) + " tokens"},
        {"worst case", "the " + format_count(r.max_running) + " sequences that ran at once, each at the full " +
                           format_tokens(st.max_model_len) + " tokens, would hold " +
                           format_bytes(r.kv_worst_case_bytes_per_gpu, units) + " per GPU"},
        {"prefix cache", st.prefix_caching
                             ? number_text(100 * r.prefix_hit_rate, Notation::fixed, 1) +
                                   "% of prompt tokens found cached (" + format_count(r.prefix_hit_tokens) + " tokens)"
                             : "off"},
        {"preemptions", format_count(r.preemptions)},
        {"running", "at most " + format_count(r.max_running) + ", " + number_text(r.mean_running, Notation::fixed, 1) +
                        " on average; " + number_text(r.mean_waiting, Notation::fixed, 1) + " waiting on average"},
        {"steps", format_count(r.steps) + ", timed by the " + r.step_time_source},
    };
}

std::vector<std::pair<std::string, std::string>> slo_rows(const SloTarget& target, const std::optional<double>& best) {
    const std::string what = (target.ttft_ms ? "TTFT ≤ " + number_text(*target.ttft_ms) + " ms" : std::string()) +
                             (target.ttft_ms && target.tpot_ms ? " and " : "") +
                             (target.tpot_ms ? "TPOT ≤ " + number_text(*target.tpot_ms) + " ms" : std::string());
    return {{"target", what + " at P" + number_text(target.percentile)},
            {"highest rate", !best               ? "none: even 1/1000 of a request a second misses it"
                             : std::isinf(*best) ? "any: even every request at once meets it"
                                                 : number_text(*best, Notation::fixed, 2) + " requests/s"}};
}

namespace {

Value percentiles_json(const Percentiles& p) {
    Value o = Value::object();
    o.set("mean", Value::number(p.mean));
    o.set("median", Value::number(p.median));
    o.set("p90", Value::number(p.p90));
    o.set("p99", Value::number(p.p99));
    return o;
}

Value timeline_json(const std::vector<TimelinePoint>& points) {
    Value list = Value::array();
    for (const TimelinePoint& p : points) {
        Value o = Value::object();
        o.set("t_s", Value::number(p.t_s));
        o.set("running", Value::number(p.running));
        o.set("waiting", Value::number(p.waiting));
        o.set("kv_used_bytes", Value::number(p.kv_used_bytes));
        list.push(std::move(o));
    }
    return list;
}

// Every member of SimulationReport once, in the order the `simulation` object writes them.
template <class V>
void simulation_members(const SimulationReport& r, V& v) {
    v.field(r.requests, "requests");
    v.field(r.refused, "refused");
    v.field(r.duration_s, "duration_s");
    v.field(r.request_throughput, "request_throughput");
    v.field(r.output_throughput, "output_throughput");
    v.field(r.input_throughput, "input_throughput");
    v.value(r.ttft_ms, "ttft_ms", percentiles_json(r.ttft_ms));
    v.value(r.tpot_ms, "tpot_ms", percentiles_json(r.tpot_ms));
    v.value(r.itl_ms, "itl_ms", percentiles_json(r.itl_ms));
    v.value(r.e2e_ms, "e2e_ms", percentiles_json(r.e2e_ms));
    v.field(r.kv_budget_blocks, "kv_budget_blocks");
    v.field(r.kv_budget_bytes_per_gpu, "kv_budget_bytes_per_gpu");
    v.field(r.kv_peak_blocks, "kv_peak_blocks");
    v.field(r.kv_peak_bytes_per_gpu, "kv_peak_bytes_per_gpu");
    v.field(r.kv_worst_case_bytes_per_gpu, "kv_worst_case_bytes_per_gpu");
    v.field(r.kv_mean_used_fraction, "kv_mean_used_fraction");
    v.field(r.prefix_hit_rate, "prefix_hit_rate");
    v.field(r.prefix_hit_tokens, "prefix_hit_tokens");
    v.field(r.preemptions, "preemptions");
    v.field(r.max_running, "max_running");
    v.field(r.mean_running, "mean_running");
    v.field(r.mean_waiting, "mean_waiting");
    v.field(r.mean_in_system, "mean_in_system");
    v.field(r.steps, "steps");
    v.field(r.step_time_source, "step_time_source");
    v.value(r.timeline, "timeline", timeline_json(r.timeline));
    v.field(r.notes, "notes");
    v.field(r.warnings, "warnings");
}

}  // namespace

json::Value simulation_json(const SimulationReport& r) {
    return members_json(r, [](const SimulationReport& x, auto& v) { simulation_members(x, v); });
}

std::vector<DeclaredMember> declared_members(const SimulationReport& r) {
    return list_members(r, [](const SimulationReport& x, auto& v) { simulation_members(x, v); });
}

}  // namespace kvscope
