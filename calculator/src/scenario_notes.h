#pragma once
// Inside the scenario file reader (scenario_file.cpp): the sentences it says about a file that opened with
// something to tell (numbers repaired, fields it does not read, keys given twice). Not a public header.

#include <string>
#include <vector>

#include "kvscope/calculator/json.h"

namespace kvscope::scenario_notes {

// "30", "30 and 31", "30, 31 and 34".
std::string line_list(const std::vector<int>& lines);

// "a, b, c": the items joined by commas.
std::string comma_list(const std::vector<std::string>& items);

// The repairs in one sentence: "source held numbers written with a decimal comma …: fraction 0,85 -> 0.85 (line 40)".
std::string repair_note(const std::string& source, const std::vector<json::DecimalCommaRepair>& repairs);

// Fields the file holds and this version does not read ("" when there are none).
std::string unread_note(const std::string& source, const std::vector<std::string>& unread);

// Keys given twice in one object ("" when there are none).
std::string twice_note(const std::string& source, const std::vector<std::string>& twice);

}  // namespace kvscope::scenario_notes
