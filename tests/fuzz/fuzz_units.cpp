// Any text as a size or a token count: a value or a message naming the field; values that parse
// format back without wrapping, and a formatted token count parses to itself; as a quiz answer,
// a number from 0 to 2^64 or nothing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kvscope/calculator/quiz.h"
#include "kvscope/calculator/units.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (auto parse : {kvscope::parse_token_count, kvscope::parse_count}) {
        auto v = parse(text, "--context");
        if (!v) {
            if (v.errors().front().field != "--context") __builtin_trap();
            continue;
        }
        auto back = kvscope::parse_token_count(kvscope::format_tokens(*v), "again");
        if (!back || *back != *v) __builtin_trap();  // 8k means 8192 both ways
    }
    auto bytes = kvscope::parse_bytes(text, "--gpu-memory");
    if (bytes) {
        (void)kvscope::format_bytes(*bytes, kvscope::UnitSystem::binary);
        (void)kvscope::format_bytes(*bytes, kvscope::UnitSystem::decimal);
    } else if (bytes.errors().front().field != "--gpu-memory") {
        __builtin_trap();
    }
    // The same text typed as a quiz answer: a number from 0 to 2^64 or nothing.
    for (auto unit : {kvscope::AnswerUnit::bytes, kvscope::AnswerUnit::tokens, kvscope::AnswerUnit::percent}) {
        const auto answer = kvscope::parse_answer(text, unit);
        if (answer && !(*answer >= 0 && *answer <= 18446744073709551616.0)) __builtin_trap();
    }
    return 0;
}
