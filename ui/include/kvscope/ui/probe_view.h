#pragma once
// The probe on this machine: detected devices, the current scenario's cache allocated
// and checked (predicted against measured), decode attention timed against the measured
// bandwidth ceiling, and the stopwatch as a live chart of cumulative time per token with
// the two generated texts. Runs off the GUI thread with progress and Cancel.

#include <QWidget>

#include <memory>
#include <optional>

#include "kvscope/probe/probe.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QValueAxis;

namespace kvscope::ui {

class ProbeRunner;
class ScenarioModel;

class ProbeView : public QWidget {
    Q_OBJECT
public:
    // Runs go through `runner`, which the Learn tab's stopwatch shares.
    ProbeView(ScenarioModel* model, ProbeRunner* runner, QWidget* parent = nullptr);

    [[nodiscard]] bool running() const;
    [[nodiscard]] QLabel* banner() const { return banner_; }
    [[nodiscard]] QLabel* statusLabel() const { return status_; }
    [[nodiscard]] QTableWidget* results() const { return table_; }
    [[nodiscard]] QLineSeries* cachedSeries() const { return cached_; }
    [[nodiscard]] QLineSeries* uncachedSeries() const { return uncached_; }
    [[nodiscard]] QLabel* textsLabel() const { return texts_; }
    [[nodiscard]] QSpinBox* tokensField() const { return tokens_; }
    // Whose the table's figures are ("Measured for Llama 3 8B at 8k tokens × 1, fp16"), and, once the inputs have
    // changed since, that they are not the current ones; hidden while the table is empty.
    [[nodiscard]] QLabel* measuredForLabel() const { return measured_for_label_; }

    // Lists the devices now (the tab does it in the background the first time it is shown,
    // so a slow driver never delays the app's start).
    void refreshDevices();

public slots:
    void runProbe();
    // One decode step of the whole model, beside the calculator's floor.
    void runStep();
    void runStopwatch();
    void cancel();

signals:
    // A run (this tab's or another page's) is over.
    void finished();

protected:
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    // The constructor's parts: the stopwatch's chart, and following what the runner does (whoever asked for it).
    QChartView* buildStopwatchChart();
    void followRunner();
    void applyDevices(const std::vector<probe::DeviceInfo>& devices);
    void clearStopwatch(int tokens);
    void showProbe(const probe::ProbeReport& report);
    void showStep(const probe::StepReport& report);
    void fillTable(const QList<std::pair<QString, QString>>& rows);
    void showStopwatch(const probe::StopwatchReport& report);
    void addStep(bool cached, double ms);
    void done(const QString& message, bool ok);
    // The run that fills the table starts: what it measures (its cache in `stored`, which may stand in for a format
    // the probe cannot store), kept for measured_for_label_.
    void startMeasuring(const Scenario& s, bool step, KvDtype stored);
    void showWhoseTable();

    ScenarioModel* model_;
    ProbeRunner* runner_;
    QComboBox* backend_;
    QLabel* devices_;
    QLabel* banner_;
    QPushButton* probe_button_;
    QPushButton* step_button_;
    QLabel* table_title_;  // what the table shows: the allocation check, or the decode step
    QLabel* measured_for_label_;
    // The inputs the table's figures were measured for, and their name then; a step run also multiplies the weights.
    std::optional<Scenario> measured_for_;
    QString measured_name_;
    bool measured_step_ = false;
    KvDtype measured_format_ = KvDtype::fp16;
    QPushButton* stopwatch_button_;
    QPushButton* cancel_button_;
    QSpinBox* tokens_;
    QProgressBar* progress_;
    QLabel* status_;
    QTableWidget* table_;
    QLineSeries* cached_;
    QLineSeries* uncached_;
    QValueAxis* x_;
    QValueAxis* y_;
    QChart* chart_ = nullptr;
    QLabel* texts_;
    std::optional<probe::StepRequest> step_request_;  // the step running, kept with its result when it ends
    std::string step_model_;                          // and the model it runs
    std::optional<probe::StepRequest> retry_;         // the step to run next, when the device refused its weights
    QString note_;  // said before the probe's own message: what this run does differently
    double cum_cached_ = 0, cum_uncached_ = 0;
    bool devices_listed_ = false;
};

}  // namespace kvscope::ui
