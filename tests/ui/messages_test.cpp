// Input and messages: one undo story, readable marks, one message per problem, the file a window
// stood for coming back after a restart, export names and confirmations, the Help pages.
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QUndoStack>

#include <gtest/gtest.h>

#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/help_dialogs.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/quiz_view.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;

TEST(Messages, CtrlZInADeploymentFieldUndoesTheScenario) {
    MainWindow w(catalog(), false);
    w.show();
    QApplication::setActiveWindow(&w);
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 4; });
    ASSERT_EQ(w.model()->scenario().workload.batch, 4u);
    auto* memory = w.deployment()->findChildren<QLineEdit*>().front();
    for (QLineEdit* field : w.deployment()->findChildren<QLineEdit*>())
        if (field->accessibleName() == "Memory") memory = field;
    memory->setFocus();
    ASSERT_TRUE(memory->hasFocus());
    QTest::keyClick(memory, Qt::Key_Z, Qt::ControlModifier);
    EXPECT_EQ(w.model()->scenario().workload.batch, 1u) << "Ctrl+Z in the field undid the last scenario change";
    EXPECT_TRUE(w.model()->scenario().deployment) << "one step only";
}

TEST(Messages, CtrlZInAQuizAnswerUndoesTheTypingNotTheScenario) {
    MainWindow w(catalog(), false);
    w.show();
    QApplication::setActiveWindow(&w);
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 4; });
    w.tabs()->setCurrentIndex(MainWindow::LearnTab);
    w.learn()->setPage(LearnView::Quiz);
    QApplication::processEvents();
    ASSERT_GT(w.learn()->quiz()->count(), 0);
    QLineEdit* answer = w.learn()->quiz()->answerField(0);
    answer->setFocus();
    QTest::keyClicks(answer, "2 GiB");
    QTest::keyClick(answer, Qt::Key_Z, Qt::ControlModifier);
    EXPECT_EQ(w.model()->scenario().workload.batch, 4u) << "the scenario is untouched";
    EXPECT_NE(answer->text(), "2 GiB") << "the answer's own typing was undone";
}

TEST(Messages, AMarkedFieldsTooltipKeepsThePalettesColours) {
    MainWindow w(catalog(), false);
    w.model()->edit("kv", [](Scenario& s) { s.arch.kv_heads = 5; });
    QWidget* kv = w.inputs()->kvHeadsField();
    ASSERT_TRUE(w.inputs()->marks().isMarked(kv));
    EXPECT_TRUE(kv->styleSheet().contains("QToolTip { color: palette(tool-tip-text)"))
        << kv->styleSheet().toStdString();
    // The reason is listed once, without the field's name twice.
    const QString listed = w.inputs()->errorLabel()->text();
    EXPECT_TRUE(listed.contains("KV heads (5) must divide the query heads (32)")) << listed.toStdString();
    EXPECT_FALSE(listed.contains("KV heads: KV heads")) << listed.toStdString();
    // Fixed, the message goes.
    w.model()->edit("kv", [](Scenario& s) { s.arch.kv_heads = 8; });
    EXPECT_FALSE(w.inputs()->marks().isMarked(kv));
    EXPECT_TRUE(w.inputs()->errorLabel()->isHidden());
}

TEST(Messages, ZeroLayersIsOneProblemNotTwo) {
    ScenarioModel m(catalog());
    m.loadCatalogModel("gemma-2-9b");  // 42 layers with a window each
    m.edit("layers", [](Scenario& s) { s.arch.layers = 0; });
    ASSERT_EQ(m.errors().size(), 1u) << join_errors(m.errors());
    EXPECT_EQ(m.errors().front().field, "layers");
    EXPECT_EQ(m.errors().front().input, Field::layers);
}

TEST(Messages, AProblemNoInputShowsIsStillListed) {
    // A model whose experts per token exceed its experts: no input in the panel holds either count, so the
    // problem is listed under the inputs rather than left unsaid.
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("mixtral-8x7b");
    w.model()->edit("moe", [](Scenario& s) { s.arch.moe->experts_per_token = 9; });
    ASSERT_FALSE(w.model()->errors().empty());
    EXPECT_EQ(w.model()->errors().front().input, Field::experts_per_token);
    EXPECT_FALSE(w.inputs()->errorLabel()->isHidden());
    EXPECT_TRUE(w.inputs()->errorLabel()->text().contains("cannot exceed the number of experts"))
        << w.inputs()->errorLabel()->text().toStdString();
    w.model()->edit("moe", [](Scenario& s) { s.arch.moe->experts_per_token = 2; });
    EXPECT_TRUE(w.inputs()->errorLabel()->isHidden()) << w.inputs()->errorLabel()->text().toStdString();
    // A GPU memory of 0 is the Deployment tab's to mark, not listed here as well.
    w.deployment()->enableBox()->setChecked(true);
    ASSERT_TRUE(w.model()->scenario().deployment.has_value());
    w.model()->edit("gpu", [](Scenario& s) { s.deployment->gpu.memory_bytes = 0; });
    ASSERT_FALSE(w.model()->errors().empty());
    EXPECT_TRUE(w.inputs()->errorLabel()->isHidden()) << w.inputs()->errorLabel()->text().toStdString();
}

