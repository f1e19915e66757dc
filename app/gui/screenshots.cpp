#include "screenshots.h"

#include <QAbstractItemView>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QGroupBox>
#include <QKeyEvent>
#include <QLineEdit>
#include <QLocale>
#include <QMouseEvent>
#include <QPalette>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QUndoStack>

#include <cstdio>
#include <functional>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/draft_import.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/weights.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/decimal_spin_box.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/notes_view.h"
#include "kvscope/ui/probe_view.h"
#include "kvscope/ui/quiz_view.h"
#include "kvscope/ui/recompute_view.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/traffic_view.h"
#include "kvscope/ui/window_strip.h"

namespace kvscope::gui {

namespace {

void settle() {
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
}

bool save(QWidget* w, const QString& path) {
    settle();
    const bool ok = w->grab().save(path);
    std::printf("%s %s\n", ok ? "wrote" : "could not write", qPrintable(path));
    return ok;
}

// The Learn tab's pages at 1280×800, and the first page again at a small window size.
// A Llama 3.1 8B Q4_K_M GGUF as llama.cpp's converter writes it (header only: the reader never reads the tensors),
// in an LM Studio folder and a Hugging Face cache of a throwaway home: the picker's "On this machine", and the GGUF's
// deployment on an RTX 4090 with llama.cpp and the file's exact weight bytes.
bool render_files(const Catalog& catalog, const QDir& dir) {
    QTemporaryDir home;
    gguf::Writer w;
    w.str("general.architecture", "llama").str("general.name", "Meta Llama 3.1 8B Instruct");
    w.u32("llama.block_count", 32).u32("llama.context_length", 131072).u32("llama.embedding_length", 4096);
    w.u32("llama.feed_forward_length", 14336).u32("llama.attention.head_count", 32);
    w.u32("llama.attention.head_count_kv", 8).u32("llama.vocab_size", 128256);
    w.tensor("token_embd.weight", {4096, 128256}, 12).tensor("output.weight", {4096, 128256}, 14);
    for (int l = 0; l < 32; ++l) w.llama_block(l, 4096, 1024, 14336);
    const QString lms = home.filePath(".lmstudio/models/lmstudio-community/Meta-Llama-3.1-8B-Instruct-GGUF");
    const QString gguf = lms + "/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf";
    const QString snapshot = home.filePath(".cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/b968826");
    QDir().mkpath(lms);
    QDir().mkpath(snapshot);
    w.write_file(gguf.toStdString());  // whole, its tensors' data a hole, as a finished download
    QFile c(snapshot + "/config.json");
    if (c.open(QIODevice::WriteOnly))
        c.write(R"({"model_type": "qwen3", "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
  "hidden_size": 4096, "head_dim": 128, "intermediate_size": 12288, "max_position_embeddings": 40960,
  "vocab_size": 151936, "torch_dtype": "bfloat16"})");
    c.close();
    // An Ollama pull that did not finish: listed, marked incomplete, with why in its tooltip.
    const QString manifests = home.filePath(".ollama/models/manifests/registry.ollama.ai/library/qwen3");
    QDir().mkpath(manifests);
    QFile m(manifests + "/8b");
    if (m.open(QIODevice::WriteOnly))
        m.write(R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:a3de86cd1c13"}]})");
    m.close();
    const QByteArray saved_home = qgetenv("HOME");
    for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS"})
        qunsetenv(v);
    qputenv("HOME", home.path().toUtf8());
    bool ok = true;
    {
        ui::MainWindow window(catalog, false);
        window.resize(1280, 800);
        window.show();
        QComboBox* picker = window.inputs()->modelPicker();
        picker->showPopup();
        picker->view()->scrollToBottom();
        settle();
        ok &= save(picker->view()->window(), dir.filePath("picker-local.png"));
        picker->hidePopup();
        window.importModelFile(gguf);
        window.deployment()->enableBox()->setChecked(true);
        window.model()->edit("Set up the example", [&catalog](Scenario& s) {
            s.workload.context_tokens = 32768;
            s.workload.batch = 4;
            s.deployment->gpu = *catalog.find_gpu("rtx-4090");
        });
        window.tabs()->setCurrentIndex(ui::MainWindow::DeploymentTab);
        window.statusBar()->clearMessage();  // the throwaway home's path is no part of the picture
        ok &= save(&window, dir.filePath("gguf-fit.png"));
    }
    qputenv("HOME", saved_home);
    return ok;
}

bool render_learn(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    ui::LearnView* learn = window.learn();
    window.resize(1280, 800);
    window.tabs()->setCurrentIndex(ui::MainWindow::LearnTab);
    model->loadCatalogModel("llama-3-8b");
    model->edit("Set up the example", [](Scenario& s) {
        s.kv_dtype = KvDtype::bf16;
        s.workload = {8192, 4, 1, false};
        s.parallel = {};
        s.deployment.reset();
    });
    bool ok = true;
    learn->setPage(ui::LearnView::ShowWork);
    settle();
    window.inputs()->highlightField(Field::kv_heads);  // as while the pointer is on "8 KV heads"
    ok &= save(&window, dir.filePath("learn-show-work.png"));
    window.inputs()->highlightField(Field::none);
    // A hybrid: the product counts the attention layers, and the state has its own.
    model->loadCatalogModel("qwen3-next-80b-a3b");
    model->edit("Set up the example", [](Scenario& s) { s.workload = {131072, 8, 1, false}; });
    settle();
    ok &= save(&window, dir.filePath("learn-show-work-hybrid.png"));
    model->loadCatalogModel("llama-3-8b");
    model->edit("Set up the example", [](Scenario& s) {
        s.kv_dtype = KvDtype::bf16;
        s.workload = {8192, 4, 1, false};
    });

    learn->setPage(ui::LearnView::Phases);
    ok &= save(&window, dir.filePath("learn-prefill-decode.png"));

    learn->setPage(ui::LearnView::Recompute);
    learn->recompute()->setCumulative(true);
    {
        QEventLoop loop;
        QObject::connect(window.probe(), &ui::ProbeView::finished, &loop, &QEventLoop::quit);
        window.probe()->tokensField()->setValue(160);
        window.probe()->runStopwatch();
        loop.exec();
    }
    ok &= save(&window, dir.filePath("learn-recompute.png"));

    learn->setPage(ui::LearnView::WhatIfs);
    ok &= save(&window, dir.filePath("learn-what-if.png"));

    model->loadCatalogModel("gemma-2-9b");
    learn->setPage(ui::LearnView::ContextWindow);
    learn->contextWindow()->setConversation(10000);
    ok &= save(&window, dir.filePath("learn-context-window.png"));
    // A hybrid past its window: the attention layers lose the first tokens, the recurrent state keeps them all.
    model->loadCatalogModel("qwen3-next-80b-a3b");
    learn->contextWindow()->setConversation(300000);
    ok &= save(&window, dir.filePath("learn-context-window-hybrid.png"));
    model->undoStack()->undo();

    model->loadCatalogModel("llama-3-8b");
    // Real traffic: 16 sequences of Llama 3 8B at 32k against requests of 2,000 + 300 tokens.
    model->edit("Set up the example", [](Scenario& s) {
        s.workload.context_tokens = 32768;
        s.workload.batch = 16;
    });
    learn->setPage(ui::LearnView::RealTraffic);
    settle();
    ok &= save(&window, dir.filePath("learn-real-traffic.png"));
    model->undoStack()->undo();
    learn->setPage(ui::LearnView::Quiz);
    ui::QuizView* quiz = learn->quiz();
    if (quiz->count() >= 2) {
        quiz->answerField(0)->setText(QString::number(quiz->question(0).answer / double(1ull << 30), 'f', 2) + " GiB");
        quiz->check(0);
        quiz->answerField(1)->setText("64 KiB");
        quiz->check(1);
    }
    ok &= save(&window, dir.filePath("learn-quiz.png"));

    learn->setPage(ui::LearnView::Notes);
    ui::NotesView* notes = learn->notes();
    notes->newNote();
    notes->claimField()->setText("GQA-8 should cut the cache to a quarter of MHA");
    notes->evidenceField()->setPlainText(
        "Llama 3 8B has 32 query heads and 8 KV heads. Overview: GQA-8 1.00 GiB against MHA 4.00 GiB at 8k, "
        "25.0%. The what-if 'Multi-query attention' takes it to 128 MiB.");
    Q_EMIT notes->claimField()->textEdited(notes->claimField()->text());
    ok &= save(&window, dir.filePath("learn-notes.png"));

    window.resize(1024, 640);
    learn->setPage(ui::LearnView::ShowWork);
    ok &= save(&window, dir.filePath("learn-small.png"));
    window.resize(1360, 860);
    return ok;
}

// overview.png, chart.png and deployment.png.
bool render_readme_example(const Catalog& catalog, ui::MainWindow& window, const QDir& dir) {
    // The README's question: Llama 3 70B at 128k in fp8, 8 requests, on 2×H100.
    ui::ScenarioModel* model = window.model();
    model->loadCatalogModel("llama-3-70b");
    model->edit("Set up the example", [&catalog](Scenario& s) {
        s.kv_dtype = KvDtype::fp8_e4m3;
        s.workload.context_tokens = 131072;
        s.workload.batch = 8;
        s.parallel.tp = 2;
        Deployment d;
        d.gpu = *catalog.find_gpu("h100-sxm");
        d.gpu_count = 2;
        d.weight_dtype = KvDtype::bf16;
        s.deployment = d;
    });
    bool ok = true;
    window.tabs()->setCurrentIndex(ui::MainWindow::OverviewTab);
    ok &= save(&window, dir.filePath("overview.png"));

    window.tabs()->setCurrentIndex(ui::MainWindow::ChartTab);
    settle();
    // Hover the chart at about 60% of its width so the crosshair shows its readout.
    QWidget* viewport = window.chart()->viewport();
    const QPointF at(viewport->width() * 0.6, viewport->height() * 0.45);
    QMouseEvent move(QEvent::MouseMove, at, viewport->mapToGlobal(at), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &move);
    ok &= save(&window, dir.filePath("chart.png"));

    window.tabs()->setCurrentIndex(ui::MainWindow::DeploymentTab);
    ok &= save(&window, dir.filePath("deployment.png"));
    return ok;
}

// repaired-file.png.
bool render_repaired_file(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    // A scenario that KVScope 0.1 saved on a German desktop ("fraction": 0,85), opened again
    // with the window in a German locale: the repair is named, the fields show 0.85.
    const QLocale before;
    QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany));
    QTemporaryDir scratch;
    Scenario s = model->scenario();
    s.deployment->fraction = 0.85;
    std::string text = scenario_to_json(s);
    text.replace(text.find("0.85"), 4, "0,85");
    const QString path = scratch.filePath(QString::fromUtf8("Prüfung 1.kvscope.json"));
    QFile file(path);
    if (file.open(QIODevice::WriteOnly)) file.write(text.data(), static_cast<qint64>(text.size()));
    file.close();
    window.openScenarioFile(path);
    const bool ok = save(&window, dir.filePath("repaired-file.png"));
    window.messages()->hide();
    QLocale::setDefault(before);
    return ok;
}

