#pragma once
// Small helpers every table and name lookup in the calculator shares.

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace kvscope {

// The number of members of an enum whose alias `last_` names its final member (`enum class E { a, b, last_ = b }`):
// a member added after it moves the alias, or the table beside it (lists_in_order, sized by this count) fails to
// compile. The alias adds no value, so switches need no case for it.
template <class Enum>
constexpr std::size_t enum_count() {
    return static_cast<std::size_t>(Enum::last_) + 1;
}

// A table indexed by an enum lists each member once, in the enum's order: `key` gives an entry's member.
// Used in static_asserts beside each such table, so a member added to the enum but not to its table, or out
// of order, fails to compile.
template <class Table, class Key>
constexpr bool lists_in_order(const Table& table, Key key) {
    for (std::size_t i = 0; i < std::size(table); ++i)
        if (static_cast<std::size_t>(key(table[i])) != i) return false;
    return true;
}

// ASCII lower case, for the case-insensitive names of models, GPUs, engines and formats (never the locale's).
inline std::string ascii_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

}  // namespace kvscope
