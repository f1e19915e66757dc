#pragma once
// The probe: a real KV cache allocated on this machine, its size checked against the
// calculator, one decode step's attention timed against a read-bandwidth ceiling
// measured in the same run, and the stopwatch (a small transformer generating with
// and without its cache). No Qt. Every failure is a result with a status and a
// message, never an exception across this interface.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/workload.h"

namespace kvscope::probe {

enum class Status { ok, cancelled, out_of_memory, no_device, driver_mismatch, invalid_input, failed };
std::string_view to_string(Status status);

struct DeviceInfo {
    std::string backend;      // the registry's name: "cpu", "cuda"
    std::string label;        // for people: "CPU", "CUDA GPU"
    bool available = true;    // false: `note` says why
    bool host_memory = true;  // the cache lives in host memory (measured as resident growth), else on the device
    std::string units_name = "threads";  // what compute_units counts: "threads", "SMs"
    std::string name;
    std::uint64_t total_bytes = 0;
    std::uint64_t free_bytes = 0;
    unsigned compute_units = 0;     // CPU threads or GPU SMs
    std::uint64_t cache_bytes = 0;  // last-level cache (GPU: L2)
    unsigned bus_width_bits = 0;    // GPU only
    double memory_clock_mhz = 0;    // GPU only
    double theoretical_gbps = 0;    // GPU: 2 × clock × bus width / 8; 0 when unknown
    double measured_gbps = 0;       // CPU (list_devices): a read-only pass over 256 MiB, all threads
    std::string note;               // e.g. why a backend is unavailable
};

// How a caller watches and stops a run. All members are optional.
struct Control {
    const std::atomic<bool>* cancel = nullptr;
    // fraction 0…1 and what is happening ("timing attention, run 3 of 10")
    std::function<void(double, const std::string&)> progress;
    // Refuse to allocate more than this many bytes (0 = what the device has free).
    std::uint64_t memory_limit_bytes = 0;
    // Stopwatch: called after every generated token (cached run first), for live charts.
    std::function<void(bool cached, double ms)> stopwatch_step;

