#pragma once
// Context length: a log-scale slider (128 tokens … the model's limit) beside a
// spin box that takes 8k / 128k / 1M. Both edit the same value.

#include <QWidget>

#include <cstdint>

class QSlider;

namespace kvscope::ui {

class BigSpinBox;

class ContextInput : public QWidget {
    Q_OBJECT
public:
    explicit ContextInput(QWidget* parent = nullptr);

    void setValue(std::uint64_t tokens);
    // The slider's right end: the model's max positions (at least 8k).
    void setSliderMaximum(std::uint64_t tokens);
    [[nodiscard]] std::uint64_t value() const;
    [[nodiscard]] BigSpinBox* spinBox() const { return spin_; }
    [[nodiscard]] QSlider* slider() const { return slider_; }

signals:
    // `dragging` is true while the slider moves, so the edits merge into one undo step.
    void valueEdited(std::uint64_t tokens, bool dragging);

private:
    [[nodiscard]] static std::uint64_t tokensAt(int position);
    [[nodiscard]] static int positionOf(std::uint64_t tokens);

    QSlider* slider_;
    BigSpinBox* spin_;
    bool updating_ = false;
};

}  // namespace kvscope::ui
