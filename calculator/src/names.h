#pragma once
// Inside the calculator: whether a name (a config's model_type, a GGUF's architecture, a layer's type) is one of a
// list the rules beside each call name. Not a public header.

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace kvscope {

inline bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace kvscope
