#pragma once
// kvscope-cli's catalog commands: models (and models --local), gpus.

#include "commands.h"

namespace kvscope::cli {

Output cmd_models(const Options& o, const Catalog& catalog);
Output cmd_gpus(const Options& o, const Catalog& catalog);

}  // namespace kvscope::cli
