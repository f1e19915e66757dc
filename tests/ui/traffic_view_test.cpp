// The Traffic tab: what it shows is what kvscope-cli simulate says for the same inputs; a run in the background can be
// cancelled and leaves the figures before it; whose the figures are is said once the scenario changes; bad inputs say
// what is wrong; the inputs are remembered.
#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QEventLoop>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>

#include <QTest>

#include <gtest/gtest.h>

#include "kvscope/calculator/numbers.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/decimal_spin_box.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/traffic_view.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;
using testing::write_all;

// Llama 3.1 8B on one H100 at 16k tokens.
void on_h100(ScenarioModel* model) {
    model->loadCatalogModel("llama-3.1-8b");
    model->edit("test", [](Scenario& s) {
        s.workload.context_tokens = 16384;
        Deployment d;
        d.gpu = *catalog().find_gpu("h100-sxm");
        s.deployment = d;
    });
}

// Runs the tab's simulation (or its plan) and waits for it (at most a minute).
void run(TrafficView* t, void (TrafficView::*what)() = &TrafficView::simulate) {
    QEventLoop loop;
    QObject::connect(t, &TrafficView::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(60000, &loop, &QEventLoop::quit);
    (t->*what)();
    if (t->running()) loop.exec();
}

// kvscope-cli's JSON for `args` and describe()'s traffic (its lengths too unless `lengths` is false), on the window's
// scenario saved as `name` (a name with a space and an accent); nullopt, with the failure reported, when it did not
// run.
std::optional<json::Value> cli_json(MainWindow& w, const QString& name, QStringList args, bool lengths = true) {
    QTemporaryDir dir;
    const QString saved = dir.filePath(name);
    if (!w.saveScenarioFile(saved)) {
        ADD_FAILURE() << "could not save " << saved.toStdString();
        return std::nullopt;
    }
    args +=
        QStringList{"--scenario", saved, "--requests", "400", "--shared-prefix", "500", "--tpot-ms", "20", "--json"};
    if (lengths) args += QStringList{"--input-tokens", "1500", "--output-tokens", "200"};
    QProcess cli;
    cli.start(QStringLiteral(KVSCOPE_CLI_PATH), args);
    if (!cli.waitForFinished(120000) || cli.exitCode() != 0) {
        ADD_FAILURE() << "kvscope-cli " << args.join(' ').toStdString() << ": "
                      << cli.readAllStandardError().toStdString();
        return std::nullopt;
    }
    auto parsed = json::parse(cli.readAllStandardOutput().toStdString());
    if (!parsed) {
        ADD_FAILURE() << "not JSON";
        return std::nullopt;
    }
    return std::move(*parsed.value);
}

void describe(TrafficView* t) {
    t->requestsField()->setValue(400);
    t->allAtOnceBox()->setChecked(false);
    t->rateField()->setValue(5);
    t->inputTokensField()->setValue(1500);
    t->outputTokensField()->setValue(200);
    t->sharedPrefixField()->setValue(500);
    t->traceField()->clear();
    t->ttftBox()->setChecked(false);
    t->tpotBox()->setChecked(true);
    t->tpotField()->setValue(20);
}

// The described traffic simulated for Llama 3.1 8B on one H100 at 16k tokens, in `w`'s Traffic tab.
TrafficView* simulate_described(MainWindow& w) {
    on_h100(w.model());
    TrafficView* t = w.traffic();
    describe(t);
    run(t);
    return t;
}

TEST(TrafficView, ShowsWhatTheCliSaysForTheSameInputs) {
    MainWindow w(catalog(), false);
    TrafficView* t = simulate_described(w);
    ASSERT_TRUE(t->answer().has_value()) << t->statusLabel()->text().toStdString();
    const TrafficAnswer& a = *t->answer();
    EXPECT_EQ(a.report.requests, 400u);
    // The calculator asked directly gives the same figures.
    const auto direct = answer_traffic(w.model()->scenario(), t->question());
    ASSERT_TRUE(direct) << direct.error_text();
    EXPECT_EQ(simulation_json(direct->report).dump(), simulation_json(a.report).dump());
    ASSERT_TRUE(a.max_rate.has_value());
    // And so does kvscope-cli simulate, on the window's scenario saved, with the same traffic.
    const auto parsed = cli_json(w, "served ü.kvscope.json", {"simulate", "--rate", "5"});
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->find("simulation")->find("kv_peak_blocks")->as_u64(), a.report.kv_peak_blocks);
    EXPECT_DOUBLE_EQ(parsed->find("simulation")->find("ttft_ms")->find("p99")->as_double(), a.report.ttft_ms.p99);
    EXPECT_DOUBLE_EQ(parsed->find("max_rate_meeting_slo")->as_double(), *a.max_rate);
    // The text shows them as the CLI's table does.
    const QString shown = t->resultsLabel()->text();
    for (const auto& [name, text] : simulation_rows(a.report, a.setup.settings, w.model()->units()))
        EXPECT_TRUE(shown.contains(QString::fromStdString(text).toHtmlEscaped())) << name << ": " << text;
    // The charts: the cache over time under the budget, and the serving curve.
    EXPECT_EQ(t->kvSeries()->count(), static_cast<int>(a.report.timeline.size()));
    ASSERT_EQ(t->budgetSeries()->count(), 2);
    EXPECT_NEAR(t->budgetSeries()->at(0).y() * (1ull << 30), static_cast<double>(a.report.kv_budget_bytes_per_gpu), 1);
    for (const QPointF& p : t->kvSeries()->points()) EXPECT_LE(p.y(), t->budgetSeries()->at(0).y());
    // The prefix saving: the same requests with a copy each of the 500 shared tokens, never below what is in use, and
    // its widest gap (at the points drawn, 200 of the steps at most) at most the report's peak saving.
    ASSERT_EQ(t->unsharedSeries()->count(), t->kvSeries()->count());
    double widest = 0;
    for (int i = 0; i < t->kvSeries()->count(); ++i) {
        EXPECT_GE(t->unsharedSeries()->at(i).y(), t->kvSeries()->at(i).y());
        widest = std::max(widest, t->unsharedSeries()->at(i).y() - t->kvSeries()->at(i).y());
    }
    EXPECT_GT(widest, 0.0);
    EXPECT_LE(widest * (1ull << 30), static_cast<double>(a.report.prefix_saved_peak_bytes_per_gpu) + 1e3);
    EXPECT_EQ(t->tpotCurve()->count(), 10);
    EXPECT_EQ(t->progress()->value(), 100);
}

