#pragma once
// kvscope-cli's subcommands. Each writes its answer to `out` and returns the exit status.

#include <string>

#include "options.h"

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
std::string command_help(const std::string& command);

}  // namespace kvscope::cli
