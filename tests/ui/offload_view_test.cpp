// The Deployment tab's llama.cpp split: the GPU layers field and its slider set what --gpu-layers sets, the fit's
// figures and the RAM bar are the CLI's, undo takes a change back, and a refused count leaves the scenario as it was.
#include <memory>

#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLineEdit>
#include <QLineSeries>
#include <QSlider>
#include <QTest>

#include <gtest/gtest.h>

#include "kvscope/calculator/fit.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/gpu_memory_bar.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;
using testing::cli_scenario;

// Qwen3 32B in 4 bits on a 16 GB card with llama.cpp, as the README's example.
void set_up(MainWindow& w) {
    w.model()->loadCatalogModel("qwen3-32b");
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("split", [](Scenario& s) {
        s.workload.context_tokens = 16384;
        s.deployment->gpu = *catalog().find_gpu("rtx-4060-ti-16gb");
        s.deployment->engine = Engine::llama_cpp;
        s.deployment->fraction = default_fraction(Engine::llama_cpp);
        s.deployment->weight_dtype = KvDtype::q4_0;
    });
}

const std::vector<std::string> kCli{"fit",      "--model",   "qwen3-32b", "--gpu", "rtx-4060-ti-16gb",
                                    "--engine", "llama.cpp", "--context", "16k",   "--weight-dtype",
                                    "q4_0"};

TEST(OffloadView, TheLayersFieldAndSliderGiveTheClisSplit) {
    MainWindow w(catalog(), false);
    w.show();
    set_up(w);
    DeploymentView* d = w.deployment();
    ASSERT_TRUE(d->gpuLayersField()->isVisibleTo(d));
    EXPECT_EQ(d->gpuLayersSlider()->maximum(), 65);
    EXPECT_EQ(d->gpuLayersSlider()->value(), 65);  // all: llama.cpp's default
    ASSERT_TRUE(w.model()->results().fit && w.model()->results().fit->offload);
    EXPECT_FALSE(w.model()->results().fit->fits);
    EXPECT_TRUE(d->hostBar()->isVisibleTo(d));

    // Typed: the count the CLI's --gpu-layers gives, and the same figures.
    d->gpuLayersField()->setText("47");
    emit d->gpuLayersField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.gpu_layers, 47u);
    EXPECT_EQ(d->gpuLayersSlider()->value(), 47);
    std::vector<std::string> args = kCli;
    args.insert(args.end(), {"--gpu-layers", "47"});
    const Scenario cli = cli_scenario(args);
    EXPECT_EQ(cli.deployment->llama_cpp, w.model()->scenario().deployment->llama_cpp);
    const auto f = fit(cli.arch, cli.kv_dtype, cli.workload, cli.parallel, *cli.deployment);
    ASSERT_TRUE(f.ok() && f->offload);
    const FitReport& shown = *w.model()->results().fit;
    ASSERT_TRUE(shown.offload);
    EXPECT_TRUE(shown.fits);
    EXPECT_EQ(shown.offload->gpu_bytes, f->offload->gpu_bytes);
    EXPECT_EQ(shown.offload->host_bytes, f->offload->host_bytes);
    EXPECT_EQ(shown.max_context, f->max_context);
    EXPECT_DOUBLE_EQ(shown.offload->decode_tokens_per_s, f->offload->decode_tokens_per_s);
    // The RAM bar holds the host's parts.
    std::uint64_t in_ram = 0;
    for (const auto& s : d->hostBar()->segments())
        if (s.need) in_ram += s.bytes;
    EXPECT_EQ(in_ram, f->offload->host_bytes);
    // The chart shows where the cache lives: the GPU's layers' line (the one the KV budget is for) and the host's.
    const QLineSeries* on_gpu = w.chart()->variantSeries(static_cast<int>(VariantKind::on_gpu));
    const QLineSeries* on_host = w.chart()->variantSeries(static_cast<int>(VariantKind::on_host));
    EXPECT_TRUE(on_gpu->isVisible());
    EXPECT_EQ(on_gpu->name().toStdString(), "KV on the GPU (47 of 65 layers)");
    EXPECT_TRUE(on_host->isVisible());
    EXPECT_EQ(on_host->name().toStdString(), "KV in host RAM");

    // The slider: a step is one change, undone by one undo.
    d->gpuLayersSlider()->setValue(40);
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.gpu_layers, 40u);
    EXPECT_EQ(d->gpuLayersField()->text(), "40");
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.gpu_layers, 47u);
    EXPECT_EQ(d->gpuLayersSlider()->value(), 47);
    // Its right end is all, as an empty field and --gpu-layers all say.
    d->gpuLayersSlider()->setValue(65);
    EXPECT_FALSE(w.model()->scenario().deployment->llama_cpp.gpu_layers.has_value());
    EXPECT_EQ(d->gpuLayersField()->text(), "");

    // auto: --fit's choice, as --gpu-layers auto; the slider shows where it put them.
    d->gpuLayersField()->setText("auto");
    emit d->gpuLayersField()->editingFinished();
    EXPECT_TRUE(w.model()->scenario().deployment->llama_cpp.gpu_layers_auto);
    EXPECT_EQ(d->gpuLayersField()->text(), "auto");
    ASSERT_TRUE(w.model()->results().fit->offload);
    EXPECT_EQ(d->gpuLayersSlider()->value(), static_cast<int>(w.model()->results().fit->offload->gpu_layers));
    args = kCli;
    args.insert(args.end(), {"--gpu-layers", "auto"});
    EXPECT_EQ(cli_scenario(args).deployment->llama_cpp, w.model()->scenario().deployment->llama_cpp);

    // Refused text is marked and changes nothing; the saved count stays.
    d->gpuLayersField()->setText("12");
    emit d->gpuLayersField()->editingFinished();
    d->gpuLayersField()->setText("twelve");
    emit d->gpuLayersField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.gpu_layers, 12u);
    EXPECT_FALSE(d->unaccepted().isEmpty());
    // More layers than the model has: every layer, as llama.cpp takes -ngl 99.
    d->gpuLayersField()->setText("70");
    emit d->gpuLayersField()->editingFinished();
    EXPECT_TRUE(w.model()->errors().empty());
    EXPECT_EQ(w.model()->results().fit->offload->gpu_layers, 65u);

    // Another engine hides the row and drops the RAM bar.
    w.model()->edit("vllm", [](Scenario& s) {
        s.deployment->engine = Engine::vllm;
        s.deployment->llama_cpp = {};
    });
    EXPECT_FALSE(d->gpuLayersField()->isVisibleTo(d));
    EXPECT_FALSE(d->hostBar()->isVisibleTo(d));
    EXPECT_FALSE(w.chart()->variantSeries(static_cast<int>(VariantKind::on_gpu))->isVisible());
}