// picked-model.png and chart-small.png.
bool render_picked_model(ui::MainWindow& window, const QDir& dir) {
    bool ok = true;
    // Picking another model by its id: its own KV format replaces fp8, and the status line says so.
    QLineEdit* picker = window.inputs()->modelPicker()->lineEdit();
    picker->setText("gemma-2-9b");
    emit picker->returnPressed();
    window.tabs()->setCurrentIndex(ui::MainWindow::DeploymentTab);
    ok &= save(&window, dir.filePath("picked-model.png"));
    // The chart in a small window, as a laptop shows it.
    window.resize(1024, 640);
    window.tabs()->setCurrentIndex(ui::MainWindow::ChartTab);
    ok &= save(&window, dir.filePath("chart-small.png"));
    window.resize(1360, 860);
    return ok;
}

// refused-save.png and invalid-input.png.
bool render_learner_inputs(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    bool ok = true;
    // A learner's view: the lesson's model, with an invalid KV head count being corrected.
    model->loadCatalogModel("kvscope-teaching-32l");
    model->edit("Set up the example", [](Scenario& s) {
        s.kv_dtype = KvDtype::fp16;
        s.workload = {8192, 1, 1, false};
        s.parallel = {};
        s.deployment.reset();
    });
    window.tabs()->setCurrentIndex(ui::MainWindow::OverviewTab);
    // Text a field refuses stops a save in words, before any dialog, in a laptop-sized window; the field keeps it.
    {
        window.resize(1024, 640);
        QLineEdit* context = window.inputs()->contextField()->spinBox()->findChild<QLineEdit*>();
        context->setFocus();
        context->selectAll();
        context->setText("131.072");
        context->setModified(true);
        QTemporaryDir scratch;
        window.saveScenarioFile(scratch.filePath("plan.kvscope.json"));
        ok &= save(&window, dir.filePath("refused-save.png"));
        QKeyEvent esc(QEvent::KeyPress, Qt::Key_Escape, Qt::NoModifier);
        QApplication::sendEvent(window.inputs()->contextField()->spinBox(), &esc);
        window.messages()->hide();
        window.resize(1360, 860);
    }
    model->edit("Set up the example", [](Scenario& s) { s.arch.kv_heads = 5; });
    ok &= save(&window, dir.filePath("invalid-input.png"));
    return ok;
}

