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
#include <vector>

#include "kvscope/calculator/json.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope {

// The format this build writes and the newest it reads.
constexpr std::uint64_t kScenarioFormatVersion = 1;
constexpr std::string_view kScenarioFileSuffix = ".kvscope.json";

// An architecture's every member, as a scenario file holds it and reads it back (one member list in
// scenario_file.cpp is both the writer and the reader). Reports add what follows from it
// (architecture_report_json).
json::Value architecture_json(const Architecture& arch);
// The file's JSON document (for embedding it in larger documents), and its text. `warnings` are the import's
// notes that the numbers are not exact (an unknown quantization, the state's format read from elsewhere): a
// saved file keeps them, so that the scenario opened again says what the imported one said.
json::Value scenario_json(const Scenario& scenario, const std::vector<std::string>& warnings = {});
std::string scenario_to_json(const Scenario& scenario, const std::vector<std::string>& warnings = {});
// A scenario read back, and what had to be repaired to read it: a file written by KVScope 0.1 in
// a decimal-comma locale ("fraction": 0,85; json::repair_decimal_commas) opens with its numbers
// intact, and `repaired` says so in words the window and `kvscope --scenario` show.
struct LoadedScenario {
    Scenario scenario;
    std::string repaired;  // "repaired 2 numbers written with a decimal comma: fraction 0,85 -> 0.85, …"; or empty
    std::vector<std::string> warnings;  // the import's, as saved with it (scenario_json)
    // Fields this version does not read, with their lines, in one sentence, and fields given twice (the last is read)
    // in another; or empty. A newer version's input, a misspelt key or a hand edit's second value is left out of the
    // numbers, so the window says so rather than dropping it in silence.
    std::string unread;
};
// `source` names the file in messages ("my.kvscope.json").
Result<LoadedScenario> scenario_from_json(std::string_view text, const std::string& source);
Result<LoadedScenario> read_scenario_file(const std::string& path);

}  // namespace kvscope
