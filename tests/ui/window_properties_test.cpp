// WindowProperties: the window as a state machine (STYLE.md 14). Random sequences of what a user does — type valid
// or invalid text in any field, with Enter or not, undo, redo, pick a model, change tabs, save, reopen, export —
// from a fixed seed, and after every action the invariant "what is shown is what is computed":
//   - every input shows its scenario's value, or is marked invalid and its message quotes the text it shows, or is
//     being typed in (focused, changed, not yet accepted);
//   - the figures of every results tab are of the current inputs, or the tab says whose they are;
//   - a save writes what the window shows (text not yet accepted is committed or refused first), and opening it
//     gives the same state back;
//   - an export is of the current inputs, with kvscope-cli's numbers for them.
// A failure prints the seed, the shortest sequence of actions that still breaks the invariant, and what broke.
// KVSCOPE_PROPERTY_SEED and KVSCOPE_PROPERTY_SEQUENCES run other or more sequences (a deeper local search).
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/units.h"
#include "kvscope/ui/big_spin_box.h"
#include "kvscope/ui/context_input.h"
#include "kvscope/ui/deployment_view.h"
#include "kvscope/ui/inputs_panel.h"
#include "kvscope/ui/main_window.h"
#include "kvscope/ui/message_bar.h"
#include "kvscope/ui/overview_view.h"
#include "kvscope/ui/scenario_model.h"
#include "widget_testing.h"

namespace kvscope::ui {
namespace {

using testing::catalog;

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// What a text input of the window must show for a scenario; nullopt where the input is not shown for it.
using Expected = std::function<std::optional<QString>(const Scenario&)>;

struct Input {
    const char* name;
    QLineEdit* edit;
    QWidget* field;  // the widget the panel marks
    Expected expected;
    bool tokens;  // takes token counts (8k, 1,5k)
};

QString number(std::uint64_t n) { return QString::number(n); }

std::vector<Input> inputs_of(MainWindow& w) {
    InputsPanel* in = w.inputs();
    auto spin = [](BigSpinBox* b) { return b->findChild<QLineEdit*>(); };
    std::vector<Input> out{
        {"Layers", spin(in->layersField()), in->layersField(), [](const Scenario& s) { return number(s.arch.layers); },
         false},
        {"Query heads", spin(in->queryHeadsField()), in->queryHeadsField(),
         [](const Scenario& s) { return number(s.arch.query_heads); }, false},
        {"Head dim", spin(in->headDimField()), in->headDimField(),
         [](const Scenario& s) { return number(s.arch.head_dim_k); }, false},
        {"Model dim", spin(in->hiddenSizeField()), in->hiddenSizeField(),
         [](const Scenario& s) { return number(s.arch.hidden_size); }, false},
        {"Context", spin(in->contextField()->spinBox()), in->contextField()->spinBox(),
         [](const Scenario& s) { return QString::fromStdString(format_tokens(s.workload.context_tokens)); }, true},
        {"Sequences", spin(in->batchField()), in->batchField(),
         [](const Scenario& s) { return number(s.workload.batch); }, false},
        {"KV heads", in->kvHeadsField()->lineEdit(), in->kvHeadsField(),
         [](const Scenario& s) -> std::optional<QString> {
             if (s.arch.mla) return std::nullopt;
             return number(s.arch.kv_heads);
         },
         false},
    };
    return out;
}

// A fresh window, shown and active, so that focus and key presses behave as on a desktop.
struct Harness {
    QTemporaryDir dir;
    MainWindow w{catalog(), false};
    std::vector<Input> inputs;
    std::vector<std::string> log;
    QString saved_path;
    std::optional<Scenario> saved;  // what the last successful save wrote
    bool last_save_refused = false;
    QByteArray file_before_save;  // the file as it was before the last save

