#include "kvscope/ui/probe_view.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>
#include <utility>

#include "kvscope/calculator/units.h"
#include "kvscope/calculator/weights.h"
#include "kvscope/ui/axis_ticks.h"
#include "kvscope/ui/chart_palette.h"
#include "kvscope/ui/probe_runner.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

QString device_line(const probe::DeviceInfo& d) {
    if (!d.available) return QObject::tr("%1: unavailable — %2").arg(q(d.backend), q(d.note));
    QString line = QObject::tr("%1: %2, %3 memory (%4 free), %5 %6")
                       .arg(q(d.backend), q(d.name), q(format_bytes(d.total_bytes)), q(format_bytes(d.free_bytes)))
                       .arg(d.compute_units)
                       .arg(q(d.units_name));
    if (d.theoretical_gbps > 0) line += QObject::tr(", %1 GB/s peak").arg(d.theoretical_gbps, 0, 'f', 0);
    if (d.measured_gbps > 0) line += QObject::tr(", reads %1 GB/s (measured)").arg(d.measured_gbps, 0, 'f', 1);
    return line;
}

}  // namespace

ProbeView::ProbeView(ScenarioModel* model, ProbeRunner* runner, QWidget* parent)
    : QWidget(parent),
      model_(model),
      runner_(runner),
      backend_(new QComboBox),
      devices_(new QLabel),
      banner_(new QLabel),
      probe_button_(new QPushButton(tr("&Run probe"))),
      step_button_(new QPushButton(tr("Time a &decode step"))),
      table_title_(new QLabel),
      measured_for_label_(new QLabel),
      stopwatch_button_(new QPushButton(tr("Run &stopwatch"))),
      cancel_button_(new QPushButton(tr("Cancel"))),
      tokens_(new QSpinBox),
      progress_(new QProgressBar),
      status_(new QLabel),
      table_(new QTableWidget(0, 2)),
      cached_(new QLineSeries),
      uncached_(new QLineSeries),
      x_(new QValueAxis),
      y_(new QValueAxis),
      texts_(new QLabel) {
    devices_->setText(tr("Looking for devices…"));
    devices_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    backend_->addItem(tr("auto"), "auto");
    backend_->addItem(tr("CPU"), "cpu");  // built in, always there; the others join when they answer
    backend_->setToolTip(tr("Where to allocate the cache: auto picks the GPU when one answers"));
    banner_->setWordWrap(true);
    banner_->setStyleSheet(
        "background: rgba(230, 126, 34, 45); border: 1px solid rgba(230, 126, 34, 140); padding: 6px;");
    banner_->setText(
        tr("Only the CPU backend is available here: the probe allocates the cache in host memory and times "
           "attention on the CPU. On a machine with an NVIDIA GPU and driver it measures the GPU."));
    banner_->hide();
    probe_button_->setToolTip(
        tr("Allocate the current scenario's KV cache here, compare its size with the prediction, "
           "and time one decode step's attention"));
    stopwatch_button_->setToolTip(
        tr("A small transformer generates text twice: with its KV cache, and recomputing the whole prefix"));
    cancel_button_->setToolTip(tr("Stop the run; everything it allocated is freed"));
    cancel_button_->setEnabled(false);
    tokens_->setRange(8, 2048);
    tokens_->setValue(128);
    tokens_->setSuffix(tr(" tokens"));
    tokens_->setToolTip(tr("How many tokens the stopwatch generates"));
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    table_->setHorizontalHeaderLabels({tr("Measure"), tr("Value")});
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setMinimumHeight(260);
    table_->setWordWrap(true);

    QChartView* view = buildStopwatchChart();
    texts_->setWordWrap(true);
    texts_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    texts_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Backend")));
    controls->addWidget(backend_);
    controls->addWidget(probe_button_);
    controls->addWidget(step_button_);
    controls->addSpacing(12);
    controls->addWidget(tokens_);
    controls->addWidget(stopwatch_button_);
    controls->addWidget(cancel_button_);
    controls->addStretch(1);
    auto* columns = new QHBoxLayout;
    auto* left = new QVBoxLayout;
    table_title_->setText(tr("<b>Allocation check and decode attention</b>"));
    left->addWidget(table_title_);
    measured_for_label_->setWordWrap(true);
    measured_for_label_->setTextFormat(Qt::PlainText);
    measured_for_label_->hide();
    left->addWidget(measured_for_label_);
    left->addWidget(table_, 1);
    auto* right = new QVBoxLayout;
    right->addWidget(new QLabel(tr("<b>Stopwatch</b>")));
    right->addWidget(view, 1);
    right->addWidget(texts_);
    columns->addLayout(left, 1);
    columns->addLayout(right, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addWidget(devices_);
    layout->addLayout(controls);
    layout->addWidget(progress_);
    layout->addWidget(status_);
    layout->addLayout(columns, 1);

    connect(probe_button_, &QPushButton::clicked, this, &ProbeView::runProbe);
    connect(step_button_, &QPushButton::clicked, this, &ProbeView::runStep);
    step_button_->setToolTip(
        tr("Run one decode step of the whole model here (random weights of its shapes, every sequence attending "
           "its cache) and compare its time with the calculator's floor on the bandwidth measured in the same run"));
    connect(stopwatch_button_, &QPushButton::clicked, this, &ProbeView::runStopwatch);
    connect(cancel_button_, &QPushButton::clicked, this, &ProbeView::cancel);
    connect(backend_, &QComboBox::currentIndexChanged, this,
            [this] { runner_->setBackend(backend_->currentData().toString().toStdString()); });
    runner_->setBackend(backend_->currentData().toString().toStdString());

    followRunner();
}

// The stopwatch's chart: time so far against generated tokens, with the cache and recomputing the prefix.
QChartView* ProbeView::buildStopwatchChart() {
    auto* chart = new QChart;
    cached_->setName(tr("with the KV cache"));
    uncached_->setName(tr("recomputing the prefix"));
    cached_->setPen(QPen(QColor(0x2a, 0x9d, 0x8f), 2.5));
    uncached_->setPen(QPen(QColor(0xd1, 0x49, 0x5b), 2.5));
    chart->addSeries(cached_);
    chart->addSeries(uncached_);
    // A short title, the unit on every tick: in a small window "cumulative time (ms)" was cut to "cumulative ti…".
    x_->setTitleText(tr("generated tokens"));
    y_->setTitleText(tr("time so far"));
    x_->setLabelFormat("%d");
    y_->setLabelFormat(axis_label_format(AxisDigits::fixed, 0) + " ms");
    chart->addAxis(x_, Qt::AlignBottom);
    chart->addAxis(y_, Qt::AlignLeft);
    for (QLineSeries* s : {cached_, uncached_}) {
        s->attachAxis(x_);
        s->attachAxis(y_);
    }
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart_ = chart;
    follow_palette(chart, palette());
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(260);
    return view;
}

void ProbeView::followRunner() {
    // What the runner does, whoever asked for it (this tab or the Learn tab's stopwatch).
    connect(runner_, &ProbeRunner::devicesListed, this, &ProbeView::applyDevices);
    connect(runner_, &ProbeRunner::started, this, [this](const QString& what) {
        probe_button_->setEnabled(false);
        step_button_->setEnabled(false);
        stopwatch_button_->setEnabled(false);
        cancel_button_->setEnabled(true);
        progress_->setValue(0);
        status_->setText(what);
    });
    connect(runner_, &ProbeRunner::progress, this, [this](double f, const QString& text) {
        progress_->setValue(static_cast<int>(f * 1000));
        status_->setText(text);
    });
    connect(runner_, &ProbeRunner::stopwatchStarted, this, &ProbeView::clearStopwatch);
    connect(runner_, &ProbeRunner::stopwatchStep, this, &ProbeView::addStep);
    connect(runner_, &ProbeRunner::stopwatchFinished, this, &ProbeView::showStopwatch);
    connect(runner_, &ProbeRunner::probeFinished, this, [this](const probe::ProbeReport& r) { showProbe(r); });
    connect(runner_, &ProbeRunner::stepFinished, this, &ProbeView::showStep);
    connect(runner_, &ProbeRunner::failed, this, [this](const QString& why) { done(why, false); });
    // The table stays after the inputs change, labelled with whose it is.
    connect(model_, &ScenarioModel::changed, this, &ProbeView::showWhoseTable);
    connect(runner_, &ProbeRunner::finished, this, [this] {
        if (retry_) {  // the step again, in a format the device multiplies (showStep)
            step_request_ = std::exchange(retry_, std::nullopt);
            runner_->step(*step_request_);
            return;
        }
        probe_button_->setEnabled(true);
        step_button_->setEnabled(true);
        stopwatch_button_->setEnabled(true);
        cancel_button_->setEnabled(false);
        emit finished();
    });
}

bool ProbeView::running() const { return runner_->running(); }

void ProbeView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!devices_listed_) runner_->listDevicesInBackground();
}

