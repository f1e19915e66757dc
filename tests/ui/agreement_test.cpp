// The window agrees with kvscope-cli: a model picked from the picker gives the CLI's bytes, fit
// and decode figures; the picker finds what people type; replication is said wherever it counts;
// the planner's table is the CLI's plan.
#include <QApplication>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/comparison_model.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/exporter.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/plan_view.h"
#include "kvscope/ui/scenario_model.h"
#include "options.h"
#include "scenario_options.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;
using testing::cli_scenario;

// Types `text` into the model picker and presses Enter, as a user would.
void pick(MainWindow& w, const QString& text) {
    QLineEdit* edit = w.inputs()->modelPicker()->lineEdit();
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, text);
    QTest::keyClick(edit, Qt::Key_Return);
}

TEST(Agreement, EveryCatalogModelPickedInTheWindowGivesTheClisNumbers) {
    MainWindow w(catalog(), false);
    w.show();
    w.deployment()->enableBox()->setChecked(true);  // H100 SXM, vLLM, as `--gpu h100-sxm` gives
    ASSERT_TRUE(w.model()->scenario().deployment);
    int compared = 0;
    for (const CatalogModel& m : catalog().models()) {
        // A format chosen before the pick must not survive it (the CLI never sees it).
        w.model()->edit("dtype", [](Scenario& s) { s.kv_dtype = KvDtype::fp8_e5m2; });
        pick(w, QString::fromStdString(m.id));
        ASSERT_EQ(w.model()->scenario().model_id, m.id) << "the picker did not load " << m.id;
        const bool tp2 = validate(Parallelism{2, 1}, m.model.arch).empty();
        const std::string tp = tp2 ? "2" : "1";
        w.model()->edit("workload", [tp2](Scenario& s) {
            s.workload.context_tokens = 32768;
            s.workload.batch = 16;
            s.parallel.tp = tp2 ? 2 : 1;
            s.deployment->gpu_count = s.parallel.tp;
        });
        const Scenario cli = cli_scenario(
            {"fit", "--model", m.id, "--context", "32k", "--batch", "16", "--gpu", "h100-sxm", "--tp", tp});
        ASSERT_TRUE(w.model()->errors().empty()) << m.id << ": " << join_errors(w.model()->errors());
        const Results& r = w.model()->results();
        ASSERT_TRUE(r.fit && r.decode) << m.id;
        EXPECT_EQ(r.scenario.kv_dtype, cli.kv_dtype) << m.id;
        EXPECT_EQ(r.scenario.deployment->weight_dtype, cli.deployment->weight_dtype) << m.id;
        auto kv = kv_cache_report(cli.arch, cli.kv_dtype, cli.workload, cli.parallel);
        auto f = fit(cli.arch, cli.kv_dtype, cli.workload, cli.parallel, *cli.deployment);
        ASSERT_TRUE(kv && f) << m.id;
        auto d = decode_estimate(cli.arch, cli.kv_dtype, cli.workload, cli.parallel, *cli.deployment, *f);
        ASSERT_TRUE(d) << m.id;
        EXPECT_EQ(r.kv.total_bytes, kv->total_bytes) << m.id;
        EXPECT_EQ(r.kv.state_bytes, kv->state_bytes) << m.id;
        EXPECT_EQ(r.fit->state_bytes_per_gpu, f->state_bytes_per_gpu) << m.id;
        EXPECT_EQ(r.fit->headroom_bytes_per_gpu, f->headroom_bytes_per_gpu) << m.id;
        EXPECT_EQ(r.fit->max_batch, f->max_batch) << m.id;
        EXPECT_EQ(r.fit->max_context, f->max_context) << m.id;
        EXPECT_EQ(r.fit->weights_bytes, f->weights_bytes) << m.id;
        EXPECT_EQ(r.decode->tokens_per_s_total, d->tokens_per_s_total) << m.id;
        ++compared;
    }
    EXPECT_GE(compared, 20);
}

