#pragma once
// kvscope-cli simulate: a traffic of requests served by the engine's scheduler (kvscope/calculator/simulate.h).

#include "commands.h"
#include "scenario_options.h"

namespace kvscope::cli {

Output cmd_simulate(const Options& o, const Scenario& s, const ScenarioSource& src);

}  // namespace kvscope::cli
