#include "tiny_transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"
#include "step_common.h"

namespace kvscope::probe {

namespace {

const char* const kWords[] = {
    "the",      "cache",  "keeps",     "keys",    "and",       "values",  "for",     "every",     "token",  "so",
    "each",     "new",    "step",      "reads",   "memory",    "instead", "of",      "computing", "again",  "a",
    "model",    "layer",  "head",      "query",   "attention", "grows",   "with",    "context",   "length", "batch",
    "size",     "GPU",    "fits",      "when",    "budget",    "allows",  "it",      "weights",   "bytes",  "time",
    "fast",     "slow",   "quadratic", "linear",  "sum",       "prefix",  "text",    "word",      "line",   "long",
    "short",    "small",  "large",     "light",   "heavy",     "quiet",   "bright",  "river",     "stone",  "tree",
    "cloud",    "rain",   "sun",       "moon",    "star",      "night",   "morning", "road",      "house",  "door",
    "window",   "garden", "city",      "sea",     "mountain",  "field",   "bird",    "fish",      "horse",  "dog",
    "cat",      "child",  "friend",    "teacher", "story",     "song",    "book",    "letter",    "number", "answer",
    "question", "reason", "idea",      "plan",    "work",      "play",    "sleep",   "dream",     "walk",   "run",
    "read",     "write",  "speak",     "listen",  "see",       "hear",    "know",    "think",     "find",   "keep",
    "hold",     "give",   "take",      "make",    "build",     "open",    "close",   "begin",     "end",    "near",
    "far",      "here",   "there",     "now",     "then",      "always",  "never",   "often",     "slowly", "quickly"};
constexpr int kVocab = static_cast<int>(sizeof(kWords) / sizeof(kWords[0]));

struct Rng {  // fixed-seed normal numbers (xorshift64* + Box–Muller)
    std::uint64_t s;
    double uniform() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return static_cast<double>((s * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
    }
    float normal() {
        const double u = std::max(uniform(), 1e-12), v = uniform();
        return static_cast<float>(std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v));
    }
};

std::vector<float> random_matrix(Rng& rng, int rows, int cols) {
    std::vector<float> m(static_cast<std::size_t>(rows) * cols);
    const float scale = 1.0f / std::sqrt(static_cast<float>(cols));
    for (float& x : m) x = rng.normal() * scale;
    return m;
}

// y = W x, W is rows × cols, row-major.
std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x, int rows) {
    const std::size_t cols = x.size();
    std::vector<float> y(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r) {
        const float* row = w.data() + static_cast<std::size_t>(r) * cols;
        float acc = 0;
        for (std::size_t c = 0; c < cols; ++c) acc += row[c] * x[c];
        y[static_cast<std::size_t>(r)] = acc;
    }
    return y;
}

std::vector<float> rms_norm(const std::vector<float>& x, const std::vector<float>& weight) {
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(x.size())) + 1e-6f);
    std::vector<float> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * weight[i];
    return y;
}

void rope(std::vector<float>& v, int position) {
    using M = TinyTransformer;
    for (int h = 0; h < M::kHeads; ++h) {
        for (int i = 0; i < M::kHeadDim / 2; ++i) {
            const double theta = position * std::pow(10000.0, -2.0 * i / M::kHeadDim);
            const float c = static_cast<float>(std::cos(theta)), s = static_cast<float>(std::sin(theta));
            float& a = v[static_cast<std::size_t>(h) * M::kHeadDim + 2 * static_cast<std::size_t>(i)];
            float& b = v[static_cast<std::size_t>(h) * M::kHeadDim + 2 * static_cast<std::size_t>(i) + 1];
            const float a0 = a, b0 = b;
            a = a0 * c - b0 * s;
            b = a0 * s + b0 * c;
        }
    }
}

}  // namespace

