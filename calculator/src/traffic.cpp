#include "kvscope/calculator/traffic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "kvscope/calculator/json.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/text_file.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

std::uint64_t SplitMix64::between(std::uint64_t lo, std::uint64_t hi) {
    if (hi <= lo) return lo;
    const std::uint64_t span = hi - lo + 1;
    if (span == 0) return next();  // the whole 64-bit range
    // Rejection sampling keeps every value equally likely (no modulo bias).
    const std::uint64_t limit = ~0ull - (~0ull % span);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return lo + x % span;
}

namespace {

// Content ids: 1 … G for the system prompts, then one fresh id per message and per answer.
constexpr std::uint64_t kFirstOwnId = 1ull << 32;

Result<std::uint64_t> drawn_length(SplitMix64& rng, const LengthSpec& l, const char* field) {
    if (l.tokens == 0) return FieldError{field, "must be at least 1 token"};
    if (!(l.range >= 0 && l.range <= 1)) return FieldError{field, "the range must be from 0 to 1"};
    if (l.range == 0) return l.tokens;
    // As vllm bench serve's random dataset: integers uniform in [N(1-R), N(1+R)] (vllm/benchmarks/datasets.py,
    // RandomDataset.get_sampling_params: np.random.randint(low, high + 1)), at least 1.
    const auto lo = static_cast<std::uint64_t>(std::floor(static_cast<double>(l.tokens) * (1 - l.range)));
    const auto hi = static_cast<std::uint64_t>(std::ceil(static_cast<double>(l.tokens) * (1 + l.range)));
    return std::max<std::uint64_t>(1, rng.between(lo, hi));
}

}  // namespace

