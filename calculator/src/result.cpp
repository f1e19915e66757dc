#include "kvscope/calculator/result.h"

namespace kvscope {

std::string join_errors(const Errors& errors) {
    std::string out;
    for (const auto& e : errors) {
        if (!out.empty()) out += "; ";
        out += e.field.empty() ? e.message : e.field + ": " + e.message;
    }
    return out;
}

}  // namespace kvscope