// probe.png and probe-step.png.
bool render_probe(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    bool ok = true;
    // The probe on this machine: the lesson's model at 2k tokens, then the stopwatch.
    model->undoStack()->undo();
    model->edit("Set up the example", [](Scenario& s) { s.workload.context_tokens = 2048; });
    window.tabs()->setCurrentIndex(ui::MainWindow::ProbeTab);
    window.probe()->refreshDevices();
    auto wait_for = [&window](auto start) {
        QEventLoop loop;
        QObject::connect(window.probe(), &ui::ProbeView::finished, &loop, &QEventLoop::quit);
        start();
        loop.exec();
        settle();
    };
    wait_for([&] { window.probe()->runProbe(); });
    window.probe()->tokensField()->setValue(96);
    wait_for([&] { window.probe()->runStopwatch(); });
    ok &= save(&window, dir.filePath("probe.png"));
    // A decode step of GPT-2 (124M) for four sequences at 1k tokens, beside the calculator's floor.
    model->loadCatalogModel("gpt2");
    model->edit("Set up the example", [](Scenario& s) {
        s.workload.context_tokens = 1024;
        s.workload.batch = 4;
    });
    wait_for([&] { window.probe()->runStep(); });
    ok &= save(&window, dir.filePath("probe-step.png"));
    model->edit("Set up the example", [](Scenario& s) { s.workload.batch = 1; });
    window.tabs()->setCurrentIndex(ui::MainWindow::OverviewTab);
    return ok;
}

