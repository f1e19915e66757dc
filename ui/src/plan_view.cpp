#include "kvscope/ui/plan_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/units.h"
#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {
constexpr int kTpRole = Qt::UserRole;
constexpr int kPpRole = Qt::UserRole + 1;
constexpr int kReplicasRole = Qt::UserRole + 2;
}  // namespace

PlanView::PlanView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      caption_(new QLabel),
      table_(new QTableWidget(0, ColumnCount)),
      notes_(new QLabel),
      apply_(new QPushButton(tr("&Use this layout"))) {
    auto* title = new QLabel(tr("<b>How many GPUs?</b>"));
    caption_->setWordWrap(true);
    caption_->setForegroundRole(QPalette::PlaceholderText);
    // The same columns, in the same words, as kvscope-cli plan.
    table_->setHorizontalHeaderLabels({tr("GPUs"), tr("TP × PP × replicas"), tr("Fits"), tr("Headroom per GPU"),
                                       tr("Max seqs"), tr("Max context"), tr("tok/s per seq"), tr("tok/s in all")});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    table_->setAccessibleName(tr("Deployment plans"));
    table_->setToolTip(tr("Double-click a row, or select it and press Use this layout, to set TP and PP."));
    apply_->setEnabled(false);
    notes_->setWordWrap(true);
    notes_->setTextFormat(Qt::PlainText);
    notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    notes_->setAccessibleName(tr("Plan notes"));

    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(apply_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 8, 0, 0);
    layout->addWidget(title);
    layout->addWidget(caption_);
    layout->addWidget(table_);
    layout->addWidget(notes_);
    layout->addLayout(buttons);

    connect(table_, &QTableWidget::itemSelectionChanged, this,
            [this] { apply_->setEnabled(!table_->selectedItems().isEmpty()); });
    connect(table_, &QTableWidget::itemDoubleClicked, this, &PlanView::applySelected);
    connect(apply_, &QPushButton::clicked, this, &PlanView::applySelected);
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
    connect(model_, &ScenarioModel::unitsChanged, lazy, &RefreshWhenShown::request);
}

void PlanView::refresh() {
    const Results& r = model_->results();
    table_->setRowCount(0);
    apply_->setEnabled(false);
    notes_->clear();
    notes_->hide();
    if (!model_->hasResults() || !r.scenario.deployment) {
        caption_->setText(tr("Tick “Check a deployment” to see every layout of its GPU."));
        return;
    }
    const Scenario& s = r.scenario;
    // Planned here, while the tab is shown (tens of fits: more than an edit should pay for elsewhere).
    const auto planned = plan_deployments(s.arch, s.kv_dtype, s.workload, *s.deployment);
    if (!planned) {
        caption_->setText(q(planned.error_text()));
        return;
    }
    const Plan& plan = *planned;
    const UnitSystem units = model_->units();
    caption_->setText(tr("%1 sequences of %2 tokens on %3 with %4. Max seqs: what one replica holds at this "
                         "context; headroom at the sequences each replica serves. %5.")
                          .arg(q(format_count(plan.sequences)), q(format_tokens(s.workload.context_tokens)),
                               q(s.deployment->gpu.name), q(std::string(to_string(s.deployment->engine))), [&plan] {
                                   // The scope, and how many layouts are left out as no choice (as the CLI says).
                                   QStringList said;
                                   for (const std::string* n : {&plan.scope_note, &plan.dominated_note})
                                       if (!n->empty()) said << q(*n);
                                   for (QString& n : said) n[0] = n[0].toUpper();
                                   return said.join(". ");
                               }()));
    // The plan's other notes (what is not exact in every layout, llama.cpp's one-GPU split, …) and its warnings, as
    // kvscope-cli plan prints them under its table.
    QStringList said;
    for (const std::string& n : plan.notes)
        if (n != plan.scope_note && n != plan.dominated_note) said << tr("note: %1").arg(q(n));
    for (const std::string& w : plan.warnings) said << tr("warning: %1").arg(q(w));
    notes_->setText(said.join('\n'));
    notes_->setVisible(!said.isEmpty());
    // The layouts that are a choice, and the one in use whatever it is.
    std::vector<const PlanOption*> listed;
    for (const PlanOption& o : plan.options)
        if (!o.dominated || (o.tp == s.parallel.tp && o.pp == s.parallel.pp)) listed.push_back(&o);
    table_->setRowCount(static_cast<int>(listed.size()));
    int row = 0;
    for (const PlanOption* listed_option : listed) {
        const PlanOption& o = *listed_option;
        const bool in_use = o.tp == s.parallel.tp && o.pp == s.parallel.pp;
        const QStringList cells{
            QString::number(o.gpus),
            q(plan_layout_text(o)) + (in_use ? tr("  (in use)") : QString()),
            o.fits ? tr("yes") : tr("no"),
            o.fits ? q(format_signed_bytes(o.headroom_bytes_per_gpu, units)) : tr("—"),
            QString::number(o.max_batch),
            !o.fits ? tr("—")
            : o.max_context_unbounded
                ? tr("no limit")
                : q(format_count(o.max_context)) + (o.max_context_limited_by_model ? tr(" (model max)") : QString()),
            o.fits ? q(number_text(o.decode_tokens_per_s_per_sequence, Notation::fixed, 1)) : tr("—"),
            o.fits ? q(number_text(o.decode_tokens_per_s, Notation::fixed, 0)) : tr("—"),
        };
        for (int c = 0; c < ColumnCount; ++c) {
            auto* item = new QTableWidgetItem(cells.at(c));
            if (c != Layout && c != Fits) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            item->setData(kTpRole, QVariant::fromValue<qulonglong>(o.tp));
            item->setData(kPpRole, QVariant::fromValue<qulonglong>(o.pp));
            item->setData(kReplicasRole, QVariant::fromValue<qulonglong>(o.replicas));
            if (!o.fits) {
                item->setToolTip(q(o.why_not));
                item->setForeground(palette().color(QPalette::PlaceholderText));
            }
            if (in_use) {
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
            }
            table_->setItem(row, c, item);
        }
        ++row;
    }
}

void PlanView::applySelected() {
    const QList<QTableWidgetItem*> selected = table_->selectedItems();
    if (selected.isEmpty()) return;
    const QTableWidgetItem* item = selected.front();
    const std::uint64_t tp = item->data(kTpRole).toULongLong(), pp = item->data(kPpRole).toULongLong();
    const std::uint64_t replicas = item->data(kReplicasRole).toULongLong();
    model_->edit(tr("Use TP %1 × PP %2").arg(tp).arg(pp), [tp, pp](Scenario& s) {
        s.parallel.tp = tp;
        s.parallel.pp = pp;
        if (s.deployment) s.deployment->gpu_count = tp * pp;
    });
    const std::uint64_t sequences = model_->scenario().workload.batch;
    emit notice(replicas > 1 ? tr("TP %1 × PP %2 set. %3 sequences need %4 replicas of it; the fit above shows one "
                                  "replica holding all of them.")
                                   .arg(tp)
                                   .arg(pp)
                                   .arg(q(format_count(sequences)))
                                   .arg(replicas)
                             : tr("TP %1 × PP %2 set: %3 GPUs.").arg(tp).arg(pp).arg(tp * pp));
}

}  // namespace kvscope::ui
