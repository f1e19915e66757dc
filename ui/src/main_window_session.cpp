// MainWindow: what outlives a session — the recovery copy of unsaved work (offered, restored, discarded) and
// the file the window stood for, as it is now at the next start.
#include "kvscope/ui/main_window.h"

#include <QAbstractSpinBox>
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/comparison_model.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/export_dialog.h"
#include "kvscope/ui/help_dialogs.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/probe_runner.h"
#include "kvscope/ui/probe_view.h"
#include "kvscope/ui/recompute_view.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/scrollable.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

bool MainWindow::openScenarioFile(const QString& path) {
    last_dir_ = QFileInfo(path).absolutePath();
    QString repaired;
    QString unread;
    if (!report(model_->openScenario(path, &repaired, &unread), tr("Opened %1").arg(path))) return false;
    adoptScenarioFile(path);
    // What the file needs said, in one message (each would hide the one before): inputs the calculator rejects
    // (saved half-finished, or edited by hand; marked on their fields too), fields this version does not read,
    // numbers repaired. Either of the first two is shown as a problem.
    QStringList said;
    if (!model_->errors().empty())
        said << tr("%1 opened, but some of its inputs need attention: %2")
                    .arg(QFileInfo(path).fileName(), q(join_errors(model_->errors())));
    if (!unread.isEmpty()) said << unread;
    if (!repaired.isEmpty()) said << repaired;
    if (!said.isEmpty())
        messages_->showMessage(said.join(QStringLiteral("\n")), said.size() > (repaired.isEmpty() ? 0 : 1)
                                                                    ? MessageBar::Kind::error
                                                                    : MessageBar::Kind::info);
    if (!repaired.isEmpty()) {
        // The numbers came back; the file on disk is still the damaged one until it is saved again.
        model_->undoStack()->resetClean();
        updateTitleAndStatus();
    }
    return true;
}

void MainWindow::restoreScenarioFile(const QString& file, const LoadedScenario& last, const QSettings& settings) {
    // The window stands for the file again (Ctrl+S writes it), unless the file changed since this window last
    // saved it (another window, an editor, a sync): then what is in it now is not silently written over.
    const bool modified = settings.value("scenario/modified").toBool();
    const qint64 time = QFileInfo(file).lastModified().toMSecsSinceEpoch();
    const bool changed = time != settings.value("scenario/fileTime", time).toLongLong();
    auto on_disk = read_scenario_file(file.toStdString());
    if (!on_disk) {
        messages_->showMessage(tr("%1 no longer reads as a scenario (%2). The last scenario is shown; Save as "
                                  "writes it to a file of your choice.")
                                   .arg(QDir::toNativeSeparators(file), q(join_errors(on_disk.errors()))),
                               MessageBar::Kind::error);
        return;
    }
    current_file_ = file;
    // With unsaved changes here and a file changed elsewhere, the time it had when this window last saved it is
    // kept: Save then asks before replacing it (fileChangedElsewhere), and the next start says so again.
    current_file_time_ = modified && changed ? settings.value("scenario/fileTime").toLongLong() : time;
    if (!modified && on_disk->scenario != last.scenario) {
        // Nothing unsaved here: the file is the newer work, and it is what the window shows.
        model_->replace(on_disk->scenario, display_name(model_->catalog(), on_disk->scenario),
                        {tr("opened from %1, which changed since the last session").arg(file)},
                        tr("Open %1").arg(QFileInfo(file).fileName()), q(on_disk->warnings));
        model_->undoStack()->clear();
    }
    QStringList said;
    if (modified) {
        model_->undoStack()->resetClean();
        if (changed && on_disk->scenario != last.scenario)
            said << tr("%1 changed since KVScope last saved it, and this window has unsaved changes of its own. Save "
                       "(Ctrl+S) asks before replacing the file's; Save as keeps both.")
                        .arg(QDir::toNativeSeparators(file));
    }
    // Fields a newer version wrote into the file since: Ctrl+S would write it without them, so they are said now.
    if (!on_disk->unread.empty()) said << q(on_disk->unread);
    if (!said.isEmpty())
        messages_->showMessage(said.join('\n'),
                               on_disk->unread.empty() ? MessageBar::Kind::info : MessageBar::Kind::error);
    updateTitleAndStatus();
}

