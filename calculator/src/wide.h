#pragma once
// Inside the calculator: the 128-bit integer the engine rules add and subtract byte counts in (a GPU's memory less
// weights and reserves may go below zero or past 2^64 on the way), and its clamps back to the reported types.
// Not a public header.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kvscope {

__extension__ using i128 = __int128;

inline std::uint64_t clamp_u64(i128 v) {
    return static_cast<std::uint64_t>(std::clamp<i128>(v, 0, std::numeric_limits<std::uint64_t>::max()));
}

inline std::int64_t clamp_i64(i128 v) {
    constexpr i128 lo = std::numeric_limits<std::int64_t>::min();
    constexpr i128 hi = std::numeric_limits<std::int64_t>::max();
    return static_cast<std::int64_t>(std::clamp(v, lo, hi));
}

// `bytes` x `fraction`, the fraction taken to millionths (an engine's memory fraction of a GPU).
inline i128 scale(i128 bytes, double fraction) {
    const auto ppm = static_cast<i128>(std::llround(fraction * 1e6));
    return bytes * ppm / 1'000'000;
}

}  // namespace kvscope
