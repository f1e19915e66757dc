#include "kvscope/ui/gpu_memory_bar.h"

#include <QPainter>

#include <algorithm>

namespace kvscope::ui {

namespace {
constexpr int kBarHeight = 26;
constexpr int kGap = 8;
constexpr int kLabelWidth = 56;
constexpr int kMaxBars = 8;
}  // namespace

QBrush GpuMemoryBar::overflowBrush() { return {QColor(0xd6, 0x30, 0x31), Qt::BDiagPattern}; }

GpuMemoryBar::GpuMemoryBar(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setAccessibleName(tr("Memory per GPU"));
}

void GpuMemoryBar::setData(QList<Segment> segments, std::uint64_t memory, std::uint64_t overflow, int gpus,
                           UnitSystem units) {
    segments_ = std::move(segments);
    memory_ = memory;
    overflow_ = overflow;
    gpus_ = std::max(gpus, 1);
    units_ = units;
    updateGeometry();
    update();
}

int GpuMemoryBar::shownBars() const { return std::min(gpus_, kMaxBars); }

QSize GpuMemoryBar::sizeHint() const {
    // Two entries to a row; an entry with its own longer text takes a whole row (as paintEvent places them).
    int rows = 0, column = 0;
    const auto place = [&](bool whole_row) {
        if (whole_row && column == 1) ++rows, column = 0;
        if (whole_row || column == 1)
            ++rows, column = 0;
        else
            column = 1;
    };
    for (const Segment& s : segments_) place(!s.legend.isEmpty());
    if (overflow_) place(false);
    const int legend_rows = rows + column;
    const int h = shownBars() * (kBarHeight + kGap) + (gpus_ > kMaxBars ? fontMetrics().height() : 0) +
                  legend_rows * (fontMetrics().height() + 4) + 8;
    return {480, h};
}

QSize GpuMemoryBar::minimumSizeHint() const { return {300, sizeHint().height()}; }

void GpuMemoryBar::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    if (memory_ == 0) return;
    // Room on the right for an overflow stub.
    const double width = static_cast<double>(this->width() - kLabelWidth - 4) * (overflow_ ? 0.85 : 1.0);
    const double per_byte = width / static_cast<double>(memory_);
    int y = 0;
    for (int g = 0; g < shownBars(); ++g, y += kBarHeight + kGap) {
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRect(0, y, kLabelWidth - 6, kBarHeight), Qt::AlignVCenter | Qt::AlignRight,
                   bar_label_.isEmpty() ? tr("GPU %1").arg(g + 1) : bar_label_);
        double x = kLabelWidth;
        for (const Segment& s : segments_) {
            const double w = static_cast<double>(s.bytes) * per_byte;
            const QRectF r(x, y, w, kBarHeight);
            p.fillRect(r, s.color);
            // Label inside when it fits.
            const QString text = QString::fromStdString(format_bytes(s.bytes, units_));
            if (p.fontMetrics().horizontalAdvance(text) + 8 < w) {
                p.setPen(s.color.lightnessF() > 0.6 ? Qt::black : Qt::white);
                p.drawText(r, Qt::AlignCenter, text);
            }
            x += w;
        }
        if (overflow_) {
            const QRectF r(kLabelWidth + width, y, std::min(static_cast<double>(overflow_) * per_byte, width * 0.17),
                           kBarHeight);
            p.fillRect(r, overflowBrush());
        }
        p.setPen(QPen(pal.color(QPalette::Text), 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(kLabelWidth, y, width, kBarHeight));
    }
    if (gpus_ > kMaxBars) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(QRect(kLabelWidth, y, this->width(), fontMetrics().height()), Qt::AlignLeft,
                   tr("… %1 more GPUs, the same").arg(gpus_ - kMaxBars));
        y += fontMetrics().height();
    }
    // Legend: a swatch and "label size" per segment, two to a row.
    const int col_w = (this->width() - kLabelWidth) / 2;
    const int line_h = fontMetrics().height() + 4;
    QList<Segment> legend = segments_;
    if (overflow_) legend.append({tr("does not fit"), overflow_, overflowBrush().color()});
    int row = 0, column = 0;  // column 0 or 1; a wide entry starts a row of its own
    for (qsizetype i = 0; i < legend.size(); ++i) {
        const Segment& s = legend.at(i);
        const bool whole_row = !s.legend.isEmpty();
        if (whole_row && column == 1) ++row, column = 0;
        const int lx = kLabelWidth + column * col_w, ly = y + row * line_h + 2;
        const int text_w = (whole_row ? 2 * col_w : col_w) - 20;
        const QRect swatch(lx, ly + 3, 12, 12);
        const bool hatched = overflow_ && i == legend.size() - 1;
        p.fillRect(swatch, hatched ? overflowBrush() : QBrush(s.color));
        if (hatched) {
            p.setPen(QPen(s.color, 1));
            p.drawRect(swatch);
        }
        p.setPen(pal.color(QPalette::Text));
        const QString text =
            s.legend.isEmpty() ? s.label + " " + QString::fromStdString(format_bytes(s.bytes, units_)) : s.legend;
        p.drawText(QRect(lx + 18, ly, text_w, line_h), Qt::AlignLeft | Qt::AlignVCenter,
                   p.fontMetrics().elidedText(text, Qt::ElideRight, text_w));
        if (whole_row || column == 1)
            ++row, column = 0;
        else
            column = 1;
    }
}

}  // namespace kvscope::ui
