#include "kvscope/ui/chart_palette.h"

#include <QAbstractAxis>
#include <QChart>
#include <QLegend>

namespace kvscope::ui {

void follow_palette(QChart* chart, const QPalette& p) {
    chart->setBackgroundBrush(p.color(QPalette::Base));
    chart->setBackgroundRoundness(0);
    chart->legend()->setLabelColor(p.color(QPalette::Text));
    QColor grid = p.color(QPalette::Text);
    grid.setAlpha(40);
    for (QAbstractAxis* axis : chart->axes()) {
        axis->setLabelsColor(p.color(QPalette::Text));
        axis->setTitleBrush(p.color(QPalette::Text));
        axis->setGridLineColor(grid);
        axis->setLinePenColor(p.color(QPalette::Mid));
    }
}

}  // namespace kvscope::ui
