#include "kvscope/ui/big_spin_box.h"

#include <QKeyEvent>
#include <QLineEdit>

#include "kvscope/calculator/units.h"

namespace kvscope::ui {

BigSpinBox::BigSpinBox(Kind kind, Step step, QWidget* parent) : QAbstractSpinBox(parent), kind_(kind), step_(step) {
    setAccelerated(true);
    setCorrectionMode(QAbstractSpinBox::CorrectToPreviousValue);
    setKeyboardTracking(false);
    lineEdit()->setText(textOf(value_));
    connect(this, &QAbstractSpinBox::editingFinished, this, &BigSpinBox::commitText);
}

QString BigSpinBox::textOf(std::uint64_t v) const {
    // Contexts read best as 8k / 128k; other counts as plain numbers.
    return kind_ == Kind::tokens ? QString::fromStdString(format_tokens(v)) : QString::number(v);
}

void BigSpinBox::setValue(std::uint64_t value) {
    if (value != value_) {
        // Another value (an undo, a model loaded, the slider): it is what the field holds now, whatever was typed.
        problem_.clear();
        value_ = value;
    } else if (!problem_.isEmpty() || pending()) {
        return;  // the user's own text stays: refused and marked, or still being typed
    }
    if (lineEdit()->text() != textOf(value)) lineEdit()->setText(textOf(value));
    lineEdit()->setModified(false);
}

bool BigSpinBox::pending() const { return problem_.isEmpty() && lineEdit()->isModified(); }

bool BigSpinBox::commitPending() {
    if (lineEdit()->isModified()) commitText();
    return problem_.isEmpty();
}

void BigSpinBox::revert() {
    const bool had_problem = !problem_.isEmpty();
    problem_.clear();
    lineEdit()->setText(textOf(value_));
    lineEdit()->setModified(false);
    if (had_problem) emit problemChanged();
}

void BigSpinBox::dropUserText() {
    problem_.clear();
    lineEdit()->setText(textOf(value_));
    lineEdit()->setModified(false);
}

void BigSpinBox::keyPressEvent(QKeyEvent* event) {
    // Esc takes back what was typed, refused or not: the field shows its value again.
    if (event->key() == Qt::Key_Escape && (lineEdit()->isModified() || !problem_.isEmpty())) {
        revert();
        event->accept();
        return;
    }
    QAbstractSpinBox::keyPressEvent(event);
}

void BigSpinBox::setRange(std::uint64_t minimum, std::uint64_t maximum) {
    min_ = minimum;
    max_ = maximum;
}

void BigSpinBox::stepBy(int steps) {
    std::uint64_t v = value_;
    for (int i = 0; i < std::abs(steps); ++i) {
        if (step_ == Step::doubling) {
            if (steps > 0)
                v = v > max_ / 2 ? max_ : v * 2;
            else
                v = std::max(min_, v / 2);
        } else {
            if (steps > 0)
                v = v >= max_ ? max_ : v + 1;
            else
                v = v <= min_ ? min_ : v - 1;
        }
    }
    if (v == value_) return;
    setValue(v);
    lineEdit()->setText(textOf(v));  // an arrow replaces text that was typed or refused
    lineEdit()->setModified(false);
    emit valueEdited(v);
}

QValidator::State BigSpinBox::validate(QString& input, int&) const {
    // Anything may be typed; commitText() names what is wrong.
    return input.trimmed().isEmpty() ? QValidator::Intermediate : QValidator::Acceptable;
}

void BigSpinBox::fixup(QString& input) const { input = textOf(value_); }

QAbstractSpinBox::StepEnabled BigSpinBox::stepEnabled() const {
    StepEnabled e = StepNone;
    if (value_ > min_) e |= StepDownEnabled;
    if (value_ < max_) e |= StepUpEnabled;
    return e;
}

void BigSpinBox::focusOutEvent(QFocusEvent* event) {
    commitText();
    QAbstractSpinBox::focusOutEvent(event);
}

void BigSpinBox::commitText() {
    const std::string text = lineEdit()->text().trimmed().toStdString();
    auto parsed = kind_ == Kind::tokens ? parse_token_count(text, "value") : parse_count(text, "value");
    if (!parsed) {
        problem_ = QString::fromStdString(parsed.errors().front().message);
        emit problemChanged();
        return;
    }
    if (!problem_.isEmpty()) {
        problem_.clear();
        emit problemChanged();
    }
    if (*parsed == value_) {
        lineEdit()->setText(textOf(value_));
        lineEdit()->setModified(false);
        return;
    }
    value_ = *parsed;
    lineEdit()->setText(textOf(value_));
    lineEdit()->setModified(false);
    emit valueEdited(value_);
}

}  // namespace kvscope::ui
