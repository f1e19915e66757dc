#include "kvscope/ui/what_if_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

WhatIfView::WhatIfView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent), model_(model), grid_(new QGridLayout), applied_(new QLabel), revert_(new QPushButton) {
    auto* intro =
        new QLabel(tr("<h3>What if…</h3>Each change starts from the current scenario. Apply one to "
                      "make it the scenario (Ctrl+Z or Revert undoes it)."));
    intro->setWordWrap(true);
    revert_->setText(tr("&Revert"));
    revert_->setToolTip(tr("Put back the scenario from before the last applied change"));
    applied_->setWordWrap(true);
    auto* applied_bar = new QHBoxLayout;
    applied_bar->addWidget(applied_, 1);
    applied_bar->addWidget(revert_);
    applied_->hide();
    revert_->hide();

    // Rows: title and why | before → after | change | Apply.
    grid_->setColumnStretch(0, 3);
    grid_->setColumnStretch(1, 2);
    grid_->setHorizontalSpacing(16);
    grid_->setVerticalSpacing(10);
    for (const char* id : {"halve_kv_heads", "mqa", "fp8", "double_context", "tp2"}) {
        Row row{id, new QLabel, new QLabel, new QPushButton(tr("Apply"))};
        row.title->setWordWrap(true);
        row.change->setWordWrap(true);
        row.change->setTextInteractionFlags(Qt::TextSelectableByMouse);
        const int r = static_cast<int>(rows_.size());
        grid_->addWidget(row.title, r, 0);
        grid_->addWidget(row.change, r, 1);
        grid_->addWidget(row.apply, r, 2, Qt::AlignTop);
        connect(row.apply, &QPushButton::clicked, this, [this, id = row.id] { apply(id); });
        rows_.push_back(row);
    }
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(applied_bar);
    layout->addLayout(grid_);
    layout->addStretch(1);
    connect(revert_, &QPushButton::clicked, this, &WhatIfView::revert);
    // Any step taken or undone after an Apply makes Revert meaningless; the index says so.
    connect(model_->undoStack(), &QUndoStack::indexChanged, this, &WhatIfView::updateRevert);
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
    connect(model_, &ScenarioModel::unitsChanged, lazy, &RefreshWhenShown::request);
}

QPushButton* WhatIfView::applyButton(const QString& id) const {
    for (const Row& r : rows_)
        if (r.id == id) return r.apply;
    return nullptr;
}

QLabel* WhatIfView::changeLabel(const QString& id) const {
    for (const Row& r : rows_)
        if (r.id == id) return r.change;
    return nullptr;
}

void WhatIfView::refresh() {
    const UnitSystem units = model_->units();
    what_ifs_ = what_ifs(model_->scenario());
    for (Row& row : rows_) {
        auto it = std::find_if(what_ifs_.begin(), what_ifs_.end(), [&](const WhatIf& w) { return q(w.id) == row.id; });
        if (it == what_ifs_.end()) continue;
        const WhatIf& w = *it;
        row.title->setText("<b>" + q(w.title).toHtmlEscaped() + "</b><br><small>" + q(w.why).toHtmlEscaped() +
                           "</small>");
        row.apply->setEnabled(w.available);
        row.apply->setToolTip(w.available ? tr("Make this the scenario") : q(w.unavailable_reason));
        if (!w.available) {
            row.change->setText(tr("<i>Not possible here: %1.</i>").arg(q(w.unavailable_reason).toHtmlEscaped()));
            continue;
        }
        const bool per_gpu = w.per_gpu;
        const std::uint64_t before = per_gpu ? w.per_gpu_before : w.total_before;
        const std::uint64_t after = per_gpu ? w.per_gpu_after : w.total_after;
        const QString colour = w.percent_change < 0 ? "#27ae60" : w.percent_change > 0 ? "#c0392b" : "gray";
        QString text = tr("%1 → <b>%2</b>%3 <span style=\"color:%4\"><b>%5%6</b></span>")
                           .arg(q(format_bytes(before, units)), q(format_bytes(after, units)),
                                per_gpu ? tr(" per GPU") : QString(), colour, w.percent_change > 0 ? "+" : "",
                                q(format_percent(w.percent_change)));
        if (per_gpu && w.total_after != w.per_gpu_after)
            text += tr("<br><small>total over all GPUs: %1 → %2</small>")
                        .arg(q(format_bytes(w.total_before, units)), q(format_bytes(w.total_after, units)));
        row.change->setText(text);
    }
}

void WhatIfView::updateRevert() {
    // Revert stays offered while the applied change is the last step in the history.
    const bool can_revert = applied_index_ >= 0 && model_->undoStack()->index() == applied_index_;
    applied_->setVisible(can_revert);
    revert_->setVisible(can_revert);
    if (!can_revert) applied_index_ = -1;
}

void WhatIfView::apply(const QString& id) {
    auto it = std::find_if(what_ifs_.begin(), what_ifs_.end(), [&](const WhatIf& w) { return q(w.id) == id; });
    if (it == what_ifs_.end() || !it->available) return;
    const WhatIf w = *it;
    applied_->setText(
        tr("Applied: <b>%1</b>. Every tab now shows the changed scenario.").arg(q(w.title).toHtmlEscaped()));
    const int index = model_->undoStack()->index();
    model_->edit(tr("What if: %1").arg(q(w.title)), [scenario = w.scenario](Scenario& s) { s = scenario; });
    applied_index_ = model_->undoStack()->index() != index ? model_->undoStack()->index() : -1;
    updateRevert();
}

void WhatIfView::revert() {
    if (applied_index_ >= 0 && model_->undoStack()->index() == applied_index_) model_->undoStack()->undo();
}

}  // namespace kvscope::ui
