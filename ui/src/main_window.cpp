#include "kvscope/ui/main_window.h"
#include "kvscope/ui/traffic_view.h"

#include <QAbstractSpinBox>
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
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
#include "kvscope/ui/stale_note.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

constexpr int kMaxRecent = 8;

}  // namespace

MainWindow::MainWindow(const Catalog& catalog, bool restore, QWidget* parent)
    : QMainWindow(parent),
      model_(new ScenarioModel(catalog, this)),
      inputs_(new InputsPanel(model_)),
      overview_(new OverviewView(model_)),
      chart_(new MemoryChart(model_)),
      deployment_(new DeploymentView(model_)),
      traffic_(new TrafficView(model_, restore)),
      runner_(new ProbeRunner(this)),
      probe_(new ProbeView(model_, runner_)),
      learn_(new LearnView(model_)),
      messages_(new MessageBar),
      tabs_(new QTabWidget),
      splitter_(new QSplitter(Qt::Horizontal)),
      status_(new QLabel) {
    setObjectName("KVScopeMainWindow");
    setAcceptDrops(true);
    setWindowIcon(QIcon(":/kvscope/kvscope.svg"));

    QWidget* chart_page = buildChartPage();

    tabs_->addTab(scrollable(overview_), tr("&Overview"));
    tabs_->addTab(chart_page, tr("Memory vs &context"));
    tabs_->addTab(scrollable(deployment_), tr("&Deployment fit"));
    tabs_->addTab(scrollable(traffic_), tr("&Traffic"));
    tabs_->addTab(scrollable(probe_), tr("&Probe this machine"));
    tabs_->addTab(learn_, tr("Le&arn"));
    tabs_->setDocumentMode(true);

    auto* left = static_cast<QScrollArea*>(scrollable(inputs_));
    // The inputs scroll vertically only: they never hide behind a horizontal scroll bar.
    left->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    left->setMinimumWidth(
        std::max(400, inputs_->minimumSizeHint().width() + left->verticalScrollBar()->sizeHint().width() + 4));
    splitter_->addWidget(left);
    splitter_->addWidget(tabs_);
    splitter_->setStretchFactor(1, 1);
    splitter_->setCollapsible(0, false);
    splitter_->setSizes({left->minimumWidth(), 900});
    splitter_->setObjectName("splitter");

    auto* central = new QWidget;
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(4, 4, 4, 0);
    // The message bar sits under the work area: shown or hidden, it never moves the inputs (a click aimed at one
    // field while a message appeared landed in the next one down).
    layout->addWidget(splitter_, 1);
    layout->addWidget(messages_);
    setCentralWidget(central);
    // A normal widget, not a permanent one: a temporary message (a notice, "Saved …") takes its place
    // for a few seconds instead of having no room beside it.
    statusBar()->addWidget(status_, 1);
    // One undo story: a field's own text undo would swallow Ctrl+Z while the toolbar offers the scenario's.
    qApp->installEventFilter(this);
    // Notices about what an edit did stay in the status line long enough to be read.
    auto notice = [this](const QString& text) {
        statusBar()->showMessage(text, 10000);
        notice_kv_dtype_ = model_->scenario().kv_dtype;
        notice_parallel_ = model_->scenario().parallel;
        notice_undo_index_ = model_->undoStack()->index();
    };
    connect(model_, &ScenarioModel::notice, this, notice);
    connect(inputs_, &InputsPanel::notice, this, notice);
    connect(deployment_, &DeploymentView::notice, this, notice);

    // Learn: factors point at their inputs; the stopwatch is shared with the Probe tab.
    connect(learn_, &LearnView::fieldHovered, inputs_, &InputsPanel::highlightField);
    connect(learn_, &LearnView::fieldActivated, inputs_, &InputsPanel::focusField);
    connect(learn_, &LearnView::stopwatchRequested, runner_, &ProbeRunner::stopwatch);
    connect(learn_, &LearnView::message, this, [this](const QString& text, bool error) {
        messages_->showMessage(text, error ? MessageBar::Kind::error : MessageBar::Kind::info);
    });
    RecomputeView* recompute = learn_->recompute();
    connect(runner_, &ProbeRunner::stopwatchStarted, recompute, &RecomputeView::stopwatchStarted);
    connect(runner_, &ProbeRunner::stopwatchStep, recompute, &RecomputeView::addStopwatchStep);
    connect(runner_, &ProbeRunner::stopwatchFinished, recompute, &RecomputeView::setStopwatch);
    connect(runner_, &ProbeRunner::finished, recompute, &RecomputeView::probeIdle);

    createActions();
    traffic_->setCommitTyped([this] { return commitTypedText(); });
    connect(model_, &ScenarioModel::changed, this, &MainWindow::updateTitleAndStatus);
    // A notice about an edit of another model (its KV format replaced, …) goes with it when the model changes; a
    // notice about loading the new one comes after this.
    // A notice about the KV format or the layout goes when that changes, or when its edit is undone ("choose another
    // in KV dtype" after another was chosen would contradict the field beside it).
    connect(model_, &ScenarioModel::changed, this, [this] {
        const Scenario& s = model_->scenario();
        const bool other_model = model_->description() != notice_model_;
        notice_model_ = model_->description();
        if (other_model || s.kv_dtype != notice_kv_dtype_ || !(s.parallel == notice_parallel_))
            statusBar()->clearMessage();
    });
    // The stack's index moves after an undo has changed the scenario: watched on its own.
    connect(model_->undoStack(), &QUndoStack::indexChanged, this, [this](int index) {
        if (index < notice_undo_index_) statusBar()->clearMessage();
    });
    connect(model_->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitleAndStatus);
    resize(1280, 800);
    if (restore) {
        restoreSettings();
        claimRecoveryCopy();
        offerRecovery();
        // Only the real session keeps a recovery copy (windows made for tests and exports do not).
        recovery_timer_ = new QTimer(this);
        recovery_timer_->setSingleShot(true);
        recovery_timer_->setInterval(500);
        connect(recovery_timer_, &QTimer::timeout, this, &MainWindow::writeRecovery);
        connect(model_, &ScenarioModel::changed, recovery_timer_, qOverload<>(&QTimer::start));
    }
    updateTitleAndStatus();
}

