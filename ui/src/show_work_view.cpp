#include "kvscope/ui/show_work_view.h"

#include <QCoreApplication>
#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

// Each input a factor can name: where its value is set, in the words of the inputs panel, and the colour
// that links the factor to it. Inputs not listed show their key, in grey.
struct FactorLook {
    Field field;
    const char* source;  // translated in the "ShowWorkView" context
    QColor colour;
};
constexpr QColor kGrey{0x7f, 0x8c, 0x8d};
const FactorLook kLooks[] = {
    {Field::none, QT_TRANSLATE_NOOP("ShowWorkView", "the model / a constant"), kGrey},
    {Field::layers, QT_TRANSLATE_NOOP("ShowWorkView", "Layers"), {0x2e, 0x86, 0xde}},
    {Field::kv_heads, QT_TRANSLATE_NOOP("ShowWorkView", "KV heads"), {0x27, 0xae, 0x60}},
    {Field::head_dim, QT_TRANSLATE_NOOP("ShowWorkView", "Head dim"), {0x8e, 0x44, 0xad}},
    {Field::kv_dtype, QT_TRANSLATE_NOOP("ShowWorkView", "KV dtype"), {0xe6, 0x7e, 0x22}},
    {Field::context_tokens, QT_TRANSLATE_NOOP("ShowWorkView", "Context"), {0xc0, 0x39, 0x2b}},
    {Field::batch, QT_TRANSLATE_NOOP("ShowWorkView", "Sequences"), {0x16, 0xa0, 0x85}},
    {Field::tp, QT_TRANSLATE_NOOP("ShowWorkView", "TP"), {0x9c, 0x6b, 0x30}},
    {Field::full_window, QT_TRANSLATE_NOOP("ShowWorkView", "Full-context switch + model's window"), {0xd3, 0x54, 0x9a}},
    {Field::block_size, QT_TRANSLATE_NOOP("ShowWorkView", "Block size"), kGrey},
};

const FactorLook* look_of(Field field) {
    for (const FactorLook& l : kLooks)
        if (l.field == field) return &l;
    return nullptr;
}

QString source_of(Field field) {
    const FactorLook* l = look_of(field);
    return l ? QCoreApplication::translate("ShowWorkView", l->source) : q(std::string(to_string(field)));
}

// A factor's field travels in a link's address, and in its table row's data, as its key.
QString link_of(Field field) { return q(std::string(to_string(field))); }
Field field_of(const QVariant& v) { return parse_field(v.toString().toStdString()); }

}  // namespace

QColor factor_colour(Field field) {
    const FactorLook* l = look_of(field);
    return l ? l->colour : kGrey;
}

ShowWorkView::ShowWorkView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      form_(new QLabel),
      formula_(new QLabel),
      product_(new QLabel),
      state_(new QLabel),
      table_(new QTableWidget(0, 4)) {
    state_->setWordWrap(true);
    state_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form_->setWordWrap(true);
    formula_->setWordWrap(true);
    formula_->setTextFormat(Qt::RichText);
    formula_->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
    formula_->setFrameShape(QFrame::StyledPanel);
    formula_->setMargin(10);
    formula_->setAccessibleName(tr("The formula, factor by factor"));
    formula_->setToolTip(tr("Point at a factor to see the input it comes from; click it to go there."));
    QFont big = product_->font();
    big.setPointSizeF(big.pointSizeF() * 1.4);
    big.setBold(true);
    product_->setFont(big);
    product_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    product_->setWordWrap(true);

    table_->setHorizontalHeaderLabels({tr("Factor"), tr("Value"), tr("Set by"), tr("Why")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->setWordWrap(true);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
    table_->setMouseTracking(true);
    table_->viewport()->installEventFilter(this);
    table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    table_->setAccessibleName(tr("Factors of the formula"));

    auto* layout = new QVBoxLayout(this);
    auto* intro =
        new QLabel(tr("<h3>Show your work</h3>The KV cache holds a key and a value for every token, in "
                      "every layer, for every KV head. Multiply it out — point at a factor to see "
                      "which input sets it:"));
    intro->setWordWrap(true);
    layout->addWidget(intro);
    layout->addWidget(form_);
    layout->addWidget(formula_);
    layout->addWidget(product_);
    layout->addWidget(state_);
    layout->addWidget(table_);
    layout->addStretch(1);

    connect(formula_, &QLabel::linkHovered, this, [this](const QString& link) { emit fieldHovered(field_of(link)); });
    connect(formula_, &QLabel::linkActivated, this,
            [this](const QString& link) { emit fieldActivated(field_of(link)); });
    connect(table_, &QTableWidget::cellEntered, this,
            [this](int row, int) { emit fieldHovered(field_of(table_->item(row, 0)->data(FieldRole))); });
    connect(table_, &QTableWidget::cellClicked, this,
            [this](int row, int) { emit fieldActivated(field_of(table_->item(row, 0)->data(FieldRole))); });
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
    connect(model_, &ScenarioModel::unitsChanged, lazy, &RefreshWhenShown::request);
}

bool ShowWorkView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == table_->viewport() && event->type() == QEvent::Leave) emit fieldHovered(Field::none);
    return QWidget::eventFilter(watched, event);
}

void ShowWorkView::leaveEvent(QEvent* event) {
    emit fieldHovered(Field::none);
    QWidget::leaveEvent(event);
}

