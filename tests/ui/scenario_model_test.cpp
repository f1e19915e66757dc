// The Scenario model: the calculator's answers, undo, and inputs that stay put on errors.
#include <QSignalSpy>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "kvscope/ui/scenario_model.h"
#include "sample_scenarios.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;

TEST(ScenarioModel, OpensOnTheLessonsModelAndNumbers) {
    ScenarioModel m(catalog());
    ASSERT_TRUE(m.hasResults());
    EXPECT_EQ(m.results().kv.total_bytes, 4ull << 30);
    ASSERT_EQ(m.results().variants.size(), 3u);
    EXPECT_EQ(m.results().variants[1].kv_cache_bytes, 1ull << 30);
    EXPECT_EQ(m.results().variants[2].kv_cache_bytes, 128ull << 20);
}

TEST(ScenarioModel, InvalidInputKeepsTheLastValidResults) {
    ScenarioModel m(catalog());
    m.edit("kv", [](Scenario& s) { s.arch.kv_heads = 5; });
    EXPECT_EQ(m.scenario().arch.kv_heads, 5u);  // what the user typed stays
    ASSERT_FALSE(m.errors().empty());
    EXPECT_EQ(m.errors().front().field, "kv_heads");
    EXPECT_EQ(m.results().kv.total_bytes, 4ull << 30);  // and so do the last good numbers
    m.edit("kv", [](Scenario& s) { s.arch.kv_heads = 8; });
    EXPECT_TRUE(m.errors().empty());
    EXPECT_EQ(m.results().kv.total_bytes, 1ull << 30);
}

