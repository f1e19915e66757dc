#pragma once
// Everything the app writes for reports: the chart (PNG at a chosen size and scale,
// SVG, PDF), the data (CSV, JSON), and a one-page PDF report. Each file is written
// whole or not at all (QSaveFile); a failure returns a message naming the path and
// the reason, and the app's state is untouched.

#include <QImage>
#include <QSize>
#include <QString>

#include <optional>

namespace kvscope::ui {

class MemoryChart;
class ScenarioModel;

struct ChartSize {
    QSize logical{1200, 700};  // pixels (PNG) or points (SVG, PDF)
    double scale = 2.0;        // PNG only: device pixels per logical pixel
};

// Why nothing may be exported now (the inputs need attention: the results shown are the last valid ones, maybe of
// another model), or nothing. Every export checks it first.
std::optional<QString> export_problem(const ScenarioModel& model);
// The chart formats export_chart writes: the file's suffix is .png, .svg or .pdf.
bool is_chart_format(const QString& path);
// Standard output or error, a device or a pipe (/dev/stdout, /dev/null, a named pipe): written in place and
// appended to, never replaced by a file.
bool is_stream_path(const QString& path);
// The format is the file's suffix: .png, .svg or .pdf.
std::optional<QString> export_chart(MemoryChart& chart, const QString& path, ChartSize size = {});
// Memory against context: tokens then one column of exact bytes per head layout.
std::optional<QString> export_csv(const ScenarioModel& model, const QString& path);
// The scenario's inputs and every result, in the kvscope-cli JSON contract.
std::optional<QString> export_json(const ScenarioModel& model, const QString& path);
// One A4 page: inputs, the numbers, the formula, the comparison, the fit and the chart.
std::optional<QString> export_report(MemoryChart& chart, const ScenarioModel& model, const QString& path);

// The chart as an image, for the clipboard.
QImage chart_image(MemoryChart& chart, ChartSize size = {});
// The JSON document export_json writes.
QByteArray results_json(const ScenarioModel& model);

}  // namespace kvscope::ui
