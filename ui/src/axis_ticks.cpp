#include "kvscope/ui/axis_ticks.h"

#include <array>
#include <cmath>

namespace kvscope::ui {

QString axis_label_format(AxisDigits kind, int digits) {
    return QStringLiteral("%.%1%2").arg(digits).arg(kind == AxisDigits::fixed ? 'f' : 'g');
}

namespace {

// Powers of two as tick positions on a log2 axis, every `stride` exponents.
std::vector<double> log2_positions(double lo, double hi, int max_ticks) {
    std::vector<double> out;
    if (!(hi > lo)) return out;
    const double first = std::ceil(lo), last = std::floor(hi);
    int stride = 1;
    while ((last - first) / stride + 1 > max_ticks) stride = stride < 2 ? 2 : stride < 5 ? 5 : stride * 2;
    // Align to the stride so the labels land on 1, 1k, 1M … where they can.
    const double start = std::ceil(first / stride) * stride;
    for (int i = 0; start + i * stride <= last; ++i) out.push_back(start + i * stride);
    return out;
}

// Multiples of a step chosen from `steps` × base^k so that at most `max_ticks` fit.
std::vector<double> linear_positions(double lo, double hi, int max_ticks, double base,
                                     std::array<double, 3> mantissas) {
    std::vector<double> out;
    if (!(hi > lo)) return out;
    const double span = hi - lo;
    double step = 0;
    for (double scale = 1; step == 0; scale *= base) {
        for (double m : mantissas) {
            if (span / (m * scale) <= max_ticks) {
                step = m * scale;
                break;
            }
        }
        if (scale > 1e30) return out;
    }
    const double start = std::ceil(lo / step) * step;
    for (int i = 0; start + i * step <= hi + step * 1e-9; ++i) out.push_back(start + i * step);
    return out;
}

QString trimmed_number(double v) {
    // Up to three significant digits, no trailing zeros: 1, 1.5, 48, 512, 0.25.
    return QString::number(v, 'g', v >= 100 ? 4 : 3);
}

}  // namespace

namespace {

double unit_base(UnitSystem units) { return units == UnitSystem::binary ? 1024.0 : 1000.0; }

// The unit (0 = B, 1 = KiB/kB …) in which `bytes` reads between 1 and the base.
int unit_of(double bytes, UnitSystem units) {
    int i = 0;
    for (double b = std::abs(bytes); b >= unit_base(units) && i < 6; b /= unit_base(units)) ++i;
    return i;
}

QString bytes_in_unit(double bytes, UnitSystem units, int unit) {
    static const char* binary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    static const char* decimal[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    return trimmed_number(bytes / std::pow(unit_base(units), unit)) + " " +
           (units == UnitSystem::binary ? binary[unit] : decimal[unit]);
}

}  // namespace

QString compact_bytes(double bytes, UnitSystem units) { return bytes_in_unit(bytes, units, unit_of(bytes, units)); }

std::vector<Tick> byte_ticks(double lo, double hi, bool log2_axis, UnitSystem units, int max_ticks) {
    std::vector<Tick> ticks;
    if (log2_axis && units == UnitSystem::binary) {
        for (double e : log2_positions(lo, hi, max_ticks)) ticks.push_back({e, compact_bytes(std::exp2(e), units)});
    } else if (log2_axis) {
        // Powers of ten, plus 2× and 5× when the range spans few decades.
        const double lo10 = lo * std::log10(2.0), hi10 = hi * std::log10(2.0);
        const bool dense = hi10 - lo10 < 3;
        for (auto k = static_cast<int>(std::floor(lo10)); k <= static_cast<int>(std::ceil(hi10)); ++k) {
            for (double m : {1.0, 2.0, 5.0}) {
                if (m != 1.0 && !dense) continue;
                const double e = std::log2(m * std::pow(10.0, k));
                if (e >= lo && e <= hi) ticks.push_back({e, compact_bytes(m * std::pow(10.0, k), units)});
            }
        }
    } else {
        // One unit along a linear axis, the largest tick's: 0.5 TiB, 0.75 TiB, 1 TiB — not 512 GiB among TiB.
        const auto positions = units == UnitSystem::binary ? linear_positions(lo, hi, max_ticks, 2, {1, 1, 1})
                                                           : linear_positions(lo, hi, max_ticks, 10, {1, 2, 5});
        const int unit = positions.empty() ? 0 : unit_of(positions.back(), units);
        for (double v : positions) ticks.push_back({v, bytes_in_unit(v, units, unit)});
    }
    return ticks;
}

std::vector<Tick> token_ticks(double lo, double hi, bool log2_axis, int max_ticks) {
    std::vector<Tick> ticks;
    const auto positions =
        log2_axis ? log2_positions(lo, hi, max_ticks) : linear_positions(lo, hi, max_ticks, 2, {1, 1, 1});
    for (double v : positions) {
        const double tokens = log2_axis ? std::exp2(v) : v;
        ticks.push_back({v, QString::fromStdString(format_tokens(static_cast<std::uint64_t>(std::llround(tokens))))});
    }
    return ticks;
}

}  // namespace kvscope::ui
