#pragma once
// An inline message under the work area (errors from imports and exports, and
// confirmations), so nothing modal interrupts the user or a test.

#include <QFrame>

#include <functional>

class QLabel;
class QPushButton;

namespace kvscope::ui {

class MessageBar : public QFrame {
    Q_OBJECT
public:
    enum class Kind { info, error };
    explicit MessageBar(QWidget* parent = nullptr);
    // With `action_text`, a button beside the text runs `action` and dismisses the bar.
    void showMessage(const QString& text, Kind kind, const QString& action_text = {},
                     std::function<void()> action = {});
    [[nodiscard]] QPushButton* actionButton() const { return action_; }
    [[nodiscard]] QString text() const;
    [[nodiscard]] Kind kind() const { return kind_; }

private:
    QLabel* label_;
    QPushButton* action_;
    std::function<void()> on_action_;
    Kind kind_ = Kind::info;
};

}  // namespace kvscope::ui