Result<std::vector<TrafficRequest>> make_traffic(const TrafficSpec& spec) {
    Errors errors;
    if (spec.requests == 0) errors.emplace_back("--requests", "must be at least 1");
    // Each request simulated holds about 360 bytes until the report (10 million: 3.6 GB measured), so the cap keeps
    // a run inside a desktop's memory.
    if (spec.requests > kMaxRequests)
        errors.emplace_back("--requests", "at most " + format_count(kMaxRequests) +
                                              " requests are simulated (each holds memory until the report)");
    if (spec.rate && !(*spec.rate > 0 && std::isfinite(*spec.rate)))
        errors.emplace_back("--rate", "must be above 0 requests a second (inf: all at once)");
    // Arrivals spread past a billion seconds (31 years) run the simulation's clock (seconds in a double) so far that
    // its milliseconds are lost: refused, never latencies of 0 ms.
    else if (spec.rate && static_cast<double>(spec.requests) / *spec.rate > kMaxArrivalSeconds)
        errors.emplace_back("--rate", format_count(spec.requests) + " requests at " + number_text(*spec.rate) +
                                          " a second arrive over more than 31 years (10^9 s), past which the "
                                          "simulation's clock loses its milliseconds: a higher rate or fewer requests");
    if (spec.prefix_groups == 0) errors.emplace_back("--prefix-groups", "must be at least 1");
    if (spec.turns == 0) errors.emplace_back("--turns", "must be at least 1");
    if (spec.turns > kMaxTurns) errors.emplace_back("--turns", "at most " + std::to_string(kMaxTurns) + " turns");
    // Each turn's prompt holds the conversation so far: its pieces grow with the turns.
    if (spec.turns > 1 && spec.requests / 2 * std::min(spec.turns, kMaxTurns) > kMaxPromptPieces)
        errors.emplace_back("--turns", std::to_string(spec.requests) + " requests in conversations of " +
                                           std::to_string(spec.turns) +
                                           " turns hold too many prompt pieces to simulate; fewer requests or turns");
    const std::uint64_t most = 1ull << 40;  // tokens: more than any context, far from 2^64 when added up
    if (spec.input.tokens > most || spec.output.tokens > most || spec.shared_prefix > most)
        errors.emplace_back(spec.shared_prefix > most  ? "--shared-prefix"
                            : spec.input.tokens > most ? "--input-tokens"
                                                       : "--output-tokens",
                            "is more than any model's context");
    const bool drawn = !spec.lengths.empty();  // the lengths come from a trace's: input and output are not used
    if (!spec.lengths_from.empty() && !drawn)
        errors.emplace_back("--lengths-from", spec.lengths_from + ": not read (fill_lengths reads it)");
    if (!drawn && spec.input.tokens == 0) errors.emplace_back("--input-tokens", "must be at least 1 token");
    if (!drawn && spec.output.tokens == 0) errors.emplace_back("--output-tokens", "must be at least 1 token");
    for (const auto& [l, field] : {std::pair{spec.input, "--input-range"}, std::pair{spec.output, "--output-range"}})
        if (!drawn && !(l.range >= 0 && l.range <= 1)) errors.emplace_back(field, "must be from 0 to 1");
    if (!errors.empty()) return errors;

    SplitMix64 rng(spec.seed);
    std::vector<TrafficRequest> out;
    out.reserve(spec.requests);
    std::uint64_t next_id = kFirstOwnId;
    double start = 0;
    for (std::uint64_t conversation = 0; out.size() < spec.requests; ++conversation) {
        // Exponential gaps between conversations, `turns` times the requests' so that requests arrive at the rate.
        if (conversation > 0 && spec.rate)
            start += -std::log1p(-rng.uniform()) * static_cast<double>(spec.turns) / *spec.rate;
        std::vector<PromptSpan> history;
        if (spec.shared_prefix > 0)
            history.push_back({1 + conversation % std::max<std::uint64_t>(1, spec.prefix_groups), spec.shared_prefix});
        for (std::uint64_t turn = 0; turn < spec.turns && out.size() < spec.requests; ++turn) {
            TrafficRequest r;
            r.arrival_s = start;
            Result<std::uint64_t> in = std::uint64_t{0}, gen = std::uint64_t{0};
            if (drawn) {
                const LengthPair& pair = spec.lengths[rng.next() % spec.lengths.size()];
                in = pair.prompt;
                gen = pair.output;
            } else {
                in = drawn_length(rng, spec.input, "--input-tokens");
                gen = drawn_length(rng, spec.output, "--output-tokens");
            }
            if (!in || !gen) return Errors{(!in ? in.errors() : gen.errors()).front()};
            r.spans = history;
            r.spans.push_back({next_id++, *in});
            r.output_tokens = *gen;
            r.output_id = next_id++;
            for (const PromptSpan& s : r.spans) r.prompt_tokens += s.tokens;
            if (turn > 0) r.follows = out.size() - 1;
            // The next turn's prompt: this one, its answer, and a new message.
            history = r.spans;
            history.push_back({r.output_id, r.output_tokens});
            out.push_back(std::move(r));
        }
    }
    return out;
}

std::uint64_t shared_tokens(const std::vector<PromptSpan>& a, const std::vector<PromptSpan>& b) {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        if (a[i].id != b[i].id) break;
        n += std::min(a[i].tokens, b[i].tokens);
        if (a[i].tokens != b[i].tokens) break;
    }
    return n;
}

namespace {

// The pieces of `text` between `sep`s, as they are.
std::vector<std::string_view> pieces(std::string_view text, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = text.find(sep, start);
        out.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
        if (at == std::string_view::npos) break;
        start = at + 1;
    }
    return out;
}

// A file's lines, each without a CR (CRLF files) .
std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out = pieces(text, '\n');
    for (auto& l : out)
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    return out;
}

// A CSV line's fields, each without the spaces and quotes around it.
std::vector<std::string_view> csv_fields(std::string_view line) {
    std::vector<std::string_view> out = pieces(line, ',');
    for (auto& f : out) {
        while (!f.empty() && (f.front() == ' ' || f.front() == '"')) f.remove_prefix(1);
        while (!f.empty() && (f.back() == ' ' || f.back() == '"')) f.remove_suffix(1);
    }
    return out;
}

struct LineError {
    const std::string& source;
    std::uint64_t line;
    FieldError operator()(std::string_view field, const std::string& what) const {
        return FieldError{"--trace", source + ":" + std::to_string(line) + ": " + std::string(field) + ": " + what};
    }
};

