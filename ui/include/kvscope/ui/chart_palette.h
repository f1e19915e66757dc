#pragma once
// Charts follow the system palette (dark mode included) rather than a fixed Qt Charts theme.

#include <QPalette>

class QChart;

namespace kvscope::ui {

// Background, legend, and every axis's labels, title, grid and line in the palette's colours.
void follow_palette(QChart* chart, const QPalette& palette);

}  // namespace kvscope::ui