// The chart tab: the chart with its axis switches above it, and what the curves leave out under it.
QWidget* MainWindow::buildChartPage() {
    auto* chart_page = new QWidget;
    auto* chart_bar = new QHBoxLayout;
    auto* log_x = new QCheckBox(tr("Log &tokens axis"));
    auto* log_y = new QCheckBox(tr("Log &bytes axis"));
    auto* reset = new QPushButton(tr("&Reset zoom"));
    log_x->setToolTip(tr("Spread context lengths by powers of two (1k, 2k, 4k …)"));
    log_y->setToolTip(tr("Show bytes by powers of two, so small and large caches are both readable"));
    reset->setToolTip(tr("Show the whole range again (Ctrl+0)"));
    chart_bar->addWidget(log_x);
    chart_bar->addWidget(log_y);
    chart_bar->addStretch(1);
    auto* hint = new QLabel(tr("Drag to zoom · hover for exact values"));
    hint->setToolTip(
        tr("Drag to zoom, wheel to zoom, right-click to zoom out, Ctrl+0 to reset; click a legend entry to hide or "
           "show its line. The bytes axis turns logarithmic by itself when MHA would squash this model's curve; "
           "tick or untick Log bytes axis to choose."));
    chart_bar->addWidget(hint);
    chart_bar->addWidget(reset);
    auto* chart_layout = new QVBoxLayout(chart_page);
    chart_layout->addWidget(new StaleNote(model_));  // whose the lines are while the inputs need attention
    chart_layout->addLayout(chart_bar);
    chart_layout->addWidget(chart_, 1);
    // What the chart leaves out or where it ends before the model's limit, under it (the curves' own warnings).
    auto* chart_notes = new QLabel;
    chart_notes->setObjectName("chartNotes");
    chart_notes->setWordWrap(true);
    chart_notes->setTextFormat(Qt::PlainText);
    chart_notes->setStyleSheet("color: #e67e22;");
    chart_layout->addWidget(chart_notes);
    auto show_chart_notes = [this, chart_notes] {
        QStringList notes;
        if (model_->hasResults())
            for (const std::string& w : model_->results().curve_warnings) notes << q(w);
        chart_notes->setText(notes.join('\n'));
        chart_notes->setVisible(!notes.isEmpty());
    };
    connect(model_, &ScenarioModel::changed, chart_notes, show_chart_notes);
    show_chart_notes();
    log_x->setChecked(chart_->logTokens());
    log_y->setChecked(chart_->logBytes());
    connect(log_x, &QCheckBox::toggled, chart_, &MemoryChart::setLogTokens);
    connect(log_y, &QCheckBox::toggled, chart_, &MemoryChart::setLogBytes);
    connect(reset, &QPushButton::clicked, chart_, &MemoryChart::resetZoom);
    connect(chart_, &MemoryChart::axesModeChanged, this, [this, log_x, log_y] {
        // Showing the chart's state is not a choice of the user's (the bytes axis stays automatic).
        const QSignalBlocker quiet_x(log_x), quiet_y(log_y);
        log_x->setChecked(chart_->logTokens());
        log_y->setChecked(chart_->logBytes());
        if (log_tokens_) log_tokens_->setChecked(chart_->logTokens());
        if (log_bytes_) log_bytes_->setChecked(chart_->logBytes());
    });
    return chart_page;
}