void ProbeView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && chart_) follow_palette(chart_, palette());  // dark mode at run time
    QWidget::changeEvent(event);
}

void ProbeView::refreshDevices() { runner_->listDevices(); }

void ProbeView::applyDevices(const std::vector<probe::DeviceInfo>& devices) {
    devices_listed_ = true;
    QStringList lines;
    bool device = false;
    for (const probe::DeviceInfo& d : devices) {
        lines << device_line(d);
        // Every backend that answers can be chosen; one whose cache lives off the host is a device.
        if (d.available && backend_->findData(q(d.backend)) < 0) backend_->addItem(q(d.label), q(d.backend));
        device |= d.available && !d.host_memory;
    }
    devices_->setText(lines.join('\n'));
    banner_->setVisible(!device);
}

void ProbeView::cancel() {
    runner_->cancel();
    status_->setText(tr("Cancelling…"));
}

void ProbeView::runProbe() {
    if (!model_->resultsAreCurrent()) {  // never the last valid inputs', which may be another model's
        done(tr("Fix the marked inputs first: the probe allocates the current scenario's cache."), false);
        return;
    }
    const Scenario& s = model_->results().scenario;
    probe::ProbeRequest request;
    request.arch = s.arch;
    request.workload = s.workload;
    QString note;
    request.dtype = s.kv_dtype;
    if (!probe::can_store(s.kv_dtype)) {
        request.dtype = KvDtype::fp16;
        note = tr("The probe stores %1; this run uses fp16 instead of %2. ")
                   .arg(q(probe::storable_list()), q(std::string(to_string(s.kv_dtype))));
    }
    if (s.parallel.gpus() > 1) note += tr("One device holds the whole cache here (TP/PP are not split). ");
    if (runner_->running()) return;
    startMeasuring(s, false, request.dtype);
    note_ = note;
    runner_->probe(request);
}

