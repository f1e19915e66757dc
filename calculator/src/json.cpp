#include "kvscope/calculator/json.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "kvscope/calculator/numbers.h"

namespace kvscope::json {

std::string_view to_string(Type type) {
    switch (type) {
        case Type::null:
            return "null";
        case Type::boolean:
            return "a boolean";
        case Type::number:
            return "a number";
        case Type::string:
            return "a string";
        case Type::array:
            return "an array";
        case Type::object:
            return "an object";
    }
    return "?";
}

Value Value::boolean(bool b) {
    Value v;
    v.type_ = Type::boolean;
    v.bool_ = b;
    return v;
}
Value Value::number(std::uint64_t n) {
    Value v;
    v.type_ = Type::number;
    v.number_kind_ = NumberKind::u64;
    v.u64_ = n;
    v.double_ = static_cast<double>(n);
    v.text_ = std::to_string(n);
    return v;
}
Value Value::number_signed(std::int64_t n) {
    Value v;
    v.type_ = Type::number;
    v.number_kind_ = NumberKind::i64;
    v.i64_ = n;
    v.double_ = static_cast<double>(n);
    v.text_ = std::to_string(n);
    return v;
}
Value Value::number(double d) {
    Value v;
    v.type_ = Type::number;
    v.number_kind_ = NumberKind::real;
    v.double_ = d;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.type_ = Type::string;
    v.text_ = std::move(s);
    return v;
}
Value Value::array() {
    Value v;
    v.type_ = Type::array;
    return v;
}
Value Value::strings(const std::vector<std::string>& list) {
    Value v = array();
    for (const std::string& s : list) v.push(Value::string(s));
    return v;
}
Value Value::object() {
    Value v;
    v.type_ = Type::object;
    return v;
}

std::optional<std::uint64_t> Value::as_u64() const {
    if (type_ != Type::number) return std::nullopt;
    if (number_kind_ == NumberKind::u64) return u64_;
    if (number_kind_ == NumberKind::i64) return i64_ >= 0 ? std::optional<std::uint64_t>(i64_) : std::nullopt;
    // Real literal: accept when it is an exact integer in range (4096.0, 1e6).
    if (!(double_ >= 0) || double_ >= 18446744073709551616.0 || std::floor(double_) != double_) return std::nullopt;
    return static_cast<std::uint64_t>(double_);
}

std::optional<std::int64_t> Value::as_i64() const {
    if (type_ != Type::number) return std::nullopt;
    if (number_kind_ == NumberKind::i64) return i64_;
    if (number_kind_ == NumberKind::u64)
        return u64_ <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                   ? std::optional<std::int64_t>(static_cast<std::int64_t>(u64_))
                   : std::nullopt;
    if (std::floor(double_) != double_ || std::fabs(double_) >= 9.2e18) return std::nullopt;
    return static_cast<std::int64_t>(double_);
}

const Value* Value::find(std::string_view key) const {
    // Duplicate keys: the last one wins, as in Python's json module (add_member keeps the last's place).
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &members_[it->second].second;
}

void Value::add_member(std::string key, Value v) {
    index_[key] = members_.size();
    members_.emplace_back(std::move(key), std::move(v));
}

Value& Value::push(Value v) {
    type_ = Type::array;
    items_.push_back(std::move(v));
    return items_.back();
}

Value& Value::set(std::string key, Value v) {
    type_ = Type::object;
    if (const auto it = index_.find(key); it != index_.end()) return members_[it->second].second = std::move(v);
    add_member(std::move(key), std::move(v));
    return members_.back().second;
}

std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
        const unsigned char c = byte(i);
        std::size_t length = 0;
        unsigned char low = 0x80, high = 0xBF;  // the second byte's range (RFC 3629 section 4)
        if (c < 0x80) {
            length = 1;
        } else if (c >= 0xC2 && c <= 0xDF) {
            length = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            length = 3;
            if (c == 0xE0) low = 0xA0;   // no overlong forms
            if (c == 0xED) high = 0x9F;  // no surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            length = 4;
            if (c == 0xF0) low = 0x90;
            if (c == 0xF4) high = 0x8F;  // nothing past U+10FFFF
        }
        bool ok = length > 0 && i + length <= s.size();
        for (std::size_t k = 1; ok && k < length; ++k) {
            const unsigned char b = byte(i + k);
            ok = k == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xBF);
        }
        if (ok) {
            out.append(s.substr(i, length));
            i += length;
        } else {
            out += "\xEF\xBF\xBD";  // U+FFFD for the one byte that starts no well-formed sequence
            ++i;
        }
    }
    return out;
}

