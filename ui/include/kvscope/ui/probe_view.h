#pragma once
// The probe on this machine: detected devices, the current scenario's cache allocated
// and checked (predicted against measured), decode attention timed against the measured
// bandwidth ceiling, and the stopwatch as a live chart of cumulative time per token with
// the two generated texts. Runs off the GUI thread with progress and Cancel.

#include <QWidget>

#include <atomic>
#include <memory>

#include "kvscope/probe/probe.h"

class QChart;
class QComboBox;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QThread;
class QValueAxis;

namespace kvscope::ui {

class ScenarioModel;

class ProbeView : public QWidget {
    Q_OBJECT
public:
    explicit ProbeView(ScenarioModel* model, QWidget* parent = nullptr);
    ~ProbeView() override;

    [[nodiscard]] bool running() const { return thread_ != nullptr; }
    [[nodiscard]] QLabel* banner() const { return banner_; }
    [[nodiscard]] QLabel* statusLabel() const { return status_; }
    [[nodiscard]] QTableWidget* results() const { return table_; }
    [[nodiscard]] QLineSeries* cachedSeries() const { return cached_; }
    [[nodiscard]] QLineSeries* uncachedSeries() const { return uncached_; }
    [[nodiscard]] QLabel* textsLabel() const { return texts_; }
    [[nodiscard]] QSpinBox* tokensField() const { return tokens_; }

    // Lists the devices now (the tab does it in the background the first time it is shown,
    // so a slow driver never delays the app's start).
    void refreshDevices();

public slots:
    void runProbe();
    void runStopwatch();
    // The stopwatch for `tokens` tokens, as another page asks for it (the Learn tab's): the tab's own
    // field shows the count, so the run and its record agree.
    void runStopwatchFor(int tokens);
    void cancel();

signals:
    void finished();
    // The stopwatch, for views that overlay it: started, one step measured, its report.
    void stopwatchStarted();
    void stopwatchStep(bool cached, double ms);
    void stopwatchFinished(const probe::StopwatchReport& report);

protected:
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void applyDevices(const std::vector<probe::DeviceInfo>& devices);
    void start(const QString& what, const std::function<void(probe::Backend&, const probe::Control&)>& work);
    void showProbe(const probe::ProbeReport& report, const QString& note);
    void showStopwatch(const probe::StopwatchReport& report);
    void addStep(bool cached, double ms);
    void done(const QString& message, bool ok);

    ScenarioModel* model_;
    QComboBox* backend_;
    QLabel* devices_;
    QLabel* banner_;
    QPushButton* probe_button_;
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
    QThread* thread_ = nullptr;
    std::atomic<bool> cancel_{false};
    double cum_cached_ = 0, cum_uncached_ = 0;
    QThread* lister_ = nullptr;
    bool devices_listed_ = false;
};

}  // namespace kvscope::ui