// View ▸ Decimal units: the answer's rows and the cache chart follow it, as every other view does, without a new run.
TEST(TrafficView, TheAnswerFollowsTheUnits) {
    MainWindow w(catalog(), false);
    TrafficView* t = simulate_described(w);
    ASSERT_TRUE(t->answer().has_value()) << t->statusLabel()->text().toStdString();
    const TrafficAnswer& a = *t->answer();
    const double budget = static_cast<double>(a.report.kv_budget_bytes_per_gpu);
    EXPECT_NEAR(t->budgetSeries()->at(0).y() * (1ull << 30), budget, 1);
    w.model()->setUnits(UnitSystem::decimal);
    EXPECT_NEAR(t->budgetSeries()->at(0).y() * 1e9, budget, 1);
    const QString shown = t->resultsLabel()->text();
    for (const auto& [name, text] : simulation_rows(a.report, a.setup.settings, UnitSystem::decimal))
        EXPECT_TRUE(shown.contains(QString::fromStdString(text).toHtmlEscaped())) << name << ": " << text;
    EXPECT_TRUE(shown.contains(" GB")) << shown.toStdString();
}

// A context typed in the inputs and not entered counts as entered before a run, as before a save: the run is of the
// field as it reads. A rate typed outside its range is said, not run as the one before.
TEST(TrafficView, TextTypedAndNotEnteredIsTakenOrSaidBeforeARun) {
    MainWindow w(catalog(), false);
    on_h100(w.model());
    TrafficView* t = w.traffic();
    describe(t);
    QLineEdit* context = w.inputs()->contextField()->spinBox()->findChild<QLineEdit*>();
    context->setFocus();
    context->selectAll();
    QTest::keyClicks(context, "32k");  // no Enter
    run(t);
    ASSERT_TRUE(t->answer().has_value()) << t->statusLabel()->text().toStdString();
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 32768u);
    EXPECT_TRUE(t->simulatedForLabel()->text().contains("32,768 tokens"))
        << t->simulatedForLabel()->text().toStdString();

    QLineEdit* rate = t->rateField()->findChild<QLineEdit*>();
    rate->selectAll();
    QTest::keyClicks(rate, "9999999");  // above 1,000,000 a second
    t->simulate();
    EXPECT_FALSE(t->running());
    EXPECT_TRUE(t->statusLabel()->text().startsWith("Not simulated: Arrivals: '9999999' is not between"))
        << t->statusLabel()->text().toStdString();
}

