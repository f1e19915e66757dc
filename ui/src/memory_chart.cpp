#include "kvscope/ui/memory_chart.h"

#include <QCategoryAxis>
#include <QGraphicsLayout>
#include <QGraphicsLineItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "kvscope/ui/axis_ticks.h"
#include "kvscope/ui/chart_palette.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

// Fixed slots, one per VariantKind, so series are only ever updated in place.
std::size_t slot_of(const Curve& c) { return static_cast<std::size_t>(c.series); }

// MHA, GQA, MQA, MLA, the model's own layout when it is none of those, all full attention, what the engine
// allocates, a split model's cache on the GPU and in host RAM.
const QColor kVariantColors[] = {QColor(0xd1, 0x49, 0x5b), QColor(0x2e, 0x86, 0xde), QColor(0x2a, 0x9d, 0x8f),
                                 QColor(0x8e, 0x44, 0xad), QColor(0x34, 0x49, 0x5e), QColor(0x7f, 0x8c, 0x8d),
                                 QColor(0x6d, 0x4c, 0x41), QColor(0x00, 0x7a, 0xcc), QColor(0x9a, 0x6b, 0x00)};
// The series' names in the legend's hidden-set (object names), in the same order.
constexpr const char* kVariantKeys[] = {"MHA", "GQA", "MQA", "MLA", "own", "full", "allocated", "on_gpu", "on_host"};
static_assert(std::size(kVariantKeys) == kVariantKindCount && std::size(kVariantColors) == kVariantKindCount,
              "a key and a colour for every VariantKind");
const QColor kBudgetColor(0xe6, 0x7e, 0x22);
const QColor kStopsColor(0xc0, 0x39, 0x2b);

QString bytes_with_count(std::uint64_t bytes, UnitSystem units) {
    return QString::fromStdString(format_bytes(bytes, units) + " (" + format_count(bytes) + " B)");
}

}  // namespace

MemoryChart::MemoryChart(ScenarioModel* model, QWidget* parent)
    : QChartView(parent), model_(model), chart_(new QChart) {
    setChart(chart_);
    setRenderHint(QPainter::Antialiasing);
    setRubberBand(QChartView::RectangleRubberBand);
    setMouseTracking(true);
    // No tooltip on the plot: it would cover the crosshair's readout (the hint sits above the chart).
    chart_->setMargins(QMargins(6, 6, 12, 6));
    // On the right, one entry a line: a row along the bottom cut the numbers off in a small window.
    chart_->legend()->setAlignment(Qt::AlignRight);
    // Each entry drawn as its series is (a dashed line, a dotted one, a dot), not as a square of its colour: the
    // weights, the context and the crossing were three identical black squares.
    chart_->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);

    x_ = new QCategoryAxis;
    y_ = new QCategoryAxis;
    for (QCategoryAxis* axis : {x_, y_}) axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    x_->setTitleText(tr("Context length (tokens per sequence)"));
    y_->setTitleText(tr("KV cache (all sequences, all GPUs)"));
    chart_->addAxis(x_, Qt::AlignBottom);
    chart_->addAxis(y_, Qt::AlignLeft);

    auto add = [this](QXYSeries* s) {
        chart_->addSeries(s);
        s->attachAxis(x_);
        s->attachAxis(y_);
    };
    for (auto& s : variants_) add(s = new QLineSeries(this));
    add(weights_ = new QLineSeries(this));
    add(budget_ = new QLineSeries(this));
    add(outgrows_ = new QScatterSeries(this));
    add(stops_ = new QScatterSeries(this));
    add(context_ = new QLineSeries(this));
    outgrows_->setName(tr("KV cache outgrows the weights"));
    outgrows_->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    outgrows_->setMarkerSize(11);
    stops_->setName(tr("stops fitting"));
    stops_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    stops_->setMarkerSize(11);
    stops_->setColor(kStopsColor);

    for (QLegendMarker* marker : chart_->legend()->markers()) {
        connect(marker, &QLegendMarker::clicked, this, [this, marker] {
            QAbstractSeries* s = marker->series();
            const QString key = s->objectName();
            if (hidden_by_user_.contains(key))
                hidden_by_user_.remove(key);
            else
                hidden_by_user_.insert(key);
            refresh();
        });
    }
    for (std::size_t i = 0; i < variants_.size(); ++i) variants_[i]->setObjectName(kVariantKeys[i]);
    weights_->setObjectName("weights");
    budget_->setObjectName("budget");
    outgrows_->setObjectName("outgrows");
    stops_->setObjectName("stops");
    context_->setObjectName("context");

    cross_line_ = new QGraphicsLineItem(chart_);
    cross_box_ = new QGraphicsRectItem(chart_);
    cross_text_ = new QGraphicsSimpleTextItem(cross_box_);
    for (QGraphicsItem* item : std::initializer_list<QGraphicsItem*>{cross_line_, cross_box_}) {
        item->setZValue(20);
        item->hide();
    }

    connect(x_, &QValueAxis::rangeChanged, this, [this] { relabel(); });
    connect(y_, &QValueAxis::rangeChanged, this, [this] { relabel(); });
    connect(model_, &ScenarioModel::changed, this, &MemoryChart::refresh);
    connect(model_, &ScenarioModel::unitsChanged, this, &MemoryChart::refresh);
    applyPalette();
    refresh();
}

