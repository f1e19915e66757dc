#pragma once
// Marks input widgets whose field the calculator rejected: a tinted background and
// the reason in the tooltip, cleared again when the field is valid.

#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "kvscope/calculator/result.h"

namespace kvscope::ui {

class FieldMarks {
public:
    // `fields`: the scenario inputs this widget answers for.
    void add(QWidget* widget, const QList<Field>& fields, const QString& tooltip);
    // A widget's own tooltip changed (a field that means another engine's setting): kept under its marks' reasons.
    void setTooltip(QWidget* widget, const QString& tooltip);
    // Marks every widget with an error on one of its fields; returns the messages shown
    // for these widgets, each starting with the widget's label.
    QStringList apply(const Errors& errors, const QMap<QWidget*, QString>& extra = {});
    // The errors no widget here answers for, except those on `elsewhere` (another panel's inputs), each as
    // one line: what a model loaded with, say, more experts per token than experts would otherwise leave unsaid.
    [[nodiscard]] QStringList unclaimed(const Errors& errors, const QList<Field>& elsewhere) const;
    [[nodiscard]] bool isMarked(const QWidget* widget) const;
    // The widget that answers for `field`; null when none does.
    [[nodiscard]] QWidget* widgetFor(Field field) const;

private:
    struct Entry {
        QWidget* widget;
        QList<Field> fields;
        QString tooltip;
        bool marked = false;
    };
    QList<Entry> entries_;
};

}  // namespace kvscope::ui
