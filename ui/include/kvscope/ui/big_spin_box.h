#pragma once
// A spin box for 64-bit counts that reads the way people write them: "8k",
// "128K", "1M", "1.5k". Arrow keys and the wheel double or halve (contexts and
// batches grow in powers of two) or step by one, as configured.

#include <QAbstractSpinBox>

#include <cstdint>

namespace kvscope::ui {

class BigSpinBox : public QAbstractSpinBox {
    Q_OBJECT
public:
    enum class Kind { tokens, count };
    enum class Step { doubling, by_one };
    BigSpinBox(Kind kind, Step step, QWidget* parent = nullptr);

    [[nodiscard]] std::uint64_t value() const { return value_; }
    // Sets the value without emitting valueEdited (model → view updates), by the rule every input of the window
    // follows (field_text.h): a new value replaces whatever the field holds; the same value leaves text of the
    // user's own in place, refused (problem()) or still being typed (pending()).
    void setValue(std::uint64_t value);
    void setRange(std::uint64_t minimum, std::uint64_t maximum);
    // The text as typed, when it does not parse: shown in the field's error.
    [[nodiscard]] QString problem() const { return problem_; }
    // Text typed and not yet accepted (no Enter, the focus still here).
    [[nodiscard]] bool pending() const;
    // Accepts the text typed, as Enter does; false when the field refuses it (problem() says why).
    bool commitPending();
    // Puts the value back in place of text of the user's own (Esc).
    void revert();
    // The same without a word: the field is hidden (a model without sliding layers), and what was typed there is
    // not this scenario's.
    void dropUserText();

    void stepBy(int steps) override;
    QValidator::State validate(QString& input, int& pos) const override;
    void fixup(QString& input) const override;

signals:
    // The user entered a new value (typing, arrows, wheel).
    void valueEdited(std::uint64_t value);
    // The typed text became unreadable, or readable again (see problem()).
    void problemChanged();

protected:
    StepEnabled stepEnabled() const override;
    void focusOutEvent(QFocusEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    void commitText();
    [[nodiscard]] QString textOf(std::uint64_t v) const;

    Kind kind_;
    Step step_;
    std::uint64_t value_ = 1;
    std::uint64_t min_ = 1;
    std::uint64_t max_ = ~0ull;
    QString problem_;
};

}  // namespace kvscope::ui