// traffic.png: the README's simulate example in the Traffic tab.
bool render_traffic(const Catalog& catalog, ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    model->loadCatalogModel("llama-3.1-8b");
    model->edit("Set up the example", [&catalog](Scenario& s) {
        s.workload.context_tokens = 16384;
        s.workload.batch = 1;
        Deployment d;
        d.gpu = *catalog.find_gpu("h100-sxm");
        s.deployment = d;
    });
    ui::TrafficView* t = window.traffic();
    t->requestsField()->setValue(2000);
    t->allAtOnceBox()->setChecked(false);
    t->rateField()->setValue(4);
    t->inputTokensField()->setValue(2000);
    t->outputTokensField()->setValue(300);
    t->sharedPrefixField()->setValue(1000);
    t->traceField()->clear();
    t->ttftBox()->setChecked(true);
    t->ttftField()->setValue(500);
    t->tpotBox()->setChecked(true);
    t->tpotField()->setValue(25);
    t->findChildren<ui::DecimalSpinBox*>("inputRange").front()->setValue(0.5);
    t->findChildren<ui::DecimalSpinBox*>("outputRange").front()->setValue(0.5);
    window.tabs()->setCurrentIndex(ui::MainWindow::TrafficTab);
    QEventLoop loop;
    QObject::connect(t, &ui::TrafficView::finished, &loop, &QEventLoop::quit);
    t->simulate();
    if (t->running()) loop.exec();
    window.resize(1360, 1200);  // the inputs, the answers and both charts at once
    settle();
    bool ok = save(&window, dir.filePath("traffic.png"));
    // traffic-plan.png: how many GPUs the traffic needs at 12 requests a second with four system prompts, the replicas
    // taking those of one prompt together.
    t->rateField()->setValue(12);
    t->prefixGroupsField()->setValue(4);
    t->routerField()->setCurrentIndex(1);
    t->servePlan();
    if (t->running()) loop.exec();
    settle();
    ok &= save(&window, dir.filePath("traffic-plan.png"));
    window.resize(1360, 860);
    window.tabs()->setCurrentIndex(ui::MainWindow::OverviewTab);
    return ok;
}

