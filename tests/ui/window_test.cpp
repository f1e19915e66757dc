// The window as a whole: drag and drop, settings across restarts, the deployment tab,
// and a chart that is updated in place.
#include <QAction>
#include <QApplication>
#include <QCategoryAxis>
#include <QChart>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <gtest/gtest.h>

#include "kvscope/calculator/fit.h"
#include "kvscope/ui/decimal_spin_box.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/gpu_memory_bar.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;

void drop(QWidget* target, const QString& path) {
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(path)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &enter);
    ASSERT_TRUE(enter.isAccepted());
    QDropEvent dropped(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(target, &dropped);
}

TEST(Window, DroppingAConfigImportsIt) {
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    testing::write_all(path, R"({"model_type": "llama", "num_hidden_layers": 40, "num_attention_heads": 40,
        "num_key_value_heads": 8, "hidden_size": 5120, "intermediate_size": 13824, "vocab_size": 32000,
        "max_position_embeddings": 4096, "torch_dtype": "bfloat16"})");
    MainWindow w(catalog(), false);
    drop(&w, path);
    EXPECT_EQ(w.model()->scenario().arch.layers, 40u);
    EXPECT_EQ(w.model()->scenario().kv_dtype, KvDtype::bf16);
    EXPECT_TRUE(w.windowTitle().contains("KVScope"));
}

TEST(Window, DroppingABrokenConfigShowsWhyAndKeepsTheScenario) {
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    testing::write_all(path, "{\"num_hidden_layers\": 32,");
    MainWindow w(catalog(), false);
    const Scenario before = w.model()->scenario();
    drop(&w, path);
    EXPECT_EQ(w.messages()->kind(), MessageBar::Kind::error);
    EXPECT_TRUE(w.messages()->isVisibleTo(&w));
    EXPECT_TRUE(w.messages()->text().contains("config.json")) << w.messages()->text().toStdString();
    EXPECT_EQ(w.model()->scenario(), before);
}

TEST(Window, TheLastScenarioUnitsAndAxesComeBackAtStart) {
    {
        MainWindow first(catalog(), true);
        first.model()->loadCatalogModel("qwen2.5-7b");
        first.model()->edit("ctx", [](Scenario& s) { s.workload.context_tokens = 65536; });
        first.model()->setUnits(UnitSystem::decimal);
        first.chart()->setLogBytes(true);
        first.tabs()->setCurrentIndex(MainWindow::LearnTab);
        first.learn()->setPage(LearnView::WhatIfs);
        first.close();  // closing saves
    }
    MainWindow second(catalog(), true);
    EXPECT_EQ(second.model()->scenario().model_id, "qwen2.5-7b");
    EXPECT_EQ(second.model()->scenario().workload.context_tokens, 65536u);
    EXPECT_EQ(second.model()->units(), UnitSystem::decimal);
    EXPECT_TRUE(second.chart()->logBytes());
    EXPECT_EQ(second.tabs()->currentIndex(), MainWindow::LearnTab);
    EXPECT_EQ(second.learn()->page(), LearnView::WhatIfs);
    EXPECT_EQ(second.model()->undoStack()->count(), 0);  // restoring is not an edit
    QSettings().clear();
}

TEST(Window, ACorruptSavedScenarioFallsBackToTheDefaultWithAMessage) {
    QSettings().setValue("scenario/last", "{\"kvscope_scenario\": 1, \"workload\": 7}");
    MainWindow w(catalog(), true);
    EXPECT_EQ(w.model()->results().kv.total_bytes, 4ull << 30);
    EXPECT_EQ(w.messages()->kind(), MessageBar::Kind::error);
    EXPECT_TRUE(w.messages()->text().contains("could not be restored"));
    QSettings().clear();
}

TEST(Window, DeploymentTabSaysNoContextLimitForAModelWhoseAttentionKeepsOnlyAWindowAsFitDoes) {
    // RecurrentGemma: recurrent blocks and local attention over 2,048 tokens, no max positions. kvscope-cli fit says
    // "max context: no limit: every attention layer keeps only its window, …" (cli_limits_test); the tab says the
    // same reason, never the search's bound of 2^40 tokens as a figure.
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("recurrentgemma-9b");
    w.deployment()->enableBox()->setChecked(true);
    const QString figures = w.deployment()->figuresLabel()->text();
    EXPECT_TRUE(
        figures.contains("Max context: <b>no limit</b> — every attention layer keeps only its window, so a "
                         "longer context does not change the memory"))
        << figures.toStdString();
    EXPECT_FALSE(figures.contains("1,099,511,627,776")) << figures.toStdString();
}

