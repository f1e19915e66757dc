#include "kvscope/ui/decimal_spin_box.h"

#include <QLocale>

#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"

namespace kvscope::ui {

DecimalSpinBox::DecimalSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
    // Steps and rounding in Qt's own code follow the widget's locale: the C locale keeps them
    // in agreement with textFromValue.
    QLocale c = QLocale::c();
    c.setNumberOptions(QLocale::OmitGroupSeparator);
    setLocale(c);
}

std::optional<double> DecimalSpinBox::parse(const QString& text) const {
    QString body = text;
    if (!prefix().isEmpty() && body.startsWith(prefix())) body.remove(0, prefix().size());
    if (!suffix().isEmpty() && body.endsWith(suffix())) body.chop(suffix().size());
    body = body.trimmed();
    const bool percent = fraction_style_ && body.endsWith('%');
    if (percent) body = body.chopped(1).trimmed();
    const TypedDecimal typed = read_typed_decimal(body.toStdString());
    if (!typed.error.empty()) return std::nullopt;
    const auto v = number_from_text(typed.plain);
    return v && percent ? std::optional<double>(*v / 100) : v;
}

QString DecimalSpinBox::textFromValue(double value) const {
    if (fraction_style_) return QString::fromStdString(fraction_text(value));
    return QString::fromStdString(number_text(value, Notation::fixed, decimals()));
}

void DecimalSpinBox::fixup(QString& input) const {
    if (const auto v = parse(input); !v || *v < minimum() || *v > maximum()) input = textFromValue(value());
}

double DecimalSpinBox::valueFromText(const QString& text) const { return parse(text).value_or(value()); }

QValidator::State DecimalSpinBox::validate(QString& input, int&) const {
    const auto v = parse(input);
    // Half-typed text ("0," or "") may still become a number; fixup() puts the value back on leaving.
    if (!v) return QValidator::Intermediate;
    return *v >= minimum() && *v <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
}

}  // namespace kvscope::ui
