// The Learn tab on real widgets: the shown derivation multiplies to the calculator's bytes and
// points at its inputs, what-ifs apply and revert, answers are checked, notes survive a
// restart, the context-window strip counts what each layer still sees, and the recompute chart
// takes the stopwatch's measured curves.
#include <QApplication>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QFrame>
#include <QGroupBox>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <QValueAxis>

#include <gtest/gtest.h>

#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/notes_view.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/probe_view.h"
#include "kvscope/ui/quiz_view.h"
#include "kvscope/ui/recompute_view.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/show_work_view.h"
#include "kvscope/ui/traffic_lesson_view.h"
#include "kvscope/ui/what_if_view.h"
#include "kvscope/ui/window_strip.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

__extension__ using u128 = unsigned __int128;

// Opens the Learn tab on `page`, as a user does before reading it (hidden pages catch up when shown).
void show_page(MainWindow& w, LearnView::Page page) {
    w.show();
    w.tabs()->setCurrentIndex(MainWindow::LearnTab);
    w.learn()->setPage(page);
    QApplication::processEvents();
}

// What a reader gets multiplying the table's factors (exact: value / divisor each).
std::uint64_t product_of_rows(QTableWidget* t) {
    u128 num = 1, den = 1;
    for (int r = 0; r < t->rowCount(); ++r) {
        num *= t->item(r, 0)->data(ShowWorkView::ValueRole).toULongLong();
        den *= t->item(r, 0)->data(ShowWorkView::DivisorRole).toULongLong();
    }
    return static_cast<std::uint64_t>(num / den);
}

TEST(LearnShowWork, TheShownProductIsTheCalculatorsBytes) {
    MainWindow w(testing::catalog(), false);
    show_page(w, LearnView::ShowWork);
    ShowWorkView* v = w.learn()->showWork();
    struct Case {
        const char* model;
        std::uint64_t kv_heads;  // 0: the model's own
        const char* form;
    };
    for (const Case& c : {Case{"kvscope-teaching-32l", 32, "MHA"}, Case{"kvscope-teaching-32l", 8, "GQA-8"},
                          Case{"llama-3-8b", 0, "GQA-8"}, Case{"deepseek-v3", 0, "MLA"}}) {
        w.model()->loadCatalogModel(c.model);
        if (c.kv_heads) w.model()->edit("heads", [&](Scenario& s) { s.arch.kv_heads = c.kv_heads; });
        const std::uint64_t bytes = w.model()->results().kv.total_bytes;
        EXPECT_EQ(product_of_rows(v->factorsTable()), bytes) << c.model;
        EXPECT_TRUE(v->productLabel()->text().startsWith("= " + QString::fromStdString(format_count(bytes)) + " bytes"))
            << v->productLabel()->text().toStdString();
        EXPECT_EQ(v->formulaLabel()->text().contains("latent"), QString(c.form) == "MLA") << c.model;
        EXPECT_EQ(v->formulaLabel()->text().contains("(K&nbsp;and&nbsp;V)"), QString(c.form) != "MLA") << c.model;
    }
    // The lesson's numbers: 4.00 GiB for MHA.
    w.model()->loadCatalogModel("kvscope-teaching-32l");
    w.model()->edit("lesson", [](Scenario& s) {
        s.arch.kv_heads = 32;
        s.kv_dtype = KvDtype::fp16;
        s.workload = {8192, 1, 1, false};
    });
    EXPECT_EQ(v->productLabel()->text(), "= 4,294,967,296 bytes = 4.00 GiB (4.29 GB)");

    // Sliding windows: the layer groups are summed, and the total is still the calculator's.
    w.model()->loadCatalogModel("gemma-2-9b");
    w.model()->edit("long", [](Scenario& s) { s.workload.context_tokens = 32768; });
    const std::uint64_t bytes = w.model()->results().kv.total_bytes;
    EXPECT_TRUE(v->productLabel()->text().contains(QString::fromStdString(format_count(bytes))));
    EXPECT_TRUE(v->formulaLabel()->text().contains("4,096&nbsp;tokens&nbsp;(sliding&nbsp;window)"));
    EXPECT_TRUE(v->formulaLabel()->text().contains(" + ")) << "two layer groups summed";
    EXPECT_FALSE(v->stateLabel()->isVisibleTo(&w));

    // A hybrid: the product counts the 12 attention layers, and the state has a product of its own.
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    w.model()->edit("eight", [](Scenario& s) {
        s.workload.context_tokens = 131072;
        s.workload.batch = 8;
    });
    EXPECT_EQ(product_of_rows(v->factorsTable()), 3ull << 33);
    EXPECT_TRUE(v->formulaLabel()->text().contains("12&nbsp;layers")) << v->formulaLabel()->text().toStdString();
    ASSERT_TRUE(v->stateLabel()->isVisibleTo(&w));
    EXPECT_TRUE(
        v->stateLabel()->text().contains("36 layers × (conv 3 × 8,192 values × 2 bytes (bf16) + SSM 32 × "
                                         "128 × 128 values × 2 bytes (bf16)) × 8 sequences = 316,145,664 bytes"))
        << v->stateLabel()->text().toStdString();
}

