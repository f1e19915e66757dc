#pragma once
// "Check your understanding": questions made from the current scenario, answered by the
// calculator, with typed answers checked within a tolerance and the worked answer to show.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

enum class AnswerUnit { bytes, tokens, percent };

struct Question {
    std::string id;  // "other_kv_heads", "per_token", "outgrows_weights", "share_of_mha", "double_context"
    std::string text;
    AnswerUnit unit = AnswerUnit::bytes;
    double answer = 0;        // bytes, tokens or percent
    std::string answer_text;  // "1.00 GiB (1,073,741,824 bytes)"
    double tolerance = 0.02;  // relative: answers within 2% are right (rounded units are fine)
    std::string worked;       // how the answer comes out, with the scenario's numbers
    std::string hint;         // how to type an answer
};

// Up to five questions; fewer when the scenario makes one meaningless (no weights crossing
// with sliding windows, no other KV head count for MLA). Empty while the inputs are invalid.
std::vector<Question> questions_for(const Scenario& scenario, UnitSystem units = UnitSystem::binary);

struct AnswerCheck {
    bool understood = false;  // the typed text is a number in a known unit
    bool correct = false;
    std::string message;  // "Right: 1.00 GiB." / "Not quite: you said 2 GiB; it is 1.00 GiB." / how to type it
};
AnswerCheck check_answer(const Question& question, std::string_view typed, UnitSystem units = UnitSystem::binary);

// A typed quantity in `unit`: "1.5 GiB", "1.6GB", "1610612736" (bytes); "8k", "8,192" (tokens);
// "25", "25%" (percent). None when it cannot be read.
std::optional<double> parse_answer(std::string_view typed, AnswerUnit unit);

}  // namespace kvscope