TEST(Messages, AfterQuitTheFileAndItsUnsavedMarkComeBack) {
    QTemporaryDir dir;
    const QString path = dir.filePath("plan 1 – Größe.kvscope.json");
    {
        MainWindow first(catalog(), true);
        first.model()->loadCatalogModel("llama-3-8b");
        ASSERT_TRUE(first.saveScenarioFile(path));
        first.model()->edit("batch", [](Scenario& s) { s.workload.batch = 12; });
        ASSERT_TRUE(first.isWindowModified());
        first.close();
    }
    MainWindow second(catalog(), true);
    EXPECT_EQ(second.model()->scenario().workload.batch, 12u);
    EXPECT_TRUE(second.windowTitle().startsWith("plan 1 – Größe.kvscope.json")) << second.windowTitle().toStdString();
    EXPECT_TRUE(second.isWindowModified());
    // Ctrl+S writes the same file again.
    ASSERT_TRUE(second.saveScenarioFile(path));
    EXPECT_FALSE(second.isWindowModified());
    second.close();
    // A scenario given on the command line is not that file: saving must not write over it.
    MainWindow third(catalog(), true);
    EXPECT_TRUE(third.windowTitle().startsWith("plan 1"));
    Scenario other = default_scenario(catalog());
    third.showScenario(other, "Teaching model", {});
    EXPECT_FALSE(third.windowTitle().contains("plan 1")) << third.windowTitle().toStdString();
    QSettings().clear();
}

TEST(Messages, AFileChangedSinceTheLastSessionIsNotWrittenOverWithTheOlderCopy) {
    QTemporaryDir dir;
    const QString path = dir.filePath("geteilt – Größe.kvscope.json");
    {
        MainWindow first(catalog(), true);
        first.model()->loadCatalogModel("llama-3-8b");
        ASSERT_TRUE(first.saveScenarioFile(path));
        first.close();  // nothing unsaved
    }
    {
        // Another window (or an editor, a sync) writes the file after this session ended.
        MainWindow other(catalog(), false);
        other.model()->loadCatalogModel("qwen2.5-7b");
        QTest::qWait(20);  // a later modification time
        ASSERT_TRUE(other.saveScenarioFile(path));
    }
    {
        // With nothing unsaved, the window shows what the file holds now, and Ctrl+S keeps it.
        MainWindow second(catalog(), true);
        EXPECT_EQ(second.model()->scenario().model_id, "qwen2.5-7b");
        EXPECT_FALSE(second.isWindowModified());
        EXPECT_TRUE(second.windowTitle().startsWith("geteilt")) << second.windowTitle().toStdString();
        second.model()->edit("batch", [](Scenario& s) { s.workload.batch = 5; });
        second.close();  // now with unsaved changes
    }
    {
        MainWindow other(catalog(), false);
        other.model()->loadCatalogModel("gpt2");
        QTest::qWait(20);
        ASSERT_TRUE(other.saveScenarioFile(path));
    }
    // Unsaved changes here and a file changed elsewhere: both are kept, and the window says what Save would do.
    {
        MainWindow third(catalog(), true);
        EXPECT_EQ(third.model()->scenario().workload.batch, 5u);
        EXPECT_TRUE(third.isWindowModified());
        EXPECT_TRUE(third.messages()->text().contains("changed since KVScope last saved it"))
            << third.messages()->text().toStdString();
        EXPECT_TRUE(third.fileChangedElsewhere());  // Save asks before replacing it
        third.close();                              // still unsaved: the next start says it again
    }
    MainWindow fourth(catalog(), true);
    EXPECT_TRUE(fourth.fileChangedElsewhere());
    EXPECT_TRUE(fourth.messages()->text().contains("changed since KVScope last saved it"));
    ASSERT_TRUE(fourth.saveScenarioFile(path));  // saved (as Replace does): the window and the file agree again
    EXPECT_FALSE(fourth.fileChangedElsewhere());
    QSettings().clear();
}