std::string quote(std::string_view raw) {
    const std::string s = valid_utf8(raw);
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

void Value::dump_to(std::string& out, int indent, int depth) const {
    auto newline = [&](int d) {
        if (indent <= 0) return;
        out += '\n';
        out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(d), ' ');
    };
    switch (type_) {
        case Type::null:
            out += "null";
            break;
        case Type::boolean:
            out += bool_ ? "true" : "false";
            break;
        case Type::number:
            if (number_kind_ != NumberKind::real) {
                out += text_;
            } else if (!std::isfinite(double_)) {
                out += "null";
            } else {
                out += number_text(double_);  // shortest text that reads back the same double
            }
            break;
        case Type::string:
            out += quote(text_);
            break;
        case Type::array:
            if (items_.empty()) {
                out += "[]";
                break;
            }
            out += '[';
            for (std::size_t i = 0; i < items_.size(); ++i) {
                if (i) out += indent > 0 ? "," : ", ";
                newline(depth + 1);
                items_[i].dump_to(out, indent, depth + 1);
            }
            newline(depth);
            out += ']';
            break;
        case Type::object:
            if (members_.empty()) {
                out += "{}";
                break;
            }
            out += '{';
            for (std::size_t i = 0; i < members_.size(); ++i) {
                if (i) out += indent > 0 ? "," : ", ";
                newline(depth + 1);
                out += quote(members_[i].first);
                out += ": ";
                members_[i].second.dump_to(out, indent, depth + 1);
            }
            newline(depth);
            out += '}';
            break;
    }
}

std::string Value::dump(int indent) const {
    std::string out;
    dump_to(out, indent, 0);
    return out;
}

class Parser {
public:
    explicit Parser(std::string_view text, bool python_numbers = false) : s_(text), python_(python_numbers) {}