TEST(LearnShowWork, PointingAtAFactorFramesItsInput) {
    MainWindow w(testing::catalog(), false);
    show_page(w, LearnView::ShowWork);
    ShowWorkView* v = w.learn()->showWork();
    emit v->formulaLabel()->linkHovered("kv_heads");
    EXPECT_EQ(w.inputs()->highlightedField(), static_cast<QWidget*>(w.inputs()->kvHeadsField()));
    emit v->formulaLabel()->linkHovered("batch");
    EXPECT_EQ(w.inputs()->highlightedField(), static_cast<QWidget*>(w.inputs()->batchField()));
    emit v->formulaLabel()->linkHovered(QString());
    EXPECT_EQ(w.inputs()->highlightedField(), nullptr);
    // The table's rows do the same, and a click moves the focus there.
    QTableWidget* t = v->factorsTable();
    int layers_row = -1;
    for (int r = 0; r < t->rowCount(); ++r)
        if (t->item(r, 0)->data(ShowWorkView::FieldRole).toString() == "layers") layers_row = r;
    ASSERT_GE(layers_row, 0);
    emit t->cellEntered(layers_row, 2);
    EXPECT_EQ(w.inputs()->highlightedField(), static_cast<QWidget*>(w.inputs()->layersField()));
    emit v->formulaLabel()->linkActivated("head_dim");
    EXPECT_TRUE(w.inputs()->headDimField()->hasFocus() || !QApplication::focusWindow());
    // Another tab while a factor is pointed at (Ctrl+1 from the keyboard): the frame does not stay on the form.
    emit t->cellEntered(layers_row, 2);
    ASSERT_NE(w.inputs()->highlightedField(), nullptr);
    w.tabs()->setCurrentIndex(MainWindow::OverviewTab);
    EXPECT_EQ(w.inputs()->highlightedField(), nullptr);
    EXPECT_TRUE(w.inputs()->findChild<QFrame*>("fieldSpotlight")->isHidden());
}

TEST(LearnWhatIf, AppliesAndReverts) {
    MainWindow w(testing::catalog(), false);
    w.model()->loadCatalogModel("llama-3-8b");  // 8 KV heads
    show_page(w, LearnView::WhatIfs);
    WhatIfView* v = w.learn()->whatIfs();
    const std::uint64_t before = w.model()->results().kv.total_bytes;
    EXPECT_TRUE(v->changeLabel("halve_kv_heads")->text().contains("-50.0%"));
    v->applyButton("halve_kv_heads")->click();
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 4u);
    EXPECT_EQ(w.model()->results().kv.total_bytes, before / 2);
    EXPECT_TRUE(v->revertButton()->isVisibleTo(v));
    v->revertButton()->click();
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 8u);
    EXPECT_EQ(w.model()->results().kv.total_bytes, before);
    EXPECT_FALSE(v->revertButton()->isVisibleTo(v));
    // Applying is one undo step like any edit.
    v->applyButton("fp8")->click();
    EXPECT_EQ(w.model()->scenario().kv_dtype, KvDtype::fp8_e4m3);
    w.model()->undoStack()->undo();
    EXPECT_NE(w.model()->scenario().kv_dtype, KvDtype::fp8_e4m3);
    EXPECT_FALSE(v->revertButton()->isVisibleTo(v)) << "nothing left to revert after undo";
    // What cannot apply says why, and its button is off.
    w.model()->edit("mqa", [](Scenario& s) { s.arch.kv_heads = 1; });
    EXPECT_FALSE(v->applyButton("mqa")->isEnabled());
    EXPECT_TRUE(v->changeLabel("mqa")->text().contains("already has 1 KV head"));
}