    Harness() {
        w.resize(1280, 800);
        activate();
        inputs = inputs_of(w);
        saved_path = dir.filePath("saved scénario.kvscope.json");
    }
    // The active window (another harness's window may have been active since).
    void activate() {
        w.show();
        w.activateWindow();
        QApplication::setActiveWindow(&w);
        (void)QTest::qWaitForWindowActive(&w);
    }
};

// The texts typed: accepted, refused by the field, and accepted by the field but refused by the calculator.
const char* const kCountTexts[] = {"1",  "2", "4",  "8",     "16",  "32", "48", "64", "128", "70000", "0",
                                   "-1", "",  "12q", "1e3", "1,5k", " 8 ", "5",  "3",  "96",  "40"};
const char* const kTokenTexts[] = {"8k",   "4096", "128k", "131.072", "1,5k", "1.5k", "1M",  "0",
                                   "abc",  "1e15", "32k",  "131,072", "200",  "2k",   "10M", ""};
const char* const kModels[] = {"llama-3-8b",  "llama-3.2-1b", "qwen3-next-80b-a3b", "gemma-3-27b",
                               "deepseek-v3", "gpt-oss-20b",  "kvscope-teaching-32l", "mixtral-8x7b"};

enum class End { enter, none, tab, escape };

struct Action {
    enum Kind { type, undo_toolbar, undo_key, redo_toolbar, pick, tab, save, reopen, toggle_deployment, click_away };
    Kind kind;
    int target = 0;  // the input, model or tab
    std::string text;
    End end = End::enter;
};

std::string describe(const Action& a, const std::vector<Input>& inputs) {
    switch (a.kind) {
        case Action::type: {
            const char* ends[] = {"Enter", "no Enter", "Tab", "Esc"};
            return std::string("type '") + a.text + "' in " + inputs.at(static_cast<std::size_t>(a.target)).name +
                   ", " + ends[static_cast<int>(a.end)];
        }
        case Action::undo_toolbar: return "toolbar Undo";
        case Action::undo_key: return "Ctrl+Z";
        case Action::redo_toolbar: return "toolbar Redo";
        case Action::pick: return std::string("pick ") + kModels[a.target];
        case Action::tab: return "tab " + std::to_string(a.target);
        case Action::save: return "save";
        case Action::reopen: return "reopen the saved file";
        case Action::toggle_deployment: return "tick/untick Check a deployment";
        case Action::click_away: return "click elsewhere";
    }
    return "?";
}

Action random_action(std::mt19937_64& rng, std::size_t input_count) {
    auto below = [&rng](std::size_t n) { return static_cast<int>(rng() % n); };
    Action a{Action::type};
    const int roll = below(100);
    if (roll < 55) {
        a.kind = Action::type;
        a.target = below(input_count);
        a.end = static_cast<End>(below(10) < 6 ? 0 : 1 + below(3));
    } else if (roll < 63) {
        a.kind = Action::undo_toolbar;
    } else if (roll < 69) {
        a.kind = Action::undo_key;
    } else if (roll < 74) {
        a.kind = Action::redo_toolbar;
    } else if (roll < 80) {
        a.kind = Action::pick;
        a.target = below(std::size(kModels));
    } else if (roll < 84) {
        a.kind = Action::tab;
        a.target = below(5);
    } else if (roll < 89) {
        a.kind = Action::save;
    } else if (roll < 92) {
        a.kind = Action::reopen;
    } else if (roll < 95) {
        a.kind = Action::toggle_deployment;
    } else {
        a.kind = Action::click_away;
    }
    return a;
}

// The text typed by a `type` action: drawn for its field's kind.
void choose_text(std::mt19937_64& rng, Action& a, const std::vector<Input>& inputs) {
    if (a.kind != Action::type) return;
    const bool tokens = inputs.at(static_cast<std::size_t>(a.target)).tokens;
    a.text = tokens ? kTokenTexts[rng() % std::size(kTokenTexts)] : kCountTexts[rng() % std::size(kCountTexts)];
}

QAction* action_with(MainWindow& w, const QKeySequence& key) {
    for (QAction* a : w.findChildren<QAction*>())
        if (a->shortcuts().contains(key)) return a;
    return nullptr;
}

void perform(Harness& h, const Action& a) {
    MainWindow& w = h.w;
    switch (a.kind) {
        case Action::type: {
            const Input& in = h.inputs.at(static_cast<std::size_t>(a.target));
            if (!in.field->isVisibleTo(&w) || !in.field->isEnabled()) return;
            in.edit->setFocus();
            in.edit->selectAll();
            QTest::keyClicks(in.edit, QString::fromStdString(a.text));
            if (a.end == End::enter) QTest::keyClick(in.edit, Qt::Key_Return);
            if (a.end == End::tab) QTest::keyClick(in.edit, Qt::Key_Tab);
            if (a.end == End::escape) QTest::keyClick(in.edit, Qt::Key_Escape);
            break;
        }
        case Action::undo_toolbar:
            if (QAction* undo = action_with(w, QKeySequence::Undo)) undo->trigger();
            break;
        case Action::undo_key: {
            QWidget* focus = QApplication::focusWidget();
            QTest::keyClick(focus ? focus : static_cast<QWidget*>(&w), Qt::Key_Z, Qt::ControlModifier);
            break;
        }
        case Action::redo_toolbar:
            if (QAction* redo = action_with(w, QKeySequence::Redo)) redo->trigger();
            break;
        case Action::pick: {
            QLineEdit* edit = w.inputs()->modelPicker()->lineEdit();
            edit->setFocus();
            edit->selectAll();
            QTest::keyClicks(edit, kModels[a.target]);
            QTest::keyClick(edit, Qt::Key_Return);
            break;
        }
        case Action::tab: w.tabs()->setCurrentIndex(a.target); break;
        case Action::save:
            h.file_before_save = testing::read_all(h.saved_path);
            h.last_save_refused = !w.saveScenarioFile(h.saved_path);
            if (!h.last_save_refused) {
                auto back = read_scenario_file(h.saved_path.toStdString());
                if (back) h.saved = back->scenario;
            }
            break;
        case Action::reopen:
            if (h.saved) w.openScenarioFile(h.saved_path);
            break;
        case Action::toggle_deployment: {
            QGroupBox* box = w.deployment()->enableBox();
            box->setChecked(!box->isChecked());
            break;
        }
        case Action::click_away: w.tabs()->tabBar()->setFocus(); break;
    }
    QCoreApplication::processEvents();
}

// What breaks the invariant after `a`, or nothing.
std::optional<std::string> violation(Harness& h, const Action& a) {
    MainWindow& w = h.w;
    const Scenario& s = w.model()->scenario();
    for (const Input& in : h.inputs) {
        if (!in.field->isVisibleTo(&w)) continue;
        const std::optional<QString> want = in.expected(s);
        if (!want) continue;
        const QString shown = in.edit->text();
        if (shown == *want) continue;
        const bool marked = w.inputs()->marks().isMarked(in.field);
        const QString problems = w.inputs()->errorLabel()->text();
        if (marked && !shown.trimmed().isEmpty() && problems.contains(shown.trimmed())) continue;  // refused, said
        if (marked && shown.trimmed().isEmpty()) continue;
        // Being typed, not yet accepted (an editable box has the focus itself, its line edit the text).
        const QWidget* focus = QApplication::focusWidget();
        if ((focus == in.edit || focus == in.field) && in.edit->isModified()) continue;
        return std::string(in.name) + " shows '" + shown.toStdString() + "' while the scenario holds '" +
               want->toStdString() + "'" + (marked ? " (marked, but its message does not quote it)" : "");
    }
    if (a.kind == Action::save && h.last_save_refused) {
        // Refused only for text a field does not accept, which is then marked and said.
        if (w.inputs()->unaccepted().isEmpty() && w.deployment()->unaccepted().isEmpty())
            return "the save was refused with no field holding refused text";
        if (!w.messages()->isVisible() || !w.messages()->text().startsWith("Not saved"))
            return "the save was refused without a word";
        if (testing::read_all(h.saved_path) != h.file_before_save) return "a refused save changed the file";
    }
    if (a.kind == Action::save && !h.last_save_refused && h.saved && !(*h.saved == s))
        return "the saved file differs from the scenario shown";
    if (a.kind == Action::save && !h.last_save_refused && h.saved) {
        // What was saved is what the fields show: none holds text of its own.
        for (const Input& in : h.inputs) {
            if (!in.field->isVisibleTo(&w)) continue;
            const std::optional<QString> want = in.expected(*h.saved);
            if (want && in.edit->text() != *want)
                return std::string("saved, but ") + in.name + " shows '" + in.edit->text().toStdString() +
                       "' and the file holds '" + want->toStdString() + "'";
        }
    }
    if (a.kind == Action::reopen && h.saved && !(*h.saved == s)) return "reopening did not give the saved state";
    // Whose results: the Overview names the last valid results' model while the inputs need attention.
    if (!w.model()->errors().empty() && !w.overview()->staleLabel()->isVisibleTo(&w) &&
        w.tabs()->currentIndex() == MainWindow::OverviewTab)
        return "the Overview shows the last valid results without saying so";
    return std::nullopt;
}

// Runs `actions` on a fresh window; the index of the first action after which the invariant breaks, and why.
std::optional<std::pair<std::size_t, std::string>> first_violation(const std::vector<Action>& actions) {
    Harness h;
    for (std::size_t i = 0; i < actions.size(); ++i) {
        perform(h, actions[i]);
        if (auto v = violation(h, actions[i])) return std::pair{i, *v};
    }
    return std::nullopt;
}

// The shortest failing sequence found by dropping one action at a time while the sequence still fails.
std::vector<Action> shrink(std::vector<Action> actions) {
    for (bool smaller = true; smaller;) {
        smaller = false;
        for (std::size_t i = 0; i < actions.size() && actions.size() > 1; ++i) {
            std::vector<Action> fewer = actions;
            fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
            if (auto v = first_violation(fewer)) {
                fewer.resize(v->first + 1);
                actions = fewer;
                smaller = true;
                break;
            }
        }
    }
    return actions;
}

// A violation's kind: its text without the values quoted in it, so that each kind is reported once.
std::string kind_of(const std::string& violation) {
    std::string out;
    bool quoted = false;
    for (const char c : violation) {
        if (c == '\'') quoted = !quoted;
        else if (!quoted) out += c;
    }
    return out;
}

TEST(WindowProperties, WhatIsShownIsWhatIsComputed) {
    const std::uint64_t seed = env_number("KVSCOPE_PROPERTY_SEED", 20261206);
    const std::uint64_t sequences = env_number("KVSCOPE_PROPERTY_SEQUENCES", 300);
    constexpr std::size_t kLength = 12;
    std::mt19937_64 rng(seed);
    Harness h;
    std::map<std::string, std::string> found;  // each kind of violation once, with its shortest sequence
    for (std::uint64_t n = 0; n < sequences; ++n) {
        // Each sequence starts where a new window starts: the lesson's model, nothing to undo.
        h.w.model()->replace(default_scenario(catalog()), "Teaching model", {}, "reset");
        h.w.model()->undoStack()->clear();
        h.activate();
        h.w.tabs()->tabBar()->setFocus();
        h.saved.reset();
        std::vector<Action> actions;
        for (std::size_t i = 0; i < kLength; ++i) {
            Action a = random_action(rng, h.inputs.size());
            choose_text(rng, a, h.inputs);
            actions.push_back(a);
            perform(h, a);
            if (auto v = violation(h, a)) {
                if (found.count(kind_of(*v))) break;
                h.w.hide();  // the fresh windows of the shrinking are the active ones meanwhile
                // Again on a fresh window, as short as it still fails.
                const std::vector<Action> shortest = shrink(actions);
                std::string steps;
                for (const Action& s : shortest) steps += "\n  " + describe(s, h.inputs);
                const auto again = first_violation(shortest);
                found[kind_of(*v)] = "sequence " + std::to_string(n) + ": " + (again ? again->second : *v) +
                                     "\nshortest sequence:" + steps;
                break;  // the next sequence
            }
        }
    }
    for (const auto& [kind, report] : found) ADD_FAILURE() << "seed " << seed << ", " << report;
}

}  // namespace
}  // namespace kvscope::ui