void MainWindow::claimRecoveryCopy() {
    // This window's recovery copy, locked for as long as the window lives: a name no other
    // copy has (a crashed run may have had this process id) whose lock this window holds.
    static int windows = 0;
    QDir().mkpath(recoveryFolder());
    for (int tries = 0; tries < 100 && !recovery_lock_; ++tries) {
        const QString path =
            QDir(recoveryFolder())
                .filePath(
                    QString("recovery-%1-%2.kvscope.json").arg(QCoreApplication::applicationPid()).arg(++windows));
        auto lock = std::make_unique<QLockFile>(path + ".lock");
        lock->setStaleLockTime(0);  // stale only when its process is gone
        if (QFileInfo::exists(path) || !lock->tryLock(0)) continue;
        recovery_path_ = path;
        recovery_lock_ = std::move(lock);
    }
    if (!recovery_lock_)  // the folder cannot be written: writeRecovery says so at the first change
        recovery_path_ = QDir(recoveryFolder()).filePath("recovery-unwritable.kvscope.json");
}

void MainWindow::createActions() {
    auto make = [this](const QString& text, const QKeySequence& key, const QString& tip, auto slot,
                       QStyle::StandardPixmap icon = QStyle::SP_CustomBase) {
        auto* a = new QAction(text, this);
        if (!key.isEmpty()) a->setShortcut(key);
        a->setStatusTip(tip);
        a->setToolTip(tip + (key.isEmpty() ? QString() : " (" + key.toString(QKeySequence::NativeText) + ")"));
        if (icon != QStyle::SP_CustomBase) a->setIcon(style()->standardIcon(icon));
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    QAction* open = make(
        tr("&Open scenario…"), QKeySequence::Open, tr("Open a saved .kvscope.json scenario"),
        [this] {
            const QString path = QFileDialog::getOpenFileName(
                this, tr("Open scenario or config.json"), last_dir_,
                tr("KVScope scenarios (*.kvscope.json);;JSON files (*.json);;All files (*)"));
            if (!path.isEmpty()) openAny(path);
        },
        QStyle::SP_DialogOpenButton);
    QAction* save = make(
        tr("&Save scenario"), QKeySequence::Save, tr("Save the inputs to a .kvscope.json file"),
        [this] {
            if (!acceptTypedText(tr("Not saved"))) return;  // said before a dialog asks where
            QString path =
                current_file_.endsWith(QString::fromUtf8(kScenarioFileSuffix.data()), Qt::CaseInsensitive)
                    ? current_file_
                    : askSavePath(tr("Save scenario"), tr("KVScope scenarios (*.kvscope.json)"), ".kvscope.json");
            if (!path.isEmpty() && path == current_file_ && fileChangedElsewhere()) {
                // Another window, an editor or a sync wrote the file since this window opened or saved it.
                QMessageBox ask(QMessageBox::Warning, tr("Save scenario"),
                                tr("%1 changed since this window last opened or saved it. Replace what it holds now "
                                   "with this window's scenario?")
                                    .arg(QDir::toNativeSeparators(path)),
                                QMessageBox::Cancel, this);
                QPushButton* replace = ask.addButton(tr("&Replace"), QMessageBox::DestructiveRole);
                QPushButton* other = ask.addButton(tr("Save &as…"), QMessageBox::AcceptRole);
                ask.exec();
                if (ask.clickedButton() == other)
                    path = askSavePath(tr("Save scenario"), tr("KVScope scenarios (*.kvscope.json)"), ".kvscope.json");
                else if (ask.clickedButton() != replace)
                    path.clear();
            }
            if (!path.isEmpty()) saveScenarioFile(path);
        },
        QStyle::SP_DialogSaveButton);
    QAction* save_as =
        make(tr("Save scenario &as…"), QKeySequence::SaveAs, tr("Save the inputs under a new name"), [this] {
            if (!acceptTypedText(tr("Not saved"))) return;
            const QString path =
                askSavePath(tr("Save scenario"), tr("KVScope scenarios (*.kvscope.json)"), ".kvscope.json");
            if (!path.isEmpty()) saveScenarioFile(path);
        });
    QAction* import = make(
        tr("&Import model…"), QKeySequence(tr("Ctrl+I")),
        tr("Read a Hugging Face config.json or a GGUF file (llama.cpp, Ollama, LM Studio); you can also drop it, or "
           "a model folder, on the window"),
        [this] {
            const QString path = QFileDialog::getOpenFileName(
                this, tr("Import model"), last_dir_,
                tr("Model files (*.json *.gguf);;Hugging Face config.json (*.json);;GGUF (*.gguf);;All files (*)"));
            if (!path.isEmpty()) importModelFile(path);
        },
        QStyle::SP_FileDialogStart);
    QAction* import_folder =
        make(tr("Import model &folder…"), QKeySequence(tr("Ctrl+Shift+I")),
             tr("Read a model folder: its config.json, and the exact weight bytes of its safetensors"), [this] {
                 const QString path = QFileDialog::getExistingDirectory(this, tr("Import model folder"), last_dir_);
                 if (!path.isEmpty()) importModelFile(path);
             });
    QAction* export_chart = make(
        tr("Export &chart…"), QKeySequence(tr("Ctrl+E")), tr("Save the chart as PNG, SVG or PDF"),
        [this] {
            if (!readyToExport()) return;  // said before the dialogs, not after them
            const QString path = askSavePath(
                tr("Export chart"), tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"), ".png");
            if (path.isEmpty()) return;
            ChartSize size;
            if (path.endsWith(".png", Qt::CaseInsensitive)) {
                ExportDialog dialog(size, this);
                if (dialog.exec() != QDialog::Accepted) return;
                size = dialog.chartSize();
            }
            exportChartTo(path, size);
        },
        QStyle::SP_DriveFDIcon);
    QAction* export_csv =
        make(tr("Export data as CS&V…"), {}, tr("Save memory against context as CSV (exact bytes)"), [this] {
            if (!readyToExport()) return;
            const QString path = askSavePath(tr("Export CSV"), tr("CSV (*.csv)"), ".csv");
            if (!path.isEmpty()) exportCsvTo(path);
        });
    QAction* export_json =
        make(tr("Export data as &JSON…"), {}, tr("Save the inputs and every result as JSON"), [this] {
            if (!readyToExport()) return;
            const QString path = askSavePath(tr("Export JSON"), tr("JSON (*.json)"), ".json");
            if (!path.isEmpty()) exportJsonTo(path);
        });
    QAction* export_report = make(
        tr("Export &report (PDF)…"), QKeySequence(tr("Ctrl+Shift+E")),
        tr("A one-page PDF with the inputs, the numbers, the comparison and the chart"),
        [this] {
            if (!readyToExport()) return;
            const QString path = askSavePath(tr("Export report"), tr("PDF document (*.pdf)"), ".pdf");
            if (!path.isEmpty()) exportReportTo(path);
        },
        QStyle::SP_FileDialogDetailedView);
    QAction* quit = make(tr("&Quit"), QKeySequence::Quit, tr("Close KVScope (the scenario is kept for next time)"),
                         [this] { close(); });

    QAction* undo = model_->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    undo->setIcon(style()->standardIcon(QStyle::SP_ArrowBack));
    QAction* redo = model_->undoStack()->createRedoAction(this, tr("&Redo"));
    // The platform's Redo keys, and both common ones besides: Ctrl+Y where it is not the platform's own already (a
    // key listed twice is an ambiguous shortcut that Qt then ignores).
    QList<QKeySequence> redo_keys = QKeySequence::keyBindings(QKeySequence::Redo);
    for (const QKeySequence& key : {QKeySequence(tr("Ctrl+Y")), QKeySequence(tr("Ctrl+Shift+Z"))})
        if (!redo_keys.contains(key)) redo_keys << key;
    redo->setShortcuts(redo_keys);
    redo->setIcon(style()->standardIcon(QStyle::SP_ArrowForward));
    QAction* copy_chart = make(tr("Copy c&hart"), QKeySequence(tr("Ctrl+Shift+C")),
                               tr("Copy the chart to the clipboard as an image"), [this] {
                                   if (!readyToExport(tr("Nothing copied"))) return;
                                   QApplication::clipboard()->setImage(chart_image(*chart_));
                                   statusBar()->showMessage(tr("Chart copied"), 3000);
                               });
    QAction* copy_table = make(tr("Copy &table"), QKeySequence(tr("Ctrl+Alt+C")),
                               tr("Copy the MHA/GQA/MQA comparison as tab-separated text"), [this] {
                                   if (!readyToExport(tr("Nothing copied"))) return;
                                   QApplication::clipboard()->setText(overview_->comparison()->toTsv());
                                   statusBar()->showMessage(tr("Comparison table copied"), 3000);
                               });

    log_tokens_ = make(tr("&Log tokens axis"), QKeySequence(tr("Ctrl+L")), tr("Log-scale context axis"),
                       [this](bool on) { chart_->setLogTokens(on); });
    log_bytes_ = make(tr("Log &bytes axis"), QKeySequence(tr("Ctrl+Shift+L")), tr("Log-scale bytes axis"),
                      [this](bool on) { chart_->setLogBytes(on); });
    for (QAction* a : {log_tokens_, log_bytes_}) a->setCheckable(true);
    log_tokens_->setChecked(chart_->logTokens());
    log_bytes_->setChecked(chart_->logBytes());
    QAction* reset_zoom = make(tr("&Reset zoom"), QKeySequence(tr("Ctrl+0")), tr("Show the chart's whole range"),
                               [this] { chart_->resetZoom(); });
    auto* units = new QActionGroup(this);
    units_binary_ = make(tr("Binary units (Gi&B)"), {}, tr("Show sizes in KiB, MiB, GiB (powers of 1024)"),
                         [this] { model_->setUnits(UnitSystem::binary); });
    units_decimal_ = make(tr("Decimal units (&GB)"), {}, tr("Show sizes in kB, MB, GB (powers of 1000)"),
                          [this] { model_->setUnits(UnitSystem::decimal); });
    for (QAction* a : {units_binary_, units_decimal_}) {
        a->setCheckable(true);
        units->addAction(a);
    }
    units_binary_->setChecked(true);
    QAction* about = make(tr("&About KVScope"), {}, tr("What KVScope is and which version this is"), [this] {
        QMessageBox::about(this, tr("About KVScope"),
                           tr("<h3>KVScope %1</h3><p>How much memory the KV cache of a transformer takes, whether a "
                              "deployment fits, and how fast it can decode.</p><p>Every number comes from one formula: "
                              "layers × KV heads × (K + V head dims) × bytes per element × tokens × sequences, "
                              "with sliding windows, MLA latents, paging blocks and tensor/pipeline parallel "
                              "taken into account.</p><p>The same calculations run headless: <tt>kvscope-cli</tt>.</p>")
                               .arg(QStringLiteral(KVSCOPE_VERSION)));
    });

    restore_recovery_ = make(tr("Restore &unsaved work"), {},
                             tr("Bring back the scenario a window that did not close normally left unsaved"),
                             [this] { restoreRecovery(); });
    restore_recovery_->setEnabled(false);
    discard_recovery_ = make(tr("&Discard unsaved work"), {},
                             tr("Delete the scenario a window that did not close normally left unsaved"),
                             [this] { discardRecovery(); });
    discard_recovery_->setEnabled(false);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(open);
    file->addAction(import);
    file->addAction(import_folder);
    recent_menu_ = file->addMenu(tr("Open &recent"));
    file->addSeparator();
    file->addAction(save);
    file->addAction(save_as);
    file->addAction(restore_recovery_);
    file->addAction(discard_recovery_);
    file->addSeparator();
    QMenu* export_menu = file->addMenu(tr("&Export"));
    for (QAction* a : {export_chart, export_csv, export_json, export_report}) export_menu->addAction(a);
    file->addSeparator();
    file->addAction(quit);
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    edit->addAction(copy_chart);
    edit->addAction(copy_table);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < tabs_->count(); ++i) {
        QAction* a = view->addAction(tabs_->tabText(i).remove('&'), this, [this, i] { tabs_->setCurrentIndex(i); });
        a->setShortcut(QKeySequence(tr("Ctrl+%1").arg(i + 1)));
    }
    view->addSeparator();
    view->addAction(log_tokens_);
    view->addAction(log_bytes_);
    view->addAction(reset_zoom);
    view->addSeparator();
    view->addAction(units_binary_);
    view->addAction(units_decimal_);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(make(tr("&How it calculates"), QKeySequence::HelpContents,
                         tr("The formula, the engines' budget rules, replication and the planner"),
                         [this] { show_help_page(this, tr("How KVScope calculates"), how_it_calculates_html()); }));
    help->addAction(make(tr("&Keyboard shortcuts"), QKeySequence(tr("Ctrl+/")), tr("Every shortcut of the menus"),
                         [this] { show_help_page(this, tr("Keyboard shortcuts"), shortcuts_html(menuBar())); }));
    help->addSeparator();
    help->addAction(about);

    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName("mainToolBar");
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    for (QAction* a : {open, save, import}) bar->addAction(a);
    bar->addSeparator();
    for (QAction* a : {undo, redo}) bar->addAction(a);
    bar->addSeparator();
    for (QAction* a : {export_chart, export_report}) bar->addAction(a);
    inputs_->setImportAction(import);
    rebuildRecentMenu();
}

QString MainWindow::suggestedFileName(const QString& suffix) const {
    // "Qwen2.5 72B" -> qwen2.5-72b, "acme/Tiny-LM" -> acme-tiny-lm: the whole name, safe in any folder.
    QString base;
    for (const QChar c : model_->description().toLower())
        base += c.isLetterOrNumber() || c == '.' || c == '_' ? c : QChar('-');
    while (base.contains("--")) base.replace("--", "-");
    while (base.startsWith('-') || base.startsWith('.')) base.remove(0, 1);
    while (base.endsWith('-') || base.endsWith('.')) base.chop(1);
    if (base.isEmpty()) base = "kvscope";
    return base + suffix;
}

QString MainWindow::askSavePath(const QString& title, const QString& filter, const QString& suffix) {
    QString path =
        QFileDialog::getSaveFileName(this, title, QDir(last_dir_).filePath(suggestedFileName(suffix)), filter);
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) path += suffix;
    return path;
}