void ProbeView::runStep() {
    if (!model_->resultsAreCurrent()) {
        done(tr("Fix the marked inputs first: the step runs the current scenario's model."), false);
        return;
    }
    if (runner_->running()) return;
    const Scenario& s = model_->results().scenario;
    probe::StepRequest request;
    request.arch = s.arch;
    request.workload = s.workload;
    request.kv_dtype = s.kv_dtype;
    // As kvscope-cli probe --step: the deployment's weight format, else the model's own.
    request.weight_dtype = s.deployment ? s.deployment->weight_dtype : model_->modelWeightDtype();
    QString note;
    if (!probe::can_multiply(request.weight_dtype)) {
        note = tr("The step multiplies fp32, fp16, bf16 or fp8_e4m3 weights; this run uses bf16 instead of %1. ")
                   .arg(q(std::string(to_string(request.weight_dtype))));
        request.weight_dtype = KvDtype::bf16;
    }
    if (s.deployment && s.deployment->weight_quant && s.deployment->weights_bytes_exact == 0)
        note += tr("The checkpoint's %1 is multiplied as %2 here. ")
                    .arg(q(weight_quant_label(loaded_weight_quant(*s.deployment))),
                         q(std::string(to_string(request.weight_dtype))));
    if (!probe::can_store(s.kv_dtype)) {
        request.kv_dtype = KvDtype::fp16;
        note += tr("The step stores %1 caches; this run uses fp16 instead of %2. ")
                    .arg(q(probe::storable_list()), q(std::string(to_string(s.kv_dtype))));
    }
    if (s.parallel.gpus() > 1) note += tr("One device runs the whole model here (TP/PP are not split). ");
    startMeasuring(s, true, request.kv_dtype);
    note_ = note;
    step_request_ = request;
    step_model_ = s.model_id;
    runner_->step(request);
}

