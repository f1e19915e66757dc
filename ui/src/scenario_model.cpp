#include "kvscope/ui/scenario_model.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <QTimer>
#include <QUndoCommand>

#include "kvscope/calculator/explain.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/weights.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

// One input change: the scenario before and after.
class EditCommand : public QUndoCommand {
public:
    using State = ScenarioModel::State;
    EditCommand(ScenarioModel* model, State before, State after, const QString& text, int merge_id)
        : QUndoCommand(text), model_(model), before_(std::move(before)), after_(std::move(after)), id_(merge_id) {}
    void undo() override { model_->restore(before_); }
    void redo() override { model_->restore(after_); }
    int id() const override { return id_; }
    bool mergeWith(const QUndoCommand* other) override {
        if (other->id() != id_) return false;
        after_ = static_cast<const EditCommand*>(other)->after_;
        return true;
    }

private:
    ScenarioModel* model_;
    State before_, after_;
    int id_;
};

QStringList to_qt(const std::vector<std::string>& list) {
    QStringList out;
    for (const auto& s : list) out << QString::fromStdString(s);
    return out;
}

QString error_text(const Errors& errors) { return QString::fromStdString(join_errors(errors)); }

bool head_dim_is_derived(const Architecture& a) {
    return !a.mla && a.query_heads > 0 && a.hidden_size > 0 && a.hidden_size % a.query_heads == 0 &&
           a.head_dim_k == a.hidden_size / a.query_heads && a.head_dim_v == a.head_dim_k;
}

}  // namespace

QString display_name(const Catalog& catalog, const Scenario& scenario) {
    if (const CatalogModel* m = catalog.find_model(scenario.model_id)) return QString::fromStdString(m->name);
    return QString::fromStdString(scenario.arch.name);
}

QString shown_model_name(const Catalog& catalog, const Scenario& scenario) {
    const CatalogModel* m = catalog.find_model(scenario.model_id);
    const bool edited = m && !(m->model.arch == scenario.arch);
    return display_name(catalog, scenario) + (edited ? QObject::tr(" (edited)") : QString());
}

Scenario scenario_for(const CatalogModel& m) {
    Scenario s;
    s.model_id = m.id;
    s.arch = m.model.arch;
    s.kv_dtype = m.model.kv_dtype;
    s.model_weights = m.model.model_weights();
    s.workload.context_tokens = default_context_tokens(s.arch);
    return s;
}

Scenario default_scenario(const Catalog& catalog) {
    if (const CatalogModel* m = catalog.find_model("kvscope-teaching-32l")) return scenario_for(*m);
    Scenario s;
    s.model_id = "teaching";
    s.arch = teaching_model();
    return s;
}

ScenarioModel::ScenarioModel(const Catalog& catalog, QObject* parent)
    : QObject(parent), catalog_(catalog), measured_(measured_steps_path(catalog.user_folder())) {
    scenario_ = default_scenario(catalog_);
    if (const CatalogModel* m = catalog_.find_model(scenario_.model_id)) {
        description_ = QString::fromStdString(m->name);
    }
    head_dim_follows_ = head_dim_is_derived(scenario_.arch);
    if (!measured_.path().empty()) {
        measured_watch_ = new QFileSystemWatcher(this);
        // A change is read once it settles: a write is a temporary file, then a rename.
        auto* settle = new QTimer(this);
        settle->setSingleShot(true);
        settle->setInterval(200);
        connect(measured_watch_, &QFileSystemWatcher::directoryChanged, settle, qOverload<>(&QTimer::start));
        connect(measured_watch_, &QFileSystemWatcher::fileChanged, settle, qOverload<>(&QTimer::start));
        connect(settle, &QTimer::timeout, this, [this] {
            watchMeasuredSteps();
            if (measured_.stale()) recompute();
        });
        watchMeasuredSteps();
    }
    recompute();
}

void ScenarioModel::watchMeasuredSteps() {
    if (!measured_watch_) return;
    const QString file = QString::fromStdString(measured_.path());
    // The folder, or before it exists (a first run) the nearest folder above it that does, where it will appear.
    QString folder = QFileInfo(file).absolutePath();
    while (!QFileInfo(folder).isDir() && QFileInfo(folder).absolutePath() != folder)
        folder = QFileInfo(folder).absolutePath();
    QStringList wanted{folder};
    if (QFileInfo::exists(file)) wanted << file;
    const QStringList watched = measured_watch_->files() + measured_watch_->directories();
    for (const QString& path : watched)
        if (!wanted.contains(path)) measured_watch_->removePath(path);
    for (const QString& path : wanted)
        if (!watched.contains(path)) measured_watch_->addPath(path);
}

void ScenarioModel::measuredStepsChanged() {
    watchMeasuredSteps();  // the folder and file a step kept here may have made
    measured_.reload();
    recompute();
}

void ScenarioModel::setUnits(UnitSystem units) {
    if (units == units_) return;
    units_ = units;
    recompute();
    emit unitsChanged();
}

