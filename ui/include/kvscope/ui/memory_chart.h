#pragma once
// KV cache bytes against context length: one line per head layout (the model's
// own emphasised), the weights and the GPU budget as horizontal lines, markers
// where the cache outgrows the weights and where it stops fitting, a crosshair
// with exact values, linear/log axes, legend toggles, rubber-band zoom.

#include <QChartView>
#include <QPen>
#include <QScatterSeries>
#include <QSet>

#include <array>

#include "kvscope/ui/scenario_model.h"

class QCategoryAxis;
class QLineSeries;
class QGraphicsLineItem;
class QGraphicsSimpleTextItem;
class QGraphicsRectItem;

namespace kvscope::ui {

class MemoryChart : public QChartView {
    Q_OBJECT
public:
    explicit MemoryChart(ScenarioModel* model, QWidget* parent = nullptr);
    [[nodiscard]] const ScenarioModel& model() const { return *model_; }

    [[nodiscard]] bool logTokens() const { return log_x_; }
    [[nodiscard]] bool logBytes() const { return log_y_; }
    // The head-layout lines (MHA, GQA, MQA, MLA) in that order; unused ones are hidden.
    [[nodiscard]] QLineSeries* variantSeries(int i) const { return variants_.at(static_cast<std::size_t>(i)); }
    [[nodiscard]] QLineSeries* weightsSeries() const { return weights_; }
    [[nodiscard]] QLineSeries* budgetSeries() const { return budget_; }
    [[nodiscard]] QScatterSeries* outgrowsMarker() const { return outgrows_; }
    [[nodiscard]] QScatterSeries* stopsFittingMarker() const { return stops_; }
    // The vertical line at the scenario's context.
    [[nodiscard]] QLineSeries* contextMarker() const { return context_; }
    // What the chart shows, as its title says and every export carries it: "KV cache against context
    // length: Llama 3 70B", and "fp8_e4m3 KV · 32k tokens × 16 sequences · TP 2 · 2 × H100 · vllm".
    [[nodiscard]] QString titleText() const { return title_; }
    [[nodiscard]] QString subtitleText() const { return subtitle_; }
    // True until the user chooses the bytes axis: the chart then picks log bytes when the head layouts
    // span more than 10× the model's own curve, its weights and its budget, so those stay readable.
    [[nodiscard]] bool bytesAxisAutomatic() const { return bytes_axis_automatic_; }
    // The crosshair's text at `tokens` (the nearest plotted point), as shown on hover.
    [[nodiscard]] QString readout(std::uint64_t tokens) const;

    // Renders the chart at `size` logical pixels onto `painter` (exports, reports, clipboard); without its legend
    // where the page lists legendEntries() itself (the report: a legend beside a narrow plot would cut its figures).
    void renderTo(QPainter* painter, const QRectF& target, QSizeF size, bool with_legend = true);
    // The legend's entries as shown: each visible series' name and how it is drawn.
    struct LegendEntry {
        QString name;
        QPen pen;
        bool dot = false;  // a marker (the crossings), not a line
        QScatterSeries::MarkerShape shape = QScatterSeries::MarkerShapeCircle;
    };
    [[nodiscard]] QList<LegendEntry> legendEntries() const;

public slots:
    void setLogTokens(bool on);
    // The user's choice: from then on the bytes axis is no longer chosen automatically.
    void setLogBytes(bool on);
    void resetZoom();

signals:
    void axesModeChanged();

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void refresh();
    void applyPalette();
    void updateTitle();
    // The bytes axis the chart picks for `r` while the user has not chosen: true for log.
    [[nodiscard]] bool chooseBytesAxis(const Results& r) const;
    void setRanges(double x_lo, double x_hi, double y_lo, double y_hi);
    void relabel();
    [[nodiscard]] double xOf(double tokens) const;
    [[nodiscard]] double yOf(double bytes) const;
    [[nodiscard]] double tokensAt(double x) const;
    void showCrosshair(const QPointF& widget_pos);
    void hideCrosshair();

    ScenarioModel* model_;
    QChart* chart_;
    std::array<QLineSeries*, kVariantKindCount> variants_{};
    QLineSeries* weights_;
    QLineSeries* budget_;
    QScatterSeries* outgrows_;
    QScatterSeries* stops_;
    QLineSeries* context_;
    QString title_, subtitle_;
    bool bytes_axis_automatic_ = true;
    QCategoryAxis* x_;
    QCategoryAxis* y_;
    QGraphicsLineItem* cross_line_ = nullptr;
    QGraphicsRectItem* cross_box_ = nullptr;
    QGraphicsSimpleTextItem* cross_text_ = nullptr;
    QSet<QString> hidden_by_user_;
    bool log_x_ = true;
    bool log_y_ = false;
    bool relabelling_ = false;
    double full_x_lo_ = 0, full_x_hi_ = 1, full_y_lo_ = 0, full_y_hi_ = 1;
};

}  // namespace kvscope::ui
