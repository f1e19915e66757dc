#pragma once
// A decimal field that shows numbers as every other number in the window (0.85: a decimal point,
// whatever the desktop's locale) and reads what people type in either habit: 0.85 and 0,85 are the
// same value, on a German desktop as on an English one (kvscope::read_typed_decimal).

#include <QDoubleSpinBox>

#include <optional>

namespace kvscope::ui {

class DecimalSpinBox : public QDoubleSpinBox {
    Q_OBJECT
public:
    explicit DecimalSpinBox(QWidget* parent = nullptr);

    [[nodiscard]] QString textFromValue(double value) const override;
    [[nodiscard]] double valueFromText(const QString& text) const override;
    QValidator::State validate(QString& input, int& pos) const override;
    // Text that is not a number on leaving the field goes back to the value (QDoubleSpinBox's own
    // fixup would drop ',' as the C locale's group separator: "0,5," would become 5).
    void fixup(QString& input) const override;
    // A fraction, as the CLI writes it (units.h fraction_text): two decimals, three where it has them (0.90,
    // SGLang's 0.835); and "90 %" read as 0.90.
    void setFractionStyle(bool on) { fraction_style_ = on; }

private:
    bool fraction_style_ = false;
    // The typed text (prefix and suffix removed) as a number; nullopt when it is not one yet.
    [[nodiscard]] std::optional<double> parse(const QString& text) const;
};

}  // namespace kvscope::ui