bool MainWindow::report(const std::optional<QString>& problem, const QString& done) {
    if (problem) {
        messages_->showMessage(*problem, MessageBar::Kind::error);
        statusBar()->showMessage(tr("Nothing was changed"), 5000);
        return false;
    }
    messages_->hide();
    statusBar()->showMessage(done, 5000);
    return true;
}

bool MainWindow::importModelFile(const QString& path) {
    last_dir_ = QFileInfo(path).absolutePath();
    if (!report(model_->importModel(path), tr("Imported %1").arg(path))) return false;
    addRecent(path);
    return true;
}

MainWindow::~MainWindow() { disconnect(model_->undoStack(), nullptr, this, nullptr); }

QStringList MainWindow::commitTypedText() {
    inputs_->commitPending();
    deployment_->commitPending();
    return inputs_->unaccepted() + deployment_->unaccepted();
}

bool MainWindow::acceptTypedText(const QString& refused) {
    // Text typed and not yet entered counts as entered; text a field refuses stops the save or export, so that no
    // file holds the old value of a field that shows a new one.
    const QStringList left = commitTypedText();
    if (left.isEmpty()) return true;
    messages_->showMessage(
        tr("%1: %2. Correct the marked field, or press Esc in it to put back its value.").arg(refused, left.join("; ")),
        MessageBar::Kind::error);
    statusBar()->showMessage(tr("Nothing was written"), 5000);
    return false;
}