TEST(OffloadView, TheHostsFieldsGiveTheClisHostCacheAndExperts) {
    MainWindow w(catalog(), false);
    w.show();
    set_up(w);
    DeploymentView* d = w.deployment();
    d->gpuLayersField()->setText("44");
    emit d->gpuLayersField()->editingFinished();
    ASSERT_TRUE(d->hostMemoryField()->isVisibleTo(d));
    EXPECT_TRUE(d->hostPlatformField()->isVisibleTo(d));
    EXPECT_TRUE(d->cacheInRamField()->isVisibleTo(d));
    EXPECT_FALSE(d->expertsInRamField()->isVisibleTo(d));  // a dense model has no experts to keep in RAM
    EXPECT_EQ(d->hostMemoryField()->text(), "");           // not given: not checked
    EXPECT_EQ(d->hostPlatformField()->currentData().toString(), "ddr5-5600-2ch");

    // Each field is the CLI's option: the same scenario, the same figures.
    d->hostMemoryField()->setText("32GB");
    emit d->hostMemoryField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->host.memory_bytes, 32'000'000'000u);
    const int ddr4 = d->hostPlatformField()->findData(QStringLiteral("ddr4-3200-2ch"));
    ASSERT_GE(ddr4, 0);
    d->hostPlatformField()->setCurrentIndex(ddr4);
    emit d->hostPlatformField()->activated(ddr4);
    QTest::mouseClick(d->cacheInRamField(), Qt::LeftButton, {}, QPoint(4, d->cacheInRamField()->height() / 2));
    EXPECT_TRUE(w.model()->scenario().deployment->llama_cpp.no_kv_offload);
    std::vector<std::string> args = kCli;
    args.insert(args.end(),
                {"--gpu-layers", "44", "--host-memory", "32GB", "--host", "ddr4-3200-2ch", "--no-kv-offload"});
    const Scenario cli = cli_scenario(args);
    EXPECT_EQ(cli.deployment->host, w.model()->scenario().deployment->host);
    EXPECT_EQ(cli.deployment->llama_cpp, w.model()->scenario().deployment->llama_cpp);
    const auto f = fit(cli.arch, cli.kv_dtype, cli.workload, cli.parallel, *cli.deployment);
    ASSERT_TRUE(f.ok() && f->offload);
    const FitReport& shown = *w.model()->results().fit;
    ASSERT_TRUE(shown.offload);
    EXPECT_EQ(shown.offload->host_bytes, f->offload->host_bytes);
    EXPECT_EQ(shown.offload->kv_on_host_bytes, f->offload->kv_on_host_bytes);
    EXPECT_GT(shown.offload->kv_on_host_bytes, 0u);
    EXPECT_EQ(shown.offload->host_bandwidth_bytes_per_s, 51'200'000'000u);  // two channels of DDR4-3200
    EXPECT_DOUBLE_EQ(shown.offload->decode_tokens_per_s, f->offload->decode_tokens_per_s);
    // Undo takes each change back, one at a time.
    w.model()->undoStack()->undo();
    EXPECT_FALSE(w.model()->scenario().deployment->llama_cpp.no_kv_offload);
    EXPECT_FALSE(d->cacheInRamField()->isChecked());
    w.model()->undoStack()->undo();
    EXPECT_EQ(d->hostPlatformField()->currentData().toString(), "ddr5-5600-2ch");

    // Refused RAM is marked and changes nothing; emptied, the RAM is not checked again.
    d->hostMemoryField()->setText("lots");
    emit d->hostMemoryField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->host.memory_bytes, 32'000'000'000u);
    EXPECT_FALSE(d->unaccepted().isEmpty());
    d->hostMemoryField()->setText("");
    emit d->hostMemoryField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->host.memory_bytes, 0u);
    EXPECT_TRUE(d->unaccepted().isEmpty());

    // A model with experts: the blocks whose experts stay in RAM, as --n-cpu-moe.
    w.model()->loadCatalogModel("qwen3-30b-a3b");
    w.model()->edit("llama.cpp", [](Scenario& s) {
        s.deployment->engine = Engine::llama_cpp;
        s.deployment->gpu = *catalog().find_gpu("rtx-4060-ti-16gb");
    });
    ASSERT_TRUE(d->expertsInRamField()->isVisibleTo(d));
    d->expertsInRamField()->setText("20");
    emit d->expertsInRamField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.cpu_moe_layers, 20u);
    ASSERT_TRUE(w.model()->results().fit && w.model()->results().fit->offload);
    EXPECT_EQ(w.model()->results().fit->offload->cpu_moe_layers, 20u);
    // A bandwidth given on the command line is an item of its own while the scenario has it.
    w.model()->edit("bandwidth", [](Scenario& s) { s.deployment->host = {"", 0, 120'000'000'000}; });
    EXPECT_TRUE(d->hostPlatformField()->currentText().startsWith("120"))
        << d->hostPlatformField()->currentText().toStdString();
    w.model()->undoStack()->undo();
    EXPECT_FALSE(d->hostPlatformField()->currentText().contains("given or measured"));
    EXPECT_EQ(d->hostPlatformField()->findData(QString()), -1);

    // This computer: its read ceiling, measured as kvscope-cli --host this measures it, and its RAM.
    w.model()->edit("no RAM", [](Scenario& s) { s.deployment->host = {}; });
    const int self = d->hostPlatformField()->findData(QStringLiteral("this"));
    ASSERT_GE(self, 0);
    d->hostPlatformField()->setCurrentIndex(self);
    emit d->hostPlatformField()->activated(self);
    // Read on a thread of its own: the window answers meanwhile, the box waits, and nothing changes until it is read.
    EXPECT_TRUE(d->measuringHost());
    EXPECT_FALSE(d->hostPlatformField()->isEnabled());
    EXPECT_EQ(w.model()->scenario().deployment->host, HostSpec{});
    for (int i = 0; i < 600 && d->measuringHost(); ++i) QTest::qWait(50);
    ASSERT_FALSE(d->measuringHost());
    EXPECT_TRUE(d->hostPlatformField()->isEnabled());
    EXPECT_TRUE(d->hostNotice().isEmpty());
    const HostSpec measured = w.model()->scenario().deployment->host;
    EXPECT_TRUE(measured.id.empty());
    EXPECT_GT(measured.bandwidth_bytes_per_s, 0u);
    EXPECT_GT(measured.memory_bytes, 0u);
    EXPECT_TRUE(d->hostPlatformField()->currentText().contains("given or measured"));
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->scenario().deployment->host, HostSpec{});
}

TEST(OffloadView, AReadingArrivingAfterAnotherChangeIsNotApplied) {
    // A change made while this computer is measured (here a longer context) keeps the host as it was: the late
    // reading is for the scenario it was asked of, and the box says so.
    MainWindow w(catalog(), false);
    w.show();
    set_up(w);
    DeploymentView* d = w.deployment();
    QComboBox* host = d->hostPlatformField();
    const int self = host->findData(QStringLiteral("this"));
    ASSERT_GE(self, 0);
    host->setCurrentIndex(self);
    emit host->activated(self);
    ASSERT_TRUE(d->measuringHost());
    w.model()->edit("longer", [](Scenario& s) { s.workload.context_tokens = 32768; });
    for (int i = 0; i < 600 && d->measuringHost(); ++i) QTest::qWait(50);
    ASSERT_FALSE(d->measuringHost());
    EXPECT_EQ(w.model()->scenario().deployment->host, HostSpec{});
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 32768u);
    EXPECT_TRUE(d->hostNotice().contains("changed while")) << d->hostNotice().toStdString();
    EXPECT_TRUE(d->unaccepted().isEmpty());  // nothing typed: a save is not held back
}

TEST(OffloadView, AWindowClosedWhileItMeasuresThisComputerCloses) {
    // The reading's answer is queued to a view that is gone: dropped, the thread waited for, no crash.
    auto w = std::make_unique<MainWindow>(catalog(), false);
    w->show();
    set_up(*w);
    QComboBox* host = w->deployment()->hostPlatformField();
    const int self = host->findData(QStringLiteral("this"));
    ASSERT_GE(self, 0);
    host->setCurrentIndex(self);
    emit host->activated(self);
    EXPECT_TRUE(w->deployment()->measuringHost());
    w.reset();
    QTest::qWait(100);
}

}  // namespace
}  // namespace kvscope::ui
