#include "kvscope/calculator/result.h"

#include <cctype>

namespace kvscope {

bool names_word(std::string_view text, std::string_view word, bool ignore_case) {
    if (word.empty() || word.size() > text.size()) return false;
    const auto fold = [ignore_case](char c) {
        return ignore_case ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
    };
    const auto part_of_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (std::size_t at = 0; at + word.size() <= text.size(); ++at) {
        bool same = true;
        for (std::size_t i = 0; same && i < word.size(); ++i) same = fold(text[at + i]) == fold(word[i]);
        if (!same) continue;
        const bool starts = at == 0 || !part_of_name(text[at - 1]);
        const bool ends = at + word.size() == text.size() || !part_of_name(text[at + word.size()]);
        if (starts && ends) return true;
    }
    return false;
}

std::string join_errors(const Errors& errors) {
    std::string out;
    for (const auto& e : errors) {
        if (!out.empty()) out += "; ";
        // A message that already names its field ("num_heads must be …") is not prefixed with it again.
        const bool named = e.field.empty() || names_word(e.message, e.field);
        out += named ? e.message : e.field + ": " + e.message;
    }
    return out;
}

}  // namespace kvscope