TinyTransformer::TinyTransformer(std::uint64_t seed) {
    Rng rng{seed * 0x9E3779B97F4A7C15ull + 1};
    embed_ = random_matrix(rng, kVocab, kModel);
    for (float& x : embed_) x *= std::sqrt(static_cast<float>(kModel));  // unit-scale embeddings
    for (int l = 0; l < kLayers; ++l) {
        Layer layer;
        layer.wq = random_matrix(rng, kModel, kModel);
        layer.wk = random_matrix(rng, kModel, kModel);
        layer.wv = random_matrix(rng, kModel, kModel);
        layer.wo = random_matrix(rng, kModel, kModel);
        layer.w1 = random_matrix(rng, kHidden, kModel);
        layer.w3 = random_matrix(rng, kHidden, kModel);
        layer.w2 = random_matrix(rng, kModel, kHidden);
        layer.norm1.assign(kModel, 1.0f);
        layer.norm2.assign(kModel, 1.0f);
        layers_.push_back(std::move(layer));
    }
    final_norm_.assign(kModel, 1.0f);
}

int TinyTransformer::vocab() const { return kVocab; }

Architecture TinyTransformer::architecture() {
    Architecture a;
    a.name = "stopwatch transformer";
    a.layers = kLayers;
    a.query_heads = a.kv_heads = kHeads;
    a.head_dim_k = a.head_dim_v = kHeadDim;
    a.hidden_size = kModel;
    a.intermediate_size = kHidden;
    a.vocab_size = kVocab;
    a.max_positions = 1u << 20;
    a.tied_embeddings = true;
    return a;
}

std::vector<int> TinyTransformer::encode(const std::string& text) const {
    std::vector<int> out;
    for (std::size_t end = 0, start = 0; start < text.size(); start = end) {
        start = text.find_first_not_of(" \t\n\r", start);
        if (start == std::string::npos) break;
        end = std::min(text.find_first_of(" \t\n\r", start), text.size());
        const std::string word = text.substr(start, end - start);
        const auto* found = std::find(std::begin(kWords), std::end(kWords), word);
        // Unknown words map to a fixed token by their letters, so any prompt works.
        std::uint64_t h = 1469598103934665603ull;
        for (char c : word) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
        out.push_back(found != std::end(kWords) ? static_cast<int>(found - std::begin(kWords))
                                                : static_cast<int>(h % kVocab));
    }
    if (out.empty()) out.push_back(0);
    return out;
}

std::string TinyTransformer::decode(const std::vector<int>& tokens) const {
    std::string out;
    for (int t : tokens) {
        if (!out.empty()) out += ' ';
        out += kWords[t];
    }
    return out;
}

