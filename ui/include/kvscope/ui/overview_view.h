#pragma once
// The answer at a glance: the KV cache in GiB and GB, per token, per sequence,
// per layer, the formula with this scenario's numbers put in, and the
// MHA / GQA / MQA comparison.

#include <QWidget>

#include "kvscope/calculator/units.h"

class QLabel;
class QTableView;

namespace kvscope::ui {

class ComparisonModel;
class ScenarioModel;

class OverviewView : public QWidget {
    Q_OBJECT
public:
    explicit OverviewView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] QLabel* totalLabel() const { return total_; }
    [[nodiscard]] QLabel* formulaLabel() const { return formula_; }
    [[nodiscard]] QLabel* warningsLabel() const { return warnings_; }
    [[nodiscard]] QLabel* staleLabel() const { return stale_; }
    [[nodiscard]] QLabel* headlineLabel() const { return headline_; }
    [[nodiscard]] QTableView* comparisonTable() const { return table_; }
    [[nodiscard]] ComparisonModel* comparison() const { return comparison_; }
    // "Per token", "Per sequence", … with their values, as shown.
    [[nodiscard]] QString figuresText() const;

private:
    void refresh();

    ScenarioModel* model_;
    QLabel* headline_;
    QLabel* total_;
    QLabel* figures_;
    QLabel* formula_;
    QLabel* warnings_;
    QLabel* stale_;  // a StaleNote: the inputs need attention, whose the last valid results below are
    QTableView* table_;
    ComparisonModel* comparison_;
};

// "4.00 GiB (4.29 GB)": the preferred unit first, the other in brackets (format_bytes_both).
QString both_units(std::uint64_t bytes, UnitSystem primary);

}  // namespace kvscope::ui
