#pragma once
// Will it fit? GPU (catalog or custom), count, engine rule and fraction, weight
// format; the memory of each GPU as a stacked bar, the verdict and by how much,
// max sequences at this context, max context at this batch, decode speed.

#include <QString>
#include <QWidget>

#include <array>
#include <optional>

#include "kvscope/calculator/scenario.h"
#include "kvscope/ui/background.h"
#include "kvscope/ui/field_marks.h"

class QCheckBox;
class QComboBox;
class QBoxLayout;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSlider;

namespace kvscope {
struct Deployment;
}  // namespace kvscope

namespace kvscope::ui {

class DecimalSpinBox;

class GpuMemoryBar;
class PlanView;
class ScenarioModel;

class DeploymentView : public QWidget {
    Q_OBJECT
public:
    explicit DeploymentView(ScenarioModel* model, QWidget* parent = nullptr);
    ~DeploymentView() override;

    [[nodiscard]] QGroupBox* enableBox() const { return box_; }
    [[nodiscard]] QComboBox* gpuField() const { return gpu_; }
    // The GPU's memory and bandwidth, as shown ("79.6 GiB", "3.35 TB/s") and typed.
    [[nodiscard]] QLineEdit* memoryField() const { return memory_; }
    [[nodiscard]] QLineEdit* bandwidthField() const { return bandwidth_; }
    [[nodiscard]] QComboBox* weightsField() const { return weight_dtype_; }
    [[nodiscard]] QComboBox* engineField() const { return engine_; }
    [[nodiscard]] DecimalSpinBox* fractionField() const { return fraction_; }
    [[nodiscard]] QLabel* gpuCountLabel() const { return count_; }
    // vLLM's startup settings (shown for the vllm engine): version, tokens and sequences per step, CUDA graphs.
    [[nodiscard]] QComboBox* vllmVersionField() const { return vllm_version_; }
    [[nodiscard]] QLineEdit* vllmTokensField() const { return vllm_tokens_; }
    [[nodiscard]] QLineEdit* vllmSequencesField() const { return vllm_seqs_; }
    [[nodiscard]] QCheckBox* vllmGraphsField() const { return vllm_graphs_; }
    [[nodiscard]] QCheckBox* mtpField() const { return mtp_; }
    // llama.cpp's settings (shown for the llama.cpp engine): the micro-batch and flash attention.
    [[nodiscard]] QLineEdit* ubatchField() const { return ubatch_; }
    [[nodiscard]] QLineEdit* gpuLayersField() const { return gpu_layers_; }
    [[nodiscard]] QSlider* gpuLayersSlider() const { return layers_slider_; }
    [[nodiscard]] const GpuMemoryBar* hostBar() const { return host_bar_; }
    [[nodiscard]] QCheckBox* flashAttentionField() const { return flash_attn_; }
    // The host of a model llama.cpp splits: its RAM, its memory's kind (the bandwidth a step reads it at), the
    // cache kept there (--no-kv-offload) and the blocks whose experts stay there (--n-cpu-moe).
    [[nodiscard]] QLineEdit* hostMemoryField() const { return host_memory_; }
    [[nodiscard]] QComboBox* hostPlatformField() const { return host_platform_; }
    // True while "This computer (measured)" reads this machine's memory, on a thread of its own (about a second).
    [[nodiscard]] bool measuringHost() const { return host_reader_.running(); }
    // Why the last reading was not applied (shown beside the box as it arrives); empty when it was.
    [[nodiscard]] const QString& hostNotice() const { return host_notice_; }
    [[nodiscard]] QCheckBox* cacheInRamField() const { return cache_in_ram_; }
    [[nodiscard]] QLineEdit* expertsInRamField() const { return cpu_moe_; }
    // What fields hold that was not accepted (text that does not read): not in the scenario, so not in a file.
    [[nodiscard]] QStringList unaccepted() const;
    [[nodiscard]] const FieldMarks& marks() const { return marks_; }
    // Accepts the text typed in any field and not yet entered, as Enter would (InputsPanel::commitPending); false
    // when a field refuses its text.
    bool commitPending();
    // TensorRT-LLM's max_num_tokens (shown for the tensorrt-llm engine).
    [[nodiscard]] QLineEdit* trtllmTokensField() const { return trtllm_tokens_; }
    // A separate draft model (--draft): none, a catalog model, or a file; and how vLLM serves it (--draft-method).
    [[nodiscard]] QComboBox* draftField() const { return draft_; }
    [[nodiscard]] QComboBox* draftMethodField() const { return draft_method_; }
    // Sets the draft `spec` names — a catalog id (the list's items) or a file or folder (config.json, model folder,
    // GGUF; "From a file…" after its dialog) — in place of the MTP layers; one that cannot be read leaves the
    // deployment as it was and says why under the form.
    void chooseDraft(const QString& spec);
    [[nodiscard]] PlanView* plan() const { return plan_; }

signals:
    // A message for the status line.
    void notice(const QString& text);

public:
    [[nodiscard]] QLabel* verdictLabel() const { return verdict_; }
    [[nodiscard]] QLabel* figuresLabel() const { return figures_; }
    [[nodiscard]] GpuMemoryBar* bars() const { return bars_; }
    [[nodiscard]] QLabel* staleLabel() const { return stale_; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void sync();
    void refreshResults();
    void commitCustom();
    // Forgets what the fields hold of the user's own (refused or not yet entered): a deployment ticked or removed, a
    // catalog GPU chosen; the next sync shows the scenario's values in them.
    void dropTypedText();
    void commitVllmBatch();
    // A count whose empty text means the engine's default (`empty_means`, "llama.cpp's 512"), kept in the
    // deployment's `slot`: one undoable edit named `what`, or the field keeps its text and says what is wrong.
    void commitGpuLayers();
    void setGpuLayers(int n);  // from the slider: its right end is all
    void applyGpuLayers(std::optional<std::uint64_t> value,
                        bool automatic);  // llama.cpp's -ngl, as --gpu-layers reads it
    void commitEngineCount(QLineEdit* field, const QString& what, const QString& empty_means,
                           std::uint64_t& (*slot)(Deployment&));
    void commitHostMemory();                                    // as --host-memory reads it; empty: not checked
    void measureThisHost();                                     // "This computer (measured)": on host_reader_
    void syncLlamaCpp(const Scenario& s, const Deployment& d);  // sync's llama.cpp rows
    void syncEngineSettings(const Scenario& s, const Deployment& d, bool on);  // sync's vLLM and SGLang rows
    void showText(QLineEdit* field, const QString& text);                      // the scenario's text, unless typed
    // The fields that take typed text, for Esc, a dropped scenario and a row the engine hides.
    [[nodiscard]] std::array<QLineEdit*, 9> textFields() const;

    ScenarioModel* model_;
    QGroupBox* box_;
    QFormLayout* form_ = nullptr;  // the box's rows; some shown for one engine only
    QComboBox* gpu_;
    QLabel* count_;
    QLineEdit* memory_;
    QLineEdit* bandwidth_;
    QComboBox* engine_;
    DecimalSpinBox* fraction_;
    QComboBox* weight_dtype_;
    QComboBox* vllm_version_;
    QLineEdit* vllm_tokens_;
    QLineEdit* vllm_seqs_;
    QCheckBox* vllm_graphs_;
    QCheckBox* mtp_;
    QLineEdit* ubatch_;
    QLineEdit* gpu_layers_;   // llama.cpp's -ngl: empty for all
    QSlider* layers_slider_;  // the same, from none to all
    QWidget* gpu_layers_row_ = nullptr;
    QCheckBox* flash_attn_;
    QLineEdit* host_memory_;    // the host's RAM: empty when not given
    QComboBox* host_platform_;  // the host's memory, from offload.h's table (a bandwidth given: its own item)
    Background host_reader_;    // measuring this computer as the host
    QString host_notice_;
    QCheckBox* cache_in_ram_;  // --no-kv-offload
    QLineEdit* cpu_moe_;       // --n-cpu-moe: empty for none
    QLineEdit* trtllm_tokens_;
    QComboBox* draft_;
    QComboBox* draft_method_;
    QLabel* rule_;
    QLabel* verdict_;
    GpuMemoryBar* bars_;
    GpuMemoryBar* host_bar_;  // the host's RAM of a model llama.cpp splits
    QLabel* figures_;
    QLabel* errors_;
    QLabel* stale_;  // a StaleNote: whose the figures are while the inputs need attention
    PlanView* plan_;
    QBoxLayout* columns_ = nullptr;
    FieldMarks marks_;
    QMap<QWidget*, QString> typed_;
    bool syncing_ = false;
    bool had_deployment_ = false;  // whether the scenario had a deployment at the last sync
};

}  // namespace kvscope::ui
