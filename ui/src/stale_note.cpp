#include "kvscope/ui/stale_note.h"

#include "kvscope/ui/scenario_model.h"

namespace kvscope::ui {

StaleNote::StaleNote(ScenarioModel* model, QWidget* parent) : QLabel(parent), model_(model) {
    setWordWrap(true);
    setTextFormat(Qt::PlainText);  // a model named "R&D", a message quoting llama.cpp: shown as they are
    setStyleSheet("color: #c0392b; font-weight: bold;");
    setAccessibleName(tr("Whose results these are"));
    connect(model_, &ScenarioModel::changed, this, &StaleNote::refresh);
    refresh();
}

void StaleNote::refresh() {
    const QString text = model_->staleText();
    setText(text);
    setVisible(!text.isEmpty());
}

}  // namespace kvscope::ui
