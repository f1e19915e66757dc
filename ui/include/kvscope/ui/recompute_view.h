#pragma once
// Learn › The cost of recomputing: work per generated token with the cache (flat) and without
// it (growing), or the cumulative work (a straight line against n(n+1)/2), for the current
// scenario — with the stopwatch's measured times overlaid on their own axis once it has run.

#include <QWidget>

#include <vector>

#include "kvscope/probe/probe.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QPushButton;
class QSpinBox;
class QValueAxis;

namespace kvscope::ui {

class ScenarioModel;

class RecomputeView : public QWidget {
    Q_OBJECT
public:
    explicit RecomputeView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] bool cumulative() const { return cumulative_; }
    void setCumulative(bool on);
    [[nodiscard]] QSpinBox* tokensField() const { return tokens_; }
    [[nodiscard]] QLabel* summary() const { return summary_; }
    [[nodiscard]] QLineSeries* cachedSeries() const { return cached_; }
    [[nodiscard]] QLineSeries* uncachedSeries() const { return uncached_; }
    [[nodiscard]] QLineSeries* measuredCachedSeries() const { return measured_cached_; }
    [[nodiscard]] QLineSeries* measuredUncachedSeries() const { return measured_uncached_; }
    [[nodiscard]] QChartView* chartView() const { return view_; }
    [[nodiscard]] QPushButton* runButton() const { return run_; }
    // What the stopwatch measured, or is measuring, in words.
    [[nodiscard]] QLabel* measuredLabel() const { return measured_; }

public slots:
    // The stopwatch (run from here or the Probe tab): cleared at its start, a point per step, the report at the end.
    // `tokens`: what the run times (a request past the stopwatch's most is said to be lowered).
    void stopwatchStarted(int tokens);
    void addStopwatchStep(bool cached, double ms);
    void setStopwatch(const probe::StopwatchReport& report);
    // The probe's worker is free again (after a report, a failure to start, or a cancel).
    void probeIdle();

signals:
    void stopwatchRequested(int tokens);

protected:
    void changeEvent(QEvent* event) override;

private:
    void refresh();
    void plotMeasured();
    void labelRun();  // the run button, with the tokens it times

    ScenarioModel* model_;
    QComboBox* mode_;
    QSpinBox* tokens_;
    QPushButton* run_;
    QLabel* summary_;
    QLabel* measured_;
    QChart* chart_;
    QChartView* view_;
    QLineSeries* cached_;
    QLineSeries* uncached_;
    QLineSeries* measured_cached_;
    QLineSeries* measured_uncached_;
    QValueAxis* x_;
    QValueAxis* y_;
    QValueAxis* y_ms_;
    bool cumulative_ = false;
    std::vector<double> cached_ms_, uncached_ms_;
    bool waiting_ = false;
    int requested_ = 0;  // the tokens asked for by this page's last click, when more than the stopwatch times
};

}  // namespace kvscope::ui
