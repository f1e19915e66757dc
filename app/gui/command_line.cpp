#include "command_line.h"

#include <QDir>
#include <QFileInfo>
#include <iterator>
#include <map>
#include <utility>

#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::gui {

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
           QString::fromStdString(cli::options_help(cli::Command::window)) +
           QStringLiteral(
               "chart:\n"
               "  --log-bytes | --linear-bytes   the bytes axis (default: log when MHA would squash the model's own "
               "curve)\n"
               "\n"
               "Exports (no window is shown):\n"
               "  --export-chart OUT.png|svg|pdf   --export-csv OUT.csv   --export-json OUT.json\n"
               "  --export-report OUT.pdf          --size WIDTHxHEIGHT (default 1200x700)   --scale F (PNG, default "
               "2)\n"
               "\n"
               "  -h, --help   --version\n"
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
    const std::map<QString, std::optional<QString>*> paths{{"--export-chart", &c.export_chart},
                                                           {"--export-csv", &c.export_csv},
                                                           {"--export-json", &c.export_json},
                                                           {"--export-report", &c.export_report},
                                                           {"--screenshots", &c.screenshots_dir}};
    for (qsizetype i = 0; i < args.size(); ++i) {
        QString arg = args.at(i);
        std::optional<QString> inline_value;
        if (const qsizetype eq = arg.indexOf('='); arg.startsWith("--") && eq > 0) {
            inline_value = arg.mid(eq + 1);
            arg = arg.left(eq);
        }
        auto value = [&]() -> std::optional<QString> {
            if (inline_value) return inline_value;
            if (i + 1 < args.size()) return args.at(++i);
            errors.push_back({arg.toStdString(), "needs a value"});
            return std::nullopt;
        };
        if (arg == "-h" || arg == "--help")
            c.help = true;
        else if (arg == "--version")
            c.version = true;
        else if (arg == "--startup-probe")
            c.startup_probe = true;
        else if (arg == "--log-bytes")
            c.log_bytes = true;
        else if (arg == "--linear-bytes")
            c.log_bytes = false;
        else if (auto p = paths.find(arg); p != paths.end())
            *p->second = value();
        else if (arg == "--size") {
            if (auto v = value()) {
                const QStringList wh = v->toLower().split('x');
                bool ok_w = false, ok_h = false;
                if (wh.size() == 2) c.chart_size.logical = QSize(wh[0].toInt(&ok_w), wh[1].toInt(&ok_h));
                if (!ok_w || !ok_h)
                    errors.push_back(
                        {"--size", "'" + v->toStdString() + "' is not WIDTHxHEIGHT (for example 1600x900)"});
            }
        } else if (arg == "--scale") {
            if (auto v = value()) {
                bool ok = false;
                c.chart_size.scale = v->toDouble(&ok);
                if (!ok) errors.push_back({"--scale", "'" + v->toStdString() + "' is not a number (for example 2)"});
            }
        } else {
            // Everything else is a scenario option, read exactly as kvscope-cli reads it.
            // (values of those options pass through here too, in order).
            rest.push_back(args.at(i).toStdString());
        }
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
    for (const auto& [option, path] :
         {std::pair{"--export-chart", &c.export_chart}, std::pair{"--export-csv", &c.export_csv},
          std::pair{"--export-json", &c.export_json}, std::pair{"--export-report", &c.export_report}}) {
        if (!*path) continue;
        const QFileInfo info(**path);
        if (info.isDir())
            errors.push_back({option, "'" + (*path)->toStdString() + "' is a folder; give a file name in it"});
        else if (!info.absoluteDir().exists())
            errors.push_back({option, "the folder '" + info.absolutePath().toStdString() + "' does not exist"});
    }
    // Two exports to one file: the second would silently replace the first.
    const std::pair<const char*, const std::optional<QString>*> exports[] = {{"--export-chart", &c.export_chart},
                                                                             {"--export-csv", &c.export_csv},
                                                                             {"--export-json", &c.export_json},
                                                                             {"--export-report", &c.export_report}};
    for (std::size_t i = 0; i < std::size(exports); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (*exports[i].second && *exports[j].second &&
                QFileInfo(**exports[i].second).absoluteFilePath() == QFileInfo(**exports[j].second).absoluteFilePath())
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
        return std::optional<ChosenScenario>(chosen);
    }
    if (!c.has_scenario_options) return std::optional<ChosenScenario>();
    cli::ScenarioSource source;
    auto s = cli::build_scenario(o, catalog, source);
    if (!s) return s.errors();
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