void ShowWorkView::hideEvent(QHideEvent* event) {
    emit fieldHovered(Field::none);
    QWidget::hideEvent(event);
}

void ShowWorkView::refresh() {
    if (!model_->hasResults()) return;
    const Results& r = model_->results();
    const KvDerivation& d = r.derivation;
    const UnitSystem units = model_->units();

    QString form = tr("<b>Form:</b> %1. ").arg(q(d.form));
    if (r.scenario.arch.mla)
        form +=
            tr("Multi-head latent attention stores one compressed latent per token and layer, shared by "
               "every head: no ×2 for K and V, and no KV heads.");
    else if (d.groups.size() > 1)
        form +=
            tr("Sliding-window and chunked layers keep only their last tokens, so layers are summed in groups by "
               "the tokens they store.");
    else
        form += tr("2 × layers × KV heads × head dim × bytes per element × tokens × sequences.");
    // A hybrid model: only the layers with a KV cache of their own are in the product.
    const Architecture& a = r.scenario.arch;
    std::uint64_t caching = 0;
    for (const LayerGroup& g : d.groups) caching += g.layers.value;
    if (caching < a.layers)
        form += tr(" Only %1 of the %2 layers keep a KV cache (%3); the others add nothing to it.")
                    .arg(caching)
                    .arg(a.layers)
                    .arg(q(layer_mix_text(a)));
    form_->setText(form);

    // The formula as coloured, linked factors.
    auto chip = [](const Factor& f) {
        const QColor c = factor_colour(f.field);
        const QString text = q(f.text).toHtmlEscaped().replace(' ', "&nbsp;");
        if (f.field == Field::none) return QStringLiteral("<span style=\"color:%1\">%2</span>").arg(c.name(), text);
        return QStringLiteral("<a href=\"%1\" style=\"color:%2; text-decoration:none\"><b>%3</b></a>")
            .arg(link_of(f.field), c.name(), text);
    };
    QStringList parts;
    if (d.kv_pair) parts << chip(*d.kv_pair);
    QStringList row;
    for (const Factor& f : d.row) row << chip(f);
    if (d.groups.size() == 1) {
        parts << chip(d.groups[0].layers) << row << chip(d.groups[0].tokens);
    } else {
        QStringList sum;
        for (const LayerGroup& g : d.groups) sum << chip(g.layers) + " × " + chip(g.tokens);
        parts << "(" + sum.join(" + ") + ")" << row;
    }
    for (const Factor& f : d.tail) parts << chip(f);
    formula_->setText("<span style=\"font-size:large\">" + parts.join(" × ") + "</span>");
    product_->setText(
        tr("= %1 bytes = %2").arg(q(format_count(d.total_bytes)), q(format_bytes_both(d.total_bytes, units))));
    // The recurrent state beside the cache: its own product, flat in the context.
    state_->setText(r.state_formula.empty()
                        ? QString()
                        : tr("<b>Beside the cache, the recurrent state</b> (the same whatever the context, one per "
                             "sequence): %1")
                              .arg(q(r.state_formula).toHtmlEscaped()));
    state_->setVisible(!r.state_formula.empty());

    // One row per factor, in the order of the formula.
    std::vector<const Factor*> factors;
    if (d.kv_pair) factors.push_back(&*d.kv_pair);
    if (d.groups.size() == 1) {
        factors.push_back(&d.groups[0].layers);
        for (const Factor& f : d.row) factors.push_back(&f);
        factors.push_back(&d.groups[0].tokens);
    } else {
        for (const LayerGroup& g : d.groups) {
            factors.push_back(&g.layers);
            factors.push_back(&g.tokens);
        }
        for (const Factor& f : d.row) factors.push_back(&f);
    }
    for (const Factor& f : d.tail) factors.push_back(&f);
    table_->setRowCount(static_cast<int>(factors.size()));
    for (int i = 0; i < static_cast<int>(factors.size()); ++i) {
        const Factor& f = *factors[static_cast<std::size_t>(i)];
        const Field field = f.field;
        auto* name = new QTableWidgetItem(q(f.text));
        name->setForeground(factor_colour(field));
        name->setData(FieldRole, link_of(field));
        name->setData(ValueRole, QVariant::fromValue<qulonglong>(f.value));
        name->setData(DivisorRole, QVariant::fromValue<qulonglong>(f.divisor));
        // Sub-byte and block formats: the exact fraction beside its decimal (q8_0: 272/256 = 1.0625).
        const QString value = f.value % f.divisor == 0
                                  ? q(format_count(f.value / f.divisor))
                                  : QStringLiteral("%1/%2 = %3")
                                        .arg(f.value)
                                        .arg(f.divisor)
                                        .arg(static_cast<double>(f.value) / static_cast<double>(f.divisor), 0, 'g', 6);
        table_->setItem(i, 0, name);
        table_->setItem(i, 1, new QTableWidgetItem(value));
        table_->setItem(i, 2, new QTableWidgetItem(source_of(field)));
        auto* why = new QTableWidgetItem(q(f.note));
        why->setToolTip(q(f.note));
        table_->setItem(i, 3, why);
    }
    table_->resizeRowsToContents();
    // The whole table shows without a scroll bar of its own; the page scrolls instead.
    int height = table_->horizontalHeader()->height() + 2 * table_->frameWidth();
    for (int i = 0; i < table_->rowCount(); ++i) height += table_->rowHeight(i);
    table_->setFixedHeight(height);
}

}  // namespace kvscope::ui
