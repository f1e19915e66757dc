// The inputs show what the window computes with, after every kind of change: an undo with the focus still in the
// field, a model loaded, keys that belong to the window (Ctrl+Z in any field), Esc, the layer-mix row.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUndoStack>
#include <QValueAxis>

#include <gtest/gtest.h>

#include "kvscope/calculator/fit.h"

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/comparison_model.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/plan_view.h"
#include "kvscope/ui/probe_view.h"
#include "kvscope/ui/recompute_view.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/stale_note.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;

QLineEdit* edit_of(BigSpinBox* box) { return box->findChild<QLineEdit*>(); }

void type(QLineEdit* edit, const QString& text, bool enter = true) {
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, text);
    if (enter) QTest::keyClick(edit, Qt::Key_Return);
}

QAction* action_with(MainWindow& w, const QKeySequence& key) {
    for (QAction* a : w.findChildren<QAction*>())
        if (a->shortcuts().contains(key)) return a;
    return nullptr;
}

struct ShownWindow {
    MainWindow w{catalog(), false};
    ShownWindow() {
        w.show();
        w.activateWindow();
        QApplication::setActiveWindow(&w);
        (void)QTest::qWaitForWindowActive(&w);
    }
};

TEST(WindowState, AnUndoWithTheFocusInTheFieldShowsTheValueItPutsBack) {
    // Layers 70,000 (past the calculator's 65,536), Enter: marked. The toolbar's Undo leaves the focus in the box;
    // the box must read 48 again, unmarked, and the file Save as writes must say 48.
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 4; });
    BigSpinBox* layers = w.inputs()->layersField();
    type(edit_of(layers), "70000");
    EXPECT_EQ(w.model()->scenario().arch.layers, 70000u);
    EXPECT_TRUE(w.inputs()->marks().isMarked(layers));
    ASSERT_TRUE(edit_of(layers)->hasFocus() || layers->hasFocus());
    action_with(w, QKeySequence::Undo)->trigger();
    EXPECT_EQ(w.model()->scenario().arch.layers, 48u);
    EXPECT_EQ(edit_of(layers)->text(), "48");
    EXPECT_FALSE(w.inputs()->marks().isMarked(layers));
    QTemporaryDir dir;
    const QString path = dir.filePath("ré sumé.kvscope.json");
    ASSERT_TRUE(w.saveScenarioFile(path));
    auto saved = read_scenario_file(path.toStdString());
    ASSERT_TRUE(saved);
    EXPECT_EQ(saved->scenario.arch.layers, 48u);
    // Typed again, it is an edit again, and Undo takes back that edit (not the sequences before it).
    type(edit_of(layers), "70000");
    EXPECT_EQ(w.model()->scenario().arch.layers, 70000u);
    action_with(w, QKeySequence::Undo)->trigger();
    EXPECT_EQ(w.model()->scenario().arch.layers, 48u);
    EXPECT_EQ(w.model()->scenario().workload.batch, 4u);
}

TEST(WindowState, TextRefusedStaysWithItsMarkUntilTheValueChangesOrEscTakesItBack) {
    // "131.072" with Enter: the box keeps what was typed and says why (never 4k in red over a message quoting
    // 131.072); clicking elsewhere does not turn it back to 4k without a word.
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->edit("context", [](Scenario& s) { s.workload.context_tokens = 4096; });
    BigSpinBox* context = w.inputs()->contextField()->spinBox();
    type(edit_of(context), "131.072");
    EXPECT_EQ(edit_of(context)->text(), "131.072");
    EXPECT_TRUE(w.inputs()->marks().isMarked(context));
    EXPECT_TRUE(w.inputs()->errorLabel()->text().contains("'131.072'"));
    w.inputs()->batchField()->setFocus();  // elsewhere
    EXPECT_EQ(edit_of(context)->text(), "131.072");
    EXPECT_TRUE(w.inputs()->marks().isMarked(context));
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 4096u);
    // Esc in the field takes the text back.
    edit_of(context)->setFocus();
    QTest::keyClick(edit_of(context), Qt::Key_Escape);
    EXPECT_EQ(edit_of(context)->text(), "4k");
    EXPECT_FALSE(w.inputs()->marks().isMarked(context));
    EXPECT_TRUE(w.inputs()->errorLabel()->text().isEmpty());
    // Text typed and not entered: Esc takes it back too.
    type(edit_of(context), "64k", false);
    QTest::keyClick(edit_of(context), Qt::Key_Escape);
    EXPECT_EQ(edit_of(context)->text(), "4k");
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 4096u);
}

