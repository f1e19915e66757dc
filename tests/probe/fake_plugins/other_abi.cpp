// A stand-in for a plugin of another KVScope version, for the loader's tests: its ABI number differs.
#include "kvscope/probe/plugin.h"

KVSCOPE_PLUGIN_EXPORT int kvscope_probe_plugin_abi() { return kvscope::probe::kPluginAbi + 1000; }

KVSCOPE_PLUGIN_EXPORT void kvscope_probe_plugin_create(kvscope::probe::BackendChoice* out) {
    out->message = "must never be called";
}
