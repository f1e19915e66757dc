// The ways a desktop differs from CI: a comma locale (ctest runs this suite in C, de_DE and fr_FR),
// paths with spaces and non-ASCII letters, a data or settings folder that cannot be written, and
// two windows of the app open at once.
#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <clocale>

#include "kvscope/calculator/json.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/ui/decimal_spin_box.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/notes_store.h"
#include "kvscope/ui/scenario_model.h"
#include "sample_scenarios.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using kvscope::testing::fractional_deployment;
using testing::read_all;
using testing::write_all;

// The locale this run of the suite was started in, as the user's desktop would set it.
bool comma_locale() { return std::string(std::localeconv()->decimal_point) == ","; }

// A folder "Prüfungen/Plan 1" inside a temporary one: spaces and a non-ASCII letter.
QString awkward_folder(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QString::fromUtf8("Prüfungen/Plan 1"));
    QDir().mkpath(path);
    return path;
}

TEST(Environment, TheSuiteRunsInTheLocaleItWasGiven) {
    // ctest's @de_DE and @fr_FR runs must really meet a decimal comma, or they test nothing new.
    const QByteArray asked = qgetenv("LC_ALL");
    if (asked.startsWith("de_DE") || asked.startsWith("fr_FR")) EXPECT_TRUE(comma_locale()) << asked.constData();
    EXPECT_EQ(number_text(0.85), "0.85");
}

TEST(Environment, TheFractionFieldTakesAPointOrACommaAndShowsAPoint) {
    const QLocale before;
    QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany));
    DecimalSpinBox box;
    box.setRange(0.01, 1.0);
    box.setDecimals(2);
    for (const char* typed : {"0,85", "0.85", " 0,85 "}) {
        QString text = typed;
        int pos = 0;
        EXPECT_EQ(box.validate(text, pos), QValidator::Acceptable) << typed;
        EXPECT_DOUBLE_EQ(box.valueFromText(typed), 0.85) << typed;
    }
    QString half = "0,";
    int pos = 0;
    EXPECT_EQ(box.validate(half, pos), QValidator::Intermediate);  // still typing
    QString too_big = "1,5";
    EXPECT_EQ(box.validate(too_big, pos), QValidator::Intermediate);
    box.setValue(0.6);
    QString slip = "0,5,";  // not a number: the value stays, nothing else is guessed
    box.fixup(slip);
    EXPECT_EQ(slip, "0.60");
    box.setValue(0.9);
    EXPECT_EQ(box.text(), "0.90");  // as every other number in the window and the CLI
    // The memory fraction's style: two decimals, three where it has them (as fit prints it), and a percentage.
    DecimalSpinBox fraction;
    fraction.setRange(0.01, 1.0);
    fraction.setDecimals(3);
    fraction.setFractionStyle(true);
    fraction.setValue(0.9);
    EXPECT_EQ(fraction.text(), "0.90");
    fraction.setValue(0.835);
    EXPECT_EQ(fraction.text(), "0.835");
    EXPECT_DOUBLE_EQ(fraction.valueFromText("90 %"), 0.9);
    EXPECT_DOUBLE_EQ(fraction.valueFromText("87,5%"), 0.875);
    QLocale::setDefault(before);

    // The deployment's fraction and the chart export's scale are such fields.
    MainWindow w(testing::catalog(), false);
    EXPECT_FALSE(w.findChildren<DecimalSpinBox*>().isEmpty());
}

TEST(Environment, AScenarioSavedInAnAwkwardFolderOpensWithTheSameNumbers) {
    QTemporaryDir dir;
    const QString folder = awkward_folder(dir);
    const QString path = folder + "/Plan 1.kvscope.json";
    MainWindow w(testing::catalog(), false);
    w.showScenario(fractional_deployment(), "Plan", {});
    ASSERT_TRUE(w.saveScenarioFile(path)) << w.messages()->text().toStdString();
    const QByteArray text = read_all(path);
    EXPECT_TRUE(text.contains("\"fraction\": 0.85,")) << text.constData();
    ASSERT_TRUE(json::parse(text.toStdString()));

    MainWindow other(testing::catalog(), false);
    ASSERT_TRUE(other.openScenarioFile(path)) << other.messages()->text().toStdString();
    EXPECT_EQ(other.model()->scenario(), fractional_deployment());
    EXPECT_EQ(other.model()->results().fit->kv_budget_bytes, w.model()->results().fit->kv_budget_bytes);

    // The exports land there too, and parse.
    ASSERT_TRUE(w.exportJsonTo(folder + "/Ergebnis ä.json"));
    ASSERT_TRUE(json::parse(read_all(folder + "/Ergebnis ä.json").toStdString()));
    ASSERT_TRUE(w.exportCsvTo(folder + "/Kurve é.csv"));
    EXPECT_TRUE(read_all(folder + "/Kurve é.csv").startsWith("tokens,"));
    ASSERT_TRUE(w.exportReportTo(folder + "/Bericht ü.pdf"));
    EXPECT_TRUE(read_all(folder + "/Bericht ü.pdf").startsWith("%PDF"));
}

