#include "kvscope/ui/exporter.h"

#include <QBuffer>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <algorithm>

#include "kvscope/calculator/explain.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/weights.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

bool is_stream_path(const QString& path) {
    // The standard streams by name: /dev/stdout links to /proc/self/fd/1, which may be a plain file (a >>
    // redirection), so what it leads to cannot decide. Else what the path is: a device or a named pipe, never a
    // plain file (one in /dev/shm is written whole, as anywhere).
    if (path == "/dev/stdout" || path == "/dev/stderr" || path.startsWith("/dev/fd/") ||
        path.startsWith("/proc/self/fd/"))
        return true;
    const QFileInfo info(path);
    return info.exists() && !info.isDir() && !info.isFile();
}

namespace {

std::optional<QString> write_file(const QString& path, const QByteArray& bytes) {
    const QFileInfo info(path);
    if (info.isDir()) return QObject::tr("Could not write %1: it is a folder; give a file name").arg(path);
    if (is_stream_path(path)) {
        // Standard output or error, a pipe or a device: written in place, appended, never renamed over. A save file
        // would replace the device with a plain file (as root, /dev/null), and /dev/stdout redirected with >> to a
        // file would lose what the file held.
        // Appended only where it leads to a plain file (/dev/fd/N of a >> redirection): a device or a pipe has no end
        // to seek to (Qt warns "Cannot call seek on a sequential device" for /dev/null).
        QFile device;
        const bool open =
            path == "/dev/stdout" ? device.open(1, QIODevice::WriteOnly)
            : path == "/dev/stderr"
                ? device.open(2, QIODevice::WriteOnly)
                : (device.setFileName(path),
                   device.open(info.isFile() ? QIODevice::WriteOnly | QIODevice::Append : QIODevice::WriteOnly));
        if (!open || device.write(bytes) != bytes.size() || !device.flush())
            return QObject::tr("Could not write %1: %2").arg(path, device.errorString());
        return std::nullopt;
    }
    // A plain file is written whole or not at all: a new file beside it, renamed over it when complete.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
    if (file.write(bytes) != bytes.size() || !file.commit())
        return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
    return std::nullopt;
}

QByteArray pdf_of(const std::function<void(QPainter&, QPdfWriter&)>& draw, const QPageSize& page, const QString& title,
                  int resolution = 72) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter pdf(&buffer);
    pdf.setPageSize(page);
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setResolution(resolution);  // 72: one unit = one point
    pdf.setCreator("KVScope");
    pdf.setTitle(title);
    QPainter painter(&pdf);
    draw(painter, pdf);
    painter.end();
    return bytes;
}

}  // namespace

std::optional<QString> export_problem(const ScenarioModel& model) {
    // While inputs need attention the window keeps the last valid results, which may be another model's: an export
    // would give them as this scenario's. Nothing is written until the inputs are valid.
    if (model.hasResults() && model.errors().empty()) return std::nullopt;
    return QObject::tr("Nothing exported: the inputs need attention (%1)").arg(q(join_errors(model.errors())));
}

