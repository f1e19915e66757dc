#pragma once
// Runs the probe and the stopwatch on a worker thread, one run at a time, for every page that asks:
// the Probe tab shows its runs, the Learn tab's recompute page asks for the stopwatch and overlays it.
// Neither page reaches into the other; both listen to this.

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "kvscope/probe/probe.h"
#include "kvscope/ui/background.h"

class QThread;

namespace kvscope::ui {

class ProbeRunner : public QObject {
    Q_OBJECT
public:
    explicit ProbeRunner(QObject* parent = nullptr);
    ~ProbeRunner() override;  // cancels a run and waits for it to free its memory

    [[nodiscard]] bool running() const { return thread_ != nullptr; }
    // The backend the next run opens ("cpu", "cuda", …); the Probe tab's choice.
    void setBackend(std::string id) { backend_ = std::move(id); }
    [[nodiscard]] const std::string& backend() const { return backend_; }

    // Lists the devices on a worker (a slow driver never holds up the window): devicesListed follows.
    void listDevicesInBackground();
    // Lists them now, and says so through devicesListed too.
    void listDevices();

    // Start a run; false (and nothing happens) while another one runs.
    bool probe(const probe::ProbeRequest& request);
    bool step(const probe::StepRequest& request);
    bool stopwatch(int tokens);
    void cancel();

signals:
    void devicesListed(const std::vector<probe::DeviceInfo>& devices);
    void started(const QString& what);
    void progress(double fraction, const QString& text);
    // The stopwatch, for every view that draws it: started for `tokens` tokens, one step, its report.
    void stopwatchStarted(int tokens);
    void stopwatchStep(bool cached, double ms);
    void stopwatchFinished(const probe::StopwatchReport& report);
    void probeFinished(const probe::ProbeReport& report);
    void stepFinished(const probe::StepReport& report);
    // The backend could not be opened: why.
    void failed(const QString& message);
    // The run is over, whatever its end; the runner takes another.
    void finished();

private:
    bool start(const QString& what, std::function<void(probe::Backend&, const probe::Control&)> work);
    // Runs `f` on the runner's own thread (signals to the views are emitted from there).
    void post(std::function<void()> f);

    std::string backend_ = "cpu";
    QThread* thread_ = nullptr;
    Background lister_;  // the devices listed in the background
    std::atomic<bool> cancel_{false};
};

}  // namespace kvscope::ui
