#include "kvscope/ui/quiz_view.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "kvscope/ui/refresh_when_shown.h"
#include "kvscope/ui/scenario_model.h"
#include "kvscope/ui/text.h"

namespace kvscope::ui {

QuizView::QuizView(ScenarioModel* model, QWidget* parent)
    : QWidget(parent), model_(model), list_(new QVBoxLayout), empty_(new QLabel), score_(new QLabel) {
    auto* intro =
        new QLabel(tr("<h3>Check your understanding</h3>Questions about the current scenario. Work "
                      "them out from the formula, type a number with its unit, and press Enter. "
                      "Answers within a few percent count, so rounded units are fine."));
    intro->setWordWrap(true);
    empty_->setText(tr("Fix the marked inputs to get questions about this scenario."));
    empty_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(score_);
    layout->addWidget(empty_);
    layout->addLayout(list_);
    layout->addStretch(1);
    auto* lazy = new RefreshWhenShown(this, [this] { refresh(); });
    connect(model_, &ScenarioModel::changed, lazy, &RefreshWhenShown::request);
    connect(model_, &ScenarioModel::unitsChanged, lazy, &RefreshWhenShown::request);
}

void QuizView::refresh() {
    const std::vector<Question> questions =
        model_->errors().empty() ? questions_for(model_->scenario(), model_->units()) : std::vector<Question>{};
    // Questions that did not change keep what was typed and the verdict.
    bool same = questions.size() == cards_.size();
    for (std::size_t i = 0; same && i < questions.size(); ++i)
        same = questions[i].text == cards_[i].question.text && questions[i].answer == cards_[i].question.answer;
    if (same) {
        for (std::size_t i = 0; i < questions.size(); ++i) cards_[i].question = questions[i];  // units may differ
        return;
    }
    for (Card& c : cards_) delete c.box;
    cards_.clear();
    for (const Question& question : questions) {
        const int index = static_cast<int>(cards_.size());
        auto* box = new QGroupBox(tr("Question %1").arg(index + 1));
        auto* text = new QLabel(q(question.text));
        text->setWordWrap(true);
        auto* answer = new QLineEdit;
        answer->setPlaceholderText(q(question.hint));
        answer->setAccessibleName(tr("Answer to question %1").arg(index + 1));
        answer->setClearButtonEnabled(true);
        auto* check_button = new QPushButton(tr("Check"));
        auto* verdict = new QLabel;
        verdict->setWordWrap(true);
        verdict->hide();
        auto* worked = new QLabel;
        worked->setWordWrap(true);
        worked->setTextInteractionFlags(Qt::TextSelectableByMouse);
        worked->hide();
        auto* row = new QHBoxLayout;
        row->addWidget(answer, 1);
        row->addWidget(check_button);
        auto* v = new QVBoxLayout(box);
        v->addWidget(text);
        v->addLayout(row);
        v->addWidget(verdict);
        v->addWidget(worked);
        list_->addWidget(box);
        connect(answer, &QLineEdit::returnPressed, this, [this, index] { check(index); });
        connect(check_button, &QPushButton::clicked, this, [this, index] { check(index); });
        cards_.push_back({question, box, answer, verdict, worked});
    }
    empty_->setVisible(cards_.empty());
    score_->clear();
}

void QuizView::check(int i) {
    Card& c = cards_.at(static_cast<std::size_t>(i));
    const AnswerCheck result = check_answer(c.question, c.answer->text().toStdString(), model_->units());
    c.verdict->setText(q(result.message));
    c.verdict->show();
    c.verdict->setStyleSheet(!result.understood ? QString()
                             : result.correct   ? QStringLiteral("color: #27ae60; font-weight: bold;")
                                                : QStringLiteral("color: #c0392b; font-weight: bold;"));
    c.right = result.correct;
    if (result.understood) {
        c.worked->setText(tr("Worked answer: %1").arg(q(c.question.worked)));
        c.worked->show();
    }
    int right = 0;
    for (const Card& card : cards_) right += card.right ? 1 : 0;
    score_->setText(tr("%1 of %2 right so far.").arg(right).arg(cards_.size()));
}

}  // namespace kvscope::ui
