#pragma once
// Inside the config.json importer: what each layer keeps (config_layouts.cpp). Not a public header.

#include "config_reader.h"

namespace kvscope::importer {

// Model types whose layers are all recurrent: no attention, no KV cache.
bool state_space_type(const std::string& type);
// The layer kind a `layer_types` value names (config_layouts.cpp); nullopt for a value KVScope does not know.
std::optional<LayerSpec> spec_of_layer_type(const std::string& s);

// The recurrent state of a model type's recurrent layers, from its config fields, in the shapes of vLLM's
// MambaStateShapeCalculator (config_states.cpp); nullopt, with a not-exact reason, for a type not known.
std::optional<RecurrentState> read_state(Reader& r, ImportedModel& out);

// What each layer keeps (the per-layer description, Architecture::layer_specs), the recurrent state of the
// layers that keep one, and the not-exact reasons for layout fields KVScope does not model.
void read_layouts(Reader& r, const Value& cfg, const Value& root, ImportedModel& out);

}  // namespace kvscope::importer
