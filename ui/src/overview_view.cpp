#include "kvscope/ui/overview_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "kvscope/ui/bar_delegate.h"
#include "kvscope/ui/comparison_model.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/stale_note.h"
#include "kvscope/ui/text.h"

#include "kvscope/calculator/parameters.h"

namespace kvscope::ui {

QString both_units(std::uint64_t bytes, UnitSystem primary) {
    return QString::fromStdString(format_bytes_both(bytes, primary));
}

OverviewView::OverviewView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      headline_(new QLabel),
      total_(new QLabel),
      figures_(new QLabel),
      formula_(new QLabel),
      warnings_(new QLabel),
      stale_(new StaleNote(model)),
      table_(new QTableView),
      comparison_(new ComparisonModel(model, this)) {
    QFont big = total_->font();
    big.setPointSizeF(big.pointSizeF() * 2.0);
    big.setBold(true);
    total_->setFont(big);
    total_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    total_->setAccessibleName(tr("KV cache size"));
    headline_->setWordWrap(true);
    figures_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    formula_->setWordWrap(true);
    formula_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    formula_->setFrameShape(QFrame::StyledPanel);
    formula_->setMargin(8);
    formula_->setToolTip(tr("The one formula, with this scenario's numbers substituted"));
    warnings_->setWordWrap(true);
    warnings_->setStyleSheet("color: #e67e22;");

    table_->setModel(comparison_);
    table_->setItemDelegateForColumn(ComparisonModel::Bar, new BarDelegate(ComparisonModel::FractionRole, table_));
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(ComparisonModel::Bar, QHeaderView::Stretch);
    table_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    table_->setAccessibleName(tr("MHA, GQA and MQA comparison"));

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(stale_);
    layout->addWidget(headline_);
    layout->addWidget(total_);
    layout->addWidget(figures_);
    layout->addWidget(new QLabel(tr("<b>How it is calculated</b>")));
    layout->addWidget(formula_);
    layout->addWidget(warnings_);
    layout->addWidget(new QLabel(tr("<b>The same model with other head layouts</b>")));
    layout->addWidget(table_);
    layout->addStretch(1);

    connect(model_, &ScenarioModel::changed, this, &OverviewView::refresh);
    connect(model_, &ScenarioModel::unitsChanged, this, &OverviewView::refresh);
    refresh();
}

QString OverviewView::figuresText() const { return figures_->text(); }

void OverviewView::refresh() {
    if (!model_->hasResults()) return;
    const Results& r = model_->results();
    const Scenario& s = r.scenario;
    const UnitSystem units = model_->units();

    const ParameterCount params = parameters(s.arch);
    headline_->setText(
        tr("<b>%1</b> · %2 · %3 parameters%4 · %5 tokens × %6 · %7")
            .arg(model_->resultsDescription().toHtmlEscaped(), q(attention_label(s.arch)),
                 q(format_si(static_cast<double>(params.total))), params.estimated ? tr(" (estimated)") : "",
                 q(format_count(s.workload.context_tokens)))
            .arg(q(format_count_of(s.workload.batch, "sequence", "sequences")), q(std::string(to_string(s.kv_dtype)))));
    // A layout or format the calculator does not model exactly is never shown as an exact figure.
    const bool exact = r.kv.exact;
    total_->setText(exact ? tr("KV cache: %1").arg(both_units(r.kv.total_bytes, model_->units()))
                          : tr("KV cache: %1 — not exact").arg(both_units(r.kv.total_bytes, model_->units())));

    // Per layer: one value when every layer with a KV cache stores the same, else the range.
    std::uint64_t lo = ~0ull, hi = 0, caching = 0;
    for (const LayerKv& l : r.kv.layers) {
        if (l.bytes == 0 && l.stored_tokens == 0) continue;  // recurrent, shared or MLP-only: no KV of its own
        ++caching;
        lo = std::min(lo, l.bytes);
        hi = std::max(hi, l.bytes);
    }
    QString per_layer = caching == 0 ? tr("none (no layer keeps a KV cache)")
                        : lo == hi   ? q(format_bytes(lo, units))
                                     : tr("%1 … %2").arg(q(format_bytes(lo, units)), q(format_bytes(hi, units)));
    if (caching > 0 && caching < r.kv.layers.size())
        per_layer += tr(" (%1 of %2 layers keep one)").arg(caching).arg(r.kv.layers.size());
    QStringList rows;
    if (const std::string mix = layer_mix_text(s.arch); !mix.empty()) rows << tr("Layer mix: %1").arg(q(mix));
    rows << tr("Per token: %1 · per sequence: %2 · per layer: %3")
                .arg(q(format_bytes(r.kv.bytes_per_token, units)), q(format_bytes(r.kv.per_sequence_bytes, units)),
                     per_layer);
    if (r.kv.gpus > 1)
        rows << tr("Per GPU (%1 GPUs, heaviest): %2")
                    .arg(r.kv.gpus)
                    .arg(both_units(r.kv.per_gpu_bytes, model_->units()));
    rows << (exact ? tr("Exactly %1 bytes.").arg(q(format_count(r.kv.total_bytes)))
                   : tr("%1 bytes; not exact for this model (below).").arg(q(format_count(r.kv.total_bytes))));
    if (r.kv.state_bytes > 0)
        rows << tr("Recurrent state: %1 — %2 per sequence, whatever the context · KV cache + state: %3")
                    .arg(both_units(r.kv.state_bytes, model_->units()),
                         q(format_bytes(r.kv.state_bytes_per_sequence, units)),
                         both_units(r.kv.memory_bytes, model_->units()));
    figures_->setText(rows.join('\n'));
    formula_->setText(r.state_formula.empty() ? q(r.formula)
                                              : q(r.formula) + "\n" + tr("state: ") + q(r.state_formula));
    QStringList warnings;
    for (const auto& w : curve_warnings(r)) warnings << q(w);  // the cache's, then what the chart leaves out
    warnings_->setText(warnings.join('\n'));
    warnings_->setVisible(!warnings.isEmpty());
}

}  // namespace kvscope::ui
