#include "kvscope/ui/traffic_view.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/chart_palette.h"
#include "kvscope/ui/decimal_spin_box.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/stale_note.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

DecimalSpinBox* decimal(double lo, double hi, double value, int decimals, const QString& suffix = {}) {
    auto* d = new DecimalSpinBox;
    d->setRange(lo, hi);
    d->setDecimals(decimals);
    d->setValue(value);
    d->setSuffix(suffix);
    return d;
}

BigSpinBox* big(BigSpinBox::Kind kind, std::uint64_t lo, std::uint64_t hi, std::uint64_t value) {
    auto* b = new BigSpinBox(kind, BigSpinBox::Step::doubling);
    b->setRange(lo, hi);
    b->setValue(value);
    return b;
}

// Widgets side by side, as one row of a form.
QHBoxLayout* row(std::initializer_list<QWidget*> widgets) {
    auto* r = new QHBoxLayout;
    for (QWidget* w : widgets) r->addWidget(w);
    return r;
}

// Rows as an HTML table: the name, then its figures.
QString rows_html(const std::vector<std::pair<std::string, std::string>>& rows) {
    QString html = "<table cellspacing='2'>";
    for (const auto& [name, text] : rows)
        html += "<tr><td><b>" + QString::fromStdString(name).toHtmlEscaped() + "</b>&nbsp;&nbsp;</td><td>" +
                QString::fromStdString(text).toHtmlEscaped() + "</td></tr>";
    return html + "</table>";
}

}  // namespace