void TinyTransformer::forward_position(int token, int position, std::vector<std::vector<float>>& k,
                                       std::vector<std::vector<float>>& v, std::vector<float>& x) const {
    x.assign(embed_.begin() + static_cast<std::ptrdiff_t>(token) * kModel,
             embed_.begin() + static_cast<std::ptrdiff_t>(token + 1) * kModel);
    for (int l = 0; l < kLayers; ++l) {
        const Layer& L = layers_[static_cast<std::size_t>(l)];
        const std::vector<float> h = rms_norm(x, L.norm1);
        std::vector<float> q = matvec(L.wq, h, kModel), kn = matvec(L.wk, h, kModel), vn = matvec(L.wv, h, kModel);
        rope(q, position);
        rope(kn, position);
        auto& K = k[static_cast<std::size_t>(l)];
        auto& V = v[static_cast<std::size_t>(l)];
        K.insert(K.end(), kn.begin(), kn.end());
        V.insert(V.end(), vn.begin(), vn.end());
        const int n = position + 1;
        std::vector<float> attn(kModel, 0.0f), scores(static_cast<std::size_t>(n));
        const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
        for (int hd = 0; hd < kHeads; ++hd) {
            float mx = -1e30f;
            for (int t = 0; t < n; ++t) {
                float dot = 0;
                for (int d = 0; d < kHeadDim; ++d)
                    dot += q[static_cast<std::size_t>(hd) * kHeadDim + static_cast<std::size_t>(d)] *
                           K[static_cast<std::size_t>(t) * kModel + static_cast<std::size_t>(hd) * kHeadDim +
                             static_cast<std::size_t>(d)];
                scores[static_cast<std::size_t>(t)] = dot * scale;
                mx = std::max(mx, dot * scale);
            }
            float sum = 0;
            for (float& s : scores) sum += (s = std::exp(s - mx));
            for (int t = 0; t < n; ++t) {
                const float p = scores[static_cast<std::size_t>(t)] / sum;
                for (int d = 0; d < kHeadDim; ++d)
                    attn[static_cast<std::size_t>(hd) * kHeadDim + static_cast<std::size_t>(d)] +=
                        p * V[static_cast<std::size_t>(t) * kModel + static_cast<std::size_t>(hd) * kHeadDim +
                              static_cast<std::size_t>(d)];
            }
        }
        const std::vector<float> o = matvec(L.wo, attn, kModel);
        for (int i = 0; i < kModel; ++i) x[static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
        const std::vector<float> h2 = rms_norm(x, L.norm2);
        std::vector<float> gate = matvec(L.w1, h2, kHidden);
        const std::vector<float> up = matvec(L.w3, h2, kHidden);
        for (std::size_t i = 0; i < gate.size(); ++i)
            gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];  // SwiGLU
        const std::vector<float> down = matvec(L.w2, gate, kModel);
        for (int i = 0; i < kModel; ++i) x[static_cast<std::size_t>(i)] += down[static_cast<std::size_t>(i)];
    }
}

std::vector<float> TinyTransformer::head(const std::vector<float>& x) const {
    return matvec(embed_, rms_norm(x, final_norm_), kVocab);  // tied embeddings
}

std::vector<float> TinyTransformer::logits_uncached(const std::vector<int>& prefix) const {
    std::vector<std::vector<float>> k(kLayers), v(kLayers);
    std::vector<float> x;
    for (std::size_t p = 0; p < prefix.size(); ++p) forward_position(prefix[p], static_cast<int>(p), k, v, x);
    return head(x);
}

std::vector<float> TinyTransformer::step_cached(int token, Cache& cache) const {
    if (cache.k.empty()) {
        cache.k.resize(kLayers);
        cache.v.resize(kLayers);
    }
    const int position = static_cast<int>(cache.k[0].size() / kModel);
    std::vector<float> x;
    forward_position(token, position, cache.k, cache.v, x);
    return head(x);
}

int TinyTransformer::pick(const std::vector<float>& logits, const std::vector<int>& history) {
    constexpr std::size_t kNoRepeat = 12;
    const auto from = history.size() > kNoRepeat ? history.end() - kNoRepeat : history.begin();
    int best = -1;
    for (int t = 0; t < static_cast<int>(logits.size()); ++t) {
        if (std::find(from, history.end(), t) != history.end()) continue;
        if (best < 0 || logits[static_cast<std::size_t>(t)] > logits[static_cast<std::size_t>(best)]) best = t;
    }
    return best;
}

