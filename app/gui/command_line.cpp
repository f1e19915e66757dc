#include "command_line.h"

#include <map>

#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/scenario_model.h"

namespace kvscope::gui {

QString usage() {
    return QStringLiteral(
        "usage: kvscope [SCENARIO OPTIONS] [--scenario FILE] [EXPORTS]\n"
        "\n"
        "Opens the KVScope window; with an export option, writes the files without a window.\n"
        "\n"
        "Scenario (as in kvscope-cli):\n"
        "  --model ID | --config FILE   a catalog model (kvscope-cli models) or a config.json\n"
        "  --scenario FILE              a saved .kvscope.json (the options above and below override it)\n"
        "  --context N   --batch N   --kv-dtype T   --block-size N   --tp N   --pp N   --full-window\n"
        "  --mamba-cache-dtype T   --mamba-ssm-cache-dtype T   (a recurrent state's formats, as in vLLM)\n"
        "  --gpu ID   --gpus N   --engine E   --utilization F   --weight-dtype T\n"
        "  --gpu-memory SIZE   --gpu-bandwidth SIZE   --reserve SIZE   --overhead SIZE\n"
        "  --units gib|gb   --linear (linear token axis)   --log-bytes | --linear-bytes (bytes axis; default:\n"
        "  log when MHA would squash the model's own curve)   --data-dir DIR\n"
        "\n"
        "Exports (no window is shown):\n"
        "  --export-chart OUT.png|svg|pdf   --export-csv OUT.csv   --export-json OUT.json\n"
        "  --export-report OUT.pdf          --size WIDTHxHEIGHT (default 1200x700)   --scale F (PNG, default 2)\n"
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
    const std::map<QString, std::optional<QString>*> paths{
        {"--scenario", &c.scenario_file},      {"--export-chart", &c.export_chart},
        {"--export-csv", &c.export_csv},       {"--export-json", &c.export_json},
        {"--export-report", &c.export_report}, {"--screenshots", &c.screenshots_dir}};
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
    auto options = cli::parse_options(rest);
    if (!options) {
        for (const auto& e : options.errors()) errors.push_back(e);
    } else {
        c.options = *options;
        if (!c.options.command.empty())
            errors.push_back({c.options.command, "unexpected argument (kvscope takes options only; see --help)"});
        const cli::Options& o = c.options;
        c.has_scenario_options = o.model || o.config || o.context || o.batch || o.block_size || o.tp || o.pp ||
                                 o.full_window || o.kv_dtype || o.gpu || o.gpu_memory || o.engine || o.gpus ||
                                 o.utilization || o.weight_dtype || o.mamba_cache_dtype || o.mamba_ssm_cache_dtype;
    }
    if (c.exports() && c.screenshots_dir)
        errors.push_back({"--screenshots", "cannot be combined with the export options"});
    if (!errors.empty()) return errors;
    return c;
}

Result<std::optional<ChosenScenario>> scenario_from(const CommandLine& c, const Catalog& catalog) {
    const cli::Options& o = c.options;
    if (c.scenario_file) {
        if (o.model || o.config)
            return FieldError{"--scenario", "give either --scenario or --model/--config, not both"};
        auto s = read_scenario_file(c.scenario_file->toStdString());
        if (!s) return s.errors();
        ChosenScenario chosen{
            s->scenario, ui::display_name(catalog, s->scenario), {QString("from %1").arg(*c.scenario_file)}};
        if (!s->repaired.empty()) chosen.notes << QString::fromStdString(s->repaired);
        // Options given beside the file override it.
        Errors errors = cli::apply_workload_options(o, chosen.scenario);
        if (!errors.empty()) return errors;
        return std::optional<ChosenScenario>(chosen);
    }
    if (!c.has_scenario_options) return std::optional<ChosenScenario>();
    cli::ScenarioSource source;
    auto s = cli::build_scenario(o, catalog, source);
    if (!s) return s.errors();
    // A config.json keeps the description build_scenario gave it (path and repo).
    ChosenScenario chosen{
        *s, o.config ? QString::fromStdString(source.description) : ui::display_name(catalog, *s), {}};
    for (const auto& a : source.assumed) chosen.notes << QString("assumed: %1").arg(QString::fromStdString(a));
    for (const auto& n : source.notes) chosen.notes << QString::fromStdString(n);
    return std::optional<ChosenScenario>(chosen);
}

}  // namespace kvscope::gui
