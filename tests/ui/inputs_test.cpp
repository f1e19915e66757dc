// The inputs as a user drives them: typing, picking, dragging.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QSlider>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>

#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/comparison_model.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;

void type_into(QLineEdit* edit, const QString& text) {
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, text);
    QTest::keyClick(edit, Qt::Key_Return);
}

QString cell(const ComparisonModel* m, int row, int column) {
    return m->data(m->index(row, column), Qt::DisplayRole).toString();
}

QString spinValueText(const MainWindow& w) {
    return w.inputs()->contextField()->spinBox()->findChild<QLineEdit*>()->text();
}

// The series the chart marks as the model's own.
QLineSeries* model_series(MemoryChart* chart) {
    for (int i = 0; i < static_cast<int>(kVariantKindCount); ++i)
        if (chart->variantSeries(i)->isVisible() && chart->variantSeries(i)->name().contains("(model)"))
            return chart->variantSeries(i);
    return nullptr;
}

// What QAbstractItemModelTester reports (it warns under the qt.modeltest category): gathered while this lives, so that
// a test can fail on it instead of a warning nobody reads.
class ModelTesterReports {
public:
    ModelTesterReports() {
        reports().clear();
        previous_ = qInstallMessageHandler([](QtMsgType type, const QMessageLogContext& context, const QString& text) {
            if (context.category != nullptr && QByteArray(context.category).startsWith("qt.modeltest"))
                reports() << text;
            else if (type == QtFatalMsg)
                std::abort();
        });
    }
    ~ModelTesterReports() { qInstallMessageHandler(previous_); }
    ModelTesterReports(const ModelTesterReports&) = delete;
    ModelTesterReports& operator=(const ModelTesterReports&) = delete;
    static QStringList& reports() {
        static QStringList list;
        return list;
    }

private:
    QtMessageHandler previous_ = nullptr;
};

TEST(Inputs, TheLessonsThreeNumbersAppear) {
    MainWindow w(catalog(), false);
    EXPECT_TRUE(w.overview()->totalLabel()->text().contains("4.00 GiB (4.29 GB)"));
    const ComparisonModel* c = w.overview()->comparison();
    const ModelTesterReports reports;
    QAbstractItemModelTester tester(const_cast<ComparisonModel*>(c),
                                    QAbstractItemModelTester::FailureReportingMode::Warning);
    ASSERT_EQ(c->rowCount(), 3);
    EXPECT_EQ(cell(c, 0, ComparisonModel::Bytes), "4.00 GiB");
    EXPECT_EQ(cell(c, 1, ComparisonModel::Layout), "GQA-8");
    EXPECT_EQ(cell(c, 1, ComparisonModel::Bytes), "1.00 GiB");
    EXPECT_EQ(cell(c, 1, ComparisonModel::PercentOfMha), "25.0%");
    EXPECT_EQ(cell(c, 2, ComparisonModel::Bytes), "128 MiB");
    EXPECT_EQ(cell(c, 2, ComparisonModel::PercentOfMha), "3.1%");
    EXPECT_TRUE(w.overview()->formulaLabel()->text().startsWith(
        "2 (K and V) × 32 layers × 32 KV heads × 128 head dim × 2 bytes (fp16) × 8,192 tokens × 1 sequence"));
    EXPECT_TRUE(c->toTsv().contains("GQA-8\t8\t1.00 GiB\t128 KiB\t25.0%\t1073741824"));
    // The model stays a well-formed Qt model through a switch to one with more rows (MLA, all full attention).
    w.model()->loadCatalogModel("deepseek-v3");
    EXPECT_GT(c->rowCount(), 3);
    EXPECT_TRUE(ModelTesterReports::reports().isEmpty()) << ModelTesterReports::reports().join("\n").toStdString();
}

TEST(Inputs, ChangingKvHeadsUpdatesTheOverviewAndTheChart) {
    MainWindow w(catalog(), false);
    MemoryChart* chart = w.chart();
    chart->setLogBytes(false);  // bytes as they are, whatever the chart would choose for GQA-8
    QLineSeries* before = model_series(chart);
    ASSERT_NE(before, nullptr);
    EXPECT_TRUE(before->name().startsWith("MHA"));
    const QPointF mha_last = before->points().back();

    // KV heads offers the divisors of 32.
    QComboBox* kv = w.inputs()->kvHeadsField();
    QStringList offered;
    for (int i = 0; i < kv->count(); ++i) offered << kv->itemText(i);
    EXPECT_EQ(offered, QStringList({"32", "16", "8", "4", "2", "1"}));
    type_into(kv->lineEdit(), "8");

    EXPECT_TRUE(w.overview()->totalLabel()->text().contains("1.00 GiB"))
        << w.overview()->totalLabel()->text().toStdString();
    QLineSeries* after = model_series(chart);
    ASSERT_NE(after, nullptr);
    EXPECT_TRUE(after->name().startsWith("GQA-8"));
    // Log tokens axis: x = log2(tokens); GQA-8 stores 128 KiB per token, a quarter of MHA.
    const QPointF last = after->points().back();
    EXPECT_DOUBLE_EQ(last.x(), mha_last.x());
    EXPECT_DOUBLE_EQ(last.y(), 131072.0 * std::exp2(last.x()));
    EXPECT_DOUBLE_EQ(last.y() * 4, mha_last.y());
}