double MemoryChart::xOf(double tokens) const { return log_x_ ? std::log2(std::max(tokens, 1.0)) : tokens; }
double MemoryChart::yOf(double bytes) const { return log_y_ ? std::log2(std::max(bytes, 1.0)) : bytes; }
double MemoryChart::tokensAt(double x) const { return log_x_ ? std::exp2(x) : x; }

void MemoryChart::setLogTokens(bool on) {
    if (on == log_x_) return;
    log_x_ = on;
    // Log axes want log-spaced points; linear axes want evenly spaced ones.
    model_->setCurveSpacing(on ? Spacing::log : Spacing::linear);
    refresh();
    emit axesModeChanged();
}

void MemoryChart::setLogBytes(bool on) {
    bytes_axis_automatic_ = false;
    if (on == log_y_) return;
    log_y_ = on;
    refresh();
    emit axesModeChanged();
}

void MemoryChart::refresh() {
    hideCrosshair();
    if (!model_->hasResults()) return;
    const Results& r = model_->results();
    const UnitSystem units = model_->units();
    const auto& tokens = r.curves.tokens;
    if (tokens.empty()) return;
    if (bytes_axis_automatic_ && chooseBytesAxis(r) != log_y_) {
        log_y_ = !log_y_;
        emit axesModeChanged();
    }

    std::array<bool, kVariantKindCount> used{};
    double y_max = 0, y_min_positive = 0;
    for (const Curve& c : r.curves.series) {
        const std::size_t slot = slot_of(c);
        QLineSeries* s = variants_.at(slot);
        used.at(slot) = true;
        QList<QPointF> points;
        points.reserve(static_cast<qsizetype>(tokens.size()));
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const double b = static_cast<double>(c.bytes[i]);
            points.append({xOf(static_cast<double>(tokens[i])), yOf(b)});
            y_max = std::max(y_max, b);
            if (b > 0 && (y_min_positive == 0 || b < y_min_positive)) y_min_positive = b;
        }
        s->replace(points);
        // A layout whose bytes are another's at every point (MQA replicated as GQA-2 at TP 2) lies under its line:
        // the legend says where it is.
        QString under;
        for (const Curve& other : r.curves.series)
            if (&other != &c && !c.is_model && other.bytes == c.bytes && (other.is_model || &other < &c)) {
                under = tr(" (on the %1 line)").arg(q(other.name));
                break;
            }
        s->setName(QString::fromStdString(c.name) + (c.is_model ? tr(" (model)") : QString()) +
                   (c.replication > 1 ? ", " + q(replication_text(c.replication)) : QString()) + under);
        QPen pen(kVariantColors[slot]);
        const bool allocated =
            c.series == VariantKind::allocated || c.series == VariantKind::on_gpu || c.series == VariantKind::on_host;
        pen.setWidthF(c.is_model ? 3.2 : allocated ? 2.4 : 1.6);
        if (!c.is_model) pen.setStyle(allocated ? Qt::DotLine : Qt::DashLine);
        s->setPen(pen);
    }
    const double x_lo = xOf(static_cast<double>(tokens.front())), x_hi = xOf(static_cast<double>(tokens.back()));
    auto horizontal = [&](QLineSeries* s, double bytes) {
        s->replace(QList<QPointF>{{x_lo, yOf(bytes)}, {x_hi, yOf(bytes)}});
        y_max = std::max(y_max, bytes);
    };

    const double weights = static_cast<double>(r.weights_bytes);
    horizontal(weights_, weights);
    weights_->setName(tr("Weights %1%2")
                          .arg(QString::fromStdString(format_bytes(r.weights_bytes, units)),
                               r.weights_estimated ? tr(" (estimated)") : QString()));
    const bool has_budget = r.fit && r.fit->kv_budget_bytes > 0;
    if (has_budget) {
        horizontal(budget_, static_cast<double>(r.fit->kv_budget_bytes));
        // The line is every GPU's budget, as the curves are every GPU's bytes; the text says so beside the
        // per-GPU figure the fit gives.
        const QString all = q(format_bytes(static_cast<std::uint64_t>(r.fit->kv_budget_bytes), units));
        budget_->setName(r.fit->gpus > 1 ? tr("KV budget %1 (%2 GPUs × %3)")
                                               .arg(all)
                                               .arg(r.fit->gpus)
                                               .arg(q(format_bytes(
                                                   static_cast<std::uint64_t>(r.fit->kv_budget_bytes_per_gpu), units)))
                                         : tr("KV budget %1").arg(all));
    } else {
        budget_->clear();
    }
    auto marker = [&](QScatterSeries* s, const std::optional<std::uint64_t>& at, double bytes) {
        if (at && *at >= tokens.front() && *at <= tokens.back())
            s->replace(QList<QPointF>{{xOf(static_cast<double>(*at)), yOf(bytes)}});
        else
            s->clear();
    };
    marker(outgrows_, r.kv_exceeds_weights_at, weights);
    outgrows_->setName(
        r.kv_exceeds_weights_at
            ? tr("KV > weights from %1 tokens").arg(QString::fromStdString(format_tokens(*r.kv_exceeds_weights_at)))
            : tr("KV stays below the weights"));
    marker(stops_, r.stops_fitting_at, has_budget ? static_cast<double>(r.fit->kv_budget_bytes) : 0);
    stops_->setName(r.stops_fitting_at
                        ? tr("no fit from %1 tokens").arg(QString::fromStdString(format_tokens(*r.stops_fitting_at)))
                        : tr("stops fitting"));

    // The scenario's context, marked where it lies within the curves.
    const std::uint64_t context = r.scenario.workload.context_tokens;
    context_->setName(tr("context %1").arg(q(format_tokens(context))));
    const bool context_shown = context >= tokens.front() && context <= tokens.back();

    // Visibility: lines this model has, minus the ones the user switched off in the legend.
    auto show = [this](QAbstractSeries* s, bool present) {
        s->setVisible(present && !hidden_by_user_.contains(s->objectName()));
        for (QLegendMarker* m : chart_->legend()->markers(s)) {
            m->setVisible(present);
            QFont f = m->font();
            f.setStrikeOut(hidden_by_user_.contains(s->objectName()));
            m->setFont(f);
        }
    };
    for (std::size_t i = 0; i < variants_.size(); ++i) show(variants_[i], used[i]);
    show(weights_, true);
    show(budget_, has_budget);
    show(outgrows_, outgrows_->count() > 0);
    show(stops_, stops_->count() > 0);
    show(context_, context_shown);

    full_x_lo_ = x_lo;
    full_x_hi_ = x_hi > x_lo ? x_hi : x_lo + 1;
    if (log_y_) {
        full_y_lo_ = std::floor(std::log2(std::max(y_min_positive, 1.0)));
        full_y_hi_ = std::log2(std::max(y_max, 2.0)) + 0.25;
    } else {
        full_y_lo_ = 0;
        full_y_hi_ = std::max(y_max * 1.06, 1.0);
    }
    if (context_shown) {
        const double x = xOf(static_cast<double>(context));
        context_->replace(QList<QPointF>{{x, full_y_lo_}, {x, full_y_hi_}});
    } else {
        context_->clear();
    }
    updateTitle();
    chart_->zoomReset();
    setRanges(full_x_lo_, full_x_hi_, full_y_lo_, full_y_hi_);
}

