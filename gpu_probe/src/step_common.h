#pragma once
// What every backend's decode step (probe --step) shares: the shapes a layer multiplies through, what
// the step refuses and why, and the report's prediction, median and closing message. The CPU step is
// step.cpp; the CUDA step is gpu_probe/cuda/cuda_step.cu.

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/probe/probe.h"

namespace kvscope::probe::step {

// The weight formats the steps multiply: fp32, fp16, bf16, and fp8_e4m3 as vLLM's and TensorRT-LLM's fp8
// checkpoints store it (one byte a weight, a float32 scale per tensor; the probe's random weights lie within ±1,
// so their scale is 1 and no scale is stored or read).
bool weight_format(KvDtype d);

// The shapes one layer multiplies through.
struct Dims {
    std::uint64_t hidden = 0, q_heads = 0, kv_heads = 0, dk = 0, dv = 0, intermediate = 0, vocab = 0;
    bool gated = true;
    std::uint64_t experts = 0, top_k = 0, expert_intermediate = 0, shared = 0;
    [[nodiscard]] std::uint64_t qkv_rows() const { return q_heads * dk + kv_heads * dk + kv_heads * dv; }
    [[nodiscard]] std::uint64_t up_rows(std::uint64_t inter) const { return gated ? 2 * inter : inter; }
};

// Whether layer l runs the experts (router, chosen experts, shared experts) rather than the dense MLP.
bool expert_layer(const Architecture& a, const Dims& d, std::uint64_t l);

// The model's dimensions, or why the step cannot run it (empty when it can): a weight format it does not
// multiply, an invalid architecture, MLA, layers that do not attend with a cache of their own, missing
// sizes, an odd key head dimension. The cache format is each backend's to check.
std::string dims_of(const StepRequest& req, Dims& d);

// The cache the step allocates: the probe's tensors (kv_tensors) for the step's model, format and workload.
Result<std::vector<KvTensor>> cache_tensors(const StepRequest& req);
// How many buffers that is (kv_tensor_count), without the list.
Result<std::uint64_t> cache_tensor_count(const StepRequest& req);
// The whole cache's checks, as probe makes them (a context whose cache passes 2^64 bytes is no input, said so
// before any layer is weighed against the memory); empty when it passes.
std::string whole_cache_problem(const StepRequest& req);

StepReport fail(StepReport r, Status s, std::string message);
double median_of(std::vector<double> v);
// The step with `logits` failed when one is not a finite number: a step that overflowed times nothing real.
// Empty when all are numbers.
std::string non_finite_logits(const std::vector<float>& logits);
// A step of an expert model run by layers whose layers run are all dense (its first_k_dense layers) would time
// none of its experts and scale that to every layer: why it is refused, or empty.
std::string experts_not_run(const StepRequest& req, std::uint64_t layers_run);
std::string ms_text(double ms);  // "12.3 ms", "4.56 ms"

// The calculator's floor for the same scenario on the bandwidth measured in the run (r.ceiling_gbps) of a
// device of `memory_bytes`: r.predicted_step_ms and r.predicted_bytes_read.
void predict(StepReport& r, const StepRequest& req, std::uint64_t memory_bytes);

// "decode step 12.3 ms (81.3 tokens/s per sequence) against the calculator's floor of …", saying when
// layers were run in part and scaled.
std::string finished_message(const StepReport& r);

}  // namespace kvscope::probe::step
