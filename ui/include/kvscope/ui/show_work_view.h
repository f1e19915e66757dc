#pragma once
// Learn › Show your work: the current scenario's formula factor by factor, each factor
// coloured and linked to the input it comes from (hovering one frames that input), the
// product and its units. MLA and sliding-window models get their own forms.

#include <QWidget>

#include <optional>

#include "kvscope/calculator/derivation.h"

class QLabel;
class QTableWidget;

namespace kvscope::ui {

class ScenarioModel;

class ShowWorkView : public QWidget {
    Q_OBJECT
public:
    explicit ShowWorkView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] QLabel* formulaLabel() const { return formula_; }
    [[nodiscard]] QTableWidget* factorsTable() const { return table_; }
    [[nodiscard]] QLabel* productLabel() const { return product_; }
    [[nodiscard]] QLabel* stateLabel() const { return state_; }
    // Roles on the table's first column: the input field, and the factor as value / divisor.
    static constexpr int FieldRole = Qt::UserRole;
    static constexpr int ValueRole = Qt::UserRole + 1;
    static constexpr int DivisorRole = Qt::UserRole + 2;

signals:
    // The pointer is over a factor that comes from `field` ("" when it leaves one).
    void fieldHovered(kvscope::Field field);
    // A factor was clicked: take the user to its input.
    void fieldActivated(kvscope::Field field);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    // Leaving the page, or the page going out of view (another tab, another lesson, Ctrl+1): no factor is hovered
    // any more, and the frame it drew on the form goes.
    void leaveEvent(QEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    void refresh();

    ScenarioModel* model_;
    QLabel* form_;
    QLabel* formula_;
    QLabel* product_;
    QLabel* state_;
    QTableWidget* table_;
};

// The colour a factor from `field` is drawn in, the same in the formula and the table.
QColor factor_colour(Field field);

}  // namespace kvscope::ui
