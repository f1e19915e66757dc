// A stand-in for a backend plugin, for the loader's tests: it loads, has this build's ABI, and answers
// that its device is missing, with a message the tests look for.
#include "kvscope/probe/plugin.h"

KVSCOPE_PLUGIN_EXPORT int kvscope_probe_plugin_abi() { return kvscope::probe::kPluginAbi; }

KVSCOPE_PLUGIN_EXPORT void kvscope_probe_plugin_create(kvscope::probe::BackendChoice* out) {
    out->status = kvscope::probe::Status::no_device;
    out->message = "the stand-in plugin answered: no device";
}
