#pragma once
// Said at the top of every tab that shows the calculator's results: while the inputs need attention the figures
// below are the last valid ones — maybe of another model — and the note says so, with whose they are. Hidden while
// the results are of the inputs as they stand.

#include <QLabel>

namespace kvscope::ui {

class ScenarioModel;

class StaleNote : public QLabel {
    Q_OBJECT
public:
    explicit StaleNote(ScenarioModel* model, QWidget* parent = nullptr);

private:
    void refresh();
    ScenarioModel* model_;
};

}  // namespace kvscope::ui
