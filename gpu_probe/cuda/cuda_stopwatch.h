#pragma once
// The stopwatch on the GPU: the same small transformer and weights as the host version,
// its projections as cuBLAS matrix products, generating with a device-resident KV cache and
// by recomputing the whole prefix (one batched forward over every position) at every step.

#include "kvscope/probe/probe.h"

namespace kvscope::probe {

StopwatchReport run_cuda_stopwatch(const StopwatchRequest& request, const Control& control);

}  // namespace kvscope::probe