TEST(Window, DeploymentTabAnswersTheReadmeQuestion) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);  // starts on one H100 with vLLM's rule
    ASSERT_TRUE(w.model()->scenario().deployment.has_value());
    w.model()->edit("plan", [](Scenario& s) {
        s.kv_dtype = KvDtype::fp8_e4m3;
        s.workload.context_tokens = 131072;
        s.workload.batch = 8;
        s.parallel.tp = 2;
        s.deployment->gpu_count = 2;
    });
    const QString verdict = w.deployment()->verdictLabel()->text();
    EXPECT_TRUE(verdict.startsWith("Does not fit")) << verdict.toStdString();
    EXPECT_TRUE(w.deployment()->figuresLabel()->text().contains("Max context at 8 sequences: <b>5,540 tokens</b>"))
        << w.deployment()->figuresLabel()->text().toStdString();
    // vLLM's reserve, part by part, as kvscope-cli fit names it.
    EXPECT_TRUE(w.deployment()->figuresLabel()->text().contains(
        "Reserve 2.59 GiB per GPU (estimate): profile peak 2.45 GiB, non-torch memory 150 MiB"))
        << w.deployment()->figuresLabel()->text().toStdString();
    // No speed of its own for a deployment that does not fit: the floor is what it would be if it fitted (as
    // kvscope-cli fit's "decode floor: if it fitted, …").
    EXPECT_TRUE(w.deployment()->figuresLabel()->text().contains(
        "Decode estimate: <b>none</b>, it does not fit (the memory-bandwidth floor if it fitted, "))
        << w.deployment()->figuresLabel()->text().toStdString();
    EXPECT_EQ(w.deployment()->bars()->segments().size(), 5);
    EXPECT_TRUE(w.statusSummary().contains("does not fit on 2 × NVIDIA H100"));
    // At a memory fraction of 0.85 the weights and reserves alone do not fit: the shortfall is still fit's and the
    // report's (the cache's need included), with the reason beside it (kvscope-cli fit: "short by 80.6 GiB").
    w.model()->edit("fraction", [](Scenario& s) {
        s.deployment->fraction = 0.85;
        s.deployment->fraction_given = true;
    });
    EXPECT_TRUE(w.deployment()->verdictLabel()->text().startsWith(
        "Does not fit: short by 80.6 GiB (86.5 GB) per GPU — the weights and reserves alone exceed the memory the "
        "engine may use by 615 MiB"))
        << w.deployment()->verdictLabel()->text().toStdString();
    w.model()->undoStack()->undo();
    // Four more GPUs at tensor parallel 8 make it fit.
    w.model()->edit("more", [](Scenario& s) {
        s.parallel.tp = 8;
        s.deployment->gpu_count = 8;
    });
    EXPECT_TRUE(w.deployment()->verdictLabel()->text().startsWith("Fits"))
        << w.deployment()->verdictLabel()->text().toStdString();
    EXPECT_TRUE(w.deployment()->figuresLabel()->text().contains("Decode estimate: <b>"))
        << w.deployment()->figuresLabel()->text().toStdString();
    EXPECT_FALSE(w.deployment()->figuresLabel()->text().contains("if it fitted"));
}

TEST(Window, TheBarsLegendGivesTheWholeWeightsWhenTheyDoNotFitTheGpu) {
    // Qwen3-Next 80B at 128k x 8 on one H100: 149 GiB of weights on a 79.6 GiB GPU. The legend gives the weights'
    // whole size (as the figures do) and how much of it the bar holds; nothing "left unused" past the bar's end.
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("big", [](Scenario& s) {
        s.workload.context_tokens = 131072;
        s.workload.batch = 8;
    });
    const FitReport& f = *w.model()->results().fit;
    ASSERT_GT(f.weights_bytes_per_gpu, f.memory_bytes_per_gpu);
    const auto segments = w.deployment()->bars()->segments();
    std::uint64_t drawn = 0;
    for (const auto& seg : segments) {
        drawn += seg.bytes;
        EXPECT_NE(seg.label, "left unused");
    }
    EXPECT_LE(drawn, f.memory_bytes_per_gpu);
    ASSERT_FALSE(segments.isEmpty());
    EXPECT_EQ(segments.front().label, "weights");
    EXPECT_EQ(segments.front().legend, QString("weights %1 (%2 of it in the bar)")
                                           .arg(QString::fromStdString(format_bytes(f.weights_bytes_per_gpu)),
                                                QString::fromStdString(format_bytes(f.memory_bytes_per_gpu))));
    EXPECT_TRUE(segments.front().legend.startsWith("weights 149 GiB")) << segments.front().legend.toStdString();
}

TEST(Window, TheDeploymentTabSaysWhenOnlyVllmsStartCheckDoesNotPass) {
    // kvscope-cli fit --model gemma-3-27b --gpu h100-sxm --context 128k --utilization 0.85: "DOES NOT FIT: short by
    // 1.98 GiB per GPU at vLLM's start check (see the warning); decoding alone would fit" (cli_test).
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("gemma-3-27b");
    w.deployment()->enableBox()->setChecked(true);  // one H100, vLLM
    w.model()->edit("start check", [](Scenario& s) {
        s.workload.context_tokens = 131072;
        s.deployment->fraction = 0.85;
        s.deployment->fraction_given = true;
    });
    const QString verdict = w.deployment()->verdictLabel()->text();
    EXPECT_TRUE(
        verdict.startsWith("Does not fit: short by 1.98 GiB (2.13 GB) per GPU at vLLM's start check (see the "
                           "warning); decoding alone would fit"))
        << verdict.toStdString();
    const auto segments = w.deployment()->bars()->segments();
    EXPECT_TRUE(std::any_of(segments.begin(), segments.end(),
                            [](const auto& seg) { return seg.label.startsWith("vLLM start check"); }));
    EXPECT_TRUE(w.deployment()->figuresLabel()->text().contains("vLLM would not start"))
        << w.deployment()->figuresLabel()->text().toStdString();
}