TEST(WindowState, CtrlZInTheKvHeadsBoxUndoesTheScenario) {
    ShownWindow sw;
    MainWindow& w = sw.w;
    QComboBox* kv = w.inputs()->kvHeadsField();
    type(kv->lineEdit(), "8");
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 8u);
    ASSERT_TRUE(kv->hasFocus());
    QTest::keySequence(QApplication::focusWidget(), QKeySequence::Undo);
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 32u);
    EXPECT_EQ(kv->lineEdit()->text(), "32");
    QTest::keySequence(QApplication::focusWidget(), QKeySequence::Redo);
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 8u);
    EXPECT_EQ(kv->lineEdit()->text(), "8");
    // "3" typed stays 3 (no completion to the list's 32): a divisor the calculator then refuses, said.
    type(kv->lineEdit(), "3");
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 3u);
    EXPECT_TRUE(w.inputs()->marks().isMarked(kv));
}

TEST(WindowState, AttentionEveryNGivesWhatTheConfigsIntervalGivesAndKeepsItsRow) {
    // Qwen3-Next's full_attention_interval = n: layer i attends when (i + 1) % n == 0. The window's "attention every
    // n" gives that layout for every n it takes, whatever was set before; 1 (no recurrent layer left, the row gone)
    // and more than the layers (no attention at all) are not offered.
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    QSpinBox* every = w.inputs()->attentionEveryField();
    ASSERT_TRUE(every->isVisibleTo(&w));
    EXPECT_EQ(every->minimum(), 2);
    EXPECT_EQ(every->maximum(), 48);
    const QByteArray config = testing::read_all(QStringLiteral(KVSCOPE_MODELS_DIR "/qwen3-next-80b-a3b.json"));
    ASSERT_FALSE(config.isEmpty());
    for (const int n : {2, 8, 3, 48, 5, 4}) {
        every->setValue(n);
        QByteArray edited = config;
        edited.replace("\"full_attention_interval\": 4",
                       QByteArray("\"full_attention_interval\": ") + QByteArray::number(n));
        ASSERT_TRUE(edited.contains("\"full_attention_interval\": " + QByteArray::number(n) + ","));
        auto imported = import_config(edited.toStdString(), "edited");
        ASSERT_TRUE(imported) << imported.error_text();
        EXPECT_EQ(w.model()->scenario().arch.layer_specs, imported->arch.layer_specs) << "every " << n;
        EXPECT_TRUE(every->isVisibleTo(&w)) << "every " << n;
        EXPECT_EQ(every->value(), n);
    }
    // Typed past the layers, the box keeps its range.
    type(every->findChild<QLineEdit*>(), "100");
    EXPECT_LE(w.model()->scenario().arch.count_layers(LayerKind::full), 48u);
    EXPECT_GE(w.model()->scenario().arch.count_layers(LayerKind::full), 1u);
    EXPECT_TRUE(every->isVisibleTo(&w));
}

TEST(WindowState, SequenceArrowsStepByOne) {
    ShownWindow sw;
    MainWindow& w = sw.w;
    BigSpinBox* batch = w.inputs()->batchField();
    batch->setFocus();
    QTest::keyClick(batch, Qt::Key_Up);
    QTest::keyClick(batch, Qt::Key_Up);
    EXPECT_EQ(w.model()->scenario().workload.batch, 3u);
    QTest::keyClick(batch, Qt::Key_Down);
    EXPECT_EQ(w.model()->scenario().workload.batch, 2u);
}

