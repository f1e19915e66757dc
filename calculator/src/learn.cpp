#include "kvscope/calculator/learn.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/weights.h"

namespace kvscope {

namespace {

// Validation errors of `s` as one sentence, naming the field.
std::string first_problem(const Errors& errors) {
    if (errors.empty()) return {};
    return errors.front().field + ": " + errors.front().message;
}

}  // namespace

KvDtype weight_dtype_of(const Scenario& scenario) {
    return scenario.deployment ? scenario.deployment->weight_dtype : KvDtype::bf16;
}

namespace {
Deployment deployment_of(const Scenario& s) { return s.deployment ? *s.deployment : Deployment{}; }
}  // namespace

Result<PhaseCosts> phase_costs(const Scenario& s) {
    auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
    if (!kv) return kv.errors();
    auto weights = read_weights_bytes(s.arch, deployment_of(s));
    if (!weights) return weights.errors();
    const ParameterCount params = parameters(s.arch);
    auto stored = stored_weights_bytes(s.arch, deployment_of(s));
    if (!stored) return stored.errors();
    const TokenWork work = token_work(s.arch, s.workload, s.workload.context_tokens);
    const double sequences = static_cast<double>(s.workload.batch);

    PhaseCosts p;
    p.prompt_tokens = s.workload.context_tokens;
    p.sequences = s.workload.batch;
    // Without a cache the step at position T redoes the prompt's pass: the same work as prefill.
    p.prefill_flops = work.flops_uncached * sequences;
    p.prefill_kv_written_bytes = kv->total_bytes;
    p.decode_weight_bytes_read = *weights;
    p.weights_bytes = *stored;
    // The same reasons matmul_parameters (decode.cpp) leaves weights out of a step's reads.
    std::vector<std::string> reasons;
    if (params.active < params.total) reasons.emplace_back("only the experts the router picks are read");
    if (!s.arch.tied_embeddings && params.embedding > 0 && params.active > params.embedding)
        reasons.emplace_back("the embedding table is looked up, one row per token, not read whole");
    for (const auto& reason : reasons) p.weights_read_reason += (p.weights_read_reason.empty() ? "" : "; ") + reason;
    p.decode_kv_bytes_read = kv->total_bytes;
    p.decode_flops_cached = work.flops_cached * sequences;
    p.decode_flops_uncached = work.flops_uncached * sequences;
    // Both phases move the weights once and the whole cache once (prefill writes it, a step reads it).
    const double moved = static_cast<double>(*weights) + static_cast<double>(kv->total_bytes);
    p.arithmetic_intensity_prefill = moved > 0 ? p.prefill_flops / moved : 0;
    p.arithmetic_intensity_decode = moved > 0 ? p.decode_flops_cached / moved : 0;
    return p;
}

Result<RecomputeCurve> recompute_curve(const Architecture& arch, const Workload& workload, std::uint64_t max_tokens,
                                       std::size_t points) {
    Errors errors = validate(arch);
    if (max_tokens == 0) errors.push_back({Field::max_tokens, "at least one generated token is needed"});
    if (!errors.empty()) return errors;
    points = std::max<std::size_t>(2, points);
    RecomputeCurve c;
    for (std::size_t i = 0; i < points; ++i) {
        const auto t = static_cast<std::uint64_t>(std::llround(
            1.0 + static_cast<double>(max_tokens - 1) * static_cast<double>(i) / static_cast<double>(points - 1)));
        if (!c.tokens.empty() && c.tokens.back() >= t) continue;
        const TokenWork w = token_work(arch, workload, t);
        c.tokens.push_back(t);
        c.per_token_cached.push_back(w.flops_cached);
        c.per_token_uncached.push_back(w.flops_uncached);
        c.cumulative_cached.push_back(w.cumulative_cached);
        c.cumulative_uncached.push_back(w.cumulative_uncached);
    }
    const TokenWork last = token_work(arch, workload, max_tokens);
    c.speedup_bound = last.cumulative_cached > 0 ? last.cumulative_uncached / last.cumulative_cached : 1;
    return c;
}

std::vector<WhatIf> what_ifs(const Scenario& s) {
    std::vector<WhatIf> out;
    auto base = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
    const bool per_gpu_matters = s.parallel.tp > 1 || s.parallel.pp > 1;

    // `change` edits the copy, or returns why it cannot.
    auto add = [&](std::string id, std::string title, std::string why,
                   const std::function<std::string(Scenario&)>& change, bool compare_per_gpu = false) {
        WhatIf w;
        w.id = std::move(id);
        w.title = std::move(title);
        w.why = std::move(why);
        w.scenario = s;
        if (!base) {
            w.unavailable_reason = "fix the inputs first (" + first_problem(base.errors()) + ")";
            out.push_back(std::move(w));
            return;
        }
        w.total_before = base->total_bytes;
        w.per_gpu_before = base->per_gpu_bytes;
        w.unavailable_reason = change(w.scenario);
        if (w.unavailable_reason.empty()) {
            auto after =
                kv_cache_report(w.scenario.arch, w.scenario.kv_dtype, w.scenario.workload, w.scenario.parallel);
            Errors deployment_errors;
            if (w.scenario.deployment) deployment_errors = validate(*w.scenario.deployment, w.scenario.parallel);
            if (!after) {
                w.unavailable_reason = first_problem(after.errors());
            } else if (!deployment_errors.empty()) {
                w.unavailable_reason = first_problem(deployment_errors);
            } else {
                w.available = true;
                w.total_after = after->total_bytes;
                w.per_gpu_after = after->per_gpu_bytes;
                w.per_gpu = compare_per_gpu || per_gpu_matters;
                const double before = static_cast<double>(w.per_gpu ? w.per_gpu_before : w.total_before);
                const double now = static_cast<double>(w.per_gpu ? w.per_gpu_after : w.total_after);
                w.percent_change = before > 0 ? 100.0 * (now - before) / before : 0;
            }
        }
        out.push_back(std::move(w));
    };

    const std::uint64_t kv = s.arch.kv_heads;
    add("halve_kv_heads",
        kv >= 2 && kv % 2 == 0 ? "Halve the KV heads (" + format_count(kv) + " → " + format_count(kv / 2) + ")"
                               : "Halve the KV heads",
        "Each KV head stores a key and a value per token, so half the heads store half the bytes; query heads "
        "share them in groups twice as large.",
        [&](Scenario& c) -> std::string {
            if (c.arch.mla) return "MLA stores one shared latent, not KV heads";
            if (kv == 1) return "1 KV head (MQA) is the fewest there can be";
            if (kv % 2 != 0) return format_count(kv) + " KV heads cannot be halved evenly";
            c.arch.kv_heads = kv / 2;
            return {};
        });
    add("mqa", "Multi-query attention (1 KV head)",
        "Every query head shares one key and one value: the smallest cache this layout allows, at some cost "
        "in quality.",
        [&](Scenario& c) -> std::string {
            if (c.arch.mla) return "MLA stores one shared latent already";
            if (kv == 1) return "the model already has 1 KV head";
            c.arch.kv_heads = 1;
            return {};
        });
    add("fp8", "fp8 cache (" + std::string(to_string(s.kv_dtype)) + " → fp8_e4m3)",
        "The cache's values take 1 byte each instead of " + element_size_text(s.kv_dtype) +
            "; engines scale them per tensor to keep accuracy.",
        [&](Scenario& c) -> std::string {
            if (c.kv_dtype == KvDtype::fp8_e4m3) return "the cache is already fp8";
            c.kv_dtype = KvDtype::fp8_e4m3;
            return {};
        });
    const std::uint64_t t = s.workload.context_tokens;
    const bool local = s.arch.has_sliding_layers() || s.arch.count_layers(LayerKind::chunked) > 0;
    const bool state = s.arch.state_layers() > 0;
    add("double_context", "Double the context (" + format_tokens(t) + " → " + format_tokens(t * 2) + " tokens)",
        s.arch.attention_layers() == 0
            ? "No layer of this model keeps a KV cache: its recurrent state stays the same size whatever the context."
        : local || state ? std::string("The cache grows with every token kept — but ") +
                               (local ? "sliding-window and chunked layers keep only their window or chunk" : "") +
                               (local && state ? ", and " : "") +
                               (state ? "the recurrent state of the other layers stays the same size" : "") +
                               ", so the memory grows by less than double."
                         : "The cache grows with every token kept: twice the tokens, twice the bytes.",
        [&](Scenario& c) -> std::string {
            if (t > (1ull << 62)) return "the context is already as long as the calculator counts";
            c.workload.context_tokens = t * 2;
            return {};
        });
    if (s.arch.max_positions > 0 && t * 2 > s.arch.max_positions && out.back().available)
        out.back().why += " Note that " + format_count(t * 2) + " tokens is beyond the model's " +
                          format_count(s.arch.max_positions) + "-token context window.";
    const std::uint64_t tp = s.parallel.tp;
    add(
        "tp2",
        tp == 1 ? "Tensor parallel 2 (split over 2 GPUs)"
                : "Double tensor parallel (" + std::to_string(tp) + " → " + std::to_string(tp * 2) + " GPUs)",
        "Each GPU keeps only its share of the KV heads, so the cache per GPU halves while the total stays — "
        "until there are more GPUs than KV heads and heads are copied.",
        [&](Scenario& c) -> std::string {
            c.parallel.tp = tp * 2;
            if (c.deployment) c.deployment->gpu_count = c.parallel.tp * c.parallel.pp;
            return {};
        },
        true);
    // Two rows that make the same scenario (halving 2 KV heads is MQA) are one change: the later says so.
    for (std::size_t i = 0; i < out.size(); ++i)
        for (std::size_t j = 0; j < i && out[i].available; ++j)
            if (out[j].available && out[j].scenario == out[i].scenario) {
                out[i].available = false;
                out[i].unavailable_reason = "it is the same change as \"" + out[j].title + "\" for this model";
            }
    return out;
}

ContextWindowView context_window_view(const Architecture& arch, std::uint64_t conversation) {
    ContextWindowView v;
    v.conversation = conversation;
    v.context_window = arch.max_positions;
    v.in_window = v.context_window > 0 ? std::min(conversation, v.context_window) : conversation;
    v.dropped = conversation - v.in_window;
    // Layers by what they see: full attention, then sliding windows and chunks (widest first), then the
    // recurrent layers, whose fixed state summarises every token. A shared layer sees what the layer it
    // reads keeps (its window, or everything); an MLP-only block attends to nothing and is left out.
    enum Order { full, sliding, chunked, recurrent };
    std::map<std::pair<int, std::uint64_t>, std::uint64_t> groups;  // (order, -window) -> layers
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const LayerSpec spec = arch.layer(l);
        switch (spec.kind) {
            case LayerKind::full:
                ++groups[{full, 0}];
                break;
            case LayerKind::sliding:
                ++groups[{sliding, ~spec.window}];
                break;
            case LayerKind::chunked:
                ++groups[{chunked, ~spec.window}];
                break;
            case LayerKind::shared:
                ++groups[spec.window > 0 ? std::pair<int, std::uint64_t>{sliding, ~spec.window}
                                         : std::pair<int, std::uint64_t>{full, 0}];
                break;
            case LayerKind::recurrent:
                ++groups[{recurrent, 0}];
                break;
            case LayerKind::none:
                break;
        }
    }
    for (const auto& [key, layers] : groups) {
        WindowRow r;
        r.layers = layers;
        r.window = key.first == sliding || key.first == chunked ? ~key.second : 0;
        switch (key.first) {
            case full:
                r.label = format_count_of(layers, "full-attention layer", "full-attention layers");
                r.visible = v.in_window;
                break;
            case sliding:
                r.label = format_count_of(layers, "sliding-window layer", "sliding-window layers") + " (window " +
                          format_count(r.window) + ")";
                r.visible = std::min(r.window, v.in_window);
                break;
            case chunked:
                // Within the current chunk only: the tokens since the last multiple of the chunk.
                r.label = format_count_of(layers, "chunked-attention layer", "chunked-attention layers") + " (chunk " +
                          format_count(r.window) + ")";
                r.visible = v.in_window == 0 ? 0 : (v.in_window - 1) % r.window + 1;
                break;
            default:
                // No token leaves a recurrent layer's state: it summarises the whole conversation, those past the
                // attention layers' window too.
                r.label = format_count_of(layers, "recurrent layer", "recurrent layers") +
                          " (a fixed state that summarises every token)";
                r.visible = v.conversation;
                r.summarised = true;
                break;
        }
        v.rows.push_back(r);
    }
    return v;
}

