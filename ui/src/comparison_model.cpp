#include "kvscope/ui/comparison_model.h"

#include <QFont>
#include <QPalette>

#include "kvscope/ui/text.h"

namespace kvscope::ui {

ComparisonModel::ComparisonModel(ScenarioModel* model, QObject* parent) : QAbstractTableModel(parent), model_(model) {
    connect(model_, &ScenarioModel::changed, this, &ComparisonModel::refresh);
    refresh();
}

void ComparisonModel::refresh() {
    const std::vector<Variant>& next = model_->results().variants;
    if (next.size() != rows_.size()) {
        beginResetModel();
        rows_ = next;
        endResetModel();
        return;
    }
    rows_ = next;
    if (!rows_.empty()) emit dataChanged(index(0, 0), index(static_cast<int>(rows_.size()) - 1, ColumnCount - 1));
}

int ComparisonModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const Variant& v = rows_.at(static_cast<std::size_t>(index.row()));
    const UnitSystem units = model_->units();
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Layout:
                return QString::fromStdString(v.name) + (v.is_model ? tr("  (this model)") : QString()) +
                       (v.replication > 1 ? "  · " + q(replication_text(v.replication)) : QString());
            case KvHeads:
                return v.kind == AttentionKind::MLA ? tr("latent") : QString::number(v.kv_heads);
            case Bytes:
                // A hybrid model's recurrent state stands beside its cache (every layout but "all full attention").
                return QString::fromStdString(format_bytes(v.kv_cache_bytes, units)) +
                       (v.state_bytes > 0
                            ? tr(" + %1 state").arg(QString::fromStdString(format_bytes(v.state_bytes, units)))
                            : QString());
            case PerToken:
                return QString::fromStdString(format_bytes(v.bytes_per_token, units));
            case PercentOfMha:
                return QString::fromStdString(format_percent(v.percent_of_mha));  // as kvscope-cli rounds it
            default:
                return {};
        }
    }
    if (role == FractionRole && index.column() == Bar) return v.percent_of_mha / 100.0;
    if (role == Qt::ToolTipRole && index.column() == Bytes)
        return v.state_bytes > 0
                   ? tr("%1 bytes of KV cache and %2 bytes of recurrent state, all sequences")
                         .arg(QString::fromStdString(format_count(v.kv_cache_bytes)),
                              QString::fromStdString(format_count(v.state_bytes)))
                   : tr("%1 bytes, all sequences").arg(QString::fromStdString(format_count(v.kv_cache_bytes)));
    if (role == Qt::FontRole && v.is_model) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::TextAlignmentRole && index.column() != Layout) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Layout:
            return tr("Layout");
        case KvHeads:
            return tr("KV heads");
        case Bytes:
            return tr("KV cache");
        case PerToken:
            return tr("Per token");
        case PercentOfMha:
            return tr("% of MHA");
        case Bar:
            return tr("Relative size");
        default:
            return {};
    }
}

QString ComparisonModel::toTsv() const {
    QStringList lines;
    QStringList head;
    for (int c = 0; c < Bar; ++c) head << headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    head << tr("KV cache bytes");
    lines << head.join('\t');
    for (int r = 0; r < rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < Bar; ++c) cells << data(index(r, c), Qt::DisplayRole).toString();
        cells << QString::number(rows_.at(static_cast<std::size_t>(r)).kv_cache_bytes);
        lines << cells.join('\t');
    }
    return lines.join('\n') + '\n';
}

}  // namespace kvscope::ui
