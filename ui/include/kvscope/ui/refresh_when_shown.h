#pragma once
// Views that only matter when seen (the Learn pages) recompute when shown, not on every
// edit while hidden: an edit marks them stale, and showing them refreshes them once.

#include <QObject>

#include <functional>

class QWidget;

namespace kvscope::ui {

class RefreshWhenShown : public QObject {
    Q_OBJECT
public:
    // Calls `refresh` when the view is first shown, and after each request while it is visible.
    RefreshWhenShown(QWidget* view, std::function<void()> refresh);

public slots:
    // Something the view shows changed: refresh now if it is visible, else when it is shown.
    void request();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* view_;
    std::function<void()> refresh_;
    bool stale_;
};

}  // namespace kvscope::ui