// A token count: a whole number of at most kMaxTraceTokens (2^40: no model has a context near it, and sums of them
// stay far from 2^64).
constexpr std::uint64_t kMaxTraceTokens = 1ull << 40;
Result<std::uint64_t> whole(std::string_view text, std::string_view field, const LineError& at) {
    const bool digits_only = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    const auto v = u64_from_text(text);
    if (!v && digits_only) return at(field, "'" + std::string(text) + "' is too large");
    if (!v) return at(field, "'" + std::string(text) + "' is not a whole number");
    if (*v > kMaxTraceTokens) return at(field, std::string(text) + " tokens is more than any model's context");
    return *v;
}

std::optional<std::int64_t> digits(std::string_view s) {
    std::int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

// Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const std::int64_t yoe = y - era * 400;
    const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

// "2023-11-16 18:15:46.6805900", "2024-05-12 00:00:00+00:00", "2024-05-12 00:00:00.001163+00:00": seconds since
// 1970 (UTC; the offset, always +00:00 in Azure's files, is subtracted), whole and fraction apart so that the
// microseconds survive (a double of 1.7e9 s keeps only about 0.2 µs).
struct WallTime {
    std::int64_t seconds = 0;
    double fraction = 0;
};
std::optional<WallTime> azure_time(std::string_view t) {
    if (t.size() < 19 || t[4] != '-' || t[7] != '-' || (t[10] != ' ' && t[10] != 'T') || t[13] != ':' || t[16] != ':')
        return std::nullopt;
    const auto y = digits(t.substr(0, 4)), mo = digits(t.substr(5, 2)), d = digits(t.substr(8, 2)),
               h = digits(t.substr(11, 2)), mi = digits(t.substr(14, 2)), s = digits(t.substr(17, 2));
    if (!y || !mo || !d || !h || !mi || !s || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
        *s > 60)
        return std::nullopt;
    WallTime w{days_from_civil(*y, *mo, *d) * 86400 + *h * 3600 + *mi * 60 + *s, 0};
    std::string_view rest = t.substr(19);
    if (!rest.empty() && rest.front() == '.') {
        std::size_t n = 1;
        while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
        const std::string_view fraction = rest.substr(1, n - 1);
        if (fraction.empty() || fraction.size() > 12) return std::nullopt;
        const auto f = digits(fraction);
        if (!f) return std::nullopt;
        w.fraction = static_cast<double>(*f) / std::pow(10.0, static_cast<double>(fraction.size()));
        rest.remove_prefix(n);
    }
    if (rest.empty() || rest == "Z") return w;
    if (rest.size() != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':') return std::nullopt;
    const auto oh = digits(rest.substr(1, 2)), om = digits(rest.substr(4, 2));
    if (!oh || !om) return std::nullopt;
    w.seconds += (rest[0] == '+' ? -1 : 1) * (*oh * 3600 + *om * 60);
    return w;
}

// One request of its own: a prompt no other shares.
TrafficRequest own_request(double at, std::uint64_t prompt, std::uint64_t output, std::uint64_t& next_id) {
    TrafficRequest r;
    r.arrival_s = at;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
    r.spans.push_back({next_id++, prompt});
    r.output_id = next_id++;
    return r;
}

struct CsvColumns {
    std::size_t time = 0, prompt = 0, output = 0;
};

Result<std::vector<TrafficRequest>> read_csv_trace(const std::vector<std::string_view>& lines,
                                                   const std::string& source, bool azure) {
    const std::vector<std::string_view> header = csv_fields(lines.front());
    const auto column = [&](std::string_view name) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return i;
        return std::nullopt;
    };
    const char* time_name = azure ? "TIMESTAMP" : "Timestamp";
    const char* prompt_name = azure ? "ContextTokens" : "Request tokens";
    const char* output_name = azure ? "GeneratedTokens" : "Response tokens";
    const auto t = column(time_name), p = column(prompt_name), o = column(output_name);
    if (!t || !p || !o)
        return FieldError{"--trace", source + ":1: the header names no " +
                                         std::string(!t   ? time_name
                                                     : !p ? prompt_name
                                                          : output_name) +
                                         " column"};
    const CsvColumns c{*t, *p, *o};
    std::vector<TrafficRequest> out;
    std::uint64_t next_id = kFirstOwnId;
    std::optional<std::int64_t> base;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        if (lines[i].empty() || lines[i] == "\r") continue;
        const LineError at{source, i + 1};
        const std::vector<std::string_view> f = csv_fields(lines[i]);
        if (f.size() < header.size())
            return at("row",
                      "has " + std::to_string(f.size()) + " fields, the header " + std::to_string(header.size()));
        std::optional<double> when;
        if (azure) {
            if (const auto w = azure_time(f[c.time])) {
                if (!base) base = w->seconds;  // seconds after the first row's whole second
                when = static_cast<double>(w->seconds - *base) + w->fraction;
            }
        } else {
            when = number_from_text(f[c.time]);
        }
        if (!when || !std::isfinite(*when) || std::fabs(*when) > 1e12)
            return at(time_name, "'" + std::string(f[c.time]) + "' is not " +
                                     (azure ? "a date and time (2023-11-16 18:15:46.6805900)" : "a number of seconds"));
        const auto prompt = whole(f[c.prompt], prompt_name, at);
        if (!prompt) return prompt.errors();
        const auto output = whole(f[c.output], output_name, at);
        if (!output) return output.errors();
        // BurstGPT: a response of 0 tokens is a failed request (its README; vllm/benchmarks/datasets.py's
        // BurstGPTDataset keeps Response tokens > 0). Azure's traces have none such; a prompt of 0 tokens is left
        // out too, as nothing to serve.
        if (*output == 0 || *prompt == 0) continue;
        out.push_back(own_request(*when, *prompt, *output, next_id));
    }
    return out;
}