TEST(Agreement, TheLayerMixIsShownAndALearnerCanChangeIt) {
    MainWindow w(catalog(), false);
    w.show();
    pick(w, "qwen3-next-80b-a3b");
    w.model()->edit("context", [](Scenario& s) { s.workload.context_tokens = 131072; });
    InputsPanel* in = w.inputs();
    EXPECT_EQ(in->layerMixLabel()->text(), "48 layers: 36 linear attention (gated DeltaNet), 12 full attention");
    EXPECT_TRUE(in->attentionEveryField()->isVisibleTo(&w));
    EXPECT_EQ(in->attentionEveryField()->value(), 4);
    EXPECT_FALSE(in->windowField()->isVisibleTo(&w));
    // The overview says what the state takes, and the formula shows it.
    EXPECT_TRUE(w.overview()->figuresText().contains("Recurrent state: 37.7 MiB"))
        << w.overview()->figuresText().toStdString();
    EXPECT_EQ(w.model()->results().kv.total_bytes, 3ull << 30);

    // Attention every 2 layers: 24 layers keep a KV cache, 24 a state; the CLI's answer for that layout agrees.
    in->attentionEveryField()->setValue(2);
    const Results& r = w.model()->results();
    EXPECT_EQ(r.kv.total_bytes, 6ull << 30);
    EXPECT_EQ(r.kv.state_bytes, 24ull * 1'097'728);
    EXPECT_EQ(in->layerMixLabel()->text(), "48 layers: 24 linear attention (gated DeltaNet), 24 full attention");
    // One undo step puts the published mix back.
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->results().kv.total_bytes, 3ull << 30);

    // A sliding-window model offers its window: Gemma 3 4B keeps 1,024 tokens on 29 of 34 layers.
    pick(w, "gemma-3-4b");
    EXPECT_FALSE(in->attentionEveryField()->isVisibleTo(&w));
    ASSERT_TRUE(in->windowField()->isVisibleTo(&w));
    EXPECT_EQ(in->windowField()->value(), 1024u);
    QLineEdit* window_text = in->windowField()->findChild<QLineEdit*>();
    EXPECT_EQ(window_text->text(), "1k");  // as the CLI writes tokens, in every locale
    w.model()->edit("context", [](Scenario& s) { s.workload.context_tokens = 32768; });
    const auto type = [&](const QString& text) {
        window_text->setFocus();
        window_text->selectAll();
        QTest::keyClicks(window_text, text);
        QTest::keyClick(window_text, Qt::Key_Return);
    };
    type("4k");  // read as the context is: 4,096 tokens, never "4"
    // 29 sliding layers x 4,096 + 5 global layers x 32,768 tokens, 4 KV heads x 256 x 2 (K, V) x 2 bytes.
    EXPECT_EQ(w.model()->results().kv.total_bytes, (29ull * 4096 + 5ull * 32768) * 4096);
    type("1,5k");  // a German decimal comma: 1,536 tokens, not 15
    EXPECT_EQ(layer_window(w.model()->scenario().arch, LayerKind::sliding), 1536u);
    // What does not read is said on the field, and nothing changes.
    type("4.0.96");
    EXPECT_EQ(layer_window(w.model()->scenario().arch, LayerKind::sliding), 1536u);
    EXPECT_TRUE(in->errorLabel()->text().contains("4.0.96")) << in->errorLabel()->text().toStdString();
    // A window of 0 reaches the calculator, which refuses it; the field stays in view to be mended.
    type("0");
    EXPECT_TRUE(in->windowField()->isVisibleTo(&w));
    EXPECT_FALSE(w.model()->errors().empty());
    type("2k");
    EXPECT_TRUE(w.model()->errors().empty());
}

TEST(Agreement, ThePickerFindsIdsRepoIdsNamesAndAliasesInAnyCase) {
    MainWindow w(catalog(), false);
    w.show();
    const std::vector<std::pair<QString, std::string>> typed{
        {"llama-3-70b", "llama-3-70b"},          {"qwen2.5-72b", "qwen2.5-72b"}, {"Qwen/Qwen2.5-72B", "qwen2.5-72b"},
        {"meta-llama/llama-2-7b", "llama-2-7b"}, {"LLAMA 3 8B", "llama-3-8b"},   {"teaching", "kvscope-teaching-32l"},
    };
    for (const auto& [text, id] : typed) {
        pick(w, text);
        EXPECT_EQ(w.model()->scenario().model_id, id) << text.toStdString();
        // The box names the model whose numbers are shown.
        QComboBox* picker = w.inputs()->modelPicker();
        EXPECT_EQ(picker->currentText(), picker->itemText(picker->findData(QString::fromStdString(id))));
    }
    // The list offers a model for its id and its repo id while typing.
    QCompleter* completer = w.inputs()->modelPicker()->completer();
    for (const QString& prefix : {QString("qwen2.5-72b"), QString("Qwen/Qwen2.5-72B")}) {
        completer->setCompletionPrefix(prefix);
        ASSERT_GE(completer->completionCount(), 1) << prefix.toStdString();
        EXPECT_TRUE(completer->currentCompletion().startsWith("Qwen2.5 72B")) << prefix.toStdString();
    }
}