// mla.png, hybrid.png, hybrid-chart.png and hybrid-fit.png.
bool render_model_kinds(const Catalog& catalog, ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    bool ok = true;
    // A latent-attention model: the comparison gains an MLA row.
    model->loadCatalogModel("deepseek-v3");
    model->edit("Set up the example", [](Scenario& s) { s.workload.context_tokens = 32768; });
    ok &= save(&window, dir.filePath("mla.png"));

    // A hybrid model: 12 of 48 layers attend, 36 keep a fixed linear-attention state; the comparison with every
    // layer full attention is a row and a line.
    model->loadCatalogModel("qwen3-next-80b-a3b");
    model->edit("Set up the example", [](Scenario& s) {
        s.workload.context_tokens = 131072;
        s.workload.batch = 8;
    });
    ok &= save(&window, dir.filePath("hybrid.png"));
    window.tabs()->setCurrentIndex(ui::MainWindow::ChartTab);
    ok &= save(&window, dir.filePath("hybrid-chart.png"));
    // Nemotron-H on one H100: 54 Mamba-2 layers' state takes more of the budget than the KV cache does.
    model->loadCatalogModel("nemotron-h-56b");
    model->edit("Set up the example", [&catalog](Scenario& s) {
        s.workload.context_tokens = 8192;
        s.workload.batch = 16;
        Deployment d;
        d.gpu = *catalog.find_gpu("h100-sxm");
        d.weight_dtype = KvDtype::fp8_e4m3;
        s.deployment = d;
    });
    window.tabs()->setCurrentIndex(ui::MainWindow::DeploymentTab);
    ok &= save(&window, dir.filePath("hybrid-fit.png"));
    return ok;
}

