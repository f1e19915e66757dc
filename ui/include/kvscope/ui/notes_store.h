#pragma once
// The learner's claim-and-evidence notes, each with the scenario it was written about.
// Kept in one JSON file on this machine only; exported as Markdown on request.

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

#include <optional>

#include "kvscope/calculator/scenario.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
class Catalog;
}

namespace kvscope::ui {

struct Note {
    QString id;
    QDateTime created, modified;
    QString claim;     // "I expect GQA-8 to cut the cache to a quarter because …"
    QString evidence;  // what the numbers showed
    Scenario scenario;
    QString model;  // the model's name when the scenario was attached
};

class NotesStore {
public:
    explicit NotesStore(QString path = defaultPath());
    // notes.json in the app's data folder (per user, this machine).
    static QString defaultPath();

    [[nodiscard]] const QString& path() const { return path_; }
    // Reads the file; a missing file is an empty pad. A file that cannot be read is copied aside
    // (its path is in the message) so nothing written before is lost, and the pad starts empty.
    std::optional<QString> load();
    // Writes every note (atomically); the message says why not. Another window of the app may
    // have written the file since this pad last read or wrote it: its changes are merged in, not
    // written over — its new notes are added, a note both changed keeps the later change, and a
    // note either window deleted stays deleted — under a lock file so two windows never write at
    // once. What the merge changed appears in notes(), and mergeChangedNotes() says so.
    [[nodiscard]] std::optional<QString> save();
    [[nodiscard]] bool mergeChangedNotes() const { return merge_changed_; }

    [[nodiscard]] QList<Note>& notes() { return notes_; }
    [[nodiscard]] const QList<Note>& notes() const { return notes_; }
    Note& add(const Scenario& scenario, const QString& model);
    void remove(qsizetype index);

    // Every note as Markdown: claim as heading, the scenario in words with its cache size, the
    // evidence, and the scenario file for reopening it.
    [[nodiscard]] QString markdown(UnitSystem units = UnitSystem::binary) const;
    [[nodiscard]] std::optional<QString> exportMarkdown(const QString& path, UnitSystem units) const;

private:
    void remember_file_state();

    QString path_;
    QList<Note> notes_;
    bool writable_ = true;        // false while an unreadable file could not be copied aside
    QStringList synced_;          // ids in the file when this pad last read or wrote it
    QDateTime synced_at_;         // and when
    QDateTime synced_file_time_;  // the file's modification time then: unchanged means nothing to merge
    qint64 synced_file_size_ = -1;
    bool merge_changed_ = false;
};

// "Llama 3 8B · GQA-8 · 8,192 tokens × 1 sequence · fp16 → KV cache 1.00 GiB (1.07 GB)".
QString scenario_summary(const Scenario& scenario, const QString& model, UnitSystem units = UnitSystem::binary);

}  // namespace kvscope::ui