TrafficView::TrafficView(ScenarioModel* model, bool remember, QWidget* parent)
    : QWidget(parent),
      model_(model),
      remember_(remember),
      requests_(big(BigSpinBox::Kind::count, 1, kMaxRequests, 1000)),
      input_(big(BigSpinBox::Kind::tokens, 1, 1ull << 30, 1024)),
      output_(big(BigSpinBox::Kind::tokens, 1, 1ull << 30, 128)),
      shared_prefix_(big(BigSpinBox::Kind::tokens, 0, 1ull << 30, 0)),
      concurrency_(big(BigSpinBox::Kind::count, 0, 100'000'000, 0)),
      groups_(new QSpinBox),
      turns_(new QSpinBox),
      seed_(new QSpinBox),
      rate_(decimal(0.001, 1e6, 10, 3, tr(" /s"))),
      input_range_(decimal(0, 1, 0, 2)),
      output_range_(decimal(0, 1, 0, 2)),
      ttft_(decimal(0.1, 1e7, 500, 1, tr(" ms"))),
      tpot_(decimal(0.1, 1e6, 25, 1, tr(" ms"))),
      all_at_once_(new QCheckBox(tr("all at once"))),
      prefix_caching_(new QCheckBox(tr("prefix caching (the engine's default)"))),
      lengths_only_(new QCheckBox(tr("only its lengths"))),
      ttft_on_(new QCheckBox(tr("TTFT at most"))),
      tpot_on_(new QCheckBox(tr("TPOT at most"))),
      percentile_(new QComboBox),
      router_(new QComboBox),
      trace_(new QLineEdit),
      run_(new QPushButton(tr("&Simulate"))),
      plan_(new QPushButton(tr("How many &GPUs?"))),
      cancel_(new QPushButton(tr("Cancel"))),
      progress_(new QProgressBar),
      status_(new QLabel),
      results_(new QLabel),
      plan_results_(new QLabel),
      simulated_for_(new QLabel),
      kv_used_(new QLineSeries),
      kv_unshared_(new QLineSeries),
      kv_budget_(new QLineSeries),
      kv_worst_(new QLineSeries),
      ttft_curve_(new QLineSeries),
      tpot_curve_(new QLineSeries),
      target_line_(new QLineSeries),
      kv_x_(new QValueAxis),
      kv_y_(new QValueAxis),
      rate_x_(new QValueAxis),
      ms_y_(new QValueAxis) {
    setAcceptDrops(true);
    input_range_->setObjectName("inputRange");
    output_range_->setObjectName("outputRange");
    groups_->setRange(1, 1'000'000);
    turns_->setRange(1, static_cast<int>(kMaxTurns));
    seed_->setRange(0, 2'000'000'000);
    percentile_->addItems({"P50", "P90", "P99"});
    percentile_->setCurrentIndex(2);
    all_at_once_->setChecked(true);
    prefix_caching_->setChecked(true);
    rate_->setEnabled(false);
    connect(all_at_once_, &QCheckBox::toggled, rate_, [this](bool on) { rate_->setEnabled(!on); });
    ttft_->setEnabled(false);
    tpot_->setEnabled(false);
    connect(ttft_on_, &QCheckBox::toggled, ttft_, &QWidget::setEnabled);
    connect(tpot_on_, &QCheckBox::toggled, tpot_, &QWidget::setEnabled);
    trace_->setPlaceholderText(
        tr("or a trace: Azure or BurstGPT CSV, Mooncake or vLLM custom JSON lines (drop it here)"));
    trace_->setClearButtonEnabled(true);
    layOut(buildInputs());

    connect(run_, &QPushButton::clicked, this, &TrafficView::simulate);
    connect(plan_, &QPushButton::clicked, this, &TrafficView::servePlan);
    connect(cancel_, &QPushButton::clicked, this, &TrafficView::cancel);
    connect(model_, &ScenarioModel::changed, this, &TrafficView::showWhose);
    // The answer's sizes follow View ▸ Decimal units as every other view's do.
    connect(model_, &ScenarioModel::unitsChanged, this, [this] {
        if (answer_ && asked_) render(*answer_, *asked_);
    });
    restoreInputs();
    status_->setText(tr("Describe the traffic (or choose a trace) and press Simulate."));
}

QGroupBox* TrafficView::buildInputs() {
    auto* browse = new QPushButton(tr("&Browse…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Choose a trace"), trace_->text(),
                                                          tr("Traces (*.csv *.jsonl *.json);;All files (*)"));
        if (!path.isEmpty()) trace_->setText(path);
    });

    auto* form = new QFormLayout;
    form->addRow(tr("Requests"), requests_);
    form->addRow(tr("Arrivals (Poisson)"), row({rate_, all_at_once_}));
    form->addRow(tr("At most in flight (0: no limit)"), concurrency_);
    form->addRow(tr("Prompt tokens"), row({input_, new QLabel(tr("± ratio")), input_range_}));
    form->addRow(tr("Output tokens"), row({output_, new QLabel(tr("± ratio")), output_range_}));
    form->addRow(tr("Shared system prompt"), row({shared_prefix_, new QLabel(tr("different")), groups_}));
    form->addRow(tr("Turns a conversation"), turns_);
    form->addRow(tr("Seed"), seed_);
    form->addRow(tr("Trace file"), row({trace_, browse}));
    lengths_only_->setToolTip(
        tr("Draw the prompts' and answers' lengths from the trace's requests, and take the "
           "arrivals, system prompts and turns from the fields above (kvscope-cli "
           "--lengths-from)"));
    form->addRow(QString(), lengths_only_);
    form->addRow(QString(), prefix_caching_);
    form->addRow(tr("Target"), row({ttft_on_, ttft_}));
    form->addRow(QString(), row({tpot_on_, tpot_, percentile_}));
    router_->addItem(tr("conversations in turn"));
    router_->addItem(tr("one system prompt together"));
    router_->setToolTip(
        tr("How the replicas share the traffic when How many GPUs? serves it on several (plan "
           "--router round-robin or prefix)"));
    form->addRow(tr("Replicas' router"), router_);
    auto* buttons = new QHBoxLayout;
    run_->setDefault(true);
    run_->setToolTip(tr("Serve this traffic as the deployment's engine schedules it (Ctrl+Return)"));
    run_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    cancel_->setEnabled(false);
    plan_->setToolTip(
        tr("The fewest GPUs that serve this traffic at its rate within the target: each tensor × "
           "pipeline layout that fits, in as many replicas as it takes (kvscope-cli plan with a target)"));
    buttons->addWidget(run_);
    buttons->addWidget(plan_);
    buttons->addWidget(cancel_);
    buttons->addStretch();
    form->addRow(buttons);
    progress_->setRange(0, 100);
    progress_->setValue(0);
    form->addRow(progress_);
    auto* inputs = new QGroupBox(tr("Traffic"));
    inputs->setLayout(form);
    return inputs;
}

