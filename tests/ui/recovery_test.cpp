// Unsaved work after an unexpected exit: the recovery copy offered, kept until restored or discarded.
#include <gtest/gtest.h>
#include <QAction>
#include <QApplication>
#include <QCategoryAxis>
#include <QChart>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QUrl>
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/gpu_memory_bar.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/learn_view.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

TEST(Window, UnsavedWorkIsOfferedBackAfterAnUnexpectedExit) {
    QString crashed_copy;
    {
        auto* crashed = new MainWindow(testing::catalog(), true);
        crashed_copy = crashed->recoveryPath();
        crashed->model()->edit("ctx", [](Scenario& s) {
            s.workload.context_tokens = 12288;
            s.workload.batch = 3;
        });
        crashed->writeRecovery();  // what the 500 ms timer does after each change
        delete crashed;            // gone without closeEvent: like a crash, the recovery copy stays
    }
    MainWindow next(testing::catalog(), true);
    EXPECT_NE(next.model()->scenario().workload.context_tokens, 12288u);
    ASSERT_TRUE(next.messages()->isVisibleTo(&next));
    EXPECT_TRUE(next.messages()->text().contains("did not close normally")) << next.messages()->text().toStdString();
    ASSERT_TRUE(next.messages()->actionButton()->isVisibleTo(&next));
    next.messages()->actionButton()->click();
    EXPECT_EQ(next.model()->scenario().workload.context_tokens, 12288u);
    EXPECT_EQ(next.model()->scenario().workload.batch, 3u);
    EXPECT_FALSE(next.restoreRecoveryAction()->isEnabled());
    EXPECT_TRUE(next.messages()->text().startsWith("Restored the scenario KVScope had not saved"));
    next.close();  // a normal close removes the copy it took over, and its own
    EXPECT_FALSE(QFile::exists(crashed_copy));
    EXPECT_FALSE(QFile::exists(next.recoveryPath()));
    {
        // After a clean restart the recovery is over: nothing says "recovered" any more (it is no provenance).
        MainWindow after(testing::catalog(), true);
        EXPECT_EQ(after.model()->scenario().workload.batch, 3u);
        EXPECT_FALSE(after.model()->notes().join('\n').contains("recovered"))
            << after.model()->notes().join('\n').toStdString();
        EXPECT_FALSE(after.messages()->isVisibleTo(&after) && after.messages()->text().contains("Restored"));
        after.close();
    }
    QSettings().clear();
}

TEST(Window, AnOfferedCopyIsKeptUntilItIsRestoredThoughAnotherMessageHidesTheOffer) {
    QString crashed_copy;
    {
        auto* crashed = new MainWindow(testing::catalog(), true);
        crashed_copy = crashed->recoveryPath();
        crashed->model()->edit("ctx", [](Scenario& s) { s.workload.batch = 7; });
        crashed->writeRecovery();
        delete crashed;  // a crash: no closeEvent
    }
    {
        MainWindow next(testing::catalog(), true);
        ASSERT_TRUE(next.messages()->text().contains("did not close normally"));
        ASSERT_TRUE(next.restoreRecoveryAction()->isEnabled());
        next.messages()->showMessage("something else", MessageBar::Kind::info);  // the offer is gone from view
        next.close();  // quitting without restoring keeps the copy
        EXPECT_TRUE(QFile::exists(crashed_copy));
    }
    {
        MainWindow again(testing::catalog(), true);
        ASSERT_TRUE(again.restoreRecoveryAction()->isEnabled());  // offered again, and in the File menu
        EXPECT_TRUE(again.messages()->text().contains("kept until it is restored or discarded"));
        again.restoreRecoveryAction()->trigger();
        EXPECT_EQ(again.model()->scenario().workload.batch, 7u);
        EXPECT_FALSE(again.discardRecoveryAction()->isEnabled());
        again.close();
        EXPECT_FALSE(QFile::exists(crashed_copy));
    }
    // Discarded: deleted at once, and not offered again.
    {
        auto* crashed = new MainWindow(testing::catalog(), true);
        crashed_copy = crashed->recoveryPath();
        crashed->model()->edit("ctx", [](Scenario& s) { s.workload.batch = 9; });
        crashed->writeRecovery();
        delete crashed;
    }
    {
        MainWindow next(testing::catalog(), true);
        ASSERT_TRUE(next.discardRecoveryAction()->isEnabled());
        next.discardRecoveryAction()->trigger();
        EXPECT_FALSE(QFile::exists(crashed_copy));
        EXPECT_FALSE(next.restoreRecoveryAction()->isEnabled());
        EXPECT_NE(next.model()->scenario().workload.batch, 9u);
        next.close();
    }
    MainWindow last(testing::catalog(), true);
    EXPECT_FALSE(last.restoreRecoveryAction()->isEnabled());
    QSettings().clear();
}

}  // namespace
}  // namespace kvscope::ui
