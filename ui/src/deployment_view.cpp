#include "kvscope/ui/deployment_view.h"

#include <QApplication>
#include <QBoxLayout>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QToolTip>
#include <QVBoxLayout>

#include "kvscope/calculator/draft_import.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/offload.h"
#include "kvscope/calculator/serving.h"
#include "kvscope/calculator/weights.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/ui/decimal_spin_box.h"
#include "kvscope/ui/field_text.h"
#include "kvscope/ui/gpu_memory_bar.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/plan_view.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/stale_note.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

const QString kCustom = QStringLiteral("custom");
constexpr int kFractionEdits = 2;  // undo merge id (1 is the context slider's)

// The Weights box's item for "the bytes the model's files give"; a GGUF mix's items from kGgufMixItems on (every other
// item is a KvDtype).
constexpr int kExactWeights = -1;
constexpr int kGgufMixItems = 1000;
// The Draft model box's items besides the catalog's ids: no draft, a file to choose.
const QString kNoDraft = QStringLiteral("");
const QString kDraftFile = QStringLiteral("\u0001file");  // no id or path a user types

// vLLM's batch limits, as the fields' tooltips give them (SGLang's reading of the same fields: refresh).
QString vllmTokensTip() {
    return DeploymentView::tr(
        "max_num_batched_tokens: tokens in one step of vLLM's profile run. Empty: vLLM's default "
        "for this GPU (--max-num-batched-tokens).");
}
// Whose batch limits the fields hold: SGLang's where it reads them, else vLLM's.
QString batchLimitsEngine(Engine engine) {
    return engine == Engine::sglang ? QStringLiteral("SGLang") : QStringLiteral("vLLM");
}
QString vllmSeqsTip() {
    return DeploymentView::tr(
        "max_num_seqs: sequences in one step, whose logits the profile run samples. Empty: "
        "vLLM's default (--max-num-seqs).");
}

// The vLLM version box's items: minor x 1000 + (patch + 1, or 0 where no patch is named); 0 is the default.
constexpr qulonglong kVersionKeyMinor = 1000;
QVariant vllm_version_key(std::uint64_t minor, std::optional<std::uint64_t> patch) {
    return QVariant(static_cast<qulonglong>(minor * kVersionKeyMinor + (patch ? *patch + 1 : 0)));
}

// The deployment a user starts from when they tick the box: the first catalog GPU (or an
// 80 GiB one), as many GPUs as the parallel layout uses, vLLM's rule.
Deployment starting_deployment(const Catalog& catalog, const Scenario& s, const ModelWeights& model_weights) {
    Deployment d;
    if (const GpuSpec* h100 = catalog.find_gpu("h100-sxm"))
        d.gpu = *h100;
    else if (!catalog.gpus().empty())
        d.gpu = catalog.gpus().front();
    d.gpu_count = s.parallel.gpus();
    d.fraction = default_fraction(d.engine);
    adopt_model_weights(d, model_weights);  // the model's own, catalog or imported, as kvscope-cli gives it
    return d;
}

}  // namespace