bool MainWindow::readyToExport(const QString& refused) {
    const QString nothing = refused.isEmpty() ? tr("Nothing exported") : refused;
    if (!acceptTypedText(nothing)) return false;
    // Said before a dialog asks where: the exports (and the clipboard's copies) are of valid inputs only (exporter.h).
    if (const auto problem = export_problem(*model_)) {
        QString said = *problem;
        if (!refused.isEmpty()) said.replace(tr("Nothing exported"), refused);
        return report(said, {});
    }
    return true;
}

bool MainWindow::saveScenarioFile(const QString& path) {
    if (!acceptTypedText(tr("Not saved"))) return false;
    last_dir_ = QFileInfo(path).absolutePath();
    if (!report(model_->saveScenario(path), tr("Saved %1").arg(path))) return false;
    adoptScenarioFile(path);
    return true;
}

void MainWindow::adoptScenarioFile(const QString& path) {
    // The window now stands for this file: its name in the title, no unsaved changes, a recent entry. Kept whole
    // (a relative path given on the command line names another file from another folder at the next start).
    current_file_ = QFileInfo(path).absoluteFilePath();
    current_file_time_ = QFileInfo(path).lastModified().toMSecsSinceEpoch();
    model_->undoStack()->setClean();
    addRecent(path);
    updateTitleAndStatus();
}

