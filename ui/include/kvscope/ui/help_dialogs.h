#pragma once
// The Help menu's pages, offline: every keyboard shortcut (read from the menus, so the list never
// drifts from them) and how the numbers are calculated.

#include <QString>

class QDialog;
class QMenuBar;
class QWidget;

namespace kvscope::ui {

// An HTML table of every menu action that has a shortcut, menu by menu.
QString shortcuts_html(const QMenuBar* menus);
// The formula, the engines' budget rules, replication, the planner and the decode floor.
QString how_it_calculates_html();

// A window showing `html`, closed with Esc; owned by `parent`.
QDialog* show_help_page(QWidget* parent, const QString& title, const QString& html);

}  // namespace kvscope::ui
