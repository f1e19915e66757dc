#pragma once
// Serving real traffic (kvscope/calculator/simulate.h): the requests — described, or a trace file dropped or chosen —
// served by vLLM's scheduler on the deployment's GPU; the answers against latency targets, the KV cache in use over
// time beside the budget and the worst case, and latency against request rate. The same figures as kvscope-cli
// simulate for the same inputs. Runs off the GUI thread with progress and Cancel; the inputs are remembered.

#include <QWidget>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "kvscope/calculator/traffic_answer.h"

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QChart;
class QValueAxis;

namespace kvscope::ui {

class BigSpinBox;
class DecimalSpinBox;
class ScenarioModel;

class TrafficView : public QWidget {
    Q_OBJECT
public:
    // `remember`: the inputs are restored from the settings and saved there (a window that restores its session;
    // never one made for exports, screenshots or tests).
    explicit TrafficView(ScenarioModel* model, bool remember = false, QWidget* parent = nullptr);
    ~TrafficView() override;
    TrafficView(const TrafficView&) = delete;
    TrafficView& operator=(const TrafficView&) = delete;

    // How the window accepts text typed in its other tabs' fields and not yet entered, before a run: what it still
    // refuses (a field's name and why), empty when every field holds a value (MainWindow sets it).
    void setCommitTyped(std::function<QStringList()> commit) { commit_typed_ = std::move(commit); }
    // The question the fields ask now.
    [[nodiscard]] TrafficQuestion question() const;
    [[nodiscard]] bool running() const { return worker_.joinable() && !done_; }
    // The last answer shown, and the scenario it is of.
    [[nodiscard]] const std::optional<TrafficAnswer>& answer() const { return answer_; }

    [[nodiscard]] BigSpinBox* requestsField() const { return requests_; }
    [[nodiscard]] QCheckBox* allAtOnceBox() const { return all_at_once_; }
    [[nodiscard]] DecimalSpinBox* rateField() const { return rate_; }
    [[nodiscard]] BigSpinBox* inputTokensField() const { return input_; }
    [[nodiscard]] BigSpinBox* outputTokensField() const { return output_; }
    [[nodiscard]] BigSpinBox* sharedPrefixField() const { return shared_prefix_; }
    [[nodiscard]] QSpinBox* prefixGroupsField() const { return groups_; }
    [[nodiscard]] QLineEdit* traceField() const { return trace_; }
    [[nodiscard]] QCheckBox* lengthsOnlyBox() const { return lengths_only_; }
    [[nodiscard]] QCheckBox* ttftBox() const { return ttft_on_; }
    [[nodiscard]] DecimalSpinBox* ttftField() const { return ttft_; }
    [[nodiscard]] QCheckBox* tpotBox() const { return tpot_on_; }
    [[nodiscard]] DecimalSpinBox* tpotField() const { return tpot_; }
    [[nodiscard]] QPushButton* simulateButton() const { return run_; }
    // How many GPUs the traffic needs at its rate: each layout the plan finds, in the fewest replicas meeting the
    // target (serve_plan), as kvscope-cli plan with a target says.
    [[nodiscard]] QPushButton* planButton() const { return plan_; }
    [[nodiscard]] QComboBox* routerField() const { return router_; }
    [[nodiscard]] QLabel* planLabel() const { return plan_results_; }
    [[nodiscard]] const std::optional<std::vector<LayoutService>>& layouts() const { return layouts_; }
    [[nodiscard]] QPushButton* cancelButton() const { return cancel_; }
    [[nodiscard]] QProgressBar* progress() const { return progress_; }
    [[nodiscard]] QLabel* statusLabel() const { return status_; }
    [[nodiscard]] QLabel* resultsLabel() const { return results_; }
    // Whose the figures are, and, once the scenario has changed since, that they are not the current one's.
    [[nodiscard]] QLabel* simulatedForLabel() const { return simulated_for_; }
    [[nodiscard]] QLineSeries* kvSeries() const { return kv_used_; }
    [[nodiscard]] QLineSeries* unsharedSeries() const { return kv_unshared_; }
    [[nodiscard]] QLineSeries* budgetSeries() const { return kv_budget_; }
    [[nodiscard]] QLineSeries* worstCaseSeries() const { return kv_worst_; }
    [[nodiscard]] QLineSeries* ttftCurve() const { return ttft_curve_; }
    [[nodiscard]] QLineSeries* tpotCurve() const { return tpot_curve_; }

public slots:
    void simulate();
    void servePlan();
    void cancel();

signals:
    void finished();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    // The traffic's fields, the buttons and the progress, in a group; then the page: the fields beside the answers,
    // the charts under both.
    QGroupBox* buildInputs();
    void layOut(QGroupBox* inputs);
    void buildCharts();
    void show(const Result<TrafficAnswer>& answer, const Scenario& of, const TrafficQuestion& asked);
    // The answer's rows and charts, in the window's units (again when they change).
    void render(const TrafficAnswer& a, const TrafficQuestion& asked);
    // A run that gave no answer: the status says why, or that it was cancelled (`cancelled`), and the run is over;
    // false when there is an answer.
    template <class T>
    bool saidWhyNot(const Result<T>& result, const QString& cancelled, const QString& verb);
    void showPlan(const Result<std::vector<LayoutService>>& layouts, const Scenario& of, const TrafficQuestion& asked);
    // The scenario and question when both can be asked now; else nullopt, the status saying why (`verb`: what was
    // not done, "Not simulated").
    std::optional<std::pair<Scenario, TrafficQuestion>> ready(const QString& verb);
    // Runs `work` in the worker thread with progress and Cancel, then `done` on the GUI thread.
    void start(const QString& doing, std::function<std::function<void()>(const SimulationProgress&)> work);
    void showWhose();
    void saveInputs() const;
    void restoreInputs();
    void join();

    ScenarioModel* model_;
    bool remember_;
    BigSpinBox *requests_, *input_, *output_, *shared_prefix_, *concurrency_;
    QSpinBox *groups_, *turns_, *seed_;
    DecimalSpinBox *rate_, *input_range_, *output_range_, *ttft_, *tpot_;
    QCheckBox *all_at_once_, *prefix_caching_, *lengths_only_, *ttft_on_, *tpot_on_;
    QComboBox *percentile_, *router_;
    QLineEdit* trace_;
    QPushButton *run_, *plan_, *cancel_;
    QProgressBar* progress_;
    QLabel *status_, *results_, *plan_results_, *simulated_for_;
    QChart *kv_chart_ = nullptr, *curve_chart_ = nullptr;
    QLineSeries *kv_used_, *kv_unshared_, *kv_budget_, *kv_worst_, *ttft_curve_, *tpot_curve_, *target_line_;
    QValueAxis *kv_x_, *kv_y_, *rate_x_, *ms_y_;

    std::optional<TrafficAnswer> answer_;
    std::optional<std::vector<LayoutService>> layouts_;
    std::optional<Scenario> planned_for_;
    QString plan_html_;
    std::optional<Scenario> answered_for_;
    std::optional<TrafficQuestion> asked_;
    std::function<QStringList()> commit_typed_;
    std::thread worker_;
    std::shared_ptr<std::atomic<bool>> stop_;
    std::atomic<bool> done_{true};
};

}  // namespace kvscope::ui