DeploymentView::DeploymentView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      box_(new QGroupBox(tr("Check a deployment"))),
      gpu_(new QComboBox),
      count_(new QLabel),
      memory_(new QLineEdit),
      bandwidth_(new QLineEdit),
      engine_(new QComboBox),
      fraction_(new DecimalSpinBox),
      weight_dtype_(new QComboBox),
      vllm_version_(new QComboBox),
      vllm_tokens_(new QLineEdit),
      vllm_seqs_(new QLineEdit),
      vllm_graphs_(new QCheckBox(tr("CUDA graphs"))),
      mtp_(new QCheckBox),
      ubatch_(new QLineEdit),
      gpu_layers_(new QLineEdit),
      layers_slider_(new QSlider(Qt::Horizontal)),
      flash_attn_(new QCheckBox(tr("Flash attention"))),
      host_memory_(new QLineEdit),
      host_platform_(new QComboBox),
      cache_in_ram_(new QCheckBox(tr("KV cache in host RAM"))),
      cpu_moe_(new QLineEdit),
      trtllm_tokens_(new QLineEdit),
      draft_(new QComboBox),
      draft_method_(new QComboBox),
      rule_(new QLabel),
      verdict_(new QLabel),
      bars_(new GpuMemoryBar),
      host_bar_(new GpuMemoryBar),
      figures_(new QLabel),
      errors_(new QLabel),
      stale_(new StaleNote(model)),
      plan_(new PlanView(model)) {
    box_->setCheckable(true);
    for (const GpuSpec& g : model_->catalog().gpus()) {
        gpu_->addItem(q(g.name), q(g.id));
        gpu_->setItemData(gpu_->count() - 1, q(g.source), Qt::ToolTipRole);
    }
    gpu_->addItem(tr("Custom GPU (enter memory and bandwidth)"), kCustom);
    memory_->setPlaceholderText(tr("e.g. 80GiB"));
    bandwidth_->setPlaceholderText(tr("e.g. 3350GB (per second)"));
    for (std::size_t i = 0; i < kEngineCount; ++i) {
        const auto e = static_cast<Engine>(i);
        engine_->addItem(q(std::string(to_string(e))), static_cast<int>(e));
        engine_->setItemData(engine_->count() - 1, q(std::string(budget_rule(e))), Qt::ToolTipRole);
    }
    fraction_->setRange(0.01, 1.0);
    fraction_->setSingleStep(0.01);
    fraction_->setDecimals(3);              // SGLang's defaults have three (0.835)
    fraction_->setFractionStyle(true);      // 0.90 as fit prints it; "90 %" read as 0.90
    fraction_->setKeyboardTracking(false);  // "1,5" is not applied as 1 on its first key
    for (const KvDtypeInfo& i : all_kv_dtypes())
        weight_dtype_->addItem(q(std::string(i.id)), static_cast<int>(i.dtype));
    // llama.cpp's quantization mixes, as llama-quantize names them (gguf_mix.h).
    for (std::size_t i = 0; i < kGgufMixCount; ++i) {
        const auto mix = static_cast<GgufMix>(i);
        weight_dtype_->addItem(tr("GGUF %1").arg(q(gguf_mix_name(mix))), kGgufMixItems + static_cast<int>(i));
        weight_dtype_->setItemData(weight_dtype_->count() - 1,
                                   tr("Each tensor in the type llama-quantize gives it for %1, from the model's shape")
                                       .arg(q(gguf_mix_name(mix))),
                                   Qt::ToolTipRole);
    }
    // The versions whose startup rules the calculator has; the default first (as --vllm-version).
    vllm_version_->addItem(tr("0.%1 (default)").arg(kDefaultVllmMinor), QVariant(qulonglong{0}));
    // 0.6.4 profiled as no other release did (it counted the CUDA context): listed apart, above the other 0.6s.
    for (std::uint64_t minor = kNewestVllmRules; minor >= kOldestVllmMinor; --minor) {
        if (minor == 6) vllm_version_->addItem(QStringLiteral("0.6.4"), vllm_version_key(6, 4));
        vllm_version_->addItem(QStringLiteral("0.%1").arg(minor), vllm_version_key(minor, std::nullopt));
    }
    host_memory_->setPlaceholderText(tr("not checked: e.g. 32GB"));
    cpu_moe_->setPlaceholderText(tr("none"));
    // Its names are long ("LPDDR5X-8533, 256-bit (Strix Halo …)"): the box does not widen the form for them.
    host_platform_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    host_platform_->setMinimumContentsLength(18);
    for (const HostPlatform& h : host_platforms())
        host_platform_->addItem(tr("%1, %2").arg(q(std::string(h.name)), q(format_bandwidth(h.bandwidth_bytes_per_s))),
                                q(std::string(h.id)));
    host_platform_->addItem(tr("This computer (measured)"), QStringLiteral("this"));
    host_platform_->setItemData(host_platform_->count() - 1,
                                tr("Its read ceiling, measured as the CPU probe does (about a second), and its RAM"),
                                Qt::ToolTipRole);
    draft_->addItem(tr("none"), kNoDraft);
    for (const CatalogModel& m : model_->catalog().models()) draft_->addItem(q(m.name), q(m.id));
    draft_->addItem(tr("From a file…"), kDraftFile);
    draft_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    draft_->setMinimumContentsLength(18);
    for (std::size_t i = 0; i < kDraftMethodCount; ++i) {
        const auto m = static_cast<DraftMethod>(i);
        draft_method_->addItem(q(std::string(to_string(m))), static_cast<int>(m));
    }
    rule_->setWordWrap(true);
    rule_->setForegroundRole(QPalette::PlaceholderText);
    QFont big = verdict_->font();
    big.setPointSizeF(big.pointSizeF() * 1.5);
    big.setBold(true);
    verdict_->setFont(big);
    verdict_->setWordWrap(true);
    verdict_->setAccessibleName(tr("Fit verdict"));
    figures_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    figures_->setWordWrap(true);
    errors_->setWordWrap(true);
    errors_->setStyleSheet("color: #d63031;");

    const std::initializer_list<std::pair<QWidget*, const char*>> names{{gpu_, "GPU"},
                                                                        {count_, "GPUs"},
                                                                        {memory_, "Memory"},
                                                                        {bandwidth_, "Bandwidth"},
                                                                        {engine_, "Engine"},
                                                                        {fraction_, "Memory fraction"},
                                                                        {weight_dtype_, "Weights"},
                                                                        {vllm_version_, "vLLM version"},
                                                                        {vllm_tokens_, "Tokens per step"},
                                                                        {vllm_seqs_, "Sequences per step"},
                                                                        {ubatch_, "Micro-batch"},
                                                                        {gpu_layers_, "GPU layers"},
                                                                        {host_memory_, "Host RAM"},
                                                                        {host_platform_, "Host memory"},
                                                                        {cpu_moe_, "Experts in RAM"},
                                                                        {trtllm_tokens_, "Tokens per step"},
                                                                        {draft_, "Draft model"},
                                                                        {draft_method_, "Draft method"}};
    for (const auto& [w, name] : names) w->setAccessibleName(tr(name));
    marks_.add(gpu_, {}, tr("The GPU model, from the catalog, or Custom to enter your own memory and bandwidth."));
    // The GPU count is TP × PP: it is set there (or by a row of the plan), never guessed from a count.
    marks_.add(count_, {Field::gpus, Field::tp},
               tr("GPUs that serve one copy of the model: tensor parallel × pipeline parallel, set under Parallel "
                  "or by a row of “How many GPUs?”."));
    marks_.add(memory_, {Field::gpu_memory}, tr("Memory of one GPU: 80GiB, 141 GB, or bytes."));
    marks_.add(bandwidth_, {Field::gpu_bandwidth},
               tr("Memory bandwidth of one GPU: 3.35 TB/s, 3350GB or bytes per second."));
    marks_.add(engine_, {}, tr("The inference engine whose rule decides how much memory the KV cache may use."));
    marks_.add(fraction_, {Field::utilization},
               tr("The engine's memory fraction (vLLM gpu_memory_utilization, SGLang mem_fraction_static …)."));
    marks_.add(weight_dtype_, {Field::weight_dtype},
               tr("Number format of the weights (bf16 = 2 bytes per parameter, fp8 = 1). A model read from a GGUF or "
                  "a folder with safetensors counts its files' exact bytes, and a quantized checkpoint (AWQ, GPTQ, "
                  "FP8, NVFP4, MXFP4 …) its scheme, until you choose a format here."));

    marks_.add(vllm_version_, {},
               tr("The vLLM version whose startup rules apply: the sampler's memory changed at 0.12, CUDA graphs are "
                  "subtracted from 0.21 (--vllm-version)."));
    marks_.add(vllm_tokens_, {Field::max_num_batched_tokens}, vllmTokensTip());
    marks_.add(vllm_seqs_, {Field::max_num_seqs}, vllmSeqsTip());
    vllm_graphs_->setToolTip(tr("Off: --enforce-eager, no CUDA graphs (subtracted from vLLM 0.21 on)."));
    marks_.add(mtp_, {Field::mtp_layers},
               tr("As vLLM's --speculative-config method mtp: the layers' weights and KV cache count "
                  "(kvscope-cli fit --mtp)."));
    marks_.add(gpu_layers_, {Field::gpu_layers},
               tr("-ngl: the layers llama.cpp puts on the GPU, of the blocks and the output layer (the output first, "
                  "then the blocks from the last); the rest stay in host memory. Empty: all; auto: the most that leave "
                  "llama.cpp's --fit target (1 GiB) free (--gpu-layers)."));
    marks_.add(ubatch_, {Field::ubatch},
               tr("n_ubatch: tokens in one graph of llama.cpp, which sizes its compute buffer and what sliding "
                  "layers keep. Empty: llama.cpp's 512 (--ubatch)."));
    marks_.add(host_memory_, {Field::host_memory},
               tr("The computer's RAM, which must hold what llama.cpp keeps off the GPU: 32GB, 64GiB. Empty: not "
                  "checked (--host-memory)."));
    marks_.add(host_platform_, {Field::host_bandwidth},
               tr("The computer's memory, whose bandwidth a decode step reads the host's layers at (--host; "
                  "--host-bandwidth gives your own)."));
    cache_in_ram_->setToolTip(tr("As --no-kv-offload: every layer's KV cache in host RAM, read from there each step."));
    marks_.add(cpu_moe_, {Field::cpu_moe_layers},
               tr("As --n-cpu-moe N: the experts of the first N blocks stay in host RAM, the rest of those blocks on "
                  "the GPU. Empty: none."));
    flash_attn_->setToolTip(
        tr("Off: -fa off. llama.cpp then forms the attention scores of a whole micro-batch, "
           "a larger compute buffer (--flash-attn)."));
    marks_.add(trtllm_tokens_, {Field::max_num_tokens},
               tr("max_num_tokens: tokens in one step of TensorRT-LLM and in the profiling run whose activations it "
                  "keeps back from the KV cache. Empty: TensorRT-LLM's 8,192 (--max-num-tokens)."));
    marks_.add(draft_, {Field::draft},
               tr("Speculative decoding with a separate draft model (vLLM --speculative-config model=…): a small "
                  "model of the same family, or an EAGLE head's config.json. Its weights and its layers' KV cache "
                  "count (kvscope-cli fit --draft)."));
    marks_.add(draft_method_, {},
               tr("How vLLM serves the draft: draft_model loads all of it; eagle and eagle3 heads use the model's "
                  "embedding (eagle its LM head too). Read from the config's class when it names one "
                  "(--draft-method)."));
    // The form holds no label that wraps: Qt 6.4's QFormLayout reads past its rows in its height-for-width pass
    // once several rows are hidden (setRowVisible), so the rule and the errors, which wrap, go below it.
    auto* column = new QVBoxLayout(box_);
    form_ = new QFormLayout;
    column->addLayout(form_);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form_->addRow(tr("&GPU"), gpu_);
    form_->addRow(tr("GPUs"), count_);
    form_->addRow(tr("Memory"), memory_);
    form_->addRow(tr("Bandwidth"), bandwidth_);
    form_->addRow(tr("&Engine"), engine_);
    form_->addRow(tr("Memory &fraction"), fraction_);
    form_->addRow(tr("&Weights"), weight_dtype_);
    form_->addRow(tr("vLLM &version"), vllm_version_);
    form_->addRow(tr("Tokens per step"), vllm_tokens_);
    form_->addRow(tr("Sequences per step"), vllm_seqs_);
    form_->addRow(QString(), vllm_graphs_);
    form_->addRow(tr("Micro-batch"), ubatch_);
    // The layers on the GPU: typed, or dragged from none to all.
    gpu_layers_row_ = new QWidget;
    auto* layers_row = new QHBoxLayout(gpu_layers_row_);
    layers_row->setContentsMargins(0, 0, 0, 0);
    gpu_layers_->setMaximumWidth(gpu_layers_->fontMetrics().horizontalAdvance(QStringLiteral("0000000000")));
    layers_row->addWidget(gpu_layers_);
    layers_row->addWidget(layers_slider_, 1);
    layers_slider_->setAccessibleName(tr("GPU layers slider"));
    layers_slider_->setToolTip(tr("Drag for fewer layers on the GPU; the right end is all of them"));
    form_->addRow(tr("GPU layers"), gpu_layers_row_);
    form_->addRow(QString(), flash_attn_);
    form_->addRow(tr("Host RAM"), host_memory_);
    form_->addRow(tr("Host memory"), host_platform_);
    form_->addRow(tr("Experts in RAM"), cpu_moe_);
    form_->addRow(QString(), cache_in_ram_);
    form_->addRow(tr("Tokens per step"), trtllm_tokens_);
    form_->addRow(QString(), mtp_);
    form_->addRow(tr("&Draft model"), draft_);
    form_->addRow(tr("Draft method"), draft_method_);
    column->addWidget(rule_);
    column->addWidget(errors_);
    column->addStretch(1);

    auto* results = new QVBoxLayout;
    results->addWidget(stale_);
    results->addWidget(verdict_);
    results->addWidget(bars_);
    results->addWidget(host_bar_);
    results->addWidget(figures_);
    results->addStretch(1);
    auto* page = new QVBoxLayout(this);
    columns_ = new QBoxLayout(QBoxLayout::LeftToRight);
    columns_->addWidget(box_, 2);
    columns_->addLayout(results, 4);
    page->addLayout(columns_);
    page->addWidget(plan_);
    connect(plan_, &PlanView::notice, this, &DeploymentView::notice);
    // Long GPU names must not widen the form past a small window.
    gpu_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    gpu_->setMinimumContentsLength(18);

    auto edit = [this](const QString& what, auto change, int merge_id = -1) {
        if (syncing_ || !model_->scenario().deployment) return;
        model_->edit(
            what, [&](Scenario& s) { change(*s.deployment, s); }, merge_id);
    };
    connect(box_, &QGroupBox::toggled, this, [this](bool on) {
        if (syncing_) return;
        dropTypedText();  // a deployment started or removed: no text typed for the one before stays
        const Catalog& catalog = model_->catalog();
        const ModelWeights weights = model_->modelWeights();
        model_->edit(on ? tr("Check a deployment") : tr("Remove the deployment"), [on, &catalog, weights](Scenario& s) {
            if (on)
                s.deployment = starting_deployment(catalog, s, weights);
            else
                s.deployment.reset();
        });
    });
    connect(gpu_, &QComboBox::activated, this, [this, edit](int index) {
        dropTypedText();  // a catalog GPU replaces whatever was mistyped in Memory or Bandwidth: no stale error
        const QString id = gpu_->itemData(index).toString();
        const GpuSpec* g = model_->catalog().find_gpu(id.toStdString());
        edit(tr("Change GPU"), [g](Deployment& d, Scenario&) {
            if (g)
                d.gpu = *g;
            else {
                d.gpu.id = "custom";
                d.gpu.name = "custom GPU";
                d.gpu.source = "entered by hand";
                d.gpu.unified_memory_bytes = 0;  // the user's own: its memory as entered
                d.gpu.gpu_share = 0;
                d.gpu.share_rule.clear();
            }
        });
        sync();  // the same GPU chosen again changes nothing, but its figures replace the mistyped text all the same
    });
    connect(memory_, &QLineEdit::editingFinished, this, &DeploymentView::commitCustom);
    connect(bandwidth_, &QLineEdit::editingFinished, this, &DeploymentView::commitCustom);
    connect(engine_, &QComboBox::activated, this, [this, edit](int index) {
        const auto e = static_cast<Engine>(engine_->itemData(index).toInt());
        edit(tr("Change engine"), [e](Deployment& d, Scenario&) {
            d.engine = e;
            d.fraction = default_fraction(e);  // each engine's own default (SGLang's: derived for the GPU)
            d.fraction_given = false;
        });
    });
    connect(fraction_, &QDoubleSpinBox::valueChanged, this, [edit](double f) {
        // Spinning through 0.90, 0.89, 0.88 … is one undo step.
        edit(
            QObject::tr("Change memory fraction"),
            [f](Deployment& d, Scenario&) {
                d.fraction = f;
                d.fraction_given = true;
            },
            kFractionEdits);
    });
    connect(weight_dtype_, &QComboBox::activated, this, [this, edit](int index) {
        const int choice = weight_dtype_->itemData(index).toInt();
        if (choice == kExactWeights) {  // back to the bytes the model's files give
            const ModelWeights files = model_->modelWeights();
            edit(tr("Use the model files' weights"), [files](Deployment& d, Scenario&) {
                d.weight_dtype = files.dtype;
                d.weights_bytes_exact = files.exact_bytes;
                d.weights_source = files.source;
                d.weight_quant = files.quant;
                d.weights_layers = files.layers;
                d.gguf_mix.reset();
            });
            return;
        }
        if (choice >= kGgufMixItems) {
            const auto mix = static_cast<GgufMix>(choice - kGgufMixItems);
            edit(tr("Change weight format"), [mix](Deployment& d, Scenario&) {
                d.gguf_mix = mix;  // as --weight-dtype q4_k_m
                d.weights_bytes_exact = 0;
                d.weights_source.clear();
                d.weight_quant.reset();
                d.weights_layers.reset();
            });
            return;
        }
        const auto w = static_cast<KvDtype>(choice);
        edit(tr("Change weight format"), [w](Deployment& d, Scenario&) {
            d.weight_dtype = w;
            d.gguf_mix.reset();
            d.weights_layers.reset();
            // Another format than the model's files hold: their exact bytes and quantization no longer apply (as
            // --weight-dtype).
            d.weights_bytes_exact = 0;
            d.weights_source.clear();
            d.weight_quant.reset();
        });
    });
    connect(vllm_version_, &QComboBox::activated, this, [this, edit](int index) {
        const qulonglong key = vllm_version_->itemData(index).toULongLong();
        edit(tr("Change vLLM version"), [key](Deployment& d, Scenario&) {
            d.vllm.version_minor = key / kVersionKeyMinor;
            d.vllm.version_patch.reset();
            if (key % kVersionKeyMinor > 0) d.vllm.version_patch = key % kVersionKeyMinor - 1;
        });
    });
    connect(mtp_, &QCheckBox::clicked, this, [edit](bool on) {
        // vLLM serves one speculative method: the MTP layers replace a draft model.
        edit(QObject::tr("Change the MTP draft"), [on](Deployment& d, Scenario&) {
            d.mtp = on;
            if (on) d.draft.reset();
        });
    });
    connect(draft_, &QComboBox::activated, this, [this, edit](int index) {
        typed_.remove(draft_);
        const QString id = draft_->itemData(index).toString();
        if (id == kDraftFile) {
            const QString path = QFileDialog::getOpenFileName(
                this, tr("Draft model"), QString(),
                tr("Model files (*.json *.gguf);;Hugging Face config.json (*.json);;GGUF (*.gguf);;All files (*)"));
            if (path.isEmpty())
                sync();  // back to the draft there is
            else
                chooseDraft(path);
            return;
        }
        if (id == kNoDraft) {
            edit(tr("Remove the draft model"), [](Deployment& d, Scenario&) { d.draft.reset(); });
            return;
        }
        chooseDraft(id);  // a catalog model, by its id
    });
    connect(draft_method_, &QComboBox::activated, this, [this, edit](int index) {
        const auto m = static_cast<DraftMethod>(draft_method_->itemData(index).toInt());
        edit(tr("Change the draft method"), [m](Deployment& d, Scenario&) {
            if (d.draft) d.draft->method = m;
        });
    });
    connect(vllm_graphs_, &QCheckBox::clicked, this, [edit](bool graphs) {
        edit(QObject::tr("Change CUDA graphs"), [graphs](Deployment& d, Scenario&) { d.vllm.enforce_eager = !graphs; });
    });
    connect(flash_attn_, &QCheckBox::clicked, this, [edit](bool on) {
        edit(QObject::tr("Change flash attention"),
             [on](Deployment& d, Scenario&) { d.llama_cpp.flash_attn_off = !on; });
    });
    connect(gpu_layers_, &QLineEdit::editingFinished, this, [this] { commitGpuLayers(); });
    connect(host_memory_, &QLineEdit::editingFinished, this, &DeploymentView::commitHostMemory);
    connect(host_platform_, &QComboBox::activated, this, [this, edit](int index) {
        const std::string id = host_platform_->itemData(index).toString().toStdString();
        if (id.empty()) return;  // the bandwidth given, as it is
        typed_.remove(host_platform_);
        if (id == "this") return measureThisHost();
        edit(tr("Change the host memory"), [id](Deployment& d, Scenario&) {
            d.host.id = id;
            d.host.bandwidth_bytes_per_s = 0;
        });
    });
    connect(cache_in_ram_, &QCheckBox::clicked, this, [edit](bool in_ram) {
        edit(QObject::tr("Change where the KV cache lives"),
             [in_ram](Deployment& d, Scenario&) { d.llama_cpp.no_kv_offload = in_ram; });
    });
    connect(cpu_moe_, &QLineEdit::editingFinished, this, [this] {
        commitEngineCount(cpu_moe_, tr("Change the experts in RAM"), tr("none"),
                          [](Deployment& d) -> std::uint64_t& { return d.llama_cpp.cpu_moe_layers; });
    });
    // A drag is one change, when the slider is let go; the keys and the wheel change it a step at a time.
    connect(layers_slider_, &QSlider::sliderReleased, this, [this] { setGpuLayers(layers_slider_->value()); });
    connect(layers_slider_, &QSlider::valueChanged, this, [this](int n) {
        if (!layers_slider_->isSliderDown()) setGpuLayers(n);
    });
    connect(ubatch_, &QLineEdit::editingFinished, this, [this] {
        const bool ollama = model_->scenario().deployment && model_->scenario().deployment->engine == Engine::ollama;
        commitEngineCount(ubatch_, tr("Change llama.cpp's micro-batch"),
                          ollama ? tr("Ollama's choice") : tr("llama.cpp's 512"),
                          [](Deployment& d) -> std::uint64_t& { return d.llama_cpp.ubatch; });
    });
    connect(trtllm_tokens_, &QLineEdit::editingFinished, this, [this] {
        commitEngineCount(trtllm_tokens_, tr("Change TensorRT-LLM's tokens per step"), tr("TensorRT-LLM's 8,192"),
                          [](Deployment& d) -> std::uint64_t& { return d.tensorrt_llm.max_num_tokens; });
    });
    // Esc takes back what was typed in a field, as in the number fields of the inputs.
    for (QLineEdit* field : textFields())
        take_back_on_escape(field, [this, field] {
            if (!typed_.contains(field) && !field->isModified()) return false;
            typed_.remove(field);
            forget_user_text(field);
            sync();
            return true;
        });
    take_back_on_escape(draft_, [this] {
        if (!typed_.contains(draft_)) return false;
        typed_.remove(draft_);
        sync();
        return true;
    });
    connect(vllm_tokens_, &QLineEdit::editingFinished, this, &DeploymentView::commitVllmBatch);
    connect(vllm_seqs_, &QLineEdit::editingFinished, this, &DeploymentView::commitVllmBatch);
    connect(model_, &ScenarioModel::changed, this, &DeploymentView::sync);
    connect(model_, &ScenarioModel::unitsChanged, this, &DeploymentView::sync);
    sync();
}

