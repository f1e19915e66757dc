// probe --step: one decode step of the whole model on the CPU backend, timed and checked, beside the
// calculator's prediction for the same scenario on the bandwidth measured in the same run.
//
// The layer is the Llama layer (transformers' modeling_llama.py, which Mistral, Qwen2/3 and their MoE
// variants follow): RMSNorm, fused QKV projection, RoPE (theta 10,000; the rotation's cost does not depend
// on theta), attention over the cache with the new token's K and V written into it, output projection,
// residual; RMSNorm, gated MLP (SiLU(gate) · up, then down) or, on expert layers, the router's softmax
// top-k over the experts (Mixtral's modeling_mixtral.py: the chosen weights renormalised) plus any
// shared experts, residual. Then the final RMSNorm and the LM head. Norm weights are 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <numeric>
#include <optional>

#include "backends.h"
#include "cpu_attention.h"
#include "cpu_backend.h"
#include "cpu_formats.h"
#include "cpu_kernels.h"
#include "host_memory.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"
#include "step.h"
#include "step_common.h"
#include "step_reference.h"

namespace kvscope::probe {

StepReport Backend::step(const StepRequest&, const Control&) {
    StepReport r;
    r.device = device();
    r.status = Status::failed;
    r.message =
        "the " + r.device.backend + " backend does not run the decode step yet; the CPU backend does (--backend cpu)";
    return r;
}

bool can_multiply(KvDtype weight_dtype) { return step::weight_format(weight_dtype); }

std::optional<StepRequest> with_bf16_weights_if_refused(const StepRequest& request, const StepReport& report) {
    if (report.status != Status::invalid_input || !report.weight_dtype_refused || request.weight_dtype == KvDtype::bf16)
        return std::nullopt;
    StepRequest bf16 = request;
    bf16.weight_dtype = KvDtype::bf16;
    return bf16;
}

MeasuredStep measured_step_of(const StepRequest& request, const StepReport& report, const std::string& model_id,
                              const std::vector<GpuSpec>& gpus) {
    Scenario s;
    s.arch = request.arch;
    s.kv_dtype = request.kv_dtype;
    s.workload = request.workload;
    MeasuredStep m;
    m.key = step_key(s, request.weight_dtype);
    m.model_id = model_id;
    m.context_tokens = request.workload.context_tokens;
    m.batch = request.workload.batch;
    m.kv_dtype = request.kv_dtype;
    m.weight_dtype = request.weight_dtype;
    m.backend = report.device.backend;
    m.device = report.device.name;
    if (!report.device.host_memory)
        m.gpu_id = gpu_for_device(gpus, report.device.name, report.device.total_bytes).value_or("");
    m.measured_on = utc_date_today();
    m.step_ms = report.step_ms;
    m.predicted_step_ms = report.predicted_step_ms;
    m.ceiling_gbps = report.ceiling_gbps;
    m.layers_run = report.layers_run;
    m.layers_total = report.layers_total;
    m.scaled = report.scaled;
    return m;
}

namespace {

using Clock = std::chrono::steady_clock;
using cpu::Buffer;
using cpu::parallel_for;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

using step::Dims;
using step::fail;
using step::median_of;
using step::Route;

// One layer's matrices, row-major [out][in] in the weight format.
struct LayerWeights {
    bool moe = false;
    Buffer qkv, o, up, down;  // up: the gate's rows, then the up projection's
    Buffer router;
    std::vector<Buffer> expert_up, expert_down;
    Buffer shared_up, shared_down;  // the shared experts side by side
};

struct Matrix {
    std::uint64_t rows = 0, cols = 0;
    [[nodiscard]] std::uint64_t elements() const { return rows * cols; }
};

Buffer allocate_buffer(std::uint64_t bytes) {
    void* p = std::malloc(std::max<std::uint64_t>(bytes, 1));
    if (!p) throw std::bad_alloc();
    host::advise_huge_pages(p, bytes);
    return Buffer(p);
}

// y[b·N + n] = Σ_k x[b·K + k] · W[n·K + k]: each weight row is read once, in its stored format, for every
// sequence of the batch (cpu::dot_group_raw2 converts it in registers: fp32, fp16, bf16, fp8 e4m3).
void matmul(KvDtype wd, const void* w, const Matrix& m, const float* x, std::uint64_t batch, float* y,
            unsigned threads) {
    const std::size_t eb = cpu::element_bytes(wd);
    const auto* base = static_cast<const std::byte*>(w);
    constexpr std::uint64_t kRows = 64;  // rows a thread takes at a time
    const std::uint64_t blocks = (m.rows + kRows - 1) / kRows;
    parallel_for(blocks, std::min<unsigned>(threads, static_cast<unsigned>(blocks)), [&](std::size_t blk, unsigned) {
        std::vector<float> out0(batch), out1(batch);
        const std::uint64_t lo = blk * kRows, hi = std::min(m.rows, lo + kRows);
        std::uint64_t n = lo;
        for (; n + 2 <= hi; n += 2) {
            cpu::dot_group_raw2(wd, x, batch, base + n * m.cols * eb, base + (n + 1) * m.cols * eb, m.cols, out0.data(),
                                out1.data());
            for (std::uint64_t b = 0; b < batch; ++b) {
                y[b * m.rows + n] = out0[b];
                y[b * m.rows + n + 1] = out1[b];
            }
        }
        for (; n < hi; ++n) {
            cpu::dot_group_raw(wd, x, batch, base + n * m.cols * eb, m.cols, out0.data());
            for (std::uint64_t b = 0; b < batch; ++b) y[b * m.rows + n] = out0[b];
        }
    });
}

void rms_norm(const float* x, float* out, std::uint64_t n) {
    double ss = 0;
    for (std::uint64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-6));
    for (std::uint64_t i = 0; i < n; ++i) out[i] = x[i] * inv;
}

// Rotates each head's pairs (i, i + d/2) by position · 10000^(−2i/d) (the Llama convention).
void rope(float* v, std::uint64_t heads, std::uint64_t d, std::uint64_t position) {
    const std::uint64_t half = d / 2;
    for (std::uint64_t i = 0; i < half; ++i) {
        const double angle =
            static_cast<double>(position) * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
        const auto c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
        for (std::uint64_t h = 0; h < heads; ++h) {
            float& a = v[h * d + i];
            float& b = v[h * d + i + half];
            const float x = a, y = b;
            a = x * c - y * s;
            b = x * s + y * c;
        }
    }
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

Route route(const float* logits, std::uint64_t experts, std::uint64_t k) {
    std::vector<std::uint64_t> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::uint64_t a, std::uint64_t b) { return logits[a] > logits[b]; });
    Route r;
    r.experts.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    const float top = logits[r.experts.front()];
    float sum = 0;
    for (const std::uint64_t e : r.experts) sum += r.weights.emplace_back(std::exp(logits[e] - top));
    for (float& w : r.weights) w /= sum;
    return r;
}