StopwatchReport generate_both(const TinyTransformer& model, const StopwatchRequest& request, const Control& control,
                              const Generator& g) {
    StopwatchReport r;
    if (request.tokens < 1 || request.tokens > kMaxStopwatchTokens) {
        r.status = Status::invalid_input;
        r.message =
            "tokens: " + std::to_string(request.tokens) + " is outside 1 … " + std::to_string(kMaxStopwatchTokens);
        return r;
    }
    using Clock = std::chrono::steady_clock;
    const std::vector<int> prompt = model.encode(request.prompt);
    // The prompt and the generated tokens take positions of the model's 4,096; past them nothing runs.
    if (prompt.size() + static_cast<std::size_t>(request.tokens) > static_cast<std::size_t>(kMaxStopwatchTokens)) {
        r.status = Status::invalid_input;
        r.message = "prompt: its " + format_count_of(prompt.size(), "token", "tokens") + " and " +
                    format_count_of(static_cast<std::uint64_t>(request.tokens), "generated token", "generated tokens") +
                    " take " + format_count(prompt.size() + static_cast<std::size_t>(request.tokens)) +
                    " positions, more than the teaching model's " + format_count(kMaxStopwatchTokens) +
                    "; shorten the prompt or generate fewer tokens";
        return r;
    }
    const double total = 2.0 * request.tokens;
    auto cancelled = [&](int i, const char* run) {
        if (!control.cancelled()) return false;
        r.status = Status::cancelled;
        r.message = "cancelled after " + std::to_string(i) + " " + run + " tokens; all memory was freed";
        return true;
    };

    // With the cache: the prompt once, then one position per token.
    std::vector<float> logits = g.prefill(prompt);
    std::vector<int> cached_tokens, history = prompt;
    std::vector<std::vector<float>> cached_logits;
    for (int i = 0; i < request.tokens; ++i) {
        if (cancelled(i, "cached")) return r;
        const auto start = Clock::now();
        const int next = TinyTransformer::pick(logits, history);
        cached_tokens.push_back(next);
        history.push_back(next);
        cached_logits.push_back(logits);
        logits = g.step(next, static_cast<int>(history.size()) - 1);
        r.cached_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        if (control.stopwatch_step) control.stopwatch_step(true, r.cached_ms.back());
        control.report((i + 1) / total, "with the cache: token " + std::to_string(i + 1));
    }
    // Without: every step runs the whole prefix again.
    std::vector<int> prefix = prompt, uncached_tokens;
    for (int i = 0; i < request.tokens; ++i) {
        if (cancelled(i, "recomputed")) return r;
        const auto start = Clock::now();
        const std::vector<float> l = g.recompute(prefix);
        const int next = TinyTransformer::pick(l, prefix);
        r.uncached_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        if (control.stopwatch_step) control.stopwatch_step(false, r.uncached_ms.back());
        for (std::size_t j = 0; j < l.size(); ++j)
            r.max_logit_diff = std::max(
                r.max_logit_diff, static_cast<double>(std::abs(l[j] - cached_logits[static_cast<std::size_t>(i)][j])));
        uncached_tokens.push_back(next);
        prefix.push_back(next);
        control.report((request.tokens + i + 1) / total, "recomputing: token " + std::to_string(i + 1));
    }
    r.text_cached = model.decode(cached_tokens);
    r.text_uncached = model.decode(uncached_tokens);
    r.tokens_identical = cached_tokens == uncached_tokens;
    double cached = 0, uncached = 0;
    for (double ms : r.cached_ms) cached += ms;
    for (double ms : r.uncached_ms) uncached += ms;
    r.speedup = cached > 0 ? uncached / cached : 0.0;
    // The bound over the work timed. The cached run's clock starts after the prompt's prefill; its step i feeds
    // one token at position p + i (contexts p+1 … p+n). The recomputing run's step i runs the whole prefix of p + i
    // tokens (p … p+n-1): token_work's cumulative sums, from the first position, less those before.
    const auto n = static_cast<std::uint64_t>(request.tokens), p = static_cast<std::uint64_t>(prompt.size());
    const Architecture arch = TinyTransformer::architecture();
    const auto work = [&arch](std::uint64_t t) { return t > 0 ? token_work(arch, {t, 1, 1, false}, t) : TokenWork{}; };
    const double cached_work = work(p + n).cumulative_cached - work(p).cumulative_cached;
    const std::uint64_t first = p > 0 ? p : 1;  // an empty prompt: the first recomputed step runs one position
    const double recomputed_work = work(first + n - 1).cumulative_uncached - work(first - 1).cumulative_uncached;
    r.speedup_bound = cached_work > 0 ? recomputed_work / cached_work : 1;
    auto one_decimal = [](double v) { return number_text(v, Notation::fixed, 1); };
    r.message = format_count_of(n, "token", "tokens") + g.where + ": " + one_decimal(cached) + " ms with the cache, " +
                one_decimal(uncached) + " ms recomputing (" + one_decimal(r.speedup) +
                "× slower; the calculator's FLOP bound is " + one_decimal(r.speedup_bound) + "×); texts " +
                (r.tokens_identical ? "identical" : "differ");
    return r;
}