TEST(TrafficView, AnSglangDeploymentIsServedAsTheCliServesIt) {
    MainWindow w(catalog(), false);
    on_h100(w.model());
    w.model()->edit("test", [](Scenario& s) {  // as the Deployment tab's engine box sets it
        s.deployment->engine = Engine::sglang;
        s.deployment->fraction = default_fraction(Engine::sglang);
    });
    TrafficView* t = w.traffic();
    describe(t);
    run(t);
    ASSERT_TRUE(t->answer().has_value()) << t->statusLabel()->text().toStdString();
    const TrafficAnswer& a = *t->answer();
    EXPECT_EQ(a.setup.settings.engine, Engine::sglang);
    EXPECT_TRUE(t->statusLabel()->text().contains("note: SGLang's scheduler (v0.5.6)"));
    const auto parsed = cli_json(w, "sglang é.kvscope.json", {"simulate", "--rate", "5"});
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->find("engine")->as_string(), "sglang");
    const json::Value& sim = *parsed->find("simulation");
    EXPECT_EQ(sim.find("kv_budget_blocks")->as_u64(), a.report.kv_budget_blocks);
    EXPECT_EQ(sim.find("kv_peak_blocks")->as_u64(), a.report.kv_peak_blocks);
    EXPECT_EQ(sim.find("prefix_hit_tokens")->as_u64(), a.report.prefix_hit_tokens);
    EXPECT_DOUBLE_EQ(sim.find("itl_ms")->find("p99")->as_double(), a.report.itl_ms.p99);
    EXPECT_DOUBLE_EQ(parsed->find("max_rate_meeting_slo")->as_double(), *a.max_rate);
}

TEST(TrafficView, HowManyGpusSaysWhatCliPlanSaysForTheSameTraffic) {
    MainWindow w(catalog(), false);
    on_h100(w.model());
    TrafficView* t = w.traffic();
    describe(t);
    t->rateField()->setValue(12);  // more than one H100 serves within 20 ms a token
    t->prefixGroupsField()->setValue(4);
    t->routerField()->setCurrentIndex(1);
    run(t, &TrafficView::servePlan);
    ASSERT_TRUE(t->layouts().has_value()) << t->statusLabel()->text().toStdString();
    const std::vector<LayoutService>& mine = *t->layouts();
    ASSERT_FALSE(mine.empty());
    EXPECT_TRUE(t->planLabel()->text().contains("smallest layout meeting the target"))
        << t->planLabel()->text().toStdString();
    EXPECT_TRUE(t->statusLabel()->text().contains("the prefix router routes by the prompts alone"))
        << t->statusLabel()->text().toStdString();
    // kvscope-cli plan on the window's scenario saved, with the same traffic and router, lists the same layouts.
    const auto parsed =
        cli_json(w, "planned ü.kvscope.json", {"plan", "--rate", "12", "--prefix-groups", "4", "--router", "prefix"});
    ASSERT_TRUE(parsed);
    const auto& theirs = parsed->find("layouts_serving")->items();
    ASSERT_EQ(theirs.size(), mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
        EXPECT_EQ(theirs[i].find("gpus")->as_u64(), mine[i].gpus);
        EXPECT_EQ(theirs[i].find("replicas")->as_u64(), mine[i].replicas);
        EXPECT_EQ(theirs[i].find("meets_slo")->as_bool(), mine[i].meets);
        EXPECT_DOUBLE_EQ(theirs[i].find("tpot_ms")->as_double(), mine[i].tpot_ms);
        EXPECT_TRUE(
            t->planLabel()->text().contains(QString::fromStdString(number_text(mine[i].tpot_ms, Notation::fixed, 2))));
    }
    for (std::size_t i = 0; i < mine.size(); ++i)
        EXPECT_EQ(theirs[i].find("prefix_hit_tokens")->as_u64(), mine[i].prefix_hit_tokens);  // the same routing
    // All at once is no rate to plan for: said, and the plan before stays.
    t->allAtOnceBox()->setChecked(true);
    t->servePlan();
    EXPECT_TRUE(t->statusLabel()->text().contains("Not planned: a plan is weighed at a rate"))
        << t->statusLabel()->text().toStdString();
    EXPECT_EQ(t->layouts()->size(), mine.size());
    // Another context: the plan says it is not this scenario's.
    w.model()->edit("longer", [](Scenario& s) { s.workload.context_tokens = 32768; });
    EXPECT_TRUE(t->planLabel()->text().contains("this plan is not its own")) << t->planLabel()->text().toStdString();
}

