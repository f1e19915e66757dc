#include "kvscope/ui/inputs_panel.h"

#include <QAbstractItemView>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QFormLayout>
#include <QFrame>
#include <QIntValidator>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cstring>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/variants.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/field_text.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

// A KV-heads edit merges with the next one only when typed; each preset stays its own step.
enum MergeIds { kContextDrag = 1 };

// Every name a catalog model answers to (id, repo id, name, aliases), for the picker's search.
constexpr int kSearchRole = Qt::UserRole + 1;
constexpr const char* kLocalPrefix = "local:";  // an item's data: a model on this machine, by its place in local_

// Searches the picker's items by every name they answer to, and writes the item's display text,
// not the search text, into the box.
class ModelCompleter : public QCompleter {
public:
    using QCompleter::QCompleter;
    QString pathFromIndex(const QModelIndex& index) const override { return index.data(Qt::DisplayRole).toString(); }
};

}  // namespace

InputsPanel::InputsPanel(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      picker_(new QComboBox),
      import_(new QToolButton),
      source_(new QLabel),
      layers_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::by_one)),
      query_heads_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::by_one)),
      kv_heads_(new QComboBox),
      head_dim_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::doubling)),
      head_dim_hint_(new QLabel),
      hidden_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::by_one)),
      kv_dtype_(new QComboBox),
      context_(new ContextInput),
      batch_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::by_one)),
      block_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::doubling)),
      tp_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::doubling)),
      pp_(new BigSpinBox(BigSpinBox::Kind::count, BigSpinBox::Step::by_one)),
      full_window_(new QCheckBox(tr("Engine keeps the full context on sliding and chunked layers"))),
      errors_(new QLabel),
      layer_mix_(new QLabel),
      layer_mix_row_(new QWidget),
      mix_edits_(new QWidget),
      attention_every_(new QSpinBox),
      attention_every_label_(new QLabel(tr("attention every"))),
      // Read as the context is (8k, 1,5k, 4,096) and shown as the CLI prints it: a QSpinBox followed the desktop's
      // locale ("4.096") and dropped what it could not read ("1,5k" became 15).
      window_(new BigSpinBox(BigSpinBox::Kind::tokens, BigSpinBox::Step::doubling)),
      window_label_(new QLabel),
      spotlight_(new QFrame(this)) {
    // The Learn tab's pointer to an input: a frame in the highlight colour over the field.
    spotlight_->setObjectName("fieldSpotlight");
    spotlight_->setAttribute(Qt::WA_TransparentForMouseEvents);
    spotlight_->setStyleSheet(
        "#fieldSpotlight { border: 2px solid palette(highlight); border-radius: 4px; "
        "background: transparent; }");
    spotlight_->hide();
    // Preset picker: type any part of a name or id to filter.
    picker_->setEditable(true);
    // Long model names must not make the whole panel wide.
    picker_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    picker_->setMinimumContentsLength(22);
    picker_->setInsertPolicy(QComboBox::NoInsert);
    picker_->lineEdit()->setPlaceholderText(tr("Search models…"));
    for (const CatalogModel& m : model_->catalog().models()) {
        const QString shown = q(m.name) + "  ·  " + q(attention_label(m.model.arch)) + ", " +
                              QString::number(m.model.arch.layers) + tr(" layers");
        picker_->addItem(shown, q(m.id));
        const int row = picker_->count() - 1;
        picker_->setItemData(row, q(m.hf_repo.empty() ? m.source : m.hf_repo), Qt::ToolTipRole);
        QStringList names{shown};
        for (const std::string& n : model_names(m)) names << q(n);
        picker_->setItemData(row, names.join('\n'), kSearchRole);
    }
    // "On this machine": the Hugging Face cache, Ollama and LM Studio (folder listings only, never weights), listed
    // again whenever the picker is entered, so that a model downloaded meanwhile is there without a restart.
    catalog_items_ = picker_->count();
    refreshLocalModels();
    auto* completer = new ModelCompleter(picker_->model(), picker_);
    completer->setCompletionRole(kSearchRole);
    completer->setFilterMode(Qt::MatchContains);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    completer->setCompletionMode(QCompleter::PopupCompletion);
    picker_->setCompleter(completer);
    picker_->setAccessibleName(tr("Model"));
    picker_->setToolTip(
        tr("A published model from the catalog; type any part of its name, its id (llama-3-70b) or its "
           "Hugging Face id (meta-llama/Meta-Llama-3-70B) and press Enter."));
    connect(picker_, &QComboBox::activated, this, [this](int index) {
        const QString choice = picker_->itemData(index).toString();
        if (choice.startsWith(QString::fromLatin1(kLocalPrefix)))
            loadLocalModel(choice.mid(static_cast<int>(std::strlen(kLocalPrefix))).toULongLong());
        else if (!choice.isEmpty())
            model_->loadCatalogModel(choice);
    });
    // Enter loads the model the text names; text that names none is said so and put back.
    connect(picker_->lineEdit(), &QLineEdit::returnPressed, this, &InputsPanel::pickTypedModel);
    // Leaving the box with unfinished text shows the model in use again (editingFinished is not
    // emitted while the completion list is open, so the focus change itself is watched).
    focus_watch_ = connect(qApp, &QApplication::focusChanged, this, [this](QWidget* old, QWidget* now) {
        const auto inside_picker = [this](QWidget* w) {
            return w && (w == picker_ || picker_->isAncestorOf(w) || w == picker_->completer()->popup());
        };
        if (inside_picker(old) && !inside_picker(now) && !syncing_) showModelInPicker();
        if (!inside_picker(old) && inside_picker(now) && !syncing_) refreshLocalModels();
    });
    import_->setToolButtonStyle(Qt::ToolButtonTextOnly);
    source_->setWordWrap(true);
    source_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    source_->setForegroundRole(QPalette::PlaceholderText);

    kv_heads_->setEditable(true);
    kv_heads_->setInsertPolicy(QComboBox::NoInsert);
    // No completion: "3" typed must stay 3, never become the list's 32 on Enter.
    kv_heads_->setCompleter(nullptr);
    kv_heads_->lineEdit()->setValidator(new QIntValidator(0, 1 << 30, kv_heads_));
    head_dim_hint_->setForegroundRole(QPalette::PlaceholderText);
    for (const KvDtypeInfo& i : all_kv_dtypes()) kv_dtype_->addItem(q(std::string(i.id)), static_cast<int>(i.dtype));
    // The calculator's own bounds, so a field never accepts what the calculator then refuses.
    layers_->setRange(1, kMaxLayers);
    query_heads_->setRange(1, kMaxHeads);
    head_dim_->setRange(1, 1u << 20);
    hidden_->setRange(1, 1u << 30);
    batch_->setRange(1, 1u << 24);
    block_->setRange(1, 1u << 16);
    tp_->setRange(1, 4096);
    pp_->setRange(1, 4096);
    errors_->setWordWrap(true);
    errors_->setStyleSheet("color: #d63031;");
    errors_->setAccessibleName(tr("Input problems"));

    const std::initializer_list<std::pair<QWidget*, const char*>> names{{layers_, "Layers"},
                                                                        {query_heads_, "Query heads"},
                                                                        {kv_heads_, "KV heads"},
                                                                        {head_dim_, "Head dim"},
                                                                        {hidden_, "Model dim"},
                                                                        {kv_dtype_, "KV dtype"},
                                                                        {context_->spinBox(), "Context"},
                                                                        {batch_, "Sequences"},
                                                                        {block_, "Block size"},
                                                                        {tp_, "TP"},
                                                                        {pp_, "PP"}};
    for (const auto& [w, name] : names) w->setAccessibleName(tr(name));

    marks_.add(layers_, {Field::layers, Field::layer_specs, Field::first_k_dense_replace},
               tr("Transformer layers; each stores its own keys and values."));
    marks_.add(query_heads_, {Field::query_heads},
               tr("Attention heads that ask queries; KV heads are shared among them."));
    marks_.add(kv_heads_, {Field::kv_heads},
               tr("Key/value heads stored per layer: equal to query heads is MHA, 1 is MQA, in between is GQA. "
                  "The list offers the divisors of the query heads."));
    marks_.add(head_dim_, {Field::head_dim, Field::head_dim_v, Field::qk_nope_head_dim},
               tr("Values per head in each key and value vector."));
    // The hidden size feeds the head dim and the parameter estimate; nothing rejects it on its own.
    marks_.add(hidden_, {},
               tr("Model (embedding) dimension; head dim follows it ÷ query heads until you set head dim."));
    marks_.add(kv_dtype_, {Field::kv_dtype},
               tr("Number format of the cached keys and values (fp8 halves fp16, q4_0 is about a quarter)."));
    marks_.add(context_->spinBox(), {Field::context_tokens, Field::max_tokens},
               tr("Tokens per sequence, prompt plus output; type 8k, 128k or 1M, or drag the slider."));
    marks_.add(batch_, {Field::batch}, tr("Sequences decoded at the same time, each with its own cache."));
    marks_.add(
        block_, {Field::block_size},
        tr("Paged-attention block in tokens; each sequence's cache is rounded up to whole blocks (1 = contiguous)."));
    marks_.add(
        tp_, {Field::tp},
        tr("Tensor-parallel GPUs: KV heads are split across them (and copied when there are fewer heads than GPUs)."));
    marks_.add(pp_, {Field::pp}, tr("Pipeline-parallel GPUs: layers are split across them."));
    marks_.add(window_, {Field::sliding_window, Field::attention_chunk_size},
               tr("Tokens each sliding-window layer keeps, or each chunked-attention layer attends to (the engine "
                  "keeps one chunk); type 4096, 4k or 1,5k."));
    marks_.add(full_window_, {Field::full_window},
               tr("Some engines store every token on sliding-window and chunked layers too; tick to count the cache "
                  "that way."));
    context_->slider()->setToolTip(context_->spinBox()->toolTip());

    auto* head_dim_row = new QWidget;
    auto* hd = new QHBoxLayout(head_dim_row);
    hd->setContentsMargins(0, 0, 0, 0);
    hd->addWidget(head_dim_, 1);
    hd->addWidget(head_dim_hint_);

    // The layer mix: what the layers keep, and the two edits a learner asks for (how often attention
    // comes in a hybrid model; the window or chunk of the local layers).
    layer_mix_->setWordWrap(true);
    layer_mix_->setForegroundRole(QPalette::PlaceholderText);
    attention_every_->setRange(1, static_cast<int>(kMaxLayers));
    attention_every_->setSuffix(tr(" layers"));
    attention_every_->setAccessibleName(tr("Attention every N layers"));
    attention_every_->setToolTip(
        tr("One layer in N attends (and keeps a KV cache); the others keep only their fixed recurrent state"));
    window_->setRange(1, ~0ull);
    auto* mix_edits = new QHBoxLayout(mix_edits_);
    mix_edits->setContentsMargins(0, 0, 0, 0);
    mix_edits->addWidget(attention_every_label_);
    mix_edits->addWidget(attention_every_, 1);
    mix_edits->addWidget(window_label_);
    mix_edits->addWidget(window_, 1);
    auto* mix_column = new QVBoxLayout(layer_mix_row_);
    mix_column->setContentsMargins(0, 0, 0, 0);
    mix_column->addWidget(layer_mix_);
    mix_column->addWidget(mix_edits_);

    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->addRow(tr("&Layers"), layers_);
    form->addRow(QString(), layer_mix_row_);
    form->addRow(tr("&Query heads"), query_heads_);
    form->addRow(tr("&KV heads"), kv_heads_);
    form->addRow(tr("&Head dim"), head_dim_row);
    form->addRow(tr("&Model dim"), hidden_);
    form->addRow(tr("KV &dtype"), kv_dtype_);
    form->addRow(tr("&Context"), context_);
    form->addRow(tr("&Sequences"), batch_);
    form->addRow(tr("&Block size"), block_);
    auto* parallel = new QWidget;
    auto* pl = new QHBoxLayout(parallel);
    pl->setContentsMargins(0, 0, 0, 0);
    pl->addWidget(new QLabel(tr("TP")));
    pl->addWidget(tp_, 1);
    pl->addWidget(new QLabel(tr("PP")));
    pl->addWidget(pp_, 1);
    form->addRow(tr("Parallel"), parallel);
    form->addRow(full_window_);

    auto* picker_row = new QHBoxLayout;
    picker_row->addWidget(picker_, 1);
    picker_row->addWidget(import_);
    auto* layout = new QVBoxLayout(this);
    auto* title = new QLabel(tr("<b>Model</b>"));
    layout->addWidget(title);
    layout->addLayout(picker_row);
    layout->addWidget(source_);
    layout->addSpacing(6);
    layout->addWidget(new QLabel(tr("<b>Shape and workload</b>")));
    layout->addLayout(form);
    layout->addWidget(errors_);
    layout->addStretch(1);

    auto number_edit = [this](BigSpinBox* box, void (ScenarioModel::*setter)(std::uint64_t)) {
        connect(box, &BigSpinBox::valueEdited, this, [this, setter](std::uint64_t v) { (model_->*setter)(v); });
        connect(box, &BigSpinBox::problemChanged, this, &InputsPanel::sync);
    };
    number_edit(layers_, &ScenarioModel::setLayers);
    number_edit(query_heads_, &ScenarioModel::setQueryHeads);
    number_edit(head_dim_, &ScenarioModel::setHeadDim);
    number_edit(hidden_, &ScenarioModel::setHiddenSize);
    auto workload_edit = [this](BigSpinBox* box, const QString& what, auto apply) {
        connect(box, &BigSpinBox::valueEdited, this,
                [this, what, apply](std::uint64_t v) { model_->edit(what, [&](Scenario& s) { apply(s, v); }); });
        connect(box, &BigSpinBox::problemChanged, this, &InputsPanel::sync);
    };
    workload_edit(batch_, tr("Change sequences"), [](Scenario& s, std::uint64_t v) { s.workload.batch = v; });
    workload_edit(block_, tr("Change block size"), [](Scenario& s, std::uint64_t v) { s.workload.block_size = v; });
    workload_edit(tp_, tr("Change tensor parallel"), [](Scenario& s, std::uint64_t v) {
        s.parallel.tp = v;
        if (s.deployment) s.deployment->gpu_count = s.parallel.gpus();
    });
    workload_edit(pp_, tr("Change pipeline parallel"), [](Scenario& s, std::uint64_t v) {
        s.parallel.pp = v;
        if (s.deployment) s.deployment->gpu_count = s.parallel.gpus();
    });
    connect(context_, &ContextInput::valueEdited, this, [this](std::uint64_t t, bool dragging) {
        model_->edit(
            tr("Change context"), [t](Scenario& s) { s.workload.context_tokens = t; }, dragging ? kContextDrag : -1);
    });
    connect(context_->spinBox(), &BigSpinBox::problemChanged, this, &InputsPanel::sync);
    connect(kv_heads_, &QComboBox::activated, this, [this] { commitKvHeads(); });
    // Esc takes back what was typed in KV heads, as in every other field.
    const auto take_back_kv_heads = [this] {
        if (kv_heads_problem_.isEmpty() && !kv_heads_->lineEdit()->isModified()) return false;
        kv_heads_problem_.clear();
        forget_user_text(kv_heads_->lineEdit());
        sync();
        return true;
    };
    take_back_on_escape(kv_heads_, take_back_kv_heads);
    take_back_on_escape(kv_heads_->lineEdit(), take_back_kv_heads);
    connect(kv_heads_->lineEdit(), &QLineEdit::editingFinished, this, &InputsPanel::commitKvHeads);
    connect(kv_dtype_, &QComboBox::activated, this, [this](int index) {
        const auto dtype = static_cast<KvDtype>(kv_dtype_->itemData(index).toInt());
        model_->edit(tr("Change KV dtype"), [dtype](Scenario& s) { s.kv_dtype = dtype; });
    });
    // Without keyboard tracking a value counts once typed in full (Enter, leaving the field) or stepped.
    attention_every_->setKeyboardTracking(false);
    connect(attention_every_, &QSpinBox::valueChanged, this, [this] {
        const auto n = static_cast<std::uint64_t>(attention_every_->value());
        if (syncing_ || n == attention_period(model_->scenario().arch)) return;
        model_->edit(tr("Change attention every N layers"),
                     [n](Scenario& s) { s.arch = with_attention_period(s.arch, n); });
    });
    connect(window_, &BigSpinBox::problemChanged, this, &InputsPanel::sync);
    connect(window_, &BigSpinBox::valueEdited, this, [this](std::uint64_t w) {
        const Architecture& a = model_->scenario().arch;
        const LayerKind kind = a.count_layers(LayerKind::sliding) > 0 ? LayerKind::sliding : LayerKind::chunked;
        if (syncing_ || w == layer_window(a, kind)) return;
        model_->edit(kind == LayerKind::sliding ? tr("Change sliding window") : tr("Change attention chunk"),
                     [kind, w](Scenario& s) { s.arch = with_layer_window(s.arch, kind, w); });
    });
    connect(full_window_, &QCheckBox::toggled, this, [this](bool on) {
        if (syncing_) return;
        model_->edit(tr("Toggle full context on sliding and chunked layers"),
                     [on](Scenario& s) { s.workload.full_window = on; });
    });
    connect(model_, &ScenarioModel::changed, this, &InputsPanel::sync);
    sync();
}