// Each non-blank line of a JSON-lines file, an object, to `f` with its place for errors; the first error stops it (a
// line that is not a JSON object is one).
template <class F>
std::optional<FieldError> for_json_lines(const std::vector<std::string_view>& lines, const std::string& source, F f) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].find_first_not_of(" \t\r") == std::string_view::npos) continue;
        const LineError at{source, i + 1};
        const auto parsed = json::parse(lines[i]);
        if (!parsed || !parsed.value->is_object())
            return at("line", parsed ? "is not a JSON object" : parsed.error.message);
        if (auto error = f(*parsed.value, at)) return error;
    }
    return std::nullopt;
}

Result<std::vector<TrafficRequest>> read_mooncake_trace(const std::vector<std::string_view>& lines,
                                                        const std::string& source) {
    std::vector<TrafficRequest> out;
    std::uint64_t next_id = kFirstOwnId;
    const auto error =
        for_json_lines(lines, source, [&](const json::Value& e, const LineError& at) -> std::optional<FieldError> {
            const auto count = [&](const char* key) -> Result<std::uint64_t> {
                const json::Value* v = e.find(key);
                if (v == nullptr) return at(key, "missing");
                if (!v->is_number() || !v->as_u64()) return at(key, "is not a whole number");
                if (*v->as_u64() > kMaxTraceTokens) return at(key, "is more than any model's context");
                return *v->as_u64();
            };
            const auto ts = e.find("timestamp");
            if (ts == nullptr || !ts->is_number()) return at("timestamp", ts ? "is not a number" : "missing");
            if (!std::isfinite(ts->as_double()) || std::fabs(ts->as_double()) > 1e15)
                return at("timestamp", "is not a time in milliseconds (out of range)");
            const auto input = count("input_length");
            if (!input) return input.errors().front();
            const auto output = count("output_length");
            if (!output) return output.errors().front();
            if (*input == 0 || *output == 0) return std::nullopt;
            TrafficRequest r;
            r.arrival_s = ts->as_double() / 1000;  // milliseconds since the first request
            r.prompt_tokens = *input;
            r.output_tokens = *output;
            const json::Value* ids = e.find("hash_ids");
            if (ids == nullptr) {
                out.push_back(own_request(r.arrival_s, *input, *output, next_id));
                return std::nullopt;
            }
            if (!ids->is_array()) return at("hash_ids", "is not a list");
            const std::uint64_t blocks = (*input + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
            if (ids->items().size() != blocks)
                return at("hash_ids", std::to_string(ids->items().size()) + " ids for " + std::to_string(*input) +
                                          " tokens (one a " + std::to_string(kMooncakeBlockTokens) +
                                          "-token block: " + std::to_string(blocks) + ")");
            std::uint64_t left = *input;
            for (const json::Value& id : ids->items()) {
                if (!id.is_number() || !id.as_u64()) return at("hash_ids", "holds something not a whole number");
                const std::uint64_t n = std::min(left, kMooncakeBlockTokens);
                r.spans.push_back({*id.as_u64(), n});
                left -= n;
            }
            r.output_id = kFirstOwnId + (1ull << 62) + out.size();  // answers: ids no hash id of the file takes
            out.push_back(std::move(r));
            return std::nullopt;
        });
    if (error) return *error;
    return out;
}

// vLLM's custom dataset (vllm/benchmarks/datasets.py CustomDataset, `vllm bench serve --dataset-name custom`): JSON
// lines {"prompt": text, "output_tokens": its answer (optional: --custom-output-len, 256 by default)}, no times —
// sent all at once, as vllm bench serve sends them by default. Its prompts are text, and KVScope does not run the
// model's tokenizer: each is cut into pieces of 64 units (an ASCII character 1, any other character 4), a piece
// estimated at a token per 4 units, and pieces chained by their text's hash, so that prompts that begin alike share
// those pieces (a prefix the engines cache). Said in `warnings` as estimates.
constexpr std::uint64_t kCustomOutputTokens = 256;
constexpr std::uint64_t kPieceUnits = 64;

std::uint64_t bytes_hash(std::string_view bytes, std::uint64_t h) {
    for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;  // FNV-1a
    return h;
}

Result<std::vector<TrafficRequest>> read_custom_trace(const std::vector<std::string_view>& lines,
                                                      const std::string& source, std::vector<std::string>* warnings) {
    std::vector<TrafficRequest> out;
    std::uint64_t defaulted = 0;
    const auto error =
        for_json_lines(lines, source, [&](const json::Value& e, const LineError& at) -> std::optional<FieldError> {
            const json::Value* prompt = e.find("prompt");
            if (prompt == nullptr || !prompt->is_string())
                return at("prompt", prompt ? "is not text" : "missing (vLLM's custom dataset: {\"prompt\": …})");
            TrafficRequest r;
            r.output_tokens = kCustomOutputTokens;
            if (const json::Value* o = e.find("output_tokens"); o != nullptr) {
                if (!o->is_number() || !o->as_u64() || *o->as_u64() == 0)
                    return at("output_tokens", "is not a whole number above 0");
                if (*o->as_u64() > kMaxTraceTokens) return at("output_tokens", "is more than any model's context");
                r.output_tokens = *o->as_u64();
            } else {
                ++defaulted;
            }
            // The prompt in pieces, each a span whose id chains the text before it.
            const std::string_view text = prompt->as_string();
            std::uint64_t h = 0xcbf29ce484222325ull, units = 0;
            std::size_t start = 0;
            for (std::size_t k = 0; k <= text.size(); ++k) {
                const bool end = k == text.size();
                const auto c = end ? 0 : static_cast<unsigned char>(text[k]);
                if (!end && (c & 0xC0) == 0x80) continue;  // inside a character
                if (end || units >= kPieceUnits) {
                    if (units > 0) {
                        h = bytes_hash(text.substr(start, k - start), h);
                        r.spans.push_back({h | (1ull << 63), (units + 3) / 4});  // content ids: the top bit set
                        r.prompt_tokens += (units + 3) / 4;
                    }
                    start = k;
                    units = 0;
                }
                if (!end) units += c < 0x80 ? 1 : 4;
            }
            if (r.prompt_tokens == 0) return at("prompt", "is empty");
            r.output_id = kFirstOwnId + (1ull << 62) + out.size();
            out.push_back(std::move(r));
            return std::nullopt;
        });
    if (error) return *error;
    if (warnings) {
        warnings->push_back(
            "not exact: " + source +
            " holds prompts as text; their tokens are estimated (a token per 4 ASCII characters, one per other "
            "character), without the model's tokenizer or chat template, and prompts share what they begin with in "
            "pieces of about 16 tokens");
        if (defaulted > 0)
            warnings->push_back(std::to_string(defaulted) + " of its prompts " + (defaulted == 1 ? "gives" : "give") +
                                " no output_tokens: " + std::to_string(kCustomOutputTokens) +
                                " tokens each, vllm bench serve's --custom-output-len default");
    }
    return out;
}

}  // namespace

