#include "kvscope/ui/probe_runner.h"

#include <QThread>

#include "kvscope/probe/plugins.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {
ProbeRunner::ProbeRunner(QObject* parent) : QObject(parent) {}

ProbeRunner::~ProbeRunner() {
    cancel_ = true;
    // Its own deleteLater would come after this object is gone: delete it here, once it has ended (lister_ waits
    // for itself).
    if (thread_) {
        thread_->wait();
        delete thread_;
    }
}

void ProbeRunner::post(std::function<void()> f) { QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection); }

void ProbeRunner::listDevicesInBackground() {
    lister_.run(this, [this]() -> std::function<void()> {
        const auto devices = probe::list_devices();
        return [this, devices] { emit devicesListed(devices); };
    });
}

void ProbeRunner::listDevices() { emit devicesListed(probe::list_devices()); }

void ProbeRunner::cancel() { cancel_ = true; }

bool ProbeRunner::start(const QString& what, std::function<void(probe::Backend&, const probe::Control&)> work) {
    if (thread_) return false;
    // The device listing measures host bandwidth with a buffer of its own; a probe running beside it
    // would count that buffer's release against the cache's resident growth.
    lister_.wait();
    cancel_ = false;
    emit started(what);
    // Everything device-side runs on the worker, opening the backend included (a GPU driver can
    // take a moment to answer the first time).
    thread_ = QThread::create([this, name = backend_, work = std::move(work)] {
        auto backend = probe::make_backend(name);
        if (!backend) {
            post([this, why = q(backend.error_text())] { emit failed(why); });
            return;
        }
        probe::Control control;
        control.cancel = &cancel_;
        control.progress = [this](double f, const std::string& text) {
            post([this, f, t = q(text)] { emit progress(f, t); });
        };
        control.stopwatch_step = [this](bool cached, double ms) {
            post([this, cached, ms] { emit stopwatchStep(cached, ms); });
        };
        work(*backend.value(), control);
    });
    connect(thread_, &QThread::finished, this, [this] {
        thread_->deleteLater();
        thread_ = nullptr;
        emit finished();
    });
    thread_->start();
    return true;
}

bool ProbeRunner::probe(const probe::ProbeRequest& request) {
    return start(tr("Allocating the cache…"), [this, request](probe::Backend& b, const probe::Control& c) {
        const probe::ProbeReport r = b.probe(request, c);
        post([this, r] { emit probeFinished(r); });
    });
}

bool ProbeRunner::step(const probe::StepRequest& request) {
    return start(tr("Allocating the model…"), [this, request](probe::Backend& b, const probe::Control& c) {
        const probe::StepReport r = b.step(request, c);
        post([this, r] { emit stepFinished(r); });
    });
}

bool ProbeRunner::stopwatch(int tokens) {
    if (thread_) return false;
    probe::StopwatchRequest request;
    request.tokens = tokens;
    emit stopwatchStarted(tokens);
    return start(tr("Generating with the cache…"), [this, request](probe::Backend& b, const probe::Control& c) {
        const probe::StopwatchReport r = b.stopwatch(request, c);
        post([this, r] { emit stopwatchFinished(r); });
    });
}

}  // namespace kvscope::ui