void ProbeView::showStep(const probe::StepReport& r) {
    const QString note = std::exchange(note_, QString());
    const std::optional<probe::StepRequest> request = std::exchange(step_request_, std::nullopt);
    // A device that cannot multiply the weights' format (fp8 before compute capability 8.9): the same step in
    // bf16, started when this run has ended, and said.
    if (request)
        if (auto again = probe::with_bf16_weights_if_refused(*request, r)) {
            note_ = note + tr("This device cannot multiply %1 weights (%2); this run uses bf16 instead. ")
                               .arg(q(std::string(to_string(request->weight_dtype))), q(r.message));
            retry_ = std::move(again);
            return;
        }
    // Kept, as kvscope-cli probe --step keeps it, for the Deployment tab and `fit` (this scenario on this GPU).
    QString kept = tr("not kept (no user folder)");
    if (r.status == probe::Status::ok && request && !model_->measuredStepsPath().empty()) {
        const MeasuredStep m = probe::measured_step_of(*request, r, step_model_, model_->catalog().gpus());
        if (auto written = remember_measured_step(model_->measuredStepsPath(), m); !written) {
            kept = tr("not kept: %1").arg(q(written.error_text()));
        } else {
            kept = m.gpu_id.empty()
                       ? tr("%1 (the Deployment tab shows steps measured on a catalog GPU; this device "
                            "is not one)")
                             .arg(q(model_->measuredStepsPath()))
                       : tr("%1 (the Deployment tab shows it for %2)").arg(q(model_->measuredStepsPath()), q(m.gpu_id));
            model_->measuredStepsChanged();
        }
    }
    if (r.status != probe::Status::ok) {
        done(note + q(std::string(to_string(r.status))) + ": " + q(r.message), false);
        return;
    }
    // The sequences the step was measured for: the inputs may have changed while it ran.
    const Scenario& s = measured_for_ ? *measured_for_ : model_->results().scenario;
    const auto batch = static_cast<double>(s.workload.batch);
    auto ms = [](double x) { return tr("%1 ms").arg(x, 0, 'f', x < 10 ? 2 : 1); };
    table_title_->setText(tr("<b>Decode step of the whole model</b>"));
    fillTable({
        {tr("Device"), q(r.device.backend) + " — " + q(r.device.name)},
        {tr("Layers run"), r.scaled ? tr("%1 of %2 (the rest did not fit in memory; their time is scaled)")
                                          .arg(r.layers_run)
                                          .arg(r.layers_total)
                                    : tr("all %1").arg(r.layers_total)},
        {tr("Decode step (measured)"), tr("%1 → %2 tokens/s per sequence, %3 in all")
                                           .arg(ms(r.step_ms))
                                           .arg(r.tokens_per_s(), 0, 'f', 1)
                                           .arg(r.tokens_per_s() * batch, 0, 'f', 1)},
        {tr("Calculator's floor"), tr("%1 → %2 tokens/s per sequence (%3 read at %4 GB/s, measured here)")
                                       .arg(ms(r.predicted_step_ms))
                                       .arg(r.predicted_tokens_per_s(), 0, 'f', 1)
                                       .arg(q(format_bytes(r.predicted_bytes_read)))
                                       .arg(r.ceiling_gbps, 0, 'f', 1)},
        {tr("Measured ÷ floor"),
         tr("%1×").arg(r.predicted_step_ms > 0 ? r.step_ms / r.predicted_step_ms : 0, 0, 'f', 2)},
        {tr("Weights"), tr("%1 (%2 of %3 read%4)")
                            .arg(ms(r.weights_ms), q(format_bytes(r.weights_bytes_read)),
                                 request ? q(std::string(to_string(request->weight_dtype))) : tr("weights"),
                                 r.experts_read ? tr(", %1 experts").arg(r.experts_read) : QString())},
        {tr("Attention"), tr("%1 (%2 of cache)").arg(ms(r.attention_ms), q(format_bytes(r.kv_bytes_read)))},
        {tr("The rest"), ms(r.other_ms)},
        {tr("Max relative error"), r.max_rel_error >= 0
                                       ? QString::number(r.max_rel_error, 'e', 2) + tr(" (logits against float64)")
                                       : tr("not checked (models of 64 MiB of weights or less are)")},
        {tr("Kernel"), q(r.kernel)},
        {tr("Kept in"), kept},
    });
    done(note + q(r.message), true);
}

