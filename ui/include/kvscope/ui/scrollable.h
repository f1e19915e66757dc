#pragma once
// A page that scrolls when the window is smaller than it.

class QWidget;

namespace kvscope::ui {

// `w` inside a frameless scroll area that resizes it to the area's width.
QWidget* scrollable(QWidget* w);

}  // namespace kvscope::ui