InputsPanel::~InputsPanel() {
    // Deleting the fields below moves the focus; the picker must not be asked about it by then.
    disconnect(focus_watch_);
}

void InputsPanel::setImportAction(QAction* action) {
    // A short label here; the menu keeps the full "Import model…".
    import_->setText(tr("Import…"));
    import_->setToolTip(action->toolTip());
    connect(import_, &QToolButton::clicked, action, &QAction::trigger);
}

void InputsPanel::showModelInPicker() {
    const bool was_syncing = syncing_;
    syncing_ = true;
    const int index = picker_->findData(q(model_->scenario().model_id));
    if (index >= 0) picker_->setCurrentIndex(index);
    picker_->setEditText(index >= 0 ? picker_->itemText(index) : model_->description());
    shown_model_id_ = model_->scenario().model_id;
    picker_->lineEdit()->setCursorPosition(0);  // show the name's start
    syncing_ = was_syncing;
}

void InputsPanel::pickTypedModel() {
    const QString typed = picker_->lineEdit()->text().trimmed();
    const int current = picker_->findData(q(model_->scenario().model_id));
    if (current >= 0 && typed == picker_->itemText(current)) return;  // the model in use, as shown
    if (current < 0 && typed == model_->description()) return;        // an imported model, as shown
    // The shown text of an item, or any name a model answers to, or a part of exactly one name.
    const int shown = picker_->findText(typed, Qt::MatchFixedString);
    const QString shown_data = shown >= 0 ? picker_->itemData(shown).toString() : QString();
    if (shown_data.startsWith(QString::fromLatin1(kLocalPrefix))) {  // a local model's entry, as listed
        loadLocalModel(shown_data.mid(static_cast<int>(std::strlen(kLocalPrefix))).toULongLong());
        return;
    }
    std::vector<const CatalogModel*> found;
    if (shown >= 0 && !shown_data.isEmpty()) {  // not the "On this machine" heading
        if (const CatalogModel* m = model_->catalog().find_model(shown_data.toStdString())) found.push_back(m);
    } else {
        found = model_->catalog().matching_models(typed.toStdString());
    }
    if (found.size() == 1) {
        model_->loadCatalogModel(q(found.front()->id));
        showModelInPicker();
        return;
    }
    if (const LocalModel* local = find_local_model(local_, typed.toStdString())) {
        loadLocalModel(static_cast<std::size_t>(local - local_.data()));
        return;
    }
    QString text;
    if (found.empty()) {
        text = tr("No model in the catalog matches '%1'; still showing %2.").arg(typed, model_->description());
    } else {
        QStringList names;
        for (const CatalogModel* m : found) names << q(m->id);
        text = tr("'%1' matches %2 models (%3); pick one from the list.")
                   .arg(typed)
                   .arg(found.size())
                   .arg(names.mid(0, 5).join(", ") + (names.size() > 5 ? ", …" : ""));
    }
    showModelInPicker();
    emit notice(text);
}

