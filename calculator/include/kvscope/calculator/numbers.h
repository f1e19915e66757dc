#pragma once
// Numbers as text, the same in every locale. Everything that is written to or read from a file,
// the clipboard, a CSV, the JSON contract or the command line goes through this one pair
// (number_text / number_from_text), built on std::to_chars and std::from_chars, which never
// consult the C locale: QApplication adopts the desktop's locale for the C library, and there
// snprintf with %g writes 0,85 and strtod reads "0.85" as 0. scripts/lint refuses the C library's
// locale-dependent conversions everywhere else.
//
// What a person types into a field is read by read_typed_decimal: it also takes a decimal comma
// (0,85) and digit grouping (131,072 · 131.072.000 · 131_072 · 131 072), and refuses text that is
// not one number in either habit (1,2,3).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope {

enum class Notation {
    shortest,    // the shortest text that reads back as the same double: 0.85, 1e+20
    fixed,       // `precision` digits after the point, as printf's %.Nf: 0.850
    general,     // `precision` significant digits, as printf's %.Ng: 0.85, 1.23e+12
    scientific,  // `precision` digits after the point in the mantissa, as printf's %.Ne: 1.23e-05
};

// Always a decimal point, never a group separator. Non-finite values are "nan", "inf", "-inf".
std::string number_text(double value, Notation notation = Notation::shortest, int precision = 6);

// The whole text as a finite double ("0.85", "1e-3", "-2"); nullopt for anything else:
// surrounding spaces, a decimal comma, a leading '+', "inf", "nan", trailing text.
std::optional<double> number_from_text(std::string_view text);
// The whole text as an exact integer in range (no sign for the unsigned one); nullopt otherwise.
std::optional<std::uint64_t> u64_from_text(std::string_view text);
std::optional<std::int64_t> i64_from_text(std::string_view text);

// A number as people type it, in any of the common conventions, rewritten as plain digits with
// at most one '.' (what number_from_text reads): "0,85" -> "0.85", "1.234,5" -> "1234.5",
// "131,072" -> "131072", "131.072.000" -> "131072000", "1 024" -> "1024". A lone '.' is always
// a decimal point ("131.072" is 131.072); a lone ',' followed by exactly three digits groups
// thousands, as this program writes counts ("131,072", "2,048"), unless the whole part is 0 or
// spaces group the digits ("0,850" and "1 000,500" are fractions). Groups must be three digits.
// The reason is in the error.
struct TypedDecimal {
    std::string plain;  // digits and at most one '.', or empty on error
    std::string error;  // why the text is not one number ("a separator follows the decimal one"), or empty
};
TypedDecimal read_typed_decimal(std::string_view text);

}  // namespace kvscope
