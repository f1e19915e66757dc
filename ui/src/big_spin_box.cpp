#include "kvscope/ui/big_spin_box.h"

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
    // Another value (undo, the slider): the text refused before is no longer what the field holds.
    if (value != value_) problem_.clear();
    value_ = value;
    if (!lineEdit()->hasFocus() || lineEdit()->text() != textOf(value)) lineEdit()->setText(textOf(value));
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
        return;
    }
    value_ = *parsed;
    lineEdit()->setText(textOf(value_));
    emit valueEdited(value_);
}

}  // namespace kvscope::ui
