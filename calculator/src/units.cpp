#include "kvscope/calculator/units.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/numbers.h"

namespace kvscope {

namespace {

std::string three_digits(double v) { return number_text(v, Notation::fixed, v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2); }

std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return std::string(s.substr(b, e - b));
}

// Parses a number as people type it (numbers.h: 1.5, 1,5, 131,072, 131_072) followed by a suffix;
// the value times the suffix's multiplier must be a whole number, or, with `nearest`, is rounded to the
// nearest whole one (half up). Exact: decimal fractions are handled as integers.
Result<std::uint64_t> parse_scaled(const std::string& text, std::size_t number_end, std::uint64_t multiplier,
                                   const std::string& field, const std::string& what, bool nearest = false) {
    const std::string bad = "'" + text + "' is not " + what;
    const TypedDecimal typed = read_typed_decimal(trim(std::string_view(text).substr(0, number_end)));
    if (!typed.error.empty()) return FieldError{field, bad + ": " + typed.error};
    std::uint64_t whole = 0, frac = 0, frac_scale = 1;
    bool in_frac = false;
    for (const char c : typed.plain) {
        if (c == '.') {
            in_frac = true;
            continue;
        }
        const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
        if (in_frac) {
            if (frac_scale > 1'000'000'000'000ull) return FieldError{field, bad + " (too many decimals)"};
            frac = frac * 10 + d;
            frac_scale *= 10;
        } else {
            const Checked w = Checked(whole) * 10 + d;
            if (w.overflow()) return FieldError{field, "'" + text + "' is too large (more than 2^64)"};
            whole = w.value();
        }
    }
    const Checked scaled_whole = Checked(whole) * multiplier;
    // frac / frac_scale * multiplier must be an integer.
    __extension__ using u128 = unsigned __int128;
    const u128 frac_product = static_cast<u128>(frac) * multiplier;
    if (frac_product % frac_scale != 0 && !nearest) return FieldError{field, "'" + text + "' is not a whole number"};
    const u128 rounded = nearest ? (frac_product + frac_scale / 2) / frac_scale : frac_product / frac_scale;
    const Checked total = scaled_whole + static_cast<std::uint64_t>(rounded);
    if (total.overflow()) return FieldError{field, "'" + text + "' is too large (more than 2^64)"};
    return total.value();
}

// "1e15", "1.5e6": a whole number written with a power of ten, read exactly (digits times 10^n),
// or nullopt when `text` is not written that way. An answer that is not whole, or beyond 2^64, is an error.
std::optional<Result<std::uint64_t>> power_of_ten(const std::string& text, const std::string& field,
                                                  const std::string& what) {
    const auto e = text.find_first_of("eE");
    if (e == std::string::npos || e == 0 || e + 1 >= text.size()) return std::nullopt;
    const std::string mantissa = text.substr(0, e), exponent = text.substr(e + 1);
    if (!std::all_of(exponent.begin(), exponent.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    std::string digits;
    std::size_t decimals = 0;
    bool point = false;
    for (const char c : mantissa) {
        if (c == '.' && !point) {
            point = true;
        } else if (c >= '0' && c <= '9') {
            digits += c;
            decimals += point ? 1 : 0;
        } else {
            return std::nullopt;
        }
    }
    if (digits.empty() || exponent.size() > 3) return std::nullopt;
    std::size_t power = 0;
    for (const char c : exponent) power = power * 10 + static_cast<std::size_t>(c - '0');
    const FieldError too_big{field, "'" + text + "' is more than 2^64; " + what + " is needed"};
    if (power < decimals) {
        // 1.5e0: whole only when the dropped digits are zeros.
        const std::string dropped = digits.substr(digits.size() - (decimals - power));
        if (dropped.find_first_not_of('0') != std::string::npos)
            return Result<std::uint64_t>(
                FieldError{field, "'" + text + "' is not a whole number; " + what + " is needed"});
        digits.resize(digits.size() - (decimals - power));
    } else {
        digits.append(power - decimals, '0');
    }
    Checked value(0);
    for (const char c : digits) value = value * 10 + static_cast<std::uint64_t>(c - '0');
    if (value.overflow()) return Result<std::uint64_t>(too_big);
    return Result<std::uint64_t>(value.value());
}

}  // namespace

std::optional<std::string> lone_point_thousands(std::string_view raw) {
    // "131.072" or "128.000": one to three digits (not starting with 0), a point, three digits. A German writes
    // thousands so, an English reader a decimal; a lone point is a decimal point here (numbers.h), so a count typed
    // so is refused with how to write either number, never read as 131.072 or 128 in silence.
    const std::string t = trim(raw);
    const auto point = t.find('.');
    const auto digits = [&t](std::size_t from, std::size_t to) {
        return from < to &&
               std::all_of(t.begin() + static_cast<std::ptrdiff_t>(from), t.begin() + static_cast<std::ptrdiff_t>(to),
                           [](char c) { return c >= '0' && c <= '9'; });
    };
    if (point == std::string::npos || point < 1 || point > 3 || t[0] == '0' || t.size() != point + 4 ||
        !digits(0, point) || !digits(point + 1, t.size()))
        return std::nullopt;
    const std::string whole = t.substr(0, point), thousands = whole + t.substr(point + 1);
    const std::string decimal = t.substr(point + 1) == "000" ? whole : std::string();
    return "'" + t + "' has a lone point, which is a decimal point here: for " + thousands + " write " + thousands +
           " or " + whole + "," + t.substr(point + 1) +
           (decimal.empty() ? "" : ", for " + decimal + " write " + decimal);
}

namespace {

Result<std::uint64_t> parse_with_kilo(std::string_view raw, const std::string& field, const std::string& what) {
    const std::string text = trim(raw);
    if (text.empty()) return FieldError{field, "a value is needed"};
    if (text[0] == '-') return FieldError{field, "'" + text + "' is negative; " + what + " is needed"};
    if (auto scientific = power_of_ten(text, field, what)) return *scientific;
    if (auto hint = lone_point_thousands(text)) return FieldError{field, *hint};
    std::size_t end = text.size();
    std::uint64_t mult = 1;
    const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(text.back())));
    if (last == 'k')
        mult = 1ull << 10, --end;
    else if (last == 'm')
        mult = 1ull << 20, --end;
    else if (last == 'g')
        mult = 1ull << 30, --end;
    return parse_scaled(text, end, mult, field, what);
}

}  // namespace