void DeploymentView::commitVllmBatch() {
    if (syncing_ || !model_->scenario().deployment) return;
    VllmSettings v = model_->scenario().deployment->vllm;
    typed_.remove(vllm_tokens_);
    typed_.remove(vllm_seqs_);
    // Empty: vLLM's default; else a count, read as --max-num-batched-tokens and --max-num-seqs read it.
    const auto read = [this](QLineEdit* field, std::uint64_t& slot, bool tokens) {
        const std::string text = field->text().trimmed().toStdString();
        if (text.empty()) {
            slot = 0;
            return;
        }
        const std::string name = field->accessibleName().toStdString();
        auto n = tokens ? parse_token_count(text, name) : parse_count(text, name);
        if (!n)
            typed_.insert(field, q(n.errors().front().message));
        else if (*n == 0)  // as the command line: 0 is no setting vLLM (or SGLang) takes
            typed_.insert(field, tr("'%1' is no count it takes: at least 1, or empty for %2's default")
                                     .arg(q(text), batchLimitsEngine(model_->scenario().deployment->engine)));
        else
            slot = *n;
    };
    read(vllm_tokens_, v.max_num_batched_tokens, true);
    read(vllm_seqs_, v.max_num_seqs, false);
    for (QLineEdit* field : {vllm_tokens_, vllm_seqs_})
        if (!typed_.contains(field)) field->setModified(false);  // accepted: the scenario's text again
    if (!(v == model_->scenario().deployment->vllm))
        model_->edit(tr("Change %1's batch limits").arg(batchLimitsEngine(model_->scenario().deployment->engine)),
                     [&v](Scenario& s) { s.deployment->vllm = v; });
    sync();
}