void InputsPanel::refreshLocalModels() {
    std::vector<LocalModel> found = scan_local_models(local_roots_from_environment());
    const auto same = [](const LocalModel& a, const LocalModel& b) {
        return a.id == b.id && a.path == b.path && a.problem == b.problem && a.store == b.store;
    };
    if (local_listed_ && found.size() == local_.size() && std::equal(found.begin(), found.end(), local_.begin(), same))
        return;  // nothing new on this machine: the list (and the box's text and selection) stay as they are
    local_listed_ = true;
    const bool was_syncing = syncing_;
    syncing_ = true;  // the box keeps its text; nothing here is a choice of the user's
    const QString text = picker_->lineEdit()->text();
    while (picker_->count() > catalog_items_) picker_->removeItem(picker_->count() - 1);
    local_ = std::move(found);
    if (!local_.empty()) {
        picker_->insertSeparator(picker_->count());
        picker_->addItem(tr("On this machine"));
        if (auto* items = qobject_cast<QStandardItemModel*>(picker_->model()))
            items->item(picker_->count() - 1)->setEnabled(false);  // a heading, not a choice
        for (std::size_t i = 0; i < local_.size(); ++i) {
            const LocalModel& m = local_[i];
            const QString shown = q(m.id) + "  ·  " + q(std::string(to_string(m.store))) +
                                  (m.problem.empty() ? QString() : "  ·  " + tr("incomplete"));
            picker_->addItem(shown, QString::fromLatin1(kLocalPrefix) + QString::number(i));
            const int row = picker_->count() - 1;
            // A model that cannot be read as found says why before it is chosen (choosing it says so too).
            picker_->setItemData(row,
                                 m.problem.empty()
                                     ? tr("%1, found in %2").arg(q(m.path), q(std::string(to_string(m.store))))
                                     : q(m.id) + ": " + q(m.problem),
                                 Qt::ToolTipRole);
            picker_->setItemData(row, shown + '\n' + q(m.id), kSearchRole);
        }
    }
    picker_->lineEdit()->setText(text);
    // The list as wide as its longest entry (a local GGUF's path-like id), not as narrow as the box.
    picker_->view()->setMinimumWidth(picker_->view()->sizeHintForColumn(0) + 24);
    syncing_ = was_syncing;
}

