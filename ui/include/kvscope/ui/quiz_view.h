#pragma once
// Learn › Check your understanding: questions made from the current scenario, an answer
// field each (Enter checks it), and the verdict with the worked answer after checking.

#include <QWidget>

#include <vector>

#include "kvscope/calculator/quiz.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QVBoxLayout;

namespace kvscope::ui {

class ScenarioModel;

class QuizView : public QWidget {
    Q_OBJECT
public:
    explicit QuizView(ScenarioModel* model, QWidget* parent = nullptr);

    [[nodiscard]] int count() const { return static_cast<int>(cards_.size()); }
    [[nodiscard]] const Question& question(int i) const { return cards_.at(static_cast<std::size_t>(i)).question; }
    [[nodiscard]] QLineEdit* answerField(int i) const { return cards_.at(static_cast<std::size_t>(i)).answer; }
    [[nodiscard]] QLabel* verdictLabel(int i) const { return cards_.at(static_cast<std::size_t>(i)).verdict; }
    [[nodiscard]] QLabel* workedLabel(int i) const { return cards_.at(static_cast<std::size_t>(i)).worked; }
    // Checks the typed answer of question `i` and shows the verdict and the worked answer.
    void check(int i);

private:
    void refresh();

    ScenarioModel* model_;
    QVBoxLayout* list_;
    QLabel* empty_;
    QLabel* score_;
    struct Card {
        Question question;
        QWidget* box;
        QLineEdit* answer;
        QLabel* verdict;
        QLabel* worked;
        bool right = false;
    };
    std::vector<Card> cards_;
};

}  // namespace kvscope::ui
