#pragma once
// Inside the config.json importer: layouts whose layers have heads of their own (config_blocks.cpp). Not a public
// header.

#include "config_reader.h"

namespace kvscope::importer {

// Llama-Nemotron's block_configs into the per-layer description (config_blocks.cpp); false when the file has none.
bool read_block_configs(Reader& r, ImportedModel& out);
// MiMo-V2's hybrid_layer_pattern with its sliding layers' own heads (config_blocks.cpp); false for another model.
bool read_mimo_layout(Reader& r, ImportedModel& out);
// The layers of an MLA model whose sparse-attention indexer keeps no key (config_blocks.cpp).
void read_indexer_layers(Reader& r, ImportedModel& out);

}  // namespace kvscope::importer
