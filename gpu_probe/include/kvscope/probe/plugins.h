#pragma once
// The backends' registry (gpu_probe/src/plugins.cpp): the CPU backend, built in, and the plugins the build lists
// (one shared library each, loaded when first chosen, as ggml loads its backends), each chosen by name. What a plugin
// exports is kvscope/probe/plugin.h.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvscope/calculator/result.h"
#include "kvscope/probe/probe.h"

namespace kvscope::probe {

// A backend by name, or why it cannot run here: "cpu" always works; "cuda" when built with CUDA
// and a device answers; "auto" picks CUDA when it can, else the CPU. Otherwise `backend` is null
// and `status` says why — no_device (no driver, no device, or a build without CUDA),
// driver_mismatch (a driver older than this build's runtime), invalid_input (not a backend) —
// with a message that names the cause.
struct BackendChoice {
    std::unique_ptr<Backend> backend;
    Status status = Status::ok;
    std::string message;
};
BackendChoice choose_backend(const std::string& name);
// The same, with the reason as an error on the field --backend.
Result<std::unique_ptr<Backend>> make_backend(const std::string& name);

// Every backend this build has, each with its device or the reason it is unavailable.
std::vector<DeviceInfo> list_devices();
// This machine as the host of a model split between the GPU and the host: its RAM and its read ceiling, a read-only
// pass over 256 MiB on every thread (the CPU's measured_gbps of list_devices), without asking the other backends.
struct HostReading {
    std::uint64_t ram_bytes = 0;
    double read_gbps = 0;  // 0: not measured
};
HostReading read_this_host();

}  // namespace kvscope::probe