    [[nodiscard]] bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
    void report(double fraction, const std::string& what) const {
        if (progress) progress(fraction, what);
    }
};

// What to put on the device: a model's cache at a context and batch (one device: no TP/PP).
struct ProbeRequest {
    Architecture arch;
    KvDtype dtype = KvDtype::fp16;  // can_store()
    Workload workload;
    int timing_runs = 10;  // after one warm-up run
    // Size of the read-only pass that measures the bandwidth ceiling (0: several times the
    // last-level cache, at least 256 MiB and at most 1 GiB).
    std::uint64_t ceiling_bytes = 0;
};

// One tensor of the cache: K or V (or an MLA latent) of one layer for one sequence, or one of the two
// tensors of a recurrent layer's state (its convolution state, its SSM state) for one sequence.
struct KvTensor {
    std::uint64_t layer = 0;
    bool is_value = false;
    bool is_state = false;  // recurrent state: allocated and measured, not attended
    std::uint64_t sequence = 0;
    std::uint64_t tokens = 0;    // stored, after the window and block rounding
    std::uint64_t attended = 0;  // read by one decode step: the window's tokens, not the block padding
    std::uint64_t bytes = 0;
    bool is_indexer = false;  // DeepSeek-V3.2's indexer keys beside the latent: allocated and measured, not attended
    // The probe's attention reads this tensor (and its value tensor): the keys of a layer that caches K and V.
    [[nodiscard]] bool is_key() const { return !is_value && !is_state && !is_indexer; }
};

// The formats the probe can store and compute with: fp32, fp16, bf16, fp8_e4m3, fp8_e5m2 (per-tensor scale, as
// vLLM stores them: the scale lives beside the layer, not in the cache), int8 (TensorRT-LLM's: one byte a value,
// per-tensor scale), q8_0 and q4_0 (llama.cpp's blocks). The CUDA backend's probe stores them all; its decode
// step stores them all too, each new K and V row rounded as the CPU backend rounds it.
bool can_store(KvDtype dtype);
// "fp32, fp16, …" for messages.
std::string storable_list();

// The calculator's layout as a list of allocations (KV cache, then recurrent state); their sum is the
// predicted bytes. The attention timing needs one head layout: layers with heads of their own are refused.
// A batch whose list would pass kMaxProbeTensors is refused (on the batch) before the list is built.
Result<std::vector<KvTensor>> kv_tensors(const ProbeRequest& request);
// How many tensors kv_tensors gives, with its checks, without building the list: what a backend weighs against
// its memory before it builds one. 4,194,304 buffers (128 layers x 2 x 16,384 sequences) are far more than a
// probe that fits in memory allocates.
constexpr std::uint64_t kMaxProbeTensors = 1ull << 22;
Result<std::uint64_t> kv_tensor_count(const ProbeRequest& request);

struct AllocationCheck {
    std::uint64_t predicted_bytes = 0;        // the calculator's total: KV cache + recurrent state
    std::uint64_t predicted_state_bytes = 0;  // the recurrent state in it
    std::uint64_t requested_bytes = 0;        // the sum of the allocations made
    std::uint64_t measured_bytes = 0;         // what the device lost (GPU: cudaMemGetInfo drop; CPU: resident growth)
    std::uint64_t granularity_bytes = 0;
    std::string granularity_source;  // who said so: the driver, the system's page size, or the documentation
    std::uint64_t allocations = 0;
    std::uint64_t context_bytes = 0;    // runtime context creation, reported on its own
    std::uint64_t workspace_bytes = 0;  // scratch for the attention (scores, outputs), on its own
};

struct AttentionTiming {
    double median_ms = 0;  // one decode step, every layer and sequence
    double min_ms = 0;
    int runs = 0;
    unsigned threads = 0;
    std::uint64_t kv_bytes_read = 0;  // per step: every stored K and V byte once
    double kv_read_gbps = 0;
    double ceiling_gbps = 0;  // a large read-only pass measured in the same run
    double fraction_of_ceiling = 0;
    double single_thread_gbps = 0;    // CPU only: the same step on one thread
    double max_rel_error = 0;         // against a float64 reference on the same random inputs
    bool cache_resident = false;      // the KV fits in the last-level cache: figures are optimistic
    std::uint64_t heads_per_row = 0;  // query heads each cached row is read for: a GQA group; all of them for MLA
    bool tensor_cores = false;        // the GPU's MMA kernel ran (a group's heads as the rows of its tiles)
    std::string kernel;               // how the step was computed (tiles, splits, instructions)
};

// Where so many query heads read each cached row (16 or more: MLA's one latent for every head, a GQA group as wide)
// that a kernel of scalar arithmetic (the CPU's, the GPU's CUDA-core kernels) is bound by it, not by reading the
// cache: a sentence saying that the fraction of the ceiling then measures the kernel, not the memory; empty
// otherwise, and for the GPU's tensor-core kernel, which is built for such groups.
std::string arithmetic_bound_note(const AttentionTiming& at);

struct ProbeReport {
    Status status = Status::ok;
    std::string message;
    DeviceInfo device;
    AllocationCheck allocation;
    AttentionTiming attention;
};

// The most tokens the stopwatch generates: the teaching model's positions.
constexpr int kMaxStopwatchTokens = 4096;

struct StopwatchRequest {
    int tokens = 128;  // generated tokens, 1 … kMaxStopwatchTokens
    std::string prompt = "the cache";
};

struct StopwatchReport {
    Status status = Status::ok;
    std::string message;
    DeviceInfo device;
    std::vector<double> cached_ms;    // per generated token
    std::vector<double> uncached_ms;  // per generated token, recomputing the whole prefix
    std::string text_cached, text_uncached;
    bool tokens_identical = false;
    double max_logit_diff = 0;
    double speedup = 0;        // total time recomputing over total time with the cache
    double speedup_bound = 0;  // the calculator's FLOP ratio for the same model and tokens
};

// Why the stopwatch's measured ratio stays far below the calculator's bound, when it does (under half of
// it): a fixed cost per step (kernel launches on a GPU, handing work to threads on a CPU) bounds the cached
// steps at this small model's size, not the arithmetic the bound counts — said with the figures. Either the
// cached steps cost about the same from the first tokens to the last, or they grow but a recomputed step late
// in the run takes under a tenth of the bound's ratio of a cached one's time. Empty otherwise, and for runs of
// fewer than 16 tokens (too few to tell). The CLI, the Probe tab and the Learn page show the same words.
std::string stopwatch_gap_note(const StopwatchReport& report);

// One decode step of the whole model (probe --step): random weights of the model's exact shapes
// (fixed seeds, never zero), every sequence attending its allocated cache at the context. Per layer:
// norm, QKV projection, RoPE, the new token's K and V written into the cache, attention, output
// projection, norm, MLP (MoE: the router picks each token's top-k experts, and the experts the batch
// chose are the ones read); then the final norm and the LM head.
struct StepRequest {
    Architecture arch;
    KvDtype kv_dtype = KvDtype::fp16;      // the cache: any format can_store takes
    KvDtype weight_dtype = KvDtype::bf16;  // the weights: fp32, fp16, bf16 or fp8_e4m3 (can_multiply)
    Workload workload;                     // `batch` sequences, each attending `context_tokens`
    int timing_runs = 3;                   // after one warm-up step
    std::uint64_t ceiling_bytes = 0;       // the read pass that measures the bandwidth (0: as the probe's)
};

struct StepReport {
    Status status = Status::ok;
    std::string message;
    DeviceInfo device;
    double step_ms = 0;  // median, the whole model (scaled from the layers run when not all fit)
    double min_step_ms = 0;
    int runs = 0;
    std::uint64_t layers_run = 0, layers_total = 0;
    bool scaled = false;                   // only `layers_run` layers fit; their time was scaled to all
    std::uint64_t weights_bytes_read = 0;  // per step, whole model: the matrices the batch multiplies through
    std::uint64_t kv_bytes_read = 0;       // per step, whole model: every sequence's attended cache
    std::uint64_t experts_read = 0;        // MoE: experts the batch chose, summed over the layers (scaled)
    double weights_ms = 0, attention_ms = 0, other_ms = 0;  // the breakdown of step_ms
    // invalid_input because this device cannot multiply the weights' format (the message says why: fp8 weights
    // before compute capability 8.9); bf16 weights would run.
    bool weight_dtype_refused = false;
    double ceiling_gbps = 0;                 // read bandwidth measured in the same run
    double predicted_step_ms = 0;            // the calculator's floor (decode_estimate) on that bandwidth
    std::uint64_t predicted_bytes_read = 0;  // the bytes that floor reads
    double max_rel_error = -1;               // logits against float64 of the same layers; -1: not checked
    std::string kernel;                      // how the step was computed
    [[nodiscard]] double tokens_per_s() const { return step_ms > 0 ? 1000.0 / step_ms : 0; }  // per sequence
    [[nodiscard]] double predicted_tokens_per_s() const {
        return predicted_step_ms > 0 ? 1000.0 / predicted_step_ms : 0;
    }
};

// The weight formats the decode step multiplies (fp32, fp16, bf16, fp8_e4m3; a device may still refuse one:
// StepReport::weight_dtype_refused).
bool can_multiply(KvDtype weight_dtype);
// The step to run instead when the device refused the weights' format: the same with bf16 weights; nullopt when
// `report` is no such refusal (or the weights were bf16 already).
std::optional<StepRequest> with_bf16_weights_if_refused(const StepRequest& request, const StepReport& report);

// A finished step as the store keeps it (measured_step.h), dated today: the catalog GPU the device is
// (gpu_for_device over `gpus`; none for a CPU), and the key of the scenario it ran.
MeasuredStep measured_step_of(const StepRequest& request, const StepReport& report, const std::string& model_id,
                              const std::vector<GpuSpec>& gpus);

class Backend {
public:
    virtual ~Backend() = default;
    [[nodiscard]] virtual DeviceInfo device() const = 0;
    virtual ProbeReport probe(const ProbeRequest& request, const Control& control) = 0;
    virtual StopwatchReport stopwatch(const StopwatchRequest& request, const Control& control) = 0;
    // A backend without its own step says so (status failed, and which backend runs it).
    virtual StepReport step(const StepRequest& request, const Control& control);
};

// The backends this build has, each chosen by name: kvscope/probe/plugins.h.

}  // namespace kvscope::probe