TEST(Agreement, EnterOnTextThatMatchesNothingSaysSoAndShowsTheModelInUse) {
    MainWindow w(catalog(), false);
    w.show();
    pick(w, "qwen2.5-72b");
    ASSERT_EQ(w.model()->scenario().model_id, "qwen2.5-72b");
    QSignalSpy notices(w.inputs(), &InputsPanel::notice);
    pick(w, "llama-3-700b-nonsense");
    EXPECT_EQ(w.model()->scenario().model_id, "qwen2.5-72b");
    QComboBox* picker = w.inputs()->modelPicker();
    EXPECT_TRUE(picker->currentText().startsWith("Qwen2.5 72B")) << picker->currentText().toStdString();
    ASSERT_EQ(notices.size(), 1);
    EXPECT_TRUE(notices.front().front().toString().contains("No model in the catalog matches 'llama-3-700b-nonsense'"));
    EXPECT_TRUE(w.statusBar()->currentMessage().contains("No model")) << w.statusBar()->currentMessage().toStdString();
    // Leaving the box with half-typed text puts the model in use back too.
    QApplication::setActiveWindow(&w);
    picker->lineEdit()->setFocus();
    picker->lineEdit()->selectAll();
    QTest::keyClicks(picker->lineEdit(), "llama");
    ASSERT_EQ(picker->currentText(), "llama");
    w.inputs()->layersField()->setFocus();
    EXPECT_TRUE(picker->currentText().startsWith("Qwen2.5 72B")) << picker->currentText().toStdString();
    EXPECT_EQ(w.model()->scenario().model_id, "qwen2.5-72b");
}

TEST(Agreement, ReplicatedHeadsAreSaidInTheTableAndTheChart) {
    MainWindow w(catalog(), false);
    w.model()->edit("tp", [](Scenario& s) { s.parallel.tp = 2; });
    const ComparisonModel* c = w.overview()->comparison();
    bool said = false;
    for (int row = 0; row < c->rowCount(); ++row) {
        const QString layout = c->data(c->index(row, ComparisonModel::Layout), Qt::DisplayRole).toString();
        if (layout.startsWith("MQA")) {
            EXPECT_TRUE(layout.contains("replicated on 2 GPUs")) << layout.toStdString();
            said = true;
        } else {
            EXPECT_FALSE(layout.contains("replicated")) << layout.toStdString();
        }
    }
    EXPECT_TRUE(said);
    bool in_chart = false;
    for (std::size_t i = 0; i < kVariantKindCount; ++i)
        in_chart |= w.chart()->variantSeries(static_cast<int>(i))->name().startsWith("MQA, replicated on 2 GPUs");
    EXPECT_TRUE(in_chart);
}

TEST(Agreement, ThePlannerTableIsTheClisPlanAndAppliesALayout) {
    MainWindow w(catalog(), false);
    w.resize(1200, 900);
    w.show();
    pick(w, "llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("workload", [](Scenario& s) {
        s.workload.context_tokens = 8192;
        s.workload.batch = 64;
        s.kv_dtype = KvDtype::fp8_e4m3;
    });
    w.tabs()->setCurrentIndex(w.tabs()->indexOf(w.tabs()->widget(2)));  // Deployment fit: the plan is drawn when shown
    QApplication::processEvents();
    const Scenario cli = cli_scenario({"plan", "--model", "llama-3-70b", "--context", "8k", "--batch", "64", "--gpu",
                                       "h100-sxm", "--kv-dtype", "fp8"});
    auto plan = plan_deployments(cli.arch, cli.kv_dtype, cli.workload, *cli.deployment);
    ASSERT_TRUE(plan);
    QTableWidget* table = w.deployment()->plan()->table();
    // The table lists the layouts that are a choice (and the one in use, TP 1 PP 1 here), as kvscope-cli plan's table.
    std::vector<PlanOption> listed;
    std::size_t left_out = 0;
    for (const PlanOption& o : plan->options) {
        if (!o.dominated || (o.tp == 1 && o.pp == 1))
            listed.push_back(o);
        else
            ++left_out;
    }
    ASSERT_GT(left_out, 0u);  // the case worth testing: some layouts are no choice
    EXPECT_TRUE(w.deployment()->plan()->caption()->text().contains(QString::number(left_out) + " "))
        << w.deployment()->plan()->caption()->text().toStdString();
    // The plan's other notes and its warnings, under the table as under the CLI's ("not exact: the weights are split
    // evenly …" for its pipeline layouts).
    std::size_t other_notes = 0;
    const QString notes = w.deployment()->plan()->notesLabel()->text();
    for (const std::string& n : plan->notes) {
        if (n == plan->scope_note || n == plan->dominated_note) continue;
        ++other_notes;
        EXPECT_TRUE(notes.contains(QString::fromStdString("note: " + n))) << n << " in " << notes.toStdString();
    }
    for (const std::string& warning : plan->warnings)
        EXPECT_TRUE(notes.contains(QString::fromStdString("warning: " + warning))) << warning;
    ASSERT_GT(other_notes, 0u);
    EXPECT_TRUE(notes.contains("not exact: the weights are split evenly")) << notes.toStdString();
    ASSERT_EQ(table->rowCount(), static_cast<int>(listed.size()));
    for (int row = 0; row < table->rowCount(); ++row) {
        const PlanOption& o = listed[static_cast<std::size_t>(row)];
        EXPECT_EQ(table->item(row, PlanView::Gpus)->text().toULongLong(), o.gpus);
        EXPECT_TRUE(table->item(row, PlanView::Layout)->text().startsWith(QString::fromStdString(plan_layout_text(o))));
        EXPECT_EQ(table->item(row, PlanView::Fits)->text(), o.fits ? "yes" : "no");
        EXPECT_EQ(table->item(row, PlanView::MaxSequences)->text().toULongLong(), o.max_batch);
        if (!o.fits) continue;
        EXPECT_EQ(table->item(row, PlanView::Headroom)->text(),
                  QString::fromStdString(format_signed_bytes(o.headroom_bytes_per_gpu, UnitSystem::binary)));
        EXPECT_TRUE(table->item(row, PlanView::MaxContext)
                        ->text()
                        .startsWith(QString::fromStdString(format_count(o.max_context))));
        EXPECT_EQ(table->item(row, PlanView::PerSequence)->text(),
                  QString::fromStdString(number_text(o.decode_tokens_per_s_per_sequence, Notation::fixed, 1)));
        EXPECT_EQ(table->item(row, PlanView::InAll)->text(),
                  QString::fromStdString(number_text(o.decode_tokens_per_s, Notation::fixed, 0)));
    }
    // The smallest layout that fits in one replica, applied from its row: TP and PP change, one undo step.
    int row = 0;
    while (row < table->rowCount() &&
           !(listed[static_cast<std::size_t>(row)].fits && listed[static_cast<std::size_t>(row)].replicas == 1))
        ++row;
    ASSERT_LT(row, table->rowCount());
    const PlanOption chosen = listed[static_cast<std::size_t>(row)];
    table->selectRow(row);
    w.deployment()->plan()->applyButton()->click();
    EXPECT_EQ(w.model()->scenario().parallel.tp, chosen.tp);
    EXPECT_EQ(w.model()->scenario().parallel.pp, chosen.pp);
    EXPECT_EQ(w.model()->scenario().deployment->gpu_count, chosen.tp * chosen.pp);
    ASSERT_TRUE(w.model()->results().fit);
    EXPECT_TRUE(w.model()->results().fit->fits);
    EXPECT_TRUE(w.deployment()->gpuCountLabel()->text().contains("TP " + QString::number(chosen.tp)));
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->scenario().parallel.tp, 1u);
}