std::string stopwatch_gap_note(const StopwatchReport& r) {
    const std::size_t n = r.cached_ms.size();
    if (n < 16 || r.speedup_bound <= 0 || r.speedup >= 0.5 * r.speedup_bound) return {};
    // Medians of an early stretch (after the first eighth, which warms up) and of the last quarter.
    auto median_of = [](const std::vector<double>& ms, std::size_t from, std::size_t to) {
        return step::median_of(
            {ms.begin() + static_cast<std::ptrdiff_t>(from), ms.begin() + static_cast<std::ptrdiff_t>(to)});
    };
    const double early = median_of(r.cached_ms, n / 8, n / 4), late = median_of(r.cached_ms, 3 * n / 4, n);
    if (early <= 0) return {};
    auto text = [](double v, int digits) { return number_text(v, Notation::fixed, digits); };
    const std::string early_at = std::to_string(n / 8 + (n / 4 - n / 8) / 2), late_at = std::to_string(7 * n / 8);
    const std::string cost = r.device.host_memory ? "handing each operation to the threads"
                                                  : "launching its kernels (several dozen per step)";
    const std::string bound = "At this small model's size the fixed cost of " + cost +
                              " dominates each cached step, not the arithmetic the bound counts; a larger model, or a "
                              "step captured whole (a CUDA graph), comes closer to it";
    const std::string head = "the measured ratio (" + text(r.speedup, 1) + "×) stays far below the bound (" +
                             text(r.speedup_bound, 1) + "×) because ";
    if (late <= 1.5 * early)
        return head + "a cached step takes about the same time whatever its position: " + text(early, 3) +
               " ms near token " + early_at + ", " + text(late, 3) + " ms near token " + late_at + ". " + bound;
    // The cached steps grow (their attention does), yet each still costs far more than its share of the arithmetic:
    // late in the run a recomputed step does more than the bound's ratio of a cached step's arithmetic (the ratio
    // grows with the position) in far fewer times its time. On an H200 (2026-12-04) at 4,094 tokens: 0.37 ms, then
    // 0.66 ms a cached step, 15.1 ms a recomputed one, against a bound of 1,595×.
    if (r.uncached_ms.size() != n) return {};
    const double recomputed = median_of(r.uncached_ms, 3 * n / 4, n);
    if (recomputed >= 0.1 * r.speedup_bound * late) return {};
    return head + "a cached step costs far more than its share of the arithmetic: near token " + late_at +
           " it takes " + text(late, 3) + " ms and recomputing " + text(recomputed, 3) + " ms, only " +
           text(recomputed / late, 1) + "× as long for more than " + text(r.speedup_bound, 1) +
           "× the arithmetic, and near token " + early_at + " a cached step already takes " + text(early, 3) + " ms. " +
           bound;
}

StopwatchReport run_stopwatch(const StopwatchRequest& request, const Control& control) {
    const TinyTransformer model;
    TinyTransformer::Cache cache;
    Generator host;
    host.prefill = [&](const std::vector<int>& prompt) {
        std::vector<float> logits;
        for (int t : prompt) logits = model.step_cached(t, cache);
        return logits;
    };
    host.step = [&](int token, int) { return model.step_cached(token, cache); };
    host.recompute = [&](const std::vector<int>& prefix) { return model.logits_uncached(prefix); };
    return generate_both(model, request, control, host);
}

}  // namespace kvscope::probe