// quantized-fit.png, mtp-sglang-fit.png, draft-fit.png, trtllm-fit.png, sliding-start-check.png,
// unified-memory-fit.png and layer-offload-fit.png.
bool render_deployments(const Catalog& catalog, ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    bool ok = true;
    // A catalog model deployed on `gpus` of a catalog GPU (tensor parallel over them) with the model's own weights,
    // at a context and batch in vLLM's blocks of 16; `tweak` sets the rest of the deployment.
    const auto deploy = [&](const char* id, std::uint64_t context, std::uint64_t batch, const char* gpu,
                            std::uint64_t gpus, const std::function<void(Deployment&)>& tweak) {
        model->loadCatalogModel(id);
        model->edit("Set up the example", [&, weights = model->modelWeights()](Scenario& s) {
            s.workload.context_tokens = context;
            s.workload.batch = batch;
            s.workload.block_size = 16;
            s.parallel = {.tp = gpus, .pp = 1};
            Deployment d;
            d.gpu = *catalog.find_gpu(gpu);
            d.gpu_count = gpus;
            adopt_model_weights(d, weights);
            tweak(d);
            s.deployment = d;
        });
    };
    // A quantized checkpoint: gpt-oss-120b's MXFP4 experts on one H100, weighed as vLLM loads them.
    deploy("gpt-oss-120b", 32768, 4, "h100-sxm", 1, [](Deployment&) {});
    ok &= save(&window, dir.filePath("quantized-fit.png"));
    // GLM-4.7 with its MTP layer as a speculative draft, on SGLang: its own fraction for eight H200s.
    deploy("glm-4.7", 65536, 16, "h200", 8, [](Deployment& d) {
        d.engine = Engine::sglang;
        d.fraction = default_fraction(Engine::sglang);
        d.mtp = true;
    });
    ok &= save(&window, dir.filePath("mtp-sglang-fit.png"));
    // Llama 3 70B on four H100s with Llama 3.2 1B as a separate draft model: its weights and its layers' KV count.
    deploy("llama-3-70b", 8192, 32, "h100-sxm", 4, [&catalog](Deployment& d) {
        if (const CatalogModel* small = catalog.find_model("llama-3.2-1b"))
            d.draft = draft_from_model(small->model, small->id, std::nullopt);
    });
    window.statusBar()->clearMessage();  // the previous model's format note is no part of this picture
    ok &= save(&window, dir.filePath("draft-fit.png"));
    // Qwen3 8B on one H100 with TensorRT-LLM: its profiling run's activations of 16k tokens a step, not exact.
    deploy("qwen3-8b", 32768, 8, "h100-sxm", 1, [](Deployment& d) {
        d.engine = Engine::tensorrt_llm;
        d.tensorrt_llm.max_num_tokens = 16384;
    });
    window.statusBar()->clearMessage();
    ok &= save(&window, dir.filePath("trtllm-fit.png"));
    // Gemma 3 27B at 128k on one H100 at 0.85: a decoding sequence fits, vLLM's start check (a prefill chunk in
    // each sliding group) does not.
    deploy("gemma-3-27b", 131072, 1, "h100-sxm", 1, [](Deployment& d) {
        d.fraction = 0.85;
        d.fraction_given = true;
    });
    window.statusBar()->clearMessage();
    ok &= save(&window, dir.filePath("sliding-start-check.png"));
    // Qwen3 32B on a 128 GB M4 Max with llama.cpp: the 96 GiB macOS lets its GPU wire, said in the notes.
    deploy("qwen3-32b", 32768, 1, "m4-max-128gb", 1, [](Deployment& d) {
        d.engine = Engine::llama_cpp;
        d.fraction = default_fraction(Engine::llama_cpp);
    });
    window.statusBar()->clearMessage();
    ok &= save(&window, dir.filePath("unified-memory-fit.png"));
    // Qwen3 32B as a Q4_K_M GGUF on a 16 GB card with llama.cpp: 44 of its 65 layers on the GPU, the rest in 32 GB of
    // RAM.
    deploy("qwen3-32b", 16384, 1, "rtx-4060-ti-16gb", 1, [](Deployment& d) {
        d.engine = Engine::llama_cpp;
        d.fraction = default_fraction(Engine::llama_cpp);
        d.gguf_mix = GgufMix::q4_k_m;
        d.llama_cpp.gpu_layers = 44;
        d.host.memory_bytes = 32'000'000'000;
    });
    window.statusBar()->clearMessage();
    ok &= save(&window, dir.filePath("layer-offload-fit.png"));
    // Its chart: the cache on the GPU (the line the budget is for) and in host RAM.
    window.tabs()->setCurrentIndex(ui::MainWindow::ChartTab);
    ok &= save(&window, dir.filePath("layer-offload-chart.png"));
    window.tabs()->setCurrentIndex(ui::MainWindow::DeploymentTab);
    // The same model under Ollama on a 24 GB card at its default context: its batch, and llama.cpp's --fit layers.
    deploy("qwen3-32b", 32768, 1, "rtx-4090", 1, [](Deployment& d) {
        d.engine = Engine::ollama;
        d.fraction = default_fraction(Engine::ollama);
        d.gguf_mix = GgufMix::q4_k_m;
        d.host.memory_bytes = 64'000'000'000;
    });
    window.statusBar()->clearMessage();
    ok &= save(&window, dir.filePath("ollama-fit.png"));
    window.tabs()->setCurrentIndex(ui::MainWindow::OverviewTab);
    return ok;
}