TEST(TrafficView, OnlyATracesLengthsIsWhatTheCliDrawsWithLengthsFrom) {
    MainWindow w(catalog(), false);
    on_h100(w.model());
    TrafficView* t = w.traffic();
    describe(t);
    QTemporaryDir dir;
    const QString trace = dir.filePath("Azure conv é.csv");
    write_all(trace,
              "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
              "2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.2224670,879,55\n");
    t->traceField()->setText(trace);
    t->lengthsOnlyBox()->setChecked(true);
    run(t);
    ASSERT_TRUE(t->answer().has_value()) << t->statusLabel()->text().toStdString();
    const TrafficAnswer& a = *t->answer();
    EXPECT_EQ(a.report.requests, 400u);  // described: the trace's three requests give only their lengths
    EXPECT_TRUE(t->resultsLabel()->text().contains("prompts and answers as long as those of"))
        << t->resultsLabel()->text().toStdString();
    const auto parsed =
        cli_json(w, "drawn ü.kvscope.json", {"simulate", "--rate", "5", "--lengths-from", trace}, false);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->find("simulation")->find("kv_peak_blocks")->as_u64(), a.report.kv_peak_blocks);
    EXPECT_DOUBLE_EQ(parsed->find("simulation")->find("ttft_ms")->find("p99")->as_double(), a.report.ttft_ms.p99);
}

TEST(TrafficView, SaysWhoseTheFiguresAreOnceTheScenarioChanges) {
    MainWindow w(catalog(), false);
    on_h100(w.model());
    describe(w.traffic());
    w.traffic()->tpotBox()->setChecked(false);
    run(w.traffic());
    ASSERT_TRUE(w.traffic()->answer().has_value());
    EXPECT_TRUE(w.traffic()->simulatedForLabel()->text().contains("Llama 3.1 8B"));
    EXPECT_FALSE(w.traffic()->simulatedForLabel()->text().contains("changed"));
    w.model()->edit("test", [](Scenario& s) { s.workload.context_tokens = 32768; });
    EXPECT_TRUE(w.traffic()->simulatedForLabel()->text().contains("has changed since"));
    w.model()->undoStack()->undo();
    EXPECT_FALSE(w.traffic()->simulatedForLabel()->text().contains("changed"));
}