TEST(WindowState, TheProbesTableSaysWhoseItIsAfterAModelSwitch) {
    MainWindow w(testing::catalog(), false);
    w.show();
    w.model()->loadCatalogModel("llama-3-8b");
    w.model()->edit("small", [](Scenario& s) { s.workload.context_tokens = 128; });
    ProbeView* p = w.probe();
    QSignalSpy finished(p, &ProbeView::finished);
    p->runProbe();
    ASSERT_TRUE(finished.wait(120000));
    ASSERT_GT(p->results()->rowCount(), 0);
    EXPECT_FALSE(p->measuredForLabel()->isHidden());
    EXPECT_EQ(p->measuredForLabel()->text(), "Measured for Llama 3 8B at 128 tokens × 1 sequence, bf16 cache.");
    // Another model: the table stays, said to be Llama 3 8B's, with what to do.
    w.model()->loadCatalogModel("llama-3.2-1b");
    EXPECT_GT(p->results()->rowCount(), 0);
    EXPECT_TRUE(p->measuredForLabel()->text().startsWith("Measured for Llama 3 8B at 128 tokens"));
    EXPECT_TRUE(p->measuredForLabel()->text().endsWith("not the current inputs; run it again to measure them."));
    // Back to what it measured (undo): no longer flagged.
    w.model()->undoStack()->undo();
    EXPECT_TRUE(p->measuredForLabel()->text().endsWith("bf16 cache."));
}

TEST(WindowState, EveryResultsTabSaysWhoseFiguresItShowsWhileTheInputsNeedAttention) {
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->loadCatalogModel("llama-3-8b");
    w.deployment()->enableBox()->setChecked(true);
    ASSERT_TRUE(w.model()->results().fit && w.model()->results().fit->fits);
    EXPECT_FALSE(w.deployment()->staleLabel()->isVisibleTo(&w));
    EXPECT_FALSE(w.learn()->staleLabel()->isVisibleTo(&w));
    // Another model, then an input the calculator refuses: the figures are Llama 3 8B's.
    w.model()->loadCatalogModel("llama-3.2-1b");
    type(w.inputs()->kvHeadsField()->lineEdit(), "5");
    ASSERT_FALSE(w.model()->resultsAreCurrent());
    const QString whose = "last valid results, of Llama 3.2 1B at 8k tokens × 1 sequence";
    for (int tab = 0; tab < w.tabs()->count(); ++tab) {
        if (tab == MainWindow::ProbeTab) continue;  // its own measurements say whose they are (above)
        w.tabs()->setCurrentIndex(tab);
        bool said = false;
        for (StaleNote* note : w.tabs()->widget(tab)->findChildren<StaleNote*>())
            said |= note->isVisibleTo(&w) && note->text().contains(whose) && note->text().contains("KV heads (5)");
        EXPECT_TRUE(said) << "tab " << w.tabs()->tabText(tab).toStdString();
    }
    // No green "Fits" for what is not these inputs.
    EXPECT_TRUE(w.deployment()->verdictLabel()->text().startsWith("Last valid inputs: Fits"))
        << w.deployment()->verdictLabel()->text().toStdString();
    EXPECT_FALSE(w.deployment()->verdictLabel()->styleSheet().contains("#27ae60"));
    // Mended: every note goes.
    type(w.inputs()->kvHeadsField()->lineEdit(), "4");
    ASSERT_TRUE(w.model()->resultsAreCurrent());
    for (StaleNote* note : w.findChildren<StaleNote*>()) EXPECT_TRUE(note->isHidden());
    EXPECT_TRUE(w.deployment()->verdictLabel()->text().startsWith("Fits"));
}

