#include "kvscope/calculator/quiz.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/learn.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/variants.h"
#include "kvscope/calculator/weights.h"

namespace kvscope {

namespace {

std::string bytes_answer(std::uint64_t bytes, UnitSystem units) {
    return format_bytes(bytes, units) + " (" + format_count(bytes) + " bytes)";
}

std::string percent_text(double p) { return number_text(p, Notation::fixed, p < 10 ? 2 : 1) + "%"; }

// a ÷ b with two decimals, digits grouped as every count: 6,510,416,640 ÷ 8,000 = "813,802.08". Cut, not rounded:
// 90,532.996 is "90,532.99", never "90,533.00", so that "the first whole token past it is 90,533" holds.
std::string quotient_text(std::uint64_t a, std::uint64_t b) {
    const unsigned __int128 hundredths = static_cast<unsigned __int128>(a) * 100 / b;
    const auto whole = static_cast<std::uint64_t>(hundredths / 100);
    const auto rest = static_cast<unsigned>(hundredths % 100);
    return format_count(whole) + "." + (rest < 10 ? "0" : "") + std::to_string(rest);
}

const char* hint_for(AnswerUnit unit) {
    switch (unit) {
        case AnswerUnit::bytes:
            return "a size such as 1.5 GiB, 1.6 GB or 1610612736";
        case AnswerUnit::tokens:
            return "a token count such as 12000, 12,000 or 12k";
        case AnswerUnit::percent:
            return "a percentage such as 25 or 25%";
    }
    return "";
}

std::uint64_t to_count(double v) {
    constexpr double kTop = 18446744073709549568.0;  // the largest double below 2^64
    return v >= kTop ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(std::round(v));
}

// The row factors (with K and V) as text: "2 (K and V) × 8 KV heads × 128 head dim × 2 bytes (fp16)".
std::string row_text(const KvDerivation& d) {
    std::string text = d.kv_pair ? d.kv_pair->text : "";
    for (const Factor& f : d.row) text += (text.empty() ? "" : " × ") + f.text;
    return text;
}

}  // namespace

std::optional<double> parse_answer(std::string_view typed, AnswerUnit unit) {
    // The number as people write it (0.85, 0,85, 90,533, 1.5e9), then its unit: "1,5 GiB", "12k".
    // Lower case, spaces and group separators left in place (read_typed_decimal reads them).
    const std::string t = ascii_lower(typed);
    std::size_t n = 0;
    while (n < t.size() && std::isspace(static_cast<unsigned char>(t[n]))) ++n;
    const std::size_t start = n;
    auto part_of_number = [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == ',' || c == '_' || c == '\'' ||
               c == ' ' || static_cast<unsigned char>(c) >= 0x80;  // no-break spaces
    };
    while (n < t.size() && part_of_number(t[n])) ++n;
    std::size_t number_end = n;
    while (number_end > start && t[number_end - 1] == ' ') --number_end;
    std::string exponent;
    if (n + 1 < t.size() && t[n] == 'e' &&
        (std::isdigit(static_cast<unsigned char>(t[n + 1])) || t[n + 1] == '+' || t[n + 1] == '-')) {
        exponent = "e";
        for (++n; n < t.size() && (std::isdigit(static_cast<unsigned char>(t[n])) || t[n] == '+' || t[n] == '-');)
            exponent += t[n++];
    }
    std::string suffix;
    for (; n < t.size(); ++n)
        if (!std::isspace(static_cast<unsigned char>(t[n]))) suffix += t[n];
    const TypedDecimal typed_number = read_typed_decimal(std::string_view(t).substr(start, number_end - start));
    if (!typed_number.error.empty()) return std::nullopt;
    const auto parsed = number_from_text(typed_number.plain + exponent);
    if (!parsed) return std::nullopt;
    const double number = *parsed;
    // What the suffix multiplies by; none when it is not one this unit takes.
    auto factor = [&]() -> std::optional<double> {
        switch (unit) {
            case AnswerUnit::bytes:
                if (suffix.empty() || suffix == "bytes") return 1.0;
                for (const SizeSuffix& u : size_suffixes())  // the same suffixes as every size field
                    if (suffix == u.suffix) return static_cast<double>(u.multiplier);
                return std::nullopt;
            case AnswerUnit::tokens:
                if (suffix.empty() || suffix == "tokens") return 1.0;
                if (suffix == "k") return 1024.0;
                if (suffix == "m") return 1048576.0;
                return std::nullopt;
            case AnswerUnit::percent:
                if (suffix.empty() || suffix == "%") return 1.0;
                return std::nullopt;
        }
        return std::nullopt;
    }();
    if (!factor) return std::nullopt;
    // No answer here is beyond 2^64 (bytes or tokens); larger numbers are typing slips, not answers.
    const double v = number * *factor;
    if (!(v <= 18446744073709551616.0)) return std::nullopt;
    return v;
}

AnswerCheck check_answer(const Question& q, std::string_view typed, UnitSystem units) {
    AnswerCheck c;
    const auto value = parse_answer(typed, q.unit);
    if (!value) {
        c.message = "Type " + std::string(hint_for(q.unit)) + " (at most 2^64).";
        return c;
    }
    // Tokens and bytes are whole: "30.634" is no count (a German's 30634 with a lone point, which reads as a decimal
    // point here), never rounded to 31 and marked wrong.
    const auto plain_count = [&typed] {  // a number alone, or with the word "bytes" or "tokens": no unit to scale it
        std::string t = ascii_lower(typed);
        for (const char* word : {"bytes", "tokens"})
            if (const auto at = t.find(word); at != std::string::npos) t.erase(at, std::string_view(word).size());
        return std::none_of(t.begin(), t.end(), [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); });
    };
    if (q.unit != AnswerUnit::percent && plain_count()) {
        std::string number = ascii_lower(typed);
        for (const char* word : {"bytes", "tokens"})
            if (const auto at = number.find(word); at != std::string::npos) number.erase(at);
        if (auto hint = lone_point_thousands(number)) {
            c.message = *hint + ".";
            return c;
        }
        if (std::floor(*value) != *value) {
            c.message = "'" + std::string(typed) + "' is not a whole number of " +
                        (q.unit == AnswerUnit::tokens ? "tokens" : "bytes") + ".";
            return c;
        }
    }
    c.understood = true;
    c.correct = std::fabs(*value - q.answer) <= q.tolerance * std::fabs(q.answer);
    std::string said;
    switch (q.unit) {
        case AnswerUnit::bytes:
            said = format_bytes(to_count(*value), units);
            break;
        case AnswerUnit::tokens:
            said = format_count(to_count(*value)) + " tokens";
            break;
        case AnswerUnit::percent:
            said = percent_text(*value);
            break;
    }
    c.message = c.correct ? "Right: " + q.answer_text + "."
                          : "Not quite: you answered " + said + "; the answer is " + q.answer_text + ".";
    return c;
}