TEST(TrafficView, ACancelledRunLeavesTheFiguresBeforeIt) {
    MainWindow w(catalog(), false);
    on_h100(w.model());
    TrafficView* t = w.traffic();
    describe(t);
    t->tpotBox()->setChecked(false);
    run(t);
    ASSERT_TRUE(t->answer().has_value());
    const std::string before = simulation_json(t->answer()->report).dump();
    t->requestsField()->setValue(1'000'000);  // seconds of work: cancelled at once
    QEventLoop loop;
    QObject::connect(t, &TrafficView::finished, &loop, &QEventLoop::quit);
    t->simulate();
    EXPECT_TRUE(t->running());
    EXPECT_FALSE(t->simulateButton()->isEnabled());
    t->cancel();
    QTimer::singleShot(60000, &loop, &QEventLoop::quit);
    loop.exec();
    EXPECT_FALSE(t->running());
    EXPECT_TRUE(t->statusLabel()->text().startsWith("Cancelled")) << t->statusLabel()->text().toStdString();
    EXPECT_EQ(simulation_json(t->answer()->report).dump(), before);
    EXPECT_TRUE(t->simulateButton()->isEnabled());
}

TEST(TrafficView, BadInputsSayWhatIsWrong) {
    MainWindow w(catalog(), false);
    TrafficView* t = w.traffic();
    // No GPU yet.
    w.model()->edit("test", [](Scenario& s) { s.deployment.reset(); });
    t->simulate();
    EXPECT_TRUE(t->statusLabel()->text().contains("choose a GPU")) << t->statusLabel()->text().toStdString();
    EXPECT_FALSE(t->answer().has_value());
    // A trace that does not read: its file and line.
    on_h100(w.model());
    QTemporaryDir dir;
    const QString bad = dir.filePath("trace ü.csv");
    write_all(bad, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,12x,4\n");
    t->traceField()->setText(bad);
    t->ttftBox()->setChecked(false);
    t->tpotBox()->setChecked(false);
    run(t);
    EXPECT_TRUE(t->statusLabel()->text().contains(bad + ":2: ContextTokens: '12x' is not a whole number"))
        << t->statusLabel()->text().toStdString();
    // A target with a trace: said, not ignored.
    t->tpotBox()->setChecked(true);
    t->simulate();
    EXPECT_TRUE(t->statusLabel()->text().contains("a target is sought")) << t->statusLabel()->text().toStdString();
    // A good trace: its requests.
    const QString good = dir.filePath("Azure conv.csv");
    write_all(good,
              "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
              "2023-11-16 18:15:50.9951690,396,109\n");
    t->traceField()->setText(good);
    t->tpotBox()->setChecked(false);
    run(t);
    ASSERT_TRUE(t->answer().has_value()) << t->statusLabel()->text().toStdString();
    EXPECT_EQ(t->answer()->report.requests, 2u);
}

TEST(TrafficView, TheInputsAreRememberedAndTwoWindowsRunApart) {
    {
        MainWindow w(catalog(), true);  // a window that keeps its session
        describe(w.traffic());
        w.traffic()->tpotField()->setValue(33.5);
    }
    MainWindow a(catalog(), true), b(catalog(), false);
    EXPECT_EQ(a.traffic()->requestsField()->value(), 400u);
    EXPECT_EQ(b.traffic()->requestsField()->value(), 1000u);  // one for exports and tests starts from the defaults
    EXPECT_FALSE(a.traffic()->allAtOnceBox()->isChecked());
    EXPECT_DOUBLE_EQ(a.traffic()->tpotField()->value(), 33.5);
    EXPECT_EQ(a.traffic()->question().spec.shared_prefix, 500u);
    // Two windows, two models, each its own answer.
    on_h100(a.model());
    on_h100(b.model());
    b.model()->loadCatalogModel("qwen3-8b");
    a.traffic()->tpotBox()->setChecked(false);
    b.traffic()->tpotBox()->setChecked(false);
    run(a.traffic());
    run(b.traffic());
    ASSERT_TRUE(a.traffic()->answer() && b.traffic()->answer());
    EXPECT_NE(a.traffic()->answer()->setup.settings.kv_blocks, b.traffic()->answer()->setup.settings.kv_blocks);
    EXPECT_TRUE(b.traffic()->simulatedForLabel()->text().contains("Qwen3 8B"));
}

}  // namespace
}  // namespace kvscope::ui
