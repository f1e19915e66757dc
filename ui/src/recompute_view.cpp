#include "kvscope/ui/recompute_view.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kvscope/calculator/learn.h"
#include "kvscope/ui/axis_ticks.h"
#include "kvscope/ui/chart_palette.h"
#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {
// Recomputing grows with the square of the tokens: 256 take seconds on a laptop CPU, 4096 would take an hour.
constexpr int kMaxStopwatchTokens = 256;

QLineSeries* line(const QString& name, const QColor& colour, bool dashed) {
    auto* s = new QLineSeries;
    s->setName(name);
    QPen pen(colour);
    pen.setWidthF(2.2);
    if (dashed) pen.setStyle(Qt::DashLine);
    s->setPen(pen);
    return s;
}
}  // namespace

RecomputeView::RecomputeView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      mode_(new QComboBox),
      tokens_(new QSpinBox),
      run_(new QPushButton(tr("Run the &stopwatch"))),
      summary_(new QLabel),
      measured_(new QLabel),
      chart_(new QChart),
      view_(new QChartView(chart_)),
      cached_(line(tr("Cached"), QColor(0x27, 0xae, 0x60), false)),
      uncached_(line(tr("Recomputed"), QColor(0xc0, 0x39, 0x2b), false)),
      measured_cached_(line(tr("Cached, measured"), QColor(0x27, 0xae, 0x60), true)),
      measured_uncached_(line(tr("Recomputed, measured"), QColor(0xc0, 0x39, 0x2b), true)),
      x_(new QValueAxis),
      y_(new QValueAxis),
      y_ms_(new QValueAxis) {
    mode_->addItems({tr("Work per token"), tr("Cumulative work")});
    mode_->setToolTip(tr("Per token: the cached step stays flat. Cumulative: a straight line against n(n+1)/2."));
    tokens_->setRange(2, 1 << 20);
    tokens_->setValue(4096);
    tokens_->setGroupSeparatorShown(true);
    tokens_->setPrefix(tr("Generate "));
    tokens_->setSuffix(tr(" tokens"));
    tokens_->setToolTip(tr("How many tokens to generate from an empty context"));
    run_->setToolTip(tr("Time the stopwatch's small model generating this many tokens (at most %1) both ways "
                        "on this machine; the Probe tab shows its progress and Cancel")
                         .arg(kMaxStopwatchTokens));
    summary_->setWordWrap(true);
    measured_->setWordWrap(true);
    measured_->setText(
        tr("Run the stopwatch to time a small real model generating these tokens both ways on "
           "this machine; its measured times are drawn dashed."));

    for (QLineSeries* s : {cached_, uncached_, measured_cached_, measured_uncached_}) chart_->addSeries(s);
    x_->setTitleText(tr("generated tokens"));
    x_->setLabelFormat("%d");
    y_->setTitleText(tr("FLOP"));
    y_->setLabelFormat(axis_label_format(AxisDigits::fixed, 0));
    y_ms_->setTitleText(tr("measured ms (dashed)"));
    y_ms_->setLabelFormat(axis_label_format(AxisDigits::fixed, 0));
    chart_->addAxis(x_, Qt::AlignBottom);
    chart_->addAxis(y_, Qt::AlignLeft);
    chart_->addAxis(y_ms_, Qt::AlignRight);
    for (QLineSeries* s : {cached_, uncached_}) {
        s->attachAxis(x_);
        s->attachAxis(y_);
    }
    for (QLineSeries* s : {measured_cached_, measured_uncached_}) {
        s->attachAxis(x_);
        s->attachAxis(y_ms_);
    }
    y_ms_->hide();
    chart_->legend()->setAlignment(Qt::AlignBottom);
    chart_->setMargins(QMargins(4, 4, 4, 4));
    view_->setRenderHint(QPainter::Antialiasing);
    view_->setMinimumHeight(260);
    follow_palette(chart_, palette());

    auto* bar = new QHBoxLayout;
    bar->addWidget(mode_);
    bar->addWidget(tokens_);
    bar->addStretch(1);
    auto* measured_row = new QHBoxLayout;
    measured_row->addWidget(measured_, 1);
    measured_row->addWidget(run_, 0, Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    auto* intro =
        new QLabel(tr("<h3>The cost of recomputing</h3>Without a cache, generating token <i>n</i> means running the "
                      "model over all <i>n</i> tokens again. With it, only the new token is computed and the old keys "
                      "and values are read back."));
    intro->setWordWrap(true);
    layout->addWidget(intro);
    layout->addLayout(bar);
    layout->addWidget(view_, 1);
    layout->addWidget(summary_);
    layout->addLayout(measured_row);

    connect(mode_, &QComboBox::currentIndexChanged, this, [this](int i) { setCumulative(i == 1); });
    connect(tokens_, &QSpinBox::valueChanged, this, &RecomputeView::refresh);
    // The button says how many tokens it times: never 4,096 asked and 256 timed without a word.
    connect(tokens_, &QSpinBox::valueChanged, this, &RecomputeView::labelRun);
    labelRun();
    connect(run_, &QPushButton::clicked, this, [this] {
        requested_ = tokens_->value();
        emit stopwatchRequested(std::clamp(tokens_->value(), 8, kMaxStopwatchTokens));
    });
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
}

void RecomputeView::setCumulative(bool on) {
    cumulative_ = on;
    mode_->setCurrentIndex(on ? 1 : 0);
    refresh();
    plotMeasured();
}

void RecomputeView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange) follow_palette(chart_, palette());
    QWidget::changeEvent(event);
}

