#include "kvscope/ui/notes_view.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "kvscope/ui/scenario_model.h"

namespace kvscope::ui {

namespace {

// A note in the list: its claim, then its model and date.
void describe(QListWidgetItem* item, const Note& n) {
    const QString claim = n.claim.trimmed().isEmpty() ? QObject::tr("(no claim yet)") : n.claim.trimmed();
    item->setText(claim + "\n" + n.model + " · " + n.created.toString("yyyy-MM-dd HH:mm"));
    item->setToolTip(claim);
}

}  // namespace

NotesView::NotesView(ScenarioModel* model, const QString& path, QWidget* parent)
    : QWidget(parent),
      model_(model),
      store_(path),
      list_(new QListWidget),
      claim_(new QLineEdit),
      evidence_(new QPlainTextEdit),
      attached_(new QLabel),
      delete_(new QPushButton(tr("Delete"))),
      attach_(new QPushButton(tr("Attach current"))),
      open_(new QPushButton(tr("Open scenario"))),
      export_(new QPushButton(tr("Export as &Markdown…"))),
      where_(new QLabel),
      save_timer_(new QTimer(this)) {
    auto* intro =
        new QLabel(tr("<h3>Notes</h3>Write down what you expect and why, then what the numbers showed. "
                      "Each note keeps the scenario it is about."));
    intro->setWordWrap(true);
    auto* add = new QPushButton(tr("&New note"));
    add->setToolTip(tr("A note about the current scenario"));
    claim_->setPlaceholderText(tr("Claim: I expect GQA-8 to cut the cache to a quarter because…"));
    claim_->setAccessibleName(tr("Claim"));
    evidence_->setPlaceholderText(tr("Evidence: what the numbers showed, which tab, which what-if…"));
    evidence_->setAccessibleName(tr("Evidence"));
    evidence_->setTabChangesFocus(true);
    attached_->setWordWrap(true);
    attached_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    list_->setAccessibleName(tr("Notes"));
    list_->setWordWrap(true);
    list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    where_->setWordWrap(true);
    where_->setText(tr("<small>Kept only on this machine, in %1. Nothing is sent anywhere.</small>")
                        .arg(store_.path().toHtmlEscaped()));
    open_->setToolTip(tr("Make the note's scenario the current one (Ctrl+Z goes back)"));
    attach_->setToolTip(tr("Replace the note's scenario with the current one"));

    auto* left = new QWidget;
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    left_layout->addWidget(list_, 1);
    auto* list_buttons = new QHBoxLayout;
    list_buttons->addWidget(add);
    list_buttons->addWidget(delete_);
    left_layout->addLayout(list_buttons);

    auto* right = new QWidget;
    auto* form = new QVBoxLayout(right);
    form->setContentsMargins(0, 0, 0, 0);
    form->addWidget(claim_);
    form->addWidget(evidence_, 1);
    form->addWidget(attached_);
    auto* scenario_buttons = new QHBoxLayout;
    scenario_buttons->addWidget(open_);
    scenario_buttons->addWidget(attach_);
    scenario_buttons->addStretch(1);
    form->addLayout(scenario_buttons);

    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(1, 2);
    split->setChildrenCollapsible(false);

    auto* bottom = new QHBoxLayout;
    bottom->addWidget(where_, 1);
    bottom->addWidget(export_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(split, 1);
    layout->addLayout(bottom);

    save_timer_->setSingleShot(true);
    save_timer_->setInterval(400);
    connect(save_timer_, &QTimer::timeout, this, &NotesView::flush);
    connect(add, &QPushButton::clicked, this, &NotesView::newNote);
    connect(delete_, &QPushButton::clicked, this, &NotesView::deleteCurrent);
    connect(attach_, &QPushButton::clicked, this, &NotesView::attachCurrentScenario);
    connect(open_, &QPushButton::clicked, this, &NotesView::openNoteScenario);
    connect(list_, &QListWidget::currentRowChanged, this, [this] { showCurrent(); });
    connect(claim_, &QLineEdit::textEdited, this, &NotesView::edited);
    connect(evidence_, &QPlainTextEdit::textChanged, this, &NotesView::edited);
    connect(model_, &ScenarioModel::unitsChanged, this, &NotesView::showCurrent);
    connect(export_, &QPushButton::clicked, this, [this] {
        const QString start =
            QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation)).filePath("kvscope-notes.md");
        const QString chosen =
            QFileDialog::getSaveFileName(this, tr("Export notes as Markdown"), start, tr("Markdown (*.md)"));
        if (!chosen.isEmpty()) exportMarkdownTo(chosen);
    });