void ProbeView::startMeasuring(const Scenario& s, bool step, KvDtype stored) {
    table_->setRowCount(0);
    measured_for_ = s;
    measured_format_ = stored;
    measured_name_ = model_->resultsDescription();
    measured_step_ = step;
    showWhoseTable();
}

void ProbeView::showWhoseTable() {
    if (table_->rowCount() == 0 || !measured_for_) {
        measured_for_label_->hide();
        return;
    }
    const Scenario& m = *measured_for_;
    const Scenario& now = model_->scenario();
    // What the run measured depends on the model's shape, the workload and the cache's format (and, for a step,
    // the weights' format); a change of anything else (the GPU count, the engine) leaves the figures standing.
    const auto weights = [this](const Scenario& s) {
        return s.deployment ? s.deployment->weight_dtype : model_->modelWeightDtype();
    };
    const bool same = m.arch == now.arch && m.workload == now.workload && m.kv_dtype == now.kv_dtype &&
                      (!measured_step_ || weights(m) == weights(now));
    const QString whose =
        tr("Measured for %1 at %2 tokens × %3, %4 cache")
            .arg(measured_name_, q(format_tokens(m.workload.context_tokens)),
                 q(format_count_of(m.workload.batch, "sequence", "sequences")),
                 q(std::string(to_string(measured_format_))));  // the format stored (fp16 for one it cannot store)
    measured_for_label_->setText(same ? whose + "."
                                      : whose + tr(" — not the current inputs; run it again to measure them."));
    measured_for_label_->setStyleSheet(same ? QString() : QStringLiteral("color: #c0392b; font-weight: bold;"));
    measured_for_label_->show();
}

void ProbeView::fillTable(const QList<std::pair<QString, QString>>& rows) {
    table_->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < rows.size(); ++i) {
        table_->setItem(i, 0, new QTableWidgetItem(rows[i].first));
        auto* value = new QTableWidgetItem(rows[i].second);
        value->setToolTip(rows[i].second);  // the whole value when a narrow window cuts it
        table_->setItem(i, 1, value);
    }
    table_->resizeRowsToContents();
    showWhoseTable();
}

void ProbeView::runStopwatch() { runner_->stopwatch(tokens_->value()); }

void ProbeView::clearStopwatch(int tokens) {
    tokens_->setValue(tokens);  // a run another page asked for shows its count here, so run and record agree
    cached_->clear();
    uncached_->clear();
    cum_cached_ = cum_uncached_ = 0;
    texts_->clear();
    x_->setRange(0, tokens);
    y_->setRange(0, 1);
}

void ProbeView::addStep(bool cached, double ms) {
    QLineSeries* s = cached ? cached_ : uncached_;
    double& cum = cached ? cum_cached_ : cum_uncached_;
    cum += ms;
    s->append(s->count() + 1, cum);
    if (cum > y_->max()) y_->setRange(0, cum * 1.1);
}