Result<std::vector<TrafficRequest>> read_trace(std::string_view text, const std::string& source,
                                               std::vector<std::string>* warnings) {
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
    std::vector<std::string_view> lines = lines_of(text);
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    if (lines.empty()) return FieldError{"--trace", source + ": is empty"};
    const std::string_view first = lines.front();
    const std::size_t first_char = first.find_first_not_of(" \t");
    Result<std::vector<TrafficRequest>> read =
        first.starts_with("TIMESTAMP,") || first.starts_with("\"TIMESTAMP\"")   ? read_csv_trace(lines, source, true)
        : first.starts_with("Timestamp,") || first.starts_with("\"Timestamp\"") ? read_csv_trace(lines, source, false)
        : first_char != std::string_view::npos && first[first_char] == '{' &&
                first.find("\"prompt\"") != std::string_view::npos
            ? read_custom_trace(lines, source, warnings)
        : first_char != std::string_view::npos && first[first_char] == '{'
            ? read_mooncake_trace(lines, source)
            : Result<std::vector<TrafficRequest>>(FieldError{
                  "--trace", source + ":1: not a trace KVScope reads (Azure's CSV, TIMESTAMP,ContextTokens,"
                                      "GeneratedTokens; BurstGPT's CSV, Timestamp,Model,Request tokens,…; "
                                      "Mooncake's JSON lines with input_length, output_length, hash_ids; or vLLM's "
                                      "custom JSON lines with prompt)"});
    if (!read) return read;
    std::vector<TrafficRequest> requests = std::move(read.value());
    if (requests.empty()) return FieldError{"--trace", source + ": holds no request to serve"};
    if (requests.size() > kMaxRequests)
        return FieldError{"--trace", source + ": holds " + format_count(requests.size()) + " requests; at most " +
                                         format_count(kMaxRequests) +
                                         " are simulated (each holds memory until the report): a part of it"};
    std::stable_sort(requests.begin(), requests.end(),
                     [](const TrafficRequest& a, const TrafficRequest& b) { return a.arrival_s < b.arrival_s; });
    const double t0 = requests.front().arrival_s;
    for (TrafficRequest& r : requests) r.arrival_s -= t0;
    return requests;
}

