#include "kvscope/ui/context_input.h"

#include <QHBoxLayout>
#include <QSlider>

#include <cmath>

#include "kvscope/ui/big_spin_box.h"

namespace kvscope::ui {

namespace {
constexpr int kStepsPerDoubling = 4;  // slider positions per power of two
constexpr std::uint64_t kSliderMin = 128;
}  // namespace

ContextInput::ContextInput(QWidget* parent)
    : QWidget(parent),
      slider_(new QSlider(Qt::Horizontal)),
      spin_(new BigSpinBox(BigSpinBox::Kind::tokens, BigSpinBox::Step::doubling)) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(slider_, 3);
    layout->addWidget(spin_, 2);
    spin_->setRange(1, 1ull << 40);
    slider_->setMinimum(positionOf(kSliderMin));
    setSliderMaximum(1u << 17);
    slider_->setPageStep(kStepsPerDoubling);
    slider_->setAccessibleName(tr("Context length slider"));
    spin_->setAccessibleName(tr("Context length"));
    connect(slider_, &QSlider::valueChanged, this, [this](int position) {
        if (updating_) return;
        const std::uint64_t t = tokensAt(position);
        updating_ = true;
        spin_->setValue(t);
        updating_ = false;
        emit valueEdited(t, slider_->isSliderDown());
    });
    connect(spin_, &BigSpinBox::valueEdited, this, [this](std::uint64_t t) {
        updating_ = true;
        slider_->setValue(positionOf(t));
        updating_ = false;
        emit valueEdited(t, false);
    });
}

std::uint64_t ContextInput::tokensAt(int position) {
    // Quarter powers of two, rounded to a multiple of 256 above 1k: 8k, 9.5k, 11k, 13.5k, 16k …
    const double t = std::exp2(static_cast<double>(position) / kStepsPerDoubling);
    const auto rounded = static_cast<std::uint64_t>(std::llround(t));
    return rounded >= 1024 ? (rounded + 128) / 256 * 256 : rounded;
}

int ContextInput::positionOf(std::uint64_t tokens) {
    return static_cast<int>(
        std::lround(std::log2(static_cast<double>(std::max<std::uint64_t>(tokens, 1))) * kStepsPerDoubling));
}

void ContextInput::setSliderMaximum(std::uint64_t tokens) {
    updating_ = true;
    slider_->setMaximum(positionOf(std::max<std::uint64_t>(tokens, 8192)));
    updating_ = false;
}

void ContextInput::setValue(std::uint64_t tokens) {
    updating_ = true;
    spin_->setValue(tokens);
    if (!slider_->isSliderDown()) slider_->setValue(positionOf(tokens));
    updating_ = false;
}

std::uint64_t ContextInput::value() const { return spin_->value(); }

}  // namespace kvscope::ui