TEST(Window, VllmsStartupSettingsAreFieldsThatChangeItsReserve) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);  // one H100, vLLM
    DeploymentView* d = w.deployment();
    EXPECT_TRUE(d->vllmVersionField()->isVisibleTo(d));
    EXPECT_EQ(d->vllmSequencesField()->placeholderText(), "vLLM's default: 1,024");
    EXPECT_EQ(d->vllmTokensField()->placeholderText(), "vLLM's default: 8,192");
    // Fewer sequences a step: the forward pass, not the sampler, is the peak (as --max-num-seqs 256).
    d->vllmSequencesField()->setText("256");
    d->vllmSequencesField()->setModified(true);
    emit d->vllmSequencesField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->vllm.max_num_seqs, 256u);
    EXPECT_TRUE(d->figuresLabel()->text().contains("profile peak 1.69 GiB")) << d->figuresLabel()->text().toStdString();
    // A typo is marked and changes nothing.
    d->vllmTokensField()->setText("12q");
    emit d->vllmTokensField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->vllm.max_num_batched_tokens, 0u);
    EXPECT_EQ(d->vllmTokensField()->text(), "12q");
    // 0.21 subtracts its CUDA graphs; unticking them is --enforce-eager.
    const int v21 = d->vllmVersionField()->findText("0.21");
    ASSERT_GE(v21, 0);
    d->vllmVersionField()->setCurrentIndex(v21);
    emit d->vllmVersionField()->activated(v21);
    EXPECT_TRUE(d->figuresLabel()->text().contains("CUDA graphs 512 MiB")) << d->figuresLabel()->text().toStdString();
    d->vllmGraphsField()->click();
    EXPECT_TRUE(w.model()->scenario().deployment->vllm.enforce_eager);
    EXPECT_FALSE(d->figuresLabel()->text().contains("CUDA graphs")) << d->figuresLabel()->text().toStdString();
    // 0 is refused as on the command line; a later version (from a file or --vllm-version) is shown as it is.
    d->vllmSequencesField()->setText("0");
    emit d->vllmSequencesField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->vllm.max_num_seqs, 256u);
    EXPECT_TRUE(d->vllmSequencesField()->toolTip().contains("'0' is no count it takes: at least 1"))
        << d->vllmSequencesField()->toolTip().toStdString();
    w.model()->edit("later", [](Scenario& s) { s.deployment->vllm.version_minor = 25; });
    EXPECT_EQ(d->vllmVersionField()->currentText(), "0.25 (0.21's rules)");
    w.model()->edit("later patch", [](Scenario& s) { s.deployment->vllm.version_patch = 1; });
    EXPECT_EQ(d->vllmVersionField()->currentText(), "0.25.1 (0.21's rules)");
    // 0.6.4 counted the CUDA context outside torch: its own item, and choosing another version forgets the patch.
    const int v064 = d->vllmVersionField()->findText("0.6.4");
    ASSERT_GE(v064, 0);
    d->vllmVersionField()->setCurrentIndex(v064);
    emit d->vllmVersionField()->activated(v064);
    EXPECT_EQ(w.model()->scenario().deployment->vllm.version_minor, 6u);
    EXPECT_EQ(w.model()->scenario().deployment->vllm.version_patch, 4u);
    EXPECT_TRUE(d->figuresLabel()->text().contains("non-torch memory 350 MiB"))
        << d->figuresLabel()->text().toStdString();
    const int v06 = d->vllmVersionField()->findText("0.6");
    d->vllmVersionField()->setCurrentIndex(v06);
    emit d->vllmVersionField()->activated(v06);
    EXPECT_FALSE(w.model()->scenario().deployment->vllm.version_patch.has_value());
    EXPECT_TRUE(d->figuresLabel()->text().contains("non-torch memory 150 MiB"))
        << d->figuresLabel()->text().toStdString();
    // Another engine has no such settings.
    w.model()->edit("sglang", [](Scenario& s) { s.deployment->engine = Engine::sglang; });
    EXPECT_FALSE(d->vllmVersionField()->isVisibleTo(d));
    EXPECT_FALSE(d->vllmGraphsField()->isVisibleTo(d));
}

