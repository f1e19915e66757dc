#pragma once
// Learn › Real traffic: why sizing for every sequence at the full context overstates the cache requests use — the
// scenario's sequences at the length a request has, paged in blocks, and with a shared system prompt counted once —
// each step's bytes from the calculator (traffic_lesson), with a bar against the worst case.

#include <QWidget>

class QLabel;
class QTableWidget;

namespace kvscope::ui {

class BigSpinBox;
class ScenarioModel;

class TrafficLessonView : public QWidget {
    Q_OBJECT
public:
    explicit TrafficLessonView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] BigSpinBox* promptField() const { return prompt_; }
    [[nodiscard]] BigSpinBox* outputField() const { return output_; }
    [[nodiscard]] BigSpinBox* sharedPrefixField() const { return shared_; }
    [[nodiscard]] QTableWidget* table() const { return table_; }
    [[nodiscard]] QLabel* summary() const { return summary_; }

    enum Column { Step, Bytes, Bar, ColumnCount };
    static constexpr int kFractionRole = Qt::UserRole + 1;

private:
    void refresh();

    ScenarioModel* model_;
    BigSpinBox *prompt_, *output_, *shared_;
    QTableWidget* table_;
    QLabel* summary_;
};

}  // namespace kvscope::ui
