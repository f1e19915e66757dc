#include "kvscope/ui/traffic_lesson_view.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "kvscope/calculator/learn.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/ui/bar_delegate.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

TrafficLessonView::TrafficLessonView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      prompt_(new BigSpinBox(BigSpinBox::Kind::tokens, BigSpinBox::Step::doubling)),
      output_(new BigSpinBox(BigSpinBox::Kind::tokens, BigSpinBox::Step::doubling)),
      shared_(new BigSpinBox(BigSpinBox::Kind::tokens, BigSpinBox::Step::doubling)),
      table_(new QTableWidget(0, ColumnCount)),
      summary_(new QLabel) {
    auto* intro = new QLabel(
        tr("A fit sizes the cache for every sequence at the full context at once. Requests are shorter, grow as they "
           "answer, are paged in blocks, and often start with the same system prompt. Here is the same cache, step by "
           "step, for the sequences and context of the current scenario; the Traffic tab serves whole streams of "
           "requests as vLLM's scheduler does."));
    intro->setWordWrap(true);
    prompt_->setRange(1, 1ull << 30);
    prompt_->setValue(2000);
    output_->setRange(0, 1ull << 30);
    output_->setValue(300);
    shared_->setRange(0, 1ull << 30);
    shared_->setValue(1000);
    auto* form = new QFormLayout;
    form->addRow(tr("A request's prompt (tokens)"), prompt_);
    form->addRow(tr("Its answer (tokens)"), output_);
    form->addRow(tr("Of the prompt, a system prompt all share"), shared_);
    table_->setHorizontalHeaderLabels({tr("The cache"), tr("Bytes"), tr("Against the worst case")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->horizontalHeader()->setSectionResizeMode(Step, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(Bytes, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setItemDelegateForColumn(Bar, new BarDelegate(kFractionRole, table_));
    table_->setMinimumHeight(170);
    summary_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(table_);
    layout->addWidget(summary_);
    layout->addStretch();
    for (BigSpinBox* b : {prompt_, output_, shared_})
        connect(b, &BigSpinBox::valueEdited, this, &TrafficLessonView::refresh);
    connect(model_, &ScenarioModel::changed, this, &TrafficLessonView::refresh);
    connect(model_, &ScenarioModel::unitsChanged, this, &TrafficLessonView::refresh);
    refresh();
}

void TrafficLessonView::refresh() {
    if (!model_->hasResults()) return;
    // The results' inputs, as every lesson: while the inputs are refused they are the last valid ones.
    const auto lesson =
        traffic_lesson(model_->results().scenario, prompt_->value(), output_->value(), shared_->value());
    if (!lesson) {
        table_->setRowCount(0);
        summary_->setText(q(lesson.error_text()));
        return;
    }
    const auto& steps = lesson->steps;
    table_->setRowCount(static_cast<int>(steps.size()));
    QString why;
    for (int row = 0; row < static_cast<int>(steps.size()); ++row) {
        const TrafficLessonStep& st = steps[static_cast<std::size_t>(row)];
        auto* step = new QTableWidgetItem(q(st.title));
        step->setToolTip(q(st.why));
        table_->setItem(row, Step, step);
        auto* bytes = new QTableWidgetItem(q(format_bytes(st.bytes, model_->units()) + " (" +
                                             number_text(100 * st.of_worst, Notation::fixed, 1) + "%)"));
        bytes->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        table_->setItem(row, Bytes, bytes);
        auto* bar = new QTableWidgetItem;
        bar->setData(kFractionRole, st.of_worst);
        table_->setItem(row, Bar, bar);
        why += "<p><b>" + q(st.title).toHtmlEscaped() + "</b>: " + q(st.why).toHtmlEscaped() + "</p>";
    }
    summary_->setText(why);
}

}  // namespace kvscope::ui