void MemoryChart::updateTitle() {
    const Results& r = model_->results();
    const Scenario& s = r.scenario;
    // A model with a recurrent state: every line stands on it (it does not grow with the context).
    const bool state = r.kv.state_bytes > 0;
    title_ = (state ? tr("KV cache and recurrent state against context length: %1")
                    : tr("KV cache against context length: %1"))
                 .arg(shown_model_name(model_->catalog(), s));
    y_->setTitleText(state ? tr("KV cache + state (all sequences, all GPUs)")
                           : tr("KV cache (all sequences, all GPUs)"));
    QStringList parts;
    parts << tr("%1 KV").arg(q(std::string(to_string(s.kv_dtype))));
    parts << q(r.weights_format);  // what the Weights line counts
    parts << tr("%1 tokens × %2")
                 .arg(q(format_tokens(s.workload.context_tokens)),
                      s.workload.batch == 1 ? tr("1 sequence")
                                            : tr("%1 sequences").arg(q(format_count(s.workload.batch))));
    if (s.parallel.tp > 1 || s.parallel.pp > 1) parts << tr("TP %1 × PP %2").arg(s.parallel.tp).arg(s.parallel.pp);
    if (state) parts << tr("state %1 (the flat part)").arg(q(format_bytes(r.kv.state_bytes, model_->units())));
    if (s.deployment)
        parts << tr("%1 × %2").arg(s.deployment->gpu_count).arg(q(s.deployment->gpu.name))
              << q(std::string(to_string(s.deployment->engine)));
    subtitle_ = parts.join(" · ");
    // A rich-text title takes no title brush: its colour is the palette's text, written in (dark mode).
    chart_->setTitle(
        QStringLiteral("<span style=\"color: %3\"><b>%1</b><br><span style=\"font-size: small\">%2"
                       "</span></span>")
            .arg(title_.toHtmlEscaped(), subtitle_.toHtmlEscaped(), palette().color(QPalette::WindowText).name()));
}