    ParseResult run() {
        ParseResult r;
        if (s_.size() > kMaxInputBytes) {
            r.error = {"the file is larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB", 1, 1};
            return r;
        }
        if (s_.size() >= 3 && s_.substr(0, 3) == "\xEF\xBB\xBF") advance(3);  // UTF-8 byte order mark
        skip_ws();
        Value v;
        if (!parse_value(v, 0)) {
            r.error = error_;
            return r;
        }
        skip_ws();
        if (pos_ < s_.size()) {
            fail("unexpected text after the JSON value");
            r.error = error_;
            return r;
        }
        r.value = std::move(v);
        return r;
    }

private:
    bool fail(std::string message) {
        if (error_.message.empty()) error_ = {std::move(message), line_, column_};
        return false;
    }
    [[nodiscard]] bool at_end() const { return pos_ >= s_.size(); }
    [[nodiscard]] char peek() const { return at_end() ? '\0' : s_[pos_]; }
    void advance(std::size_t n = 1) {
        for (std::size_t i = 0; i < n && pos_ < s_.size(); ++i, ++pos_) {
            if (s_[pos_] == '\n')
                ++line_, column_ = 1;
            else
                ++column_;
        }
    }
    void skip_ws() {
        while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) advance();
    }
    bool expect_word(std::string_view w) {
        if (s_.substr(pos_, w.size()) != w) return fail("invalid literal (expected " + std::string(w) + ")");
        advance(w.size());
        return true;
    }

    bool parse_value(Value& v, std::size_t depth) {
        if (depth > kMaxDepth) return fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
        v.line_ = line_;
        v.column_ = column_;
        if (at_end()) return fail("unexpected end of file: a value is missing");
        switch (peek()) {
            case '{':
                return parse_object(v, depth);
            case '[':
                return parse_array(v, depth);
            case '"':
                v.type_ = Type::string;
                return parse_string(v.text_);
            case 't':
                v.type_ = Type::boolean;
                v.bool_ = true;
                return expect_word("true");
            case 'f':
                v.type_ = Type::boolean;
                v.bool_ = false;
                return expect_word("false");
            case 'n':
                v.type_ = Type::null;
                return expect_word("null");
            default:
                if (python_)
                    for (const auto& [word, value] :
                         {std::pair{std::string_view("NaN"), std::numeric_limits<double>::quiet_NaN()},
                          std::pair{std::string_view("Infinity"), HUGE_VAL},
                          std::pair{std::string_view("-Infinity"), -HUGE_VAL}})
                        if (s_.substr(pos_, word.size()) == word) {
                            v.type_ = Type::number;
                            v.text_ = std::string(word);
                            v.double_ = value;
                            return expect_word(word);
                        }
                if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number(v);
                if (s_.substr(pos_, 3) == "NaN" || s_.substr(pos_, 8) == "Infinity")
                    return fail("NaN and Infinity are not JSON numbers");
                return fail(std::string("unexpected character '") + peek() + "'");
        }
    }

    bool parse_object(Value& v, std::size_t depth) {
        v.type_ = Type::object;
        advance();  // {
        skip_ws();
        if (peek() == '}') {
            advance();
            return true;
        }
        while (true) {
            skip_ws();
            if (peek() != '"')
                return fail(at_end() ? "unexpected end of file inside an object" : "expected a quoted key");
            std::string key;
            if (!parse_string(key)) return false;
            skip_ws();
            if (peek() != ':') return fail("expected ':' after the key \"" + key + "\"");
            advance();
            skip_ws();
            Value child;
            if (!parse_value(child, depth + 1)) return false;
            v.add_member(std::move(key), std::move(child));
            skip_ws();
            if (peek() == ',') {
                advance();
                skip_ws();
                if (peek() == '}') return fail("trailing comma before '}'");
                continue;
            }
            if (peek() == '}') {
                advance();
                return true;
            }
            return fail(at_end() ? "unexpected end of file inside an object" : "expected ',' or '}'");
        }
    }

    bool parse_array(Value& v, std::size_t depth) {
        v.type_ = Type::array;
        advance();  // [
        skip_ws();
        if (peek() == ']') {
            advance();
            return true;
        }
        while (true) {
            skip_ws();
            Value child;
            if (!parse_value(child, depth + 1)) return false;
            v.items_.push_back(std::move(child));
            skip_ws();
            if (peek() == ',') {
                advance();
                skip_ws();
                if (peek() == ']') return fail("trailing comma before ']'");
                continue;
            }
            if (peek() == ']') {
                advance();
                return true;
            }
            return fail(at_end() ? "unexpected end of file inside an array" : "expected ',' or ']'");
        }
    }

    static void append_utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    bool read_hex4(std::uint32_t& cp) {
        cp = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = peek();
            std::uint32_t d;
            if (c >= '0' && c <= '9')
                d = static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = static_cast<std::uint32_t>(c - 'A' + 10);
            else
                return fail("invalid \\u escape");
            cp = cp * 16 + d;
            advance();
        }
        return true;
    }

    bool parse_string(std::string& out) {
        advance();  // opening quote
        while (true) {
            if (at_end()) return fail("unexpected end of file inside a string");
            const char c = peek();
            if (c == '"') {
                advance();
                // Read as it is written: stray bytes and lone surrogates (\ud800) become U+FFFD here, as the writer
                // (quote) writes them, so a file read and written again reads back the same.
                out = valid_utf8(out);
                return true;
            }
            if (static_cast<unsigned char>(c) < 0x20) return fail("control character inside a string");
            if (c != '\\') {
                out += c;
                advance();
                continue;
            }
            advance();
            const char e = peek();
            advance();
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    std::uint32_t cp = 0;
                    if (!read_hex4(cp)) return false;
                    if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(pos_, 2) == "\\u") {
                        advance(2);
                        std::uint32_t low = 0;
                        if (!read_hex4(low)) return false;
                        if (low >= 0xDC00 && low <= 0xDFFF)
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        else
                            return fail("invalid surrogate pair");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    return fail("invalid escape in a string");
            }
        }
    }

    bool parse_number(Value& v) {
        v.type_ = Type::number;
        const std::size_t start = pos_;
        bool negative = false, real = false;
        if (peek() == '-') negative = true, advance();
        if (!(peek() >= '0' && peek() <= '9')) return fail("a number needs digits");
        if (peek() == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9')
            return fail("numbers may not start with 0");
        while (peek() >= '0' && peek() <= '9') advance();
        if (peek() == '.') {
            real = true;
            advance();
            if (!(peek() >= '0' && peek() <= '9')) return fail("a digit is needed after '.'");
            while (peek() >= '0' && peek() <= '9') advance();
        }
        if (peek() == 'e' || peek() == 'E') {
            real = true;
            advance();
            if (peek() == '+' || peek() == '-') advance();
            if (!(peek() >= '0' && peek() <= '9')) return fail("a digit is needed in the exponent");
            while (peek() >= '0' && peek() <= '9') advance();
        }
        v.text_ = std::string(s_.substr(start, pos_ - start));
        // Out of a double's range: infinite, or zero for a tiny magnitude ("1e-400").
        const bool tiny = v.text_.find("e-") != std::string::npos || v.text_.find("E-") != std::string::npos;
        v.double_ = number_from_text(v.text_).value_or(tiny ? 0.0 : negative ? -HUGE_VAL : HUGE_VAL);
        if (!real) {
            if (negative) {
                if (auto n = i64_from_text(v.text_)) v.number_kind_ = Value::NumberKind::i64, v.i64_ = *n;
            } else {
                if (auto n = u64_from_text(v.text_)) v.number_kind_ = Value::NumberKind::u64, v.u64_ = *n;
            }
        }
        return true;
    }

    std::string_view s_;
    bool python_ = false;
    std::size_t pos_ = 0;
    int line_ = 1, column_ = 1;
    ParseError error_;
};

