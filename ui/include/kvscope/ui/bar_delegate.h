#pragma once
// Draws a horizontal bar for a fraction (0 … 1) served under a model role.

#include <QStyledItemDelegate>

namespace kvscope::ui {

class BarDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    BarDelegate(int fraction_role, QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

private:
    int role_;
};

}  // namespace kvscope::ui