// not-exact.png.
bool render_not_exact(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    // A layout KVScope does not model: its figures come with "not exact".
    QTemporaryDir scratch;
    // attention_chunk_size outside Llama 4: which layers attend within chunks is not known.
    const QString path = scratch.filePath("chunked-8B/config.json");
    QDir().mkpath(scratch.filePath("chunked-8B"));
    QFile file(path);
    if (file.open(QIODevice::WriteOnly))
        file.write(R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
  "num_key_value_heads": 8, "hidden_size": 4096, "head_dim": 128, "max_position_embeddings": 1048576,
  "vocab_size": 128256, "intermediate_size": 14336, "attention_chunk_size": 8192, "torch_dtype": "bfloat16"})");
    file.close();
    window.importModelFile(path);
    model->edit("Set up the example", [](Scenario& s) { s.workload.context_tokens = 131072; });
    const bool ok = save(&window, dir.filePath("not-exact.png"));
    window.statusBar()->clearMessage();  // the import's temporary path is no part of the pictures after it
    return ok;
}

// dark-mode.png: the application's palette stays dark after it.
bool render_dark_mode(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    // Dark mode: the system palette, followed by every view and the chart.
    model->loadCatalogModel("kvscope-teaching-32l");
    model->edit("Set up the example", [](Scenario& s) {
        s.kv_dtype = KvDtype::fp16;
        s.workload = {8192, 1, 1, false};
    });
    QPalette dark;
    const QColor window_bg(0x2b, 0x2d, 0x30), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
    dark.setColor(QPalette::Window, window_bg);
    dark.setColor(QPalette::WindowText, text);
    dark.setColor(QPalette::Base, base);
    dark.setColor(QPalette::AlternateBase, window_bg);
    dark.setColor(QPalette::Text, text);
    dark.setColor(QPalette::Button, QColor(0x3c, 0x3f, 0x41));
    dark.setColor(QPalette::ButtonText, text);
    dark.setColor(QPalette::Highlight, QColor(0x2e, 0x86, 0xde));
    dark.setColor(QPalette::HighlightedText, Qt::white);
    dark.setColor(QPalette::ToolTipBase, QColor(0x3c, 0x3f, 0x41));
    dark.setColor(QPalette::ToolTipText, text);
    dark.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a));
    dark.setColor(QPalette::Mid, QColor(0x55, 0x55, 0x55));
    dark.setColor(QPalette::Light, QColor(0x4a, 0x4a, 0x4a));
    dark.setColor(QPalette::Dark, QColor(0x15, 0x15, 0x15));
    QApplication::setPalette(dark);
    window.tabs()->setCurrentIndex(ui::MainWindow::ChartTab);
    return save(&window, dir.filePath("dark-mode.png"));
}

// whose-results.png.
bool render_whose_results(ui::MainWindow& window, const QDir& dir) {
    ui::ScenarioModel* model = window.model();
    // Whose results, in dark mode and a laptop-sized window: Llama 3 8B fitted, then Llama 3.2 1B with a KV head count
    // that does not divide: the Deployment tab keeps the last valid figures, says whose, and greys the verdict.
    window.resize(1024, 640);
    model->loadCatalogModel("llama-3-8b");
    window.deployment()->enableBox()->setChecked(true);
    model->loadCatalogModel("llama-3.2-1b");
    model->edit("Set up the example", [](Scenario& s) { s.arch.kv_heads = 5; });
    window.tabs()->setCurrentIndex(ui::MainWindow::DeploymentTab);
    const bool ok = save(&window, dir.filePath("whose-results.png"));
    window.resize(1360, 860);
    return ok;
}

}  // namespace

bool render_screenshots(const Catalog& catalog, const QString& folder) {
    QDir().mkpath(folder);
    QDir dir(folder);
    ui::MainWindow window(catalog, /*restore=*/false);
    window.resize(1360, 860);
    window.show();

    bool ok = render_readme_example(catalog, window, dir);
    ok &= render_repaired_file(window, dir);
    ok &= render_picked_model(window, dir);
    ok &= render_learner_inputs(window, dir);
    ok &= render_probe(window, dir);
    ok &= render_traffic(catalog, window, dir);
    ok &= render_model_kinds(catalog, window, dir);
    ok &= render_deployments(catalog, window, dir);
    ok &= render_not_exact(window, dir);
    ok &= render_files(catalog, dir);
    ok &= render_learn(window, dir);
    ok &= render_dark_mode(window, dir);
    ok &= render_whose_results(window, dir);
    return ok;
}

}  // namespace kvscope::gui