TEST(WindowState, TheWindowAnswersWhatTheCliAnswersAndLowersTheChartsEndInstead) {
    // MiniMax-M1 for 10^8 sequences: kvscope-cli kv answers; the window did mark Context red for the chart's end at
    // the model's 10M tokens, which nobody typed.
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->loadCatalogModel("minimax-m1");
    type(edit_of(w.inputs()->batchField()), "1e8");
    EXPECT_EQ(w.model()->scenario().workload.batch, 100'000'000u);
    EXPECT_TRUE(w.model()->resultsAreCurrent()) << join_errors(w.model()->errors());
    EXPECT_FALSE(w.inputs()->marks().isMarked(w.inputs()->contextField()->spinBox()));
    const auto* notes = w.findChild<QLabel*>("chartNotes");
    ASSERT_NE(notes, nullptr);
    EXPECT_FALSE(notes->isHidden());
    EXPECT_TRUE(notes->text().startsWith("the chart ends at ")) << notes->text().toStdString();
    // A config that says max_position_embeddings 10^15, imported: answered, its chart lowered.
    QTemporaryDir dir;
    QByteArray config = testing::read_all(QStringLiteral(KVSCOPE_MODELS_DIR "/llama-3-8b.json"));
    ASSERT_TRUE(config.contains("\"max_position_embeddings\": 8192"));
    config.replace("\"max_position_embeddings\": 8192", "\"max_position_embeddings\": 1e15");
    const QString path = testing::write_config(dir, "far", config);
    ASSERT_TRUE(w.importModelFile(path)) << w.messages()->text().toStdString();
    EXPECT_TRUE(w.model()->resultsAreCurrent()) << join_errors(w.model()->errors());
    EXPECT_TRUE(notes->text().contains("not at 1,000,000,000,000,000")) << notes->text().toStdString();
    EXPECT_TRUE(w.exportJsonTo(dir.filePath("far.json"))) << w.messages()->text().toStdString();
}

TEST(WindowState, ThePercentOfMhaIsRoundedOneWayEverywhere) {
    // Qwen3-Next's MQA is 6.25% of MHA: the window, its copied table and the report say 6.2%, as kvscope-cli compare
    // does (a tie to the even digit), never 6.3%.
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    const ComparisonModel* c = w.overview()->comparison();
    bool found = false;
    for (int row = 0; row < c->rowCount(); ++row)
        if (c->data(c->index(row, ComparisonModel::Layout), Qt::DisplayRole).toString() == "MQA") {
            EXPECT_EQ(c->data(c->index(row, ComparisonModel::PercentOfMha), Qt::DisplayRole).toString(), "6.2%");
            found = true;
        }
    EXPECT_TRUE(found);
    EXPECT_TRUE(c->toTsv().contains("\t6.2%\t")) << c->toTsv().toStdString();
    EXPECT_EQ(format_percent(6.25), "6.2%");
    EXPECT_EQ(format_percent(3.125), "3.1%");
    EXPECT_EQ(format_percent(12.5), "12.5%");
}

TEST(WindowState, TheStopwatchSaysWhenItTimesFewerTokensThanAsked) {
    // Learn › Cost of recomputing starts at 4,096 tokens; the stopwatch times at most 256. The button says 256, and
    // the run says that 4,096 were asked and why it times fewer.
    ScenarioModel model(catalog());
    RecomputeView view(&model);
    EXPECT_EQ(view.tokensField()->value(), 4096);
    EXPECT_EQ(view.runButton()->text(), "Run the &stopwatch (256 tokens)");
    int asked = 0;
    QObject::connect(&view, &RecomputeView::stopwatchRequested, &view, [&](int tokens) {
        asked = tokens;
        view.stopwatchStarted(tokens);  // as the runner says when it starts
    });
    view.runButton()->click();
    EXPECT_EQ(asked, 256);
    EXPECT_TRUE(view.measuredLabel()->text().startsWith("Stopwatch running on 256 tokens"));
    EXPECT_TRUE(view.measuredLabel()->text().contains("4,096 asked: the stopwatch times at most 256"))
        << view.measuredLabel()->text().toStdString();
    view.probeIdle();  // that run is over
    view.tokensField()->setValue(100);
    EXPECT_EQ(view.runButton()->text(), "Run the &stopwatch (100 tokens)");
    view.runButton()->click();
    EXPECT_EQ(asked, 100);
    // A run over: the tokens field takes the count measured, and the button says it too.
    probe::StopwatchReport report;
    report.status = probe::Status::ok;
    report.cached_ms.assign(160, 0.5);
    report.uncached_ms.assign(160, 5.0);
    view.setStopwatch(report);
    EXPECT_EQ(view.tokensField()->value(), 160);
    EXPECT_EQ(view.runButton()->text(), "Run the &stopwatch (160 tokens)");
    EXPECT_FALSE(view.measuredLabel()->text().contains("asked")) << view.measuredLabel()->text().toStdString();
}