TEST(ScenarioModel, AbsurdContextIsAnErrorNotACrash) {
    ScenarioModel m(catalog());
    m.edit("ctx", [](Scenario& s) { s.workload.context_tokens = 1'000'000'000'000'000ull; });
    ASSERT_FALSE(m.errors().empty());
    EXPECT_EQ(m.errors().front().field, "context_tokens");
    EXPECT_EQ(m.results().kv.total_bytes, 4ull << 30);
}

TEST(ScenarioModel, UndoAndRedoWalkThroughEdits) {
    ScenarioModel m(catalog());
    m.edit("Change context", [](Scenario& s) { s.workload.context_tokens = 32768; });
    m.edit("Change sequences", [](Scenario& s) { s.workload.batch = 4; });
    EXPECT_EQ(m.results().kv.total_bytes, 64ull << 30);
    m.undoStack()->undo();
    EXPECT_EQ(m.scenario().workload.batch, 1u);
    EXPECT_EQ(m.results().kv.total_bytes, 16ull << 30);
    m.undoStack()->undo();
    EXPECT_EQ(m.results().kv.total_bytes, 4ull << 30);
    m.undoStack()->redo();
    EXPECT_EQ(m.scenario().workload.context_tokens, 32768u);
    // An edit that changes nothing adds no step.
    const int steps = m.undoStack()->count();
    m.edit("same", [](Scenario& s) { s.workload.context_tokens = 32768; });
    EXPECT_EQ(m.undoStack()->count(), steps);
}

TEST(ScenarioModel, HeadDimFollowsModelDimUntilSetByHand) {
    ScenarioModel m(catalog());
    ASSERT_TRUE(m.headDimFollows());
    m.setHiddenSize(8192);
    EXPECT_EQ(m.scenario().arch.head_dim_k, 256u);
    m.setHeadDim(64);
    EXPECT_FALSE(m.headDimFollows());
    m.setHiddenSize(4096);
    EXPECT_EQ(m.scenario().arch.head_dim_k, 64u);
    m.undoStack()->undo();  // back to 8192 with head dim 64
    m.undoStack()->undo();  // head dim 256, following again
    EXPECT_TRUE(m.headDimFollows());
    m.setQueryHeads(64);
    EXPECT_EQ(m.scenario().arch.head_dim_k, 128u);
}

TEST(ScenarioModel, LayerChangesKeepTheSlidingWindowPattern) {
    ScenarioModel m(catalog());
    m.loadCatalogModel("gemma-2-9b");
    const auto windows = layer_windows(m.scenario().arch);
    ASSERT_EQ(windows.size(), 42u);
    m.setLayers(44);
    EXPECT_TRUE(m.errors().empty()) << join_errors(m.errors());
    ASSERT_EQ(layer_windows(m.scenario().arch).size(), 44u);
    EXPECT_EQ(layer_windows(m.scenario().arch)[42], windows[0]);
    EXPECT_EQ(layer_windows(m.scenario().arch)[43], windows[1]);
}

TEST(ScenarioModel, SwitchingModelsKeepsTheWorkloadAndTakesTheModelsFormat) {
    ScenarioModel m(catalog());
    QSignalSpy notices(&m, &ScenarioModel::notice);
    m.edit("w", [](Scenario& s) {
        s.workload.context_tokens = 65536;
        s.kv_dtype = KvDtype::fp8_e4m3;
    });
    m.loadCatalogModel("llama-3-8b");
    EXPECT_EQ(m.scenario().model_id, "llama-3-8b");
    EXPECT_EQ(m.scenario().workload.context_tokens, 65536u);
    // The model's own format, as kvscope-cli gives it; the replaced choice is said in the status line.
    EXPECT_EQ(m.scenario().kv_dtype, catalog().find_model("llama-3-8b")->model.kv_dtype);
    ASSERT_EQ(notices.size(), 1);
    EXPECT_TRUE(notices.front().front().toString().startsWith("KV format fp8_e4m3 replaced by Llama 3 8B's own bf16"))
        << notices.front().front().toString().toStdString();
    // A format picked after the model stays until another model is picked.
    m.edit("dtype", [](Scenario& s) { s.kv_dtype = KvDtype::fp8_e4m3; });
    m.edit("context", [](Scenario& s) { s.workload.context_tokens = 4096; });
    EXPECT_EQ(m.scenario().kv_dtype, KvDtype::fp8_e4m3);
    EXPECT_EQ(m.description(), "Llama 3 8B");
    m.undoStack()->undo();
    m.undoStack()->undo();
    m.undoStack()->undo();
    EXPECT_EQ(m.scenario().arch.layers, 32u);
    EXPECT_EQ(m.scenario().arch.kv_heads, 32u);
    EXPECT_TRUE(m.description().startsWith("Teaching model"))
        << m.description().toStdString();  // the name comes back too
}

TEST(ScenarioModel, MalformedConfigLeavesTheScenarioUnchanged) {
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    testing::write_all(path, "{\n  \"num_hidden_layers\": 32,\n  \"num_attention_heads\": \"lots\"\n}\n");
    ScenarioModel m(catalog());
    const Scenario before = m.scenario();
    const auto problem = m.importModel(path);
    ASSERT_TRUE(problem.has_value());
    EXPECT_TRUE(problem->contains("config.json:3")) << problem->toStdString();
    EXPECT_TRUE(problem->contains("num_attention_heads")) << problem->toStdString();
    EXPECT_EQ(m.scenario(), before);
    EXPECT_EQ(m.undoStack()->count(), 0);
}

TEST(ScenarioModel, ScenarioRoundTripsThroughSaveAndOpen) {
    QTemporaryDir dir;
    const QString path = dir.filePath("plan.kvscope.json");
    ScenarioModel a(catalog());
    a.loadCatalogModel("llama-3-70b");
    a.edit("plan", [](Scenario& s) {
        s.kv_dtype = KvDtype::fp8_e4m3;
        s.workload = {131072, 8, 16, false};
        s.parallel.tp = 2;
        Deployment d;
        d.gpu = *catalog().find_gpu("h100-sxm");
        d.gpu_count = 2;
        s.deployment = d;
    });
    ASSERT_FALSE(a.saveScenario(path).has_value());
    ScenarioModel b(catalog());
    ASSERT_FALSE(b.openScenario(path).has_value());
    EXPECT_EQ(b.scenario(), a.scenario());
    EXPECT_EQ(b.results().kv.total_bytes, a.results().kv.total_bytes);
    EXPECT_EQ(b.description(), "Llama 3 70B");
}

TEST(ScenarioModel, NewerOrBrokenScenarioFilesAreRefused) {
    QTemporaryDir dir;
    const QString newer = dir.filePath("newer.kvscope.json");
    testing::write_all(newer, R"({"kvscope_scenario": 99, "architecture": {}})");
    ScenarioModel m(catalog());
    const Scenario before = m.scenario();
    auto problem = m.openScenario(newer);
    ASSERT_TRUE(problem.has_value());
    EXPECT_TRUE(problem->contains("newer KVScope")) << problem->toStdString();
    problem = m.openScenario(dir.filePath("missing.kvscope.json"));
    ASSERT_TRUE(problem.has_value());
    EXPECT_TRUE(problem->contains("missing.kvscope.json")) << problem->toStdString();
    EXPECT_EQ(m.scenario(), before);
}

TEST(ScenarioModel, DeploymentAddsFitDecodeAndChartMarkers) {
    ScenarioModel m(catalog());
    m.loadCatalogModel("llama-3-70b");
    m.edit("fit", kvscope::testing::readme_example);
    const Results& r = m.results();
    ASSERT_TRUE(r.fit && r.decode);
    EXPECT_FALSE(r.fit->fits);
    EXPECT_EQ(r.stops_fitting_at, r.fit->max_context + 1);
    ASSERT_TRUE(r.kv_exceeds_weights_at.has_value());
    EXPECT_EQ(r.weights_bytes, r.fit->weights_bytes);
}

}  // namespace
}  // namespace kvscope::ui