void TrafficView::layOut(QGroupBox* inputs) {
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    results_->setTextFormat(Qt::RichText);
    results_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    results_->setWordWrap(true);
    simulated_for_->setWordWrap(true);
    simulated_for_->hide();
    buildCharts();

    auto* right = new QVBoxLayout;
    right->addWidget(simulated_for_);
    right->addWidget(results_);
    plan_results_->setTextFormat(Qt::RichText);
    plan_results_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    plan_results_->setWordWrap(true);
    plan_results_->hide();
    right->addWidget(plan_results_);
    right->addWidget(status_);
    right->addStretch();
    auto* columns = new QHBoxLayout;
    columns->addWidget(inputs, 0, Qt::AlignTop);
    columns->addLayout(right, 1);
    // The charts under both, side by side, wide enough to read.
    auto* charts = new QHBoxLayout;
    for (QChart* c : {kv_chart_, curve_chart_}) {
        c->legend()->setAlignment(Qt::AlignBottom);
        auto* view = new QChartView(c);
        view->setMinimumHeight(300);
        if (c == kv_chart_)
            view->setToolTip(
                tr("in use: the blocks the requests hold (a shared block once)\n"
                   "no sharing: the same requests with a copy each of what they share — the gap is what "
                   "prefix caching saved\nbudget: the engine's KV cache\nworst case: the sequences that "
                   "ran at once, each at the full context"));
        view->setRenderHint(QPainter::Antialiasing);
        charts->addWidget(view, 1);
    }
    auto* page = new QVBoxLayout(this);
    page->addWidget(new StaleNote(model_));
    auto* intro = new QLabel(
        tr("How much cache real traffic uses, and how fast it is served: the requests served as the deployment's "
           "engine schedules them — vLLM's V1 scheduler (continuous batching, chunked prefill, paged blocks from the "
           "fit's budget, prefix caching, preemption) or SGLang's (a radix cache to the token, prefill batches before "
           "decodes, retraction) — on its GPU, each step timed by the roofline. kvscope-cli simulate gives the "
           "same figures."));
    intro->setWordWrap(true);
    page->addWidget(intro);
    page->addLayout(columns);
    page->addLayout(charts, 1);
}

TrafficView::~TrafficView() {
    saveInputs();
    if (stop_) stop_->store(true);
    join();
}

void TrafficView::join() {
    if (worker_.joinable()) worker_.join();
    done_ = true;
}

namespace {

// A chart of `series` over the axes `x` (bottom, titled `x_title`) and `y` (left), following the palette.
QChart* line_chart(const QString& title, std::initializer_list<QLineSeries*> series, QValueAxis* x,
                   const QString& x_title, QValueAxis* y, const QPalette& palette) {
    auto* chart = new QChart;
    chart->setTitle(title);
    for (QLineSeries* s : series) chart->addSeries(s);
    x->setTitleText(x_title);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* s : series) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
    follow_palette(chart, palette);
    return chart;
}

}  // namespace

void TrafficView::buildCharts() {
    kv_used_->setName(tr("in use"));
    // The prefix saving: what the same requests would hold with a copy each of what they share.
    kv_unshared_->setName(tr("no sharing"));
    kv_budget_->setName(tr("budget"));
    kv_worst_->setName(tr("worst case"));
    // The budget in the colour the Deployment tab gives a limit, the worst case in grey; both dashed; the target as
    // the budget, dotted.
    kv_budget_->setPen(QPen(QColor(0xe6, 0x7e, 0x22), 2, Qt::DashLine));
    kv_worst_->setPen(QPen(QColor(0x80, 0x80, 0x80), 2, Qt::DashLine));
    target_line_->setPen(QPen(QColor(0xe6, 0x7e, 0x22), 2, Qt::DotLine));
    kv_unshared_->setPen(QPen(QColor(0x27, 0xae, 0x60), 1.5, Qt::DashDotLine));
    kv_chart_ = line_chart(tr("KV cache in use over time"), {kv_used_, kv_unshared_, kv_budget_, kv_worst_}, kv_x_,
                           tr("time (s)"), kv_y_, palette());
    ttft_curve_->setName(tr("TTFT"));
    tpot_curve_->setName(tr("TPOT"));
    target_line_->setName(tr("target"));
    ms_y_->setTitleText(tr("ms"));
    curve_chart_ = line_chart(tr("Latency against request rate"), {ttft_curve_, tpot_curve_, target_line_}, rate_x_,
                              tr("requests a second"), ms_y_, palette());
}

