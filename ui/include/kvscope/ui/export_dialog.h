#pragma once
// Asks for the PNG's size and scale (device pixels per pixel) before saving.

#include <QDialog>

#include "kvscope/ui/exporter.h"

class QSpinBox;

namespace kvscope::ui {

class DecimalSpinBox;

class ExportDialog : public QDialog {
    Q_OBJECT
public:
    explicit ExportDialog(ChartSize initial, QWidget* parent = nullptr);
    [[nodiscard]] ChartSize chartSize() const;

private:
    QSpinBox* width_;
    QSpinBox* height_;
    DecimalSpinBox* scale_;
};

}  // namespace kvscope::ui
