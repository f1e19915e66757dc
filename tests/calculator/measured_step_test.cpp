// Decode steps measured on this machine, kept for `fit` and the Deployment tab: which catalog GPU a
// device is, what makes two steps the same, and the store's round trip (two writers, a path with
// spaces and accents, a damaged file).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "kvscope/calculator/analysis.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/report_json.h"
#include "testing.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> gpu_of(std::string_view name, std::uint64_t bytes) {
    return gpu_for_device(Catalog::builtin().gpus(), name, bytes);
}

TEST(MeasuredStep, DevicesAreTheCatalogGpusTheirNamesSay) {
    // Names and memory as CUDA reports them (cudaGetDeviceProperties: name, totalGlobalMem).
    EXPECT_EQ(gpu_of("NVIDIA H100 80GB HBM3", 85'029'158'912), "h100-sxm");
    EXPECT_EQ(gpu_of("NVIDIA H100 PCIe", 85'029'158'912), "h100-pcie");
    EXPECT_EQ(gpu_of("NVIDIA H200", 150'119'759'872), "h200");
    EXPECT_EQ(gpu_of("NVIDIA A100-SXM4-40GB", 42'505'273'344), "a100-40gb");
    EXPECT_EQ(gpu_of("NVIDIA A100-SXM4-80GB", 85'196'226'560), "a100-80gb");
    EXPECT_EQ(gpu_of("NVIDIA A100 80GB PCIe", 85'198'045'184), "a100-80gb-pcie");
    EXPECT_EQ(gpu_of("NVIDIA H100 NVL", 99'857'989'632), "h100-nvl");  // not the H100 SXM
    EXPECT_EQ(gpu_of("NVIDIA H200 NVL", 150'119'759'872), "h200-nvl");
    EXPECT_EQ(gpu_of("NVIDIA GH200 480GB", 101'997'215'744), "gh200-96gb");
    EXPECT_EQ(gpu_of("NVIDIA A10", 23'836'033'024), "a10");  // not AWS's A10G
    EXPECT_EQ(gpu_of("Tesla T4", 15'835'660'288), "t4");
    EXPECT_EQ(gpu_of("NVIDIA GeForce RTX 4090", 25'393'692'672), "rtx-4090");
    EXPECT_EQ(gpu_of("NVIDIA GeForce RTX 3090", 25'438'126'080), "rtx-3090");
    EXPECT_EQ(gpu_of("NVIDIA RTX 6000 Ada Generation", 51'010'207'744), "rtx-6000-ada");
    EXPECT_EQ(gpu_of("NVIDIA L4", 23'580'639'232), "l4");  // not the L40S
    EXPECT_EQ(gpu_of("NVIDIA L40S", 47'697'362'944), "l40s");
    EXPECT_EQ(gpu_of("NVIDIA A10G", 23'836'033'024), "a10g");
    EXPECT_EQ(gpu_of("NVIDIA B200", 191'525'486'592), "b200");
    EXPECT_EQ(gpu_of("AMD Instinct MI300X", 205'822'885'888), "mi300x");
    // Not in the catalog: no guess.
    EXPECT_EQ(gpu_of("NVIDIA GeForce RTX 3080", 10'737'418'240), std::nullopt);
    EXPECT_EQ(gpu_of("AMD EPYC 7763 64-Core Processor", 0), std::nullopt);
    // A user's own entry that names more of the device wins over a shorter one of the same memory.
    std::vector<GpuSpec> mine{*Catalog::builtin().find_gpu("h200"), *Catalog::builtin().find_gpu("h200")};
    mine[1].id = "h200-nvl";
    EXPECT_EQ(gpu_for_device(mine, "NVIDIA H200 NVL", 150'119'759'872), "h200-nvl");
    EXPECT_EQ(gpu_for_device(mine, "NVIDIA H200", 150'119'759'872), "h200");
}

Scenario llama_8b_on(std::string_view gpu) {
    const auto& catalog = Catalog::builtin();
    Scenario s;
    s.model_id = "llama-3-8b";
    s.arch = catalog.find_model("llama-3-8b")->model.arch;
    s.kv_dtype = KvDtype::bf16;
    s.workload = {.context_tokens = 8192, .batch = 16};
    Deployment d;
    d.gpu = *catalog.find_gpu(gpu);
    d.weight_dtype = KvDtype::bf16;
    s.deployment = d;
    return s;
}

MeasuredStep measured(const Scenario& s, std::string device, std::string gpu_id, double ms) {
    MeasuredStep m;
    m.key = step_key(s, s.deployment ? s.deployment->weight_dtype : KvDtype::bf16);
    m.model_id = s.model_id;
    m.context_tokens = s.workload.context_tokens;
    m.batch = s.workload.batch;
    m.kv_dtype = s.kv_dtype;
    m.weight_dtype = KvDtype::bf16;
    m.backend = gpu_id.empty() ? "cpu" : "cuda";
    m.device = std::move(device);
    m.gpu_id = std::move(gpu_id);
    m.measured_on = "2026-12-01";
    m.step_ms = ms;
    m.predicted_step_ms = ms / 1.25;
    m.ceiling_gbps = 4100.5;
    m.layers_run = m.layers_total = s.arch.layers;
    return m;
}

TEST(MeasuredStep, TheKeyChangesWithWhatTheStepDependsOnAndNothingElse) {
    const Scenario s = llama_8b_on("h200");
    const std::string key = step_key(s, KvDtype::bf16);
    EXPECT_EQ(key.size(), 16u);
    EXPECT_EQ(step_key(llama_8b_on("h100-sxm"), KvDtype::bf16), key);  // the GPU is kept beside the key
    EXPECT_NE(step_key(s, KvDtype::fp16), key);
    for (const auto& change : std::vector<std::function<void(Scenario&)>>{
             [](Scenario& x) { x.workload.batch = 8; },
             [](Scenario& x) { x.workload.context_tokens = 8193; },
             [](Scenario& x) { x.workload.block_size = 16; },
             [](Scenario& x) { x.kv_dtype = KvDtype::fp8_e4m3; },
             [](Scenario& x) { x.arch.layers = 31; },
             [](Scenario& x) { x.arch.kv_heads = 4; },
         }) {
        Scenario changed = s;
        change(changed);
        EXPECT_NE(step_key(changed, KvDtype::bf16), key);
    }
}

TEST(MeasuredStep, FitShowsTheStepMeasuredOnItsGpuOnly) {
    const Scenario s = llama_8b_on("h200");
    const std::vector<MeasuredStep> steps{measured(s, "NVIDIA H100 80GB HBM3", "h100-sxm", 9.0),
                                          measured(s, "AMD EPYC 7763", "", 400.0),
                                          measured(s, "NVIDIA H200", "h200", 7.5)};
    const auto a = analyze(s, {.measured_steps = &steps});
    ASSERT_TRUE(a.ok()) << a.error_text();
    ASSERT_TRUE(a->measured_step.has_value());
    EXPECT_EQ(a->measured_step->device, "NVIDIA H200");
    EXPECT_DOUBLE_EQ(a->measured_step->tokens_per_s(), 1000.0 / 7.5);

    // The report: the measurement, and the estimate over it.
    const json::Value fit = fit_report_json(s, *a->fit, *a->decode, &*a->measured_step);
    const json::Value* m = fit.find("measured_step");
    ASSERT_TRUE(m != nullptr && m->is_object());
    EXPECT_EQ(m->find("gpu")->as_string(), "h200");
    EXPECT_NEAR(m->find("fraction_of_estimate")->as_double(), a->decode->step_time_floor_s * 1e3 / 7.5, 1e-12);
    EXPECT_TRUE(fit_report_json(s, *a->fit, *a->decode).find("measured_step")->is_null());
    const std::string text = measured_step_text(*a->measured_step, *a->decode);
    EXPECT_TRUE(text.starts_with("7.50 ms per step → 133.3 tokens/s per sequence, ")) << text;
    EXPECT_TRUE(text.ends_with("(probe --step on NVIDIA H200, 2026-12-01)")) << text;

    // Another GPU, another batch, two GPUs, no deployment: nothing measured is shown.
    for (const auto& change : std::vector<std::function<void(Scenario&)>>{
             [](Scenario& x) { x.deployment->gpu = *Catalog::builtin().find_gpu("b200"); },
             [](Scenario& x) { x.workload.batch = 15; },
             [](Scenario& x) {
                 x.parallel.tp = 2;
                 x.deployment->gpu_count = 2;
             },
             [](Scenario& x) { x.deployment->weight_dtype = KvDtype::fp16; },
         }) {
        Scenario other = s;
        change(other);
        const auto b = analyze(other, {.measured_steps = &steps});
        ASSERT_TRUE(b.ok()) << b.error_text();
        EXPECT_FALSE(b->measured_step.has_value());
    }
    // Without the store nothing is looked up.
    EXPECT_FALSE(analyze(s)->measured_step.has_value());
}

TEST(MeasuredStep, ScaledRunsSaySo) {
    const Scenario s = llama_8b_on("h200");
    MeasuredStep m = measured(s, "NVIDIA H200", "h200", 12.25);
    m.scaled = true;
    m.layers_run = 20;
    const auto a = analyze(s);
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(measured_step_text(m, *a->decode).ends_with("; 20 of 32 layers run, their time scaled)"));
}

TEST(MeasuredStep, EveryMemberIsDeclaredOnceAndReadBackAsWritten) {
    // A member added to MeasuredStep is written into the store's entries (measured_step.cpp measured_step_members)
    // or said to be left out; the store's reader gives back what was written.
    const Scenario s = llama_8b_on("h200");
    MeasuredStep m = measured(s, "NVIDIA H200", "h200", 12.25);
    m.scaled = true;
    m.layers_run = 20;
    const json::Value entry = measured_step_json(m);
    testing::expect_declared_once(m, entry, "MeasuredStep");
    json::Value doc = json::Value::object();
    json::Value steps = json::Value::array();
    steps.push(entry);
    doc.set("steps", std::move(steps));
    const std::vector<MeasuredStep> back = measured_steps_from_json(doc.dump());
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back.front(), m);
    EXPECT_NEAR(entry.find("tokens_per_s")->as_double(), 1000.0 / 12.25, 1e-9);
}

struct TempFolder {
    fs::path path = fs::temp_directory_path() / ("kvscope mesures décodage " + std::to_string(::getpid()));
    ~TempFolder() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

TEST(MeasuredStep, TheStoreKeepsTheNewestPerDeviceAndScenarioAcrossWriters) {
    TempFolder folder;
    const std::string path = measured_steps_path((folder.path / "dossier utilisateur").string());
    EXPECT_TRUE(read_measured_steps(path).empty());  // no file yet

    const Scenario s = llama_8b_on("h200");
    Scenario other = s;
    other.workload.batch = 1;
    // Two writers (a window and the CLI) each add theirs: the file keeps both.
    ASSERT_TRUE(remember_measured_step(path, measured(s, "NVIDIA H200", "h200", 7.5)).ok());
    ASSERT_TRUE(remember_measured_step(path, measured(other, "NVIDIA H200", "h200", 3.25)).ok());
    ASSERT_TRUE(remember_measured_step(path, measured(s, "AMD EPYC 7763", "", 400.0)).ok());
    // A new measurement of the same step on the same device replaces the old one.
    ASSERT_TRUE(remember_measured_step(path, measured(s, "NVIDIA H200", "h200", 7.0)).ok());
    const auto steps = read_measured_steps(path);
    ASSERT_EQ(steps.size(), 3u);
    EXPECT_EQ(steps[0], measured(other, "NVIDIA H200", "h200", 3.25));  // every member read back
    EXPECT_EQ(steps[2], measured(s, "NVIDIA H200", "h200", 7.0));
    // Numbers are written as JSON numbers whatever the locale (this suite also runs under de_DE and fr_FR).
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"step_ms\": 3.25"), std::string::npos) << text;
    EXPECT_NE(text.find("\"ceiling_gbps\": 4100.5"), std::string::npos) << text;

    // The store reads the file again only when it changed.
    MeasuredStepStore store(path);
    EXPECT_EQ(store.entries().size(), 3u);
    ASSERT_TRUE(remember_measured_step(path, measured(s, "NVIDIA B200", "b200", 5.0)).ok());
    EXPECT_EQ(store.entries().size(), 4u);
}

TEST(MeasuredStep, TheStoreKeepsTheNewestFewHundred) {
    TempFolder folder;
    const std::string path = measured_steps_path(folder.path.string());
    Scenario s = llama_8b_on("h200");
    for (std::uint64_t batch = 1; batch <= kMaxMeasuredSteps + 5; ++batch) {
        s.workload.batch = batch;
        ASSERT_TRUE(remember_measured_step(path, measured(s, "NVIDIA H200", "h200", 7.0)).ok());
    }
    const auto steps = read_measured_steps(path);
    ASSERT_EQ(steps.size(), kMaxMeasuredSteps);
    EXPECT_EQ(steps.front().batch, 6u);
    EXPECT_EQ(steps.back().batch, kMaxMeasuredSteps + 5);
}

TEST(MeasuredStep, WritersAtOnceKeepEveryEntryAndANewerVersionsEntriesSurvive) {
    TempFolder folder;
    fs::create_directories(folder.path);
    const std::string path = measured_steps_path(folder.path.string());
    // An entry this version cannot read (a cache format it does not know), written by a newer one: kept as it is.
    std::ofstream(path) << R"({"version": 2, "steps": [{"key": "0123456789abcdef", "kv_dtype": "fp6",
        "weight_dtype": "bf16", "step_ms": 3, "device": "NVIDIA B300", "future": {"x": 1}}, 7, {"key": ""}]})";
    // Four probes finishing at once (a window and CLI runs), each remembering several steps.
    Scenario s = llama_8b_on("h200");
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w)
        writers.emplace_back([&, w] {
            Scenario mine = s;
            for (std::uint64_t i = 1; i <= 5; ++i) {
                mine.workload.batch = static_cast<std::uint64_t>(w) * 10 + i;
                EXPECT_TRUE(remember_measured_step(path, measured(mine, "NVIDIA H200", "h200", 7.0)).ok());
            }
        });
    for (auto& t : writers) t.join();
    EXPECT_EQ(read_measured_steps(path).size(), 20u);  // none lost to another writer's rename
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"kv_dtype\": \"fp6\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"future\""), std::string::npos) << text;
    const auto parsed = json::parse(text);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed.value->find("steps")->items().size(), 21u);  // the 7 and the entry of no key are dropped
    EXPECT_EQ(parsed.value->find("version")->as_u64(), 2u);       // the newer version's file stays its
}

TEST(MeasuredStep, ADamagedStoreIsReadAsFarAsItGoesAndRewrittenWhole) {
    TempFolder folder;
    fs::create_directories(folder.path);
    const std::string path = measured_steps_path(folder.path.string());
    const Scenario s = llama_8b_on("h200");
    // Not JSON at all: nothing is read, and the next measurement replaces it.
    std::ofstream(path) << "{\"steps\": [ {\"key\": ";
    EXPECT_TRUE(read_measured_steps(path).empty());
    ASSERT_TRUE(remember_measured_step(path, measured(s, "NVIDIA H200", "h200", 7.0)).ok());
    EXPECT_EQ(read_measured_steps(path).size(), 1u);
    // Entries that cannot be used (no key, an unknown format, no time) are skipped, the rest read.
    std::ofstream(path) << R"({"steps": [{"key": ""}, {"key": "0123456789abcdef", "kv_dtype": "fp7",
        "weight_dtype": "bf16", "step_ms": 3}, 5, {"key": "0123456789abcdef", "kv_dtype": "bf16",
        "weight_dtype": "bf16", "step_ms": 0}, {"key": "0123456789abcdef", "kv_dtype": "bf16",
        "weight_dtype": "bf16", "step_ms": 3.5, "device": "NVIDIA H200", "gpu": "h200"}]})";
    const auto steps = read_measured_steps(path);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_DOUBLE_EQ(steps[0].step_ms, 3.5);
    // A folder that cannot be made: an error naming the path.
    std::ofstream(folder.path / "a file") << "x";
    const auto refused = remember_measured_step(measured_steps_path((folder.path / "a file").string()),
                                                measured(s, "NVIDIA H200", "h200", 7.0));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error_text().find("a file"), std::string::npos) << refused.error_text();
    EXPECT_FALSE(remember_measured_step("", measured(s, "NVIDIA H200", "h200", 7.0)).ok());
}

}  // namespace
}  // namespace kvscope
