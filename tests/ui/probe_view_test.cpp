// The Probe tab: runs off the GUI thread, shows predicted against measured, a live
// stopwatch chart with both texts, and stops on Cancel.
#include <QApplication>
#include <QGroupBox>
#include <QLabel>
#include <QLineSeries>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>

#include <gtest/gtest.h>

#include <filesystem>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/measured_step.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/probe_runner.h"
#include "kvscope/ui/probe_view.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

QString cell_of(QTableWidget* t, const QString& measure) {
    for (int r = 0; r < t->rowCount(); ++r)
        if (t->item(r, 0)->text().startsWith(measure)) return t->item(r, 1)->text();
    return {};
}

bool cuda_answers() { return probe::make_backend("cuda").ok(); }

TEST(ProbeView, ChecksTheCurrentScenariosCacheOnThisMachine) {
    MainWindow w(testing::catalog(), false);
    w.model()->edit("small", [](Scenario& s) { s.workload.context_tokens = 256; });  // 128 MiB in fp16
    ProbeView* p = w.probe();
    p->refreshDevices();
    EXPECT_EQ(p->banner()->isVisibleTo(p), !cuda_answers());
    QSignalSpy finished(p, &ProbeView::finished);
    p->runProbe();
    EXPECT_TRUE(p->running());
    ASSERT_TRUE(finished.wait(120000));
    EXPECT_FALSE(p->running());
    EXPECT_TRUE(cell_of(p->results(), "Predicted").startsWith("128 MiB (134,217,728 B)"))
        << p->statusLabel()->text().toStdString();
    EXPECT_TRUE(cell_of(p->results(), "Requested").endsWith("= predicted"));
    EXPECT_FALSE(cell_of(p->results(), "Read ceiling").isEmpty());
    // Where the granularity comes from, so a reader knows it was asked, not assumed.
    EXPECT_TRUE(cell_of(p->results(), "Measured − predicted")
                    .contains(cuda_answers() ? "from the driver" : "from the system's page size"))
        << cell_of(p->results(), "Measured − predicted").toStdString();
    EXPECT_TRUE(cell_of(p->results(), "Kernel").contains(cuda_answers() ? "split-K" : "flash-decoding order"));
    EXPECT_TRUE(p->statusLabel()->text().contains("measured read bandwidth")) << p->statusLabel()->text().toStdString();
    EXPECT_FALSE(p->statusLabel()->text().contains("bound by arithmetic"));  // the teaching model's MHA reads memory

    // A latent read by all 128 heads: the tab says the fraction measures the kernel, as the CLI does.
    w.model()->loadCatalogModel("deepseek-v3");
    w.model()->edit("small", [](Scenario& s) { s.workload.context_tokens = 256; });
    p->runProbe();
    ASSERT_TRUE(finished.wait(120000));
    EXPECT_TRUE(
        p->statusLabel()->text().contains(". Each cached row is read by 128 query heads, so this step is bound "
                                          "by arithmetic"))
        << p->statusLabel()->text().toStdString();
}

TEST(ProbeView, StopwatchDrawsBothCurvesAndShowsTheTexts) {
    MainWindow w(testing::catalog(), false);
    ProbeView* p = w.probe();
    p->tokensField()->setValue(16);
    QSignalSpy finished(p, &ProbeView::finished);
    p->runStopwatch();
    ASSERT_TRUE(finished.wait(120000));
    QApplication::processEvents();  // the last queued steps
    ASSERT_EQ(p->cachedSeries()->count(), 16);
    ASSERT_EQ(p->uncachedSeries()->count(), 16);
    EXPECT_GT(p->uncachedSeries()->points().back().y(), p->cachedSeries()->points().back().y());
    EXPECT_TRUE(p->textsLabel()->text().contains("Identical token for token")) << p->textsLabel()->text().toStdString();
}

TEST(ProbeView, CancelStopsARunAndSaysSo) {
    MainWindow w(testing::catalog(), false);
    ProbeView* p = w.probe();
    p->tokensField()->setValue(2048);
    QSignalSpy finished(p, &ProbeView::finished);
    p->runStopwatch();
    p->cancel();
    ASSERT_TRUE(finished.wait(120000));
    QApplication::processEvents();
    EXPECT_TRUE(p->statusLabel()->text().startsWith("cancelled")) << p->statusLabel()->text().toStdString();
}

