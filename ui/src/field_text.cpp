#include "kvscope/ui/field_text.h"

#include <QLineEdit>
#include <QVariant>

namespace kvscope::ui {

namespace {
// The text of the scenario's value an edit showed last (a dynamic property, so that any QLineEdit can follow the
// rule without a class of its own).
constexpr const char* kShown = "kvscopeScenarioText";
}  // namespace

bool show_scenario_text(QLineEdit* edit, const QString& text, bool refused) {
    const QVariant last = edit->property(kShown);
    const bool changed = !last.isValid() || last.toString() != text;
    edit->setProperty(kShown, text);
    if (!changed && (refused || edit->isModified())) return false;
    if (edit->text() != text) edit->setText(text);
    edit->setModified(false);
    return changed;
}

void forget_user_text(QLineEdit* edit) {
    edit->setModified(false);
    edit->setProperty(kShown, QVariant());
}

}  // namespace kvscope::ui