// Everything the step holds, and how each phase is timed.
class Model {
public:
    Model(const StepRequest& req, Dims dims, std::uint64_t layers, unsigned threads)
        : req_(req), d_(dims), layers_(layers), threads_(threads), eb_(cpu::element_bytes(req.weight_dtype)) {}

    // Bytes of one layer's weights, and of the weights outside the layers.
    [[nodiscard]] std::uint64_t layer_bytes(std::uint64_t l) const {
        std::uint64_t e = d_.qkv_rows() * d_.hidden + d_.hidden * d_.q_heads * d_.dv;
        if (moe_layer(l)) {
            e += d_.experts * d_.hidden;
            e += d_.experts * (d_.up_rows(d_.expert_intermediate) + d_.expert_intermediate) * d_.hidden;
            e += d_.shared * (d_.up_rows(d_.expert_intermediate) + d_.expert_intermediate) * d_.hidden;
        } else {
            e += (d_.up_rows(d_.intermediate) + d_.intermediate) * d_.hidden;
        }
        return e * eb_;
    }
    [[nodiscard]] std::uint64_t outer_bytes() const {
        return (req_.arch.tied_embeddings ? 1 : 2) * d_.vocab * d_.hidden * eb_;
    }
    [[nodiscard]] bool moe_layer(std::uint64_t l) const { return step::expert_layer(req_.arch, d_, l); }

