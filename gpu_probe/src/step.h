#pragma once
// The CPU backend's decode step of the whole model (probe --step).

#include "kvscope/probe/probe.h"

namespace kvscope::probe {

StepReport run_cpu_step(const StepRequest& request, const Control& control, const DeviceInfo& device);

}  // namespace kvscope::probe
