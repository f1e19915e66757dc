#pragma once
// Saved scenarios (.kvscope.json): every input of a Scenario, versioned.
//
// The file keeps what the user entered, valid or not, so that a half-finished
// scenario comes back exactly as it was left; checking the inputs is the
// calculator's job, not the file reader's. The reader rejects what is not a
// scenario at all (wrong types, unknown formats, a newer version) with the
// field and its line.

#include <cstdint>
#include <string>
#include <string_view>

#include "kvscope/calculator/json.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope {

// The format this build writes and the newest it reads.
constexpr std::uint64_t kScenarioFormatVersion = 1;
constexpr std::string_view kScenarioFileSuffix = ".kvscope.json";

// The file's JSON document (for embedding it in larger documents), and its text.
json::Value scenario_json(const Scenario& scenario);
std::string scenario_to_json(const Scenario& scenario);
// `source` names the file in messages ("my.kvscope.json").
Result<Scenario> scenario_from_json(std::string_view text, const std::string& source);
Result<Scenario> read_scenario_file(const std::string& path);

}  // namespace kvscope