bool MainWindow::exported(const std::optional<QString>& problem, const QString& done, const QString& path) {
    if (!report(problem, done)) return false;
    // Where it went, with the way there: the message stays until closed, the status line for a while.
    const QString folder = QFileInfo(path).absolutePath();
    messages_->showMessage(done, MessageBar::Kind::info, tr("&Open folder"),
                           [folder] { QDesktopServices::openUrl(QUrl::fromLocalFile(folder)); });
    return true;
}

bool MainWindow::exportChartTo(const QString& path, ChartSize size) {
    return readyToExport() && exported(export_chart(*chart_, path, size), tr("Chart written to %1").arg(path), path);
}
bool MainWindow::exportCsvTo(const QString& path) {
    return readyToExport() && exported(export_csv(*model_, path), tr("CSV written to %1").arg(path), path);
}
bool MainWindow::exportJsonTo(const QString& path) {
    return readyToExport() && exported(export_json(*model_, path), tr("JSON written to %1").arg(path), path);
}
bool MainWindow::exportReportTo(const QString& path) {
    return readyToExport() &&
           exported(export_report(*chart_, *model_, path), tr("Report written to %1").arg(path), path);
}

void MainWindow::openAny(const QString& path) {
    // A scenario names its format; anything else is a model: a config.json, a GGUF file or a model folder.
    if (path.endsWith(QString::fromUtf8(kScenarioFileSuffix.data()), Qt::CaseInsensitive))
        openScenarioFile(path);
    else
        importModelFile(path);
}

