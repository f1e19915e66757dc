#pragma once
// Exact byte arithmetic: 64-bit unsigned integers whose overflow is detected,
// never wrapped. A Checked value remembers that it overflowed; the report
// functions turn that into an error naming the input responsible.

#include <cstdint>
#include <limits>

namespace kvscope {

class Checked {
public:
    constexpr Checked() = default;
    constexpr explicit Checked(std::uint64_t v) : value_(v) {}
    static constexpr Checked overflowed() {
        Checked c;
        c.overflow_ = true;
        return c;
    }

    [[nodiscard]] constexpr bool overflow() const { return overflow_; }
    [[nodiscard]] constexpr std::uint64_t value() const { return value_; }
    // The value, or the largest a byte count can be when it overflowed: for figures that saturate rather than fail.
    [[nodiscard]] constexpr std::uint64_t saturated() const {
        return overflow_ ? std::numeric_limits<std::uint64_t>::max() : value_;
    }

    friend constexpr Checked operator*(Checked a, Checked b) {
        if (a.overflow_ || b.overflow_) return overflowed();
        std::uint64_t r = 0;
        if (__builtin_mul_overflow(a.value_, b.value_, &r)) return overflowed();
        return Checked(r);
    }
    friend constexpr Checked operator+(Checked a, Checked b) {
        if (a.overflow_ || b.overflow_) return overflowed();
        std::uint64_t r = 0;
        if (__builtin_add_overflow(a.value_, b.value_, &r)) return overflowed();
        return Checked(r);
    }
    friend constexpr Checked operator*(Checked a, std::uint64_t b) { return a * Checked(b); }
    friend constexpr Checked operator+(Checked a, std::uint64_t b) { return a + Checked(b); }
    Checked& operator+=(Checked o) { return *this = *this + o; }
    Checked& operator*=(Checked o) { return *this = *this * o; }

private:
    std::uint64_t value_ = 0;
    bool overflow_ = false;
};

constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// Rounds a up to a multiple of b (b >= 1); overflow-aware.
constexpr Checked round_up(std::uint64_t a, std::uint64_t b) { return Checked(ceil_div(a, b)) * b; }

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kKiB = 1ull << 10;
constexpr std::uint64_t kGB = 1000000000ull;

}  // namespace kvscope