TEST(LearnQuiz, ARightAnswerIsAcceptedAndAWrongOneShowsTheWorking) {
    MainWindow w(testing::catalog(), false);
    w.model()->loadCatalogModel("kvscope-teaching-32l");
    w.model()->edit("lesson", [](Scenario& s) {
        s.arch.kv_heads = 32;
        s.kv_dtype = KvDtype::fp16;
        s.workload = {8192, 1, 1, false};
    });
    show_page(w, LearnView::Quiz);
    QuizView* quiz = w.learn()->quiz();
    ASSERT_GE(quiz->count(), 4);
    int heads = -1;
    for (int i = 0; i < quiz->count(); ++i)
        if (quiz->question(i).id == "other_kv_heads") heads = i;
    ASSERT_GE(heads, 0);
    QTest::keyClicks(quiz->answerField(heads), "2 GiB");
    QTest::keyClick(quiz->answerField(heads), Qt::Key_Return);
    EXPECT_TRUE(quiz->verdictLabel(heads)->text().startsWith("Right"))
        << quiz->verdictLabel(heads)->text().toStdString();
    quiz->answerField(heads)->setText("3 GiB");
    quiz->check(heads);
    EXPECT_TRUE(
        quiz->verdictLabel(heads)->text().startsWith("Not quite: you answered 3.00 GiB; the answer is 2.00 GiB"));
    EXPECT_TRUE(quiz->workedLabel(heads)->isVisibleTo(quiz));
    EXPECT_TRUE(quiz->workedLabel(heads)->text().contains("16 KV heads"))
        << quiz->workedLabel(heads)->text().toStdString();
    quiz->answerField(heads)->setText("a lot");
    quiz->check(heads);
    EXPECT_TRUE(quiz->verdictLabel(heads)->text().startsWith("Type a size"));
    // New questions follow the scenario.
    w.model()->edit("gqa", [](Scenario& s) { s.arch.kv_heads = 8; });
    EXPECT_TRUE(quiz->question(0).text.starts_with("With 4 KV heads instead of 8"));
    EXPECT_TRUE(quiz->answerField(0)->text().isEmpty());
}

TEST(LearnPages, AHiddenPageShowsTheCurrentScenarioWhenOpened) {
    MainWindow w(testing::catalog(), false);
    show_page(w, LearnView::Notes);  // the quiz is hidden while the scenario changes
    w.model()->loadCatalogModel("kvscope-teaching-32l");
    w.model()->edit("heads", [](Scenario& s) { s.arch.kv_heads = 8; });
    w.learn()->setPage(LearnView::Quiz);
    QApplication::processEvents();
    ASSERT_GE(w.learn()->quiz()->count(), 1);
    EXPECT_TRUE(w.learn()->quiz()->question(0).text.starts_with("With 4 KV heads instead of 8"));
}

TEST(LearnNotes, SurviveARestartAndExportAsMarkdown) {
    QTemporaryDir dir;
    const QString path = dir.filePath("notes.json");
    ScenarioModel model(testing::catalog());
    model.loadCatalogModel("llama-3-8b");
    {
        NotesView notes(&model, path);
        notes.newNote();
        QTest::keyClicks(notes.claimField(), "GQA-8 cuts the cache to a quarter");
        QTest::keyClicks(notes.evidenceField(), "Overview: 1.00 GiB against 4.00 GiB.");
        EXPECT_TRUE(notes.list()->item(0)->text().startsWith("GQA-8 cuts the cache to a quarter"));
    }  // closing writes what was typed
    model.loadCatalogModel("mistral-7b-v0.1");
    NotesView again(&model, path);
    ASSERT_EQ(again.store().notes().size(), 1);
    EXPECT_EQ(again.claimField()->text(), "GQA-8 cuts the cache to a quarter");
    EXPECT_EQ(again.evidenceField()->toPlainText(), "Overview: 1.00 GiB against 4.00 GiB.");
    EXPECT_TRUE(again.attachedLabel()->text().contains("Llama 3 8B")) << "the scenario stays with the note";
    again.openNoteScenario();
    EXPECT_EQ(display_name(testing::catalog(), model.scenario()), "Llama 3 8B");

    const QString md = dir.filePath("notes.md");
    ASSERT_TRUE(again.exportMarkdownTo(md));
    const QString text = QString::fromUtf8(testing::read_all(md));
    EXPECT_TRUE(text.startsWith("# KVScope notes"));
    EXPECT_TRUE(text.contains("## 1. GQA-8 cuts the cache to a quarter"));
    EXPECT_TRUE(text.contains("KV cache 1.00 GiB (1.07 GB)")) << text.toStdString();
    EXPECT_TRUE(text.contains("```json\n{"));
    EXPECT_FALSE(again.exportMarkdownTo(dir.filePath("no/such/folder/notes.md")));
}