void InputsPanel::loadLocalModel(std::size_t index) {
    if (index >= local_.size()) return;
    const LocalModel& m = local_[index];
    if (const auto problem = model_->importLocalModel(m)) emit notice(*problem);
    showModelInPicker();
}

void InputsPanel::commitKvHeads() {
    if (syncing_) return;
    bool ok = false;
    const qulonglong heads = kv_heads_->currentText().trimmed().toULongLong(&ok);
    if (!ok) {
        kv_heads_problem_ = tr("'%1' is not a whole number").arg(kv_heads_->currentText());
        sync();
        return;
    }
    kv_heads_problem_.clear();
    kv_heads_->lineEdit()->setModified(false);  // accepted: the field's text is the scenario's again
    model_->edit(tr("Change KV heads"), [heads](Scenario& s) { s.arch.kv_heads = heads; });
    sync();
}

bool InputsPanel::commitPending() {
    for (BigSpinBox* box : numberFields()) box->commitPending();
    if (kv_heads_->isEnabled() && kv_heads_->lineEdit()->isModified()) commitKvHeads();
    if (!attention_every_->isHidden()) attention_every_->interpretText();
    return unaccepted().isEmpty();
}

QList<BigSpinBox*> InputsPanel::numberFields() const {
    return {layers_, query_heads_, head_dim_, hidden_, context_->spinBox(), batch_, block_, tp_, pp_, window_};
}