void ProbeView::showProbe(const probe::ProbeReport& r) {
    const QString note = std::exchange(note_, QString());
    if (r.status != probe::Status::ok) {
        done(note + q(std::string(to_string(r.status))) + ": " + q(r.message), false);
        return;
    }
    const auto& a = r.allocation;
    const auto& at = r.attention;
    const auto diff = static_cast<std::int64_t>(a.measured_bytes) - static_cast<std::int64_t>(a.predicted_bytes);
    const QList<std::pair<QString, QString>> rows{
        {tr("Device"), q(r.device.backend) + " — " + q(r.device.name)},
        {tr("Predicted (calculator)"),
         q(format_bytes(a.predicted_bytes) + " (" + format_count(a.predicted_bytes) + " B)")},
        {tr("Requested (%1 allocations)").arg(a.allocations),
         q(format_bytes(a.requested_bytes) + " (" + format_count(a.requested_bytes) + " B)") +
             (a.requested_bytes == a.predicted_bytes ? tr(" = predicted") : tr(" ≠ predicted"))},
        {tr("Measured (%1)").arg(r.device.host_memory ? tr("resident growth") : tr("device memory drop")),
         q(format_bytes(a.measured_bytes) + " (" + format_count(a.measured_bytes) + " B)")},
        {tr("Measured − predicted"),
         q(format_signed_bytes(diff)) +
             tr(" (granularity %1, from %2)").arg(q(format_bytes(a.granularity_bytes)), q(a.granularity_source))},
        {tr("Workspace (not cache)"), q(format_bytes(a.workspace_bytes))},
        {tr("Decode attention"), tr("%1 ms per step (median of %2)").arg(at.median_ms, 0, 'f', 2).arg(at.runs)},
        {tr("KV read per step"), q(format_bytes(at.kv_bytes_read)) + tr(" at %1 GB/s").arg(at.kv_read_gbps, 0, 'f', 1)},
        {tr("Read ceiling (same run)"),
         tr("%1 GB/s → %2% of it").arg(at.ceiling_gbps, 0, 'f', 1).arg(at.fraction_of_ceiling * 100, 0, 'f', 0)},
        {tr("Max relative error"), QString::number(at.max_rel_error, 'e', 2) + tr(" against float64")},
        {tr("Kernel"), q(at.kernel)},
    };
    table_title_->setText(tr("<b>Allocation check and decode attention</b>"));
    fillTable(rows);
    QString bound = at.runs > 0 ? q(probe::arithmetic_bound_note(at)) : QString();
    if (!bound.isEmpty()) bound[0] = bound[0].toUpper();  // a sentence of its own after the message
    done(note + q(r.message) + (bound.isEmpty() ? QString() : ". " + bound + "."), true);
}

void ProbeView::showStopwatch(const probe::StopwatchReport& r) {
    if (r.status != probe::Status::ok) {
        done(q(std::string(to_string(r.status))) + ": " + q(r.message), false);
        return;
    }
    y_->setRange(0, std::max(cum_cached_, cum_uncached_) * 1.05);
    y_->applyNiceNumbers();
    x_->applyNiceNumbers();
    texts_->setText(
        tr("<b>With the cache:</b> %1<br><b>Recomputing:</b> %2<br>%3")
            .arg(q(r.text_cached).toHtmlEscaped(), q(r.text_uncached).toHtmlEscaped(),
                 r.tokens_identical
                     ? tr("Identical token for token (largest logit difference %1).").arg(r.max_logit_diff, 0, 'e', 1)
                     : tr("The texts differ.")));
    QString note = q(probe::stopwatch_gap_note(r));
    if (!note.isEmpty()) note[0] = note[0].toUpper();  // a sentence of its own after the message
    done(q(r.message) + (note.isEmpty() ? QString() : ". " + note + "."), true);
}

void ProbeView::done(const QString& message, bool ok) {
    status_->setText(message);
    status_->setStyleSheet(ok ? QString() : "color: #d63031;");
    progress_->setValue(ok ? 1000 : progress_->value());
}

}  // namespace kvscope::ui