// Two windows' notes: when the other deletes a note above the one being edited, this one goes on editing the same
// note, never the one that moved into its row.
TEST(LearnNotes, AnotherWindowsDeletionLeavesTheNoteBeingEdited) {
    QTemporaryDir dir;
    const QString path = dir.filePath("notes.json");
    ScenarioModel model(testing::catalog());
    NotesView a(&model, path);
    for (const char* claim : {"first", "second", "third"}) {
        a.newNote();
        QTest::keyClicks(a.claimField(), claim);
        a.flush();
    }
    NotesView b(&model, path);
    ASSERT_EQ(b.store().notes().size(), 3);
    a.list()->setCurrentRow(1);  // editing "second"
    ASSERT_EQ(a.claimField()->text(), "second");
    b.list()->setCurrentRow(0);
    b.deleteCurrent();  // "first" goes, in the other window
    QTest::keyClicks(a.claimField(), " claim");
    a.flush();  // the autosave merges the deletion
    EXPECT_EQ(a.claimField()->text(), "second claim");
    ASSERT_EQ(a.store().notes().size(), 2);
    EXPECT_EQ(a.store().notes()[0].claim, "second claim");
    EXPECT_EQ(a.store().notes()[1].claim, "third");
    QTest::keyClicks(a.claimField(), "!");
    EXPECT_EQ(a.store().notes()[0].claim, "second claim!");
    EXPECT_EQ(a.store().notes()[1].claim, "third");
}

TEST(LearnNotes, AnUnreadableFileIsKeptAsideNotOverwritten) {
    QTemporaryDir dir;
    const QString path = dir.filePath("notes.json");
    testing::write_all(path, "{ this is not json");
    ScenarioModel model(testing::catalog());
    NotesView notes(&model, path);
    QSignalSpy said(&notes, &NotesView::message);
    ASSERT_TRUE(said.wait(1000));
    EXPECT_TRUE(said.front().at(0).toString().contains("could not be read"))
        << said.front().at(0).toString().toStdString();
    const QStringList aside = QDir(dir.path()).entryList({"notes.json.unreadable-*"});
    ASSERT_EQ(aside.size(), 1);
    EXPECT_EQ(testing::read_all(dir.filePath(aside.front())), "{ this is not json");
}

TEST(LearnContextWindow, TheStripCountsWhatEachLayerStillSees) {
    MainWindow w(testing::catalog(), false);
    w.model()->loadCatalogModel("gemma-2-9b");  // 8,192-token window; half the layers slide over 4,096
    show_page(w, LearnView::ContextWindow);
    ContextWindowPage* page = w.learn()->contextWindow();
    page->setConversation(10000);
    const ContextWindowView& v = page->strip()->view();
    EXPECT_EQ(v.dropped, 1808u);
    ASSERT_EQ(v.rows.size(), 2u);
    EXPECT_EQ(v.rows[0].visible, 8192u);
    EXPECT_EQ(v.rows[1].visible, 4096u);
    EXPECT_TRUE(page->summary()->text().contains("the first 1,808 have left, and the model sees the last 8,192"))
        << page->summary()->text().toStdString();
    EXPECT_TRUE(page->summary()->text().contains("see only the last 4,096 tokens"));
    page->setConversation(3000);
    EXPECT_EQ(page->strip()->view().dropped, 0u);
    EXPECT_EQ(page->strip()->view().rows[1].visible, 3000u);
    // Play grows the conversation until tokens leave.
    page->playButton()->click();
    for (int i = 0; i < 200 && page->strip()->view().dropped == 0; ++i) QTest::qWait(20);
    EXPECT_GT(page->strip()->view().dropped, 0u);
    page->play(false);
    EXPECT_FALSE(page->playButton()->isChecked());
}