TEST(Agreement, AnImportedModelsWeightFormatStartsItsDeploymentAsInTheCli) {
    QTemporaryDir dir;
    const QString path = dir.filePath("half/config.json");
    ASSERT_TRUE(QDir().mkpath(dir.filePath("half")));
    testing::write_all(path, R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "max_position_embeddings": 4096, "torch_dtype": "float16"})");
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.importModelFile(path));
    w.deployment()->enableBox()->setChecked(true);
    const Scenario cli = cli_scenario({"fit", "--config", path.toStdString(), "--gpu", "h100-sxm"});
    ASSERT_TRUE(w.model()->scenario().deployment && cli.deployment);
    EXPECT_EQ(w.model()->scenario().deployment->weight_dtype, KvDtype::fp16);
    EXPECT_EQ(w.model()->scenario().deployment->weight_dtype, cli.deployment->weight_dtype);
    EXPECT_EQ(w.model()->scenario().kv_dtype, cli.kv_dtype);
}

TEST(Agreement, ADraftChosenInTheWindowIsTheClisDraft) {
    // An EAGLE-3 head from a file, in a folder with a space and a non-ASCII letter, and a catalog draft model.
    QTemporaryDir dir;
    const QString path = dir.filePath("EAGLE3 tête/config.json");
    ASSERT_TRUE(QDir().mkpath(dir.filePath("EAGLE3 tête")));
    testing::write_all(path, R"({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
        "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 1,
        "num_key_value_heads": 8, "vocab_size": 128256, "draft_vocab_size": 32000})");
    for (const QString& draft : {path, QStringLiteral("llama-3.2-1b")}) {
        MainWindow w(catalog(), false);
        w.model()->loadCatalogModel("llama-3-8b");
        w.deployment()->enableBox()->setChecked(true);
        DeploymentView* d = w.deployment();
        if (draft == path) {
            d->chooseDraft(path);
        } else {
            const int item = d->draftField()->findData(draft);
            ASSERT_GE(item, 0);
            emit d->draftField()->activated(item);
        }
        const Scenario cli =
            cli_scenario({"fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--draft", draft.toStdString()});
        ASSERT_TRUE(w.model()->scenario().deployment && cli.deployment);
        EXPECT_EQ(w.model()->scenario().deployment->draft, cli.deployment->draft) << draft.toStdString();
        const auto f = fit(cli.arch, cli.kv_dtype, cli.workload, cli.parallel, *cli.deployment);
        ASSERT_TRUE(f.ok()) << f.error_text();
        ASSERT_TRUE(w.model()->results().fit.has_value());
        EXPECT_EQ(w.model()->results().fit->weights_bytes, f->weights_bytes);
        EXPECT_EQ(w.model()->results().fit->kv_bytes_per_gpu, f->kv_bytes_per_gpu);
        EXPECT_EQ(w.model()->results().fit->max_batch, f->max_batch);
        EXPECT_GT(f->draft_weights_bytes, 0u);
    }
}