// A small model, so a step is quick and checked in float64.
void small_model(Scenario& s) {
    s.arch.layers = 2;
    s.arch.hidden_size = 256;
    s.arch.intermediate_size = 512;
    s.arch.vocab_size = 1000;
    s.arch.query_heads = 8;
    s.arch.kv_heads = 2;
    s.arch.head_dim_k = s.arch.head_dim_v = 32;
    s.arch.layer_specs.clear();
    s.workload.context_tokens = 128;
}

// Times a decode step from the Probe tab, waiting for it to end.
bool run_step(ProbeView* p) {
    QSignalSpy finished(p, &ProbeView::finished);
    p->runStep();
    if (!finished.wait(120000)) return false;
    QApplication::processEvents();
    return true;
}

TEST(ProbeView, ADecodeStepOfTheModelBesideTheCalculatorsFloor) {
    MainWindow w(testing::catalog(), false);
    w.model()->edit("shape", [](Scenario& s) {
        small_model(s);
        s.workload.batch = 2;
    });
    ASSERT_TRUE(w.model()->hasResults()) << join_errors(w.model()->errors());
    ProbeView* p = w.probe();
    ASSERT_TRUE(run_step(p));
    QTableWidget* t = p->results();
    EXPECT_EQ(cell_of(t, "Layers run"), "all 2");
    EXPECT_TRUE(cell_of(t, "Decode step (measured)").contains("tokens/s per sequence"))
        << p->statusLabel()->text().toStdString();
    EXPECT_TRUE(cell_of(t, "Calculator's floor").contains("GB/s, measured here"));
    EXPECT_TRUE(cell_of(t, "Measured ÷ floor").endsWith("×"));
    EXPECT_TRUE(cell_of(t, "Max relative error").contains("against float64"))
        << cell_of(t, "Max relative error").toStdString();
    EXPECT_TRUE(p->statusLabel()->text().contains("calculator's floor")) << p->statusLabel()->text().toStdString();
}

// The step's "in all" is its rate times the sequences it was measured for, not those the inputs hold when it ends.
TEST(ProbeView, AStepsRateInAllIsForTheSequencesItMeasured) {
    MainWindow w(testing::catalog(), false);
    w.model()->edit("shape", [](Scenario& s) {
        small_model(s);
        s.workload.batch = 2;
    });
    ProbeView* p = w.probe();
    QSignalSpy finished(p, &ProbeView::finished);
    p->runStep();
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 8; });  // while it runs
    ASSERT_TRUE(finished.wait(120000));
    QApplication::processEvents();
    const QString step = cell_of(p->results(), "Decode step (measured)");
    const QRegularExpression rates(R"(→ ([0-9.]+) tokens/s per sequence, ([0-9.]+) in all)");
    const QRegularExpressionMatch m = rates.match(step);
    ASSERT_TRUE(m.hasMatch()) << step.toStdString();
    const double each = m.captured(1).toDouble(), all = m.captured(2).toDouble();
    EXPECT_NEAR(all, 2 * each, 0.15) << step.toStdString();  // one decimal each
    EXPECT_TRUE(p->measuredForLabel()->text().contains("× 2 sequences")) << p->measuredForLabel()->text().toStdString();
}

TEST(ProbeView, ACheckpointStepsInItsWeightFormatOrSaysWhichItUsesInstead) {
    // With no deployment the step takes the checkpoint's own weight format. fp8 weights are multiplied as they
    // are stored; a GGUF checkpoint's q4_0 cannot be, so the step runs bf16 weights of the same shapes and says
    // so, instead of asking for an option the window does not have.
    for (const KvDtype weights : {KvDtype::fp8_e4m3, KvDtype::q4_0}) {
        const std::string name(to_string(weights));
        SCOPED_TRACE(name);
        MainWindow w(testing::catalog(), false);
        Scenario s = w.model()->scenario();
        small_model(s);
        s.model_weights = ModelWeights{weights};
        w.model()->replace(s, QString::fromStdString("a " + name + " checkpoint"), {}, "import");
        ASSERT_EQ(w.model()->modelWeightDtype(), weights);
        ASSERT_TRUE(run_step(w.probe()));
        const QString status = w.probe()->statusLabel()->text();
        const QString used = cell_of(w.probe()->results(), "Weights");
        EXPECT_EQ(cell_of(w.probe()->results(), "Layers run"), "all 2");
        if (weights == KvDtype::fp8_e4m3) {
            EXPECT_FALSE(status.contains("instead of")) << status.toStdString();
            EXPECT_TRUE(used.contains("of fp8_e4m3 read")) << used.toStdString();
        } else {
            EXPECT_TRUE(status.startsWith(
                "The step multiplies fp32, fp16, bf16 or fp8_e4m3 weights; this run uses bf16 instead of q4_0."))
                << status.toStdString();
            EXPECT_TRUE(used.contains("of bf16 read")) << used.toStdString();
        }
    }
}

