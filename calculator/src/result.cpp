#include "kvscope/calculator/result.h"

#include <cctype>

namespace kvscope {

namespace {

// True when `word` stands in `text` on its own, not inside a longer name ("layers" in "the number of
// layers", not in "num_hidden_layers").
bool names_word(const std::string& text, const std::string& word) {
    const auto part_of_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
        const bool starts = at == 0 || !part_of_name(text[at - 1]);
        const bool ends = at + word.size() == text.size() || !part_of_name(text[at + word.size()]);
        if (starts && ends) return true;
    }
    return false;
}

}  // namespace

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