void DeploymentView::commitEngineCount(QLineEdit* field, const QString& what, const QString& empty_means,
                                       std::uint64_t& (*slot)(Deployment&)) {
    if (syncing_ || !model_->scenario().deployment) return;
    typed_.remove(field);
    // Empty: the engine's default; else a count, as --ubatch and --max-num-tokens read it.
    std::uint64_t value = 0;
    const std::string text = field->text().trimmed().toStdString();
    if (!text.empty()) {
        const QString name = field->accessibleName();
        auto n = parse_token_count(text, name.toStdString());
        if (!n)
            typed_.insert(field, q(n.errors().front().message));
        else if (*n == 0)
            typed_.insert(field,
                          tr("'%1' is no count it takes: at least 1, or empty for %2").arg(q(text), empty_means));
        else
            value = *n;
    }
    Deployment current = *model_->scenario().deployment;
    if (!typed_.contains(field)) field->setModified(false);  // accepted: the scenario's text again
    if (!typed_.contains(field) && value != slot(current))
        model_->edit(what, [value, slot](Scenario& s) { slot(*s.deployment) = value; });
    sync();
}

void DeploymentView::setGpuLayers(int n) {
    if (syncing_ || !model_->scenario().deployment || n < 0) return;
    // The right end is all of them: llama.cpp's default, as an empty field says.
    const std::optional<std::uint64_t> value =
        n >= layers_slider_->maximum() ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(n));
    typed_.remove(gpu_layers_);
    applyGpuLayers(value, false);
}

void DeploymentView::applyGpuLayers(std::optional<std::uint64_t> value, bool automatic) {
    const LlamaCppSettings& now = model_->scenario().deployment->llama_cpp;
    if (value != now.gpu_layers || automatic != now.gpu_layers_auto)
        model_->edit(tr("Change the layers on the GPU"), [value, automatic](Scenario& s) {
            s.deployment->llama_cpp.gpu_layers = value;
            s.deployment->llama_cpp.gpu_layers_auto = automatic;
        });
    sync();
}