void InputsPanel::sync() {
    syncing_ = true;
    const Scenario& s = model_->scenario();
    const Architecture& a = s.arch;

    const int index = picker_->findData(QString::fromStdString(s.model_id));
    const CatalogModel* preset = model_->catalog().find_model(s.model_id);
    const bool edited = preset && !(preset->model.arch == a);
    // Never another model's name over these numbers: the model in use, unless a name is being typed in the box for
    // the model it shows (an undo or a file that changes the model replaces that too).
    if (!picker_->lineEdit()->hasFocus() || s.model_id != shown_model_id_) showModelInPicker();
    QString source = index >= 0 && preset
                         ? QString::fromStdString(preset->hf_repo.empty() ? preset->source : preset->hf_repo)
                         : model_->description();
    if (edited) source += tr(" — edited");
    if (!model_->notes().isEmpty()) source += "\n" + model_->notes().join("\n");
    source_->setText(source);

    // Every field shows the scenario's value, or text of the user's own that is refused or still being typed
    // (field_text.h): an undo, a model loaded or a file opened replaces it.
    layers_->setValue(a.layers);
    query_heads_->setValue(a.query_heads);
    hidden_->setValue(a.hidden_size);
    head_dim_->setValue(a.head_dim_k);
    head_dim_hint_->setText(a.mla ? tr("MLA: latent %1 + rope %2").arg(a.mla->kv_lora_rank).arg(a.mla->qk_rope_head_dim)
                            : model_->headDimFollows() ? tr("auto")
                                                       : tr("set"));
    head_dim_hint_->setToolTip(model_->headDimFollows()
                                   ? tr("Follows model dim ÷ query heads until you set it")
                                   : tr("Set by hand or by the model's config; model dim no longer changes it"));
    // KV heads offers the divisors of the query heads (MHA … MQA); the list is built again only when they change,
    // and text of the user's own in the box survives it.
    const std::vector<std::uint64_t> choices = kv_head_choices(a);
    bool same_choices = kv_heads_->count() == static_cast<int>(choices.size());
    for (int i = 0; same_choices && i < kv_heads_->count(); ++i)
        same_choices = kv_heads_->itemData(i).toULongLong() == choices[static_cast<std::size_t>(i)];
    if (!same_choices) {
        const QString text = kv_heads_->lineEdit()->text();
        const bool modified = kv_heads_->lineEdit()->isModified();
        kv_heads_->clear();
        for (const std::uint64_t d : choices) {
            Architecture layout = a;
            layout.kv_heads = d;
            kv_heads_->addItem(QString::number(d), QVariant::fromValue<qulonglong>(d));
            kv_heads_->setItemData(kv_heads_->count() - 1, q(attention_label(layout)),
                                   Qt::ToolTipRole);  // MHA, GQA-8, MQA
        }
        kv_heads_->lineEdit()->setText(text);
        kv_heads_->lineEdit()->setModified(modified);
    }
    if (show_scenario_text(kv_heads_->lineEdit(), a.mla ? tr("MLA latent") : QString::number(a.kv_heads),
                           !kv_heads_problem_.isEmpty()))
        kv_heads_problem_.clear();
    kv_heads_->setEnabled(!a.mla);
    head_dim_->setEnabled(!a.mla);
    kv_dtype_->setCurrentIndex(kv_dtype_->findData(static_cast<int>(s.kv_dtype)));
    // Each format says whether the deployment's engine keeps it; one it lacks is counted at its size (and the
    // Deployment tab says so).
    for (int i = 0; i < kv_dtype_->count(); ++i) {
        const auto dtype = static_cast<KvDtype>(kv_dtype_->itemData(i).toInt());
        QString tip = q(std::string(info(dtype).description));
        if (s.deployment && !engine_keeps_kv_format(s.deployment->engine, dtype))
            tip += "\n" + tr("%1 has no %2 cache (%3); counted at its size, not exact")
                              .arg(q(std::string(to_string(s.deployment->engine))), q(std::string(to_string(dtype))),
                                   q(std::string(kv_formats_source(s.deployment->engine))));
        kv_dtype_->setItemData(i, tip, Qt::ToolTipRole);
    }
    context_->setSliderMaximum(std::max<std::uint64_t>(a.max_positions, s.workload.context_tokens));
    context_->setValue(s.workload.context_tokens);
    batch_->setValue(s.workload.batch);
    block_->setValue(s.workload.block_size);
    tp_->setValue(s.parallel.tp);
    pp_->setValue(s.parallel.pp);
    full_window_->setChecked(s.workload.full_window);
    full_window_->setEnabled(a.has_sliding_layers() || a.count_layers(LayerKind::chunked) > 0 ||
                             s.workload.full_window);
    const std::string mix = layer_mix_text(a);
    layer_mix_->setText(q(mix));
    const std::uint64_t period = attention_period(a);
    const LayerKind local = a.count_layers(LayerKind::sliding) > 0 ? LayerKind::sliding : LayerKind::chunked;
    const std::uint64_t window = layer_window(a, local);
    attention_every_->setVisible(period > 0);
    attention_every_label_->setVisible(period > 0);
    // From 2 (every layer attending leaves no recurrent layer, and no way back here) to the layers (one attention
    // layer, the last): the row never removes itself. A typed value not yet accepted stays until it is.
    attention_every_->setRange(2, static_cast<int>(std::clamp<std::uint64_t>(a.layers, 2, kMaxLayers)));
    if (period > 0 && static_cast<std::uint64_t>(attention_every_->value()) != period)
        attention_every_->setValue(static_cast<int>(std::min<std::uint64_t>(period, kMaxLayers)));
    // Shown while the model has such layers, a window of 0 typed in it too (marked, so that it can be mended).
    const bool local_layers = a.count_layers(LayerKind::sliding) + a.count_layers(LayerKind::chunked) > 0;
    window_->setVisible(local_layers);
    window_label_->setVisible(local_layers);
    window_label_->setText(local == LayerKind::sliding ? tr("window") : tr("chunk"));
    window_->setAccessibleName(local == LayerKind::sliding ? tr("Sliding window") : tr("Attention chunk"));
    if (local_layers)
        window_->setValue(window);
    else
        window_->dropUserText();  // hidden: what was typed there was for another model's window
    mix_edits_->setVisible(period > 0 || local_layers);
    layer_mix_row_->setVisible(!mix.empty());

    QMap<QWidget*, QString> typed = typedProblems();
    QStringList problems = marks_.apply(model_->errors(), typed);
    // What no input here shows: the Deployment tab marks its own fields; the rest (a loaded model's expert
    // counts, a window of 0, …) is listed here so that it is never left unsaid.
    problems << marks_.unclaimed(model_->errors(), {Field::gpus, Field::gpu_memory, Field::gpu_bandwidth,
                                                    Field::utilization, Field::weight_dtype});
    // "Last valid results" only while the calculator refuses the inputs: text a field refused leaves the results
    // those of the inputs as they stand.
    errors_->setText(problems.isEmpty() ? QString()
                     : model_->errors().empty()
                         ? tr("Not accepted:\n• %1").arg(problems.join("\n• "))
                         : tr("Showing the last valid results. Fix:\n• %1").arg(problems.join("\n• ")));
    errors_->setVisible(!problems.isEmpty());
    syncing_ = false;
}

