#pragma once
// The KVScope window: inputs on the left; overview, memory chart and deployment
// fit as tabs; menus, toolbar, shortcuts, drag and drop, recent files, and the
// last scenario and layout restored at start. A Learn tab for people learning how it works.

#include <QLockFile>
#include <QMainWindow>

#include <memory>
#include <optional>

#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/exporter.h"

class QAction;
class QSettings;
class QMenu;
class QLabel;
class QSplitter;
class QTabWidget;
class QTimer;

namespace kvscope {
class Catalog;
struct Scenario;
}  // namespace kvscope

namespace kvscope::ui {

class DeploymentView;
class InputsPanel;
class LearnView;
class MemoryChart;
class MessageBar;
class OverviewView;
class ProbeRunner;
class ProbeView;
class ScenarioModel;
class TrafficView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    enum Tab { OverviewTab, ChartTab, DeploymentTab, TrafficTab, ProbeTab, LearnTab };
    // `restore`: reopen the last scenario, layout and preferences from QSettings.
    explicit MainWindow(const Catalog& catalog, bool restore = true, QWidget* parent = nullptr);
    // Leaves the model's undo stack, which its children's deletion clears (and so signals) after this is gone.
    ~MainWindow() override;
    MainWindow(const MainWindow&) = delete;
    MainWindow& operator=(const MainWindow&) = delete;
    MainWindow(MainWindow&&) = delete;
    MainWindow& operator=(MainWindow&&) = delete;

    [[nodiscard]] ScenarioModel* model() const { return model_; }
    [[nodiscard]] InputsPanel* inputs() const { return inputs_; }
    [[nodiscard]] OverviewView* overview() const { return overview_; }
    [[nodiscard]] MemoryChart* chart() const { return chart_; }
    [[nodiscard]] DeploymentView* deployment() const { return deployment_; }
    [[nodiscard]] ProbeView* probe() const { return probe_; }
    [[nodiscard]] TrafficView* traffic() const { return traffic_; }
    [[nodiscard]] LearnView* learn() const { return learn_; }
    [[nodiscard]] MessageBar* messages() const { return messages_; }
    [[nodiscard]] QTabWidget* tabs() const { return tabs_; }
    [[nodiscard]] QString statusSummary() const;
    // The name the save and export dialogs offer: the model's whole name, lowercase, with `suffix`.
    [[nodiscard]] QString suggestedFileName(const QString& suffix) const;

    // The file operations behind the menus, without dialogs. Each returns false and shows
    // the reason in the message bar when it fails, leaving the scenario as it was.
    bool importModelFile(const QString& path);
    bool openScenarioFile(const QString& path);
    // A .kvscope.json scenario is opened; anything else is imported as a model (config.json, GGUF, folder).
    void openAny(const QString& path);
    bool saveScenarioFile(const QString& path);
    // The file the window stands for was written by something else since this window opened or saved it: Save
    // asks before replacing it.
    [[nodiscard]] bool fileChangedElsewhere() const;
    bool exportChartTo(const QString& path, ChartSize size = {});
    bool exportCsvTo(const QString& path);
    bool exportJsonTo(const QString& path);
    bool exportReportTo(const QString& path);
    // Opens on a scenario given on the command line.
    void showScenario(const Scenario& scenario, const QString& description, const QStringList& notes,
                      const QStringList& warnings = {});

