#pragma once
// kvscope-cli's hardware commands: devices, probe, stopwatch.

#include "commands.h"
#include "scenario_options.h"

namespace kvscope::cli {

Output cmd_devices(const Options& o);
// probe --step remembers what it measured in the catalog's user folder (measured_step.h).
Output cmd_probe(const Options& o, const Scenario& s, const ScenarioSource& src, const Catalog& catalog);
Output cmd_stopwatch(const Options& o);

}  // namespace kvscope::cli