QMap<QWidget*, QString> InputsPanel::typedProblems() const {
    QMap<QWidget*, QString> typed;
    for (BigSpinBox* box : numberFields())
        if (!box->problem().isEmpty()) typed.insert(box, box->problem());
    if (!kv_heads_problem_.isEmpty()) typed.insert(kv_heads_, kv_heads_problem_);
    return typed;
}

QStringList InputsPanel::unaccepted() const {
    QStringList out;
    const QMap<QWidget*, QString> typed = typedProblems();
    for (auto it = typed.begin(); it != typed.end(); ++it) out << it.key()->accessibleName() + ": " + it.value();
    return out;
}

}  // namespace kvscope::ui

namespace kvscope::ui {

void InputsPanel::highlightField(Field field) {
    QWidget* w = marks_.widgetFor(field);
    highlighted_ = w && w->isVisible() ? w : nullptr;
    if (!highlighted_) {
        spotlight_->hide();
        return;
    }
    for (QWidget* p = parentWidget(); p; p = p->parentWidget())
        if (auto* area = qobject_cast<QScrollArea*>(p)) {
            area->ensureWidgetVisible(highlighted_);
            break;
        }
    const QRect r(highlighted_->mapTo(this, QPoint(0, 0)), highlighted_->size());
    spotlight_->setGeometry(r.adjusted(-4, -3, 4, 3));
    spotlight_->show();
    spotlight_->raise();
}

void InputsPanel::focusField(Field field) {
    if (QWidget* w = marks_.widgetFor(field)) w->setFocus(Qt::OtherFocusReason);
}

}  // namespace kvscope::ui