TEST(Agreement, TensorRtLlmsTokensPerStepSizeItsProfilingRunAsInTheCli) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-8b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    EXPECT_FALSE(d->trtllmTokensField()->isVisibleTo(d));  // vLLM: not its setting
    w.model()->edit("trt", [](Scenario& s) {
        s.deployment->engine = Engine::tensorrt_llm;
        s.workload.context_tokens = 8192;
    });
    ASSERT_TRUE(d->trtllmTokensField()->isVisibleTo(d));
    EXPECT_FALSE(d->ubatchField()->isVisibleTo(d));
    EXPECT_EQ(d->trtllmTokensField()->placeholderText(), "TensorRT-LLM's default: 8,192");
    const auto peak = [&w] { return w.model()->results().fit->reserve_items.front().bytes; };
    EXPECT_EQ(peak(), 8192ull * (3 * 4096 + 3 * 14336) * 2);
    d->trtllmTokensField()->setText("16k");
    emit d->trtllmTokensField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->tensorrt_llm.max_num_tokens, 16384u);
    EXPECT_EQ(peak(), 16384ull * (3 * 4096 + 3 * 14336) * 2);
    // The CLI with the same option builds the same deployment.
    const Scenario cli = cli_scenario({"fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--engine", "trt-llm",
                                       "--context", "8k", "--max-num-tokens", "16k"});
    EXPECT_EQ(cli.deployment->tensorrt_llm, w.model()->scenario().deployment->tensorrt_llm);
    EXPECT_EQ(cli.deployment->engine, Engine::tensorrt_llm);
    // 0 is no setting: said, and nothing changes; undo goes back a step.
    d->trtllmTokensField()->setText("0");
    emit d->trtllmTokensField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->tensorrt_llm.max_num_tokens, 16384u);
    EXPECT_TRUE(
        d->trtllmTokensField()->toolTip().contains("'0' is no count it takes: at least 1, or empty for TensorRT-LLM's"))
        << d->trtllmTokensField()->toolTip().toStdString();
    d->trtllmTokensField()->setText("");
    emit d->trtllmTokensField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->tensorrt_llm.max_num_tokens, 0u);
    w.model()->undoStack()->undo();
    EXPECT_EQ(d->trtllmTokensField()->text(), "16,384");
}

TEST(Agreement, TheDeploymentTabWarnsAsFitDoesAndReadsABandwidthAsItShowsIt) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    w.model()->edit("long", [](Scenario& s) { s.workload.context_tokens = 32768; });
    // kvscope-cli fit's "warning: the context of 32,768 tokens exceeds the model's 8,192 max positions".
    const Scenario cli = cli_scenario({"fit", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--context", "32k"});
    const auto f = fit(cli.arch, cli.kv_dtype, cli.workload, cli.parallel, *cli.deployment);
    ASSERT_TRUE(f) << f.error_text();
    ASSERT_FALSE(f->warnings.empty());
    for (const auto& warning : f->warnings)
        EXPECT_TRUE(d->figuresLabel()->text().contains(QString::fromStdString(warning)))
            << warning << "\n"
            << d->figuresLabel()->text().toStdString();
    // The bandwidth as the field shows it, "/s" and all, is read as typed, as --gpu-bandwidth reads it.
    EXPECT_EQ(d->bandwidthField()->text(), "3.35 TB/s");
    d->bandwidthField()->setText("4 TB/s");
    d->bandwidthField()->setModified(true);
    emit d->bandwidthField()->editingFinished();
    const Scenario typed = cli_scenario(
        {"fit", "--model", "llama-3-70b", "--gpu-memory", "80GiB", "--gpu-bandwidth", "4 TB/s", "--context", "32k"});
    EXPECT_EQ(w.model()->scenario().deployment->gpu.bandwidth_bytes_per_s, typed.deployment->gpu.bandwidth_bytes_per_s);
    EXPECT_EQ(typed.deployment->gpu.bandwidth_bytes_per_s, 4'000'000'000'000u);
}

TEST(Agreement, AnUnmodelledLayoutIsNotExactOnScreenAsOnTheCli) {
    QTemporaryDir dir;
    // attention_chunk_size outside Llama 4: which layers attend within chunks is not known.
    const QString path = testing::write_config(
        dir, "chunked", R"({"model_type": "llama", "num_hidden_layers": 48, "num_attention_heads": 16,
        "num_key_value_heads": 2, "hidden_size": 2048, "head_dim": 256, "max_position_embeddings": 262144,
        "attention_chunk_size": 8192, "torch_dtype": "bfloat16"})");
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.importModelFile(path));
    const QString shown = w.overview()->warningsLabel()->text();
    EXPECT_TRUE(w.overview()->warningsLabel()->isVisibleTo(&w));
    EXPECT_TRUE(shown.contains("not exact: attention_chunk_size (line 3)")) << shown.toStdString();
    // The headline figure is not presented as exact.
    EXPECT_TRUE(w.overview()->totalLabel()->text().endsWith("— not exact"))
        << w.overview()->totalLabel()->text().toStdString();
    EXPECT_FALSE(w.overview()->figuresText().contains("Exactly"));
    const Scenario cli = cli_scenario({"kv", "--config", path.toStdString()});
    auto kv = kv_cache_report(cli.arch, cli.kv_dtype, cli.workload, cli.parallel);
    ASSERT_TRUE(kv);
    ASSERT_FALSE(kv->warnings.empty());
    EXPECT_TRUE(shown.contains(QString::fromStdString(kv->warnings.back())));
}

