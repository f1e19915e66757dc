// Every export writes a file a report pipeline can use; failures lose nothing.
#include <QApplication>
#include <QFileInfo>
#include <QImage>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QUndoStack>

#include <gtest/gtest.h>

#include "kvscope/calculator/draft_import.h"
#include "kvscope/calculator/json.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/memory_chart.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/scenario_model.h"
#include "sample_scenarios.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;
using testing::read_all;

TEST(Export, ChartAsPngDecodesAtTheChosenSizeAndScale) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    const QString path = dir.filePath("chart.png");
    ASSERT_TRUE(w.exportChartTo(path, {QSize(800, 500), 1.5}));
    QImage image(path);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(1200, 750));
    // Not a blank canvas: the lines are drawn in more than the background colour.
    const QRgb background = image.pixel(2, 2);
    int differing = 0;
    for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7) differing += image.pixel(x, y) != background;
    EXPECT_GT(differing, 200);
}

TEST(Export, ChartAsSvgParsesAndPdfStartsWithTheMagic) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.exportChartTo(dir.filePath("chart.svg")));
    QSvgRenderer svg(dir.filePath("chart.svg"));
    EXPECT_TRUE(svg.isValid());
    EXPECT_TRUE(read_all(dir.filePath("chart.svg")).contains("GQA-8"));  // legend text is in the drawing
    ASSERT_TRUE(w.exportChartTo(dir.filePath("chart.pdf")));
    EXPECT_TRUE(read_all(dir.filePath("chart.pdf")).startsWith("%PDF"));
}

TEST(Export, TheChartSaysWhatItShowsInEveryFormat) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.model()->edit("example", kvscope::testing::readme_example);
    MemoryChart* chart = w.chart();
    EXPECT_EQ(chart->titleText(), "KV cache against context length: Llama 3 70B");
    EXPECT_EQ(chart->subtitleText(),
              "fp8_e4m3 KV · bf16 weights · 128k tokens × 8 sequences · TP 2 × PP 1 · 2 × NVIDIA H100 SXM 80GB · vllm");
    EXPECT_TRUE(chart->chart()->title().contains(chart->subtitleText().toHtmlEscaped()));

    ASSERT_TRUE(w.exportChartTo(dir.filePath("chart.svg")));
    const QByteArray svg = read_all(dir.filePath("chart.svg"));
    EXPECT_TRUE(svg.contains("<title>KV cache against context length: Llama 3 70B</title>")) << svg.left(600).data();
    EXPECT_TRUE(svg.contains(chart->subtitleText().toUtf8()));
    // Text at the size it has beside the lines in the window and the PNG: the legend's point size at
    // the screen's resolution, in the SVG's own units (one per pixel of the 1200-wide chart).
    const int legend_px = qRound(chart->chart()->legend()->font().pointSizeF() * chart->logicalDpiY() / 72.0);
    EXPECT_TRUE(svg.contains(QString("font-size=\"%1\"").arg(legend_px).toUtf8())) << legend_px;
    ASSERT_TRUE(w.exportChartTo(dir.filePath("chart.pdf")));
    EXPECT_TRUE(read_all(dir.filePath("chart.pdf")).contains("/Title"));
}

TEST(Export, TheChosenContextIsMarkedAndMhaDoesNotSquashTheModel) {
    MainWindow w(catalog(), false);
    MemoryChart* chart = w.chart();
    // The lesson's model is MHA at 8k: every line reads on a linear axis.
    EXPECT_FALSE(chart->logBytes());
    EXPECT_TRUE(chart->contextMarker()->isVisible());
    EXPECT_EQ(chart->contextMarker()->name(), "context 8k");
    ASSERT_EQ(chart->contextMarker()->count(), 2);
    EXPECT_DOUBLE_EQ(chart->contextMarker()->at(0).x(), 13.0);  // log2(8192) on the log tokens axis
    // Llama 3 70B with MHA's terabytes beside an 9 GiB budget: the bytes axis turns logarithmic by itself.
    w.model()->loadCatalogModel("llama-3-70b");
    w.model()->edit("example", [](Scenario& s) {
        s.workload.context_tokens = 131072;
        s.workload.batch = 8;
    });
    EXPECT_TRUE(chart->logBytes());
    EXPECT_TRUE(chart->bytesAxisAutomatic());
    // Once the user chooses, the choice stays.
    chart->setLogBytes(false);
    w.model()->edit("batch", [](Scenario& s) { s.workload.batch = 16; });
    EXPECT_FALSE(chart->logBytes());
    EXPECT_FALSE(chart->bytesAxisAutomatic());
    // Hovering shows the crosshair's readout, and no tooltip covers it.
    EXPECT_TRUE(chart->toolTip().isEmpty());
}