namespace {

// 1. Another KV head count: the cache scales with it (none for MLA, whose latent has no KV heads).
std::optional<Question> other_kv_heads_question(const Scenario& s, const KvCacheReport& report, UnitSystem units) {
    if (s.arch.mla) return std::nullopt;
    const auto choices = kv_head_choices(s.arch);
    std::uint64_t other = 0;
    for (std::uint64_t k : choices)  // the largest count below the model's, else the next above
        if (k < s.arch.kv_heads) {
            other = k;
            break;
        }
    for (auto it = choices.rbegin(); other == 0 && it != choices.rend(); ++it)
        if (*it > s.arch.kv_heads) other = *it;
    Scenario changed = s;
    changed.arch.kv_heads = other;
    auto d = other ? derive_kv_bytes(changed.arch, s.kv_dtype, s.workload, s.parallel)
                   : Result<KvDerivation>(Errors{{Field::kv_heads, "no other count"}});
    if (d) {
        Question q;
        q.id = "other_kv_heads";
        q.text = "With " + format_count_of(other, "KV head", "KV heads") + " instead of " +
                 format_count(s.arch.kv_heads) + ", and everything else as it is, how big is the cache?";
        q.answer = static_cast<double>(d->total_bytes);
        q.answer_text = bytes_answer(d->total_bytes, units);
        q.worked = derivation_text(*d, units) + ". The cache is proportional to the KV heads: " + format_count(other) +
                   "/" + format_count(s.arch.kv_heads) + " of " + format_bytes(report.total_bytes, units) + ".";
        return q;
    }
    return std::nullopt;
}

// 4. Share of MHA (or MQA's share when the model is MHA).
std::optional<Question> share_of_mha_question(const Scenario& s, UnitSystem units) {
    auto variants = compare_variants(s.arch, s.kv_dtype, s.workload, s.parallel);
    if (variants && !variants->empty()) {
        const Variant* mha = nullptr;
        const Variant* own = nullptr;
        const Variant* mqa = nullptr;
        for (const Variant& v : *variants) {
            if (v.kind == AttentionKind::MHA) mha = &v;
            if (v.is_model) own = &v;
            if (v.kind == AttentionKind::MQA) mqa = &v;
        }
        const Variant* asked = own && own->kind != AttentionKind::MHA ? own : mqa;
        if (mha && asked && mha->kv_cache_bytes > 0 && asked != mha) {
            Question q;
            q.id = "share_of_mha";
            q.text = asked == own ? "What percentage of the MHA cache (" +
                                        format_count_of(mha->kv_heads, "KV head", "KV heads") + ") does this model's " +
                                        own->name + " layout take?"
                                  : "This model is MHA. What percentage of its cache would MQA (1 KV head) take?";
            q.unit = AnswerUnit::percent;
            q.answer = asked->percent_of_mha;
            q.answer_text = percent_text(asked->percent_of_mha);
            q.worked = format_bytes(asked->kv_cache_bytes, units) + " ÷ " + format_bytes(mha->kv_cache_bytes, units) +
                       " = " + percent_text(asked->percent_of_mha) +
                       (asked->kind == AttentionKind::MLA
                            ? ": MLA's latent replaces every head's K and V."
                            : ": the cache scales with the KV heads, " + format_count(asked->kv_heads) + " of " +
                                  format_count(mha->kv_heads) + ".");
            return q;
        }
    }
    return std::nullopt;
}

}  // namespace