QImage chart_image(MemoryChart& chart, ChartSize size) {
    QImage image(size.logical * size.scale, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(size.scale);
    image.fill(chart.palette().color(QPalette::Base));
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    chart.renderTo(&painter, QRectF(QPointF(0, 0), QSizeF(size.logical)), QSizeF(size.logical));
    return image;
}

bool is_chart_format(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == "png" || suffix == "svg" || suffix == "pdf";
}

std::optional<QString> export_chart(MemoryChart& chart, const QString& path, ChartSize size) {
    if (!is_chart_format(path)) return QObject::tr("%1: choose a .png, .svg or .pdf file name for the chart").arg(path);
    if (auto problem = export_problem(chart.model())) return problem;
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (size.logical.width() < 100 || size.logical.height() < 100 || size.logical.width() > 20000 ||
        size.logical.height() > 20000)
        return QObject::tr("Chart size %1×%2 is outside 100…20000 pixels")
            .arg(size.logical.width())
            .arg(size.logical.height());
    if (!(size.scale >= 0.5 && size.scale <= 8)) return QObject::tr("Chart scale %1 is outside 0.5…8").arg(size.scale);
    const QRectF target(QPointF(0, 0), QSizeF(size.logical));
    // Text is laid out at the screen's resolution; SVG and PDF draw it at the same, so it keeps the
    // size it has beside the lines in the window and the PNG.
    const int dpi = chart.logicalDpiY();
    const QString title = chart.titleText() + " (" + chart.subtitleText() + ")";
    QByteArray bytes;
    if (suffix == "png") {
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        if (!chart_image(chart, size).save(&buffer, "PNG")) return QObject::tr("Could not encode the PNG image");
    } else if (suffix == "svg") {
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setSize(size.logical);
        svg.setViewBox(target);
        svg.setResolution(dpi);
        svg.setTitle(chart.titleText());
        svg.setDescription(chart.subtitleText());
        QPainter painter(&svg);
        chart.renderTo(&painter, target, QSizeF(size.logical));
        painter.end();
    } else {  // pdf
        // The page is the chart's size in points; drawn at the screen's resolution, it fills the page.
        const QRectF page(QPointF(0, 0), QSizeF(size.logical) * (dpi / 72.0));
        bytes = pdf_of([&](QPainter& p, QPdfWriter&) { chart.renderTo(&p, page, QSizeF(size.logical)); },
                       QPageSize(QSizeF(size.logical), QPageSize::Point), title, dpi);
    }
    return write_file(path, bytes);
}

std::optional<QString> export_csv(const ScenarioModel& model, const QString& path) {
    if (auto problem = export_problem(model)) return problem;
    return write_file(path, QByteArray::fromStdString(curves_csv(model.results().curves)));
}

QByteArray results_json(const ScenarioModel& model) {
    const Results& r = model.results();
    json::Value o = json::Value::object();
    o.set("kvscope_results", json::Value::number(std::uint64_t{1}));
    o.set("scenario", scenario_json(r.scenario));
    // As kvscope-cli kv, fit and sweep --json give them: the import's notes in the kv and fit warnings, the
    // cache's in the curves'.
    const std::vector<std::string> imported = std_strings(model.importWarnings());
    o.set("kv", with_warnings(kv_report_json(r.scenario, r.kv, r.variants), imported));
    if (r.fit && r.decode)
        o.set("fit", with_warnings(
                         fit_report_json(r.scenario, *r.fit, *r.decode, r.measured_step ? &*r.measured_step : nullptr),
                         imported));
    json::Value curves = curves_json(r.scenario, r.curves);
    curves.set("warnings", json::Value::strings(curve_warnings(r)));
    o.set("curves", std::move(curves));
    return QByteArray::fromStdString(o.dump() + "\n");
}

std::optional<QString> export_json(const ScenarioModel& model, const QString& path) {
    if (auto problem = export_problem(model)) return problem;
    return write_file(path, results_json(model));
}

std::optional<QString> export_report(MemoryChart& chart, const ScenarioModel& model, const QString& path) {
    if (auto problem = export_problem(model)) return problem;
    const Results& r = model.results();
    const Scenario& s = r.scenario;
    const UnitSystem units = model.units();
    // The model's name as loaded, "(edited)" when its shape was changed since (an imported model keeps its own).
    const QString report_name =
        model.catalog().find_model(s.model_id) ? shown_model_name(model.catalog(), s) : model.description();

    auto draw = [&](QPainter& p, QPdfWriter&) {
        const double left = 40, width = 595 - 80;
        double y = 40;
        QFont base("DejaVu Sans");
        base.setPointSizeF(9);
        auto block = [&](const QString& text, double size, bool bold = false, QColor color = Qt::black) {
            QFont f = base;
            f.setPointSizeF(size);
            f.setBold(bold);
            p.setFont(f);
            p.setPen(color);
            const QRectF bounds = p.boundingRect(QRectF(left, y, width, 1000), Qt::TextWordWrap, text);
            p.drawText(QRectF(left, y, width, bounds.height()), Qt::TextWordWrap, text);
            y += bounds.height() + 4;
        };
        block(QObject::tr("KV cache report — %1").arg(report_name), 16, true);
        block(QObject::tr("KVScope %1 · %2")
                  .arg(QStringLiteral(KVSCOPE_VERSION), QDateTime::currentDateTime().toString("yyyy-MM-dd HH:mm")),
              8, false, Qt::darkGray);
        y += 4;
        block(QObject::tr("Inputs"), 11, true);
        QStringList inputs;
        inputs << QObject::tr("%1 layers, %2 query heads, %3 KV heads (%4), head dim %5, model dim %6")
                      .arg(s.arch.layers)
                      .arg(s.arch.query_heads)
                      .arg(s.arch.kv_heads)
                      .arg(q(attention_label(s.arch)))
                      .arg(s.arch.head_dim_k)
                      .arg(s.arch.hidden_size);
        inputs << QObject::tr("KV format %1, context %2 tokens, %3, block size %4, TP %5 × PP %6%7")
                      .arg(q(std::string(to_string(s.kv_dtype))), q(format_count(s.workload.context_tokens)),
                           q(format_count_of(s.workload.batch, "sequence", "sequences")))
                      .arg(s.workload.block_size)
                      .arg(s.parallel.tp)
                      .arg(s.parallel.pp)
                      .arg(s.workload.full_window ? QObject::tr(", full context kept on sliding and chunked layers")
                                                  : QString());
        if (s.deployment)
            inputs << QObject::tr("%1 × %2 (%3 each), %4 rule at %5, weights %6")
                              .arg(s.deployment->gpu_count)
                              .arg(q(s.deployment->gpu.name), q(format_bytes(s.deployment->gpu.memory_bytes, units)),
                                   q(std::string(to_string(s.deployment->engine))))
                              .arg(q(fraction_text(r.fit ? r.fit->fraction : s.deployment->fraction)))
                              .arg(q(weights_text(*s.deployment))) +
                          (s.deployment->draft ? QObject::tr(", draft %1 (%2)")
                                                     .arg(q(s.deployment->draft->name),
                                                          q(std::string(to_string(s.deployment->draft->method))))
                           : s.deployment->mtp ? QObject::tr(", its MTP layers as a draft")
                                               : QString());
        block(inputs.join('\n'), 9);
        y += 4;
        block(QObject::tr("KV cache: %1").arg(both_units(r.kv.total_bytes, units)), 13, true);
        block(QObject::tr("%1 bytes · per token %2 · per sequence %3 · per GPU %4")
                  .arg(q(format_count(r.kv.total_bytes)), q(format_bytes(r.kv.bytes_per_token, units)),
                       q(format_bytes(r.kv.per_sequence_bytes, units)), q(format_bytes(r.kv.per_gpu_bytes, units))),
              9);
        // A recurrent state is memory too, beside the cache (kvscope-cli kv: "state", "KV + state").
        if (r.kv.state_bytes > 0)
            block(QObject::tr("Recurrent state %1 (%2 bytes), %3 per sequence whatever the context · KV + state %4")
                      .arg(q(format_bytes(r.kv.state_bytes, units)), q(format_count(r.kv.state_bytes)),
                           q(format_bytes(r.kv.state_bytes_per_sequence, units)), both_units(r.kv.memory_bytes, units)),
                  9);
        block(q(r.formula), 8, false, QColor(0x33, 0x33, 0x33));
        const QColor note_color(0xb3, 0x5c, 0x00);
        for (const auto& w : curve_warnings(r)) block(QObject::tr("Note: %1").arg(q(w)), 8, false, note_color);
        // What the model's import said (an unknown quantization, the SSM state's format), as kvscope-cli says it.
        for (const QString& w : model.importWarnings()) block(QObject::tr("Note: %1").arg(w), 8, false, note_color);
        y += 4;
        block(QObject::tr("Head layouts"), 11, true);
        QStringList rows;
        for (const Variant& v : r.variants)
            rows << QObject::tr("%1%2: %3, %4, %5 of MHA")
                        .arg(q(v.name), (v.is_model ? QObject::tr(" (this model)") : QString()) +
                                            (v.replication > 1 ? ", " + q(replication_text(v.replication)) : QString()))
                        .arg(q(format_count_of(v.kv_heads, "KV head", "KV heads")))
                        .arg(q(format_bytes(v.kv_cache_bytes, units)))
                        .arg(q(format_percent(v.percent_of_mha)));
        block(rows.join('\n'), 9);
        if (r.fit && r.decode) {
            y += 4;
            block(QObject::tr("Deployment fit"), 11, true);
            const FitReport& f = *r.fit;
            // The fit's warnings and its own "not exact:" reasons (an estimated reserve, the pipeline's even split),
            // as fit --json gives them, less those the cache's above said.
            for (const auto& w : warnings_and_not_exact(f.warnings, f.notes))
                if (std::find(r.kv.warnings.begin(), r.kv.warnings.end(), w) == r.kv.warnings.end())
                    block(QObject::tr("Note: %1").arg(q(w)), 8, false, note_color);
            const std::uint64_t host_short =
                f.offload && f.headroom_bytes_per_gpu >= 0 ? f.offload->host_short_bytes() : 0;
            block((f.fits                    ? QObject::tr("Fits, %1 to spare per GPU")
                   : host_short > 0          ? QObject::tr("Does not fit, the host's RAM short by %1")
                   : f.headroom_from_startup ? QObject::tr("Does not fit, short by %1 per GPU at vLLM's start check")
                                             : QObject::tr("Does not fit, short by %1 per GPU"))
                          .arg(q(format_bytes(host_short > 0
                                                  ? host_short
                                                  : static_cast<std::uint64_t>(std::abs(f.headroom_bytes_per_gpu)),
                                              units))) +
                      QObject::tr(" · max %1 at this context · max context %2 · decode floor %3")
                          .arg(q(format_count_of(f.max_batch, "sequence", "sequences")),
                               f.max_context_unbounded
                                   ? QObject::tr("no limit: %1").arg(q(f.unbounded_reason))
                                   : QObject::tr("%1 tokens at this batch%2")
                                         .arg(q(format_count(f.max_context)), f.max_context_limited_by_model
                                                                                  ? QObject::tr(" (the model's limit)")
                                                                                  : QString()))
                          .arg(q(decode_floor_text(*r.decode, f.fits))),
                  9);
            // The budget and what the fit counts against it, the draft's or MTP layers' cache and the engine's
            // pages included (kvscope-cli fit: "KV budget", "KV needed").
            // vLLM's hybrid pages need more than the plain sum of the cache and the state (as fit says it).
            block(QObject::tr("KV budget %1 · needed %2 per GPU (%6KV %3%4) · weights %5 per GPU")
                      .arg(q(kv_budget_text(f, units)), q(format_bytes(f.memory_bytes_per_gpu_needed, units)),
                           q(format_bytes(f.kv_bytes_per_gpu, units)),
                           f.state_bytes_per_gpu > 0
                               ? QObject::tr(" + state %1").arg(q(format_bytes(f.state_bytes_per_gpu, units)))
                               : QString(),
                           q(format_bytes(f.weights_bytes_per_gpu, units)),
                           f.engine_pages ? QObject::tr("in vLLM's hybrid layout; plain sum ") : QString()),
                  9);
            // llama.cpp's split between the GPU and the host, in kvscope-cli fit's words.
            if (f.offload)
                block(QObject::tr("Split: %1 · host: %2")
                          .arg(q(offload_text(*f.offload)), q(offload_host_text(*f.offload))),
                      9);
        }
        y += 6;
        // The legend under the chart, two entries to a line, each drawn as its line is: beside a plot a page wide it
        // would cut its own figures.
        const QList<MemoryChart::LegendEntry> legend = chart.legendEntries();
        const qsizetype legend_rows = (legend.size() + 1) / 2;  // two entries a line
        const double legend_line = 12, legend_height = legend_line * static_cast<double>(legend_rows);
        const double chart_height = std::min(400.0, 842 - 36 - y - legend_height);
        // Laid out at 640 logical pixels for the page's 515 points: its title and ticks are read at 80% of their
        // size in the window (at 900 they were 57%, the title too small to read on paper).
        constexpr double kChartLayoutWidth = 640;
        chart.renderTo(&p, QRectF(left, y, width, chart_height),
                       QSizeF(kChartLayoutWidth, kChartLayoutWidth * chart_height / width), false);
        y += chart_height + 4;
        QFont legend_font = base;
        legend_font.setPointSizeF(8);
        p.setFont(legend_font);
        for (qsizetype i = 0; i < legend.size(); ++i) {
            const MemoryChart::LegendEntry& e = legend.at(i);
            const qsizetype line = i / 2;  // the entry's line, two to a line
            const double x = left + (i % 2 == 0 ? 0 : width / 2), row = y + legend_line * static_cast<double>(line);
            const double mid = row + legend_line / 2;
            if (e.dot) {
                p.setPen(Qt::NoPen);
                p.setBrush(e.pen.color());
                if (e.shape == QScatterSeries::MarkerShapeRectangle)
                    p.drawRect(QRectF(x + 7, mid - 3, 6, 6));
                else
                    p.drawEllipse(QPointF(x + 10, mid), 3, 3);
                p.setBrush(Qt::NoBrush);
            } else {
                QPen pen = e.pen;
                pen.setWidthF(std::min(pen.widthF(), 2.0));
                p.setPen(pen);
                p.drawLine(QPointF(x, mid), QPointF(x + 20, mid));
            }
            p.setPen(Qt::black);
            p.drawText(QRectF(x + 26, row, width / 2 - 28, legend_line), Qt::AlignVCenter | Qt::AlignLeft, e.name);
        }
    };
    return write_file(path,
                      pdf_of(draw, QPageSize(QPageSize::A4), QObject::tr("KV cache report — %1").arg(report_name)));
}

}  // namespace kvscope::ui