TEST(WindowState, TheStopwatchChartsTicksHaveTheirUnitAndItsTitleFits) {
    MainWindow w(catalog(), false);
    w.resize(1024, 640);
    w.show();
    w.tabs()->setCurrentIndex(MainWindow::ProbeTab);
    QValueAxis* y = nullptr;
    for (QAbstractAxis* axis : w.probe()->cachedSeries()->attachedAxes())
        if (axis->orientation() == Qt::Vertical) y = qobject_cast<QValueAxis*>(axis);
    ASSERT_NE(y, nullptr);
    EXPECT_TRUE(y->labelFormat().endsWith(" ms")) << y->labelFormat().toStdString();
    EXPECT_EQ(y->titleText(), "time so far");
}

TEST(WindowState, TheDeploymentFormBeforeItIsTickedShowsWhatTickingItStarts) {
    // Not 0.01 (the spin box's least), fp32 (the list's first), two "Tokens per step" rows and a checkbox with no
    // text: the form shows the deployment ticking it starts, greyed out until then.
    MainWindow w(catalog(), false);
    w.resize(1280, 800);
    w.show();
    w.tabs()->setCurrentIndex(MainWindow::DeploymentTab);
    w.model()->loadCatalogModel("gpt-oss-20b");
    DeploymentView* d = w.deployment();
    ASSERT_FALSE(d->enableBox()->isChecked());
    const auto* fraction = d->findChild<QDoubleSpinBox*>();
    ASSERT_NE(fraction, nullptr);
    EXPECT_DOUBLE_EQ(fraction->value(), 0.90);
    EXPECT_EQ(d->gpuField()->currentText(), "NVIDIA H100 SXM 80GB");
    EXPECT_TRUE(d->weightsField()->currentText().startsWith("as quantized (mxfp4)"))
        << d->weightsField()->currentText().toStdString();
    EXPECT_TRUE(d->vllmTokensField()->isVisibleTo(d));
    EXPECT_FALSE(d->trtllmTokensField()->isVisibleTo(d));
    // Greyed out, every one: text typed in a field of no deployment would go nowhere (vLLM's were editable).
    for (const QWidget* field :
         {static_cast<const QWidget*>(d->vllmTokensField()), static_cast<const QWidget*>(d->vllmSequencesField()),
          static_cast<const QWidget*>(d->memoryField()), static_cast<const QWidget*>(fraction)})
        EXPECT_FALSE(field->isEnabled()) << field->accessibleName().toStdString();
    for (QCheckBox* box : d->findChildren<QCheckBox*>())
        if (box->isVisibleTo(d)) EXPECT_FALSE(box->text().isEmpty());
    // Ticked: the same values, now the deployment's.
    d->enableBox()->setChecked(true);
    ASSERT_TRUE(w.model()->scenario().deployment);
    EXPECT_DOUBLE_EQ(fraction->value(), w.model()->scenario().deployment->fraction);
}