std::vector<Question> questions_for(const Scenario& s, UnitSystem units) {
    std::vector<Question> out;
    auto layout = KvLayout::make(s.arch, s.kv_dtype, s.workload, s.parallel);
    if (!layout) return out;
    auto report = kv_cache_report(*layout, s.arch, s.workload, s.parallel);
    if (!report) return out;
    auto derivation = derive_kv_bytes(*layout, s.arch, s.kv_dtype, s.workload, *report);
    if (!derivation) return out;
    auto add = [&](Question q) {
        q.hint = hint_for(q.unit);
        out.push_back(std::move(q));
    };

    if (auto q = other_kv_heads_question(s, *report, units)) add(std::move(*q));

    // 2. One more token.
    {
        Question q;
        q.id = "per_token";
        q.text = "How many bytes does one more token add to one sequence's cache, over all " +
                 format_count(s.arch.layers) + " layers?";
        q.answer = static_cast<double>(report->bytes_per_token);
        q.answer_text = bytes_answer(report->bytes_per_token, units);
        // Only the layers with a KV cache of their own add bytes (recurrent, shared and MLP-only layers do not).
        std::uint64_t caching = 0;
        for (const auto& g : derivation->groups) caching += g.layers.value;
        const std::string layers_text = caching == s.arch.layers
                                            ? format_count(s.arch.layers) + " layers"
                                            : format_count(caching) + " of the " + format_count(s.arch.layers) +
                                                  " layers (the others keep no KV cache)";
        q.worked = derivation->row_bytes > 0
                       ? row_text(*derivation) + " = " + format_count(derivation->row_bytes) + " bytes per layer, × " +
                             layers_text + " = " + format_count(report->bytes_per_token) + " bytes."
                       : "each group of layers' bytes per token (their own heads), summed over " + layers_text + " = " +
                             format_count(report->bytes_per_token) + " bytes.";
        add(std::move(q));
    }

    // 3. Where the cache outgrows the weights.
    const Deployment deployment = s.deployment ? *s.deployment : Deployment{};
    auto weights = stored_weights_bytes(s.arch, deployment);
    if (weights) {
        const auto at = context_where_kv_exceeds(*layout, s.workload, *weights);
        if (at) {
            Question q;
            q.id = "outgrows_weights";
            // All the weights, as stored (the fit's figure); a decode step reads fewer (learn.h's phase_costs).
            q.text = "The weights take " + format_bytes(*weights, units) + " " + weights_text(deployment) +
                     " (all of them, as stored). With " + format_count(s.workload.batch) +
                     (s.workload.batch == 1 ? " sequence" : " sequences") +
                     ", at what context (tokens per sequence) does the cache outgrow them?";
            q.unit = AnswerUnit::tokens;
            q.answer = static_cast<double>(*at);
            q.answer_text = format_count(*at) + " tokens";
            q.tolerance = 0.05;
            const std::uint64_t per_context_token = report->bytes_per_token * s.workload.batch;
            // One rounding rule with the answer: the cache outgrows the weights at the first whole token
            // past weights ÷ bytes per context token.
            const std::uint64_t per = std::max<std::uint64_t>(1, per_context_token);
            const std::uint64_t first_past = *weights / per + 1;
            q.worked = "Each token of context adds " + format_bytes(report->bytes_per_token, units) + " × " +
                       format_count(s.workload.batch) + " = " + format_bytes(per_context_token, units) + "; " +
                       format_bytes(*weights, units) + " ÷ " + format_bytes(per_context_token, units) + " = " +
                       quotient_text(*weights, per) + " tokens, so the first whole token past it is " +
                       format_count(first_past);
            if (first_past != *at)
                q.worked += " before sliding windows and blocks; the exact search gives " + format_count(*at);
            q.worked += ".";
            add(std::move(q));
        }
    }

    if (auto q = share_of_mha_question(s, units)) add(std::move(*q));

    // 5. Twice the context.
    if (s.workload.context_tokens <= (1ull << 40)) {
        Workload w = s.workload;
        w.context_tokens *= 2;
        auto d = derive_kv_bytes(s.arch, s.kv_dtype, w, s.parallel);
        if (d) {
            Question q;
            q.id = "double_context";
            q.text = "At twice the context (" + format_count(w.context_tokens) + " tokens), how big is the cache?";
            q.answer = static_cast<double>(d->total_bytes);
            q.answer_text = bytes_answer(d->total_bytes, units);
            q.worked = derivation_text(*d, units) +
                       (d->groups.size() > 1 ? ". Sliding-window layers keep only their window, so the cache grows "
                                               "by less than double."
                                             : ". Twice the tokens, twice the bytes.");
            add(std::move(q));
        }
    }
    return out;
}

}  // namespace kvscope
