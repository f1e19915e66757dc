#include "kvscope/ui/learn_view.h"

#include <QHBoxLayout>
#include <QListWidget>
#include <QScrollArea>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "kvscope/ui/notes_view.h"
#include "kvscope/ui/phases_view.h"
#include "kvscope/ui/quiz_view.h"
#include "kvscope/ui/recompute_view.h"
#include "kvscope/ui/scrollable.h"
#include "kvscope/ui/show_work_view.h"
#include "kvscope/ui/stale_note.h"
#include "kvscope/ui/traffic_lesson_view.h"
#include "kvscope/ui/what_if_view.h"
#include "kvscope/ui/window_strip.h"

namespace kvscope::ui {

LearnView::LearnView(ScenarioModel* model, const QString& notes_path, QWidget* parent)
    : QWidget(parent),
      pages_list_(new QListWidget),
      stack_(new QStackedWidget),
      show_work_(new ShowWorkView(model)),
      phases_(new PhasesView(model)),
      recompute_(new RecomputeView(model)),
      what_ifs_(new WhatIfView(model)),
      context_window_(new ContextWindowPage(model)),
      traffic_lesson_(new TrafficLessonView(model)),
      quiz_(new QuizView(model)),
      notes_(new NotesView(model, notes_path)),
      stale_(new StaleNote(model)) {
    const QList<std::pair<QString, QWidget*>> pages{{tr("Show your work"), scrollable(show_work_)},
                                                    {tr("Prefill and decode"), scrollable(phases_)},
                                                    {tr("Cost of recomputing"), recompute_},
                                                    {tr("What if…"), scrollable(what_ifs_)},
                                                    {tr("Context window"), scrollable(context_window_)},
                                                    {tr("Real traffic"), scrollable(traffic_lesson_)},
                                                    {tr("Check yourself"), scrollable(quiz_)},
                                                    {tr("Notes"), notes_}};
    for (const auto& [title, page] : pages) {
        pages_list_->addItem(title);
        stack_->addWidget(page);
    }
    pages_list_->setAccessibleName(tr("Lessons"));
    // Roomy rows by size hint, not a style sheet (a styled list would not follow a later palette change).
    const int text_width = pages_list_->sizeHintForColumn(0);
    const int row_height = pages_list_->fontMetrics().height() + 14;
    for (int i = 0; i < pages_list_->count(); ++i)
        pages_list_->item(i)->setSizeHint(QSize(text_width + 16, row_height));
    pages_list_->setFixedWidth(text_width + 24);
    pages_list_->setCurrentRow(0);
    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(pages_list_);
    row->addWidget(stack_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(stale_);  // the lessons compute from the last valid results while the inputs need attention
    layout->addLayout(row, 1);

    connect(pages_list_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
    connect(show_work_, &ShowWorkView::fieldHovered, this, &LearnView::fieldHovered);
    connect(show_work_, &ShowWorkView::fieldActivated, this, &LearnView::fieldActivated);
    connect(recompute_, &RecomputeView::stopwatchRequested, this, &LearnView::stopwatchRequested);
    connect(notes_, &NotesView::message, this, &LearnView::message);
}

void LearnView::setPage(Page page) { pages_list_->setCurrentRow(page); }

LearnView::Page LearnView::page() const { return static_cast<Page>(pages_list_->currentRow()); }

}  // namespace kvscope::ui
