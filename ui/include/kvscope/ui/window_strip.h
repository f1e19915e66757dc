#pragma once
// Learn › The context window: a conversation's tokens against the model's context window and
// each sliding-window layer group's window. As the conversation grows past the window, the
// earliest tokens leave (greyed and hatched), and each group shows how many it still sees.

#include <QWidget>

#include "kvscope/calculator/learn.h"

class QLabel;
class QPushButton;
class QTimer;

namespace kvscope::ui {

class ContextInput;
class ScenarioModel;

// The picture: one band for the conversation, one per layer group, on one token scale.
class WindowStrip : public QWidget {
    Q_OBJECT
public:
    explicit WindowStrip(QWidget* parent = nullptr);
    void setView(const ContextWindowView& view);
    [[nodiscard]] const ContextWindowView& view() const { return view_; }
    [[nodiscard]] QSize sizeHint() const override;
    [[nodiscard]] QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    [[nodiscard]] int bandHeight() const;
    ContextWindowView view_;
};

class ContextWindowPage : public QWidget {
    Q_OBJECT
public:
    explicit ContextWindowPage(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] WindowStrip* strip() const { return strip_; }
    [[nodiscard]] QLabel* summary() const { return summary_; }
    [[nodiscard]] ContextInput* conversationField() const { return conversation_; }
    [[nodiscard]] QPushButton* playButton() const { return play_; }
    void setConversation(std::uint64_t tokens);
    // Grows the conversation step by step past the window, so the tokens are seen leaving.
    void play(bool on);

private:
    void refresh();
    void step();

    ScenarioModel* model_;
    ContextInput* conversation_;
    QPushButton* play_;
    QLabel* summary_;
    WindowStrip* strip_;
    QTimer* timer_;
    std::uint64_t tokens_ = 0;
    std::string model_key_;  // the conversation restarts at the scenario's context when the model changes
};

}  // namespace kvscope::ui
