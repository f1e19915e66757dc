#pragma once
// kvscope-cli's hardware commands: devices, probe, stopwatch.

#include "commands.h"

namespace kvscope::cli {

Output cmd_devices(const Options& o);
Output cmd_probe(const Options& o, const Scenario& s, const ScenarioSource& src);
Output cmd_stopwatch(const Options& o);

}  // namespace kvscope::cli
