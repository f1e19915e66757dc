#pragma once
// Where the chart's axes put their labels, and what the labels say: bytes in
// KiB … TiB (or kB … TB), tokens as 1k … 1M. On log axes the values passed in and
// returned are log2 of the quantity, because the chart plots log2 on a linear axis
// so that every label can be written in readable units.

#include <QString>

#include <vector>

#include "kvscope/calculator/units.h"

namespace kvscope::ui {

struct Tick {
    double value = 0;  // position on the axis (log2 of the quantity on log axes)
    QString label;
};

// "0 B", "512 MiB", "1.5 GiB", "48 GiB"; decimal: "80 GB".
QString compact_bytes(double bytes, UnitSystem units);

// How a Qt Charts value axis writes its labels: `digits` after the point (AxisDigits::fixed) or
// significant digits (AxisDigits::significant). Qt Charts formats them with QString::asprintf,
// which always writes a decimal point, like every number on screen here (QChart::localizeNumbers
// stays off); this is the one place that spells those formats.
enum class AxisDigits { fixed, significant };
QString axis_label_format(AxisDigits kind, int digits);

// Ticks inside [lo, hi], at most about `max_ticks`, at round values of the unit system.
std::vector<Tick> byte_ticks(double lo, double hi, bool log2_axis, UnitSystem units, int max_ticks = 8);
std::vector<Tick> token_ticks(double lo, double hi, bool log2_axis, int max_ticks = 10);

}  // namespace kvscope::ui
