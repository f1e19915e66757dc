#pragma once
// Learn › What if: one-click changes to the current scenario (halve the KV heads, MQA, an fp8
// cache, twice the context, tensor parallel 2), each with the new size and the change; Apply
// makes it the scenario (one undo step) and Revert puts the scenario back.

#include <QWidget>

#include <vector>

#include "kvscope/calculator/learn.h"

class QGridLayout;
class QLabel;
class QPushButton;

namespace kvscope::ui {

class ScenarioModel;

class WhatIfView : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] const std::vector<WhatIf>& whatIfs() const { return what_ifs_; }
    // The row's Apply button and its "before → after" label, by what-if id ("mqa", "tp2", …).
    [[nodiscard]] QPushButton* applyButton(const QString& id) const;
    [[nodiscard]] QLabel* changeLabel(const QString& id) const;
    [[nodiscard]] QPushButton* revertButton() const { return revert_; }

public slots:
    void apply(const QString& id);
    void revert();

private:
    void refresh();
    void updateRevert();

    ScenarioModel* model_;
    QGridLayout* grid_;
    QLabel* applied_;
    QPushButton* revert_;
    std::vector<WhatIf> what_ifs_;
    struct Row {
        QString id;
        QLabel* title;
        QLabel* change;
        QPushButton* apply;
    };
    std::vector<Row> rows_;
    // The undo index right after the last Apply; -1 when there is nothing to revert.
    int applied_index_ = -1;
};

}  // namespace kvscope::ui
