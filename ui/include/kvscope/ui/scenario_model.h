#pragma once
// The one Scenario the app shows, the calculator's answers for it, and the
// undo history of its inputs. Views read from here and redraw on `changed`;
// they never compute KV bytes themselves.

#include <QFileSystemWatcher>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QUndoStack>

#include <cstdint>
#include <functional>
#include <optional>

#include "kvscope/calculator/analysis.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/variants.h"

namespace kvscope::ui {

// Everything the views show for one valid scenario: the calculator's one pipeline (analysis.h).
using Results = Analysis;

class ScenarioModel : public QObject {
    Q_OBJECT
public:
    explicit ScenarioModel(const Catalog& catalog, QObject* parent = nullptr);

    [[nodiscard]] const Catalog& catalog() const { return catalog_; }
    // The inputs as entered, possibly invalid.
    [[nodiscard]] const Scenario& scenario() const { return scenario_; }
    // The answers for the last valid inputs (what stays on screen while a field is wrong).
    [[nodiscard]] const Results& results() const { return results_; }
    [[nodiscard]] bool hasResults() const { return has_results_; }
    // Problems with the current inputs, each naming its field; empty when valid.
    [[nodiscard]] const Errors& errors() const { return errors_; }
    // Where the model came from and what was assumed, for the overview and reports.
    [[nodiscard]] const QString& description() const { return description_; }
    // The description of the scenario the results are of: while the inputs need attention the results are the
    // last valid ones, of what may be another model, and are never shown under the current one's name.
    [[nodiscard]] const QString& resultsDescription() const { return results_description_; }
    // True when the results are of the inputs as they stand (valid inputs, computed); false while the inputs need
    // attention and the results are the last valid ones, or there are none.
    [[nodiscard]] bool resultsAreCurrent() const { return has_results_ && errors_.empty(); }
    // What every results tab says while they are not current: what needs attention, and whose the figures shown
    // are ("… the last valid results, of Llama 3 8B at 8k tokens × 1"); empty while they are current.
    [[nodiscard]] QString staleText() const;
    [[nodiscard]] const QStringList& notes() const { return notes_; }
    // The import's notes the exports give as warnings (State::warnings).
    [[nodiscard]] const QStringList& importWarnings() const { return warnings_; }
    // True while head dim is derived from model dim / query heads.
    [[nodiscard]] bool headDimFollows() const { return head_dim_follows_; }
    // Where decode steps measured here are kept (measured_step.h; the catalog's user folder); empty: not kept.
    [[nodiscard]] const std::string& measuredStepsPath() const { return measured_.path(); }
    // Reads the kept measurements again (after a step was kept) and recomputes. Steps another window or kvscope-cli
    // keeps in the same file are read as the file changes (watchMeasuredSteps), not at the next edit.
    void measuredStepsChanged();

    [[nodiscard]] UnitSystem units() const { return units_; }
    void setUnits(UnitSystem units);
    [[nodiscard]] Spacing curveSpacing() const { return spacing_; }
    void setCurveSpacing(Spacing spacing);

    QUndoStack* undoStack() { return &undo_; }

    // One undoable edit. Edits with the same non-negative `merge_id` in a row merge into one
    // undo step (dragging the context slider is one step, not two hundred).
    void edit(const QString& what, const std::function<void(Scenario&)>& change, int merge_id = -1);
    // Shape edits that keep the derived fields consistent: head dim follows model dim / heads
    // unless set; per-layer windows follow the layer count.
    void setLayers(std::uint64_t layers);
    void setQueryHeads(std::uint64_t heads);
    void setHiddenSize(std::uint64_t hidden);
    void setHeadDim(std::uint64_t head_dim);