TEST(ProbeView, ADeviceThatCannotMultiplyFp8WeightsStepsInBf16AndSaysWhy) {
    // A GPU before compute capability 8.9 refuses fp8 weights (here a stand-in plugin that says so, as
    // cuda_step.cu does, and is otherwise the CPU backend): the tab runs the same step in bf16 and says why,
    // rather than ending on an option the window does not have.
    setenv("KVSCOPE_PLUGIN_DIR", KVSCOPE_FAKE_PLUGIN_REFUSES_FP8, 1);
    struct Unset {
        ~Unset() { unsetenv("KVSCOPE_PLUGIN_DIR"); }
    } unset;
    ASSERT_TRUE(probe::make_backend("cuda").ok());
    MainWindow w(testing::catalog(), false);
    Scenario s = w.model()->scenario();
    small_model(s);
    s.model_weights = ModelWeights{KvDtype::fp8_e4m3};
    w.model()->replace(s, "an fp8 checkpoint", {}, "import");
    ASSERT_TRUE(run_step(w.probe()));  // "auto": the stand-in GPU answers, so it is chosen
    const QString status = w.probe()->statusLabel()->text();
    EXPECT_TRUE(
        status.startsWith("This device cannot multiply fp8_e4m3 weights (weight_dtype: fp8_e4m3 weights "
                          "need FP8 tensor cores"))
        << status.toStdString();
    EXPECT_TRUE(status.contains("this run uses bf16 instead.")) << status.toStdString();
    EXPECT_EQ(cell_of(w.probe()->results(), "Device"), "cuda — stand-in GPU without FP8 tensor cores");
    const QString used = cell_of(w.probe()->results(), "Weights");
    EXPECT_TRUE(used.contains("of bf16 read")) << used.toStdString();
}

TEST(ProbeView, AStepIsKeptAndTheDeploymentTabOfEveryWindowShowsItOnItsGpu) {
    // A user folder with a space and accents; two windows on it.
    const auto folder = std::filesystem::temp_directory_path() /
                        ("kvscope fenêtres " + std::to_string(QCoreApplication::applicationPid()));
    std::vector<std::string> problems;
    const Catalog catalog = Catalog::with_user_folder(folder.string(), problems);
    MainWindow w(catalog, false);
    w.model()->edit("shape", small_model);
    w.deployment()->enableBox()->setChecked(true);  // one H100 SXM
    ASSERT_TRUE(w.model()->hasResults()) << join_errors(w.model()->errors());
    ProbeView* p = w.probe();
    ASSERT_TRUE(run_step(p));
    const std::string store = (folder / "measured-steps.json").string();
    EXPECT_TRUE(cell_of(p->results(), "Kept in").startsWith(QString::fromStdString(store)))
        << cell_of(p->results(), "Kept in").toStdString();
    auto kept = read_measured_steps(store);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].backend, "cpu");
    // Measured on the CPU: not the deployment's GPU, so not shown there.
    EXPECT_FALSE(w.deployment()->figuresLabel()->text().contains("Decode measured"));

    // The same step kept as a CUDA backend on an H100 would keep it (here by another program): the
    // Deployment tab shows it, in this window and in a second one.
    kept[0].gpu_id = "h100-sxm";
    kept[0].device = "NVIDIA H100 80GB HBM3";
    std::filesystem::remove(store);
    ASSERT_TRUE(remember_measured_step(store, kept[0]).ok());
    w.model()->measuredStepsChanged();
    const QString figures = w.deployment()->figuresLabel()->text();
    EXPECT_TRUE(figures.contains("Decode measured: ")) << figures.toStdString();
    EXPECT_TRUE(figures.contains("(probe --step on NVIDIA H100 80GB HBM3, ")) << figures.toStdString();
    MainWindow second(catalog, false);
    second.model()->restore(w.model()->state());
    EXPECT_TRUE(second.deployment()->figuresLabel()->text().contains("Decode measured"))
        << second.deployment()->figuresLabel()->text().toStdString();
    // kvscope-cli keeping the step again, measured slower: both windows show it as the file changes, with no edit.
    kept[0].step_ms = 987.5;
    ASSERT_TRUE(remember_measured_step(store, kept[0]).ok());
    for (MainWindow* window : {&w, &second}) {
        const QLabel* label = window->deployment()->figuresLabel();
        EXPECT_TRUE(QTest::qWaitFor([label] { return label->text().contains("987.5 ms per step"); }, 10000))
            << label->text().toStdString();
    }
    // A first run: the window opens before its data folder exists, and still sees the step the CLI keeps there.
    const auto fresh = folder / "first run" / "kvscope";
    const Catalog fresh_catalog = Catalog::with_user_folder(fresh.string(), problems);
    MainWindow third(fresh_catalog, false);
    third.model()->restore(w.model()->state());
    ASSERT_FALSE(std::filesystem::exists(fresh));
    ASSERT_TRUE(remember_measured_step((fresh / "measured-steps.json").string(), kept[0]).ok());
    const QLabel* third_label = third.deployment()->figuresLabel();
    EXPECT_TRUE(QTest::qWaitFor([third_label] { return third_label->text().contains("987.5 ms per step"); }, 10000))
        << third_label->text().toStdString();
    // Another batch is another step: not shown.
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 3; });
    EXPECT_FALSE(w.deployment()->figuresLabel()->text().contains("Decode measured"));
    std::filesystem::remove_all(folder);
}

