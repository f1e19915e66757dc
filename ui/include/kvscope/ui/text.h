#pragma once
// The calculator speaks std::string; the views speak QString.

#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace kvscope::ui {

inline QString q(const std::string& s) { return QString::fromStdString(s); }

inline QStringList q(const std::vector<std::string>& list) {
    QStringList out;
    for (const auto& s : list) out << q(s);
    return out;
}

inline std::vector<std::string> std_strings(const QStringList& list) {
    std::vector<std::string> out;
    for (const QString& s : list) out.push_back(s.toStdString());
    return out;
}

}  // namespace kvscope::ui