    // Random weights, each matrix its own seed.
    void allocate_weights() {
        std::vector<std::pair<void*, std::uint64_t>> fills;  // buffer, elements
        auto make = [&](const Matrix& m) {
            Buffer b = allocate_buffer(m.elements() * eb_);
            fills.emplace_back(b.get(), m.elements());
            return b;
        };
        embedding_ = make({d_.vocab, d_.hidden});
        if (!req_.arch.tied_embeddings) head_ = make({d_.vocab, d_.hidden});
        layers_w_.resize(layers_);
        for (std::uint64_t l = 0; l < layers_; ++l) {
            LayerWeights& w = layers_w_[l];
            w.qkv = make(qkv());
            w.o = make(o());
            w.moe = moe_layer(l);
            if (w.moe) {
                w.router = make({d_.experts, d_.hidden});
                for (std::uint64_t e = 0; e < d_.experts; ++e) {
                    w.expert_up.push_back(make(up(d_.expert_intermediate)));
                    w.expert_down.push_back(make(down(d_.expert_intermediate)));
                }
                if (d_.shared > 0) {
                    w.shared_up = make(up(d_.shared * d_.expert_intermediate));
                    w.shared_down = make(down(d_.shared * d_.expert_intermediate));
                }
            } else {
                w.up = make(up(d_.intermediate));
                w.down = make(down(d_.intermediate));
            }
        }
        // Weights of magnitude 1/8 … 1 scaled by 1/√(inputs) keep the activations near 1 through the layers,
        // as trained weights do; the scale is applied to the products, so the stored values stay random.
        parallel_for(fills.size(), threads_, [&](std::size_t i, unsigned) {
            cpu::fill_random(req_.weight_dtype, fills[i].first, fills[i].second, 104729 + i);
        });
    }

    // The cache slots of the layers run, from the probe's allocation list.
    void set_cache(std::vector<cpu::Slot> slots, std::vector<void*> new_k, std::vector<void*> new_v) {
        slots_ = std::move(slots);
        new_k_ = std::move(new_k);
        new_v_ = std::move(new_v);
    }

    struct Times {
        double weights_ms = 0, attention_ms = 0, layers_ms = 0;  // the layers run
        double outer_ms = 0, outer_weights_ms = 0;               // the embedding lookup, final norm and head
        std::uint64_t weight_bytes = 0, outer_weight_bytes = 0, experts = 0;
    };

