#pragma once
// Inside the config.json importer: the layout fields no rule read (config_unmodelled.cpp). Not a public header.

#include <set>
#include <string>
#include <vector>

#include "config_reader.h"

namespace kvscope::importer {

// Names, in Architecture::not_exact, the layout fields no rule read (config_unmodelled.cpp): the second line of
// defence for configs nobody has seen yet.
void find_unmodelled_layouts(const Value& cfg, const Value& root, ImportedModel& out,
                             const std::vector<std::string>& read, const std::set<std::string, std::less<>>& asked);

}  // namespace kvscope::importer
