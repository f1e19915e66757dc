#pragma once
// One stacked bar per GPU: weights, KV cache, reserve, what the engine leaves
// unused, and free budget; the KV segment turns red and runs past the end when
// the cache does not fit.

#include <QColor>
#include <QWidget>

#include <cstdint>

#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
struct FitReport;
}

namespace kvscope::ui {

class GpuMemoryBar : public QWidget {
    Q_OBJECT
public:
    struct Segment {
        QString label;
        std::uint64_t bytes = 0;
        QColor color;
        // The legend's text when not "label size" (e.g. "KV budget 2.47 GiB of the 40 GiB needed").
        QString legend = {};
        // Memory the deployment needs (weights, cache, reserve), as opposed to what is left over (free budget, what
        // the engine leaves unused): past the bar's end a need is still listed, a leftover is not there at all.
        bool need = true;
    };
    // The colour of what does not fit, drawn hatched in the bar and in its legend swatch.
    static QBrush overflowBrush();
    explicit GpuMemoryBar(QWidget* parent = nullptr);

    // `segments` for one GPU, in order; `memory` is the GPU's size; `overflow` what does not fit.
    void setData(QList<Segment> segments, std::uint64_t memory, std::uint64_t overflow, int gpus, UnitSystem units);
    // The segments of a fit per GPU: weights, KV cache, recurrent state, vLLM's extra pages and start check,
    // free budget, reserve, what the engine leaves unused (gpu_memory_bar_fit.cpp).
    void setFit(const FitReport& fit, UnitSystem units);
    // The host's memory of a model llama.cpp splits (offload.h): its weights, cache and compute buffer in RAM, and
    // what the RAM leaves free; one bar labelled "RAM" (gpu_memory_bar_fit.cpp).
    void setHost(const Offload& offload, UnitSystem units);
    // The bars' label: "GPU 1", "GPU 2", … unless one is set here.
    void setBarLabel(const QString& label) { bar_label_ = label; }
    [[nodiscard]] const QList<Segment>& segments() const { return segments_; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    [[nodiscard]] int shownBars() const;

    QList<Segment> segments_;
    std::uint64_t memory_ = 0;
    std::uint64_t overflow_ = 0;
    int gpus_ = 1;
    UnitSystem units_ = UnitSystem::binary;
    QString bar_label_;
};

}  // namespace kvscope::ui
