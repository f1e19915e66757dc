#pragma once
// What a backend plugin exports: a shared library (libkvscope-probe-NAME.so) that the probe loads when
// that backend is asked for, as ggml loads its backends, so that only the code that asks for a GPU pays
// for its libraries. The interface is the probe's Backend, nothing specific to a kind of device. A plugin
// is built with the probe from the same sources; kPluginAbi changes whenever what crosses here does.

#include "kvscope/probe/plugins.h"

namespace kvscope::probe {
constexpr int kPluginAbi = 2;  // 2: Backend::step
}  // namespace kvscope::probe

#define KVSCOPE_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

// The plugin's kPluginAbi; a loader refuses a plugin whose number differs from its own.
KVSCOPE_PLUGIN_EXPORT int kvscope_probe_plugin_abi();
// Fills `out` as choose_backend() does: a backend, or a null one with the status and the reason. Never
// throws.
KVSCOPE_PLUGIN_EXPORT void kvscope_probe_plugin_create(kvscope::probe::BackendChoice* out);