    // One step for the batch: token ids → logits. `routes` (MoE) receives the choices made, per layer and
    // token (the float64 check follows them).
    Times run(const std::vector<std::uint64_t>& tokens, std::vector<float>& logits,
              std::vector<std::vector<Route>>* routes = nullptr) {
        Times t;
        const std::uint64_t B = tokens.size(), H = d_.hidden;
        const cpu::Shape sh{d_.q_heads, d_.kv_heads, d_.dk, d_.dv, d_.kv_heads * d_.dk, d_.kv_heads * d_.dv};
        auto start = Clock::now();
        std::vector<float> x(B * H), xn(B * H);
        for (std::uint64_t b = 0; b < B; ++b)
            cpu::to_float(req_.weight_dtype, static_cast<const std::byte*>(embedding_.get()) + tokens[b] * H * eb_,
                          x.data() + b * H, H);
        t.outer_ms += ms_since(start);
        if (routes) routes->assign(layers_, {});
        const float in_scale = 1.0f / std::sqrt(static_cast<float>(H));
        std::vector<float> qkv_out(B * d_.qkv_rows()), attn(B * d_.q_heads * d_.dv), proj(B * H);
        std::vector<cpu::Scratch> scratch(threads_, cpu::Scratch(sh, req_.kv_dtype));
        const auto layers_start = Clock::now();
        for (std::uint64_t l = 0; l < layers_; ++l) {
            const LayerWeights& w = layers_w_[l];
            for (std::uint64_t b = 0; b < B; ++b) rms_norm(x.data() + b * H, xn.data() + b * H, H);
            t.weights_ms +=
                timed([&] { matmul(req_.weight_dtype, w.qkv.get(), qkv(), xn.data(), B, qkv_out.data(), threads_); });
            t.weight_bytes += qkv().elements() * eb_;
            for (float& v : qkv_out) v *= in_scale;
            t.attention_ms += timed([&] {
                // The new token's position, its K and V written into the cache.
                parallel_for(B, threads_, [&](std::size_t b, unsigned) {
                    float* row = qkv_out.data() + b * d_.qkv_rows();
                    const cpu::Slot& s = slots_[l * B + b];
                    rope(row, d_.q_heads, d_.dk, s.tokens - 1);
                    rope(row + d_.q_heads * d_.dk, d_.kv_heads, d_.dk, s.tokens - 1);
                    cpu::from_float(req_.kv_dtype, row + d_.q_heads * d_.dk, new_k_[l * B + b], sh.row_k);
                    cpu::from_float(req_.kv_dtype, row + d_.q_heads * d_.dk + sh.row_k, new_v_[l * B + b], sh.row_v);
                });
                // Attention: with fewer sequences than threads, each sequence's KV heads are shared out too
                // (formats read in place; the converted ones go a whole row at a time).
                const std::uint64_t parts = cpu::direct(req_.kv_dtype) ? heads_split(B) : 1;
                parallel_for(B * parts, threads_, [&](std::size_t item, unsigned worker) {
                    const std::uint64_t b = item / parts, part = item % parts, heads = d_.kv_heads / parts;
                    const std::uint64_t group = d_.q_heads / d_.kv_heads, h0 = part * heads;
                    const cpu::Slot& whole = slots_[l * B + b];
                    const std::size_t eb = cpu::element_bytes(req_.kv_dtype);
                    cpu::Slot s = whole;
                    s.k = static_cast<const std::byte*>(whole.k) + h0 * d_.dk * eb;
                    s.v = static_cast<const std::byte*>(whole.v) + h0 * d_.dv * eb;
                    cpu::Shape part_shape = sh;
                    part_shape.q_heads = heads * group;
                    part_shape.kv_heads = heads;
                    part_shape.v_head_stride = d_.dv;
                    const float* q = qkv_out.data() + b * d_.qkv_rows() + h0 * group * d_.dk;
                    cpu::attend(s, parts > 1 ? part_shape : sh, req_.kv_dtype, q, nullptr, scratch[worker]);
                    std::copy_n(scratch[worker].out.begin(), heads * group * d_.dv,
                                attn.begin() + static_cast<std::ptrdiff_t>((b * d_.q_heads + h0 * group) * d_.dv));
                });
            });
            t.weights_ms +=
                timed([&] { matmul(req_.weight_dtype, w.o.get(), o(), attn.data(), B, proj.data(), threads_); });
            t.weight_bytes += o().elements() * eb_;
            const float o_scale = 1.0f / std::sqrt(static_cast<float>(d_.q_heads * d_.dv));
            for (std::uint64_t i = 0; i < B * H; ++i) x[i] += proj[i] * o_scale;
            for (std::uint64_t b = 0; b < B; ++b) rms_norm(x.data() + b * H, xn.data() + b * H, H);
            if (w.moe) {
                experts(w, xn, B, proj, t, routes ? &(*routes)[l] : nullptr);
            } else {
                mlp(w.up.get(), w.down.get(), d_.intermediate, xn.data(), B, proj.data(), t);
            }
            for (std::uint64_t i = 0; i < B * H; ++i) x[i] += proj[i];
        }
        t.layers_ms = ms_since(layers_start);
        start = Clock::now();
        for (std::uint64_t b = 0; b < B; ++b) rms_norm(x.data() + b * H, xn.data() + b * H, H);
        logits.assign(B * d_.vocab, 0.0f);
        t.outer_weights_ms = timed([&] {
            matmul(req_.weight_dtype, head_ ? head_.get() : embedding_.get(), {d_.vocab, H}, xn.data(), B,
                   logits.data(), threads_);
        });
        for (float& v : logits) v *= in_scale;
        t.outer_ms += ms_since(start);
        t.outer_weight_bytes = d_.vocab * H * eb_ + B * H * eb_;  // the head, and the embedding rows looked up
        return t;
    }

    [[nodiscard]] const Dims& dims() const { return d_; }
    [[nodiscard]] const LayerWeights& layer(std::uint64_t l) const { return layers_w_[l]; }
    [[nodiscard]] const void* embedding() const { return embedding_.get(); }
    [[nodiscard]] const void* head() const { return head_ ? head_.get() : embedding_.get(); }
    [[nodiscard]] const std::vector<cpu::Slot>& slots() const { return slots_; }
    [[nodiscard]] const std::vector<void*>& new_k() const { return new_k_; }
    [[nodiscard]] const std::vector<void*>& new_v() const { return new_v_; }
    [[nodiscard]] Matrix qkv() const { return {d_.qkv_rows(), d_.hidden}; }
    [[nodiscard]] Matrix o() const { return {d_.hidden, d_.q_heads * d_.dv}; }
    [[nodiscard]] Matrix up(std::uint64_t inter) const { return {d_.up_rows(inter), d_.hidden}; }
    [[nodiscard]] Matrix down(std::uint64_t inter) const { return {d_.hidden, inter}; }

private:
    // How many parts each sequence's KV heads are split into so that every thread attends: a divisor of the
    // KV heads, 1 when there are as many sequences as threads.
    [[nodiscard]] std::uint64_t heads_split(std::uint64_t batch) const {
        std::uint64_t parts = 1;
        while (batch * parts < threads_ && parts * 2 <= d_.kv_heads && d_.kv_heads % (parts * 2) == 0) parts *= 2;
        return parts;
    }