Result<TrafficSpec> fill_lengths(TrafficSpec spec) {
    if (spec.lengths_from.empty()) return spec;
    spec.lengths_warnings.clear();
    auto trace = read_trace_file(spec.lengths_from, &spec.lengths_warnings);
    if (!trace) {
        Errors named;
        // The file's own errors keep their place (file:line field); one of the file itself is --lengths-from's.
        for (const FieldError& e : trace.errors())
            named.push_back({"--lengths-from", e.field == "--trace" ? e.message : e.field + ": " + e.message});
        return named;
    }
    spec.lengths.clear();
    for (const TrafficRequest& r : *trace)
        if (r.prompt_tokens > 0 && r.output_tokens > 0) spec.lengths.push_back({r.prompt_tokens, r.output_tokens});
    if (spec.lengths.empty())
        return FieldError{"--lengths-from", spec.lengths_from + ": no request with both a prompt and an answer"};
    return spec;
}

Result<std::vector<TrafficRequest>> read_trace_file(const std::string& path, std::vector<std::string>* warnings) {
    auto text = read_text_file(path, 4ull << 30);
    if (!text) {
        FieldError e = text.errors().front();
        e.field = "--trace";
        return Errors{e};
    }
    return read_trace(*text, path, warnings);
}

}  // namespace kvscope