TEST(Export, CsvHasExactBytesPerLayout) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.exportCsvTo(dir.filePath("data.csv")));
    const QList<QByteArray> lines = read_all(dir.filePath("data.csv")).trimmed().split('\n');
    ASSERT_GT(lines.size(), 100);
    EXPECT_EQ(lines.front(), "tokens,MHA bytes,GQA-8 bytes,MQA bytes");
    // One token of the lesson's model: 512 KiB as MHA, 128 KiB as GQA-8, 16 KiB as MQA.
    EXPECT_EQ(lines.at(1), "1,524288,131072,16384");
}

TEST(Export, JsonCarriesTheScenarioAndTheResults) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    ASSERT_TRUE(w.exportJsonTo(dir.filePath("data.json")));
    const QByteArray text = read_all(dir.filePath("data.json"));
    auto parsed = json::parse(text.toStdString());
    ASSERT_TRUE(parsed);
    const json::Value* kv = parsed.value->find("kv");
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(kv->find("kv_cache_bytes")->as_u64(), 4ull << 30);
    EXPECT_NE(parsed.value->find("scenario"), nullptr);
    EXPECT_NE(parsed.value->find("curves"), nullptr);
}

TEST(Export, JsonOfADeploymentWithADraftHasTheClisDraft) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("llama-3-70b");
    w.model()->edit("fit", [](Scenario& s) {
        Deployment d;
        d.gpu = *catalog().find_gpu("h100-sxm");
        d.gpu_count = 4;
        s.parallel.tp = 4;
        const CatalogModel* small = catalog().find_model("llama-3.2-1b");
        d.draft = draft_from_model(small->model, small->id, std::nullopt);
        s.deployment = d;
    });
    ASSERT_TRUE(w.exportJsonTo(dir.filePath("data.json")));
    auto parsed = json::parse(read_all(dir.filePath("data.json")).toStdString());
    ASSERT_TRUE(parsed);
    const json::Value* fit = parsed.value->find("fit");
    ASSERT_NE(fit, nullptr);
    const json::Value* draft = fit->find("draft");
    ASSERT_TRUE(draft && draft->is_object());
    EXPECT_EQ(draft->find("name")->as_string(), "llama-3.2-1b");
    EXPECT_EQ(draft->find("weights_bytes")->as_u64(), 2 * 1'235'814'400ull);
    EXPECT_EQ(fit->find("weights_bytes")->as_u64(), w.model()->results().fit->weights_bytes);
    // The scenario it came from keeps the draft too.
    const json::Value* scenario = parsed.value->find("scenario");
    ASSERT_NE(scenario, nullptr);
    EXPECT_NE(scenario->find("deployment")->find("draft"), nullptr);
}

TEST(Export, ReportIsAOnePagePdf) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->edit("fit", [](Scenario& s) {
        Deployment d;
        d.gpu = *catalog().find_gpu("h100-sxm");
        s.deployment = d;
    });
    ASSERT_TRUE(w.exportReportTo(dir.filePath("report.pdf")));
    const QByteArray pdf = read_all(dir.filePath("report.pdf"));
    EXPECT_TRUE(pdf.startsWith("%PDF"));
    EXPECT_EQ(pdf.count("/Type /Page\n") + pdf.count("/Type /Page>>") + pdf.count("/Type /Page "), 1);
    EXPECT_GT(pdf.size(), 10000);
}

