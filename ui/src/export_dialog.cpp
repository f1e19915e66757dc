#include "kvscope/ui/export_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include "kvscope/ui/decimal_spin_box.h"

namespace kvscope::ui {

ExportDialog::ExportDialog(ChartSize initial, QWidget* parent)
    : QDialog(parent), width_(new QSpinBox), height_(new QSpinBox), scale_(new DecimalSpinBox) {
    setWindowTitle(tr("Chart image size"));
    width_->setRange(100, 20000);
    height_->setRange(100, 20000);
    width_->setSuffix(tr(" px"));
    height_->setSuffix(tr(" px"));
    scale_->setRange(0.5, 8);
    scale_->setSingleStep(0.5);
    scale_->setSuffix(tr(" ×"));
    width_->setValue(initial.logical.width());
    height_->setValue(initial.logical.height());
    scale_->setValue(initial.scale);
    scale_->setToolTip(tr("Device pixels per pixel: 2 gives a sharp image on high-DPI screens and in print."));
    auto* result = new QLabel;
    auto update = [this, result] {
        result->setText(tr("Image: %1 × %2 pixels")
                            .arg(qRound(width_->value() * scale_->value()))
                            .arg(qRound(height_->value() * scale_->value())));
    };
    for (QSpinBox* s : {width_, height_}) connect(s, &QSpinBox::valueChanged, this, update);
    connect(scale_, &QDoubleSpinBox::valueChanged, this, update);
    update();
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* form = new QFormLayout(this);
    form->addRow(tr("&Width"), width_);
    form->addRow(tr("&Height"), height_);
    form->addRow(tr("&Scale"), scale_);
    form->addRow(result);
    form->addRow(buttons);
}

ChartSize ExportDialog::chartSize() const { return {QSize(width_->value(), height_->value()), scale_->value()}; }

}  // namespace kvscope::ui