TEST(Inputs, AnInvalidEntryIsMarkedAndTheResultsStay) {
    MainWindow w(catalog(), false);
    QComboBox* kv = w.inputs()->kvHeadsField();
    type_into(kv->lineEdit(), "5");
    EXPECT_TRUE(w.inputs()->marks().isMarked(kv));
    EXPECT_TRUE(kv->toolTip().contains("must divide the query heads (32)")) << kv->toolTip().toStdString();
    EXPECT_TRUE(w.inputs()->errorLabel()->text().contains("• KV heads (5) must divide"));  // the name once
    EXPECT_TRUE(w.overview()->totalLabel()->text().contains("4.00 GiB"));
    EXPECT_TRUE(w.statusSummary().startsWith("Inputs need attention"));
    type_into(kv->lineEdit(), "4");
    EXPECT_FALSE(w.inputs()->marks().isMarked(kv));
    EXPECT_TRUE(w.inputs()->errorLabel()->text().isEmpty());
    EXPECT_TRUE(w.overview()->totalLabel()->text().contains("512 MiB"));
}

TEST(Inputs, ContextAccepts128kAndUnreadableTextIsNamed) {
    MainWindow w(catalog(), false);
    BigSpinBox* spin = w.inputs()->contextField()->spinBox();
    type_into(spin->findChild<QLineEdit*>(), "128k");
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 131072u);
    EXPECT_EQ(spin->findChild<QLineEdit*>()->text(), "128k");
    type_into(spin->findChild<QLineEdit*>(), "12q");
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 131072u);
    EXPECT_TRUE(w.inputs()->marks().isMarked(spin));
    EXPECT_TRUE(w.inputs()->errorLabel()->text().contains("12q")) << w.inputs()->errorLabel()->text().toStdString();
}

TEST(Inputs, DraggingTheContextSliderIsOneUndoStep) {
    MainWindow w(catalog(), false);
    QSlider* slider = w.inputs()->contextField()->slider();
    const int steps = w.model()->undoStack()->count();
    slider->setSliderDown(true);
    for (int i = 1; i <= 6; ++i) slider->setValue(slider->value() - 1);  // 8k is the model's limit
    slider->setSliderDown(false);
    EXPECT_EQ(w.model()->undoStack()->count(), steps + 1);
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 2816u);  // 2^(13 - 6/4) rounded to 256
    w.model()->undoStack()->undo();
    EXPECT_EQ(w.model()->scenario().workload.context_tokens, 8192u);
    EXPECT_EQ(spinValueText(w), "8k");
}

TEST(Inputs, PickingAPresetLoadsIt) {
    MainWindow w(catalog(), false);
    QComboBox* picker = w.inputs()->modelPicker();
    const int index = picker->findData("llama-3-70b");
    ASSERT_GE(index, 0);
    picker->setCurrentIndex(index);
    emit picker->activated(index);
    EXPECT_EQ(w.model()->scenario().arch.layers, 80u);
    EXPECT_EQ(w.inputs()->layersField()->value(), 80u);
    EXPECT_EQ(w.inputs()->kvHeadsField()->currentText(), "8");
}

// Each KV format says whether the deployment's engine keeps it: llama.cpp has no fp8 cache, vLLM none of ggml's
// q8_0, and with no deployment every format is only described.
TEST(Inputs, TheKvFormatsSayWhichTheEngineDoesNotKeep) {
    MainWindow w(catalog(), false);
    QComboBox* box = w.inputs()->kvDtypeField();
    const auto tip = [box](KvDtype dtype) {
        return box->itemData(box->findData(static_cast<int>(dtype)), Qt::ToolTipRole).toString();
    };
    ASSERT_FALSE(w.model()->scenario().deployment.has_value());
    EXPECT_FALSE(tip(KvDtype::fp8_e4m3).contains("not exact")) << tip(KvDtype::fp8_e4m3).toStdString();
    EXPECT_TRUE(
        tip(KvDtype::fp8_e4m3).startsWith(QString::fromStdString(std::string(info(KvDtype::fp8_e4m3).description))));

    w.deployment()->enableBox()->setChecked(true);
    QComboBox* engine = w.deployment()->engineField();
    const auto pick = [engine](Engine e) {
        const int index = engine->findData(static_cast<int>(e));
        engine->setCurrentIndex(index);
        emit engine->activated(index);
    };
    pick(Engine::llama_cpp);
    EXPECT_TRUE(tip(KvDtype::fp8_e4m3).contains("llama.cpp has no fp8_e4m3 cache (--cache-type-k/-v take f32"))
        << tip(KvDtype::fp8_e4m3).toStdString();
    EXPECT_FALSE(tip(KvDtype::q8_0).contains("not exact"));

    pick(Engine::vllm);
    EXPECT_FALSE(tip(KvDtype::fp8_e4m3).contains("not exact"));
    EXPECT_TRUE(tip(KvDtype::q8_0)
                    .contains("vllm has no q8_0 cache (vllm/config/cache.py CacheDType); counted at its "
                              "size, not exact"))
        << tip(KvDtype::q8_0).toStdString();
    w.model()->undoStack()->undo();
    EXPECT_TRUE(tip(KvDtype::fp8_e4m3).contains("llama.cpp has no fp8_e4m3 cache"));
}

}  // namespace
}  // namespace kvscope::ui
