#include "kvscope/ui/field_marks.h"

#include <QLabel>

namespace kvscope::ui {

void FieldMarks::add(QWidget* widget, const QList<Field>& fields, const QString& tooltip) {
    widget->setToolTip(tooltip);
    entries_.append({widget, fields, tooltip});
}

void FieldMarks::setTooltip(QWidget* widget, const QString& tooltip) {
    for (Entry& e : entries_) {
        if (e.widget != widget || e.tooltip == tooltip) continue;
        // The reasons shown under the old tooltip stay under the new one until the next apply.
        const QString shown = widget->toolTip();
        widget->setToolTip(tooltip + shown.mid(e.tooltip.size()));
        e.tooltip = tooltip;
    }
}

QStringList FieldMarks::apply(const Errors& errors, const QMap<QWidget*, QString>& extra) {
    QStringList shown;
    for (Entry& e : entries_) {
        QStringList reasons;
        for (const FieldError& error : errors)
            if (error.input != Field::none && e.fields.contains(error.input))
                reasons << QString::fromStdString(error.message);
        if (extra.contains(e.widget)) reasons << extra.value(e.widget);
        e.marked = !reasons.isEmpty();
        // A translucent red reads on light and dark palettes alike. The field's style sheet would reach
        // its tooltip too (black on dark red): the tooltip keeps the palette's own colours.
        e.widget->setStyleSheet(e.marked ? QStringLiteral("* { background-color: rgba(214, 48, 49, 60); } "
                                                          "QToolTip { color: palette(tool-tip-text); "
                                                          "background-color: palette(tool-tip-base); "
                                                          "border: 1px solid palette(mid); }")
                                         : QString());
        e.widget->setToolTip(e.marked ? e.tooltip + "\n\n" + reasons.join('\n') : e.tooltip);
        const QString name = e.widget->accessibleName();
        // The field's name once: "KV heads (5) must divide …", not "KV heads: KV heads (5) must divide …".
        for (const QString& r : reasons)
            shown << (name.isEmpty() || names_word(r.toStdString(), name.toStdString(), true) ? r : name + ": " + r);
    }
    return shown;
}

QStringList FieldMarks::unclaimed(const Errors& errors, const QList<Field>& elsewhere) const {
    QStringList out;
    for (const FieldError& error : errors) {
        if (error.input != Field::none && (widgetFor(error.input) || elsewhere.contains(error.input))) continue;
        out << QString::fromStdString(join_errors({error}));
    }
    return out;
}

bool FieldMarks::isMarked(const QWidget* widget) const {
    for (const Entry& e : entries_)
        if (e.widget == widget) return e.marked;
    return false;
}

QWidget* FieldMarks::widgetFor(Field field) const {
    for (const Entry& e : entries_)
        if (field != Field::none && e.fields.contains(field)) return e.widget;
    return nullptr;
}

}  // namespace kvscope::ui