bool MainWindow::fileChangedElsewhere() const {
    if (current_file_.isEmpty() || current_file_time_ == 0) return false;
    const QFileInfo info(current_file_);
    return info.exists() && info.lastModified().toMSecsSinceEpoch() != current_file_time_;
}

QString MainWindow::recoveryFolder() { return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation); }

void MainWindow::writeRecovery() {
    if (recovery_path_.isEmpty()) return;
    // Written as a saved scenario is (atomically), without changing which file the window stands for.
    const auto problem = model_->saveScenario(recovery_path_);
    if (problem && !recovery_problem_shown_) {
        // A read-only or missing data folder: say once that a crash would lose the changes.
        recovery_problem_shown_ = true;
        messages_->showMessage(
            tr("Unsaved changes cannot be kept for after a crash (%1). Save the scenario (Ctrl+S) to keep your work.")
                .arg(*problem),
            MessageBar::Kind::error);
    }
}

void MainWindow::offerRecovery() {
    // Copies whose lock is free belong to windows that are gone; the newest is offered.
    const QFileInfoList copies =
        QDir(recoveryFolder()).entryInfoList({"recovery*.kvscope.json"}, QDir::Files, QDir::Time);
    for (const QFileInfo& copy : copies) {
        const QString path = copy.absoluteFilePath();
        if (path == recovery_path_) continue;
        auto lock = std::make_unique<QLockFile>(path + ".lock");
        lock->setStaleLockTime(0);
        if (!lock->tryLock(0)) continue;  // another window that is still open
        auto recovered = read_scenario_file(path.toStdString());
        if (!recovered) continue;  // left where it is: never delete what could not be read
        if (recovered->scenario == model_->scenario()) {
            QFile::remove(path);  // nothing in it that is not already here
            continue;
        }
        adopted_recovery_ = path;
        adopted_lock_ = std::move(lock);
        const Scenario s = recovered->scenario;
        pending_recovery_ = s;
        pending_recovery_warnings_ = q(recovered->warnings);
        restore_recovery_->setEnabled(true);
        discard_recovery_->setEnabled(true);
        const QString what = tr("%1 layers, %2 tokens × %3")
                                 .arg(s.arch.layers)
                                 .arg(q(format_tokens(s.workload.context_tokens)))
                                 .arg(s.workload.batch);
        messages_->showMessage(
            tr("KVScope did not close normally (%1). Its unsaved scenario (%2) can be restored; it is kept until "
               "it is restored or discarded (File menu).")
                .arg(QLocale().toString(copy.lastModified(), QLocale::ShortFormat), what),
            MessageBar::Kind::info, tr("&Restore it"), [this] { restoreRecovery(); });
        return;
    }
}

void MainWindow::discardRecovery() {
    if (!pending_recovery_) return;
    pending_recovery_.reset();
    restore_recovery_->setEnabled(false);
    discard_recovery_->setEnabled(false);
    QFile::remove(adopted_recovery_);
    adopted_lock_.reset();
    adopted_recovery_.clear();
    if (messages_->text().contains(tr("did not close normally"))) messages_->hide();  // the offer, not another message
}

void MainWindow::restoreRecovery() {
    if (!pending_recovery_) return;
    const Scenario s = *pending_recovery_;
    pending_recovery_.reset();
    recovery_restored_ = true;
    restore_recovery_->setEnabled(false);
    discard_recovery_->setEnabled(false);
    // Where the model comes from stays in the notes (they outlive the session); that it was recovered is an event of
    // this session, said once in the message bar (a note kept saying so after every clean restart).
    model_->replace(s, display_name(model_->catalog(), s), {}, tr("Restore unsaved work"), pending_recovery_warnings_);
    messages_->showMessage(tr("Restored the scenario KVScope had not saved when it stopped. Save it (Ctrl+S) to keep "
                              "it in a file; Undo takes it back."),
                           MessageBar::Kind::info);
}

}  // namespace kvscope::ui