void DeploymentView::commitGpuLayers() {
    if (syncing_ || !model_->scenario().deployment) return;
    typed_.remove(gpu_layers_);
    // Empty or "all": every layer (llama.cpp's -1); "auto": as its --fit chooses; else a count, 0 keeping every layer
    // in host memory.
    std::optional<std::uint64_t> value;
    const std::string text = gpu_layers_->text().trimmed().toLower().toStdString();
    const bool automatic = text == "auto";
    if (!text.empty() && text != "all" && !automatic) {
        auto n = parse_count(text, "GPU layers");
        if (n)
            value = *n;
        else
            typed_.insert(gpu_layers_,
                          tr("'%1' is not a number of layers: a count, auto, or empty for all").arg(q(text)));
    }
    if (typed_.contains(gpu_layers_)) return sync();
    gpu_layers_->setModified(false);
    applyGpuLayers(value, automatic);
}

void DeploymentView::dropTypedText() {
    typed_.clear();
    for (QLineEdit* field : textFields()) forget_user_text(field);
}

std::array<QLineEdit*, 9> DeploymentView::textFields() const {
    return {memory_,     bandwidth_,   vllm_tokens_, vllm_seqs_,    ubatch_,
            gpu_layers_, host_memory_, cpu_moe_,     trtllm_tokens_};
}

DeploymentView::~DeploymentView() = default;  // host_reader_ waits for a reading under way

void DeploymentView::measureThisHost() {
    // Measured as kvscope-cli --host this measures it, off the window's thread (a read pass over 256 MiB on every
    // core, about a second): a bandwidth of its own from then on, and the RAM unless given.
    if (host_reader_.running()) return;
    const QString tip = host_platform_->toolTip();
    host_platform_->setEnabled(false);
    host_platform_->setToolTip(tr("Measuring this computer's memory (about a second)…"));
    // The reading is for the scenario it was asked of: one changed meanwhile (an undo, a file opened) keeps its host.
    host_reader_.run(this, [this, tip, asked = model_->scenario()]() -> std::function<void()> {
        const probe::HostReading m = probe::read_this_host();
        return [this, m, tip, asked] {
            host_platform_->setEnabled(true);
            host_platform_->setToolTip(tip);
            const bool changed = !(model_->scenario() == asked);
            if (m.read_gbps <= 0 || changed || !model_->scenario().deployment) {
                // Said beside the box, which keeps showing the scenario's host: nothing typed is left unsaved.
                host_notice_ = m.read_gbps <= 0
                                   ? tr("This computer's read ceiling could not be measured here.")
                                   : tr("The scenario changed while this computer was measured: choose it again.");
                QToolTip::showText(host_platform_->mapToGlobal(QPoint(0, host_platform_->height())), host_notice_,
                                   host_platform_);
                return sync();
            }
            host_notice_.clear();
            model_->edit(tr("Measure this computer as the host"), [m](Scenario& s) {
                HostSpec& h = s.deployment->host;
                h.id.clear();
                h.bandwidth_bytes_per_s = static_cast<std::uint64_t>(m.read_gbps * 1e9);
                if (h.memory_bytes == 0) h.memory_bytes = m.ram_bytes;
            });
        };
    });
}

void DeploymentView::commitHostMemory() {
    if (syncing_ || !model_->scenario().deployment) return;
    typed_.remove(host_memory_);
    const std::string text = host_memory_->text().trimmed().toStdString();
    std::uint64_t bytes = 0;
    if (!text.empty()) {
        auto v = parse_gpu_memory(text, host_memory_->accessibleName().toStdString());
        if (v)
            bytes = *v;
        else
            typed_.insert(host_memory_, q(v.errors().front().message));
    }
    if (!typed_.contains(host_memory_)) {
        host_memory_->setModified(false);
        if (bytes != model_->scenario().deployment->host.memory_bytes)
            model_->edit(tr("Change the host's RAM"),
                         [bytes](Scenario& s) { s.deployment->host.memory_bytes = bytes; });
    }
    sync();
}

QStringList DeploymentView::unaccepted() const {
    QStringList out;
    for (auto it = typed_.begin(); it != typed_.end(); ++it) out << it.key()->accessibleName() + ": " + it.value();
    return out;
}

bool DeploymentView::commitPending() {
    if (!model_->scenario().deployment) return true;
    if (memory_->isModified() || bandwidth_->isModified()) commitCustom();
    if (vllm_tokens_->isModified() || vllm_seqs_->isModified()) commitVllmBatch();
    if (ubatch_->isModified()) emit ubatch_->editingFinished();
    if (gpu_layers_->isModified()) commitGpuLayers();
    if (host_memory_->isModified()) commitHostMemory();
    if (cpu_moe_->isModified()) emit cpu_moe_->editingFinished();
    if (trtllm_tokens_->isModified()) emit trtllm_tokens_->editingFinished();
    fraction_->interpretText();
    return typed_.isEmpty();
}

void DeploymentView::chooseDraft(const QString& spec) {
    if (!model_->scenario().deployment) return;
    typed_.remove(draft_);
    auto found = find_draft(spec.toStdString(), std::nullopt, model_->catalog(), "Draft model");
    if (!found) {
        typed_.insert(draft_, q(found.errors().front().message));
        sync();
        return;
    }
    model_->edit(tr("Change the draft model"), [&found](Scenario& s) {
        s.deployment->draft = *found;
        s.deployment->mtp = false;
    });
}

void DeploymentView::resizeEvent(QResizeEvent* event) {
    // Side by side when there is room; the results under the form in a narrow window.
    columns_->setDirection(width() < 860 ? QBoxLayout::TopToBottom : QBoxLayout::LeftToRight);
    QWidget::resizeEvent(event);
}

void DeploymentView::commitCustom() {
    if (syncing_ || !model_->scenario().deployment) return;
    const Deployment& current = *model_->scenario().deployment;
    GpuSpec gpu = current.gpu;
    for (auto [field, slot] :
         {std::pair{memory_, &gpu.memory_bytes}, std::pair{bandwidth_, &gpu.bandwidth_bytes_per_s}}) {
        // Text shown, not typed ("79.6 GiB" for 85,520,809,984 bytes) keeps the exact value behind it.
        if (!field->isModified()) continue;
        typed_.remove(field);
        const auto parse = field == bandwidth_ ? parse_bandwidth : parse_gpu_memory;
        auto v = parse(field->text().trimmed().toStdString(), field->accessibleName().toStdString());
        if (v) {
            *slot = *v;
            field->setModified(false);
        } else {
            typed_.insert(field, q(v.errors().front().message));
        }
    }
    if (!typed_.contains(memory_) && !typed_.contains(bandwidth_) && !(gpu == current.gpu)) {
        const GpuSpec* base = model_->catalog().find_gpu(gpu.id);
        if (base && base->unified_memory_bytes > 0 && gpu.bandwidth_bytes_per_s == base->bandwidth_bytes_per_s) {
            // A unified-memory computer given another share of its memory (a raised limit) is still that machine.
            gpu.name = name_with_memory(base, gpu.name, gpu.memory_bytes);
        } else {
            gpu.id = "custom";
            gpu.name = "custom GPU";
            gpu.source = "entered by hand";
            gpu.unified_memory_bytes = 0;
            gpu.gpu_share = 0;
            gpu.share_rule.clear();
        }
        model_->edit(tr("Change GPU memory or bandwidth"), [&gpu](Scenario& s) { s.deployment->gpu = gpu; });
    }
    sync();
}

