#include "kvscope/ui/help_dialogs.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QMenu>
#include <QMenuBar>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "kvscope/calculator/deployment.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {

void add_menu_rows(const QMenu* menu, const QString& path, QString& rows) {
    for (const QAction* a : menu->actions()) {
        if (a->menu()) {
            add_menu_rows(a->menu(), path + " › " + QString(a->menu()->title()).remove('&'), rows);
            continue;
        }
        if (a->shortcut().isEmpty() || a->isSeparator()) continue;
        rows += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td>%3</td></tr>")
                    .arg(a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped(),
                         QString(a->text()).remove('&').toHtmlEscaped(), path.toHtmlEscaped());
    }
}

}  // namespace

QString shortcuts_html(const QMenuBar* menus) {
    QString rows;
    for (const QAction* a : menus->actions())
        if (a->menu()) add_menu_rows(a->menu(), QString(a->menu()->title()).remove('&'), rows);
    return QObject::tr(
               "<h3>Keyboard shortcuts</h3>"
               "<table cellspacing=\"0\" cellpadding=\"4\">"
               "<tr><th align=\"left\">Keys</th><th align=\"left\">Action</th><th align=\"left\">Menu</th></tr>"
               "%1</table>"
               "<p>Also: Alt and the underlined letter moves to a field; Enter in the model box loads the "
               "model typed (an id, a Hugging Face id or a name); Ctrl+Z undoes the last change from any "
               "field; on the chart, drag to zoom, right-click to zoom out, click a legend entry to hide "
               "its line.</p>")
        .arg(rows);
}

QString how_it_calculates_html() {
    QString engines;
    for (std::size_t i = 0; i < kEngineCount; ++i) {
        const auto e = static_cast<Engine>(i);
        engines += QStringLiteral("<li><b>%1</b> (default fraction %2): %3</li>")
                       .arg(q(std::string(to_string(e))),
                            default_fraction_per_gpu(e) ? QObject::tr("its own for the GPU")
                                                        : QString::number(default_fraction(e), 'f', 2),
                            q(std::string(budget_rule(e))).toHtmlEscaped());
    }
    return QObject::tr(
               "<h3>How KVScope calculates</h3>"
               "<p><b>The KV cache</b> is one formula, summed over the layers:</p>"
               "<p><tt>bytes = Σ layers · sequences × round_up(min(T, window), block) × KV heads per GPU × "
               "(K head dim + V head dim) × bits per element ÷ 8</tt></p>"
               "<p>T is the context (prompt plus output) per sequence; a sliding-window layer keeps at most its "
               "window; paged engines round each sequence up to whole blocks. An MLA layer keeps one latent per "
               "token (kv_lora_rank + qk_rope_head_dim values) instead of keys and values. Byte counts are exact "
               "integers; GiB is 2<sup>30</sup> bytes, GB is 10<sup>9</sup>.</p>"
               "<p><b>Tensor parallel</b> splits the KV heads across GPUs: KV heads per GPU = max(1, KV heads ÷ TP). "
               "With more GPUs than KV heads each head is <i>replicated</i> (vLLM, SGLang), and every copy counts — "
               "the table, chart and report say “replicated on N GPUs” where that happens. <b>Pipeline "
               "parallel</b> gives each GPU its share of the layers.</p>"
               "<p><b>Will it fit?</b> Weights (parameters × bytes of the weight format) are split over the GPUs; "
               "the engine's rule decides what is left for the cache:</p><ul>%1</ul>"
               "<p><b>How many GPUs?</b> The planner tries every TP within a node (dividing the heads as engines "
               "require) and PP across nodes, and adds replicas (data parallel) until the sequences are served: "
               "GPUs = TP × PP × replicas.</p>"
               "<p><b>Decode speed</b> is a floor from memory bandwidth: each step reads the weights it multiplies "
               "(not the whole embedding table, only the routed experts of a mixture) and every sequence's cache; "
               "pipeline stages take their turns. The probe measures the real thing on this machine.</p>"
               "<p>The same numbers come from <tt>kvscope-cli</tt> (kv, compare, sweep, fit, plan) with the same "
               "inputs.</p>")
        .arg(engines);
}

QDialog* show_help_page(QWidget* parent, const QString& title, const QString& html) {
    auto* dialog = new QDialog(parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(title);
    auto* text = new QTextBrowser;
    text->setHtml(html);
    text->setOpenLinks(false);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(text);
    layout->addWidget(buttons);
    dialog->resize(640, 560);
    dialog->show();
    return dialog;
}

}  // namespace kvscope::ui