void RecomputeView::refresh() {
    if (!model_->hasResults()) return;
    const Scenario& s = model_->results().scenario;
    const auto n = static_cast<std::uint64_t>(tokens_->value());
    auto curve = recompute_curve(s.arch, s.workload, n, 256);
    if (!curve) {
        summary_->setText(q(curve.error_text()));
        return;
    }
    const auto& a = cumulative_ ? curve->cumulative_cached : curve->per_token_cached;
    const auto& b = cumulative_ ? curve->cumulative_uncached : curve->per_token_uncached;
    // The axis in the SI unit that keeps its labels short: GFLOP, TFLOP, PFLOP …
    static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E", "Z"};
    int power = 0;
    while (power < 7 && b.back() / std::pow(1000.0, power + 1) >= 1) ++power;
    const double scale = std::pow(1000.0, power);
    QList<QPointF> pa, pb;
    for (std::size_t i = 0; i < curve->tokens.size(); ++i) {
        pa.append({static_cast<double>(curve->tokens[i]), a[i] / scale});
        pb.append({static_cast<double>(curve->tokens[i]), b[i] / scale});
    }
    cached_->replace(pa);
    uncached_->replace(pb);
    const double measured_tokens = static_cast<double>(std::max(cached_ms_.size(), uncached_ms_.size()));
    x_->setRange(1, std::max(static_cast<double>(n), measured_tokens));
    y_->setRange(0, b.back() / scale * 1.05);
    y_->applyNiceNumbers();
    // Fixed digits: a significant-digit format writes 1000 as 1e+03.
    y_->setLabelFormat(axis_label_format(AxisDigits::fixed, y_->max() >= 10 ? 0 : 2));
    y_->setTitleText((cumulative_ ? tr("%1FLOP, all tokens so far") : tr("%1FLOP for this token"))
                         .arg(QString::fromLatin1(kPrefix[power])));

    summary_->setText(
        tr("Generating %1 tokens: %2 with the cache, %3 recomputing — %4× the work. The cached step stays "
           "near %5 per token; without the cache the last token alone costs %6.")
            .arg(q(format_count(n)), q(format_flops(curve->cumulative_cached.back())),
                 q(format_flops(curve->cumulative_uncached.back())))
            .arg(curve->speedup_bound, 0, 'f', 0)
            .arg(q(format_flops(curve->per_token_cached.back())), q(format_flops(curve->per_token_uncached.back()))));
}

void RecomputeView::labelRun() {
    run_->setText(
        tr("Run the &stopwatch (%1 tokens)")
            .arg(q(format_count(static_cast<std::uint64_t>(std::clamp(tokens_->value(), 8, kMaxStopwatchTokens))))));
}