void MainWindow::showScenario(const Scenario& scenario, const QString& description, const QStringList& notes,
                              const QStringList& warnings) {
    model_->replace(scenario, description, notes, tr("Open from the command line"), warnings);
    // The window no longer stands for the file restored from the last session: Ctrl+S must not
    // write this scenario over it.
    current_file_.clear();
    updateTitleAndStatus();
}

void MainWindow::addRecent(const QString& path) {
    const QString full = QFileInfo(path).absoluteFilePath();
    // The stored list is every window's, newest first (each addition is written at once): this file goes in front
    // of it, and this window's own list, read at start, only fills what is left.
    QStringList merged{full};
    for (const QString& p : QSettings().value("files/recent").toStringList() + recent_)
        if (!merged.contains(p)) merged << p;
    while (merged.size() > kMaxRecent) merged.removeLast();
    recent_ = merged;
    QSettings().setValue("files/recent", recent_);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    if (!recent_menu_) return;
    recent_menu_->clear();
    for (int i = 0; i < recent_.size(); ++i) {
        const QString path = recent_.at(i);
        QAction* a = recent_menu_->addAction(QString("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()), this,
                                             [this, path] { openAny(path); });
        a->setStatusTip(path);
    }
    recent_menu_->setEnabled(!recent_.isEmpty());
}

QString MainWindow::statusSummary() const { return status_->text(); }

void MainWindow::updateTitleAndStatus() {
    const QString name = current_file_.isEmpty() ? model_->description() : QFileInfo(current_file_).fileName();
    setWindowTitle(tr("%1[*] — KVScope").arg(name));
    setWindowModified(!model_->undoStack()->isClean());
    if (!model_->hasResults()) {
        status_->setText(tr("Inputs need attention"));
        return;
    }
    const Results& r = model_->results();
    QString text =
        tr("%1 · %2 tokens × %3 · %4 · KV cache %5")
            .arg(model_->resultsDescription(), q(format_tokens(r.scenario.workload.context_tokens)))
            .arg(r.scenario.workload.batch)
            .arg(q(std::string(to_string(r.scenario.kv_dtype))), both_units(r.kv.total_bytes, model_->units()));
    if (r.kv.state_bytes > 0) text += tr(" + state %1").arg(q(format_bytes(r.kv.state_bytes, model_->units())));
    if (r.fit)
        text += r.fit->fits ? tr(" · fits on %1 × %2").arg(r.fit->gpus).arg(q(r.scenario.deployment->gpu.name))
                            : tr(" · does not fit on %1 × %2").arg(r.fit->gpus).arg(q(r.scenario.deployment->gpu.name));
    if (!model_->errors().empty()) text = tr("Inputs need attention; showing the last valid results — ") + text;
    status_->setText(text);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    // A scenario or config.json, a GGUF file, or a model folder.
    const auto urls = event->mimeData()->urls();
    if (urls.size() != 1 || !urls.front().isLocalFile()) return;
    const QString path = urls.front().toLocalFile();
    if (path.endsWith(".json", Qt::CaseInsensitive) || path.endsWith(".gguf", Qt::CaseInsensitive) ||
        QFileInfo(path).isDir())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (urls.isEmpty()) return;
    openAny(urls.front().toLocalFile());
    event->acceptProposedAction();
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::ShortcutOverride) {
        auto* key = static_cast<QKeyEvent*>(event);
        auto* field = qobject_cast<QWidget*>(watched);
        // An editable box (KV heads) has the focus itself and hands the keys to its line edit.
        const auto* box = qobject_cast<QComboBox*>(watched);
        const bool text_field =
            qobject_cast<QLineEdit*>(watched) || qobject_cast<QAbstractSpinBox*>(watched) || (box && box->isEditable());
        // The scenario's own fields only: a quiz answer or a note keeps its text undo.
        const bool scenario_field = field && (inputs_->isAncestorOf(field) || deployment_->isAncestorOf(field));
        const QKeySequence pressed(key->keyCombination());
        const bool undo_or_redo = key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo) ||
                                  pressed == QKeySequence(tr("Ctrl+Y")) || pressed == QKeySequence(tr("Ctrl+Shift+Z"));
        if (text_field && scenario_field && undo_or_redo) {
            event->ignore();  // not the field's: the window's Undo/Redo shortcut takes it
            return true;
        }
    }
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // The scenario comes back at the next start, so closing never loses work.
    saveSettings();
    if (recovery_timer_) {
        recovery_timer_->stop();
        QFile::remove(recovery_path_);
        // A copy offered and not restored stays, to be offered again: dismissing the offer, or another message
        // taking its place, never deletes unsaved work.
        if (!adopted_recovery_.isEmpty() && recovery_restored_) QFile::remove(adopted_recovery_);
    }
    event->accept();
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    settings.setValue("window/splitter", splitter_->saveState());
    settings.setValue("window/tab", tabs_->currentIndex());
    settings.setValue("window/learnPage", static_cast<int>(learn_->page()));
    settings.setValue("view/units", model_->units() == UnitSystem::binary ? "binary" : "decimal");
    settings.setValue("view/logTokens", chart_->logTokens());
    if (chart_->bytesAxisAutomatic())
        settings.remove("view/logBytes");  // chosen by the chart for each model
    else
        settings.setValue("view/logBytes", chart_->logBytes());
    // files/recent is written when a file is added (addRecent), merged with other windows' additions: a list
    // written here would drop what a second window added after this one started.
    settings.setValue("files/lastDir", last_dir_);
    settings.setValue("scenario/last", QString::fromStdString(scenario_to_json(model_->scenario())));
    settings.setValue("scenario/description", model_->description());
    settings.setValue("scenario/notes", model_->notes());
    settings.setValue("scenario/warnings", model_->importWarnings());
    // The file the window stood for, and whether it had unsaved changes: both come back at the next start.
    settings.setValue("scenario/file", current_file_);
    settings.setValue("scenario/fileTime", current_file_time_);
    settings.setValue("scenario/modified", !model_->undoStack()->isClean());
}

