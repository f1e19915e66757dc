#include "kvscope/ui/phases_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "kvscope/calculator/learn.h"
#include "kvscope/calculator/weights.h"
#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

PhasesView::PhasesView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent), model_(model), summary_(new QLabel), table_(new QTableWidget(Rows, 2)) {
    auto* intro = new QLabel(
        tr("<h3>Prefill and decode</h3>"
           "<p><b>Prefill</b> reads the whole prompt in one parallel pass: every prompt token goes through every "
           "layer at once, and each layer writes that token's key and value into the cache. Lots of arithmetic "
           "for each byte fetched, so the GPU's compute is the limit.</p>"
           "<p><b>Decode</b> then makes one token per step. The new token needs attention over every earlier "
           "token — whose keys and values are already in the cache, so the step only computes the new token and "
           "<i>reads</i> the cache and the weights. Little arithmetic per byte: memory bandwidth is the limit, and "
           "the cache's size sets the speed.</p>"
           "<p>Without the cache, each step would have to run the prefill again over everything so far.</p>"));
    intro->setWordWrap(true);
    summary_->setWordWrap(true);
    table_->setHorizontalHeaderLabels({tr("Prefill (the prompt)"), tr("One decode step")});
    table_->setVerticalHeaderLabels({tr("Tokens computed"), tr("Work"), tr("Work without a cache"), tr("KV cache"),
                                     tr("Weights read"), tr("FLOP per byte moved")});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    table_->setAccessibleName(tr("Prefill and decode figures"));

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(table_);
    layout->addWidget(summary_);
    layout->addStretch(1);
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
    connect(model_, &ScenarioModel::unitsChanged, lazy, &RefreshWhenShown::request);
}

void PhasesView::refresh() {
    if (!model_->hasResults()) return;
    const Scenario& s = model_->results().scenario;
    auto p = phase_costs(s);
    if (!p) {
        summary_->setText(q(p.error_text()));
        return;
    }
    const UnitSystem units = model_->units();
    const QString seqs = p->sequences == 1 ? tr("1 sequence") : tr("%1 sequences").arg(p->sequences);
    auto set = [this](int row, int col, const QString& text) {
        auto* item = new QTableWidgetItem(text);
        item->setToolTip(text);
        table_->setItem(row, col, item);
    };
    set(Tokens, 0, tr("%1 prompt tokens × %2").arg(q(format_count(p->prompt_tokens)), seqs));
    set(Tokens, 1, tr("1 new token × %1").arg(seqs));
    set(Flops, 0, q(format_flops(p->prefill_flops)));
    set(Flops, 1, q(format_flops(p->decode_flops_cached)));
    set(FlopsWithoutCache, 0, tr("— (prefill builds the cache)"));
    set(FlopsWithoutCache, 1,
        tr("%1 (%2× the cached step: a whole prefill again)")
            .arg(q(format_flops(p->decode_flops_uncached)))
            .arg(p->decode_flops_uncached / std::max(1.0, p->decode_flops_cached), 0, 'f', 0));
    set(KvCache, 0, tr("%1 written").arg(q(format_bytes(p->prefill_kv_written_bytes, units))));
    set(KvCache, 1, tr("%1 read").arg(q(format_bytes(p->decode_kv_bytes_read, units))));
    // The step reads fewer bytes than the weights take when some are looked up or not routed to:
    // both figures, and why, so that it agrees with the quiz and the fit (which count all of them).
    QString weights = tr("%1 (%2)").arg(
        q(format_bytes(p->decode_weight_bytes_read, units)),
        q(s.deployment && s.deployment->weight_quant ? weight_quant_label(loaded_weight_quant(*s.deployment))
                                                     : std::string(to_string(weight_dtype_of(s)))));
    if (p->decode_weight_bytes_read != p->weights_bytes)
        weights = tr("%1 of the %2 stored: %3")
                      .arg(weights, q(format_bytes(p->weights_bytes, units)), q(p->weights_read_reason));
    set(Weights, 0, weights);
    set(Weights, 1, weights);
    set(Intensity, 0,
        tr("%1 → compute-bound")
            .arg(q(format_count(static_cast<std::uint64_t>(std::llround(p->arithmetic_intensity_prefill))))));
    set(Intensity, 1, tr("%1 → memory-bound").arg(p->arithmetic_intensity_decode, 0, 'f', 1));
    table_->resizeRowsToContents();
    const double kv_share = static_cast<double>(p->decode_kv_bytes_read) /
                            static_cast<double>(p->decode_kv_bytes_read + p->decode_weight_bytes_read);
    summary_->setText(tr("Each decode step reads %1 of which the cache is %2% — the longer the context or the "
                         "more sequences, the more of every step is spent reading the cache.")
                          .arg(q(format_bytes(p->decode_kv_bytes_read + p->decode_weight_bytes_read, units)))
                          .arg(kv_share * 100, 0, 'f', 0));
}

}  // namespace kvscope::ui