void TrafficView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && kv_chart_) {
        follow_palette(kv_chart_, palette());
        follow_palette(curve_chart_, palette());
    }
    QWidget::changeEvent(event);
}

TrafficQuestion TrafficView::question() const {
    TrafficQuestion q;
    q.spec.requests = requests_->value();
    if (!all_at_once_->isChecked()) q.spec.rate = rate_->value();
    q.spec.input = {input_->value(), input_range_->value()};
    q.spec.output = {output_->value(), output_range_->value()};
    q.spec.shared_prefix = shared_prefix_->value();
    q.spec.prefix_groups = static_cast<std::uint64_t>(groups_->value());
    q.spec.turns = static_cast<std::uint64_t>(turns_->value());
    q.spec.seed = static_cast<std::uint64_t>(seed_->value());
    q.trace = trace_->text().trimmed().toStdString();
    // Only the trace's lengths: the described traffic draws its prompts and answers from them (--lengths-from).
    if (lengths_only_->isChecked() && !q.trace.empty()) {
        q.spec.lengths_from = q.trace;
        q.trace.clear();
    }
    q.concurrency = concurrency_->value();
    q.prefix_caching = prefix_caching_->isChecked();
    const double percentiles[] = {50, 90, 99};
    q.target.percentile = percentiles[std::clamp(percentile_->currentIndex(), 0, 2)];
    if (ttft_on_->isChecked()) q.target.ttft_ms = ttft_->value();
    if (tpot_on_->isChecked()) q.target.tpot_ms = tpot_->value();
    q.curve = q.trace.empty();
    q.router = router_->currentIndex() == 1 ? Router::prefix : Router::round_robin;
    return q;
}

std::optional<std::pair<Scenario, TrafficQuestion>> TrafficView::ready(const QString& verb) {
    if (running()) return std::nullopt;
    for (BigSpinBox* b : {requests_, input_, output_, shared_prefix_, concurrency_})
        if (!b->commitPending()) {
            status_->setText(tr("%1: %2").arg(verb, b->problem()));
            return std::nullopt;
        }
    // A decimal typed and not entered counts as entered; one outside the field's range is said, not run as the last.
    // Those the run uses only: a trace gives the lengths (and, in full, the arrivals), and a target left off is none.
    const bool trace = !trace_->text().trimmed().isEmpty();
    const struct {
        DecimalSpinBox* field;
        QString name;
        bool used;
    } decimals[] = {{rate_, tr("Arrivals"), !all_at_once_->isChecked() && (!trace || lengths_only_->isChecked())},
                    {input_range_, tr("Prompt tokens ± ratio"), !trace},
                    {output_range_, tr("Output tokens ± ratio"), !trace},
                    {ttft_, tr("TTFT target"), ttft_on_->isChecked()},
                    {tpot_, tr("TPOT target"), tpot_on_->isChecked()}};
    for (const auto& d : decimals) {
        if (!d.used) continue;
        // Asked before interpretText(), which would put the last value back over text out of range in silence.
        if (!d.field->hasAcceptableInput()) {
            status_->setText(tr("%1: %2: '%3' is not between %4 and %5")
                                 .arg(verb, d.name, d.field->cleanText(), d.field->textFromValue(d.field->minimum()),
                                      d.field->textFromValue(d.field->maximum())));
            return std::nullopt;
        }
        d.field->interpretText();
    }
    // Text typed in the inputs (a context not yet entered) counts as entered, as it does before a save: a run never
    // takes the old value of a field that shows a new one.
    if (commit_typed_) {
        if (const QStringList left = commit_typed_(); !left.isEmpty()) {
            status_->setText(tr("%1: %2. Correct the marked field, or press Esc in it to put back its value.")
                                 .arg(verb, left.join("; ")));
            return std::nullopt;
        }
    }
    if (!model_->resultsAreCurrent()) {
        status_->setText(tr("%1: the inputs need attention first (%2).")
                             .arg(verb, QString::fromStdString(join_errors(model_->errors()))));
        return std::nullopt;
    }
    Scenario s = model_->scenario();
    if (!s.deployment) {
        status_->setText(tr("%1: choose a GPU in the Deployment fit tab first.").arg(verb));
        return std::nullopt;
    }
    TrafficQuestion q = question();
    q.measured = model_->results().measured_step;  // a step probe --step kept for this scenario on its GPU
    return std::pair{std::move(s), std::move(q)};
}

