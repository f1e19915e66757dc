#pragma once
// An inline message above the work area (errors from imports and exports, and
// confirmations), so nothing modal interrupts the user or a test.

#include <QFrame>

class QLabel;

namespace kvscope::ui {

class MessageBar : public QFrame {
    Q_OBJECT
public:
    enum class Kind { info, error };
    explicit MessageBar(QWidget* parent = nullptr);
    void showMessage(const QString& text, Kind kind);
    [[nodiscard]] QString text() const;
    [[nodiscard]] Kind kind() const { return kind_; }

private:
    QLabel* label_;
    Kind kind_ = Kind::info;
};

}  // namespace kvscope::ui
