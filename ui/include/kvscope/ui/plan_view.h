#pragma once
// "How many GPUs do I need?": the planner's layouts of the deployment's GPU, smallest first, each
// with its fit and decode speed; the layout in use is marked, and any row can be applied.

#include <QWidget>

class QLabel;
class QPushButton;
class QTableWidget;

namespace kvscope::ui {

class ScenarioModel;

class PlanView : public QWidget {
    Q_OBJECT
public:
    explicit PlanView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] QTableWidget* table() const { return table_; }
    // What the table is of, its scope, and how many layouts it leaves out.
    [[nodiscard]] QLabel* caption() const { return caption_; }
    [[nodiscard]] QPushButton* applyButton() const { return apply_; }
    // The plan's notes and warnings beyond the caption's, as kvscope-cli plan prints them.
    [[nodiscard]] QLabel* notesLabel() const { return notes_; }

    enum Column { Gpus, Layout, Fits, Headroom, MaxSequences, MaxContext, PerSequence, InAll, ColumnCount };

signals:
    // A message for the status line, after a layout was applied.
    void notice(const QString& text);

private:
    void refresh();
    // Sets TP and PP to the selected row's (one undo step).
    void applySelected();

    ScenarioModel* model_;
    QLabel* caption_;
    QTableWidget* table_;
    QLabel* notes_;
    QPushButton* apply_;
};

}  // namespace kvscope::ui