TEST(Window, SglangsChunkedPrefillIsAFieldThatSetsItsOwnFraction) {
    // SGLang reads the tokens a step as chunked_prefill_size, which sizes its default mem_fraction_static
    // (server_args.py _handle_gpu_memory_settings): the field shows with SGLang's default, and a size typed in it
    // changes the fraction the fit applies, as kvscope-cli fit --engine sglang --max-num-batched-tokens 32k prints
    // ("sglang (fraction 0.383)").
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-8b");
    w.deployment()->enableBox()->setChecked(true);
    w.model()->edit("sglang", [](Scenario& s) { s.deployment->engine = Engine::sglang; });
    DeploymentView* d = w.deployment();
    ASSERT_TRUE(d->vllmTokensField()->isVisibleTo(d));
    ASSERT_TRUE(d->vllmSequencesField()->isVisibleTo(d));
    EXPECT_EQ(d->vllmTokensField()->placeholderText(), "SGLang's default: 8,192");
    EXPECT_TRUE(d->vllmTokensField()->toolTip().startsWith("chunked_prefill_size"))
        << d->vllmTokensField()->toolTip().toStdString();
    // max_running_requests: half SGLang's token pool at most, and its request pool's 4,096 on an H100.
    EXPECT_EQ(d->vllmSequencesField()->placeholderText(), "SGLang's default: 4,096");
    EXPECT_DOUBLE_EQ(w.model()->results().fit->fraction, 0.835);
    d->vllmTokensField()->setText("32k");
    d->vllmTokensField()->setModified(true);
    emit d->vllmTokensField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->vllm.max_num_batched_tokens, 32768u);
    EXPECT_DOUBLE_EQ(w.model()->results().fit->fraction, 0.383);
    EXPECT_NEAR(d->fractionField()->value(), 0.383, 1e-9);
    EXPECT_EQ(w.model()->undoStack()->undoText(), "Change SGLang's batch limits");
    // The same figure as a fit of the scenario itself (what the CLI and every export compute).
    const Scenario& s = w.model()->scenario();
    const auto same = fit(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(w.model()->results().fit->kv_budget_bytes_per_gpu, same->kv_budget_bytes_per_gpu);
    // A given fraction replaces SGLang's own: the chunk no longer changes it.
    w.model()->undoStack()->undo();
    EXPECT_DOUBLE_EQ(w.model()->results().fit->fraction, 0.835);
    EXPECT_EQ(d->vllmTokensField()->text(), "");
    // On an RTX 4090 SGLang would keep back more than the GPU at 32k a chunk and not start: marked, not computed.
    w.model()->edit("4090", [](Scenario& s) { s.deployment->gpu = *Catalog::builtin().find_gpu("rtx-4090"); });
    d->vllmTokensField()->setText("32k");
    d->vllmTokensField()->setModified(true);
    emit d->vllmTokensField()->editingFinished();
    ASSERT_EQ(w.model()->errors().size(), 1u);
    EXPECT_EQ(w.model()->errors().front().input, Field::max_num_batched_tokens);
    EXPECT_TRUE(d->vllmTokensField()->toolTip().contains("SGLang does not start"))
        << d->vllmTokensField()->toolTip().toStdString();
    EXPECT_TRUE(d->vllmTokensField()->toolTip().startsWith("chunked_prefill_size"));
    // The fraction field shows SGLang's own as kvscope-cli says it ("at -1.029"), not the field's lowest value.
    EXPECT_NEAR(d->fractionField()->value(), -1.029, 1e-9);
    // Under vLLM the field is its max_num_batched_tokens again, and the fraction its own 0.90.
    w.model()->edit("vllm", [](Scenario& s) { s.deployment->engine = Engine::vllm; });
    EXPECT_TRUE(d->vllmTokensField()->toolTip().startsWith("max_num_batched_tokens"));
    EXPECT_NEAR(d->fractionField()->value(), 0.90, 1e-9);
}

TEST(Window, AQuantizedCheckpointsWeightsAreItsSchemesUntilAFormatIsChosen) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("gpt-oss-20b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    QComboBox* weights = d->weightsField();
    EXPECT_EQ(weights->currentText(), "as quantized (mxfp4)");
    EXPECT_TRUE(
        d->figuresLabel()->text().contains("estimated for MXFP4, 4-bit float with an 8-bit scale per 32 "
                                           "weights, the experts only"))
        << d->figuresLabel()->text().toStdString();
    const std::uint64_t quantized = w.model()->results().fit->weights_bytes;
    // bf16 for every parameter, as --weight-dtype bf16; undo brings the scheme back.
    const int bf16 = weights->findData(static_cast<int>(KvDtype::bf16));
    ASSERT_GE(bf16, 0);
    weights->setCurrentIndex(bf16);
    emit weights->activated(bf16);
    EXPECT_FALSE(w.model()->scenario().deployment->weight_quant.has_value());
    EXPECT_GT(w.model()->results().fit->weights_bytes, quantized);
    w.model()->undoStack()->undo();
    EXPECT_EQ(weights->currentText(), "as quantized (mxfp4)");
    EXPECT_EQ(w.model()->results().fit->weights_bytes, quantized);
}

TEST(Window, TheMtpDraftIsOfferedForModelsThatCarryIt) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    EXPECT_FALSE(d->mtpField()->isVisibleTo(d));  // no MTP layers: nothing to offer
    w.model()->loadCatalogModel("glm-4.7");
    ASSERT_TRUE(d->mtpField()->isVisibleTo(d));
    EXPECT_EQ(d->mtpField()->text(), "Speculative decoding with its 1 MTP layer");
    const std::uint64_t before = w.model()->results().fit->weights_bytes;
    d->mtpField()->click();
    EXPECT_TRUE(w.model()->scenario().deployment->mtp);
    EXPECT_GT(w.model()->results().fit->weights_bytes, before);
    EXPECT_TRUE(d->figuresLabel()->text().contains("speculative decoding with the model's 1 MTP layer"))
        << d->figuresLabel()->text().toStdString();
    // Kept on while the model changes to one without: the model's own results show (none counted, said in a note),
    // and the option stays in reach to untick.
    w.model()->loadCatalogModel("llama-3-8b");
    EXPECT_TRUE(d->mtpField()->isVisibleTo(d));
    EXPECT_EQ(d->mtpField()->text(), "Speculative decoding with its MTP layers (this model has none)");
    EXPECT_EQ(w.model()->results().scenario.arch.name, w.model()->scenario().arch.name);
    EXPECT_TRUE(d->figuresLabel()->text().contains("--mtp: the model has no multi-token-prediction layers"))
        << d->figuresLabel()->text().toStdString();
}