    // Told once the window exists, so a message bar can show it.
    if (auto problem = store_.load())
        QTimer::singleShot(0, this, [this, text = *problem] { emit message(text, true); });
    refreshList();
    select(store_.notes().isEmpty() ? -1 : 0);
}

NotesView::~NotesView() {
    if (save_timer_->isActive()) flush();
}

Note* NotesView::current() {
    const int row = list_->currentRow();
    return row >= 0 && row < store_.notes().size() ? &store_.notes()[row] : nullptr;
}

void NotesView::refreshList() {
    const int row = list_->currentRow();
    const QSignalBlocker quiet(list_);
    list_->clear();
    for (const Note& n : store_.notes()) {
        auto* item = new QListWidgetItem;
        describe(item, n);
        list_->addItem(item);
    }
    list_->setCurrentRow(std::min(row, static_cast<int>(store_.notes().size()) - 1));
}

void NotesView::select(int row) {
    list_->setCurrentRow(row);
    showCurrent();
}

void NotesView::showCurrent() {
    const Note* n = current();
    showing_ = true;
    claim_->setText(n ? n->claim : QString());
    evidence_->setPlainText(n ? n->evidence : QString());
    showing_ = false;
    for (QWidget* w : std::initializer_list<QWidget*>{claim_, evidence_, delete_, attach_, open_})
        w->setEnabled(n != nullptr);
    export_->setEnabled(!store_.notes().isEmpty());
    attached_->setText(
        n ? tr("<b>About:</b> %1").arg(scenario_summary(n->scenario, n->model, model_->units()).toHtmlEscaped())
          : tr("No note selected. <b>New note</b> starts one about the current scenario."));
}

void NotesView::edited() {
    if (showing_) return;
    Note* n = current();
    if (!n) return;
    n->claim = claim_->text();
    n->evidence = evidence_->toPlainText();
    n->modified = QDateTime::currentDateTime();
    if (QListWidgetItem* item = list_->currentItem()) describe(item, *n);
    save_timer_->start();
}

void NotesView::newNote() {
    store_.add(model_->scenario(), display_name(model_->catalog(), model_->scenario()));
    refreshList();
    select(static_cast<int>(store_.notes().size()) - 1);
    claim_->setFocus();
    flush();
}

void NotesView::deleteCurrent() {
    const int row = list_->currentRow();
    if (row < 0 || row >= store_.notes().size()) return;
    store_.remove(row);
    refreshList();
    select(std::min(row, static_cast<int>(store_.notes().size()) - 1));
    flush();
}

void NotesView::attachCurrentScenario() {
    Note* n = current();
    if (!n) return;
    n->scenario = model_->scenario();
    n->model = display_name(model_->catalog(), n->scenario);
    n->modified = QDateTime::currentDateTime();
    showCurrent();
    flush();
}

void NotesView::openNoteScenario() {
    const Note* n = current();
    if (!n) return;
    model_->replace(n->scenario, n->model, {}, tr("Open a note's scenario"));
}

void NotesView::flush() {
    save_timer_->stop();
    // The note being edited, by its id: another window's new or deleted notes move the rows.
    const Note* editing = current();
    const QString id = editing ? editing->id : QString();
    const int row = list_->currentRow();
    if (auto problem = store_.save()) emit message(*problem, true);
    if (store_.mergeChangedNotes()) {  // another window's notes or edits were merged in
        refreshList();
        const QList<Note>& notes = store_.notes();
        const auto same = std::find_if(notes.begin(), notes.end(), [&](const Note& n) { return n.id == id; });
        select(same != notes.end() ? static_cast<int>(same - notes.begin())
                                   : std::min(row, static_cast<int>(notes.size()) - 1));
    }
}

bool NotesView::exportMarkdownTo(const QString& path) {
    flush();
    if (auto problem = store_.exportMarkdown(path, model_->units())) {
        emit message(*problem, true);
        return false;
    }
    emit message(tr("Notes exported to %1").arg(path), false);
    return true;
}

}  // namespace kvscope::ui