void RecomputeView::stopwatchStarted(int tokens) {
    cached_ms_.clear();
    uncached_ms_.clear();
    const QString lowered =
        requested_ > tokens
            ? tr(" — %1 asked: the stopwatch times at most %2, as recomputing grows with the square of the tokens "
                 "(the calculated curves above go to %1)")
                  .arg(q(format_count(static_cast<std::uint64_t>(requested_))))
                  .arg(q(format_count(static_cast<std::uint64_t>(tokens))))
            : QString();
    requested_ = 0;
    measured_->setText(tr("Stopwatch running on %1 tokens… (progress and Cancel in the Probe tab)%2")
                           .arg(q(format_count(static_cast<std::uint64_t>(tokens))), lowered));
    run_->setEnabled(false);
    waiting_ = true;
    plotMeasured();
}

void RecomputeView::addStopwatchStep(bool cached, double ms) {
    (cached ? cached_ms_ : uncached_ms_).push_back(ms);
    plotMeasured();
}

void RecomputeView::probeIdle() {
    run_->setEnabled(true);
    if (waiting_) measured_->setText(tr("The stopwatch stopped before it finished; the Probe tab says why."));
    waiting_ = false;
}

void RecomputeView::setStopwatch(const probe::StopwatchReport& r) {
    run_->setEnabled(true);
    waiting_ = false;
    if (r.status != probe::Status::ok) {
        measured_->setText(tr("Stopwatch: %1").arg(q(r.message)));
        return;
    }
    cached_ms_ = r.cached_ms;
    uncached_ms_ = r.uncached_ms;
    {
        // The calculated curves cover the same tokens as the measured ones, so their shapes compare.
        const QSignalBlocker quiet(tokens_);
        tokens_->setValue(std::max(2, static_cast<int>(cached_ms_.size())));
    }
    labelRun();
    plotMeasured();
    const double cached = std::accumulate(cached_ms_.begin(), cached_ms_.end(), 0.0);
    const double uncached = std::accumulate(uncached_ms_.begin(), uncached_ms_.end(), 0.0);
    const auto n = static_cast<std::uint64_t>(cached_ms_.size());
    measured_->setText(
        tr("<b>Measured</b> (the stopwatch's 4-layer model on %1, %2 tokens): %3 ms with the cache, %4 ms "
           "recomputing — %5× slower. The calculator's bound for that model is %6×. Texts %7.")
            .arg(q(r.device.name).toHtmlEscaped())
            .arg(n)
            .arg(cached, 0, 'f', 1)
            .arg(uncached, 0, 'f', 1)
            .arg(r.speedup, 0, 'f', 1)
            .arg(r.speedup_bound, 0, 'f', 1)
            .arg(r.tokens_identical ? tr("identical token for token") : tr("differ")) +
        [&r] {  // why the ratio stays far below the bound, when it does
            const std::string note = probe::stopwatch_gap_note(r);
            if (note.empty()) return QString();
            QString text = q(note).toHtmlEscaped();
            text[0] = text[0].toUpper();
            return " " + text + ".";
        }());
    refresh();
}

void RecomputeView::plotMeasured() {
    auto plot = [this](QLineSeries* s, const std::vector<double>& ms) {
        QList<QPointF> points;
        double sum = 0;
        for (std::size_t i = 0; i < ms.size(); ++i) {
            sum += ms[i];
            points.append({static_cast<double>(i + 1), cumulative_ ? sum : ms[i]});
        }
        s->replace(points);
        return points.isEmpty()
                   ? 0.0
                   : std::max_element(points.begin(), points.end(), [](auto a, auto b) { return a.y() < b.y(); })->y();
    };
    const double top = std::max(plot(measured_cached_, cached_ms_), plot(measured_uncached_, uncached_ms_));
    const bool any = !cached_ms_.empty() || !uncached_ms_.empty();
    y_ms_->setVisible(any);
    for (QLineSeries* s : {measured_cached_, measured_uncached_}) {
        s->setVisible(any);
        for (QLegendMarker* m : chart_->legend()->markers(s)) m->setVisible(any);
    }
    if (any) {
        y_ms_->setRange(0, top * 1.05);
        y_ms_->applyNiceNumbers();
        y_ms_->setLabelFormat(axis_label_format(AxisDigits::fixed, y_ms_->max() >= 10 ? 0 : 2));
        const double measured_tokens = static_cast<double>(std::max(cached_ms_.size(), uncached_ms_.size()));
        if (measured_tokens > x_->max()) x_->setRange(1, measured_tokens);
    }
}

}  // namespace kvscope::ui