TEST(Agreement, AnImportedModelHasOneNameEverywhere) {
    QTemporaryDir dir;
    const QString folder = dir.filePath("hub/models--acme--Tiny-LM-2B/snapshots/0123abcd");
    ASSERT_TRUE(QDir().mkpath(folder));
    const QString path = folder + "/config.json";
    testing::write_all(path, R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "max_position_embeddings": 4096})");
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.importModelFile(path));
    EXPECT_EQ(w.model()->description(), "acme/Tiny-LM-2B");
    EXPECT_EQ(w.inputs()->modelPicker()->currentText(), "acme/Tiny-LM-2B");
    EXPECT_FALSE(w.windowTitle().contains(folder)) << w.windowTitle().toStdString();
    // kvscope-cli names it the same.
    EXPECT_EQ(cli_scenario({"kv", "--config", path.toStdString()}).arch.name, "acme/Tiny-LM-2B");
    // Saved and opened again: the same name.
    const QString saved = dir.filePath("tiny.kvscope.json");
    ASSERT_TRUE(w.saveScenarioFile(saved));
    MainWindow other(catalog(), false);
    ASSERT_TRUE(other.openScenarioFile(saved));
    EXPECT_EQ(other.model()->description(), "acme/Tiny-LM-2B");
    EXPECT_EQ(other.inputs()->modelPicker()->currentText(), "acme/Tiny-LM-2B");
}

TEST(Agreement, AnImportsWarningsAreSavedWithItsScenarioAndSaidAgainWhenOpened) {
    // A quantization KVScope does not model: the weights are a guess. Saved and opened again (in another window,
    // from a path with spaces and accents), the scenario still says so, in its notes and in its exports.
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    testing::write_all(path, R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "weirdq"}})");
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.importModelFile(path));
    const QStringList warnings = w.model()->importWarnings();
    ASSERT_FALSE(warnings.isEmpty());
    EXPECT_TRUE(warnings.join('\n').contains("'weirdq' is not modelled")) << warnings.join('\n').toStdString();
    const QString saved = dir.filePath("Modèles à tester/weird q.kvscope.json");
    ASSERT_TRUE(QDir().mkpath(QFileInfo(saved).absolutePath()));
    ASSERT_TRUE(w.saveScenarioFile(saved));
    MainWindow other(catalog(), false);
    ASSERT_TRUE(other.openScenarioFile(saved));
    EXPECT_EQ(other.model()->importWarnings(), warnings);
    EXPECT_TRUE(QString::fromUtf8(results_json(*other.model())).contains("'weirdq' is not modelled"));
    // A scenario with no such notes writes none: its file reads the same in versions before them.
    MainWindow plain(catalog(), false);
    const QString plain_path = dir.filePath("plain.kvscope.json");
    ASSERT_TRUE(plain.saveScenarioFile(plain_path));
    QFile f(plain_path);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    EXPECT_FALSE(f.readAll().contains("\"warnings\""));
}

}  // namespace
}  // namespace kvscope::ui

