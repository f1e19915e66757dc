#include "kvscope/ui/window_strip.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

namespace {
QString count(std::uint64_t n) { return q(format_count(n)); }
constexpr int kBar = 20, kGap = 10;
}  // namespace

WindowStrip::WindowStrip(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setAccessibleName(tr("Conversation tokens against the context window"));
}

void WindowStrip::setView(const ContextWindowView& view) {
    const bool rows_changed = view.rows.size() != view_.rows.size();
    view_ = view;
    if (rows_changed) updateGeometry();
    update();
}

int WindowStrip::bandHeight() const { return fontMetrics().height() + 4 + kBar + kGap; }

QSize WindowStrip::sizeHint() const {
    return {600, bandHeight() * static_cast<int>(1 + view_.rows.size()) + fontMetrics().height()};
}

QSize WindowStrip::minimumSizeHint() const { return {240, sizeHint().height()}; }

void WindowStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette& pal = palette();
    const QRectF area = QRectF(rect()).adjusted(2, 2, -2, -2);
    const double n = static_cast<double>(std::max<std::uint64_t>(1, view_.conversation));
    // Token position → x: the whole conversation spans the width.
    auto x_at = [&](double token) { return area.left() + area.width() * token / n; };
    const QColor gone = pal.color(QPalette::Mid);
    const QColor text = pal.color(QPalette::WindowText);
    const QColor seen = pal.color(QPalette::Highlight);
    const bool cells = view_.conversation > 0 && view_.conversation <= 128;

    auto band = [&](double top, const QString& label, std::uint64_t visible, const QColor& colour,
                    bool summarised = false) {
        p.setPen(text);
        p.drawText(QRectF(area.left(), top, area.width(), fontMetrics().height()), Qt::AlignLeft | Qt::AlignVCenter,
                   label);
        const QRectF bar(area.left(), top + fontMetrics().height() + 4, area.width(), kBar);
        const double first_seen = n - static_cast<double>(visible);
        // Tokens no longer seen: grey, hatched.
        if (first_seen > 0) {
            const QRectF left(bar.left(), bar.top(), x_at(first_seen) - bar.left(), bar.height());
            p.fillRect(left, gone);
            p.fillRect(left, QBrush(pal.color(QPalette::Window), Qt::BDiagPattern));
        }
        p.fillRect(QRectF(x_at(first_seen), bar.top(), bar.right() - x_at(first_seen), bar.height()), colour);
        // A state summarises its tokens rather than attending to them: dotted over its colour, never greyed.
        if (summarised) p.fillRect(bar, QBrush(pal.color(QPalette::Base), Qt::Dense6Pattern));
        if (cells) {
            p.setPen(QPen(pal.color(QPalette::Window), 1));
            for (std::uint64_t t = 1; t < view_.conversation; ++t) {
                const double x = x_at(static_cast<double>(t));
                p.drawLine(QPointF(x, bar.top()), QPointF(x, bar.bottom()));
            }
        }
        p.setPen(QPen(text, 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(bar);
    };

    double top = area.top();
    const QString conversation_label =
        view_.dropped > 0 ? tr("Conversation: %1 tokens — the first %2 have left the %3-token context window")
                                .arg(count(view_.conversation), count(view_.dropped), count(view_.context_window))
                          : tr("Conversation: %1 tokens, all inside the context window").arg(count(view_.conversation));
    band(top, conversation_label, view_.in_window, seen);
    top += bandHeight();
    for (const WindowRow& r : view_.rows) {
        QColor c = seen;
        if (r.window > 0) c = c.lighter(125);
        const QString label = r.summarised ? tr("%1: keep all %2 in their state").arg(q(r.label), count(r.visible))
                                           : tr("%1: see the last %2").arg(q(r.label), count(r.visible));
        band(top, label, r.visible, c, r.summarised);
        top += bandHeight();
    }
    // The token scale: where the conversation starts and ends.
    p.setPen(pal.color(QPalette::PlaceholderText));
    const QRectF scale(area.left(), top - kGap + 2, area.width(), fontMetrics().height());
    p.drawText(scale, Qt::AlignLeft | Qt::AlignVCenter, tr("token 1 (oldest)"));
    p.drawText(scale, Qt::AlignRight | Qt::AlignVCenter, tr("token %1 (newest)").arg(count(view_.conversation)));
}

ContextWindowPage::ContextWindowPage(ScenarioModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      conversation_(new ContextInput),
      play_(new QPushButton(tr("&Play"))),
      summary_(new QLabel),
      strip_(new WindowStrip),
      timer_(new QTimer(this)) {
    auto* intro = new QLabel(
        tr("<h3>The context window</h3>A model attends only to the last tokens that fit its context window. "
           "When a conversation grows past it, the earliest tokens leave: the model no longer sees them — "
           "this is why long chats “forget” their beginning. Sliding-window layers see even less: only their "
           "own window."));
    intro->setWordWrap(true);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    play_->setCheckable(true);
    play_->setToolTip(tr("Grow the conversation past the context window and watch the earliest tokens leave"));
    conversation_->spinBox()->setToolTip(tr("Tokens in the conversation so far (type 8k, 128k …)"));
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Conversation")));
    bar->addWidget(conversation_, 1);
    bar->addWidget(play_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(bar);
    layout->addWidget(strip_);
    layout->addWidget(summary_);
    layout->addStretch(1);

    timer_->setInterval(50);
    connect(timer_, &QTimer::timeout, this, &ContextWindowPage::step);
    connect(play_, &QPushButton::toggled, this, &ContextWindowPage::play);
    connect(conversation_, &ContextInput::valueEdited, this, [this](std::uint64_t t, bool) { setConversation(t); });
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
}

void ContextWindowPage::setConversation(std::uint64_t tokens) {
    tokens_ = std::max<std::uint64_t>(1, tokens);
    conversation_->setValue(tokens_);
    const Architecture& arch = model_->results().scenario.arch;
    const ContextWindowView v = context_window_view(arch, tokens_);
    strip_->setView(v);
    QStringList lines;
    if (v.context_window == 0)
        lines << tr("This model does not state a context window, so nothing leaves here.");
    else if (v.dropped > 0)
        lines << tr("The context window holds %1 tokens. The conversation has %2: the first %3 have left, "
                    "and the model sees the last %4.")
                     .arg(count(v.context_window), count(v.conversation), count(v.dropped), count(v.in_window));
    else
        lines << tr("The context window holds %1 tokens; the conversation's %2 all fit (%3 to spare).")
                     .arg(count(v.context_window), count(v.conversation), count(v.context_window - v.conversation));
    for (const WindowRow& r : v.rows)
        if (r.window > 0)
            lines
                << tr("%1 see only the last %2 tokens, whatever the context window.").arg(q(r.label), count(r.visible));
        else if (r.summarised)
            lines << tr("The recurrent layers attend to no token: their state of fixed size summarises all %1, the "
                        "first ones too.")
                         .arg(count(r.visible));
    if (model_->results().scenario.workload.full_window &&
        (arch.has_sliding_layers() || arch.count_layers(LayerKind::chunked) > 0))
        lines << tr(
            "(The engine keeps the full context in the cache of sliding and chunked layers, but they still attend "
            "only to their window.)");
    summary_->setText(lines.join(' '));
}

void ContextWindowPage::play(bool on) {
    if (on) {
        const auto& v = strip_->view();
        // Start again from a short conversation when the last run already went past the window.
        if (v.context_window > 0 && tokens_ >= v.context_window + v.context_window / 2)
            setConversation(std::max<std::uint64_t>(1, v.context_window / 2));
        timer_->start();
    } else {
        timer_->stop();
    }
    if (play_->isChecked() != on) play_->setChecked(on);
}

void ContextWindowPage::step() {
    const std::uint64_t window = strip_->view().context_window ? strip_->view().context_window : 8192;
    const std::uint64_t end = window + window / 2;
    setConversation(std::min(end, tokens_ + std::max<std::uint64_t>(1, window / 80)));
    if (tokens_ >= end) play(false);
}

void ContextWindowPage::refresh() {
    if (!model_->hasResults()) return;
    const Scenario& s = model_->results().scenario;
    conversation_->setSliderMaximum(std::max<std::uint64_t>(s.arch.max_positions * 2, 8192));
    const std::string key =
        s.arch.name + "/" + std::to_string(s.arch.layers) + "/" + std::to_string(s.arch.max_positions);
    if (key != model_key_ || tokens_ == 0) {
        model_key_ = key;
        tokens_ = s.workload.context_tokens;
    }
    setConversation(tokens_);
}

}  // namespace kvscope::ui