// A saved file edited by hand: `"key": value` (up to the next comma) becomes `with`; false when the file holds no
// such member or cannot be rewritten.
bool edit_member(const QString& path, const QByteArray& key, const QByteArray& with) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    QByteArray text = f.readAll();
    f.close();
    const auto at = text.indexOf("\"" + key + "\": ");
    if (at < 0) return false;
    text.replace(at, text.indexOf(',', at) - at, with);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == text.size();
}

TEST(Messages, AFileANewerVersionWroteSinceTheLastSessionSaysWhatItDoesNotRead) {
    // The window stands for the file again at start (Ctrl+S writes it): a field a newer KVScope added since is said
    // then, not dropped at the next save in silence.
    QTemporaryDir dir;
    const QString path = dir.filePath("neuere Fassung.kvscope.json");
    {
        MainWindow first(catalog(), true);
        first.model()->loadCatalogModel("llama-3-8b");
        ASSERT_TRUE(first.saveScenarioFile(path));
        first.close();
    }
    ASSERT_TRUE(edit_member(path, "batch", "\"batch\": 1, \"prefix_share\": 0.5"));
    MainWindow second(catalog(), true);
    EXPECT_EQ(second.model()->scenario().model_id, "llama-3-8b");
    EXPECT_EQ(second.messages()->kind(), MessageBar::Kind::error);
    EXPECT_TRUE(second.messages()->text().contains("does not read: workload.prefix_share (line"))
        << second.messages()->text().toStdString();
    QSettings().clear();
}

TEST(Messages, AFileWithAnInputOutOfRangeNeverShowsTheLastResultsUnderItsName) {
    // A hand-edited file: Llama 3 70B with a memory fraction of 1e300. The window keeps the last valid results (the
    // teaching model's) and says whose they are; the file's problem is said at once; nothing is exported as its.
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    const QString path = dir.filePath("zu groß.kvscope.json");
    ASSERT_TRUE(w.saveScenarioFile(path));
    ASSERT_TRUE(edit_member(path, "fraction", "\"fraction\": 1e300"));

    MainWindow other(catalog(), false);
    const QString before = other.model()->description();
    ASSERT_TRUE(other.openScenarioFile(path));
    EXPECT_EQ(other.model()->description(), "Llama 3 70B");
    ASSERT_FALSE(other.model()->errors().empty());
    EXPECT_EQ(other.messages()->kind(), MessageBar::Kind::error);
    EXPECT_TRUE(other.messages()->text().contains("zu groß.kvscope.json opened, but some of its inputs need attention"))
        << other.messages()->text().toStdString();
    EXPECT_TRUE(other.messages()->text().contains("fraction")) << other.messages()->text().toStdString();
    EXPECT_TRUE(other.overview()->staleLabel()->isVisibleTo(&other));
    EXPECT_TRUE(other.overview()->staleLabel()->text().contains("last valid results, of " + before))
        << other.overview()->staleLabel()->text().toStdString();
    EXPECT_FALSE(other.overview()->headlineLabel()->text().contains("Llama 3 70B"))
        << other.overview()->headlineLabel()->text().toStdString();
    EXPECT_FALSE(other.exportJsonTo(dir.filePath("r.json")));
    EXPECT_FALSE(QFile::exists(dir.filePath("r.json")));
    EXPECT_TRUE(other.messages()->text().contains("Nothing exported: the inputs need attention"));
}

TEST(Messages, AFileWithFieldsThisVersionDoesNotReadSaysSoWithItsOtherProblems) {
    // A newer version's field and an input the calculator rejects: both are said in the one message (the second
    // message used to hide the first), and the notes keep the fields that saving will not keep.
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-8b");
    const QString path = dir.filePath("neuer Stand.kvscope.json");
    ASSERT_TRUE(w.saveScenarioFile(path));
    ASSERT_TRUE(edit_member(path, "batch", "\"batch\": 0, \"prefix_share\": 0.5"));

    MainWindow other(catalog(), false);
    ASSERT_TRUE(other.openScenarioFile(path));
    const QString said = other.messages()->text();
    EXPECT_EQ(other.messages()->kind(), MessageBar::Kind::error);
    EXPECT_TRUE(said.contains("some of its inputs need attention")) << said.toStdString();
    EXPECT_TRUE(said.contains("holds a field this version of KVScope does not read: workload.prefix_share (line"))
        << said.toStdString();
    EXPECT_TRUE(other.model()->notes().join('\n').contains("saving writes the file without it"))
        << other.model()->notes().join('\n').toStdString();
}