TEST(Window, ADraftModelComesFromTheCatalogOrAFileAndIsUndone) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    QComboBox* draft = d->draftField();
    EXPECT_EQ(draft->currentText(), "none");
    EXPECT_FALSE(d->draftMethodField()->isVisibleTo(d));
    const std::uint64_t alone = w.model()->results().fit->weights_bytes;
    const int small = draft->findData(QStringLiteral("llama-3.2-1b"));
    ASSERT_GE(small, 0);
    draft->setCurrentIndex(small);
    emit draft->activated(small);
    ASSERT_TRUE(w.model()->scenario().deployment->draft.has_value());
    EXPECT_EQ(w.model()->results().fit->weights_bytes - alone, 2 * 1'235'814'400ull);
    EXPECT_TRUE(d->draftMethodField()->isVisibleTo(d));
    EXPECT_EQ(d->draftMethodField()->currentText(), "draft_model");
    EXPECT_TRUE(d->figuresLabel()->text().contains("speculative decoding with the draft llama-3.2-1b"))
        << d->figuresLabel()->text().toStdString();
    // A file that cannot be read is said under the form; the draft there stays.
    d->chooseDraft(QStringLiteral("/no/such/folder/config.json"));
    EXPECT_EQ(w.model()->scenario().deployment->draft->name, "llama-3.2-1b");
    EXPECT_TRUE(draft->toolTip().contains("no such file or folder")) << draft->toolTip().toStdString();
    const auto labels = d->findChildren<QLabel*>();
    EXPECT_TRUE(std::any_of(labels.begin(), labels.end(), [](QLabel* l) {
        return l->text().startsWith("Draft model: file: /no/such/folder/config.json: no such file or folder");
    }));
    // An EAGLE-3 head's config.json in a folder named with a space and a non-ASCII letter: its method from its class.
    const QString dir =
        QDir::temp().filePath(QStringLiteral("kvscope draft ü %1").arg(QCoreApplication::applicationPid()));
    ASSERT_TRUE(QDir().mkpath(dir));
    {
        QFile f(dir + "/config.json");
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write(R"({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 8192,
            "intermediate_size": 28672, "num_attention_heads": 64, "num_hidden_layers": 1, "num_key_value_heads": 8,
            "vocab_size": 128256, "draft_vocab_size": 32000, "torch_dtype": "bfloat16"})");
    }
    d->chooseDraft(dir + "/config.json");
    QDir(dir).removeRecursively();
    ASSERT_TRUE(w.model()->scenario().deployment->draft.has_value());
    EXPECT_EQ(w.model()->scenario().deployment->draft->method, DraftMethod::eagle3);
    EXPECT_EQ(d->draftMethodField()->currentText(), "eagle3");
    EXPECT_TRUE(draft->currentText().startsWith("kvscope draft ü")) << draft->currentText().toStdString();
    // Undo: the catalog draft, then none; the file's item goes with it.
    w.model()->undoStack()->undo();
    EXPECT_EQ(draft->currentText(), "Llama 3.2 1B");
    EXPECT_EQ(draft->findText(QStringLiteral("kvscope draft ü"), Qt::MatchStartsWith), -1);
    w.model()->undoStack()->undo();
    EXPECT_EQ(draft->currentText(), "none");
    EXPECT_EQ(w.model()->results().fit->weights_bytes, alone);
}

// A draft file refused holds back saving until Esc takes it back or the scenario's own draft changes (an undo), as text
// typed in a field does; it never blocks every save for good.
TEST(Window, ARefusedDraftFileGivesWayToEscAndToAnUndo) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    QComboBox* draft = d->draftField();
    d->chooseDraft(QStringLiteral("/no/such/folder/config.json"));
    EXPECT_FALSE(d->unaccepted().isEmpty());
    QTest::keyClick(draft, Qt::Key_Escape);
    EXPECT_TRUE(d->unaccepted().isEmpty()) << d->unaccepted().join('\n').toStdString();
    EXPECT_TRUE(d->commitPending());

    const int small = draft->findData(QStringLiteral("llama-3.2-1b"));
    draft->setCurrentIndex(small);
    emit draft->activated(small);
    d->chooseDraft(QStringLiteral("/no/such/folder/config.json"));
    EXPECT_FALSE(d->commitPending());
    w.model()->undoStack()->undo();  // the draft goes: the scenario's value changed, and wins
    EXPECT_EQ(draft->currentText(), "none");
    EXPECT_TRUE(d->unaccepted().isEmpty()) << d->unaccepted().join('\n').toStdString();
    EXPECT_TRUE(d->commitPending());
}

TEST(Window, EachEnginesRowsShowForItAloneAtEveryWidth) {
    // The Deployment form shows the settings of the engine in use only, whichever came before, laid out at several
    // widths after each change; the MTP row comes and goes with them.
    MainWindow w(catalog(), false);
    w.show();
    w.model()->loadCatalogModel("glm-4.7");  // MTP layers: one more row that comes and goes
    w.deployment()->enableBox()->setChecked(true);
    w.tabs()->setCurrentIndex(MainWindow::DeploymentTab);
    DeploymentView* d = w.deployment();
    for (int i = 0; i < static_cast<int>(kEngineCount); ++i) {
        const auto engine = static_cast<Engine>(i);
        w.model()->edit("engine", [engine](Scenario& s) {
            s.deployment->engine = engine;
            s.deployment->mtp = !s.deployment->mtp;
        });
        for (const int width : {700, 1000, 1400, 2000}) {
            w.resize(width, 900);
            QApplication::processEvents();
        }
        EXPECT_EQ(d->vllmTokensField()->isVisibleTo(d), engine == Engine::vllm || engine == Engine::sglang);
        EXPECT_EQ(d->vllmVersionField()->isVisibleTo(d), engine == Engine::vllm);
        EXPECT_EQ(d->ubatchField()->isVisibleTo(d), runs_llama_cpp(engine));
        EXPECT_EQ(d->trtllmTokensField()->isVisibleTo(d), engine == Engine::tensorrt_llm);
        EXPECT_TRUE(d->mtpField()->isVisibleTo(d));
    }
}