void TrafficView::start(const QString& doing, std::function<std::function<void()>(const SimulationProgress&)> work) {
    saveInputs();
    join();
    stop_ = std::make_shared<std::atomic<bool>>(false);
    done_ = false;
    run_->setEnabled(false);
    plan_->setEnabled(false);
    cancel_->setEnabled(true);
    progress_->setValue(0);
    status_->setText(doing);
    auto stop = stop_;
    worker_ = std::thread([this, work = std::move(work), stop] {
        int shown = -1;
        const SimulationProgress progress = [this, stop, &shown](double f) {
            const int percent = static_cast<int>(f * 100);
            if (percent != shown) {
                shown = percent;
                QMetaObject::invokeMethod(
                    this, [this, percent] { progress_->setValue(percent); }, Qt::QueuedConnection);
            }
            return !stop->load();
        };
        auto done = std::make_shared<std::function<void()>>(work(progress));
        QMetaObject::invokeMethod(
            this,
            [this, done] {
                join();
                run_->setEnabled(true);
                plan_->setEnabled(true);
                cancel_->setEnabled(false);
                (*done)();
            },
            Qt::QueuedConnection);
    });
}

void TrafficView::simulate() {
    auto asked = ready(tr("Not simulated"));
    if (!asked) return;
    const Scenario s = std::move(asked->first);
    TrafficQuestion q = std::move(asked->second);
    if (!q.trace.empty() && (q.target.ttft_ms || q.target.tpot_ms)) {
        status_->setText(
            tr("Not simulated: a target is sought over the described traffic's rates; clear the trace "
               "file or the target."));
        return;
    }
    start(tr("Simulating…"), [this, s, q](const SimulationProgress& progress) -> std::function<void()> {
        auto result = std::make_shared<Result<TrafficAnswer>>(answer_traffic(s, q, progress));
        return [this, result, s, q] { show(*result, s, q); };
    });
}

void TrafficView::servePlan() {
    const QString verb = tr("Not planned");
    auto asked = ready(verb);
    if (!asked) return;
    const Scenario s = std::move(asked->first);
    TrafficQuestion q = std::move(asked->second);
    // What kvscope-cli plan refuses, said the same way.
    QString missing;
    if (!q.trace.empty())
        missing = tr("a plan serves the described traffic; clear the trace file");
    else if (!q.spec.rate)
        missing = tr("a plan is weighed at a rate of requests a second: untick All at once");
    else if (q.concurrency > 0)
        missing = tr("a plan's replicas share the traffic: set At most in flight to 0");
    else if (!q.target.ttft_ms && !q.target.tpot_ms)
        missing = tr("a plan's layouts are weighed against a target: tick TTFT or TPOT");
    if (!missing.isEmpty()) {
        status_->setText(tr("%1: %2.").arg(verb, missing));
        return;
    }
    q.curve = false;
    start(tr("Serving the traffic on each layout…"),
          [this, s, q](const SimulationProgress& progress) -> std::function<void()> {
              // As kvscope-cli plan with a target: the layouts the plan finds with its default limits.
              const auto plan = plan_deployments(s.arch, s.kv_dtype, s.workload, *s.deployment, PlanLimits{});
              auto result = std::make_shared<Result<std::vector<LayoutService>>>(
                  plan ? serve_plan(s, *plan, q, 64, progress) : Result<std::vector<LayoutService>>(plan.errors()));
              return [this, result, s, q] { showPlan(*result, s, q); };
          });
}

