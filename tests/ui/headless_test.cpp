// kvscope on the command line: exports without a window, and clear errors.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <algorithm>

#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/exporter.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::read_all;

struct AppRun {
    int status = -1;
    QString out, err;
};

AppRun kvscope_app(const QStringList& args) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.remove("QT_QPA_PLATFORM");  // the app picks offscreen itself for exports
    env.remove("DISPLAY");
    env.remove("WAYLAND_DISPLAY");
    p.setProcessEnvironment(env);
    p.start(KVSCOPE_APP_PATH, args);
    if (!p.waitForFinished(60000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

TEST(Headless, ModelAndContextOptionsExportChartCsvAndReport) {
    QTemporaryDir dir;
    const AppRun r = kvscope_app({"--model",         "llama-3-70b",
                                  "--context",       "128k",
                                  "--kv-dtype",      "fp8",
                                  "--batch",         "8",
                                  "--gpu",           "h100-sxm",
                                  "--gpus",          "2",
                                  "--export-chart",  dir.filePath("c.svg"),
                                  "--export-csv",    dir.filePath("c.csv"),
                                  "--export-report", dir.filePath("r.pdf"),
                                  "--export-json",   dir.filePath("r.json")});
    ASSERT_EQ(r.status, 0) << r.err.toStdString();
    EXPECT_TRUE(QSvgRenderer(dir.filePath("c.svg")).isValid());
    EXPECT_TRUE(read_all(dir.filePath("c.csv")).startsWith("tokens,MHA bytes,GQA-8 bytes,MQA bytes\n"));
    EXPECT_TRUE(read_all(dir.filePath("r.pdf")).startsWith("%PDF"));
    EXPECT_TRUE(read_all(dir.filePath("r.json")).contains("\"fits\": false"));
    EXPECT_TRUE(r.err.contains("wrote " + dir.filePath("c.svg")));
}

TEST(Headless, SavedScenarioExportsAPngOfTheChosenSize) {
    QTemporaryDir dir;
    Scenario s;
    s.model_id = "kvscope-teaching-32l";
    s.arch = teaching_model();
    testing::write_all(dir.filePath("plan.kvscope.json"), QByteArray::fromStdString(scenario_to_json(s)));
    const AppRun r = kvscope_app({"--scenario", dir.filePath("plan.kvscope.json"), "--context", "32k", "--export-chart",
                                  dir.filePath("c.png"), "--size", "640x400", "--scale", "1"});
    ASSERT_EQ(r.status, 0) << r.err.toStdString();
    EXPECT_EQ(QImage(dir.filePath("c.png")).size(), QSize(640, 400));
}

TEST(Headless, DeploymentOptionsBesideASavedScenarioOverrideIt) {
    // The README: options beside --scenario FILE override the file, the deployment's too.
    QTemporaryDir dir;
    Scenario s;
    s.model_id = "llama-3-70b";
    s.arch = Catalog::builtin().find_model("llama-3-70b")->model.arch;
    testing::write_all(dir.filePath("plan ü.kvscope.json"), QByteArray::fromStdString(scenario_to_json(s)));
    const AppRun r = kvscope_app({"--scenario", dir.filePath("plan ü.kvscope.json"), "--gpu", "h200", "--engine",
                                  "sglang", "--export-json", dir.filePath("r.json")});
    ASSERT_EQ(r.status, 0) << r.err.toStdString();
    auto v = json::parse(read_all(dir.filePath("r.json")).toStdString());
    ASSERT_TRUE(v) << v.error.message;
    const json::Value* fit = v.value->find("fit");
    ASSERT_NE(fit, nullptr) << read_all(dir.filePath("r.json")).toStdString();
    EXPECT_EQ(fit->find("gpu")->as_string(), "h200");
    EXPECT_EQ(fit->find("engine")->as_string(), "sglang");
    // An option of another command is named, not ignored.
    const AppRun points = kvscope_app(
        {"--scenario", dir.filePath("plan ü.kvscope.json"), "--points", "5", "--export-json", dir.filePath("r2.json")});
    EXPECT_EQ(points.status, 2);
    EXPECT_TRUE(points.err.contains("--points: the window does not take this option")) << points.err.toStdString();
}

TEST(Headless, BadInputNamesTheOptionAndExitsWithTwo) {
    QTemporaryDir dir;
    AppRun r = kvscope_app({"--model", "llama-3-71b", "--export-chart", dir.filePath("c.svg")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("--model: unknown model 'llama-3-71b'")) << r.err.toStdString();
    EXPECT_TRUE(r.err.contains("did you mean"));
    r = kvscope_app({"--context", "12q", "--export-chart", dir.filePath("c.svg")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("--context")) << r.err.toStdString();
    // Where an export cannot be written, nothing is: said before the first file.
    r = kvscope_app({"--model", "llama-3-8b", "--kv-dtype", "fp8", "--export-csv", dir.filePath("c.csv"),
                     "--export-chart", dir.filePath("nowhere/c.svg")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("--export-chart: the folder '" + dir.filePath("nowhere") + "' does not exist"))
        << r.err.toStdString();
    EXPECT_FALSE(QFile::exists(dir.filePath("c.csv")));
    QDir().mkpath(dir.filePath("a folder.json"));
    r = kvscope_app({"--model", "gpt2", "--export-csv", dir.filePath("c.csv"), "--export-json",
                     dir.filePath("a folder.json"), "--export-report", dir.filePath("r.txt")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("--export-json: '" + dir.filePath("a folder.json") + "' is a folder"))
        << r.err.toStdString();
    EXPECT_TRUE(r.err.contains("--export-report: '" + dir.filePath("r.txt") + "': the report is a PDF"));
    EXPECT_FALSE(QFile::exists(dir.filePath("c.csv")));
    // A pipe is written in place, not replaced by a file: the CSV is the whole of standard output (what was written
    // is said on standard error).
    r = kvscope_app({"--model", "gpt2", "--export-csv", "/dev/stdout"});
    EXPECT_EQ(r.status, 0) << r.err.toStdString();
    EXPECT_TRUE(r.out.startsWith("tokens,MHA bytes")) << r.out.left(200).toStdString();
    for (const QString& line : r.out.trimmed().split('\n'))
        EXPECT_EQ(line.count(','), r.out.left(r.out.indexOf('\n')).count(',')) << line.toStdString();
    EXPECT_TRUE(r.err.contains("wrote /dev/stdout"));
    // The standard streams by name, devices by what they are; a plain file, wherever it is, is written whole.
    EXPECT_TRUE(ui::is_stream_path("/dev/stdout"));
    EXPECT_TRUE(ui::is_stream_path("/dev/null"));
    EXPECT_FALSE(ui::is_stream_path(dir.filePath("c.csv")));
    EXPECT_FALSE(ui::is_stream_path(dir.filePath("not there yet.json")));
    // Standard output appended to a file (>>): what the file held stays, the export follows it; the report too.
    const QString appended = dir.filePath("app.txt");
    QFile before(appended);
    ASSERT_TRUE(before.open(QIODevice::WriteOnly));
    before.write("EARLIER\n");
    before.close();
    QProcess p;
    p.setStandardOutputFile(appended, QIODevice::Append);
    p.start(KVSCOPE_APP_PATH, {"--model", "gpt2", "--export-csv", "/dev/stdout", "--export-report", "/dev/null"});
    ASSERT_TRUE(p.waitForFinished(60000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    EXPECT_EQ(p.exitCode(), 0) << err.toStdString();
    // A device has no end to seek to: written without Qt's "Cannot call seek on a sequential device".
    EXPECT_TRUE(err.contains("kvscope: wrote /dev/stdout\nkvscope: wrote /dev/null\n")) << err.toStdString();
    EXPECT_FALSE(err.contains("seek")) << err.toStdString();
    EXPECT_TRUE(QFileInfo("/dev/null").exists() && !QFileInfo("/dev/null").isFile());  // still the device
    QFile after(appended);
    ASSERT_TRUE(after.open(QIODevice::ReadOnly));
    EXPECT_TRUE(after.readAll().startsWith("EARLIER\ntokens,MHA bytes"));
    r = kvscope_app({"--export-chart", dir.filePath("c.svg")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("need a scenario"));
    EXPECT_FALSE(QFile::exists(dir.filePath("c.svg")));
}

TEST(Headless, TwoExportsToOneFileOrAChartFormatItCannotWriteAreRefusedBeforeAnyIsWritten) {
    QTemporaryDir dir;
    AppRun r = kvscope_app(
        {"--model", "gpt2", "--export-json", dir.filePath("same.json"), "--export-csv", dir.filePath("same.json")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("--export-json: '" + dir.filePath("same.json") +
                               "' is the file --export-csv writes; give each export its own file"))
        << r.err.toStdString();
    EXPECT_FALSE(QFile::exists(dir.filePath("same.json")));
    r = kvscope_app(
        {"--model", "gpt2", "--export-chart", dir.filePath("c.jpg"), "--export-csv", dir.filePath("c.csv")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.err.contains("--export-chart: '" + dir.filePath("c.jpg") + "': choose a .png, .svg or .pdf"))
        << r.err.toStdString();
    EXPECT_FALSE(QFile::exists(dir.filePath("c.csv")));
}

TEST(Headless, TheImportsWarningsAreInTheExportsAsInTheCli) {
    // A quantization KVScope does not model: kvscope-cli fit --json gives the import's note among its warnings;
    // the window's JSON gives it in kv and fit, and the report prints it.
    QTemporaryDir dir;
    QFile config(dir.filePath("config.json"));
    ASSERT_TRUE(config.open(QIODevice::WriteOnly));
    config.write(R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "vocab_size": 128256, "intermediate_size": 14336,
        "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "weirdq"}})");
    config.close();
    const AppRun r = kvscope_app({"--config", dir.filePath("config.json"), "--gpu", "h100-sxm", "--export-json",
                                  dir.filePath("r.json"), "--export-report", dir.filePath("r.pdf")});
    ASSERT_EQ(r.status, 0) << r.err.toStdString();
    const auto parsed = json::parse(read_all(dir.filePath("r.json")).toStdString());
    ASSERT_TRUE(parsed);
    const json::Value* v = &*parsed.value;
    const auto has = [](const json::Value* warnings, const std::string& fragment) {
        if (warnings == nullptr) return false;
        return std::any_of(warnings->items().begin(), warnings->items().end(),
                           [&](const json::Value& w) { return w.as_string().find(fragment) != std::string::npos; });
    };
    EXPECT_TRUE(has(v->find("kv")->find("warnings"), "'weirdq' is not modelled"));
    EXPECT_TRUE(has(v->find("fit")->find("warnings"), "'weirdq' is not modelled"));
    // The chart's curves carry the cache's warnings as sweep --json does (none here, but the key is there).
    EXPECT_NE(v->find("curves")->find("warnings"), nullptr);
}

TEST(Headless, AFileGivenAloneOpensInTheWindowAndOneThatDoesNotReadStillOpensTheWindow) {
    // kvscope.desktop runs "kvscope %f": the file opens in the window as File > Open would, and a file that does not
    // read opens the window on the last scenario with the problem said (on stderr too), never a bare exit.
    QTemporaryDir dir;
    const QString broken = dir.filePath("Übung 1/kaputt.kvscope.json");
    QDir().mkpath(QFileInfo(broken).absolutePath());
    QFile f(broken);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("{\"kvscope_scenario\": 1,");
    f.close();
    const auto window = [&](const QStringList& args) {
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
        env.insert("XDG_DATA_HOME", dir.filePath("data"));
        p.setProcessEnvironment(env);
        p.start(KVSCOPE_APP_PATH, QStringList{"--startup-probe"} + args);
        p.waitForFinished(60000);
        return AppRun{p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
    };
    AppRun r = window({broken});
    EXPECT_EQ(r.status, 0) << r.err.toStdString();
    EXPECT_TRUE(r.out.contains("kaputt.kvscope.json:1: not valid JSON")) << r.out.toStdString();
    r = window({"--scenario", broken});
    EXPECT_EQ(r.status, 0) << r.err.toStdString();
    EXPECT_TRUE(r.out.contains("message: Not opened: " + broken + ":1: not valid JSON")) << r.out.toStdString();
    EXPECT_TRUE(r.err.contains(broken + ":1: not valid JSON")) << r.err.toStdString();
    // A model's config.json given alone is imported.
    const QString config = dir.filePath("Übung 1/config.json");
    QFile c(config);
    ASSERT_TRUE(c.open(QIODevice::WriteOnly));
    c.write(R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
        "hidden_size": 512})");
    c.close();
    r = window({config});
    EXPECT_TRUE(r.out.contains("window: Übung 1")) << r.out.toStdString();  // named by its folder
    // A saved scenario given with --scenario alone is the file the window stands for (its title, Ctrl+S writes it).
    const QString saved = dir.filePath("Übung 1/plan.kvscope.json");
    QFile plan(saved);
    ASSERT_TRUE(plan.open(QIODevice::WriteOnly));
    Scenario gpt2;
    gpt2.model_id = "gpt2";
    gpt2.arch = Catalog::builtin().find_model("gpt2")->model.arch;
    plan.write(QByteArray::fromStdString(scenario_to_json(gpt2)));
    plan.close();
    r = window({"--scenario", saved});
    EXPECT_TRUE(r.out.contains("window: plan.kvscope.json")) << r.out.toStdString();
}

TEST(Headless, WithoutADisplayTheWindowlessOptionsAreSuggested) {
    const AppRun r = kvscope_app({"--model", "llama-3-8b"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.err.contains("no display here")) << r.err.toStdString();
    EXPECT_TRUE(r.err.contains("--export-chart"));
}

TEST(Headless, HelpListsTheExportsAndEveryOptionOfTheWindowsOwn) {
    const AppRun r = kvscope_app({"--help"});
    EXPECT_EQ(r.status, 0);
    // The window's own options come from the table the parser reads, --screenshots among them.
    for (const char* line :
         {"  --export-chart OUT  the chart: .png, .svg or .pdf", "  --export-report OUT a PDF report", "  --size WxH ",
          "  --scale F ", "  --log-bytes ", "  --linear-bytes ", "  --screenshots FOLDER", "  --version "})
        EXPECT_TRUE(r.out.contains(line)) << line << "\n" << r.out.toStdString();
    EXPECT_FALSE(r.out.contains("--startup-probe")) << "bench/'s option is not for users";
}

// The report's command: on a German or French desktop (ctest's @de_DE and @fr_FR runs, which the
// app inherits) the JSON must still be JSON, and a file saved anywhere opens with the same numbers.
TEST(Headless, ExportsAndScenariosAreTheSameInEveryLocale) {
    QTemporaryDir dir;
    const QString folder = dir.filePath(QString::fromUtf8("Prüfungen/Plan 1"));
    QDir().mkpath(folder);
    const AppRun r =
        kvscope_app({"--model", "llama-3-70b", "--context", "32k", "--gpu", "h100-sxm", "--gpus", "2", "--utilization",
                     "0.85", "--export-json", folder + "/x.json", "--export-csv", folder + "/x.csv"});
    ASSERT_EQ(r.status, 0) << r.err.toStdString();
    const std::string text = read_all(folder + "/x.json").toStdString();
    auto parsed = json::parse(text);
    ASSERT_TRUE(parsed) << parsed.error.message << "\n" << text;
    const json::Value* scenario = parsed.value->find("scenario");
    ASSERT_NE(scenario, nullptr);
    auto again = scenario_from_json(scenario->dump(), "x.json");
    ASSERT_TRUE(again.ok()) << again.error_text();
    ASSERT_TRUE(again->scenario.deployment.has_value());
    EXPECT_EQ(again->scenario.deployment->fraction, 0.85);
    EXPECT_TRUE(again->repaired.empty());
    EXPECT_TRUE(read_all(folder + "/x.csv").startsWith("tokens,"));

    // That scenario, saved, gives the same JSON again when opened by the app in this locale.
    testing::write_all(folder + "/Plan 1.kvscope.json", QByteArray::fromStdString(scenario->dump() + "\n"));
    const AppRun reopened =
        kvscope_app({"--scenario", folder + "/Plan 1.kvscope.json", "--export-json", folder + "/y.json"});
    ASSERT_EQ(reopened.status, 0) << reopened.err.toStdString();
    EXPECT_EQ(read_all(folder + "/y.json"), read_all(folder + "/x.json"));
}

}  // namespace
}  // namespace kvscope::ui
