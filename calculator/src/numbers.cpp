#include "kvscope/calculator/numbers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace kvscope {

std::string number_text(double value, Notation notation, int precision) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    // Fixed notation of the largest doubles needs 309 digits before the point.
    char buf[400];
    char* const end = buf + sizeof buf;
    std::to_chars_result r{};
    switch (notation) {
        case Notation::shortest:
            r = std::to_chars(buf, end, value);
            break;
        case Notation::fixed:
            r = std::to_chars(buf, end, value, std::chars_format::fixed, precision);
            break;
        case Notation::general:
            r = std::to_chars(buf, end, value, std::chars_format::general, precision);
            break;
        case Notation::scientific:
            r = std::to_chars(buf, end, value, std::chars_format::scientific, precision);
            break;
    }
    if (r.ec != std::errc()) {  // only a fixed precision past the buffer: say it in full precision instead
        r = std::to_chars(buf, end, value, std::chars_format::scientific, 17);
    }
    return std::string(buf, r.ptr);
}

std::optional<double> number_from_text(std::string_view text) {
    double v = 0;
    const char* const end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) return std::nullopt;
    return v;
}

namespace {
template <class T>
std::optional<T> integer_from_text(std::string_view text) {
    T v = 0;
    const char* const end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return v;
}
}  // namespace

std::optional<std::uint64_t> u64_from_text(std::string_view text) { return integer_from_text<std::uint64_t>(text); }
std::optional<std::int64_t> i64_from_text(std::string_view text) { return integer_from_text<std::int64_t>(text); }

TypedDecimal read_typed_decimal(std::string_view raw) {
    // Runs of digits and the one-character separators between them (spaces of every width,
    // '_' and '\'' stand for one group separator ' ').
    std::vector<std::string> runs(1);
    std::vector<char> seps;
    std::string text(raw);
    if (!text.empty() && (text[0] == '.' || text[0] == ',')) text.insert(text.begin(), '0');  // ".85"
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        char sep = 0;
        std::size_t width = 1;
        if (c >= '0' && c <= '9') {
            runs.back() += static_cast<char>(c);
            ++i;
            continue;
        }
        if (c == '.' || c == ',') {
            sep = static_cast<char>(c);
        } else if (c == ' ' || c == '_' || c == '\'') {
            sep = ' ';
        } else if (text.compare(i, 2, "\xC2\xA0") == 0) {  // no-break space (de, fr grouping)
            sep = ' ', width = 2;
        } else if (text.compare(i, 3, "\xE2\x80\xAF") == 0 || text.compare(i, 3, "\xE2\x80\x89") == 0) {
            sep = ' ', width = 3;  // narrow no-break space (fr), thin space
        } else {
            // The whole character, never the first byte of a UTF-8 sequence ("１", a full-width digit, is 3 bytes).
            const std::size_t bytes = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            return {{}, "'" + text.substr(i, bytes) + "' is not a digit"};
        }
        if (runs.back().empty()) return {{}, "a digit is needed before each separator"};
        seps.push_back(sep);
        runs.emplace_back();
        i += width;
    }
    if (runs.back().empty()) return {{}, raw.empty() ? "a number is needed" : "a digit is needed at the end"};

    // Which separator is the decimal one: the later of '.' and ',' when both occur; a lone '.';
    // a lone ',' unless exactly three digits follow a non-zero whole part and no other group
    // separator occurs (131,072 — the way this program writes counts; but 1 000,500 is 1000.5);
    // none when one occurs more than once (1.234.567).
    std::size_t dots = 0, commas = 0, last_dot = seps.size(), last_comma = seps.size();
    for (std::size_t i = 0; i < seps.size(); ++i) {
        if (seps[i] == '.') ++dots, last_dot = i;
        if (seps[i] == ',') ++commas, last_comma = i;
    }
    std::size_t decimal = seps.size();  // index into seps, or none
    if (dots && commas) {
        decimal = std::max(last_dot, last_comma);
        if ((seps[decimal] == '.' ? dots : commas) > 1) return {{}, "there is more than one decimal separator"};
    } else if (dots == 1) {
        decimal = last_dot;
    } else if (commas == 1) {
        const bool spaced = std::find(seps.begin(), seps.end(), ' ') != seps.end();
        const bool grouped = !spaced && runs[last_comma + 1].size() == 3 && runs[last_comma] != "0";
        if (!grouped) decimal = last_comma;
    }
    if (decimal != seps.size() && decimal + 1 != seps.size()) return {{}, "a separator follows the decimal one"};

    const std::size_t whole_runs = decimal == seps.size() ? runs.size() : decimal + 1;
    if (whole_runs > 1) {  // grouped: 1-3 digits, then groups of exactly three
        bool ok = runs[0].size() <= 3;
        for (std::size_t i = 1; i < whole_runs; ++i) ok = ok && runs[i].size() == 3;
        for (std::size_t i = 0; i + 1 < whole_runs; ++i) ok = ok && seps[i] == seps[0];
        if (!ok)
            return {{},
                    "digit groups are three digits (131,072 or 131.072) and a decimal has one point or comma "
                    "(0.85 or 0,85)"};
    }
    TypedDecimal out;
    for (std::size_t i = 0; i < whole_runs; ++i) out.plain += runs[i];
    if (decimal != seps.size()) out.plain += "." + runs.back();
    return out;
}

}  // namespace kvscope