void MainWindow::restoreSettings() {
    QSettings settings;
    if (!settings.isWritable())
        messages_->showMessage(tr("Settings cannot be saved: %1 is read-only or cannot be created. The window's "
                                  "layout, recent files and last scenario will not be remembered.")
                                   .arg(QDir::toNativeSeparators(settings.fileName())),
                               MessageBar::Kind::info);
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    splitter_->restoreState(settings.value("window/splitter").toByteArray());
    tabs_->setCurrentIndex(settings.value("window/tab", 0).toInt());
    learn_->setPage(static_cast<LearnView::Page>(
        std::clamp(settings.value("window/learnPage", 0).toInt(), 0, static_cast<int>(LearnView::Notes))));
    if (settings.value("view/units").toString() == "decimal") {
        model_->setUnits(UnitSystem::decimal);
        units_decimal_->setChecked(true);
    }
    chart_->setLogTokens(settings.value("view/logTokens", true).toBool());
    if (settings.contains("view/logBytes")) chart_->setLogBytes(settings.value("view/logBytes").toBool());
    recent_ = settings.value("files/recent").toStringList();
    last_dir_ = settings.value("files/lastDir", QDir::homePath()).toString();
    rebuildRecentMenu();
    const QString last = settings.value("scenario/last").toString();
    if (!last.isEmpty()) {
        auto s = scenario_from_json(last.toStdString(), "settings");
        if (s) {
            // Earlier versions kept "recovered after an unexpected exit" among the notes: an event of a past session,
            // not where the model comes from.
            QStringList notes = settings.value("scenario/notes").toStringList();
            notes.removeAll(QStringLiteral("recovered after an unexpected exit"));
            model_->replace(s->scenario, settings.value("scenario/description").toString(), notes,
                            tr("Restore the last scenario"), settings.value("scenario/warnings").toStringList());
            // Restoring is where the user left off, not an edit to undo.
            model_->undoStack()->clear();
            const QString file = settings.value("scenario/file").toString();
            if (!file.isEmpty() && QFileInfo::exists(file)) restoreScenarioFile(file, *s, settings);
        } else {
            messages_->showMessage(tr("The last scenario could not be restored (%1); starting from the default.")
                                       .arg(q(join_errors(s.errors()))),
                                   MessageBar::Kind::error);
        }
    }
}

}  // namespace kvscope::ui
