#pragma once
// The CPU backend (cpu_backend.cpp): built in, the probe's answer where no GPU backend is.

#include <cstdint>
#include <memory>

#include "kvscope/probe/probe.h"

namespace kvscope::probe {

std::unique_ptr<Backend> make_cpu_backend();
// Read bandwidth of host memory over `bytes`, all threads, median of a few passes (GB/s).
double measure_host_read_gbps(std::uint64_t bytes);

}  // namespace kvscope::probe
