#include "kvscope/ui/message_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QToolButton>

namespace kvscope::ui {

MessageBar::MessageBar(QWidget* parent) : QFrame(parent), label_(new QLabel), action_(new QPushButton) {
    setFrameShape(QFrame::StyledPanel);
    label_->setWordWrap(true);
    label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* close = new QToolButton;
    close->setIcon(style()->standardIcon(QStyle::SP_DialogCloseButton));
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 4, 4, 4);
    layout->addWidget(label_, 1);
    layout->addWidget(action_, 0, Qt::AlignTop);
    layout->addWidget(close, 0, Qt::AlignTop);
    connect(close, &QToolButton::clicked, this, &QWidget::hide);
    connect(action_, &QPushButton::clicked, this, [this] {
        hide();
        if (on_action_) on_action_();
    });
    action_->hide();
    hide();
}

void MessageBar::showMessage(const QString& text, Kind kind, const QString& action_text, std::function<void()> action) {
    kind_ = kind;
    label_->setText(text);
    action_->setText(action_text);
    action_->setVisible(!action_text.isEmpty());
    on_action_ = std::move(action);
    // Translucent tints keep the text readable on light and dark palettes.
    setStyleSheet(kind == Kind::error
                      ? "MessageBar { background: rgba(214, 48, 49, 45); border: 1px solid rgba(214, 48, 49, 140); }"
                      : "MessageBar { background: rgba(39, 174, 96, 40); border: 1px solid rgba(39, 174, 96, 120); }");
    show();
}

QString MessageBar::text() const { return label_->text(); }

}  // namespace kvscope::ui