TEST(ProbeRunner, RunsOneAtATimeForWhoeverAsksWithoutAView) {
    // The runner the Learn tab and the Probe tab share: no widget needed, one run at a time, the
    // stopwatch's steps and report as signals, and a backend that cannot open said in words.
    ProbeRunner runner;
    runner.setBackend("cpu");
    QSignalSpy started(&runner, &ProbeRunner::stopwatchStarted);
    QSignalSpy steps(&runner, &ProbeRunner::stopwatchStep);
    QSignalSpy report(&runner, &ProbeRunner::stopwatchFinished);
    QSignalSpy finished(&runner, &ProbeRunner::finished);
    ASSERT_TRUE(runner.stopwatch(8));
    EXPECT_TRUE(runner.running());
    EXPECT_FALSE(runner.stopwatch(8));  // refused while the first runs
    ASSERT_TRUE(finished.wait(120000));
    EXPECT_FALSE(runner.running());
    ASSERT_EQ(started.count(), 1);
    EXPECT_EQ(started.front().front().toInt(), 8);
    EXPECT_EQ(steps.count(), 16);  // 8 tokens with the cache, 8 recomputing
    ASSERT_EQ(report.count(), 1);
    EXPECT_EQ(report.front().front().value<probe::StopwatchReport>().status, probe::Status::ok);

    runner.setBackend("no-such-backend");
    QSignalSpy failed(&runner, &ProbeRunner::failed);
    ASSERT_TRUE(runner.stopwatch(8));
    ASSERT_TRUE(finished.wait(120000));
    ASSERT_EQ(failed.count(), 1);
    EXPECT_TRUE(failed.front().front().toString().contains("no-such-backend"))
        << failed.front().front().toString().toStdString();
}

TEST(ProbeView, ACacheTooLargeForThisMachineIsAMessage) {
    MainWindow w(testing::catalog(), false);
    w.model()->loadCatalogModel("llama-3.1-405b");
    w.model()->edit("huge", [](Scenario& s) {
        s.workload.context_tokens = 131072;
        s.workload.batch = 64;
    });
    ProbeView* p = w.probe();
    QSignalSpy finished(p, &ProbeView::finished);
    p->runProbe();
    ASSERT_TRUE(finished.wait(120000));
    QApplication::processEvents();
    EXPECT_TRUE(p->statusLabel()->text().contains("out_of_memory")) << p->statusLabel()->text().toStdString();
    EXPECT_EQ(p->results()->rowCount(), 0);
}

}  // namespace
}  // namespace kvscope::ui
