#pragma once
// The Learn tab: for people experimenting with head counts. A list of lessons on the left —
// show your work, prefill and decode, the cost of recomputing, what if, the context window,
// check your understanding, notes — each computed from the current scenario.

#include <QWidget>

#include "kvscope/ui/notes_store.h"

class QLabel;
class QListWidget;
class QStackedWidget;

namespace kvscope::ui {

class ContextWindowPage;
class TrafficLessonView;
class NotesView;
class PhasesView;
class QuizView;
class RecomputeView;
class ScenarioModel;
class ShowWorkView;
class WhatIfView;

class LearnView : public QWidget {
    Q_OBJECT
public:
    enum Page { ShowWork, Phases, Recompute, WhatIfs, ContextWindow, RealTraffic, Quiz, Notes };
    explicit LearnView(ScenarioModel* model, const QString& notes_path = NotesStore::defaultPath(),
                       QWidget* parent = nullptr);

    void setPage(Page page);
    [[nodiscard]] Page page() const;
    [[nodiscard]] QListWidget* pageList() const { return pages_list_; }
    [[nodiscard]] ShowWorkView* showWork() const { return show_work_; }
    [[nodiscard]] PhasesView* phases() const { return phases_; }
    [[nodiscard]] RecomputeView* recompute() const { return recompute_; }
    [[nodiscard]] WhatIfView* whatIfs() const { return what_ifs_; }
    [[nodiscard]] ContextWindowPage* contextWindow() const { return context_window_; }
    [[nodiscard]] TrafficLessonView* trafficLesson() const { return traffic_lesson_; }
    [[nodiscard]] QuizView* quiz() const { return quiz_; }
    [[nodiscard]] NotesView* notes() const { return notes_; }
    // Above the lessons while the inputs need attention: whose figures they show.
    [[nodiscard]] QLabel* staleLabel() const { return stale_; }

signals:
    void fieldHovered(kvscope::Field field);
    void fieldActivated(kvscope::Field field);
    void stopwatchRequested(int tokens);
    void message(const QString& text, bool error);

private:
    QListWidget* pages_list_;
    QStackedWidget* stack_;
    ShowWorkView* show_work_;
    PhasesView* phases_;
    RecomputeView* recompute_;
    WhatIfView* what_ifs_;
    ContextWindowPage* context_window_;
    TrafficLessonView* traffic_lesson_;
    QuizView* quiz_;
    NotesView* notes_;
    QLabel* stale_;  // a StaleNote
};

}  // namespace kvscope::ui