TEST(WindowState, TextTypedForAnotherEnginesSettingGoesWithItsRow) {
    // 'abc' typed in vLLM's Tokens per step, not entered; the engine changed to TensorRT-LLM (the wheel over the box
    // changes it without taking the focus), so the row goes; Undo brings vLLM back: the field shows the scenario's
    // value, not a stray 'abc' that nothing marks.
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.tabs()->setCurrentIndex(MainWindow::DeploymentTab);
    DeploymentView* d = w.deployment();
    d->enableBox()->setChecked(true);
    type(d->vllmTokensField(), "abc", false);
    QComboBox* engine = d->engineField();
    const int trt = engine->findData(static_cast<int>(Engine::tensorrt_llm));
    engine->setCurrentIndex(trt);
    emit engine->activated(trt);
    ASSERT_EQ(w.model()->scenario().deployment->engine, Engine::tensorrt_llm);
    action_with(w, QKeySequence::Undo)->trigger();
    ASSERT_EQ(w.model()->scenario().deployment->engine, Engine::vllm);
    EXPECT_EQ(d->vllmTokensField()->text(), "");
    EXPECT_TRUE(d->unaccepted().isEmpty());
    QTemporaryDir dir;
    EXPECT_TRUE(w.saveScenarioFile(dir.filePath("s.kvscope.json"))) << w.messages()->text().toStdString();
}

TEST(WindowState, AnExportOfInputsThatNeedAttentionIsRefusedBeforeAnyDialog) {
    // The export used to ask where (and the PNG's size) before saying "Nothing exported"; the probe measured the last
    // valid inputs, which may be another model's.
    ShownWindow sw;
    MainWindow& w = sw.w;
    type(w.inputs()->kvHeadsField()->lineEdit(), "5");
    ASSERT_FALSE(w.model()->resultsAreCurrent());
    bool dialog = false;
    QTimer watch;
    QObject::connect(&watch, &QTimer::timeout, [&] {
        if (QWidget* modal = QApplication::activeModalWidget()) {
            dialog = true;
            modal->close();
        }
    });
    watch.start(50);
    action_with(w, QKeySequence(QObject::tr("Ctrl+E")))->trigger();
    EXPECT_FALSE(dialog);
    EXPECT_TRUE(w.messages()->text().startsWith("Nothing exported: the inputs need attention"))
        << w.messages()->text().toStdString();
    w.probe()->runProbe();
    EXPECT_FALSE(w.probe()->running());
    EXPECT_TRUE(w.probe()->statusLabel()->text().startsWith("Fix the marked inputs first"));
}

TEST(WindowState, EscTakesBackWhatWasTypedInEveryKindOfField) {
    ShownWindow sw;
    MainWindow& w = sw.w;
    // KV heads: typed and not entered, then Esc; emptied, which a save refuses, then Esc.
    QLineEdit* kv = w.inputs()->kvHeadsField()->lineEdit();
    type(kv, "16", false);
    QTest::keyClick(kv, Qt::Key_Escape);
    EXPECT_EQ(kv->text(), "32");
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 32u);
    kv->setFocus();
    kv->selectAll();
    QTest::keyClick(kv, Qt::Key_Backspace);
    ASSERT_EQ(kv->text(), "");
    QTemporaryDir dir;
    EXPECT_FALSE(w.saveScenarioFile(dir.filePath("s.kvscope.json")));
    ASSERT_FALSE(w.inputs()->unaccepted().isEmpty());
    kv->setFocus();
    QTest::keyClick(kv, Qt::Key_Escape);
    EXPECT_EQ(kv->text(), "32");
    EXPECT_TRUE(w.inputs()->unaccepted().isEmpty());
    // A Deployment field: refused memory, then Esc.
    w.tabs()->setCurrentIndex(MainWindow::DeploymentTab);
    w.deployment()->enableBox()->setChecked(true);
    QLineEdit* memory = w.deployment()->memoryField();
    type(memory, "lots");
    ASSERT_FALSE(w.deployment()->unaccepted().isEmpty());
    QTest::keyClick(memory, Qt::Key_Escape);
    EXPECT_EQ(memory->text(), "79.6 GiB");
    EXPECT_TRUE(w.deployment()->unaccepted().isEmpty());
}

