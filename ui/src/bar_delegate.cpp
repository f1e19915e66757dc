#include "kvscope/ui/bar_delegate.h"

#include <QPainter>

#include <algorithm>

namespace kvscope::ui {

BarDelegate::BarDelegate(int fraction_role, QObject* parent) : QStyledItemDelegate(parent), role_(fraction_role) {}

void BarDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QStyledItemDelegate::paint(painter, option, index);  // selection background
    const double fraction = std::clamp(index.data(role_).toDouble(), 0.0, 1.0);
    const QRectF area = QRectF(option.rect).adjusted(4, 5, -4, -5);
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setPen(Qt::NoPen);
    QColor track = option.palette.color(QPalette::Text);
    track.setAlpha(25);
    painter->setBrush(track);
    painter->drawRoundedRect(area, 3, 3);
    // Even a tiny share gets a visible sliver, so MQA never looks like nothing.
    QRectF bar = area;
    bar.setWidth(std::max(2.0, area.width() * fraction));
    painter->setBrush(option.palette.color(QPalette::Highlight));
    painter->drawRoundedRect(bar, 3, 3);
    painter->restore();
}

QSize BarDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
    return QStyledItemDelegate::sizeHint(option, index).expandedTo(QSize(160, 24));
}

}  // namespace kvscope::ui
