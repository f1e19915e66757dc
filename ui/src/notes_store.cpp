#include "kvscope/ui/notes_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QSaveFile>
#include <QStandardPaths>
#include <QUuid>

#include <algorithm>

#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {
constexpr int kVersion = 1;
}  // namespace

QString scenario_summary(const Scenario& s, const QString& model, UnitSystem units) {
    QString text =
        QObject::tr("%1 · %2 · %3 tokens × %4 · %5")
            .arg(model, q(attention_label(s.arch)), q(format_count(s.workload.context_tokens)),
                 s.workload.batch == 1 ? QObject::tr("1 sequence") : QObject::tr("%1 sequences").arg(s.workload.batch),
                 q(std::string(to_string(s.kv_dtype))));
    if (s.parallel.gpus() > 1) text += QObject::tr(" · TP %1 × PP %2").arg(s.parallel.tp).arg(s.parallel.pp);
    auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
    text += kv ? QObject::tr(" → KV cache %1").arg(q(format_bytes_both(kv->total_bytes, units)))
               : QObject::tr(" → inputs not valid (%1)").arg(q(kv.error_text()));
    return text;
}

NotesStore::NotesStore(QString path) : path_(std::move(path)) {}

QString NotesStore::defaultPath() {
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath("notes.json");
}

std::optional<QString> NotesStore::load() {
    notes_.clear();
    synced_.clear();
    synced_at_ = QDateTime::currentDateTime();
    QFile file(path_);
    if (!file.exists()) return std::nullopt;
    remember_file_state();  // read now, or copied aside: either way nothing more to merge from it
    auto set_aside = [this](const QString& why) -> QString {
        const QString aside = path_ + ".unreadable-" + QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss");
        const bool copied = QFile::copy(path_, aside);
        writable_ = copied;
        return copied ? QObject::tr(
                            "Your notes file could not be read (%1). It was kept as %2; new notes start "
                            "a fresh file.")
                            .arg(why, aside)
                      : QObject::tr(
                            "Your notes file %1 could not be read (%2), nor copied aside; it is left as "
                            "it is and new notes will not be saved over it.")
                            .arg(path_, why);
    };
    if (!file.open(QIODevice::ReadOnly)) return set_aside(file.errorString());
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &error);
    if (doc.isNull()) return set_aside(QObject::tr("%1 at byte %2").arg(error.errorString()).arg(error.offset));
    const QJsonObject root = doc.object();
    if (root.value("version").toInt() > kVersion)
        return set_aside(QObject::tr("it was written by a newer KVScope (format %1); update KVScope to read it")
                             .arg(root.value("version").toInt()));
    QStringList skipped;
    for (const auto& v : root.value("notes").toArray()) {
        const QJsonObject o = v.toObject();
        const QByteArray scenario_text = QJsonDocument(o.value("scenario").toObject()).toJson();
        auto scenario = scenario_from_json(scenario_text.toStdString(), "note");
        if (!scenario) {
            skipped << o.value("claim").toString();
            continue;
        }
        Note n;
        n.id = o.value("id").toString();
        n.created = QDateTime::fromString(o.value("created").toString(), Qt::ISODate);
        n.modified = QDateTime::fromString(o.value("modified").toString(), Qt::ISODate);
        n.claim = o.value("claim").toString();
        n.evidence = o.value("evidence").toString();
        n.model = o.value("model").toString();
        n.scenario = scenario->scenario;
        notes_.append(n);
        synced_ << n.id;
    }
    if (!skipped.isEmpty())
        return set_aside(QObject::tr("%1 note(s) had a scenario that could not be read").arg(skipped.size()));
    return std::nullopt;
}

