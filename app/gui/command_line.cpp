#include "command_line.h"

#include <QDir>
#include <QFileInfo>
#include <iterator>
#include <map>
#include <utility>

#include "kvscope/calculator/scenario_file.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"
#include "scenario_options.h"

namespace kvscope::gui {

namespace {

// The window's own options, each declared once: the parser and usage() read this table (the scenario options are
// kvscope-cli's, app/options/options.cpp).
struct WindowOption {
    const char* name;
    const char* metavar;  // empty for a flag
    const char* heading;  // the usage section it is listed under; empty: not listed (bench/'s --startup-probe)
    const char* help;
    // Sets it from its value (empty for a flag), adding what is wrong to `errors`.
    void (*set)(CommandLine& c, const QString& value, Errors& errors);
    std::optional<QString> CommandLine::*file = nullptr;  // the file it writes (exports), or nullptr
};

constexpr const char* kChart = "chart";
constexpr const char* kExports = "exports (no window is shown)";
constexpr const char* kOther = "other";

const WindowOption kWindowOptions[] = {
    {"--log-bytes", "", kChart, "the bytes axis in log (default: log when MHA would squash the model's own curve)",
     [](CommandLine& c, const QString&, Errors&) { c.log_bytes = true; }},
    {"--linear-bytes", "", kChart, "the bytes axis linear",
     [](CommandLine& c, const QString&, Errors&) { c.log_bytes = false; }},
    {"--export-chart", "OUT", kExports, "the chart: .png, .svg or .pdf",
     [](CommandLine& c, const QString& v, Errors&) { c.export_chart = v; }, &CommandLine::export_chart},
    {"--export-csv", "OUT", kExports, "the curves as CSV",
     [](CommandLine& c, const QString& v, Errors&) { c.export_csv = v; }, &CommandLine::export_csv},
    {"--export-json", "OUT", kExports, "every figure as JSON (kvscope-cli's JSON contract)",
     [](CommandLine& c, const QString& v, Errors&) { c.export_json = v; }, &CommandLine::export_json},
    {"--export-report", "OUT", kExports, "a PDF report",
     [](CommandLine& c, const QString& v, Errors&) { c.export_report = v; }, &CommandLine::export_report},
    {"--size", "WxH", kExports, "the chart's size (default 1200x700)",
     [](CommandLine& c, const QString& v, Errors& errors) {
         const QStringList wh = v.toLower().split('x');
         bool ok_w = false, ok_h = false;
         if (wh.size() == 2) c.chart_size.logical = QSize(wh[0].toInt(&ok_w), wh[1].toInt(&ok_h));
         if (!ok_w || !ok_h)
             errors.push_back({"--size", "'" + v.toStdString() + "' is not WIDTHxHEIGHT (for example 1600x900)"});
     }},
    {"--scale", "F", kExports, "a PNG's pixels per point (default 2)",
     [](CommandLine& c, const QString& v, Errors& errors) {
         bool ok = false;
         c.chart_size.scale = v.toDouble(&ok);
         if (!ok) errors.push_back({"--scale", "'" + v.toStdString() + "' is not a number (for example 2)"});
     }},
    {"--screenshots", "FOLDER", kOther, "render every screen of the window as PNG files into FOLDER, then exit",
     [](CommandLine& c, const QString& v, Errors&) { c.screenshots_dir = v; }},
    {"--startup-probe", "", "", "", [](CommandLine& c, const QString&, Errors&) { c.startup_probe = true; }},
    {"-h", "", "", "", [](CommandLine& c, const QString&, Errors&) { c.help = true; }},
    {"--help", "", kOther, "this help (-h)", [](CommandLine& c, const QString&, Errors&) { c.help = true; }},
    {"--version", "", kOther, "the version", [](CommandLine& c, const QString&, Errors&) { c.version = true; }},
};

const WindowOption* window_option(const QString& name) {
    for (const WindowOption& w : kWindowOptions)
        if (name == QLatin1String(w.name)) return &w;
    return nullptr;
}

// The rows under `heading`, as kvscope-cli's help lists its options.
std::string window_options_help(const char* heading) {
    std::string lines;
    for (const WindowOption& w : kWindowOptions) {
        if (std::string_view(w.heading) != heading) continue;
        lines += cli::help_line(w.name, w.metavar, w.help);
    }
    return std::string(heading) + ":\n" + lines;
}

}  // namespace

QString usage() {
    // The scenario options are the ones kvscope-cli declares for the window (app/options/options.cpp).
    return QStringLiteral(
               "usage: kvscope [SCENARIO OPTIONS] [--scenario FILE] [EXPORTS]\n"
               "       kvscope FILE   (opens a .kvscope.json, or imports a config.json, GGUF or model folder)\n"
               "\n"
               "Opens the KVScope window; with an export option, writes the files without a window.\n"
               "Without --model, --config, --gguf, --model-dir or --scenario the window opens your last scenario\n"
               "(the teaching model the first time); the exports need one of them.\n"
               "\n"
               "Scenario (as in kvscope-cli):\n") +
           QString::fromStdString(cli::options_help(cli::Command::window) + window_options_help(kChart) +
                                  window_options_help(kExports) + window_options_help(kOther)) +
           QStringLiteral(
               "\n"
               "examples:\n"
               "  kvscope --model llama-3-70b --context 128k --kv-dtype fp8 --batch 8 --gpu h100-sxm --gpus 2\n"
               "  kvscope --model llama-3-70b --context 128k --export-chart c.svg --export-report r.pdf\n"
               "  kvscope --scenario plan.kvscope.json --export-csv plan.csv\n");
}

Result<CommandLine> parse_command_line(const QStringList& args) {
    CommandLine c;
    Errors errors;
    std::vector<std::string> rest;
    // One word that is no option: a file to open in the window (kvscope.desktop's Exec=kvscope %f); bench/'s
    // --startup-probe may stand beside it.
    QStringList words = args;
    c.startup_probe = words.removeAll("--startup-probe") > 0;
    if (words.size() == 1 && !words.front().startsWith('-')) {
        c.open_file = words.front();
        return c;
    }
    for (qsizetype i = 0; i < args.size(); ++i) {
        QString arg = args.at(i);
        std::optional<QString> inline_value;
        if (const qsizetype eq = arg.indexOf('='); arg.startsWith("--") && eq > 0) {
            inline_value = arg.mid(eq + 1);
            arg = arg.left(eq);
        }
        const WindowOption* own = window_option(arg);
        if (!own) {
            // Everything else is a scenario option, read exactly as kvscope-cli reads it.
            // (values of those options pass through here too, in order).
            rest.push_back(args.at(i).toStdString());
            continue;
        }
        QString value;
        if (*own->metavar) {
            if (inline_value) {
                value = *inline_value;
            } else if (i + 1 < args.size()) {
                value = args.at(++i);
            } else {
                errors.push_back({arg.toStdString(), "needs a value"});
                continue;
            }
        }
        own->set(c, value, errors);
    }
    // No word names a command here: a stray one is an "unexpected argument".
    auto options = cli::parse_options(rest, cli::Command::window);
    if (!options) {
        for (const auto& e : options.errors()) errors.push_back(e);
    } else {
        c.options = *options;
        const cli::Options& o = c.options;
        c.has_scenario_options = cli::names_scenario(o);  // the model, workload and deployment options, not --scenario
        if (o.scenario_file) c.scenario_file = QString::fromStdString(*o.scenario_file);
    }
    if (c.exports() && c.screenshots_dir)
        errors.push_back({"--screenshots", "cannot be combined with the export options"});
    // A chart format the exporter writes, said before any file is written.
    if (c.export_chart && !ui::is_chart_format(*c.export_chart))
        errors.push_back({"--export-chart", "'" + c.export_chart->toStdString() +
                                                "': choose a .png, .svg or .pdf file name for the chart"});
    if (c.export_report && !c.export_report->endsWith(".pdf", Qt::CaseInsensitive) &&
        !ui::is_stream_path(*c.export_report))
        errors.push_back({"--export-report",
                          "'" + c.export_report->toStdString() + "': the report is a PDF; give a .pdf file name"});
    // Where no export can be written, none is: a folder given as a file, or a folder that does not exist, is said
    // before the first file is written (so that no set of exports is left half-done).
    std::vector<std::pair<const char*, const std::optional<QString>*>> exports;  // the exports given
    for (const WindowOption& w : kWindowOptions)
        if (w.file && c.*w.file) exports.emplace_back(w.name, &(c.*w.file));
    for (const auto& [option, path] : exports) {
        const QFileInfo info(**path);
        if (info.isDir())
            errors.push_back({option, "'" + (*path)->toStdString() + "' is a folder; give a file name in it"});
        else if (!info.absoluteDir().exists())
            errors.push_back({option, "the folder '" + info.absolutePath().toStdString() + "' does not exist"});
    }
    // Two exports to one file: the second would silently replace the first.
    for (std::size_t i = 0; i < exports.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (QFileInfo(**exports[i].second).absoluteFilePath() == QFileInfo(**exports[j].second).absoluteFilePath())
                errors.push_back({exports[i].first, "'" + exports[i].second->value().toStdString() + "' is the file " +
                                                        exports[j].first + " writes; give each export its own file"});
    if (!errors.empty()) return errors;
    return c;
}

Result<std::optional<ChosenScenario>> scenario_from(const CommandLine& c, const Catalog& catalog) {
    const cli::Options& o = c.options;
    if (c.scenario_file) {  // never beside --model, --config, --gguf or --model-dir (parse_options says so)
        auto s = read_scenario_file(c.scenario_file->toStdString());
        if (!s) return s.errors();
        ChosenScenario chosen{s->scenario,
                              ui::display_name(catalog, s->scenario),
                              {QString("from %1").arg(*c.scenario_file)},
                              ui::q(s->warnings),
                              {},
                              !s->unread.empty()};
        for (const std::string* said : {&s->unread, &s->repaired})
            if (!said->empty()) chosen.said << QString::fromStdString(*said);
        chosen.notes += chosen.said;
        // Every option given beside the file overrides it: the workload's and the deployment's.
        Errors errors = cli::apply_scenario_options(o, catalog, chosen.scenario);
        if (!errors.empty()) return errors;
        std::vector<std::string> measured;
        if (Errors e = cli::use_this_host(chosen.scenario, probe::read_this_host, measured); !e.empty()) return e;
        for (const std::string& n : measured) chosen.notes << QString::fromStdString(n);
        return std::optional<ChosenScenario>(chosen);
    }
    if (!c.has_scenario_options) return std::optional<ChosenScenario>();
    cli::ScenarioSource source;
    auto s = cli::build_scenario(o, catalog, source);
    if (!s) return s.errors();
    if (Errors e = cli::use_this_host(s.value(), probe::read_this_host, source.notes); !e.empty()) return e;
    // A config.json keeps the description build_scenario gave it (path and repo).
    ChosenScenario chosen{
        *s, o.config ? QString::fromStdString(source.description) : ui::display_name(catalog, *s), {}, {}, {}, false};
    for (const auto& a : source.assumed) chosen.notes << QString("assumed: %1").arg(QString::fromStdString(a));
    for (const auto& n : source.notes) {
        chosen.notes << QString::fromStdString(n);
        chosen.warnings << QString::fromStdString(n);
    }
    return std::optional<ChosenScenario>(chosen);
}

}  // namespace kvscope::gui
