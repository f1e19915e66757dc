// The desktop app's two speed targets, printed with ratios (never asserted):
//   1. input change → chart repainted, three 512-point series: median under 16 ms;
//   2. cold start → first painted window: under 500 ms.
// Each figure is set beside a ceiling measured in the same run: a repaint with no
// input change, and starting the same program only to print its version.
#include <QApplication>
#include <QElapsedTimer>
#include <QLineSeries>
#include <QProcess>
#include <QTabWidget>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "kvscope/calculator/catalog.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/scenario_model.h"

namespace {

struct Stats {
    double median = 0, p90 = 0, min = 0;
};

Stats stats_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[v.size() * 9 / 10], v.front()};
}

void print(const char* what, const Stats& s, double target_ms, const char* ceiling_name, const Stats& ceiling) {
    std::printf(
        "%-34s median %8.2f ms  p90 %8.2f ms  min %8.2f ms  | target %6.0f ms: %.3f of it  | %.2f× %s (%.2f ms)\n",
        what, s.median, s.p90, s.min, target_ms, s.median / target_ms, s.median / ceiling.median, ceiling_name,
        ceiling.median);
}

// Milliseconds to run the app with `args` until it exits (offscreen).
double spawn_ms(const QStringList& args, double* first_paint_ms) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p.setProcessEnvironment(env);
    QElapsedTimer t;
    t.start();
    p.start(KVSCOPE_APP_PATH, args);
    p.waitForFinished(30000);
    const double ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
    if (first_paint_ms) {
        const QByteArray out = p.readAllStandardOutput();
        const auto at = out.indexOf("first-paint-ms ");
        *first_paint_ms = at >= 0 ? out.mid(at + 15).split('\n').front().trimmed().toDouble() : -1;
    }
    return ms;
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    constexpr int kSamples = 60;

    kvscope::ui::MainWindow window(kvscope::Catalog::builtin(), /*restore=*/false);
    window.resize(1360, 860);
    window.show();
    window.tabs()->setCurrentIndex(kvscope::ui::MainWindow::ChartTab);
    QApplication::processEvents();
    auto* chart = window.chart();
    auto* model = window.model();
    // Linear token spacing keeps all 512 points of each series distinct (log spacing merges
    // the small token counts), so every series really has 512 points.
    model->loadCatalogModel("llama-3.1-405b");
    chart->setLogTokens(false);
    QApplication::processEvents();
    std::printf("chart: MHA, GQA, MQA with %lld, %lld, %lld points (plus weights line and markers)\n",
                static_cast<long long>(chart->variantSeries(0)->count()),
                static_cast<long long>(chart->variantSeries(1)->count()),
                static_cast<long long>(chart->variantSeries(2)->count()));

    std::vector<double> change, paint_only;
    for (int i = 0; i < kSamples + 5; ++i) {
        QElapsedTimer t;
        t.start();
        const std::uint64_t heads = i % 2 ? 8 : 16;
        model->edit("bench", [heads](kvscope::Scenario& s) { s.arch.kv_heads = heads; });
        chart->viewport()->repaint();  // synchronous: returns once the new frame is painted
        const double change_ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
        t.restart();
        chart->viewport()->repaint();
        const double paint_ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
        if (i >= 5) {  // warm-up
            change.push_back(change_ms);
            paint_only.push_back(paint_ms);
        }
    }
    const Stats paint = stats_of(paint_only);
    print("input change -> chart repainted", stats_of(change), 16, "a repaint alone", paint);

    std::vector<double> start, first_paint, version;
    for (int i = 0; i < 12; ++i) {
        double fp = 0;
        const double ms = spawn_ms({"--startup-probe"}, &fp);
        version.push_back(spawn_ms({"--version"}, nullptr));
        if (i >= 2) {
            start.push_back(ms);
            first_paint.push_back(fp);
        }
    }
    const Stats ceiling = stats_of(version);
    print("cold start -> first paint (in app)", stats_of(first_paint), 500, "starting for --version", ceiling);
    print("cold start -> exit after paint", stats_of(start), 500, "starting for --version", ceiling);
    return 0;
}