TEST(Window, LlamaCppsMicroBatchAndFlashAttentionSizeItsComputeBuffer) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-8b");
    w.deployment()->enableBox()->setChecked(true);
    DeploymentView* d = w.deployment();
    EXPECT_FALSE(d->ubatchField()->isVisibleTo(d));  // vLLM: not its settings
    w.model()->edit("llama.cpp", [](Scenario& s) {
        s.deployment->engine = Engine::llama_cpp;
        s.deployment->fraction = 1.0;
        s.workload.context_tokens = 8192;
    });
    ASSERT_TRUE(d->ubatchField()->isVisibleTo(d));
    EXPECT_EQ(d->ubatchField()->placeholderText(), "llama.cpp's default: 512");
    EXPECT_TRUE(d->flashAttentionField()->isChecked());
    const auto buffer = [&w] { return w.model()->results().fit->reserve_items.front().bytes; };
    EXPECT_EQ(buffer(), 271'056'896u);  // the logits of 512 tokens, as kvscope-cli fit --engine llama.cpp
    d->flashAttentionField()->click();
    EXPECT_TRUE(w.model()->scenario().deployment->llama_cpp.flash_attn_off);
    EXPECT_EQ(buffer(), 560ull << 20);  // the attention scores at 8k, as the published logs
    // Typed as the option reads it; a bad count is said under the form and changes nothing.
    d->ubatchField()->setText("2k");
    emit d->ubatchField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.ubatch, 2048u);
    EXPECT_EQ(buffer(), 4ull * 2048 * (8192ull * 33 + 4 * 4096));
    d->ubatchField()->setText("0");
    emit d->ubatchField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.ubatch, 2048u);
    EXPECT_TRUE(d->ubatchField()->toolTip().contains("'0' is no count it takes: at least 1"))
        << d->ubatchField()->toolTip().toStdString();
    d->ubatchField()->setText("");
    emit d->ubatchField()->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.ubatch, 0u);
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->scenario().deployment->llama_cpp.ubatch, 2048u);
    EXPECT_EQ(d->ubatchField()->text(), "2,048");
}

TEST(Window, SglangsFractionIsItsOwnForTheGpuUntilOneIsGiven) {
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-8b");
    w.deployment()->enableBox()->setChecked(true);  // one H100
    DeploymentView* d = w.deployment();
    w.model()->edit("sglang", [](Scenario& s) {
        s.deployment->engine = Engine::sglang;
        s.deployment->fraction = default_fraction(Engine::sglang);
    });
    auto* fraction = d->findChild<QDoubleSpinBox*>();
    ASSERT_NE(fraction, nullptr);
    EXPECT_DOUBLE_EQ(fraction->value(), 0.835);  // as kvscope-cli fit --engine sglang --gpu h100-sxm
    EXPECT_DOUBLE_EQ(w.model()->results().fit->fraction, 0.835);
    fraction->setValue(0.8);
    EXPECT_TRUE(w.model()->scenario().deployment->fraction_given);
    EXPECT_DOUBLE_EQ(w.model()->results().fit->fraction, 0.8);
}

TEST(Window, ChartSeriesAreUpdatedInPlaceNeverRebuilt) {
    MainWindow w(catalog(), false);
    const QList<QAbstractSeries*> series = w.chart()->chart()->series();
    w.model()->loadCatalogModel("deepseek-v3");  // adds the MLA line
    w.chart()->setLogTokens(false);
    w.chart()->setLogBytes(true);
    EXPECT_EQ(w.chart()->chart()->series(), series);
    EXPECT_TRUE(w.chart()->variantSeries(3)->isVisible());
    EXPECT_TRUE(w.chart()->variantSeries(3)->name().startsWith("MLA"));
    // Linear tokens: evenly spaced x values.
    const auto points = w.chart()->variantSeries(0)->points();
    ASSERT_GT(points.size(), 100);
    EXPECT_NEAR(points[2].x() - points[1].x(), points[3].x() - points[2].x(), 1.0);
}

TEST(Window, EachKindOfVariantHasItsOwnSeries) {
    // An MLA model whose layers are not all full attention (Kimi Linear's layout) has both an MLA line and an
    // "all full attention" line: each in its own series, neither drawn over the other.
    QTemporaryDir dir;
    const QString path = testing::write_config(
        dir, "kimi-linear", R"({"model_type": "kimi_linear", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 8, "hidden_size": 512, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "max_position_embeddings": 65536, "torch_dtype": "bfloat16",
        "linear_attn_config": {"kda_layers": [1, 2, 3], "num_heads": 8, "head_dim": 64, "short_conv_kernel_size": 4}})");
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.importModelFile(path));
    QLineSeries* mla = w.chart()->variantSeries(static_cast<int>(VariantKind::mla));
    QLineSeries* full = w.chart()->variantSeries(static_cast<int>(VariantKind::all_full));
    EXPECT_TRUE(mla->isVisible());
    EXPECT_TRUE(mla->name().startsWith("MLA (model)")) << mla->name().toStdString();
    EXPECT_TRUE(full->isVisible());
    EXPECT_TRUE(full->name().startsWith("all full attention")) << full->name().toStdString();
    EXPECT_NE(mla->pen().color(), full->pen().color());
    // Every curve of the results is drawn in the series of its kind.
    for (const Curve& c : w.model()->results().curves.series)
        EXPECT_TRUE(
            w.chart()->variantSeries(static_cast<int>(c.series))->name().startsWith(QString::fromStdString(c.name)))
            << c.name;
}

