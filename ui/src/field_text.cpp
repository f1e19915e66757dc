#include "kvscope/ui/field_text.h"

#include <QEvent>
#include <QKeyEvent>
#include <QLineEdit>
#include <QVariant>

namespace kvscope::ui {

namespace {
// The text of the scenario's value an edit showed last (a dynamic property, so that any QLineEdit can follow the
// rule without a class of its own).
constexpr const char* kShown = "kvscopeScenarioText";

class EscapeTakesBack : public QObject {
public:
    EscapeTakesBack(QWidget* watched, std::function<bool()> take_back)
        : QObject(watched), take_back_(std::move(take_back)) {}

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::KeyPress && static_cast<QKeyEvent*>(event)->key() == Qt::Key_Escape &&
            take_back_())
            return true;
        return QObject::eventFilter(watched, event);
    }

private:
    std::function<bool()> take_back_;
};
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

void take_back_on_escape(QWidget* watched, std::function<bool()> take_back) {
    watched->installEventFilter(new EscapeTakesBack(watched, std::move(take_back)));
}

}  // namespace kvscope::ui