    template <class F>
    static double timed(F f) {
        const auto start = Clock::now();
        f();
        return ms_since(start);
    }

    // out = down(act(x · up)) for `rows` inputs, scaled as the activations of trained weights are.
    void mlp(const void* up_w, const void* down_w, std::uint64_t inter, const float* in, std::uint64_t rows, float* out,
             Times& t) {
        const std::uint64_t H = d_.hidden;
        std::vector<float> h(rows * d_.up_rows(inter)), act(rows * inter);
        t.weights_ms += timed([&] { matmul(req_.weight_dtype, up_w, up(inter), in, rows, h.data(), threads_); });
        const float s_in = 1.0f / std::sqrt(static_cast<float>(H));
        for (std::uint64_t r = 0; r < rows; ++r)
            for (std::uint64_t i = 0; i < inter; ++i) {
                const float* hr = h.data() + r * d_.up_rows(inter);
                act[r * inter + i] = d_.gated ? silu(hr[i] * s_in) * (hr[inter + i] * s_in) : silu(hr[i] * s_in);
            }
        t.weights_ms += timed([&] { matmul(req_.weight_dtype, down_w, down(inter), act.data(), rows, out, threads_); });
        const float s_out = 1.0f / std::sqrt(static_cast<float>(inter));
        for (std::uint64_t i = 0; i < rows * H; ++i) out[i] *= s_out;
        t.weight_bytes += (up(inter).elements() + down(inter).elements()) * eb_;
    }

    void experts(const LayerWeights& w, const std::vector<float>& xn, std::uint64_t B, std::vector<float>& out,
                 Times& t, std::vector<Route>* record) {
        const std::uint64_t H = d_.hidden;
        std::vector<float> logits(B * d_.experts);
        t.weights_ms += timed([&] {
            matmul(req_.weight_dtype, w.router.get(), {d_.experts, H}, xn.data(), B, logits.data(), threads_);
        });
        t.weight_bytes += d_.experts * H * eb_;
        std::vector<Route> routes(B);
        for (std::uint64_t b = 0; b < B; ++b) routes[b] = route(logits.data() + b * d_.experts, d_.experts, d_.top_k);
        if (record) *record = routes;
        std::fill(out.begin(), out.end(), 0.0f);
        // Each chosen expert once, over the tokens that chose it.
        for (std::uint64_t e = 0; e < d_.experts; ++e) {
            std::vector<std::uint64_t> rows;
            std::vector<float> weights;
            for (std::uint64_t b = 0; b < B; ++b)
                for (std::size_t k = 0; k < routes[b].experts.size(); ++k)
                    if (routes[b].experts[k] == e) {
                        rows.push_back(b);
                        weights.push_back(routes[b].weights[k]);
                    }
            if (rows.empty()) continue;
            ++t.experts;
            std::vector<float> in(rows.size() * H), y(rows.size() * H);
            for (std::size_t r = 0; r < rows.size(); ++r)
                std::copy_n(xn.begin() + static_cast<std::ptrdiff_t>(rows[r] * H), H,
                            in.begin() + static_cast<std::ptrdiff_t>(r * H));
            mlp(w.expert_up[e].get(), w.expert_down[e].get(), d_.expert_intermediate, in.data(), rows.size(), y.data(),
                t);
            for (std::size_t r = 0; r < rows.size(); ++r)
                for (std::uint64_t i = 0; i < H; ++i) out[rows[r] * H + i] += weights[r] * y[r * H + i];
        }
        if (d_.shared > 0) {
            std::vector<float> y(B * H);
            mlp(w.shared_up.get(), w.shared_down.get(), d_.shared * d_.expert_intermediate, xn.data(), B, y.data(), t);
            for (std::uint64_t i = 0; i < B * H; ++i) out[i] += y[i];
        }
    }

    const StepRequest& req_;
    Dims d_;
    std::uint64_t layers_;
    unsigned threads_;
    std::size_t eb_;
    Buffer embedding_, head_;
    std::vector<LayerWeights> layers_w_;
    std::vector<cpu::Slot> slots_;
    std::vector<void*> new_k_, new_v_;
};