    void saveSettings() const;
    // Work in progress is copied to this window's own file after each change and removed on a
    // normal close. Each window holds a lock on its copy, so a second window never writes over
    // the first one's; a copy whose lock is free (its window died) means KVScope did not close
    // normally, and the work is offered back. Empty for windows made for tests and exports.
    [[nodiscard]] QString recoveryPath() const { return recovery_path_; }
    static QString recoveryFolder();
    void writeRecovery();
    // Brings back the copy offered at start (File ▸ Restore unsaved work); until then it stays on disk.
    void restoreRecovery();
    void discardRecovery();  // File ▸ Discard unsaved work: the offered copy is deleted
    [[nodiscard]] QAction* restoreRecoveryAction() const { return restore_recovery_; }
    [[nodiscard]] QAction* discardRecoveryAction() const { return discard_recovery_; }

protected:
    void closeEvent(QCloseEvent* event) override;
    // Ctrl+Z / Ctrl+Shift+Z in this window's text fields undo the scenario, as everywhere else.
    bool eventFilter(QObject* watched, QEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    // The constructor's parts: the chart tab, and this window's recovery copy with its lock.
    QWidget* buildChartPage();
    void claimRecoveryCopy();
    void createActions();
    void restoreSettings();
    // At start: the file the window stood for, as it is now (restoreSettings).
    void restoreScenarioFile(const QString& file, const LoadedScenario& last, const QSettings& settings);
    void offerRecovery();
    void addRecent(const QString& path);
    void adoptScenarioFile(const QString& path);
    void rebuildRecentMenu();
    void updateTitleAndStatus();
    bool report(const std::optional<QString>& problem, const QString& done);
    // Enters the text typed in the inputs' and Deployment tab's fields and not yet entered; what they still refuse
    // (a field's name and why), empty when every field holds a value. A save, an export and a run begin with it.
    QStringList commitTypedText();
    // Commits the text typed in the inputs and not yet entered; false, with `refused` ("Not saved") and what each
    // field refuses in the message bar, when a field holds text it does not accept.
    bool acceptTypedText(const QString& refused);
    // acceptTypedText, and inputs valid: an export may be written (checked before its dialogs ask anything), or,
    // with `refused` ("Nothing copied"), a copy to the clipboard made.
    bool readyToExport(const QString& refused = {});
    // As report(), and on success says where the file went with a button that opens its folder.
    bool exported(const std::optional<QString>& problem, const QString& done, const QString& path);
    QString askSavePath(const QString& title, const QString& filter, const QString& suffix);

    ScenarioModel* model_;
    InputsPanel* inputs_;
    OverviewView* overview_;
    MemoryChart* chart_;
    DeploymentView* deployment_;
    TrafficView* traffic_;
    ProbeRunner* runner_;  // the probe and stopwatch runs, shared by the Probe and Learn tabs
    ProbeView* probe_;
    LearnView* learn_;
    MessageBar* messages_;
    QTabWidget* tabs_;
    QSplitter* splitter_;
    QLabel* status_;
    QMenu* recent_menu_ = nullptr;
    QStringList recent_;
    QString current_file_;
    qint64 current_file_time_ = 0;  // its last-modified time (ms) when this window last opened or saved it
    QString last_dir_;
    QAction* log_tokens_ = nullptr;
    QAction* log_bytes_ = nullptr;
    QAction* units_binary_ = nullptr;
    QAction* units_decimal_ = nullptr;
    QTimer* recovery_timer_ = nullptr;
    QString recovery_path_;
    std::unique_ptr<QLockFile> recovery_lock_;
    QString adopted_recovery_;  // a copy left by a window that died, offered back by this one
    std::unique_ptr<QLockFile> adopted_lock_;
    // The offered copy's scenario until it is restored: it stays on disk (offered again at the next start) unless
    // File ▸ Restore unsaved work, or the offer's button, brings it back.
    std::optional<Scenario> pending_recovery_;
    QStringList pending_recovery_warnings_;
    bool recovery_restored_ = false;
    QAction* restore_recovery_ = nullptr;
    QAction* discard_recovery_ = nullptr;
    bool recovery_problem_shown_ = false;
    QString notice_model_;  // the model the status line's notice is about
    // The inputs a notice's advice is about when it was shown (the KV format it names, the layout it set) and the undo
    // step it followed: a change of either, or an undo past it, takes the notice away.
    KvDtype notice_kv_dtype_ = KvDtype::fp16;
    Parallelism notice_parallel_;
    int notice_undo_index_ = 0;
};

}  // namespace kvscope::ui
