#pragma once
// The backends behind make_backend().

#include <memory>
#include <string>

#include "kvscope/probe/probe.h"

namespace kvscope::probe {

std::unique_ptr<Backend> make_cpu_backend();
// Read bandwidth of host memory over `bytes`, all threads, median of a few passes (GB/s).
double measure_host_read_gbps(std::uint64_t bytes);
// nullptr with `why` set when this build has no CUDA or no device answers.
std::unique_ptr<Backend> make_cuda_backend(std::string& why);

}  // namespace kvscope::probe