// The step's weights and cache as the float64 reference reads them (step_reference.h).
step::ReferenceStep reference_of(const Model& m, const StepRequest& req, const std::vector<std::uint64_t>& tokens,
                                 std::vector<std::vector<Route>> routes, std::uint64_t layers) {
    step::ReferenceStep s;
    s.dims = m.dims();
    s.weight_dtype = req.weight_dtype;
    s.kv_dtype = req.kv_dtype;
    s.embedding = m.embedding();
    s.head = m.head();
    for (std::uint64_t l = 0; l < layers; ++l) {
        const LayerWeights& w = m.layer(l);
        step::ReferenceLayer& r = s.layers.emplace_back();
        r = {w.qkv.get(), w.o.get(), w.up.get(),        w.down.get(),        w.moe,
             {},          {},        w.shared_up.get(), w.shared_down.get(), w.moe ? w.router.get() : nullptr};
        for (std::size_t e = 0; e < w.expert_up.size(); ++e) {
            r.expert_up.push_back(w.expert_up[e].get());
            r.expert_down.push_back(w.expert_down[e].get());
        }
    }
    for (std::uint64_t i = 0; i < layers * tokens.size(); ++i) {
        const cpu::Slot& slot = m.slots()[i];
        s.slots.push_back({slot.k, slot.v, slot.tokens});
    }
    s.routes = std::move(routes);
    s.tokens = tokens;
    return s;
}

// The step in phases, as the CUDA step's (gpu_probe/cuda/cuda_step.cu: check_inputs, measure_ceiling,
// fit_layers, allocate, time_steps, count_reads, check_logits, finish): each phase fills its part of the report,
// or fails it and ends the step. Everything the step allocates is owned here and freed with it, on every path.
class CpuStep {
public:
    CpuStep(const StepRequest& req, const Control& control, const DeviceInfo& device)
        : req_(req),
          control_(control),
          a_(req.arch),
          B_(req.workload.batch),
          budget_(host::budget(control.memory_limit_bytes)),
          threads_(host::threads()) {
        r_.device = device;
        r_.layers_total = a_.layers;
    }

    StepReport run() {
        if (check_inputs() && fit_layers() && measure_ceiling() && allocate() && time_steps() && count_reads() &&
            check_logits())
            finish();
        return std::move(r_);
    }

private:
    bool failed(Status s, std::string why) {
        r_ = fail(std::move(r_), s, std::move(why));
        return false;
    }

    // What the step can run: every layer attending with K and V of the model's heads. One sequence's cache (with
    // the checks), so that nothing the size of the batch is built before it fits.
    bool check_inputs() {
        if (std::string why = step::dims_of(req_, d_); !why.empty()) return failed(Status::invalid_input, why);
        StepRequest one = req_;
        one.workload.batch = 1;
        auto per_sequence = step::cache_tensors(one);
        if (!per_sequence) return failed(Status::invalid_input, per_sequence.error_text());
        per_sequence_ = std::move(per_sequence).value();
        auto buffers = step::cache_tensor_count(req_);  // more buffers than the probe keeps track of: refused
        if (!buffers) return failed(Status::invalid_input, buffers.error_text());
        buffers_ = *buffers;
        if (std::string why = step::whole_cache_problem(req_); !why.empty()) return failed(Status::invalid_input, why);
        return true;
    }

    // As many layers as fit beside the embedding and the head, and the list of the cache's buffers.
    bool fit_layers() {
        const std::uint64_t limit = budget_.bytes;
        std::vector<Checked> layer_kv(a_.layers);
        for (const KvTensor& t : per_sequence_) layer_kv[t.layer] += Checked(t.bytes) * B_;
        const Model sizes(req_, d_, 0, threads_);
        std::uint64_t need = sizes.outer_bytes() + kMargin + buffers_ * sizeof(KvTensor), layers_run = 0;
        for (std::uint64_t l = 0; l < a_.layers; ++l) {
            // Each sequence's slot and its two new rows' pointers, beside its K and V buffers.
            const Checked more = Checked(sizes.layer_bytes(l)) + layer_kv[l] +
                                 Checked(B_) * (sizeof(cpu::Slot) + 2 * sizeof(void*) + 2 * sizeof(Buffer));
            if (more.overflow() || need + more.value() > limit || need + more.value() < need) break;
            need += more.value();
            ++layers_run;
        }
        if (layers_run == 0) {
            const Checked first = Checked(sizes.layer_bytes(0)) + layer_kv[0];
            return failed(
                Status::out_of_memory,
                "one layer (" + (first.overflow() ? std::string("more than 2^64 bytes") : format_bytes(first.value())) +
                    " of weights and cache) beside the embedding and head (" + format_bytes(sizes.outer_bytes()) +
                    ") and " + format_bytes(kMargin) + " kept for activations and scratch needs more than the " +
                    format_bytes(limit) + " " + budget_.why + "; lower the batch, the context or the weight precision");
        }
        if (std::string why = step::experts_not_run(req_, layers_run); !why.empty())
            return failed(Status::out_of_memory, why);
        layers_run_ = layers_run;
        need_ = need;
        return true;
    }