TEST(WindowState, AUnifiedMemoryComputersRaisedShareStaysThatMachine) {
    // An M4 Max 128GB's GPU memory typed as 110 GiB (the wired limit raised): still that machine, its name saying
    // the share, the 128 GiB kept; 200 GiB is more than the machine and the fit says so.
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->loadCatalogModel("llama-3-8b");
    w.model()->edit("test", [](Scenario& s) {
        Deployment d;
        d.gpu = *catalog().find_gpu("m4-max-128gb");
        d.engine = Engine::llama_cpp;
        d.fraction = default_fraction(Engine::llama_cpp);
        s.deployment = d;
    });
    w.tabs()->setCurrentIndex(MainWindow::DeploymentTab);
    type(w.deployment()->memoryField(), "110 GiB");
    const GpuSpec& g = w.model()->scenario().deployment->gpu;
    EXPECT_EQ(g.id, "m4-max-128gb");
    EXPECT_EQ(g.memory_bytes, 110ull << 30);
    EXPECT_EQ(g.unified_memory_bytes, 128ull << 30);
    EXPECT_EQ(g.name, "Apple M4 Max 128GB (16-core CPU, 40-core GPU) with 110 GiB");
    type(w.deployment()->memoryField(), "200 GiB");
    EXPECT_FALSE(fit(w.model()->scenario().arch, KvDtype::bf16, w.model()->scenario().workload, {},
                     *w.model()->scenario().deployment)
                     .ok());
}

TEST(WindowState, AHiddenFieldKeepsNothingThatWouldStopASave) {
    // "abc" refused in Gemma 3 4B's sliding window; then Llama 3 8B, which has none: the row goes, and so does the
    // refusal (it named a field nobody could see, and stopped every save).
    ShownWindow sw;
    MainWindow& w = sw.w;
    w.model()->loadCatalogModel("gemma-3-4b");
    type(edit_of(w.inputs()->windowField()), "abc");
    ASSERT_FALSE(w.inputs()->unaccepted().isEmpty());
    w.model()->loadCatalogModel("llama-3-8b");
    EXPECT_TRUE(w.inputs()->windowField()->isHidden() || !w.inputs()->windowField()->isVisibleTo(&w));
    EXPECT_TRUE(w.inputs()->unaccepted().isEmpty());
    EXPECT_FALSE(w.inputs()->errorLabel()->isVisibleTo(&w));
    QTemporaryDir dir;
    EXPECT_TRUE(w.saveScenarioFile(dir.filePath("s.kvscope.json"))) << w.messages()->text().toStdString();
    // The model back (undo): its window shows the scenario's value.
    w.model()->undoStack()->undo();
    EXPECT_EQ(edit_of(w.inputs()->windowField())->text(), "1k");
}

TEST(WindowState, AnUndoWithTheFocusInThePickerNamesTheModelItPutsBack) {
    ShownWindow sw;
    MainWindow& w = sw.w;
    QComboBox* picker = w.inputs()->modelPicker();
    type(picker->lineEdit(), "llama-3-8b");
    ASSERT_EQ(w.model()->scenario().model_id, "llama-3-8b");
    ASSERT_TRUE(picker->hasFocus() || picker->lineEdit()->hasFocus());
    QTest::keySequence(QApplication::focusWidget(), QKeySequence::Undo);
    EXPECT_EQ(w.model()->scenario().model_id, "kvscope-teaching-32l");
    EXPECT_TRUE(picker->lineEdit()->text().startsWith("Teaching model")) << picker->lineEdit()->text().toStdString();
}

TEST(WindowState, CopiesOfResultsOfInputsThatNeedAttentionAreRefused) {
    ShownWindow sw;
    MainWindow& w = sw.w;
    type(w.inputs()->kvHeadsField()->lineEdit(), "5");
    QApplication::clipboard()->setText("before");
    action_with(w, QKeySequence(QObject::tr("Ctrl+Alt+C")))->trigger();
    EXPECT_EQ(QApplication::clipboard()->text(), "before");
    EXPECT_TRUE(w.messages()->text().startsWith("Nothing copied: the inputs need attention"))
        << w.messages()->text().toStdString();
}