bool MemoryChart::chooseBytesAxis(const Results& r) const {
    // Log when the highest line is more than 10× the smallest of what this model needs read — its own
    // cache at the chosen context, its weights, its budget — which MHA's terabytes would otherwise
    // squash into the bottom of the plot.
    const auto& tokens = r.curves.tokens;
    const double weights = static_cast<double>(r.weights_bytes);
    const bool has_budget = r.fit && r.fit->kv_budget_bytes > 0;
    double highest = std::max(weights, has_budget ? static_cast<double>(r.fit->kv_budget_bytes) : 0.0);
    double smallest = weights;
    const auto at = std::lower_bound(tokens.begin(), tokens.end(), r.scenario.workload.context_tokens);
    const std::size_t i = at == tokens.end() ? tokens.size() - 1 : static_cast<std::size_t>(at - tokens.begin());
    for (const Curve& c : r.curves.series) {
        if (!c.bytes.empty())
            highest = std::max(highest, static_cast<double>(*std::max_element(c.bytes.begin(), c.bytes.end())));
        if (c.is_model && c.bytes[i] > 0) smallest = std::min(smallest, static_cast<double>(c.bytes[i]));
    }
    if (has_budget) smallest = std::min(smallest, static_cast<double>(r.fit->kv_budget_bytes));
    return smallest > 0 && highest > 10 * smallest;
}

