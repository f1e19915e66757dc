#include "kvscope/ui/refresh_when_shown.h"

#include <QEvent>
#include <QWidget>

namespace kvscope::ui {

RefreshWhenShown::RefreshWhenShown(QWidget* view, std::function<void()> refresh)
    : QObject(view), view_(view), refresh_(std::move(refresh)), stale_(true) {
    view_->installEventFilter(this);
}

void RefreshWhenShown::request() {
    if (view_->isVisible()) {
        stale_ = false;
        refresh_();
    } else {
        stale_ = true;
    }
}

bool RefreshWhenShown::eventFilter(QObject* watched, QEvent* event) {
    if (watched == view_ && event->type() == QEvent::Show && stale_) {
        stale_ = false;
        refresh_();
    }
    return QObject::eventFilter(watched, event);
}

}  // namespace kvscope::ui
