#pragma once
// kvscope's command line: the scenario options of kvscope-cli (--model, --config,
// --context, --gpu, …), --scenario FILE, and the headless exports.

#include <QString>
#include <QStringList>

#include <optional>

#include "kvscope/calculator/scenario.h"
#include "kvscope/ui/exporter.h"
#include "options.h"

namespace kvscope::gui {

struct CommandLine {
    bool help = false;
    bool version = false;
    std::optional<QString> scenario_file;
    // `kvscope FILE` (the desktop's "Open with"): opened in the window as File ▸ Open or Import would, a
    // .kvscope.json scenario, a config.json, a GGUF or a model folder.
    std::optional<QString> open_file;
    std::optional<QString> export_chart, export_csv, export_json, export_report;
    ui::ChartSize chart_size;
    std::optional<QString> screenshots_dir;  // render every screen into this folder and exit
    bool startup_probe = false;              // exit at the first painted frame (bench/)
    std::optional<bool> log_bytes;           // chart: log or linear bytes axis; unset: the chart chooses
    cli::Options options;                    // the scenario options, as kvscope-cli reads them
    bool has_scenario_options = false;

    [[nodiscard]] bool exports() const { return export_chart || export_csv || export_json || export_report; }
};

// Errors name the option ("--export-chart: needs a value").
Result<CommandLine> parse_command_line(const QStringList& args);

struct ChosenScenario {
    Scenario scenario;
    QString description;
    QStringList notes;
    QStringList warnings;  // the import's notes, which the exports give as warnings (ScenarioModel::State)
    // What reading a --scenario file needs said (numbers repaired, fields this version does not read): the window
    // shows it, and exports print it on stderr.
    QStringList said;
    bool said_problem = false;  // `said` names fields the numbers leave out (not only numbers repaired)
};
// The scenario the options describe, or none when the command line names no scenario.
Result<std::optional<ChosenScenario>> scenario_from(const CommandLine& c, const Catalog& catalog);

QString usage();

}  // namespace kvscope::gui
