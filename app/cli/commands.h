#pragma once
// kvscope-cli's subcommands. Each writes its answer to `out` and returns the exit status.

#include <string>

#include "options.h"
#include "scenario_options.h"

namespace kvscope::cli {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

struct Output {
    std::string out;  // stdout
    std::string err;  // stderr
    int status = kExitOk;
};

Output run(const std::vector<std::string>& args);

std::string general_help();
// What the commands share: a usage error as one line naming the options; the scenario's header lines.
std::string usage_error(const Errors& errors, const std::string& command);
std::string header(const Scenario& s, const ScenarioSource& src);
std::string command_help(const std::string& command);

}  // namespace kvscope::cli