TEST(Window, CrosshairReadoutGivesExactValues) {
    MainWindow w(catalog(), false);
    const QString text = w.chart()->readout(8192);
    EXPECT_TRUE(text.contains("8,192 tokens")) << text.toStdString();
    EXPECT_TRUE(text.contains("MHA* : 4.00 GiB (4,294,967,296 B)") || text.contains("MHA*: 4.00 GiB (4,294,967,296 B)"))
        << text.toStdString();
    EXPECT_TRUE(text.contains("Weights:"));
}

TEST(Window, LegendMarkersHideAndShowTheirLines) {
    MainWindow w(catalog(), false);
    QLineSeries* mqa = w.chart()->variantSeries(2);
    ASSERT_TRUE(mqa->isVisible());
    const auto markers = w.chart()->chart()->legend()->markers(mqa);
    ASSERT_EQ(markers.size(), 1);
    emit markers.front()->clicked();
    EXPECT_FALSE(mqa->isVisible());
    w.model()->edit("ctx", [](Scenario& s) { s.workload.context_tokens = 4096; });
    EXPECT_FALSE(mqa->isVisible());  // the user's choice survives recomputation
    emit markers.front()->clicked();
    EXPECT_TRUE(mqa->isVisible());
}

}  // namespace
}  // namespace kvscope::ui

namespace kvscope::ui {
namespace {

TEST(Window, CustomGpuMemoryAndBandwidthAreReadAsTyped) {
    MainWindow w(testing::catalog(), false);
    w.deployment()->enableBox()->setChecked(true);
    QList<QLineEdit*> edits;
    for (QLineEdit* e : w.deployment()->findChildren<QLineEdit*>())
        if (e->accessibleName() == "Memory" || e->accessibleName() == "Bandwidth") edits << e;
    ASSERT_EQ(edits.size(), 2);
    QLineEdit* mem = edits[0]->accessibleName() == "Memory" ? edits[0] : edits[1];
    QLineEdit* bw = mem == edits[0] ? edits[1] : edits[0];
    // As typed (setText alone is what the view shows, not what a person typed).
    auto type = [](QLineEdit* e, const QString& text) {
        e->setText(text);
        e->setModified(true);
    };
    // Leaving the fields without typing keeps the catalog GPU and its exact bytes behind the rounded text.
    const std::uint64_t exact = w.model()->scenario().deployment->gpu.memory_bytes;
    emit mem->editingFinished();
    emit bw->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->gpu.id, "h100-sxm");
    EXPECT_EQ(w.model()->scenario().deployment->gpu.memory_bytes, exact);
    // A size as vLLM logs it: the nearest whole byte, as kvscope-cli --gpu-memory 23.58GiB reads it.
    type(mem, "23.58 GiB");
    emit mem->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->gpu.id, "custom");
    EXPECT_EQ(w.model()->scenario().deployment->gpu.memory_bytes, 25'318'832'210ull);
    type(mem, "24GiB");
    type(bw, "1TB");
    emit mem->editingFinished();
    const Deployment& d = *w.model()->scenario().deployment;
    EXPECT_EQ(d.gpu.id, "custom");
    EXPECT_EQ(d.gpu.memory_bytes, 24ull << 30);
    EXPECT_EQ(d.gpu.bandwidth_bytes_per_s, 1'000'000'000'000ull);
    type(mem, "lots");
    emit mem->editingFinished();
    EXPECT_EQ(w.model()->scenario().deployment->gpu.memory_bytes, 24ull << 30);  // unchanged
    EXPECT_TRUE(mem->toolTip().contains("lots")) << mem->toolTip().toStdString();
    // Choosing a catalog GPU instead leaves no stale error behind.
    QComboBox* gpu = w.deployment()->gpuField();
    const int h200 = gpu->findData("h200");
    ASSERT_GE(h200, 0);
    gpu->setCurrentIndex(h200);
    emit gpu->activated(h200);
    EXPECT_EQ(w.model()->scenario().deployment->gpu.id, "h200");
    EXPECT_FALSE(mem->toolTip().contains("lots")) << mem->toolTip().toStdString();
    EXPECT_FALSE(mem->text().contains("lots"));
}

TEST(Window, SpinningTheMemoryFractionIsOneUndoStep) {
    MainWindow w(testing::catalog(), false);
    w.deployment()->enableBox()->setChecked(true);
    const int steps = w.model()->undoStack()->count();
    auto* fraction = w.deployment()->findChild<QDoubleSpinBox*>();
    ASSERT_NE(fraction, nullptr);
    for (int i = 0; i < 5; ++i) fraction->stepDown();
    EXPECT_DOUBLE_EQ(w.model()->scenario().deployment->fraction, 0.85);
    EXPECT_EQ(w.model()->undoStack()->count(), steps + 1);
}

}  // namespace
}  // namespace kvscope::ui