    // The read ceiling, once the step is known to fit: its buffer is gone before the model is allocated, and it
    // too stays within the limit.
    bool measure_ceiling() {
        const std::uint64_t ceiling_bytes = req_.ceiling_bytes ? req_.ceiling_bytes : host::ceiling_buffer_bytes();
        if (ceiling_bytes > budget_.bytes)
            return failed(Status::out_of_memory, "the read ceiling's " + format_bytes(ceiling_bytes) +
                                                     " buffer is more than the " + format_bytes(budget_.bytes) + " " +
                                                     budget_.why + "; --ceiling-size sets a smaller one");
        control_.report(0.02, "measuring the read bandwidth ceiling");
        r_.ceiling_gbps = measure_host_read_gbps(ceiling_bytes);
        if (r_.ceiling_gbps <= 0)
            return failed(Status::out_of_memory,
                          "could not allocate the " + format_bytes(ceiling_bytes) + " bandwidth buffer");
        r_.layers_run = layers_run_;
        r_.scaled = layers_run_ < a_.layers;
        return true;
    }

    // The weights and the cache of the layers run: a token's K and V rows in the cache's format (blocks and fp8
    // included).
    bool allocate() {
        auto tensors = step::cache_tensors(req_);
        if (!tensors) return failed(Status::invalid_input, tensors.error_text());
        tensors_ = std::move(tensors).value();
        model_.emplace(req_, d_, layers_run_, threads_);
        std::vector<cpu::Slot> slots(layers_run_ * B_);
        std::vector<void*> new_k(layers_run_ * B_), new_v(layers_run_ * B_);
        control_.report(0.1, "allocating " + format_bytes(need_ - kMargin) + " of weights and cache (" +
                                 std::to_string(layers_run_) + " of " + std::to_string(a_.layers) + " layers)");
        try {
            model_->allocate_weights();
            const std::uint64_t row_k = cpu::row_size(req_.kv_dtype, d_.kv_heads * d_.dk);
            const std::uint64_t row_v = cpu::row_size(req_.kv_dtype, d_.kv_heads * d_.dv);
            for (std::size_t i = 0; i < tensors_.size(); ++i) {
                const KvTensor& t = tensors_[i];
                if (t.layer >= layers_run_ || !t.is_key()) continue;
                if (control_.cancelled())
                    return failed(Status::cancelled, "cancelled while allocating; all memory was freed");
                const KvTensor& v = tensors_[i + 1];
                void* kb = cache_.emplace_back(allocate_buffer(t.bytes)).get();
                void* vb = cache_.emplace_back(allocate_buffer(v.bytes)).get();
                cpu::fill_random(req_.kv_dtype, kb, cpu::values_in(req_.kv_dtype, t.bytes), 7 + 2 * i);
                cpu::fill_random(req_.kv_dtype, vb, cpu::values_in(req_.kv_dtype, v.bytes), 8 + 2 * i);
                const std::uint64_t at = t.layer * B_ + t.sequence;
                slots[at] = {kb, vb, t.layer, t.attended};
                new_k[at] = static_cast<std::byte*>(kb) + (t.attended - 1) * row_k;
                new_v[at] = static_cast<std::byte*>(vb) + (t.attended - 1) * row_v;
            }
        } catch (const std::bad_alloc&) {
            return failed(Status::out_of_memory,
                          "the system refused to allocate " + format_bytes(need_ - kMargin) + "; all memory was freed");
        }
        model_->set_cache(std::move(slots), std::move(new_k), std::move(new_v));
        return true;
    }

