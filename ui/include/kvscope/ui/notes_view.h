#pragma once
// Learn › Notes: a claim-and-evidence pad. Each note keeps the scenario it was written about
// (reopened with one click); notes are saved on this machine as they are typed and can be
// exported as Markdown. Nothing is sent anywhere.

#include <QWidget>

#include "kvscope/ui/notes_store.h"

class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QTimer;

namespace kvscope::ui {

class ScenarioModel;

class NotesView : public QWidget {
    Q_OBJECT
public:
    explicit NotesView(ScenarioModel* model, const QString& path = NotesStore::defaultPath(),
                       QWidget* parent = nullptr);
    ~NotesView() override;

    [[nodiscard]] const NotesStore& store() const { return store_; }
    [[nodiscard]] QListWidget* list() const { return list_; }
    [[nodiscard]] QLineEdit* claimField() const { return claim_; }
    [[nodiscard]] QPlainTextEdit* evidenceField() const { return evidence_; }
    [[nodiscard]] QLabel* attachedLabel() const { return attached_; }

public slots:
    // A new note about the current scenario, selected and ready for typing.
    void newNote();
    void deleteCurrent();
    void attachCurrentScenario();
    void openNoteScenario();
    // Writes pending edits now (they are otherwise written a moment after typing stops).
    void flush();
    bool exportMarkdownTo(const QString& path);

signals:
    // Something to tell the user (a failed save or export, a file set aside).
    void message(const QString& text, bool error);

private:
    void select(int row);
    void showCurrent();
    void edited();
    void refreshList();
    [[nodiscard]] Note* current();

    ScenarioModel* model_;
    NotesStore store_;
    QListWidget* list_;
    QLineEdit* claim_;
    QPlainTextEdit* evidence_;
    QLabel* attached_;
    QPushButton* delete_;
    QPushButton* attach_;
    QPushButton* open_;
    QPushButton* export_;
    QLabel* where_;
    QTimer* save_timer_;
    bool showing_ = false;
};

}  // namespace kvscope::ui