void TrafficView::showPlan(const Result<std::vector<LayoutService>>& result, const Scenario& of,
                           const TrafficQuestion& q) {
    if (saidWhyNot(result,
                   layouts_ ? tr("Cancelled: the plan shown is that of the run before.") : tr("Cancelled: no plan."),
                   tr("Not planned")))
        return;
    progress_->setValue(100);
    layouts_ = *result;
    planned_for_ = of;
    const QString at = "P" + QString::number(q.target.percentile);
    // Whose the plan is: the scenario and the traffic as they were asked.
    QString html = "<p><b>" + tr("How many GPUs") + "</b> " +
                   tr("for %1 on %2, %3")
                       .arg(QString::fromStdString(of.arch.name).toHtmlEscaped(),
                            QString::fromStdString(of.deployment->gpu.name).toHtmlEscaped(),
                            QString::fromStdString(traffic_text(q.spec, "", q.spec.requests, 0)).toHtmlEscaped()) +
                   " — " + QString::fromStdString(slo_rows(q.target, std::nullopt).front().second).toHtmlEscaped() +
                   ", " + tr("each layout in the fewest replicas that meet it") + ":</p><table cellspacing='6'>" +
                   "<tr><th align='right'>" + tr("GPUs") + "</th><th align='left'>" + tr("TP × PP × replicas") +
                   "</th><th align='right'>TTFT " + at + " ms</th><th align='right'>TPOT " + at +
                   " ms</th><th align='right'>" + tr("requests/s") + "</th><th>" + tr("meets") + "</th></tr>";
    const LayoutService* smallest = nullptr;
    std::vector<std::string> warnings;
    for (const LayoutService& l : *result) {
        PlanOption layout;
        layout.tp = l.tp;
        layout.pp = l.pp;
        layout.replicas = l.replicas;
        html += "<tr><td align='right'>" + QString::number(l.gpus) + "</td><td>" +
                QString::fromStdString(plan_layout_text(layout)).toHtmlEscaped() + "</td><td align='right'>" +
                QString::fromStdString(service_ms_text(l, l.ttft_ms, 1)) + "</td><td align='right'>" +
                QString::fromStdString(service_ms_text(l, l.tpot_ms, 2)) + "</td><td align='right'>" +
                QString::fromStdString(number_text(l.request_throughput, Notation::fixed, 2)) + "</td><td>" +
                (l.meets ? tr("yes") : tr("no")) + "</td></tr>";
        if (l.meets && !smallest) smallest = &l;
        for (const std::string& w : l.warnings)
            if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    }
    html += "</table>";
    if (smallest) {
        PlanOption layout;
        layout.tp = smallest->tp;
        layout.pp = smallest->pp;
        layout.replicas = smallest->replicas;
        html += "<p>" +
                tr("smallest layout meeting the target: %1 (%2 GPUs)")
                    .arg(QString::fromStdString(plan_layout_text(layout)).toHtmlEscaped())
                    .arg(smallest->gpus) +
                "</p>";
    } else {
        html += "<p>" + tr("no layout meets the target at this rate with 64 replicas or fewer") + "</p>";
    }
    plan_html_ = html;
    plan_results_->show();
    showWhose();
    QString notes;
    for (const std::string& w : warnings) notes += "warning: " + QString::fromStdString(w) + "\n";
    status_->setText(notes.trimmed());
    emit finished();
}

void TrafficView::cancel() {
    if (stop_) stop_->store(true);
}

template <class T>
bool TrafficView::saidWhyNot(const Result<T>& result, const QString& cancelled, const QString& verb) {
    if (result) return false;
    status_->setText(result.errors().front().message == "cancelled"
                         ? cancelled
                         : tr("%1: %2").arg(verb, QString::fromStdString(result.error_text())));
    progress_->setValue(0);
    emit finished();
    return true;
}

void TrafficView::show(const Result<TrafficAnswer>& result, const Scenario& of, const TrafficQuestion& q) {
    if (saidWhyNot(result, tr("Cancelled: the figures shown are those of the run before."), tr("Not simulated")))
        return;
    answer_ = *result;
    answered_for_ = of;
    asked_ = q;
    progress_->setValue(100);
    render(*answer_, q);
    showWhose();
    emit finished();
}