void MemoryChart::setRanges(double x_lo, double x_hi, double y_lo, double y_hi) {
    relabelling_ = true;
    x_->setRange(x_lo, x_hi);
    y_->setRange(y_lo, y_hi);
    relabelling_ = false;
    relabel();
}

void MemoryChart::relabel() {
    if (relabelling_) return;
    relabelling_ = true;
    auto fill = [](QCategoryAxis* axis, const std::vector<Tick>& ticks) {
        const double lo = axis->min(), hi = axis->max();
        for (const QString& label : axis->categoriesLabels()) axis->remove(label);
        axis->setStartValue(lo);
        for (const Tick& t : ticks) axis->append(t.label, t.value);
        axis->setRange(lo, hi);
    };
    fill(x_, token_ticks(x_->min(), x_->max(), log_x_));
    // Log axes get denser ticks (every second power of two reads 1, 4, 16, 64 MiB …).
    fill(y_, byte_ticks(y_->min(), y_->max(), log_y_, model_->units(), log_y_ ? 11 : 8));
    relabelling_ = false;
}

void MemoryChart::resetZoom() {
    chart_->zoomReset();
    setRanges(full_x_lo_, full_x_hi_, full_y_lo_, full_y_hi_);
}

QString MemoryChart::readout(std::uint64_t at) const {
    if (!model_->hasResults()) return {};
    const Results& r = model_->results();
    const auto& tokens = r.curves.tokens;
    if (tokens.empty()) return {};
    auto it = std::lower_bound(tokens.begin(), tokens.end(), at);
    if (it == tokens.end()) --it;
    if (it != tokens.begin() && at - *(it - 1) < *it - at) --it;
    const auto i = static_cast<std::size_t>(it - tokens.begin());
    const UnitSystem units = model_->units();
    QStringList lines;
    lines << tr("%1 tokens per sequence × %2")
                 .arg(QString::fromStdString(format_count(tokens[i])))
                 .arg(r.scenario.workload.batch);
    for (const Curve& c : r.curves.series) {
        if (!variants_.at(slot_of(c))->isVisible()) continue;
        lines << QString::fromStdString(c.name) + (c.is_model ? "*" : "") + ": " + bytes_with_count(c.bytes[i], units);
    }
    lines << tr("Weights: %1").arg(bytes_with_count(r.weights_bytes, units));
    if (r.fit && r.fit->kv_budget_bytes > 0)
        lines << tr("KV budget: %1").arg(bytes_with_count(static_cast<std::uint64_t>(r.fit->kv_budget_bytes), units));
    return lines.join('\n');
}

