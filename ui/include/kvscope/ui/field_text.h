#pragma once
// The one rule every input of the window follows: it shows its scenario value — or text of the user's own, which
// is either refused (the field marked, its message quoting that text) or still being typed (changed, not yet
// accepted, and committed or refused before anything is saved or exported). A change of the scenario's value (an
// undo or redo, a model loaded, a file opened, the recovery restored) always wins over text of the user's own.
// BigSpinBox follows it with its own value; the plain line edits of the panels follow it through this function.

#include <functional>

class QLineEdit;
class QString;
class QWidget;

namespace kvscope::ui {

// Shows `text`, the scenario's value as the field writes it, in `edit` unless the edit holds text of the user's own
// (`refused`, or changed and not yet accepted) and the value is the one it showed before. True when the value
// changed since the edit last showed it: the caller then forgets what it had refused of the edit's text.
bool show_scenario_text(QLineEdit* edit, const QString& text, bool refused);
// The edit's text of the user's own is dropped (a choice elsewhere replaced what it was for: a catalog GPU in place of
// a mistyped memory size): the next show_scenario_text writes the scenario's text whatever it was.
void forget_user_text(QLineEdit* edit);

// Esc in `watched` (a line edit, or an editable box that hands its keys to one) takes back what the user typed there,
// as it does in every number field (BigSpinBox): `take_back` forgets what the panel refused of that text and shows
// the scenario's value again, and says whether there was anything to take back (else the key goes on as usual).
void take_back_on_escape(QWidget* watched, std::function<bool()> take_back);

}  // namespace kvscope::ui