std::optional<QString> NotesStore::save() {
    if (!writable_) return QObject::tr("Notes not saved: %1 could not be read or copied aside.").arg(path_);
    if (!QDir().mkpath(QFileInfo(path_).absolutePath()))
        return QObject::tr("Notes not saved: the folder %1 cannot be created.").arg(QFileInfo(path_).absolutePath());
    // One writer at a time across windows and processes; a lock left by a process that died is
    // taken over (QLockFile checks whether its owner still runs).
    QLockFile lock(path_ + ".lock");
    if (!lock.tryLock(5000))
        return QObject::tr("Notes not saved: %1 is locked by another KVScope window (%2).")
            .arg(path_, lock.error() == QLockFile::PermissionError ? QObject::tr("no permission to lock it")
                                                                   : QObject::tr("still busy after 5 s"));
    // What another window wrote since this pad last read or wrote the file. A file that reads
    // only in part was copied aside by load() (its readable notes are merged); one that could
    // not be copied aside is not written over.
    merge_changed_ = false;
    const QFileInfo now(path_);
    if (now.exists() && (now.lastModified() != synced_file_time_ || now.size() != synced_file_size_)) {
        NotesStore on_disk(path_);
        auto problem = on_disk.load();
        if (!on_disk.writable_) return problem;
        QStringList on_disk_ids;
        for (const Note& theirs : std::as_const(on_disk.notes_)) {
            on_disk_ids << theirs.id;
            auto mine = std::find_if(notes_.begin(), notes_.end(), [&](const Note& n) { return n.id == theirs.id; });
            if (mine == notes_.end()) {
                if (synced_.contains(theirs.id)) continue;  // deleted in this window
                notes_.append(theirs);                      // written by another one
                merge_changed_ = true;
            } else if (theirs.modified > mine->modified) {
                *mine = theirs;
                merge_changed_ = true;
            }
        }
        // Deleted by another window: gone here too, unless this window changed it since.
        const auto removed = std::remove_if(notes_.begin(), notes_.end(), [&](const Note& n) {
            return synced_.contains(n.id) && !on_disk_ids.contains(n.id) && n.modified <= synced_at_;
        });
        merge_changed_ = merge_changed_ || removed != notes_.end();
        notes_.erase(removed, notes_.end());
    }
    QJsonArray list;
    for (const Note& n : notes_) {
        QJsonObject o;
        o["id"] = n.id;
        o["created"] = n.created.toString(Qt::ISODate);
        o["modified"] = n.modified.toString(Qt::ISODate);
        o["claim"] = n.claim;
        o["evidence"] = n.evidence;
        o["model"] = n.model;
        o["scenario"] = QJsonDocument::fromJson(QByteArray::fromStdString(scenario_to_json(n.scenario))).object();
        list.append(o);
    }
    QJsonObject root;
    root["format"] = "kvscope-notes";
    root["version"] = kVersion;
    root["notes"] = list;
    QSaveFile file(path_);
    if (!file.open(QIODevice::WriteOnly))
        return QObject::tr("Notes not saved to %1: %2").arg(path_, file.errorString());
    file.write(QJsonDocument(root).toJson());
    if (!file.commit()) return QObject::tr("Notes not saved to %1: %2").arg(path_, file.errorString());
    synced_.clear();
    for (const Note& n : std::as_const(notes_)) synced_ << n.id;
    synced_at_ = QDateTime::currentDateTime();
    remember_file_state();
    return std::nullopt;
}

void NotesStore::remember_file_state() {
    const QFileInfo info(path_);
    synced_file_time_ = info.exists() ? info.lastModified() : QDateTime();
    synced_file_size_ = info.exists() ? info.size() : -1;
}

void NotesStore::remove(qsizetype index) {
    if (index >= 0 && index < notes_.size()) notes_.removeAt(index);
}

Note& NotesStore::add(const Scenario& scenario, const QString& model) {
    Note n;
    n.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    n.created = n.modified = QDateTime::currentDateTime();
    n.scenario = scenario;
    n.model = model;
    notes_.append(n);
    return notes_.last();
}

QString NotesStore::markdown(UnitSystem units) const {
    QString md = QObject::tr("# KVScope notes\n\nExported %1 · %2 note(s) · written on this machine.\n")
                     .arg(QDateTime::currentDateTime().toString("yyyy-MM-dd HH:mm"))
                     .arg(notes_.size());
    int i = 0;
    for (const Note& n : notes_) {
        const QString claim = n.claim.trimmed().isEmpty() ? QObject::tr("(no claim written)") : n.claim.trimmed();
        md += QObject::tr("\n## %1. %2\n\n*%3 · written %4*\n\n")
                  .arg(++i)
                  .arg(claim, scenario_summary(n.scenario, n.model, units), n.created.toString("yyyy-MM-dd HH:mm"));
        md += n.evidence.trimmed().isEmpty() ? QObject::tr("(no evidence written yet)\n") : n.evidence.trimmed() + "\n";
        md += QObject::tr(
                  "\n<details><summary>Scenario (save as .kvscope.json to reopen)</summary>\n\n```json\n%1```\n"
                  "\n</details>\n")
                  .arg(q(scenario_to_json(n.scenario)).trimmed() + "\n");
    }
    return md;
}

std::optional<QString> NotesStore::exportMarkdown(const QString& path, UnitSystem units) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
    file.write(markdown(units).toUtf8());
    if (!file.commit()) return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
    return std::nullopt;
}

}  // namespace kvscope::ui
