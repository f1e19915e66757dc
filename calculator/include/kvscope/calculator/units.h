#pragma once
// Readable numbers, always labelled: GiB (2^30) and GB (10^9) are different units.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kvscope/calculator/result.h"

namespace kvscope {

enum class UnitSystem { binary, decimal };  // KiB/MiB/GiB or kB/MB/GB

// Three significant digits: "4.00 GiB", "128 MiB", "512 B", "85.9 GB".
std::string format_bytes(std::uint64_t bytes, UnitSystem units = UnitSystem::binary);
// Both unit systems, the preferred first: "4.00 GiB (4.29 GB)".
std::string format_bytes_both(std::uint64_t bytes, UnitSystem primary = UnitSystem::binary);
// Signed variant for headroom: "-3.20 GiB".
std::string format_signed_bytes(std::int64_t bytes, UnitSystem units = UnitSystem::binary);
// An engine's memory fraction with two decimals, three where it has them: "0.90", SGLang's "0.835".
std::string fraction_text(double fraction);
// A count typed as German thousands with a lone point ("131.072", "128.000"): the message saying how to write the
// number meant, else none. Counts (parse_count, parse_token_count and the quiz) refuse such text.
std::optional<std::string> lone_point_thousands(std::string_view text);
// A ratio with the digits that mean something: "1.37×", "12.4×", "351×".
std::string ratio_text(double ratio);
// 1234567 -> "1,234,567".
std::string format_count(std::uint64_t n);
// (3, "layer", "layers") -> "3 layers"; (1, …) -> "1 layer".
std::string format_count_of(std::uint64_t n, const std::string& one, const std::string& many);
// Token counts the way people say them: 8192 -> "8k", 131072 -> "128k", 1048576 -> "1M", 1000 -> "1000".
std::string format_tokens(std::uint64_t n);
// A percentage with one decimal, rounded one way wherever it is shown (the window, kvscope-cli, the report): the
// nearest, and a tie to the even digit, as std::to_chars rounds the double's exact value (6.25 -> "6.2%").
std::string format_percent(double percent);
// A bandwidth in decimal units, as GPUs and memories are sold: "89.6 GB/s", "3.35 TB/s".
std::string format_bandwidth(std::uint64_t bytes_per_s);
// 1.234e12 -> "1.23 T" (FLOPs and other large non-byte figures).
std::string format_si(double value);
// Work in floating-point operations: "15.1 GFLOP", "2.41 TFLOP".
std::string format_flops(double flops);

// Decimals to show a time in milliseconds with: 2, or 4 under 0.1 ms, so a small model's step is never "0.00 ms".
inline int ms_decimals(double ms) { return ms < 0.1 ? 4 : 2; }

// Token counts: "8192", "8k" (= 8192), "128K", "1M" (= 1048576), "1.5k" (= 1536).
// `field` names the input in the error ("context_tokens", "--context").
Result<std::uint64_t> parse_token_count(std::string_view text, const std::string& field);
// A plain positive integer with an optional k/M suffix, same rules as tokens.
Result<std::uint64_t> parse_count(std::string_view text, const std::string& field);
// Sizes: "80GiB", "80 GB", "24g" (= GiB), "85899345920" (bytes); "23.58GiB", as engines print sizes, is the
// nearest whole byte (25,318,832,210). A plain count of bytes must be whole.
Result<std::uint64_t> parse_bytes(std::string_view text, const std::string& field);
// A GPU's memory: a size as parse_bytes reads it, refused under 1 MiB ("80" is a unit left off, not 80 bytes).
Result<std::uint64_t> parse_gpu_memory(std::string_view text, const std::string& field);
// A memory bandwidth in bytes/s: a size as above, "/s" after it or not ("3.35 TB/s", as `gpus` and the window
// show it, or "3350GB"); below 1 MB/s it is refused as a size missing its unit.
Result<std::uint64_t> parse_bandwidth(std::string_view text, const std::string& field);

// The size suffixes people type, lower case, longest first ("gib" = 2^30, "gb" = 10^9, "g" = 2^30,
// "b" = 1): the one list behind parse_bytes and the Learn tab's answers.
struct SizeSuffix {
    const char* suffix;
    std::uint64_t multiplier;
};
std::span<const SizeSuffix> size_suffixes();

}  // namespace kvscope
