#pragma once
// Learn › Prefill and decode: why a prompt is one fast parallel pass and every generated
// token is a memory-bound step, with this scenario's FLOPs and bytes for both.

#include <QWidget>

class QLabel;
class QTableWidget;

namespace kvscope::ui {

class ScenarioModel;

class PhasesView : public QWidget {
    Q_OBJECT
public:
    explicit PhasesView(ScenarioModel* model, QWidget* parent = nullptr);
    [[nodiscard]] QTableWidget* table() const { return table_; }
    enum Row { Tokens, Flops, FlopsWithoutCache, KvCache, Weights, Intensity, Rows };

private:
    void refresh();

    ScenarioModel* model_;
    QLabel* summary_;
    QTableWidget* table_;
};

}  // namespace kvscope::ui