namespace kvscope::ui {
namespace {

// A safetensors file of one BF16 tensor of `values` values.
QByteArray safetensors_of(std::uint64_t values) {
    const std::string header = R"({"w":{"dtype":"BF16","shape":[)" + std::to_string(values) +
                               R"(],"data_offsets":[0,)" + std::to_string(values * 2) + "]}}";
    std::string out;
    kvscope::gguf::Writer::put(out, header.size(), 8);
    out += header + std::string(values * 2, '\0');
    return QByteArray::fromStdString(out);
}

// Written whole (its tensors' data a hole): a header alone is a file llama.cpp cannot load, and is said.
kvscope::gguf::Writer small_gguf() {
    kvscope::gguf::Writer w;
    w.str("general.architecture", "gemma2").str("general.name", "Tiny Gemma").u32("gemma2.block_count", 6);
    w.u32("gemma2.context_length", 8192).u32("gemma2.embedding_length", 1024).u32("gemma2.feed_forward_length", 4096);
    w.u32("gemma2.attention.head_count", 8).u32("gemma2.attention.head_count_kv", 4);
    w.u32("gemma2.attention.key_length", 128).u32("gemma2.attention.value_length", 128);
    w.u32("gemma2.attention.sliding_window", 1024);
    w.tensor("token_embd.weight", {1024, 32000}, 12).tensor("blk.0.ffn_gate.weight", {1024, 4096}, 8);
    return w;
}

void write_bytes(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

TEST(Agreement, AGgufAndAModelFolderStartTheirDeploymentAsInTheCliAndKeepItWhenSaved) {
    QTemporaryDir dir;
    const QString gguf = dir.filePath("Modèles à tester/tiny gemma.Q4_K_M.gguf");
    small_gguf().write_file(gguf.toStdString());
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.importModelFile(gguf)) << w.messages()->text().toStdString();
    EXPECT_EQ(w.model()->description(), "Tiny Gemma");
    w.deployment()->enableBox()->setChecked(true);
    const Scenario cli = cli_scenario({"fit", "--gguf", gguf.toStdString(), "--gpu", "h100-sxm"});
    ASSERT_TRUE(w.model()->scenario().deployment && cli.deployment);
    const Deployment& shown = *w.model()->scenario().deployment;
    EXPECT_EQ(shown.engine, Engine::llama_cpp);
    EXPECT_EQ(shown, *cli.deployment);  // engine, fraction, exact weights and where from: all as the CLI's
    EXPECT_EQ(shown.weights_bytes_exact, 1024ull * 32000 / 256 * 144 + 1024ull * 4096 / 32 * 34);
    EXPECT_EQ(w.model()->scenario().arch, cli.arch);
    ASSERT_TRUE(w.model()->results().fit);
    EXPECT_TRUE(w.model()->results().fit->weights_exact);
    EXPECT_TRUE(w.deployment()->figuresLabel()->text().contains("exact from the GGUF's 2 tensors"))
        << w.deployment()->figuresLabel()->text().toStdString();
    // The Weights box says the bytes are the files'; a format instead counts the parameters, and back again.
    QComboBox* weights = w.deployment()->weightsField();
    EXPECT_EQ(weights->currentText(), "exact (the files)");
    emit weights->activated(weights->findText("fp8_e4m3"));
    EXPECT_EQ(w.model()->scenario().deployment->weights_bytes_exact, 0u);
    EXPECT_FALSE(w.model()->results().fit->weights_exact);
    emit weights->activated(weights->findText("exact (the files)"));
    EXPECT_EQ(*w.model()->scenario().deployment, *cli.deployment);
    // Saved and opened in a second window: the same exact weights.
    const QString saved = dir.filePath("Modèles à tester/tiny.kvscope.json");
    ASSERT_TRUE(w.saveScenarioFile(saved));
    MainWindow other(catalog(), false);
    ASSERT_TRUE(other.openScenarioFile(saved));
    ASSERT_TRUE(other.model()->scenario().deployment);
    EXPECT_EQ(*other.model()->scenario().deployment, shown);
    EXPECT_EQ(other.model()->results().fit->weights_bytes, w.model()->results().fit->weights_bytes);

    // A model folder: config.json and its safetensors, the weights exact as kvscope-cli --model-dir gives them.
    const QString folder = dir.filePath("Modèles à tester/Tiny LM");
    write_bytes(folder + "/config.json", R"({"model_type": "llama", "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512, "max_position_embeddings": 4096})");
    write_bytes(folder + "/model.safetensors", safetensors_of(5000));
    ASSERT_TRUE(w.importModelFile(folder)) << w.messages()->text().toStdString();
    const Scenario dir_cli = cli_scenario({"fit", "--model-dir", folder.toStdString(), "--gpu", "h100-sxm"});
    ASSERT_TRUE(w.model()->scenario().deployment && dir_cli.deployment);
    EXPECT_EQ(w.model()->scenario().deployment->weights_bytes_exact, 10000u);
    EXPECT_EQ(w.model()->scenario().deployment->weights_source, dir_cli.deployment->weights_source);
    EXPECT_EQ(w.model()->results().fit->weights_bytes, 10000u);
    // Another shape is no longer the files': its weights are estimated again, and undo brings the files' back.
    QSignalSpy notices(w.model(), &ScenarioModel::notice);
    w.model()->setLayers(3);
    EXPECT_EQ(w.model()->scenario().deployment->weights_bytes_exact, 0u);
    EXPECT_EQ(w.model()->modelWeights().exact_bytes, 0u);
    EXPECT_EQ(w.deployment()->weightsField()->findText("exact (the files)"), -1);
    ASSERT_EQ(notices.count(), 1);
    EXPECT_TRUE(notices.front().front().toString().contains("estimated from the parameters again"));
    EXPECT_TRUE(w.statusBar()->currentMessage().contains("estimated from the parameters again"));
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->scenario().deployment->weights_bytes_exact, 10000u);
    // The notice goes with the edit it was about.
    EXPECT_FALSE(w.statusBar()->currentMessage().contains("estimated from the parameters again"))
        << w.statusBar()->currentMessage().toStdString();
    // A GGUF saved before any deployment was checked: opened in another window, its deployment starts as the
    // file's (llama.cpp, the exact bytes), as kvscope-cli --gguf starts it.
    MainWindow third(catalog(), false);
    ASSERT_TRUE(third.importModelFile(gguf));
    const QString plain = dir.filePath("Modèles à tester/no deployment.kvscope.json");
    ASSERT_TRUE(third.saveScenarioFile(plain));
    MainWindow fourth(catalog(), false);
    ASSERT_TRUE(fourth.openScenarioFile(plain));
    fourth.deployment()->enableBox()->setChecked(true);
    ASSERT_TRUE(fourth.model()->scenario().deployment);
    EXPECT_EQ(*fourth.model()->scenario().deployment, *cli.deployment);
    // A corrupt GGUF is refused with its byte; nothing entered is lost.
    const Scenario before = w.model()->scenario();
    write_bytes(dir.filePath("broken.gguf"), QByteArray::fromStdString(small_gguf().bytes().substr(0, 60)));
    EXPECT_FALSE(w.importModelFile(dir.filePath("broken.gguf")));
    EXPECT_TRUE(w.messages()->text().contains("broken.gguf: byte ")) << w.messages()->text().toStdString();
    EXPECT_EQ(w.model()->scenario(), before);
}