TEST(Environment, AConfigInAnAwkwardFolderImports) {
    QTemporaryDir dir;
    const QString path = awkward_folder(dir) + "/config.json";
    write_all(path, R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096.0, "intermediate_size": 14336, "vocab_size": 128256,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "torch_dtype": "bfloat16"})");
    MainWindow w(testing::catalog(), false);
    ASSERT_TRUE(w.importModelFile(path)) << w.messages()->text().toStdString();
    EXPECT_EQ(w.model()->scenario().arch.kv_heads, 8u);
    EXPECT_EQ(w.model()->scenario().arch.hidden_size, 4096u);
}

TEST(Environment, AFileDamagedByTheOldCommaWriterOpensAndSaysWhatWasRepaired) {
    QTemporaryDir dir;
    const QString path = awkward_folder(dir) + "/alt.kvscope.json";
    std::string text = scenario_to_json(fractional_deployment());
    text.replace(text.find("0.85"), 4, "0,85");  // what 0.1 wrote on a German desktop
    write_all(path, QByteArray::fromStdString(text));
    MainWindow w(testing::catalog(), false);
    ASSERT_TRUE(w.openScenarioFile(path)) << w.messages()->text().toStdString();
    EXPECT_EQ(w.model()->scenario(), fractional_deployment());
    EXPECT_TRUE(w.messages()->isVisibleTo(&w));
    EXPECT_TRUE(w.messages()->text().contains("decimal comma")) << w.messages()->text().toStdString();
    EXPECT_TRUE(w.messages()->text().contains("fraction 0,85 -> 0.85")) << w.messages()->text().toStdString();
    EXPECT_TRUE(w.isWindowModified());  // saving stores the repaired file
    ASSERT_TRUE(w.saveScenarioFile(path));
    EXPECT_TRUE(read_all(path).contains("\"fraction\": 0.85,"));
}

TEST(Environment, TwoWindowsKeepEachOthersNotes) {
    QTemporaryDir dir;
    const QString path = awkward_folder(dir) + "/notes.json";
    NotesStore first(path), second(path);
    ASSERT_FALSE(first.load().has_value());
    ASSERT_FALSE(second.load().has_value());  // both read the file before either wrote
    first.add(fractional_deployment(), "Llama 3 70B").claim = "first window's claim";
    ASSERT_FALSE(first.save().has_value());
    second.add(fractional_deployment(), "Llama 3 70B").claim = "second window's claim";
    ASSERT_FALSE(second.save().has_value());
    EXPECT_EQ(second.notes().size(), 2);  // the first window's note is merged in, not written over

    EXPECT_TRUE(second.mergeChangedNotes());

    // A later edit of the first window wins over the second's older copy; a note deleted in one
    // window stays deleted, in the file and in the other window.
    first.notes()[0].claim = "edited";
    first.notes()[0].modified = QDateTime::currentDateTime().addSecs(5);
    ASSERT_FALSE(first.save().has_value());
    EXPECT_EQ(first.notes().size(), 2);  // the second window's note came in
    ASSERT_EQ(second.notes()[0].claim, "second window's claim");
    second.remove(0);
    ASSERT_FALSE(second.save().has_value());
    EXPECT_EQ(second.notes()[0].claim, "edited");  // the first window's edit came in
    ASSERT_FALSE(first.save().has_value());
    EXPECT_TRUE(first.mergeChangedNotes());
    ASSERT_EQ(first.notes().size(), 1);  // the second window's deletion came in, not undone
    NotesStore reread(path);
    ASSERT_FALSE(reread.load().has_value());
    ASSERT_EQ(reread.notes().size(), 1);
    EXPECT_EQ(reread.notes()[0].claim, "edited");
    EXPECT_EQ(reread.notes()[0].scenario, fractional_deployment());
}