TEST(Export, AnUnwritablePathGetsAMessageAndNothingChanges) {
    QTemporaryDir dir;
    MainWindow w(catalog(), false);
    w.model()->edit("ctx", [](Scenario& s) { s.workload.context_tokens = 16384; });
    const Scenario before = w.model()->scenario();
    const int steps = w.model()->undoStack()->count();
    const QString path = dir.filePath("no/such/folder/chart.png");
    EXPECT_FALSE(w.exportChartTo(path));
    EXPECT_EQ(w.messages()->kind(), MessageBar::Kind::error);
    EXPECT_TRUE(w.messages()->text().contains(path)) << w.messages()->text().toStdString();
    EXPECT_FALSE(w.exportReportTo(dir.filePath("no/such/folder/report.pdf")));
    EXPECT_FALSE(w.exportCsvTo(dir.filePath("no/such/folder/data.csv")));
    EXPECT_EQ(w.model()->scenario(), before);
    EXPECT_EQ(w.model()->undoStack()->count(), steps);
    EXPECT_FALSE(QFileInfo::exists(path));
    // An existing file is replaced whole or not at all.
    const QString existing = dir.filePath("keep.png");
    testing::write_all(existing, "previous");
    EXPECT_FALSE(w.exportChartTo(dir.filePath("keep.bmp")));  // unsupported format: named, nothing written
    EXPECT_TRUE(w.messages()->text().contains(".png, .svg or .pdf"));
    EXPECT_EQ(read_all(existing), "previous");
}

}  // namespace
}  // namespace kvscope::ui

namespace kvscope::ui {
namespace {

TEST(Export, TheChartsLabelsSayWhatTheyAreInEveryPalette) {
    MainWindow w(catalog(), false);
    MemoryChart* chart = w.chart();
    w.model()->loadCatalogModel("llama-3-70b");
    // The crossing has its unit; each legend entry is drawn as its series is (a dashed line is not a square).
    ASSERT_TRUE(w.model()->results().kv_exceeds_weights_at);
    EXPECT_TRUE(chart->outgrowsMarker()->name().startsWith("KV > weights from "));
    EXPECT_TRUE(chart->outgrowsMarker()->name().endsWith(" tokens")) << chart->outgrowsMarker()->name().toStdString();
    EXPECT_EQ(chart->chart()->legend()->markerShape(), QLegend::MarkerShapeFromSeries);
    // The weights' format, as the Weights line counts them.
    EXPECT_TRUE(chart->subtitleText().contains("bf16 weights")) << chart->subtitleText().toStdString();
    w.model()->loadCatalogModel("gpt-oss-20b");
    EXPECT_TRUE(chart->subtitleText().contains("mxfp4 weights")) << chart->subtitleText().toStdString();
    // An edited model is never exported under the published name alone.
    w.model()->setLayers(12);
    EXPECT_EQ(chart->titleText(), "KV cache against context length: gpt-oss-20b (edited)");
    w.model()->undoStack()->undo();
    EXPECT_EQ(chart->titleText(), "KV cache against context length: gpt-oss-20b");
    // Dark mode: the rich-text title is written in the palette's text colour, not the default black.
    QPalette dark = chart->palette();
    dark.setColor(QPalette::Window, QColor(0x20, 0x20, 0x20));
    dark.setColor(QPalette::WindowText, QColor(0xee, 0xee, 0xee));
    dark.setColor(QPalette::Base, QColor(0x18, 0x18, 0x18));
    dark.setColor(QPalette::Text, QColor(0xee, 0xee, 0xee));
    chart->setPalette(dark);
    EXPECT_TRUE(chart->chart()->title().contains("color: #eeeeee")) << chart->chart()->title().toStdString();
}

TEST(Export, ALineUnderAnotherSaysWhereItIs) {
    // Qwen3-Next at TP 2: MQA's one KV head is replicated on both GPUs, as many bytes as GQA-2's two: its line lies
    // under the model's, and its legend entry says so.
    MainWindow w(catalog(), false);
    w.model()->loadCatalogModel("qwen3-next-80b-a3b");
    w.model()->edit("tp", [](Scenario& s) { s.parallel.tp = 2; });
    QLineSeries* mqa = w.chart()->variantSeries(static_cast<int>(VariantKind::mqa));
    ASSERT_TRUE(mqa->isVisible());
    EXPECT_TRUE(mqa->name().endsWith("(on the GQA-2 line)")) << mqa->name().toStdString();
    w.model()->undoStack()->undo();
    EXPECT_FALSE(mqa->name().contains("on the")) << mqa->name().toStdString();
}

TEST(Export, TheMessageBarNeverMovesTheInputs) {
    MainWindow w(catalog(), false);
    w.resize(1024, 640);
    w.show();
    QWidget* layers = w.inputs()->layersField();
    const QPoint before = layers->mapTo(&w, QPoint(0, 0));
    w.messages()->showMessage("A message long enough to take a line of its own in the bar", MessageBar::Kind::error);
    QApplication::processEvents();
    EXPECT_EQ(layers->mapTo(&w, QPoint(0, 0)), before);
}

}  // namespace
}  // namespace kvscope::ui