ParseResult parse(std::string_view text) { return Parser(text).run(); }
ParseResult parse_python_json(std::string_view text) { return Parser(text, true).run(); }

std::optional<RepairedText> repair_decimal_commas(std::string_view text) {
    RepairedText out{std::string(text), {}};
    std::string& s = out.text;
    std::vector<char> open;  // '{' or '[' for each container around the position
    std::string last_string, key;
    bool in_string = false;
    int line = 1;
    auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    auto number_around = [&s, &is_digit](std::size_t comma) {
        std::size_t b = comma, e = comma + 1;
        while (b > 0 && (is_digit(s[b - 1]) || s[b - 1] == '-')) --b;
        while (e < s.size() && (is_digit(s[e]) || s[e] == 'e' || s[e] == 'E' || s[e] == '+' || s[e] == '-')) ++e;
        return std::pair{b, e};
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\n') ++line;
        if (in_string) {
            if (c == '\\') {
                if (i + 1 < s.size()) last_string += s[++i];
            } else if (c == '"') {
                in_string = false;
            } else {
                last_string += c;
            }
            continue;
        }
        switch (c) {
            case '"':
                in_string = true;
                last_string.clear();
                break;
            case ':':
                key = last_string;
                break;
            case '{':
            case '[':
                open.push_back(c);
                break;
            case '}':
            case ']':
                if (!open.empty()) open.pop_back();
                break;
            case ',':
                if (!open.empty() && open.back() == '{' && i > 0 && is_digit(s[i - 1]) && i + 1 < s.size() &&
                    is_digit(s[i + 1])) {
                    const auto [b, e] = number_around(i);
                    DecimalCommaRepair r{line, key, s.substr(b, e - b), {}};
                    s[i] = '.';
                    r.after = s.substr(b, e - b);
                    out.repairs.push_back(std::move(r));
                }
                break;
            default:
                break;
        }
    }
    if (out.repairs.empty()) return std::nullopt;
    return out;
}

}  // namespace kvscope::json