Result<TrafficLesson> traffic_lesson(const Scenario& s, std::uint64_t prompt_tokens, std::uint64_t output_tokens,
                                     std::uint64_t shared_prefix, std::uint64_t block_size) {
    if (prompt_tokens == 0) return FieldError{"prompt tokens", "must be at least 1"};
    if (block_size == 0) return FieldError{"block size", "must be at least 1"};
    if (shared_prefix > prompt_tokens)
        return FieldError{"shared prefix",
                          "is part of the prompt: at most its " + format_count(prompt_tokens) + " tokens"};
    TrafficLesson l;
    l.sequences = s.workload.batch;
    l.context = s.workload.context_tokens;
    l.prompt_tokens = prompt_tokens;
    l.output_tokens = output_tokens;
    l.shared_prefix = shared_prefix;
    l.block_size = block_size;
    // A request holds its prompt and the answer so far: half its answer on average over its life. At most the context.
    const std::uint64_t typical = std::min<std::uint64_t>(l.context, prompt_tokens + output_tokens / 2);
    // The cache of the scenario's sequences at `tokens` each: with the recurrent state (`state`), or the KV alone.
    const auto bytes_at = [&](std::uint64_t tokens, std::uint64_t block, bool state = true) -> Result<std::uint64_t> {
        Workload w = s.workload;
        w.context_tokens = std::max<std::uint64_t>(1, tokens);
        w.block_size = block;
        auto kv = kv_cache_report(s.arch, s.kv_dtype, w, s.parallel);
        if (!kv) return kv.errors();
        return state ? kv->memory_bytes : kv->total_bytes;
    };
    auto worst = bytes_at(l.context, 1);
    auto actual = bytes_at(typical, 1);
    auto paged = bytes_at(typical, block_size);
    if (!worst || !actual || !paged) return (!worst ? worst : !actual ? actual : paged).errors();
    const std::string n = format_count(l.sequences) + (l.sequences == 1 ? " sequence" : " sequences");
    l.steps.push_back({n + " at the full context (" + format_count(l.context) + " tokens)",
                       "What a fit sizes for, and what an engine that reserves each request's whole context keeps.",
                       *worst});
    l.steps.push_back({n + " at the length a request has (" + format_count(typical) + " tokens)",
                       "A prompt of " + format_count(prompt_tokens) +
                           " tokens and, on average over its life, half "
                           "its answer of " +
                           format_count(output_tokens) + ": the cache grows as the answer does.",
                       *actual});
    l.steps.push_back({"Paged in blocks of " + format_count(block_size) + " tokens",
                       "vLLM and SGLang hand out blocks as tokens arrive: each sequence wastes at most a part-filled "
                       "block, never a reserved context.",
                       *paged});
    if (shared_prefix >= block_size && l.sequences > 1) {
        // The prefix's full blocks, kept once for all the sequences instead of once each (their KV; a recurrent state
        // is each sequence's own).
        auto prefix = bytes_at(shared_prefix / block_size * block_size, block_size, false);
        if (!prefix) return prefix.errors();
        const std::uint64_t one = *prefix / l.sequences;  // one sequence's copy
        const std::uint64_t saved = one * (l.sequences - 1);
        l.steps.push_back(
            {"A system prompt of " + format_count(shared_prefix) + " tokens shared",
             "Prefix caching keeps the blocks every request starts with once: " + format_count(l.sequences - 1) +
                 " copies of " + format_count(shared_prefix / block_size) + " blocks saved.",
             *paged > saved ? *paged - saved : 0});
    }
    for (TrafficLessonStep& st : l.steps)
        st.of_worst = *worst > 0 ? static_cast<double>(st.bytes) / static_cast<double>(*worst) : 0;
    return l;
}

}  // namespace kvscope