TEST(Environment, TwoWindowsKeepEachOthersRecentFiles) {
    QSettings().clear();
    QTemporaryDir dir;
    auto* first = new MainWindow(testing::catalog(), true);
    auto* second = new MainWindow(testing::catalog(), true);
    ASSERT_TRUE(first->saveScenarioFile(dir.filePath("erste Größe.kvscope.json")));
    ASSERT_TRUE(second->saveScenarioFile(dir.filePath("zweite.kvscope.json")));
    first->close();
    second->close();  // closing last: its list must not drop the first window's file
    delete first;
    delete second;
    const QStringList recent = QSettings().value("files/recent").toStringList();
    EXPECT_TRUE(recent.contains(QFileInfo(dir.filePath("erste Größe.kvscope.json")).absoluteFilePath()))
        << recent.join(", ").toStdString();
    EXPECT_EQ(recent.value(0), QFileInfo(dir.filePath("zweite.kvscope.json")).absoluteFilePath());
    // With a full list: a window that started before another's additions keeps them, newest first.
    auto* a = new MainWindow(testing::catalog(), true);
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(a->saveScenarioFile(dir.filePath(QString("a%1.kvscope.json").arg(i))));
    auto* b = new MainWindow(testing::catalog(), true);
    ASSERT_TRUE(b->saveScenarioFile(dir.filePath("b.kvscope.json")));
    ASSERT_TRUE(a->saveScenarioFile(dir.filePath("a-last.kvscope.json")));
    a->close();
    b->close();
    delete a;
    delete b;
    const QStringList full = QSettings().value("files/recent").toStringList();
    ASSERT_EQ(full.size(), 8) << full.join(", ").toStdString();
    EXPECT_EQ(QFileInfo(full.value(0)).fileName(), "a-last.kvscope.json");
    EXPECT_EQ(QFileInfo(full.value(1)).fileName(), "b.kvscope.json") << full.join(", ").toStdString();
    QSettings().clear();
}

TEST(Environment, TwoWindowsKeepTheirOwnRecoveryCopies) {
    for (const QFileInfo& f : QDir(MainWindow::recoveryFolder()).entryInfoList({"recovery*"}, QDir::Files))
        QFile::remove(f.absoluteFilePath());
    auto first = std::make_unique<MainWindow>(testing::catalog(), true);
    first->model()->edit("ctx", [](Scenario& s) { s.workload.context_tokens = 12288; });
    first->writeRecovery();
    MainWindow second(testing::catalog(), true);
    EXPECT_NE(second.recoveryPath(), first->recoveryPath());
    // The first window is alive: its copy is not offered to the second, and survives its close.
    EXPECT_FALSE(second.messages()->text().contains("did not close normally"))
        << second.messages()->text().toStdString();
    second.writeRecovery();
    second.close();
    EXPECT_TRUE(QFile::exists(first->recoveryPath()));
    EXPECT_FALSE(QFile::exists(second.recoveryPath()));
    first->close();
    EXPECT_FALSE(QFile::exists(first->recoveryPath()));
    QSettings().clear();
}

TEST(Environment, AFolderThatCannotBeWrittenGetsAMessageNotACrash) {
    // A regular file where a folder should be: not even root can create folders inside it.
    QTemporaryDir dir;
    const QString blocked = dir.filePath("not a folder");
    write_all(blocked, "x");

    NotesStore notes(blocked + "/kvscope/notes.json");
    EXPECT_FALSE(notes.load().has_value());
    notes.add(fractional_deployment(), "Llama 3 70B");
    const auto problem = notes.save();
    ASSERT_TRUE(problem.has_value());
    EXPECT_TRUE(problem->contains("cannot be created")) << problem->toStdString();
    EXPECT_EQ(notes.notes().size(), 1);  // kept in the window

    const QByteArray data_home = qgetenv("XDG_DATA_HOME");
    qputenv("XDG_DATA_HOME", (blocked + "/data").toUtf8());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, blocked + "/config");
    {
        MainWindow w(testing::catalog(), true);
        EXPECT_TRUE(w.messages()->text().contains("Settings cannot be saved")) << w.messages()->text().toStdString();
        w.model()->edit("ctx", [](Scenario& s) { s.workload.context_tokens = 4096; });
        w.writeRecovery();
        EXPECT_TRUE(w.messages()->text().contains("cannot be kept")) << w.messages()->text().toStdString();
        EXPECT_EQ(w.model()->scenario().workload.context_tokens, 4096u);
        w.close();
    }
    qputenv("XDG_DATA_HOME", data_home);
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, qEnvironmentVariable("XDG_CONFIG_HOME"));
}

}  // namespace
}  // namespace kvscope::ui
