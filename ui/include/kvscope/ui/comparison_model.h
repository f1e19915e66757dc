#pragma once
// The MHA / GQA / MQA (/ MLA) comparison as a table: layout, KV heads, cache
// bytes, % of MHA, and a bar column (drawn by BarDelegate).

#include <QAbstractTableModel>

#include "kvscope/ui/scenario_model.h"

namespace kvscope::ui {

class ComparisonModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Layout, KvHeads, Bytes, PerToken, PercentOfMha, Bar, ColumnCount };
    // The bar's fraction (0 … 1) is served under this role in the Bar column.
    static constexpr int FractionRole = Qt::UserRole + 1;

    explicit ComparisonModel(ScenarioModel* model, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // Tab-separated rows with a header, for the clipboard and reports.
    [[nodiscard]] QString toTsv() const;

private:
    void refresh();

    ScenarioModel* model_;
    std::vector<Variant> rows_;
};

}  // namespace kvscope::ui