// Sets environment variables for a test and puts back what was there, also when an assertion returns early.
class EnvironmentFor {
public:
    EnvironmentFor(std::initializer_list<std::pair<const char*, QByteArray>> vars) {
        for (const auto& [name, value] : vars) {
            saved_.push_back({name, qgetenv(name), qEnvironmentVariableIsSet(name)});
            qputenv(name, value);
        }
    }
    ~EnvironmentFor() {
        for (const auto& s : saved_)
            if (s.was_set)
                qputenv(s.name, s.value);
            else
                qunsetenv(s.name);
    }
    EnvironmentFor(const EnvironmentFor&) = delete;
    EnvironmentFor& operator=(const EnvironmentFor&) = delete;

private:
    struct Saved {
        const char* name;
        QByteArray value;
        bool was_set;
    };
    std::vector<Saved> saved_;
};

TEST(Agreement, TheModelsOnThisMachineAreInThePickerAndLoadAsTheCliReadsThem) {
    QTemporaryDir dir;
    const QString snapshot = dir.filePath("hub/models--acme--Tiny-LM-2B/snapshots/abc");
    write_bytes(snapshot + "/config.json", R"({"model_type": "llama", "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512, "max_position_embeddings": 4096})");
    small_gguf().write_file(dir.filePath("home/.lmstudio/models/pub/Tiny-GGUF/tiny.gguf").toStdString());
    const EnvironmentFor env{{"HF_HUB_CACHE", dir.filePath("hub").toUtf8()},
                             {"OLLAMA_MODELS", dir.filePath("none").toUtf8()},
                             {"HOME", dir.filePath("home").toUtf8()}};
    MainWindow w(catalog(), false);
    QComboBox* picker = w.inputs()->modelPicker();
    const int heading = picker->findText("On this machine");
    ASSERT_GE(heading, 0);
    EXPECT_FALSE(qobject_cast<QStandardItemModel*>(picker->model())->item(heading)->isEnabled());
    const int hf = picker->findText("acme/Tiny-LM-2B", Qt::MatchStartsWith);
    const int lms = picker->findText("pub/Tiny-GGUF/tiny.gguf", Qt::MatchStartsWith);
    ASSERT_GT(hf, heading);
    ASSERT_GT(lms, heading);
    EXPECT_TRUE(picker->itemText(lms).endsWith("LM Studio"));
    emit picker->activated(lms);
    const Scenario cli = cli_scenario({"kv", "--model", "pub/Tiny-GGUF/tiny.gguf"});
    EXPECT_EQ(w.model()->scenario().arch, cli.arch);
    EXPECT_EQ(w.model()->scenario().model_id, cli.model_id);
    EXPECT_EQ(w.model()->results().kv.total_bytes,
              kv_cache_report(cli.arch, cli.kv_dtype, cli.workload).value().total_bytes);
    // Typed and Enter, as for a catalog model.
    pick(w, "acme/tiny-lm-2b");
    EXPECT_EQ(w.model()->description(), "acme/Tiny-LM-2B");
    EXPECT_EQ(w.model()->scenario().arch, cli_scenario({"kv", "--model", "acme/Tiny-LM-2B"}).arch);

    // A model downloaded while the window is open is in the list the next time the picker is entered: no restart.
    EXPECT_LT(picker->findText("acme/Later-1B", Qt::MatchStartsWith), 0);
    write_bytes(dir.filePath("hub/models--acme--Later-1B/snapshots/def/config.json"),
                R"({"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
        "hidden_size": 512, "max_position_embeddings": 4096})");
    w.show();
    w.tabs()->tabBar()->setFocus();
    picker->setFocus();
    QApplication::processEvents();
    EXPECT_GT(picker->findText("acme/Later-1B", Qt::MatchStartsWith), heading);
    pick(w, "acme/later-1b");
    EXPECT_EQ(w.model()->scenario().arch.layers, 4u);
}

}  // namespace
}  // namespace kvscope::ui