TEST(WindowState, ThePlannerLeavesOutLayoutsThatAreNoChoiceButTheOneInUse) {
    // Llama 3 70B, 16 sequences of 32k on H100s: TP 1 x PP 3 x 3 replicas (9 GPUs) decodes slower in all than TP 8
    // (8 GPUs): not listed, and the caption says how many are left out, beside the planner's scope.
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("plan", [](Scenario& s) {
        s.workload.context_tokens = 32768;
        s.workload.batch = 16;
    });
    w.resize(1280, 800);
    w.show();
    w.tabs()->setCurrentIndex(MainWindow::DeploymentTab);
    QApplication::processEvents();
    QTableWidget* table = w.deployment()->plan()->table();
    const auto listed = [table](const QString& layout) {
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, 1)->text().startsWith(layout)) return true;
        return false;
    };
    EXPECT_FALSE(listed("TP 1 × PP 3 × 3 replicas"));
    EXPECT_TRUE(listed("TP 8 × PP 1"));
    const QString caption = w.deployment()->plan()->caption()->text();
    EXPECT_TRUE(caption.contains("Tensor parallel within a node of 8 GPUs")) << caption.toStdString();
    EXPECT_TRUE(caption.contains("layouts left out: each takes more GPUs")) << caption.toStdString();
    // In use, it is listed all the same (bold, "in use").
    w.model()->edit("pp 3", [](Scenario& s) {
        s.parallel = {1, 3};
        s.deployment->gpu_count = 3;
    });
    QApplication::processEvents();
    EXPECT_TRUE(listed("TP 1 × PP 3 × 3 replicas  (in use)"));
}

TEST(WindowState, ANoticeAboutAnotherModelGoesWhenTheModelChanges) {
    // DeepSeek-V3 replaces the lesson's fp16 with its own bf16 and says so; Qwen3-Next (bf16 too) replaces nothing,
    // so the line must not keep naming DeepSeek-V3 under Qwen3-Next's figures.
    MainWindow w(testing::catalog(), false);
    w.show();
    w.model()->loadCatalogModel("deepseek-v3");
    EXPECT_TRUE(w.statusBar()->currentMessage().contains("DeepSeek-V3's own bf16"))
        << w.statusBar()->currentMessage().toStdString();
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    EXPECT_FALSE(w.statusBar()->currentMessage().contains("DeepSeek")) << w.statusBar()->currentMessage().toStdString();
    // An edit of the same model keeps a notice about it.
    w.model()->loadCatalogModel("gpt2");  // no torch_dtype: fp16, in place of Qwen3-Next's bf16
    const QString notice = w.statusBar()->currentMessage();
    EXPECT_TRUE(notice.contains("own fp16")) << notice.toStdString();
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 3; });
    EXPECT_EQ(w.statusBar()->currentMessage(), notice);
    // Its advice taken ("choose another in KV dtype"), it goes: the field beside it says fp8 now.
    w.model()->edit("format", [](Scenario& s) { s.kv_dtype = KvDtype::fp8_e4m3; });
    EXPECT_FALSE(w.statusBar()->currentMessage().contains("own fp16")) << w.statusBar()->currentMessage().toStdString();
    // A layout the plan set is said until it is undone.
    w.model()->edit("layout", [](Scenario& s) { s.parallel.tp = 2; });
    emit w.model()->notice("TP 2 × PP 1 set: 2 GPUs.");
    EXPECT_EQ(w.statusBar()->currentMessage(), "TP 2 × PP 1 set: 2 GPUs.");
    w.model()->undoStack()->undo();
    EXPECT_TRUE(w.statusBar()->currentMessage().isEmpty()) << w.statusBar()->currentMessage().toStdString();
}

}  // namespace
}  // namespace kvscope::ui