void ScenarioModel::setCurveSpacing(Spacing spacing) {
    if (spacing == spacing_) return;
    spacing_ = spacing;
    recompute();
}

namespace {
// The same weights: every field but the name and the recurrent state's formats (which are no weights) is equal.
bool same_weights_shape(Architecture a, Architecture b) {
    a.name = b.name;
    if (a.recurrent && b.recurrent) {
        a.recurrent->conv_dtype = b.recurrent->conv_dtype;
        a.recurrent->ssm_dtype = b.recurrent->ssm_dtype;
    }
    return a == b;
}
}  // namespace

bool ScenarioModel::dropStaleWeights(Scenario& next) {
    const bool exact = (next.model_weights && next.model_weights->exact_bytes > 0) ||
                       (next.deployment && next.deployment->weights_bytes_exact > 0);
    if (!exact || same_weights_shape(next.arch, scenario_.arch)) return false;
    // The files' bytes were those of the shape they came with, not of this one: estimated again (undo brings them
    // back).
    if (next.model_weights) {
        next.model_weights->exact_bytes = 0;
        next.model_weights->source.clear();
    }
    if (next.deployment) {
        next.deployment->weights_bytes_exact = 0;
        next.deployment->weights_source.clear();
    }
    return true;
}

void ScenarioModel::sayWeightsEstimatedAgain() {
    emit notice(tr("The weights are estimated from the parameters again: the model's files describe another shape."));
}

void ScenarioModel::edit(const QString& what, const std::function<void(Scenario&)>& change, int merge_id) {
    Scenario next = scenario_;
    change(next);
    if (next == scenario_) return;  // nothing changed: no undo step
    const bool dropped = dropStaleWeights(next);
    undo_.push(
        new EditCommand(this, state(), {next, head_dim_follows_, description_, notes_, warnings_}, what, merge_id));
    if (dropped) sayWeightsEstimatedAgain();  // after its undo step, which takes the notice back with it
}

void ScenarioModel::setLayers(std::uint64_t layers) {
    edit(tr("Change layers"), [layers](Scenario& s) {
        auto& w = s.arch.layer_specs;
        if (!w.empty() && layers > 0) {
            // Keep the model's interleaving pattern (e.g. sliding, full, sliding, full …).
            const std::vector<LayerSpec> pattern = w;
            w.resize(layers);
            for (std::size_t i = pattern.size(); i < layers; ++i) w[i] = pattern[i % pattern.size()];
        }
        s.arch.layers = layers;
    });
}

void ScenarioModel::setQueryHeads(std::uint64_t heads) {
    const bool follow = head_dim_follows_;
    edit(tr("Change query heads"), [heads, follow](Scenario& s) {
        s.arch.query_heads = heads;
        if (follow && heads > 0 && s.arch.hidden_size % heads == 0)
            s.arch.head_dim_k = s.arch.head_dim_v = s.arch.hidden_size / heads;
    });
}

void ScenarioModel::setHiddenSize(std::uint64_t hidden) {
    const bool follow = head_dim_follows_;
    edit(tr("Change model dimension"), [hidden, follow](Scenario& s) {
        s.arch.hidden_size = hidden;
        if (follow && s.arch.query_heads > 0 && hidden % s.arch.query_heads == 0)
            s.arch.head_dim_k = s.arch.head_dim_v = hidden / s.arch.query_heads;
    });
}

void ScenarioModel::setHeadDim(std::uint64_t head_dim) {
    const Scenario before = scenario_;
    const bool follows_before = head_dim_follows_;
    Scenario next = scenario_;
    next.arch.head_dim_k = next.arch.head_dim_v = head_dim;
    if (next.arch == before.arch) return;
    // Setting head dim by hand stops it following the model dimension (until it matches again).
    const bool dropped = dropStaleWeights(next);
    undo_.push(new EditCommand(this, {before, follows_before, description_, notes_, warnings_},
                               {next, head_dim_is_derived(next.arch), description_, notes_, warnings_},
                               tr("Change head dimension"), -1));
    if (dropped) sayWeightsEstimatedAgain();
}

void ScenarioModel::loadCatalogModel(const QString& id) {
    const CatalogModel* m = catalog_.find_model(id.toStdString());
    if (!m) return;
    // The workload and deployment stay as the user set them; the KV and weight formats become the
    // model's own, as kvscope-cli gives them for --model (the same inputs, the same numbers).
    Scenario s = scenario_;
    s.model_id = m->id;
    s.arch = m->model.arch;
    s.kv_dtype = m->model.kv_dtype;
    s.model_weights = m->model.model_weights();
    if (s.deployment) adopt_model_weights(*s.deployment, *s.model_weights);
    QStringList notes = to_qt(m->model.assumed);
    notes += to_qt(m->model.notes);
    const QString name = QString::fromStdString(m->name);
    const KvDtype before = scenario_.kv_dtype;
    replace(s, name, notes, tr("Load %1").arg(name), to_qt(m->model.notes));
    announceKvFormat(before, name, q(m->model.kv_dtype_source));
}