void DeploymentView::sync() {
    syncing_ = true;
    const Scenario& s = model_->scenario();
    // The deployment came or went (ticked, an undo, a file opened): what was typed for the one before is not this
    // one's.
    if (s.deployment.has_value() != had_deployment_) dropTypedText();
    had_deployment_ = s.deployment.has_value();
    box_->setChecked(s.deployment.has_value());
    // Before the box is ticked the form shows the deployment ticking it starts (greyed out, as the box disables
    // it): its GPU, engine, fraction and weights, never a widget's own default (0.01, fp32).
    const Deployment shown =
        s.deployment ? *s.deployment : starting_deployment(model_->catalog(), s, model_->modelWeights());
    // A field shows its scenario value, or text of the user's own, refused or still being typed (field_text.h).
    {
        const Deployment& d = shown;
        const int gi = gpu_->findData(q(d.gpu.id));
        gpu_->setCurrentIndex(gi >= 0 ? gi : gpu_->findData(kCustom));
        count_->setText(tr("%1 = TP %2 × PP %3").arg(d.gpu_count).arg(s.parallel.tp).arg(s.parallel.pp));
        showText(memory_, q(format_bytes(d.gpu.memory_bytes, model_->units())));
        showText(bandwidth_, q(format_bytes(d.gpu.bandwidth_bytes_per_s, UnitSystem::decimal)) + "/s");
        engine_->setCurrentIndex(engine_->findData(static_cast<int>(d.engine)));
        // SGLang's own default for this GPU and layout until one is given (as kvscope-cli fit shows it). Set only
        // when it changed: setting a spin box rewrites text typed in it and not yet accepted.
        // SGLang's own below 0 (refused, the reason beside) is shown as it is, as kvscope-cli says it.
        const double fraction = effective_fraction(as_drafted(d, s.arch), s.parallel);
        fraction_->setMinimum(std::min(0.01, fraction));
        if (fraction_->textFromValue(fraction) != fraction_->textFromValue(fraction_->value()))
            fraction_->setValue(fraction);
        // Unticked, the box has disabled every field; enabling one here would let it take text that goes nowhere.
        const bool on = s.deployment.has_value();
        fraction_->setEnabled(on && engine_takes_fraction(d.engine));
        // "exact (the files)" first when the deployment (or else the model's files) has the weights' exact bytes,
        // "as quantized (…)" when it has a checkpoint's scheme; the item is touched only when it changes.
        const ModelWeights files = model_->modelWeights();
        const bool own = d.weights_bytes_exact > 0 || d.weight_quant.has_value();
        const bool exact = own ? d.weights_bytes_exact > 0 : files.exact_bytes > 0;
        const std::optional<WeightQuant> quant = own ? d.weight_quant : files.quant;
        QString label, tip;
        if (exact) {
            label = tr("exact (the files)");
            tip = q(own ? d.weights_source : files.source);
        } else if (quant) {
            label = tr("as quantized (%1)").arg(q(quant->method));
            tip = q(weight_quant_label(*quant));
        }
        const int item = weight_dtype_->findData(kExactWeights);
        if (item >= 0 && (label.isEmpty() || weight_dtype_->itemText(item) != label)) weight_dtype_->removeItem(item);
        if (!label.isEmpty() && weight_dtype_->findData(kExactWeights) < 0)
            weight_dtype_->insertItem(0, label, kExactWeights);
        if (!label.isEmpty()) weight_dtype_->setItemData(0, tip, Qt::ToolTipRole);
        weight_dtype_->setCurrentIndex(weight_dtype_->findData(own ? kExactWeights
                                                               : d.gguf_mix
                                                                   ? kGgufMixItems + static_cast<int>(*d.gguf_mix)
                                                                   : static_cast<int>(d.weight_dtype)));
        rule_->setText(q(std::string(budget_rule(d.engine))));
        syncEngineSettings(s, d, on);
        // The model's own multi-token-prediction layers as a speculative draft (--mtp), offered when it has them.
        const std::uint64_t mtp_layers = s.arch.mtp_layers;
        form_->setRowVisible(mtp_, mtp_layers > 0 || d.mtp);
        mtp_->setText(
            mtp_layers > 0
                ? tr("Speculative decoding with its %1").arg(q(format_count_of(mtp_layers, "MTP layer", "MTP layers")))
                : tr("Speculative decoding with its MTP layers (this model has none)"));
        mtp_->setChecked(d.mtp);
        // The draft: a catalog model by its id, any other (a file) listed by its name before "From a file…".
        const QString draft_id = d.draft ? q(d.draft->name) : kNoDraft;
        // A draft refused (a file that could not be read) stands until the scenario's own draft changes (an undo,
        // a file opened), as typed text does (field_text.h), or Esc takes it back.
        if (draft_->property("kvscope_shown_draft").toString() != draft_id) typed_.remove(draft_);
        draft_->setProperty("kvscope_shown_draft", draft_id);
        for (int i = draft_->count() - 1; i >= 0; --i)
            if (draft_->itemData(i, Qt::UserRole + 1).toBool() && draft_->itemData(i).toString() != draft_id)
                draft_->removeItem(i);
        if (draft_->findData(draft_id) < 0) {
            draft_->insertItem(draft_->count() - 1, q(model_name_from_path(d.draft->name)), draft_id);
            draft_->setItemData(draft_->count() - 2, true, Qt::UserRole + 1);  // a file's item, removed with it
            draft_->setItemData(draft_->count() - 2, draft_id, Qt::ToolTipRole);
        }
        draft_->setCurrentIndex(draft_->findData(draft_id));
        form_->setRowVisible(draft_method_, d.draft.has_value());
        if (d.draft) draft_method_->setCurrentIndex(draft_method_->findData(static_cast<int>(d.draft->method)));
        vllm_graphs_->setChecked(!d.vllm.enforce_eager);
        syncLlamaCpp(s, d);
        // TensorRT-LLM's tokens per step; its profiling run's activations follow it unless the reserve is fixed.
        form_->setRowVisible(trtllm_tokens_, engine_has_setting(d.engine, EngineSetting::max_num_tokens));
        trtllm_tokens_->setPlaceholderText(tr("TensorRT-LLM's default: %1").arg(q(format_count(kTrtllmMaxNumTokens))));
        showText(trtllm_tokens_,
                 d.tensorrt_llm.max_num_tokens > 0 ? q(format_count(d.tensorrt_llm.max_num_tokens)) : QString());
        trtllm_tokens_->setEnabled(on && !d.fixed_reserve);
        flash_attn_->setEnabled(on && !d.fixed_reserve);  // the micro-batch still sets what sliding layers keep
        Deployment with_graphs = d;
        with_graphs.vllm.enforce_eager = false;
        vllm_graphs_->setEnabled(on && !d.fixed_reserve && vllm_subtracts_cuda_graphs(with_graphs));
        // A field whose row this engine hides holds nothing of the user's: what was typed there was for another
        // engine's setting (and its focus-out came during this sync, too late to be entered); when an undo brings
        // the row back, the field shows the scenario's value.
        for (QLineEdit* field : textFields())
            if (field != memory_ && field != bandwidth_ &&
                !form_->isRowVisible(field == gpu_layers_ ? gpu_layers_row_ : field) &&
                (field->isModified() || typed_.contains(field))) {
                typed_.remove(field);
                forget_user_text(field);
            }
    }
    const QStringList problems = marks_.apply(model_->errors(), typed_);
    errors_->setText(problems.join('\n'));
    errors_->setVisible(!problems.isEmpty());
    syncing_ = false;
    refreshResults();
}

// llama.cpp's rows (and Ollama's, which runs it): the micro-batch, the GPU layers and their slider, and the host of a
// split; each placeholder shows what the fit uses when the field is empty.
void DeploymentView::showText(QLineEdit* field, const QString& text) {
    // The scenario's text, unless the field holds the user's (typed, not yet accepted or refused).
    if (show_scenario_text(field, text, typed_.contains(field))) typed_.remove(field);
}