    // Replacing the whole scenario (a preset, an imported config, an opened file) is one undo step.
    void loadCatalogModel(const QString& id);
    // A config.json, a GGUF file or a model folder (import_model_path): errors name the file and the line or
    // byte; the scenario is untouched when the import fails.
    std::optional<QString> importModel(const QString& path);
    // A model found on this machine (scan_local_models), as kvscope-cli --model reads it.
    std::optional<QString> importLocalModel(const LocalModel& model);
    // `repaired`, when given, receives what had to be repaired to read the file (a 0.1 file with
    // decimal commas), or an empty text; `unread` the fields of the file this version does not read
    // (LoadedScenario::unread), or an empty text.
    std::optional<QString> openScenario(const QString& path, QString* repaired = nullptr, QString* unread = nullptr);
    std::optional<QString> saveScenario(const QString& path) const;
    // A scenario without model_weights (a file saved before KVScope kept them) has model_weights_of's: the
    // catalog's, else the deployment's format.
    void replace(const Scenario& scenario, const QString& description, const QStringList& notes, const QString& what,
                 const QStringList& warnings = {});
    // The model's own weights: the format it was published in (its config's dtype or quantization), their exact
    // bytes when its files give them, the engine they are for: what a new deployment starts with, as kvscope-cli
    // gives it for --model, --config, --gguf and --model-dir. Kept in the scenario (and its file).
    [[nodiscard]] ModelWeights modelWeights() const { return model_weights_of(scenario_, catalog_); }
    [[nodiscard]] KvDtype modelWeightDtype() const { return modelWeights().dtype; }

    // Everything an undo step puts back.
    struct State {
        Scenario scenario;
        bool head_dim_follows = true;
        QString description;
        QStringList notes;
        // What the model's import said of fields it does not model (an unknown quantization, the SSM state's
        // format): the exports give them as warnings, as kvscope-cli's JSON gives the same import's notes.
        QStringList warnings;
    };
    [[nodiscard]] State state() const;
    // Used by undo/redo: sets the inputs without recording a step.
    void restore(const State& state);

signals:
    // Inputs, errors or results changed.
    void changed();
    void unitsChanged();
    // Something the user should know about an edit they made, for the status line
    // ("KV format fp8_e4m3 replaced by Gemma 2 9B's own fp32 …").
    void notice(const QString& text);

private:
    void recompute();
    // An edit that gives `next`: the files' exact bytes no longer apply (and are cleared from next's model weights
    // and deployment) when the edit changed the shape they described; true when they were cleared.
    bool dropStaleWeights(Scenario& next);
    // The notice that the weights are estimated again, sent after the edit's undo step (so that undoing it takes it).
    void sayWeightsEstimatedAgain();
    // The imported model in place of the scenario's, its formats and weights the model's own.
    std::optional<QString> adoptImported(const Result<ImportedModel>& imported, const std::string& model_id);
    // Says so when loading a model replaced the KV format that was in use.
    void announceKvFormat(KvDtype before, const QString& model, const QString& source);

    const Catalog& catalog_;
    Scenario scenario_;
    Results results_;
    bool has_results_ = false;
    Errors errors_;
    QString description_;
    QString results_description_;
    QStringList notes_;
    QStringList warnings_;
    bool head_dim_follows_ = true;
    MeasuredStepStore measured_;  // read again only when the file changed (another window, the CLI)
    QFileSystemWatcher* measured_watch_ = nullptr;
    // Watches the measured steps' file and its folder (the file is replaced by a rename), as far as they exist.
    void watchMeasuredSteps();
    UnitSystem units_ = UnitSystem::binary;
    Spacing spacing_ = Spacing::log;
    QUndoStack undo_;
};

// What to call a scenario's model: the catalog's name when it is a catalog model, else its own.
QString display_name(const Catalog& catalog, const Scenario& scenario);
// The same, marked "(edited)" when its shape is no longer the catalog model's: what the chart's title, the report and
// the exports call it, so that an edited model never goes out under the published one's name alone.
QString shown_model_name(const Catalog& catalog, const Scenario& scenario);

// The scenario a new window opens on: the lesson's 32-layer model at 8192 tokens in fp16.
Scenario default_scenario(const Catalog& catalog);
// The scenario for catalog model `m`: its shape, its KV format, a context of min(8192, max positions).
Scenario scenario_for(const CatalogModel& m);

}  // namespace kvscope::ui