void TrafficView::render(const TrafficAnswer& a, const TrafficQuestion& q) {
    // The rows and charts say what was simulated: the question as it was asked, not the fields as they are now.
    std::vector<std::pair<std::string, std::string>> rows{
        {"traffic", traffic_text(q.spec, q.trace, a.requests, q.concurrency)}};
    for (auto& r : simulation_rows(a.report, a.setup.settings, model_->units())) rows.push_back(std::move(r));
    if (q.target.ttft_ms || q.target.tpot_ms)
        for (auto& r : slo_rows(q.target, a.max_rate)) rows.push_back(std::move(r));
    results_->setText(rows_html(rows));
    QString notes;
    for (const std::string& n : a.setup.notes) notes += "note: " + QString::fromStdString(n) + "\n";
    for (const std::string& w : a.warnings) notes += "warning: " + QString::fromStdString(w) + "\n";
    status_->setText(notes.trimmed());

    // The cache in use over time, per GPU, beside the budget and the worst case.
    const double unit = model_->units() == UnitSystem::binary ? double(1ull << 30) : 1e9;
    kv_y_->setTitleText(model_->units() == UnitSystem::binary ? tr("GiB per GPU") : tr("GB per GPU"));
    QList<QPointF> used, unshared;
    for (const TimelinePoint& p : a.report.timeline) {
        used.append({p.t_s, double(p.kv_used_bytes) / unit});
        unshared.append({p.t_s, double(p.kv_unshared_bytes) / unit});
    }
    kv_used_->replace(used);
    kv_unshared_->replace(unshared);
    const double end = a.report.duration_s > 0 ? a.report.duration_s : 1;
    const double budget = double(a.report.kv_budget_bytes_per_gpu) / unit;
    const double worst = double(a.report.kv_worst_case_bytes_per_gpu) / unit;
    kv_budget_->replace({{0, budget}, {end, budget}});
    kv_worst_->replace({{0, worst}, {end, worst}});
    kv_x_->setRange(0, end);
    kv_y_->setRange(0, std::max({budget, worst, 1e-9}) * 1.08);

    // Latency against request rate, at the targets' percentile.
    const auto pick = [&](const Percentiles& p) { return at_percentile(p, q.target.percentile); };
    QList<QPointF> ttft, tpot;
    double top = 1, right = 1;
    for (const ServingPoint& p : a.curve) {
        ttft.append({p.rate, pick(p.ttft_ms)});
        tpot.append({p.rate, pick(p.tpot_ms)});
        top = std::max({top, pick(p.ttft_ms), pick(p.tpot_ms)});
        right = std::max(right, p.rate);
    }
    const QString at = "P" + QString::number(q.target.percentile);
    ttft_curve_->setName(tr("TTFT %1").arg(at));
    tpot_curve_->setName(tr("TPOT %1").arg(at));
    ttft_curve_->replace(ttft);
    tpot_curve_->replace(tpot);
    const std::optional<double> target = q.target.ttft_ms ? q.target.ttft_ms : q.target.tpot_ms;
    target_line_->setName(q.target.ttft_ms ? tr("TTFT target") : tr("TPOT target"));
    if (target && !a.curve.empty())
        target_line_->replace({{0, *target}, {right, *target}});
    else
        target_line_->clear();
    rate_x_->setRange(0, right * 1.02);
    ms_y_->setRange(0, std::min(top, target ? std::max(*target * 4, 1.0) : top) * 1.08);
}

