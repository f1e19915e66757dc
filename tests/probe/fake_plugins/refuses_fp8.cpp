// A stand-in for the CUDA backend's plugin, for the Probe tab's tests: a device that answers but cannot multiply
// fp8 weights, as a GPU before compute capability 8.9 answers (cuda_step.cu), and runs everything else as the
// CPU backend does.
#include <memory>

#include "kvscope/probe/plugin.h"
#include "kvscope/probe/plugins.h"

namespace {

using namespace kvscope::probe;
using kvscope::KvDtype;

class RefusesFp8 : public Backend {
public:
    RefusesFp8() : cpu_(choose_backend("cpu").backend) {}
    [[nodiscard]] DeviceInfo device() const override {
        DeviceInfo d = cpu_->device();
        d.backend = "cuda";
        d.label = "CUDA GPU";
        d.name = "stand-in GPU without FP8 tensor cores";
        return d;
    }
    ProbeReport probe(const ProbeRequest& request, const Control& control) override {
        return cpu_->probe(request, control);
    }
    StopwatchReport stopwatch(const StopwatchRequest& request, const Control& control) override {
        return cpu_->stopwatch(request, control);
    }
    StepReport step(const StepRequest& request, const Control& control) override {
        if (request.weight_dtype != KvDtype::fp8_e4m3) {
            StepReport ran = cpu_->step(request, control);
            ran.device = device();
            return ran;
        }
        StepReport r;
        r.device = device();
        r.status = Status::invalid_input;
        r.weight_dtype_refused = true;
        r.message =
            "weight_dtype: fp8_e4m3 weights need FP8 tensor cores (compute capability 8.9 or newer; this "
            "GPU's is 8.0)";
        return r;
    }

private:
    std::unique_ptr<Backend> cpu_;
};

}  // namespace

KVSCOPE_PLUGIN_EXPORT int kvscope_probe_plugin_abi() { return kvscope::probe::kPluginAbi; }

KVSCOPE_PLUGIN_EXPORT void kvscope_probe_plugin_create(kvscope::probe::BackendChoice* out) {
    out->backend = std::make_unique<RefusesFp8>();
    out->status = kvscope::probe::Status::ok;
}