namespace kvscope::ui {
namespace {

QAction* action_named(QWidget* w, const QString& text) {
    for (QAction* a : w->findChildren<QAction*>())
        if (a->text().remove('&') == text) return a;
    return nullptr;
}

TEST(Window, MenusHaveTheShortcutsUsersExpect) {
    MainWindow w(testing::catalog(), false);
    const std::vector<std::pair<QString, QKeySequence>> expected{{"Open scenario…", QKeySequence::Open},
                                                                 {"Save scenario", QKeySequence::Save},
                                                                 {"Export chart…", QKeySequence("Ctrl+E")},
                                                                 {"Export report (PDF)…", QKeySequence("Ctrl+Shift+E")},
                                                                 {"Import model…", QKeySequence("Ctrl+I")},
                                                                 {"Import model folder…", QKeySequence("Ctrl+Shift+I")},
                                                                 {"Quit", QKeySequence::Quit}};
    for (const auto& [text, key] : expected) {
        QAction* a = action_named(&w, text);
        ASSERT_NE(a, nullptr) << text.toStdString();
        EXPECT_EQ(a->shortcut(), QKeySequence(key)) << text.toStdString();
        EXPECT_FALSE(a->toolTip().isEmpty());
    }
    // Ctrl+6 opens the Learn tab like Ctrl+1…5 open the others (Ctrl+4 the Traffic tab).
    for (QAction* a : w.findChildren<QAction*>())
        if (a->shortcut() == QKeySequence("Ctrl+6")) a->trigger();
    EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::LearnTab);
    for (QAction* a : w.findChildren<QAction*>())
        if (a->shortcut() == QKeySequence("Ctrl+4")) a->trigger();
    EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::TrafficTab);
    bool has_undo = false;
    for (QAction* a : w.findChildren<QAction*>()) has_undo |= a->shortcut() == QKeySequence(QKeySequence::Undo);
    EXPECT_TRUE(has_undo);
}

TEST(Window, CopyTableAndChartReachTheClipboard) {
    MainWindow w(testing::catalog(), false);
    action_named(&w, "Copy table")->trigger();
    EXPECT_TRUE(QApplication::clipboard()->text().startsWith("Layout\tKV heads\tKV cache"));
    EXPECT_TRUE(QApplication::clipboard()->text().contains("MQA\t1\t128 MiB"));
    action_named(&w, "Copy chart")->trigger();
    EXPECT_EQ(QApplication::clipboard()->image().size(), QSize(2400, 1400));
}

TEST(Window, EveryInputExplainsItselfInATooltip) {
    MainWindow w(testing::catalog(), false);
    int checked = 0;
    for (QWidget* field : w.inputs()->findChildren<QWidget*>()) {
        if (field->accessibleName().isEmpty() || qobject_cast<QLabel*>(field)) continue;
        EXPECT_FALSE(field->toolTip().isEmpty())
            << field->accessibleName().toStdString() << " (" << field->metaObject()->className() << ")";
        ++checked;
    }
    EXPECT_GE(checked, 11);
}

TEST(Window, ThePresetPickerFiltersAsYouType) {
    MainWindow w(testing::catalog(), false);
    QCompleter* completer = w.inputs()->modelPicker()->completer();
    completer->setCompletionPrefix("70B");
    QStringList found;
    for (int i = 0; completer->setCurrentRow(i); ++i) found << completer->currentCompletion();
    // Every 70B model, in the catalog's order, and nothing else.
    ASSERT_EQ(found.size(), 4) << found.join(", ").toStdString();
    EXPECT_TRUE(found[0].startsWith("Llama 2 70B"));
    EXPECT_TRUE(found[1].startsWith("Llama 3 70B"));
    EXPECT_TRUE(found[2].startsWith("Llama 3.1 70B"));
    EXPECT_TRUE(found[3].startsWith("Llama 3.3 70B"));
}

TEST(Window, ZoomRelabelsTheAxesAndResetRestoresThem) {
    MainWindow w(testing::catalog(), false);
    w.resize(1200, 800);
    w.show();
    QApplication::processEvents();
    auto* x = qobject_cast<QCategoryAxis*>(w.chart()->chart()->axes(Qt::Horizontal).front());
    ASSERT_NE(x, nullptr);
    const double full_max = x->max();
    const QStringList full_labels = x->categoriesLabels();
    EXPECT_TRUE(full_labels.contains("1k"));
    w.chart()->chart()->zoomIn(QRectF(w.chart()->chart()->plotArea().center(), QSizeF(40, 40)));
    EXPECT_LT(x->max(), full_max);
    EXPECT_FALSE(x->categoriesLabels().isEmpty());
    w.chart()->resetZoom();
    EXPECT_DOUBLE_EQ(x->max(), full_max);
    EXPECT_EQ(x->categoriesLabels(), full_labels);
}

}  // namespace
}  // namespace kvscope::ui

namespace kvscope::ui {
namespace {

TEST(Window, AHundredMegabyteConfigIsRefusedWithASize) {
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    ASSERT_TRUE(f.resize(100ll << 20));  // sparse: 100 MiB without writing them
    f.close();
    MainWindow w(testing::catalog(), false);
    const Scenario before = w.model()->scenario();
    EXPECT_FALSE(w.importModelFile(path));
    EXPECT_TRUE(w.messages()->text().contains("more than the 64.0 MiB")) << w.messages()->text().toStdString();
    EXPECT_EQ(w.model()->scenario(), before);
}

}  // namespace
}  // namespace kvscope::ui