// sync's rows of vLLM's startup settings and the two batch limits SGLang reads too (engine.h engine_has_setting);
// the placeholders show the defaults the fit and the Traffic tab use.
void DeploymentView::syncEngineSettings(const Scenario& s, const Deployment& d, bool on) {
    const bool sglang = d.engine == Engine::sglang;
    for (auto [field, setting] : {std::pair<QWidget*, EngineSetting>{vllm_version_, EngineSetting::vllm_version},
                                  {vllm_tokens_, EngineSetting::max_num_batched_tokens},
                                  {vllm_seqs_, EngineSetting::max_num_seqs},
                                  {vllm_graphs_, EngineSetting::enforce_eager}})
        form_->setRowVisible(field, engine_has_setting(d.engine, setting));
    // A later version than the rules (from a file or --vllm-version) is listed as it is, with the rules it gets.
    const QVariant version = vllm_version_key(d.vllm.version_minor, d.vllm.version_patch);
    if (vllm_version_->findData(version) < 0) {
        const QString text = q(vllm_version_text(d));
        vllm_version_->addItem(
            d.vllm.version_minor > kNewestVllmRules ? tr("%1 (0.%2's rules)").arg(text).arg(kNewestVllmRules) : text,
            version);
    }
    vllm_version_->setCurrentIndex(vllm_version_->findData(version));
    // --reserve fixed the reserve: vLLM's settings then change nothing, and the rule says why. SGLang reads its
    // batch limits in its own fraction and scheduler, whatever the reserve.
    for (QWidget* field : std::initializer_list<QWidget*>{vllm_version_, vllm_tokens_, vllm_seqs_})
        field->setEnabled(on && (sglang || !d.fixed_reserve));
    if (d.fixed_reserve && (d.engine == Engine::vllm || d.engine == Engine::tensorrt_llm))
        rule_->setText(rule_->text() +
                       tr(" — the reserve is fixed (--reserve), so %1's settings do not change it")
                           .arg(d.engine == Engine::vllm ? QStringLiteral("vLLM") : QStringLiteral("TensorRT-LLM")));
    // Each default as the fit would take it with that field left empty.
    Deployment without_tokens = d, without_seqs = d;
    without_tokens.vllm.max_num_batched_tokens = 0;
    without_seqs.vllm.max_num_seqs = 0;
    const QString engine_name = batchLimitsEngine(d.engine);
    const QString tokens_default =
        q(format_count(sglang ? sglang_default_fraction(without_tokens, s.parallel).chunked_prefill_size
                              : vllm_batch(s.workload, without_tokens).max_num_batched_tokens));
    QString seqs_default;
    if (!sglang) {
        seqs_default = q(format_count(vllm_batch(s.workload, without_seqs).max_num_seqs));
    } else {
        // max_running_requests follows SGLang's token pool, which needs a KV budget.
        Scenario plain = s;
        plain.deployment = without_seqs;
        const auto setup = serving_setup(plain, true, 0);
        seqs_default = setup ? q(format_count(setup->settings.max_num_seqs)) : tr("from its token pool");
    }
    for (auto [field, value, fallback] : {std::tuple{vllm_tokens_, d.vllm.max_num_batched_tokens, tokens_default},
                                          std::tuple{vllm_seqs_, d.vllm.max_num_seqs, seqs_default}}) {
        field->setPlaceholderText(tr("%1's default: %2").arg(engine_name, fallback));
        showText(field, value > 0 ? q(format_count(value)) : QString());
    }
    marks_.setTooltip(
        vllm_tokens_,
        sglang ? tr("chunked_prefill_size: the most tokens of prompts SGLang prefills in one step; it sizes "
                    "SGLang's own memory fraction (unless one is given) and the Traffic tab's prefills. Empty: "
                    "SGLang's default for this GPU (--max-num-batched-tokens).")
               : vllmTokensTip());
    marks_.setTooltip(vllm_seqs_,
                      sglang ? tr("max_running_requests: the most requests SGLang runs at once, in the Traffic "
                                  "tab's simulation; its fit does not read it. Empty: SGLang's default from its "
                                  "token pool (--max-num-seqs).")
                             : vllmSeqsTip());
}

void DeploymentView::syncLlamaCpp(const Scenario& s, const Deployment& d) {
    for (QWidget* field : std::initializer_list<QWidget*>{ubatch_, flash_attn_, gpu_layers_row_})
        form_->setRowVisible(field, runs_llama_cpp(d.engine));
    // Ollama chooses the batch by the context (and -ngl by llama.cpp's --fit): the fit says which it took.
    const bool ollama = d.engine == Engine::ollama;
    const auto& fit_now = model_->results().fit;
    ubatch_->setPlaceholderText(ollama ? (fit_now && fit_now->ubatch > 0
                                              ? tr("Ollama's choice: %1").arg(q(format_count(fit_now->ubatch)))
                                              : tr("Ollama's choice"))
                                       : tr("llama.cpp's default: %1").arg(kLlamaCppUbatch));
    showText(ubatch_, d.llama_cpp.ubatch > 0 ? q(format_count(d.llama_cpp.ubatch)) : QString());
    flash_attn_->setChecked(!d.llama_cpp.flash_attn_off);
    gpu_layers_->setPlaceholderText(ollama ? tr("auto (Ollama's default)") : tr("all (llama.cpp's default)"));
    showText(gpu_layers_, d.llama_cpp.gpu_layers_auto ? QStringLiteral("auto")
                          : d.llama_cpp.gpu_layers    ? q(format_count(*d.llama_cpp.gpu_layers))
                                                      : QString());
    {
        const QSignalBlocker quiet(layers_slider_);
        const auto total = static_cast<int>(std::min<std::uint64_t>(llama_cpp_total_layers(s.arch), 1u << 20));
        layers_slider_->setRange(0, total);
        // auto: where --fit put them, once the results have it.
        const auto& fit = fit_now;
        const bool automatic = d.llama_cpp.gpu_layers_auto || (ollama && !d.llama_cpp.gpu_layers);
        const std::uint64_t chosen = automatic && fit && fit->offload
                                         ? fit->offload->gpu_layers
                                         : d.llama_cpp.gpu_layers.value_or(static_cast<std::uint64_t>(total));
        layers_slider_->setValue(static_cast<int>(std::min<std::uint64_t>(chosen, static_cast<std::uint64_t>(total))));
    }
    // The host of a split: on one GPU (the split's), its experts' row for a model with experts.
    const bool splits = runs_llama_cpp(d.engine) && d.gpu_count == 1;
    for (QWidget* field : std::initializer_list<QWidget*>{host_memory_, host_platform_, cache_in_ram_})
        form_->setRowVisible(field, splits);
    // A count set for a model without experts stays in sight, so that its error can be mended there.
    form_->setRowVisible(
        cpu_moe_, splits && ((s.arch.moe.has_value() && s.arch.moe->experts > 0) || d.llama_cpp.cpu_moe_layers > 0));
    showText(host_memory_, d.host.memory_bytes > 0 ? q(format_bytes(d.host.memory_bytes, model_->units())) : QString());
    showText(cpu_moe_, d.llama_cpp.cpu_moe_layers > 0 ? q(format_count(d.llama_cpp.cpu_moe_layers)) : QString());
    cache_in_ram_->setChecked(d.llama_cpp.no_kv_offload);
    {
        // A bandwidth given (--host-bandwidth) or measured is an item of its own, first, while it is the
        // scenario's.
        if (host_platform_->itemData(0).toString().isEmpty()) host_platform_->removeItem(0);
        if (d.host.bandwidth_bytes_per_s > 0)
            host_platform_->insertItem(
                0, tr("%1 (given or measured)").arg(q(format_bandwidth(d.host.bandwidth_bytes_per_s))), QString());
        const std::string id = d.host.id.empty() ? std::string(kDefaultHostPlatform) : d.host.id;
        host_platform_->setCurrentIndex(d.host.bandwidth_bytes_per_s > 0 ? 0 : host_platform_->findData(q(id)));
    }
}

