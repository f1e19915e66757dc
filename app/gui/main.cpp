// kvscope: the desktop app. With export options it renders without a window.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QTimer>

#include <cstdio>
#include <cstdlib>

#include "command_line.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/scenario_model.h"
#include "screenshots.h"

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void print_error(const QString& text) { std::fprintf(stderr, "kvscope: %s\n", qPrintable(text)); }

bool wants_no_window(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.starts_with("--export-") || a.starts_with("--screenshots") || a == "--help" || a == "-h" ||
            a == "--version")
            return true;
    }
    return false;
}

// Headless exports: the same model and chart the window shows, never shown.
int run_exports(const kvscope::gui::CommandLine& c, const kvscope::gui::ChosenScenario& chosen,
                const kvscope::Catalog& catalog) {
    using namespace kvscope::ui;
    for (const QString& said : chosen.said) print_error(said);
    ScenarioModel model(catalog);
    model.setUnits(c.options.units);
    model.replace(chosen.scenario, chosen.description, chosen.notes, "command line", chosen.warnings);
    if (!model.errors().empty()) {
        print_error(QString::fromStdString(kvscope::join_errors(model.errors())));
        return kExitUsage;
    }
    MemoryChart chart(&model);
    chart.setLogTokens(!c.options.linear);
    if (c.log_bytes) chart.setLogBytes(*c.log_bytes);
    chart.resize(c.chart_size.logical);
    int status = 0;
    auto check = [&status](const std::optional<QString>& problem, const QString& path) {
        if (problem) {
            print_error(*problem);
            status = kExitFailed;
        } else {
            // On stderr: an export to /dev/stdout is the whole of standard output.
            std::fprintf(stderr, "kvscope: wrote %s\n", qPrintable(path));
        }
    };
    if (c.export_chart) check(export_chart(chart, *c.export_chart, c.chart_size), *c.export_chart);
    if (c.export_csv) check(export_csv(model, *c.export_csv), *c.export_csv);
    if (c.export_json) check(export_json(model, *c.export_json), *c.export_json);
    if (c.export_report) check(export_report(chart, model, *c.export_report), *c.export_report);
    return status;
}

}  // namespace

// Without a window, the offscreen platform's notes about window hints are noise on stderr.
static void quiet_offscreen(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (message.contains("propagateSizeHints") || message.contains("XDG_RUNTIME_DIR")) return;
    std::fprintf(stderr, "%s\n", qPrintable(qFormatLogMessage(type, context, message)));
}

