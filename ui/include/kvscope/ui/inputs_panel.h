#pragma once
// The model and workload inputs: a searchable preset picker, config.json import,
// and one field per input. Wrong entries are marked with the reason; the results
// of the last valid inputs stay on screen meanwhile.

#include <QMap>
#include <QWidget>

#include "kvscope/calculator/local_models.h"
#include "kvscope/ui/field_marks.h"

class QCheckBox;
class QComboBox;
class QFrame;
class QLabel;
class QSpinBox;
class QToolButton;

namespace kvscope::ui {

class BigSpinBox;
class ContextInput;
class ScenarioModel;

class InputsPanel : public QWidget {
    Q_OBJECT
public:
    explicit InputsPanel(ScenarioModel* model, QWidget* parent = nullptr);
    ~InputsPanel() override;

    void setImportAction(QAction* action);

    // For tests and keyboard users: the fields by role.
    [[nodiscard]] QComboBox* modelPicker() const { return picker_; }
    [[nodiscard]] BigSpinBox* layersField() const { return layers_; }
    [[nodiscard]] BigSpinBox* queryHeadsField() const { return query_heads_; }
    [[nodiscard]] QComboBox* kvHeadsField() const { return kv_heads_; }
    [[nodiscard]] BigSpinBox* headDimField() const { return head_dim_; }
    [[nodiscard]] BigSpinBox* hiddenSizeField() const { return hidden_; }
    [[nodiscard]] QComboBox* kvDtypeField() const { return kv_dtype_; }
    [[nodiscard]] ContextInput* contextField() const { return context_; }
    [[nodiscard]] BigSpinBox* batchField() const { return batch_; }
    [[nodiscard]] BigSpinBox* blockField() const { return block_; }
    [[nodiscard]] BigSpinBox* tpField() const { return tp_; }
    [[nodiscard]] BigSpinBox* ppField() const { return pp_; }
    [[nodiscard]] QLabel* errorLabel() const { return errors_; }
    // The layer mix ("48 layers: 36 linear attention (gated DeltaNet), 12 full attention") and its edits.
    [[nodiscard]] QLabel* layerMixLabel() const { return layer_mix_; }
    [[nodiscard]] QSpinBox* attentionEveryField() const { return attention_every_; }
    [[nodiscard]] BigSpinBox* windowField() const { return window_; }
    [[nodiscard]] const FieldMarks& marks() const { return marks_; }
    // What fields hold that was not accepted (text that does not read): not in the scenario, so not in a file.
    [[nodiscard]] QStringList unaccepted() const;
    // Accepts the text typed in any field and not yet entered, as Enter would (before a save or an export, so that
    // nothing is written as the old value while the field shows a new one). False when a field refuses its text:
    // unaccepted() then says what.
    bool commitPending();

    // Draws a frame around the input behind `field` and scrolls it into view, as while the Learn tab's
    // matching factor is hovered; Field::none, or a field no input here answers for, clears the frame.
    void highlightField(kvscope::Field field);
    // The input framed now, or null.
    [[nodiscard]] QWidget* highlightedField() const { return highlighted_; }
    // Moves the keyboard focus to the input behind `field`.
    void focusField(kvscope::Field field);

signals:
    // A message for the status line ("No model in the catalog matches …").
    void notice(const QString& text);

private:
    void sync();
    void commitKvHeads();
    // Enter in the model picker: loads the model the typed text names.
    void pickTypedModel();
    // The model in use, by its list entry (or its imported name), in the picker's box.
    void showModelInPicker();
    // Reads the model found on this machine (local_[index]).
    void loadLocalModel(std::size_t index);

public:
    // Looks for the models on this machine again and lists them under the catalog's when they changed (a model
    // downloaded since the window opened); the picker does it whenever it is entered.
    void refreshLocalModels();

private:
    int catalog_items_ = 0;       // the picker's items before "On this machine"
    bool local_listed_ = false;   // the models on this machine have been listed once
    std::string shown_model_id_;  // the model the picker showed last

    ScenarioModel* model_;
    std::vector<LocalModel> local_;  // the models on this machine, listed under the catalog's
    QComboBox* picker_;
    QToolButton* import_;
    QLabel* source_;
    BigSpinBox* layers_;
    BigSpinBox* query_heads_;
    QComboBox* kv_heads_;
    BigSpinBox* head_dim_;
    QLabel* head_dim_hint_;
    BigSpinBox* hidden_;
    QComboBox* kv_dtype_;
    ContextInput* context_;
    BigSpinBox* batch_;
    BigSpinBox* block_;
    BigSpinBox* tp_;
    BigSpinBox* pp_;
    QCheckBox* full_window_;
    QLabel* errors_;
    QLabel* layer_mix_;
    QWidget* layer_mix_row_;
    QWidget* mix_edits_;
    QSpinBox* attention_every_;
    QLabel* attention_every_label_;
    BigSpinBox* window_;
    QLabel* window_label_;
    FieldMarks marks_;
    QFrame* spotlight_;
    QWidget* highlighted_ = nullptr;
    QString kv_heads_problem_;
    [[nodiscard]] QMap<QWidget*, QString> typedProblems() const;
    // The fields of whole numbers and token counts, each a BigSpinBox.
    [[nodiscard]] QList<BigSpinBox*> numberFields() const;
    bool syncing_ = false;
    QMetaObject::Connection focus_watch_;
};

}  // namespace kvscope::ui
