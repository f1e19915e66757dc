#pragma once
// Decode steps measured on this machine (kvscope-cli probe --step, the Probe tab's "Time a decode
// step"), remembered so that `fit` and the Deployment tab show the measured figure beside the
// estimate when the same scenario was measured on the deployment's GPU.
//
// The store is one small JSON file in the user folder (measured_steps_path),
// the newest measurement per (device, scenario), at most kMaxMeasuredSteps of them. Writes read the
// file again first and replace it whole (write then rename), so two windows and the CLI that keep
// steps one after another keep each other's entries, and a reader never sees half a file. (Two writes
// in the same instant can still lose one entry: there is no lock. Entries this version cannot read, a
// newer version's formats say, are left out when it rewrites the file.)

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/json_members.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope {

constexpr std::size_t kMaxMeasuredSteps = 200;

struct MeasuredStep {
    std::string key;       // step_key() of the scenario that ran
    std::string model_id;  // for people reading the file
    std::uint64_t context_tokens = 0;
    std::uint64_t batch = 0;
    KvDtype kv_dtype = KvDtype::fp16;
    KvDtype weight_dtype = KvDtype::bf16;
    std::string backend;           // "cpu", "cuda"
    std::string device;            // the device's own name: "NVIDIA H200"
    std::string gpu_id;            // the catalog GPU that device is (gpu_for_device); empty for a CPU or an unknown GPU
    std::string measured_on;       // UTC date, "2026-12-01"
    double step_ms = 0;            // median, the whole model
    double predicted_step_ms = 0;  // the calculator's floor on the bandwidth measured in the same run
    double ceiling_gbps = 0;       // that bandwidth
    std::uint64_t layers_run = 0, layers_total = 0;
    bool scaled = false;  // layers run in part, their time scaled to the whole model
    friend bool operator==(const MeasuredStep&, const MeasuredStep&) = default;
    [[nodiscard]] double tokens_per_s() const { return step_ms > 0 ? 1000.0 / step_ms : 0; }  // per sequence
};

// What a decode step's time depends on: the architecture (every member), the cache and weight
// formats, the context and the batch, and the paged block and window settings. Equal keys: the same
// step. A 16-digit hex hash of those, stable across runs and machines.
std::string step_key(const Scenario& s, KvDtype weight_dtype);

// The catalog GPU a probed device is, from the device's own name ("NVIDIA H100 80GB HBM3",
// "NVIDIA A100-SXM4-40GB", "NVIDIA GeForce RTX 4090") and its memory: every word of the catalog id
// but its form factor and memory size must be a word of the name; among several, the form factor
// (PCIe or not) and then the nearest memory size decide. nullopt when none is.
std::optional<std::string> gpu_for_device(const std::vector<GpuSpec>& gpus, std::string_view device_name,
                                          std::uint64_t total_bytes);

// The measurement of this scenario on its deployment's GPU, when there is one: the same step_key,
// a GPU backend on that catalog GPU, and a deployment that runs on one GPU (the probe runs one).
std::optional<MeasuredStep> find_measured_step(const std::vector<MeasuredStep>& steps, const Scenario& s);

// One line for `fit` and the Deployment tab: "9.80 ms per step → 102.0 tokens/s per sequence, 1.24× the
// floor (probe --step on NVIDIA H200, 2026-12-01)", saying when layers were run in part and scaled.
std::string measured_step_text(const MeasuredStep& m, const DecodeEstimate& estimate);

json::Value measured_step_json(const MeasuredStep& m);
// Its members as that JSON declares them, each once (json_members.h).
std::vector<DeclaredMember> declared_members(const MeasuredStep& m);
// The store's text; entries that cannot be read are skipped (a file from a newer version stays usable).
std::vector<MeasuredStep> measured_steps_from_json(std::string_view text);

// Today in UTC, "2026-12-01": the measured_on of a new entry.
std::string utc_date_today();

// The store in a user folder (default_user_folder(), or --data-dir): FOLDER/measured-steps.json; empty
// when the folder is.
std::string measured_steps_path(const std::string& folder);
// The entries in the file; none when it is missing or unreadable.
std::vector<MeasuredStep> read_measured_steps(const std::string& path);
// Adds `m` to the file (replacing the entry for the same device and key), creating its folder;
// an error with the path and the reason when it cannot be written. The file keeps the newest
// kMaxMeasuredSteps entries, those this version cannot read among them (a newer version's). Writers
// take turns on FILE.lock, so two probes that finish at once both keep their entries.
Result<std::monostate> remember_measured_step(const std::string& path, const MeasuredStep& m);

// The file read again only when it changed (its time and size), for views that look at every change.
class MeasuredStepStore {
public:
    explicit MeasuredStepStore(std::string path) : path_(std::move(path)) {}
    const std::vector<MeasuredStep>& entries();
    // Reads the file again at the next entries(), even if its time and size look unchanged.
    void reload();
    // Whether the file's time or size differs from when entries() last read it (another program wrote it).
    [[nodiscard]] bool stale() const;
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
    std::vector<MeasuredStep> entries_;
    std::optional<std::pair<std::int64_t, std::uint64_t>> seen_;  // time and size last read
};

}  // namespace kvscope