void MemoryChart::showCrosshair(const QPointF& widget_pos) {
    const QPointF in_chart = chart_->mapFromScene(mapToScene(widget_pos.toPoint()));
    const QRectF plot = chart_->plotArea();
    if (!model_->hasResults() || !plot.contains(in_chart)) {
        hideCrosshair();
        return;
    }
    const QPointF value = chart_->mapToValue(in_chart, weights_);
    const double t = std::max(1.0, tokensAt(value.x()));
    const auto& tokens = model_->results().curves.tokens;
    auto it = std::lower_bound(tokens.begin(), tokens.end(), static_cast<std::uint64_t>(t));
    if (it == tokens.end()) --it;
    if (it != tokens.begin() && t - static_cast<double>(*(it - 1)) < static_cast<double>(*it) - t) --it;
    const double x = chart_->mapToPosition(QPointF(xOf(static_cast<double>(*it)), value.y()), weights_).x();
    cross_line_->setLine(x, plot.top(), x, plot.bottom());
    cross_line_->setPen(QPen(palette().color(QPalette::Text), 1, Qt::DotLine));
    cross_text_->setText(readout(*it));
    cross_text_->setBrush(palette().color(QPalette::ToolTipText));
    const QRectF text = cross_text_->boundingRect();
    QRectF box(0, 0, text.width() + 12, text.height() + 10);
    double left = x + 10;
    if (left + box.width() > plot.right()) left = x - 10 - box.width();
    double top =
        std::clamp(in_chart.y() - box.height() / 2, plot.top(), std::max(plot.top(), plot.bottom() - box.height()));
    cross_box_->setRect(box);
    cross_box_->setPos(left, top);
    cross_box_->setBrush(palette().color(QPalette::ToolTipBase));
    cross_box_->setPen(QPen(palette().color(QPalette::Mid)));
    cross_text_->setPos(6, 5);
    cross_line_->show();
    cross_box_->show();
}

void MemoryChart::hideCrosshair() {
    if (cross_line_) cross_line_->hide();
    if (cross_box_) cross_box_->hide();
}

void MemoryChart::mouseMoveEvent(QMouseEvent* event) {
    showCrosshair(event->position());
    QChartView::mouseMoveEvent(event);
}

void MemoryChart::leaveEvent(QEvent* event) {
    hideCrosshair();
    QChartView::leaveEvent(event);
}

void MemoryChart::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    if (steps != 0) chart_->zoom(std::pow(1.25, steps));
    event->accept();
}

void MemoryChart::resizeEvent(QResizeEvent* event) {
    hideCrosshair();
    QChartView::resizeEvent(event);
}

void MemoryChart::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange) applyPalette();
    QChartView::changeEvent(event);
}

void MemoryChart::applyPalette() {
    // Follow the system palette (dark mode included) rather than a fixed chart theme.
    const QPalette p = palette();
    follow_palette(chart_, p);
    if (model_->hasResults()) updateTitle();  // the title's colour is in its text
    QPen weights_pen(p.color(QPalette::Text), 1.8, Qt::DashDotLine);
    weights_->setPen(weights_pen);
    budget_->setPen(QPen(kBudgetColor, 2.2, Qt::DashLine));
    context_->setPen(QPen(p.color(QPalette::Text), 1.4, Qt::DotLine));
    outgrows_->setColor(p.color(QPalette::Text));
    outgrows_->setBorderColor(p.color(QPalette::Base));
}

void MemoryChart::renderTo(QPainter* painter, const QRectF& target, QSizeF size, bool with_legend) {
    hideCrosshair();
    const QSizeF old = chart_->size();
    if (!with_legend) chart_->legend()->hide();
    chart_->resize(size);
    if (chart_->layout()) chart_->layout()->activate();
    chart_->scene()->render(painter, target, chart_->sceneBoundingRect());
    if (!with_legend) chart_->legend()->show();
    chart_->resize(old);
    if (chart_->layout()) chart_->layout()->activate();
}

QList<MemoryChart::LegendEntry> MemoryChart::legendEntries() const {
    QList<LegendEntry> out;
    for (QAbstractSeries* s : chart_->series()) {
        if (!s->isVisible()) continue;
        if (auto* scatter = qobject_cast<QScatterSeries*>(s))
            out.append({scatter->name(), QPen(scatter->color()), true, scatter->markerShape()});
        else if (auto* line = qobject_cast<QLineSeries*>(s))
            out.append({line->name(), line->pen(), false, QScatterSeries::MarkerShapeCircle});
    }
    return out;
}

}  // namespace kvscope::ui