void DeploymentView::refreshResults() {
    const Results& r = model_->results();
    const UnitSystem units = model_->units();
    if (!model_->scenario().deployment) {
        verdict_->setText(tr("Tick “Check a deployment” to see whether this fits on your GPUs."));
        verdict_->setStyleSheet({});
        bars_->setData({}, 0, 0, 1, units);
        host_bar_->hide();
        figures_->clear();
        return;
    }
    if (!model_->hasResults() || !r.fit || !r.decode) {
        verdict_->setText(tr("Fix the marked inputs to see the fit."));
        return;
    }
    const FitReport& f = *r.fit;
    const DecodeEstimate& d = *r.decode;
    const std::int64_t headroom = f.headroom_bytes_per_gpu;
    if (f.kv_budget_bytes_per_gpu < 0) {
        // The shortfall as fit and the report give it (cache included), and why there is no budget at all.
        verdict_->setText(tr("Does not fit: short by %1 per GPU — the weights and reserves alone exceed the memory "
                             "the engine may use by %2")
                              .arg(both_units(static_cast<std::uint64_t>(-headroom), units),
                                   q(format_bytes(static_cast<std::uint64_t>(-f.kv_budget_bytes_per_gpu), units))));
    } else if (f.fits) {
        verdict_->setText(
            tr("Fits, with %1 to spare per GPU").arg(both_units(static_cast<std::uint64_t>(headroom), units)));
    } else if (f.offload && f.offload->host_short_bytes() > 0 && headroom >= 0) {
        // A split whose GPU part fits: it is the host's RAM that does not hold the rest.
        verdict_->setText(tr("Does not fit: the host's RAM is short by %1 (the GPU has %2 to spare)")
                              .arg(both_units(f.offload->host_short_bytes(), units),
                                   q(format_bytes(static_cast<std::uint64_t>(headroom), units))));
    } else if (f.headroom_from_startup) {
        verdict_->setText((f.short_at_startup ? tr("Does not fit: short by %1 per GPU at vLLM's start check (see the "
                                                   "warning); decoding alone would fit")
                                              : tr("Does not fit: short by %1 per GPU at vLLM's start check (see the "
                                                   "warning)"))
                              .arg(both_units(static_cast<std::uint64_t>(-headroom), units)));
    } else {
        verdict_->setText(
            tr("Does not fit: short by %1 per GPU").arg(both_units(static_cast<std::uint64_t>(-headroom), units)));
    }
    // The last valid inputs' verdict, while the inputs need attention, is no answer for these: said so above it
    // (stale_), and never in the green of a fit.
    if (!model_->resultsAreCurrent()) verdict_->setText(tr("Last valid inputs: %1").arg(verdict_->text()));
    verdict_->setStyleSheet(!model_->resultsAreCurrent() ? QString()
                            : f.fits                     ? QStringLiteral("color: #27ae60;")
                                                         : QStringLiteral("color: #d63031;"));
    verdict_->setForegroundRole(model_->resultsAreCurrent() ? QPalette::WindowText : QPalette::PlaceholderText);

    bars_->setFit(f, units);
    if (f.offload) host_bar_->setHost(*f.offload, units);
    host_bar_->setVisible(f.offload.has_value());

    const Scenario& s = r.scenario;
    QStringList rows;
    rows << tr("Max concurrent sequences at %1 tokens: <b>%2</b>")
                .arg(q(format_tokens(s.workload.context_tokens)), q(format_count(f.max_batch)));
    if (f.max_context_unbounded) {
        // The calculator's reason, with the figure in bold as the other rows have it.
        rows << tr("Max context: <b>no limit</b> — %1").arg(q(f.unbounded_reason).toHtmlEscaped());
    } else
        rows << tr("Max context at %1: <b>%2 tokens</b>%3")
                    .arg(q(format_count_of(s.workload.batch, "sequence", "sequences")), q(format_count(f.max_context)))
                    .arg(f.max_context_limited_by_model ? tr(" (the model's limit)") : QString());
    // A deployment that does not fit has no speed of its own: the floor is said as what it would be if it fitted.
    const QString floor = q(decode_floor_text(d, f.fits)).toHtmlEscaped();
    rows << (f.fits ? tr("Decode estimate: <b>%1 tokens/s</b> per sequence (the memory-bandwidth floor: %2)")
                          .arg(d.tokens_per_s_per_sequence, 0, 'f', 1)
                          .arg(floor)
                    : tr("Decode estimate: <b>none</b>, it does not fit (the memory-bandwidth floor %1)").arg(floor));
    // The same step measured on this GPU (probe --step or the Probe tab), in the words kvscope-cli fit uses.
    if (r.measured_step)
        rows << tr("Decode measured: %1").arg(q(measured_step_text(*r.measured_step, d)).toHtmlEscaped());
    rows << tr("Weights %1 per GPU (%2 parameters%3) · KV budget %4 · KV need %5 per GPU")
                .arg(q(format_bytes(f.weights_bytes_per_gpu, units)), q(format_si(static_cast<double>(f.parameters))),
                     f.weights_exact ? tr("; %1").arg(q(f.weights_source).toHtmlEscaped())
                     : r.scenario.deployment && r.scenario.deployment->gguf_mix
                         ? tr("; estimated %1").arg(q(weights_text(*r.scenario.deployment)).toHtmlEscaped())
                     : !f.weights_quant.empty() ? tr("; estimated for %1").arg(q(f.weights_quant).toHtmlEscaped())
                     : f.parameters_estimated   ? tr(", estimated")
                                                : QString(),
                     q(kv_budget_text(f, units)),
                     f.state_bytes_per_gpu == 0 && f.engine_pages
                         ? tr("%1 in vLLM's hybrid layout (plain sum %2)")
                               .arg(q(format_bytes(f.memory_bytes_per_gpu_needed, units)),
                                    q(format_bytes(f.kv_bytes_per_gpu, units)))
                     : f.state_bytes_per_gpu == 0 ? q(format_bytes(f.kv_bytes_per_gpu, units))
                                                  : tr("%1 (%2 KV cache + %3 recurrent state)")
                                                        .arg(q(format_bytes(f.memory_bytes_per_gpu_needed, units)),
                                                             q(format_bytes(f.kv_bytes_per_gpu, units)),
                                                             q(format_bytes(f.state_bytes_per_gpu, units))));
    // A separate draft model's share of both, as kvscope-cli fit's "draft:" line gives it.
    if (const auto& dm = r.scenario.deployment ? r.scenario.deployment->draft : std::nullopt)
        rows << tr("Draft %1 (%2): %3 parameters, %4 of the weights; its KV %5 bytes a token, %6 per GPU of the need")
                    .arg(q(dm->name).toHtmlEscaped(), q(std::string(to_string(dm->method))),
                         q(format_si(static_cast<double>(f.draft_parameters))),
                         q(format_bytes(f.draft_weights_bytes, units)), q(format_count(f.draft_kv_bytes_per_token)),
                         q(format_bytes(f.draft_kv_bytes_per_gpu, units)));
    // llama.cpp's split between the GPU and the host, in the words kvscope-cli fit uses.
    if (f.offload)
        rows << tr("Split: <b>%1</b>").arg(q(offload_text(*f.offload)).toHtmlEscaped())
             << tr("Host: %1").arg(q(offload_host_text(*f.offload)).toHtmlEscaped());
    // What the engine keeps back, part by part, in the words kvscope-cli fit uses.
    rows << (f.reserve_estimated ? tr("Reserve %1 per GPU (estimate): %2") : tr("Reserve %1 per GPU: %2"))
                .arg(q(format_bytes(f.reserve_bytes_per_gpu, units)), q(reserve_text(f, units)).toHtmlEscaped());
    for (const auto& item : f.reserve_items)
        if (item.kind == ReserveKind::profile_peak) rows << (tr("Profile peak: ") + q(item.how)).toHtmlEscaped();
    // The cache's warnings (a context past the model's max positions, …) in the Overview's colour, then the notes.
    for (const auto& w : f.warnings)
        rows << QStringLiteral("<span style=\"color: #e67e22\">%1</span>").arg(q(w).toHtmlEscaped());
    for (const auto& n : f.notes) rows << q(n).toHtmlEscaped();
    figures_->setText(rows.join("<br>"));
}

}  // namespace kvscope::ui