std::string format_bytes(std::uint64_t bytes, UnitSystem units) {
    static constexpr std::array<const char*, 7> kBinary{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    static constexpr std::array<const char*, 7> kDecimal{"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    const double base = units == UnitSystem::binary ? 1024.0 : 1000.0;
    const auto& names = units == UnitSystem::binary ? kBinary : kDecimal;
    if (bytes < static_cast<std::uint64_t>(base)) return std::to_string(bytes) + " B";
    double v = static_cast<double>(bytes);
    std::size_t u = 0;
    // Move up a unit when the value would print as the base (1023.7 MiB -> 1.00 GiB).
    while (u + 1 < names.size() && v >= base - 0.5) v /= base, ++u;
    return three_digits(v) + " " + names[u];
}

std::string format_bytes_both(std::uint64_t bytes, UnitSystem primary) {
    const UnitSystem other = primary == UnitSystem::binary ? UnitSystem::decimal : UnitSystem::binary;
    return format_bytes(bytes, primary) + " (" + format_bytes(bytes, other) + ")";
}

std::string format_signed_bytes(std::int64_t bytes, UnitSystem units) {
    if (bytes >= 0) return format_bytes(static_cast<std::uint64_t>(bytes), units);
    const std::uint64_t magnitude = static_cast<std::uint64_t>(-(bytes + 1)) + 1;
    return "-" + format_bytes(magnitude, units);
}

std::string format_count(std::uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string format_count_of(std::uint64_t n, const std::string& one, const std::string& many) {
    return format_count(n) + " " + (n == 1 ? one : many);
}

std::string format_percent(double percent) { return number_text(percent, Notation::fixed, 1) + "%"; }

std::string format_bandwidth(std::uint64_t bytes_per_s) {
    const double gb = static_cast<double>(bytes_per_s) / 1e9;
    return gb >= 1000 ? number_text(gb / 1e3, Notation::fixed, 2) + " TB/s"
                      : number_text(gb, Notation::fixed, 1) + " GB/s";
}

std::string format_tokens(std::uint64_t n) {
    // 8k, 128k, 1M — a short name for the counts people choose. k only below 1M (MiniMax-M1's 10,240,000 tokens are
    // not "10000k" beside Llama 4 Scout's "10M"), M beneath 100,000 of them; the digits otherwise (10^15 tokens is
    // 1,000,000,000,000,000, not 976562500000k).
    constexpr std::uint64_t kShort = 100000;
    if (n >= (1ull << 20) && n % (1ull << 20) == 0 && (n >> 20) < kShort) return std::to_string(n >> 20) + "M";
    if (n >= (1ull << 10) && n % (1ull << 10) == 0 && n < (1ull << 20)) return std::to_string(n >> 10) + "k";
    return format_count(n);
}

std::string format_si(double value) {
    static constexpr std::array<const char*, 9> kNames{"", " k", " M", " G", " T", " P", " E", " Z", " Y"};
    double v = value;
    std::size_t u = 0;
    while (u + 1 < kNames.size() && std::fabs(v) >= 999.5) v /= 1000.0, ++u;
    if (u + 1 == kNames.size() && std::fabs(v) >= 1000.0) {
        return number_text(value, Notation::general, 3);
    }
    return three_digits(v) + kNames[u];
}

Result<std::uint64_t> parse_token_count(std::string_view text, const std::string& field) {
    return parse_count(text, field);
}

Result<std::uint64_t> parse_count(std::string_view text, const std::string& field) {
    const std::string t = trim(text);
    if (!t.empty() && std::tolower(static_cast<unsigned char>(t.back())) == 'g')
        return FieldError{field, "'" + t + "': use a plain number or a k / M suffix (8k = 8192, 1M = 1048576)"};
    return parse_with_kilo(text, field, "a whole number (8, 8192, 8k, 1M)");
}

std::span<const SizeSuffix> size_suffixes() {
    static constexpr SizeSuffix kSuffixes[] = {
        {"kib", 1ull << 10},
        {"mib", 1ull << 20},
        {"gib", 1ull << 30},
        {"tib", 1ull << 40},
        {"pib", 1ull << 50},
        {"eib", 1ull << 60},
        {"kb", 1000ull},
        {"mb", 1000000ull},
        {"gb", kGB},
        {"tb", 1000ull * kGB},
        {"pb", 1000000ull * kGB},
        {"eb", 1000000000ull * kGB},
        {"k", 1ull << 10},
        {"m", 1ull << 20},
        {"g", 1ull << 30},
        {"t", 1ull << 40},
        {"p", 1ull << 50},
        {"e", 1ull << 60},
        {"b", 1},
    };
    return kSuffixes;
}

std::string format_flops(double flops) { return format_si(flops) + "FLOP"; }

Result<std::uint64_t> parse_bytes(std::string_view raw, const std::string& field) {
    std::string text = trim(raw);
    const std::string what = "a size (80GiB, 80GB, 24g, or bytes)";
    if (text.empty()) return FieldError{field, "a value is needed"};
    if (text[0] == '-') return FieldError{field, "'" + text + "' is negative; " + what + " is needed"};
    std::string lower;
    for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const SizeSuffix& u : size_suffixes()) {
        const std::string_view s = u.suffix;
        if (lower.size() > s.size() && lower.ends_with(s)) {
            std::string number = trim(std::string_view(text).substr(0, text.size() - s.size()));
            // A size in a unit is a rounded figure already (vLLM logs "23.58 GiB", nvidia-smi "81559MiB"): the
            // nearest whole byte. A count of bytes must be whole.
            auto parsed = parse_scaled(number, number.size(), u.multiplier, field, what, u.multiplier > 1);
            // The message quotes what was typed, unit and all ('16EiB', not '16Ei').
            const std::string quoted = "'" + number + "'";
            if (!parsed && parsed.errors().front().message.starts_with(quoted))
                return FieldError{field, "'" + text + "'" + parsed.errors().front().message.substr(quoted.size())};
            return parsed;
        }
    }
    return parse_scaled(text, text.size(), 1, field, what);
}

Result<std::uint64_t> parse_gpu_memory(std::string_view raw, const std::string& field) {
    auto bytes = parse_bytes(raw, field);
    if (bytes && *bytes < (1ull << 20))
        return FieldError{field, "'" + trim(raw) + "' is " + format_count(*bytes) +
                                     " bytes, less than any GPU's memory: give its unit (80GiB or 24GB)"};
    return bytes;
}

Result<std::uint64_t> parse_bandwidth(std::string_view raw, const std::string& field) {
    std::string text = trim(raw);
    if (text.size() > 2 && (text.ends_with("/s") || text.ends_with("/S"))) text = trim(text.substr(0, text.size() - 2));
    auto bytes = parse_bytes(text, field);
    if (!bytes) return bytes;
    if (*bytes < 1000000)
        return FieldError{field, "'" + trim(raw) + "' is " + format_count(*bytes) +
                                     " bytes/s, slower than any memory: give its unit (3350GB or 3.35TB/s)"};
    return bytes;
}

std::string ratio_text(double ratio) {
    const int digits = ratio < 10 ? 2 : ratio < 100 ? 1 : 0;
    return number_text(ratio, Notation::fixed, digits) + "×";
}

std::string fraction_text(double fraction) {
    // A fraction too small for three decimals is shown with its own digits, never as the 0.00 it is not.
    if (fraction > 0 && fraction < 0.0005) return number_text(fraction, Notation::general, 3);
    const std::string three = number_text(fraction, Notation::fixed, 3);
    return three.back() == '0' ? three.substr(0, three.size() - 1) : three;
}

}  // namespace kvscope
