#include "scenario_notes.h"

namespace kvscope::scenario_notes {

std::string line_list(const std::vector<int>& lines) {
    std::string list;
    for (std::size_t i = 0; i < lines.size(); ++i)
        list += (i == 0 ? "" : i + 1 == lines.size() ? " and " : ", ") + std::to_string(lines[i]);
    return list;
}

std::string comma_list(const std::vector<std::string>& items) {
    std::string list;
    for (const auto& item : items) list += (list.empty() ? "" : ", ") + item;
    return list;
}

std::string repair_note(const std::string& source, const std::vector<json::DecimalCommaRepair>& repairs) {
    std::vector<std::string> items;
    items.reserve(repairs.size());
    for (const auto& r : repairs)
        items.push_back((r.key.empty() ? "" : r.key + " ") + r.before + " -> " + r.after + " (line " +
                        std::to_string(r.line) + ")");
    return source +
           " held numbers written with a decimal comma (KVScope 0.1 saved them so in a German, French or "
           "other comma locale); they were read as decimals: " +
           comma_list(items) + ". Save the scenario to store the repaired file.";
}

// Said rather than dropped in silence: one of them may be an input a newer KVScope counts (the numbers would
// differ), or a key misspelt by hand.
std::string unread_note(const std::string& source, const std::vector<std::string>& unread) {
    if (unread.empty()) return {};
    const bool one = unread.size() == 1;
    const std::string them = one ? "it" : "them";
    return source + " holds " + (one ? "a field" : std::to_string(unread.size()) + " fields") +
           " this version of KVScope does not read: " + comma_list(unread) + ". The numbers leave " + them +
           " out (a newer KVScope or a hand edit may have written " + them + "), and saving writes the file without " +
           them + ".";
}

// The last is read, and the first is dropped at the next save; either may be the one meant, so both lines are
// named.
std::string twice_note(const std::string& source, const std::vector<std::string>& twice) {
    if (twice.empty()) return {};
    const bool one = twice.size() == 1;
    return source + " gives " + (one ? "a field" : std::to_string(twice.size()) + " fields") +
           " more than once: " + comma_list(twice) + ". The numbers read the last of each, and saving writes only " +
           (one ? "it" : "those") + ".";
}

}  // namespace kvscope::scenario_notes
