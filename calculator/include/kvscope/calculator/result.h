#pragma once
// Errors as values: every problem carries the field it belongs to, so a caller
// (the CLI, the desktop app) can point at the input that is wrong.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kvscope/calculator/field.h"

namespace kvscope {

struct FieldError {
    FieldError() = default;
    // A problem with one of the scenario's inputs: `field` is its key.
    FieldError(Field in, std::string text) : input(in), field(to_string(in)), message(std::move(text)) {}
    // A problem with something that is not one input: a command-line option, a file, a config.json key.
    FieldError(std::string where, std::string text) : field(std::move(where)), message(std::move(text)) {}

    Field input = Field::none;  // the input to mark in the window; kept when `field` is reworded for a file
    std::string field;          // as shown: "kv_heads", "--batch", "config.json:12 num_hidden_layers"
    std::string message;        // one sentence a user can act on

    friend bool operator==(const FieldError&, const FieldError&) = default;
};

using Errors = std::vector<FieldError>;

// "field: message; field: message" — for one-line reports (CLI stderr).
std::string join_errors(const Errors& errors);

// True when `word` stands in `text` on its own, not inside a longer name ("layers" in "the number of
// layers", not in "num_hidden_layers"): how a message is known to name its field already, so the
// field is not put in front of it again (join_errors; the window's field marks, ignoring case).
bool names_word(std::string_view text, std::string_view word, bool ignore_case = false);

template <class T>
class Result {
public:
    Result(T value) : state_(std::move(value)) {}                   // NOLINT(google-explicit-constructor)
    Result(Errors errors) : state_(std::move(errors)) {}            // NOLINT(google-explicit-constructor)
    Result(FieldError error) : state_(Errors{std::move(error)}) {}  // NOLINT

    [[nodiscard]] bool ok() const { return std::holds_alternative<T>(state_); }
    explicit operator bool() const { return ok(); }

    [[nodiscard]] const T& value() const& { return std::get<T>(state_); }
    [[nodiscard]] T& value() & { return std::get<T>(state_); }
    [[nodiscard]] T&& value() && { return std::get<T>(std::move(state_)); }
    const T& operator*() const& { return value(); }
    const T* operator->() const { return &value(); }

    [[nodiscard]] const Errors& errors() const {
        static const Errors none;
        return ok() ? none : std::get<Errors>(state_);
    }
    [[nodiscard]] std::string error_text() const { return join_errors(errors()); }

private:
    std::variant<T, Errors> state_;
};

}  // namespace kvscope
