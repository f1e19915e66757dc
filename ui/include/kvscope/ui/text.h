#pragma once
// The calculator speaks std::string; the views speak QString.

#include <QString>

#include <string>

namespace kvscope::ui {

inline QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace kvscope::ui