TEST(LearnRecompute, FlatAgainstGrowingAndTheStopwatchOverlaid) {
    MainWindow w(testing::catalog(), false);
    show_page(w, LearnView::Recompute);
    RecomputeView* r = w.learn()->recompute();
    r->tokensField()->setValue(64);
    const auto cached = r->cachedSeries()->points();
    const auto uncached = r->uncachedSeries()->points();
    ASSERT_GT(cached.size(), 10);
    EXPECT_EQ(cached.back().x(), 64);
    // Per token: the cached step barely grows, the recomputed one grows with the prefix.
    EXPECT_LT(cached.back().y() / cached.front().y(), 1.1);
    EXPECT_GT(uncached.back().y() / uncached.front().y(), 50);
    r->setCumulative(true);
    EXPECT_GT(r->uncachedSeries()->points().back().y(), 20 * r->cachedSeries()->points().back().y());
    EXPECT_EQ(r->measuredCachedSeries()->count(), 0);
    // Before any run the legend lists only what is drawn, and the work axis writes whole numbers.
    QLegend* legend = r->chartView()->chart()->legend();
    for (QLineSeries* s : {r->measuredCachedSeries(), r->measuredUncachedSeries()})
        for (QLegendMarker* m : legend->markers(s)) EXPECT_FALSE(m->isVisible()) << s->name().toStdString();
    for (QAbstractAxis* axis : r->chartView()->chart()->axes(Qt::Vertical))
        if (auto* value = qobject_cast<QValueAxis*>(axis)) EXPECT_FALSE(value->labelFormat().contains('g'));

    // The Learn page's button runs the stopwatch through the Probe tab; its times are overlaid.
    QSignalSpy finished(w.probe(), &ProbeView::finished);
    emit r->stopwatchRequested(24);
    ASSERT_TRUE(finished.wait(120000));
    QApplication::processEvents();
    EXPECT_EQ(r->measuredCachedSeries()->count(), 24);
    EXPECT_EQ(r->measuredUncachedSeries()->count(), 24);
    EXPECT_GT(r->measuredUncachedSeries()->points().back().y(), r->measuredCachedSeries()->points().back().y());
    EXPECT_EQ(r->tokensField()->value(), 24) << "the calculated curves cover the measured tokens";
}

TEST(LearnRealTraffic, TheStepsAreTheCalculatorsAndFollowTheScenario) {
    MainWindow w(testing::catalog(), false);
    w.model()->edit("test", [](Scenario& s) { s.workload.batch = 8; });
    show_page(w, LearnView::RealTraffic);
    TrafficLessonView* page = w.learn()->trafficLesson();
    const auto expected = traffic_lesson(w.model()->scenario(), 2000, 300, 1000);
    ASSERT_TRUE(expected);
    ASSERT_EQ(page->table()->rowCount(), 4);
    for (int row = 0; row < 4; ++row) {
        const TrafficLessonStep& st = expected->steps[static_cast<std::size_t>(row)];
        EXPECT_EQ(page->table()->item(row, TrafficLessonView::Step)->text().toStdString(), st.title);
        EXPECT_TRUE(page->table()
                        ->item(row, TrafficLessonView::Bytes)
                        ->text()
                        .startsWith(QString::fromStdString(format_bytes(st.bytes, w.model()->units()) + " (")));
        EXPECT_DOUBLE_EQ(
            page->table()->item(row, TrafficLessonView::Bar)->data(TrafficLessonView::kFractionRole).toDouble(),
            st.of_worst);
    }
    // A longer answer holds more; one sequence shares no prefix.
    page->outputField()->setValue(3000);
    emit page->outputField()->valueEdited(3000);
    EXPECT_TRUE(page->table()
                    ->item(1, TrafficLessonView::Bytes)
                    ->text()
                    .startsWith(QString::fromStdString(format_bytes(
                        traffic_lesson(w.model()->scenario(), 2000, 3000, 1000)->steps[1].bytes, w.model()->units()))));
    w.model()->edit("test", [](Scenario& s) { s.workload.batch = 1; });
    EXPECT_EQ(page->table()->rowCount(), 3);
}

// While the inputs are refused the page shows the last valid results' steps, as the banner above it says, never the
// steps of inputs the calculator did not take.
TEST(LearnRealTraffic, RefusedInputsLeaveTheLastValidResultsSteps) {
    MainWindow w(testing::catalog(), false);
    w.model()->edit("test", [](Scenario& s) { s.workload.batch = 8; });
    show_page(w, LearnView::RealTraffic);
    TrafficLessonView* page = w.learn()->trafficLesson();
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("memory", [](Scenario& s) { s.deployment->gpu.memory_bytes = 2ull << 50; });  // over 1 PiB
    ASSERT_FALSE(w.model()->errors().empty());
    w.model()->edit("context", [](Scenario& s) { s.workload.context_tokens = 32768; });
    const Scenario& shown = w.model()->results().scenario;
    ASSERT_NE(shown.workload.context_tokens, 32768u);
    const auto expected = traffic_lesson(shown, 2000, 300, 1000);
    const auto typed = traffic_lesson(w.model()->scenario(), 2000, 300, 1000);
    ASSERT_TRUE(expected && typed);
    ASSERT_NE(expected->steps[0].bytes, typed->steps[0].bytes);
    ASSERT_GT(page->table()->rowCount(), 0);
    EXPECT_TRUE(page->table()
                    ->item(0, TrafficLessonView::Bytes)
                    ->text()
                    .startsWith(QString::fromStdString(format_bytes(expected->steps[0].bytes, w.model()->units()))))
        << page->table()->item(0, TrafficLessonView::Bytes)->text().toStdString();
}

}  // namespace
}  // namespace kvscope::ui