namespace {

int run_app(int argc, char** argv) {
    QElapsedTimer since_start;
    since_start.start();
    // Exports and screenshots never show a window, so they need no display.
    if (wants_no_window(argc, argv)) {
        if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
        qInstallMessageHandler(quiet_offscreen);
    } else if (std::getenv("QT_QPA_PLATFORM") == nullptr && std::getenv("DISPLAY") == nullptr &&
               std::getenv("WAYLAND_DISPLAY") == nullptr) {
        // Qt would abort with a platform-plugin error; say what is wrong and what works instead.
        std::fputs(
            "kvscope: no display here (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open.\n"
            "  Write files without a window: kvscope --model llama-3-8b --export-chart chart.svg (see --help),\n"
            "  or use kvscope-cli for tables and JSON.\n",
            stderr);
        return kExitFailed;
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName("KVScope");
    QApplication::setApplicationName("kvscope");
    QApplication::setApplicationVersion(QStringLiteral(KVSCOPE_VERSION));
    QApplication::setWindowIcon(QIcon(":/kvscope/kvscope.svg"));

    auto parsed = kvscope::gui::parse_command_line(app.arguments().mid(1));
    if (!parsed) {
        print_error(QString::fromStdString(parsed.error_text()) + " (kvscope --help lists the options)");
        return kExitUsage;
    }
    const kvscope::gui::CommandLine& c = *parsed;
    if (c.help) {
        std::fputs(qPrintable(kvscope::gui::usage()), stdout);
        return 0;
    }
    if (c.version) {
        std::printf("kvscope %s\n", KVSCOPE_VERSION);
        return 0;
    }
    std::vector<std::string> problems;
    const kvscope::Catalog catalog =
        kvscope::Catalog::with_user_folder(c.options.data_dir.value_or(kvscope::default_user_folder()), problems);
    for (const auto& p : problems) print_error(QString::fromStdString(p));

    auto chosen = kvscope::gui::scenario_from(c, catalog);
    if (!chosen && (c.exports() || c.screenshots_dir)) {
        print_error(QString::fromStdString(chosen.error_text()));
        return kExitUsage;
    }
    if (c.exports()) {
        if (!*chosen) {
            print_error("the exports need a scenario: --model ID, --config FILE or --scenario FILE");
            return kExitUsage;
        }
        return run_exports(c, **chosen, catalog);
    }
    if (c.screenshots_dir) return kvscope::gui::render_screenshots(catalog, *c.screenshots_dir) ? 0 : kExitFailed;

    // The startup probe measures a fresh start and must not touch the user's settings.
    kvscope::ui::MainWindow window(catalog, /*restore=*/!c.startup_probe);
    if (!chosen) {
        // A broken --scenario file or a config.json that does not read: the window opens on the last scenario and
        // says what is wrong, as File ▸ Open does (and on stderr, for whoever started it from a terminal).
        print_error(QString::fromStdString(chosen.error_text()));
        window.messages()->showMessage(QObject::tr("Not opened: %1").arg(QString::fromStdString(chosen.error_text())),
                                       kvscope::ui::MessageBar::Kind::error);
    } else if (c.scenario_file && !c.has_scenario_options) {
        // A saved scenario alone: opened as File > Open opens it, so the window stands for the file (Ctrl+S writes
        // it, Open recent lists it). With options beside it, it is another scenario, not the file's.
        window.openScenarioFile(*c.scenario_file);
    } else if (*chosen) {
        window.showScenario((*chosen)->scenario, (*chosen)->description, (*chosen)->notes, (*chosen)->warnings);
        // The file's fields this version does not read (or its repaired numbers), said as File > Open says them.
        if (!(*chosen)->said.isEmpty())
            window.messages()->showMessage((*chosen)->said.join('\n'), (*chosen)->said_problem
                                                                           ? kvscope::ui::MessageBar::Kind::error
                                                                           : kvscope::ui::MessageBar::Kind::info);
    }
    if (c.open_file) window.openAny(*c.open_file);
    if (c.options.linear) window.chart()->setLogTokens(false);
    if (c.log_bytes) window.chart()->setLogBytes(*c.log_bytes);
    if (c.startup_probe) {
        // bench/: report the time to the first painted frame, then leave.
        struct FirstPaint : QObject {
            QElapsedTimer* timer;
            kvscope::ui::MainWindow* shown;
            FirstPaint(QElapsedTimer* t, kvscope::ui::MainWindow* w) : timer(t), shown(w) {}
            bool eventFilter(QObject*, QEvent* e) override {
                if (e->type() == QEvent::Paint && timer->isValid()) {
                    const double ms = static_cast<double>(timer->nsecsElapsed()) / 1e6;
                    std::printf("first-paint-ms %s\n", kvscope::number_text(ms, kvscope::Notation::fixed, 2).c_str());
                    // What the window opened on, for the tests of kvscope FILE and of a file that does not open.
                    std::printf("window: %s\nmessage: %s\n", qPrintable(shown->windowTitle()),
                                qPrintable(shown->messages()->isVisible() ? shown->messages()->text() : QString()));
                    std::fflush(stdout);
                    timer->invalidate();
                    QTimer::singleShot(0, qApp, &QApplication::quit);
                }
                return false;
            }
        };
        auto* probe = new FirstPaint(&since_start, &window);
        window.installEventFilter(probe);
    }
    window.show();
    return QApplication::exec();
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run_app(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvscope: internal error: %s\n", e.what());
        return 1;
    }
}
