#pragma once
// probe --step on a CUDA device (cuda_step.cu). Throws CudaError on a failed CUDA or cuBLAS call; the
// backend turns it into the report's status.

#include "kvscope/probe/probe.h"

namespace kvscope::probe::cuda {

StepReport run_cuda_step(const StepRequest& request, const Control& control, const DeviceInfo& device);

}  // namespace kvscope::probe::cuda