void ScenarioModel::announceKvFormat(KvDtype before, const QString& model, const QString& source) {
    if (scenario_.kv_dtype == before) return;
    emit notice(
        tr("KV format %1 replaced by %2's own %3 (%4); choose another in KV dtype.")
            .arg(q(std::string(to_string(before))), model, q(std::string(to_string(scenario_.kv_dtype))), source));
}

std::optional<QString> ScenarioModel::importModel(const QString& path) {
    return adoptImported(import_model_path(path.toStdString()), path.toStdString());
}

std::optional<QString> ScenarioModel::importLocalModel(const LocalModel& model) {
    return adoptImported(import_local_model(model), model.id);
}

std::optional<QString> ScenarioModel::adoptImported(const Result<ImportedModel>& imported,
                                                    const std::string& model_id) {
    if (!imported) return error_text(imported.errors());
    Scenario s = scenario_;
    s.model_id = model_id;
    s.arch = imported->arch;  // named by the importer, as kvscope-cli names it
    s.kv_dtype = imported->kv_dtype;
    const ModelWeights weights = imported->model_weights();
    s.model_weights = weights;
    if (s.deployment) adopt_model_weights(*s.deployment, weights);
    QStringList notes;
    for (const auto& a : imported->assumed) notes << tr("assumed: %1").arg(QString::fromStdString(a));
    notes += to_qt(imported->notes);
    notes << tr("KV format from %1").arg(QString::fromStdString(imported->kv_dtype_source));
    if (weights.exact_bytes > 0) notes << tr("weights: %1").arg(q(weights.source));
    if (weights.engine)
        notes << tr("engine %1 for a deployment: the file is made for it")
                     .arg(q(std::string(to_string(*weights.engine))));
    const QString name = q(s.arch.name);
    const KvDtype before = scenario_.kv_dtype;
    replace(s, name, notes, tr("Import %1").arg(name), to_qt(imported->notes));
    announceKvFormat(before, name, q(imported->kv_dtype_source));
    return std::nullopt;
}

std::optional<QString> ScenarioModel::openScenario(const QString& path, QString* repaired, QString* unread) {
    auto s = read_scenario_file(path.toStdString());
    if (!s) return error_text(s.errors());
    QStringList notes{tr("opened from %1").arg(path)};
    if (!s->repaired.empty()) notes << q(s->repaired);
    if (!s->unread.empty()) notes << q(s->unread);
    if (repaired) *repaired = q(s->repaired);
    if (unread) *unread = q(s->unread);
    replace(s->scenario, display_name(catalog_, s->scenario), notes, tr("Open %1").arg(QFileInfo(path).fileName()),
            q(s->warnings));
    return std::nullopt;
}

std::optional<QString> ScenarioModel::saveScenario(const QString& path) const {
    QSaveFile file(path);
    const std::string text = scenario_to_json(scenario_, std_strings(warnings_));
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(text.data(), static_cast<qint64>(text.size())) != static_cast<qint64>(text.size()) || !file.commit())
        return tr("Could not save %1: %2").arg(path, file.errorString());
    return std::nullopt;
}

void ScenarioModel::replace(const Scenario& scenario, const QString& description, const QStringList& notes,
                            const QString& what, const QStringList& warnings) {
    undo_.push(new EditCommand(this, state(),
                               {scenario, head_dim_is_derived(scenario.arch), description, notes, warnings}, what, -1));
}

QString ScenarioModel::staleText() const {
    if (resultsAreCurrent()) return {};
    QStringList problems;
    for (const FieldError& e : errors_) problems << q(e.message);
    if (!has_results_)
        return tr("The inputs need attention: %1. There are no results until they are fixed.").arg(problems.join("; "));
    const Workload& w = results_.scenario.workload;
    return tr("The inputs need attention: %1. Shown below are the last valid results, of %2 at %3 tokens × %4.")
        .arg(problems.join("; "), results_description_, q(format_tokens(w.context_tokens)),
             q(format_count_of(w.batch, "sequence", "sequences")));
}

ScenarioModel::State ScenarioModel::state() const {
    return {scenario_, head_dim_follows_, description_, notes_, warnings_};
}

void ScenarioModel::restore(const State& state) {
    scenario_ = state.scenario;
    head_dim_follows_ = state.head_dim_follows;
    description_ = state.description;
    notes_ = state.notes;
    warnings_ = state.warnings;
    recompute();
}

void ScenarioModel::recompute() {
    AnalysisOptions options;
    options.units = units_;
    options.curves.spacing = spacing_;
    options.measured_steps = &measured_.entries();
    auto analysis = analyze(scenario_, options);
    errors_ = analysis ? Errors{} : analysis.errors();
    if (analysis) {
        results_ = *analysis;
        results_description_ = description_;
        has_results_ = true;
    }
    emit changed();
}

}  // namespace kvscope::ui
