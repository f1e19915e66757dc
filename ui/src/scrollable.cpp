#include "kvscope/ui/scrollable.h"

#include <QScrollArea>

namespace kvscope::ui {

QWidget* scrollable(QWidget* w) {
    auto* area = new QScrollArea;
    area->setWidget(w);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
}

}  // namespace kvscope::ui