    // Random token ids, one per sequence; one warm-up step, then the timed ones. The whole model's step from the
    // layers run: the per-layer part scaled to every layer.
    bool time_steps() {
        tokens_.resize(B_);
        for (std::uint64_t b = 0; b < B_; ++b) tokens_[b] = (b * 2654435761ull + 12345) % d_.vocab;
        std::vector<Model::Times> times;
        const int runs = std::max(1, req_.timing_runs);
        for (int run = 0; run <= runs; ++run) {
            if (control_.cancelled()) return failed(Status::cancelled, "cancelled while timing; all memory was freed");
            control_.report(0.2 + 0.6 * run / (runs + 1),
                            "timing the decode step, run " + std::to_string(run) + " of " + std::to_string(runs));
            const Model::Times t = model_->run(tokens_, logits_, &routes_);
            if (run > 0) times.push_back(t);
        }
        if (std::string why = step::non_finite_logits(logits_); !why.empty()) return failed(Status::failed, why);
        const double f = layer_scale();
        std::vector<double> totals;
        totals.reserve(times.size());
        for (const auto& t : times) totals.push_back(t.outer_ms + t.layers_ms * f);
        const double med = median_of(totals);
        median_run_ = *std::find_if(times.begin(), times.end(),
                                    [&](const Model::Times& x) { return x.outer_ms + x.layers_ms * f == med; });
        const Model::Times& t = median_run_;
        r_.runs = runs;
        r_.step_ms = med;
        r_.min_step_ms = *std::min_element(totals.begin(), totals.end());
        r_.weights_ms = t.outer_weights_ms + t.weights_ms * f;
        r_.attention_ms = t.attention_ms * f;
        r_.other_ms = std::max(0.0, r_.step_ms - r_.weights_ms - r_.attention_ms);
        return true;
    }
    [[nodiscard]] double layer_scale() const {
        return static_cast<double>(a_.layers) / static_cast<double>(layers_run_);
    }

    // What the median step read, scaled to every layer.
    bool count_reads() {
        const double f = layer_scale();
        const Model::Times& t = median_run_;
        r_.weights_bytes_read =
            t.outer_weight_bytes + static_cast<std::uint64_t>(std::llround(static_cast<double>(t.weight_bytes) * f));
        r_.experts_read = static_cast<std::uint64_t>(std::llround(static_cast<double>(t.experts) * f));
        r_.kv_bytes_read = kv_bytes_read(tensors_);
        r_.kernel = "weights read once per step in their stored format for the whole batch (" +
                    std::to_string(threads_) +
                    " threads, 64 rows each); attention as the probe's, one sequence per thread";
        // The calculator's floor for the same scenario on the bandwidth just measured.
        step::predict(r_, req_, host::total_bytes());
        return true;
    }

    // The check: float64 of the same layers, for models small enough to redo that way. The cache rows the step
    // writes hold the last run's K and V; the reference reads them as they are, and checks them against its own.
    bool check_logits() {
        std::uint64_t run_weights = model_->outer_bytes();
        for (std::uint64_t l = 0; l < layers_run_; ++l) run_weights += model_->layer_bytes(l);
        if (run_weights > step::kReferenceWeightBytes) return true;
        control_.report(0.9, "checking the logits against float64");
        const step::ReferenceResult ref =
            step::reference_step(reference_of(*model_, req_, tokens_, routes_, layers_run_));
        if (!ref.wrong_row.empty()) return failed(Status::failed, ref.wrong_row);
        r_.max_rel_error = max_relative_error(logits_.data(), ref.logits);
        return true;
    }

    void finish() {
        control_.report(1.0, "done");
        r_.message = step::finished_message(r_);
    }

    static constexpr std::uint64_t kMargin = 64ull << 20;  // activations, scratch and the allocator's own

    const StepRequest& req_;
    const Control& control_;
    const Architecture& a_;
    const std::uint64_t B_;
    const host::Budget budget_;
    const unsigned threads_;
    StepReport r_;
    // check_inputs and fit_layers: the shapes, one sequence's cache, the layers run and what they need.
    Dims d_;
    std::vector<KvTensor> per_sequence_;
    std::uint64_t buffers_ = 0, layers_run_ = 0, need_ = 0;
    // allocate: the cache's tensors, the model (its weights and slots) and the cache's buffers.
    std::vector<KvTensor> tensors_;
    std::optional<Model> model_;
    std::vector<Buffer> cache_;
    // time_steps: the tokens, the last run's logits and routes, the median run's times.
    std::vector<std::uint64_t> tokens_;
    std::vector<float> logits_;
    std::vector<std::vector<Route>> routes_;
    Model::Times median_run_;
};

}  // namespace

StepReport run_cpu_step(const StepRequest& req, const Control& control, const DeviceInfo& device) {
    CpuStep step(req, control, device);
    return step.run();
}

}  // namespace kvscope::probe