TEST(Messages, SavingWhileAFieldHoldsTextItDidNotAcceptSaysSo) {
    // "131.072" typed in Context (German thousands) is not accepted, with Enter or without: the save is refused in
    // words, the file is not written, and the field keeps the text and its mark. Never "Saved" with the old 8k while
    // the box shows 131.072.
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.show();
    QLineEdit* context = w.inputs()->contextField()->spinBox()->findChild<QLineEdit*>();
    const QString path = dir.filePath("halb fertig.kvscope.json");
    for (const bool enter : {true, false}) {
        context->setFocus();
        context->selectAll();
        QTest::keyClicks(context, "131.072");
        if (enter) QTest::keyClick(context, Qt::Key_Return);
        EXPECT_FALSE(w.saveScenarioFile(path)) << "Enter: " << enter;
        EXPECT_FALSE(QFile::exists(path));
        EXPECT_TRUE(w.messages()->text().startsWith("Not saved: Context: '131.072'"))
            << w.messages()->text().toStdString();
        EXPECT_TRUE(w.messages()->text().contains("press Esc in it to put back its value"));
        EXPECT_EQ(context->text(), "131.072");  // still what was typed, marked
        EXPECT_TRUE(w.inputs()->marks().isMarked(w.inputs()->contextField()->spinBox()));
        EXPECT_TRUE(w.windowTitle().contains("[*]"));
        // Esc puts the value back; the save then writes it.
        QTest::keyClick(context, Qt::Key_Escape);
        EXPECT_EQ(context->text(), "8k");
        EXPECT_FALSE(w.inputs()->marks().isMarked(w.inputs()->contextField()->spinBox()));
    }
    // Text typed and not entered that the field accepts is saved as shown.
    context->setFocus();
    context->selectAll();
    QTest::keyClicks(context, "128k");
    ASSERT_TRUE(w.saveScenarioFile(path));
    MainWindow other(catalog(), false);
    ASSERT_TRUE(other.openScenarioFile(path));
    EXPECT_EQ(other.model()->scenario().workload.context_tokens, 131072u);
    EXPECT_EQ(other.inputs()->contextField()->spinBox()->findChild<QLineEdit*>()->text(), "128k");
    // Another value in the field (the slider, undo): what was refused is no longer what it holds.
    QTest::keyClicks(context, "x");
    QTest::keyClick(context, Qt::Key_Return);
    EXPECT_FALSE(w.inputs()->unaccepted().isEmpty());
    w.model()->edit("context", [](Scenario& s) { s.workload.context_tokens = 32768; });
    EXPECT_TRUE(w.inputs()->unaccepted().isEmpty());
    EXPECT_EQ(context->text(), "32k");
}

TEST(Messages, ExportNamesKeepTheWholeModelNameAndSayWhereTheyWrote) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("qwen2.5-72b");
    EXPECT_EQ(w.suggestedFileName(".png"), "qwen2.5-72b.png");
    const QString path = dir.filePath("chart.svg");
    ASSERT_TRUE(w.exportChartTo(path));
    EXPECT_TRUE(w.messages()->text().contains("Chart written to " + path)) << w.messages()->text().toStdString();
    ASSERT_NE(w.messages()->actionButton(), nullptr);
    EXPECT_TRUE(w.messages()->actionButton()->text().contains("Open folder"));
}

TEST(Messages, HelpListsEveryShortcutAndHowItCalculates) {
    MainWindow w(catalog(), false);
    const QString keys = shortcuts_html(w.menuBar());
    for (const char* k : {"Ctrl+Z", "Ctrl+S", "Ctrl+0", "Ctrl+Shift+E", "Ctrl+/"}) EXPECT_TRUE(keys.contains(k)) << k;
    EXPECT_TRUE(keys.contains("Undo"));
    const QString how = how_it_calculates_html();
    EXPECT_TRUE(how.contains("round_up(min(T, window), block)"));
    EXPECT_TRUE(how.contains("replicated on N GPUs"));
    EXPECT_TRUE(how.contains("GPUs = TP × PP × replicas"));
    for (const char* engine : {"vllm", "sglang", "tensorrt-llm", "llama.cpp"})
        EXPECT_TRUE(how.contains(engine)) << engine;
    QDialog* page = show_help_page(&w, "How KVScope calculates", how);
    ASSERT_NE(page->findChild<QTextBrowser*>(), nullptr);
    EXPECT_TRUE(page->findChild<QTextBrowser*>()->toPlainText().contains("How KVScope calculates"));
    page->close();
}

}  // namespace
}  // namespace kvscope::ui