void TrafficView::showWhose() {
    // The plan's table says whose it is in its heading; once the scenario has changed it says so too.
    if (planned_for_)
        plan_results_->setText(plan_html_ + (*planned_for_ == model_->scenario()
                                                 ? QString()
                                                 : "<p><b>" +
                                                       tr("The scenario has changed since: this plan is not its "
                                                          "own; How many GPUs? again for it.") +
                                                       "</b></p>"));
    if (!answered_for_) {
        simulated_for_->hide();
        return;
    }
    const Scenario& s = *answered_for_;
    const QString whose = tr("Simulated for %1 on %2 × %3, %4 tokens of context.")
                              .arg(display_name(model_->catalog(), s))
                              .arg(s.parallel.gpus())
                              .arg(QString::fromStdString(s.deployment ? s.deployment->gpu.name : std::string()))
                              .arg(QString::fromStdString(format_count(s.workload.context_tokens)));
    const bool current = s == model_->scenario();
    simulated_for_->setText(current ? whose
                                    : whose + " " +
                                          tr("The scenario has changed since: these are not its figures; "
                                             "Simulate again for them."));
    simulated_for_->setStyleSheet(current ? QString() : QStringLiteral("font-weight: bold;"));
    simulated_for_->show();
}

void TrafficView::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() && event->mimeData()->urls().size() == 1 &&
        event->mimeData()->urls().front().isLocalFile())
        event->acceptProposedAction();
}

void TrafficView::dropEvent(QDropEvent* event) {
    trace_->setText(event->mimeData()->urls().front().toLocalFile());
    event->acceptProposedAction();
}

void TrafficView::saveInputs() const {
    if (!remember_) return;
    QSettings settings;
    settings.beginGroup("traffic");
    settings.setValue("requests", QString::number(requests_->value()));
    settings.setValue("all_at_once", all_at_once_->isChecked());
    settings.setValue("rate", rate_->value());
    settings.setValue("concurrency", QString::number(concurrency_->value()));
    settings.setValue("input", QString::number(input_->value()));
    settings.setValue("input_range", input_range_->value());
    settings.setValue("output", QString::number(output_->value()));
    settings.setValue("output_range", output_range_->value());
    settings.setValue("shared_prefix", QString::number(shared_prefix_->value()));
    settings.setValue("groups", groups_->value());
    settings.setValue("turns", turns_->value());
    settings.setValue("seed", seed_->value());
    settings.setValue("trace", trace_->text());
    settings.setValue("prefix_caching", prefix_caching_->isChecked());
    settings.setValue("ttft_on", ttft_on_->isChecked());
    settings.setValue("ttft", ttft_->value());
    settings.setValue("tpot_on", tpot_on_->isChecked());
    settings.setValue("tpot", tpot_->value());
    settings.setValue("percentile", percentile_->currentIndex());
    settings.setValue("router", router_->currentIndex());
    settings.setValue("lengths_only", lengths_only_->isChecked());
}

void TrafficView::restoreInputs() {
    if (!remember_) return;
    QSettings settings;
    settings.beginGroup("traffic");
    if (!settings.contains("requests")) return;
    const auto count = [&](const char* key, BigSpinBox* field) {
        bool ok = false;
        const qulonglong v = settings.value(key).toString().toULongLong(&ok);
        if (ok) field->setValue(v);
    };
    count("requests", requests_);
    all_at_once_->setChecked(settings.value("all_at_once", true).toBool());
    rate_->setValue(settings.value("rate", 10.0).toDouble());
    count("concurrency", concurrency_);
    count("input", input_);
    input_range_->setValue(settings.value("input_range", 0.0).toDouble());
    count("output", output_);
    output_range_->setValue(settings.value("output_range", 0.0).toDouble());
    count("shared_prefix", shared_prefix_);
    groups_->setValue(settings.value("groups", 1).toInt());
    turns_->setValue(settings.value("turns", 1).toInt());
    seed_->setValue(settings.value("seed", 0).toInt());
    trace_->setText(settings.value("trace").toString());
    prefix_caching_->setChecked(settings.value("prefix_caching", true).toBool());
    ttft_on_->setChecked(settings.value("ttft_on", false).toBool());
    ttft_->setValue(settings.value("ttft", 500.0).toDouble());
    tpot_on_->setChecked(settings.value("tpot_on", false).toBool());
    tpot_->setValue(settings.value("tpot", 25.0).toDouble());
    percentile_->setCurrentIndex(settings.value("percentile", 2).toInt());
    router_->setCurrentIndex(std::clamp(settings.value("router", 0).toInt(), 0, 1));
    lengths_only_->setChecked(settings.value("lengths_only", false).toBool());
}

}  // namespace kvscope::ui
