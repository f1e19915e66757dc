#pragma once
// A small JSON reader and writer. The reader keeps the line and column of every
// value, so an importer can say "config.json:12: num_key_value_heads must be …",
// and keeps integer literals exact (no detour through double). Nesting depth and
// input size are bounded so hostile files cannot exhaust the stack.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvscope::json {

enum class Type { null, boolean, number, string, array, object };
std::string_view to_string(Type type);

class Value {
public:
    Value() = default;  // null
    static Value boolean(bool b);
    static Value number(std::uint64_t n);
    static Value number_signed(std::int64_t n);
    static Value number(double d);
    static Value string(std::string s);
    static Value array();
    static Value strings(const std::vector<std::string>& list);  // an array of these strings
    static Value object();

    [[nodiscard]] Type type() const { return type_; }
    [[nodiscard]] bool is_null() const { return type_ == Type::null; }
    [[nodiscard]] bool is_number() const { return type_ == Type::number; }
    [[nodiscard]] bool is_string() const { return type_ == Type::string; }
    [[nodiscard]] bool is_object() const { return type_ == Type::object; }
    [[nodiscard]] bool is_array() const { return type_ == Type::array; }
    [[nodiscard]] bool is_bool() const { return type_ == Type::boolean; }

    // Where the value starts in the parsed text (1-based); 0 for built values.
    [[nodiscard]] int line() const { return line_; }
    [[nodiscard]] int column() const { return column_; }

    [[nodiscard]] bool as_bool() const { return bool_; }
    [[nodiscard]] const std::string& as_string() const { return text_; }
    [[nodiscard]] double as_double() const { return double_; }
    // Exact non-negative integer: "4096", "4096.0", "4.096e3"; nullopt for fractions,
    // negatives or values above 2^64-1.
    [[nodiscard]] std::optional<std::uint64_t> as_u64() const;
    [[nodiscard]] std::optional<std::int64_t> as_i64() const;

    [[nodiscard]] const std::vector<Value>& items() const { return items_; }
    [[nodiscard]] const std::vector<std::pair<std::string, Value>>& members() const { return members_; }
    [[nodiscard]] const Value* find(std::string_view key) const;

    // Building.
    Value& push(Value v);
    Value& set(std::string key, Value v);  // appends, or replaces an existing key

    // Serialization: indent 0 = one line.
    [[nodiscard]] std::string dump(int indent = 2) const;

private:
    friend class Parser;
    void dump_to(std::string& out, int indent, int depth) const;

    Type type_ = Type::null;
    bool bool_ = false;
    double double_ = 0;
    std::string text_;  // string value, or the number's literal
    enum class NumberKind { u64, i64, real } number_kind_ = NumberKind::real;
    std::uint64_t u64_ = 0;
    std::int64_t i64_ = 0;
    std::vector<Value> items_;
    std::vector<std::pair<std::string, Value>> members_;
    // Each key's place in members_ (its last occurrence): set() and find() in log time, so an object is built
    // and read in O(n log n), not O(n²).
    std::map<std::string, std::size_t, std::less<>> index_;
    int line_ = 0, column_ = 0;

    void add_member(std::string key, Value v);
};

struct ParseError {
    std::string message;
    int line = 0;
    int column = 0;
};

struct ParseResult {
    std::optional<Value> value;
    ParseError error;
    explicit operator bool() const { return value.has_value(); }
};

constexpr std::size_t kMaxDepth = 200;
constexpr std::size_t kMaxInputBytes = 64ull << 20;

ParseResult parse(std::string_view text);
// As parse, but also takes the bare NaN, Infinity and -Infinity that Python's json module writes
// (Hugging Face config.json files of Mamba-2 models hold "time_step_limit": [0.0, Infinity]); they
// read as non-finite numbers, never as whole numbers.
ParseResult parse_python_json(std::string_view text);

// Files written by KVScope 0.1 in a locale with a decimal comma (de_DE, fr_FR …) hold numbers such
// as `"fraction": 0,85`: its writer used snprintf with a %g format, which follows the C locale. That text is
// not JSON, but the damage is recognisable: inside an object a member's value is followed by a
// comma and then a key, which starts with '"', never with a digit; so a digit, a comma and a
// digit there can only be a decimal comma. This rewrites exactly those commas as points and
// says where (nothing inside strings or arrays is touched); nullopt when there is none.
struct DecimalCommaRepair {
    int line = 0;
    std::string key;     // the member whose value it was: "fraction"
    std::string before;  // "0,85"
    std::string after;   // "0.85"
};
struct RepairedText {
    std::string text;
    std::vector<DecimalCommaRepair> repairs;
};
std::optional<RepairedText> repair_decimal_commas(std::string_view text);

// JSON string escaping, quotes included.
std::string quote(std::string_view s);
// `s` with every byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF) replaced by U+FFFD, as a JSON text must be UTF-8 (RFC 8259) and a GGUF's strings need not be.
std::string valid_utf8(std::string_view s);

}  // namespace kvscope::json
