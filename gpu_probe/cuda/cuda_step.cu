// probe --step on a CUDA device: one decode step of the whole model, timed with CUDA events beside the
// calculator's floor on the read bandwidth measured in the same run.
//
// The layer is the CPU step's (gpu_probe/src/step.cpp: the Llama layer of transformers'
// modeling_llama.py): RMSNorm, the fused QKV projection, RoPE, the new token's K and V written into the
// cache, attention over it with the probe's own decode kernels (cuda_attention.h), the output projection,
// residual; RMSNorm, the gated MLP (or, on expert layers, the router's top-k and each chosen expert's MLP:
// cuda_moe.h), residual; then the final RMSNorm and the LM head. The projections are
// cuBLAS GEMMs (cublasGemmEx: weights and activations in the weight format, fp32 accumulation and output),
// one per matrix for the whole batch, so each weight is read once per step as an engine reads it. The
// random weights are scaled by 1/√(inputs) through the GEMMs' alpha, as the CPU step scales its products,
// so the activations stay near 1 through the layers. Norm weights are 1. The small kernels between the GEMMs
// are cuda_step_kernels.cu; fp8 weights' GEMMs cuda_fp8_gemm.cu.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <optional>
#include <vector>

#include "backends.h"
#include "cpu_kernels.h"
#include "cuda_attention.h"
#include "cuda_check.h"
#include "cuda_fill.h"
#include "cuda_fp8_gemm.h"
#include "cuda_memory.h"
#include "cuda_moe.h"
#include "cuda_step.h"
#include "cuda_step_kernels.h"
#include "kvscope/calculator/units.h"
#include "step_common.h"
#include "step_reference.h"

namespace kvscope::probe::cuda {
namespace {

using step::Dims;
using step::fail;

cudaDataType cuda_type(KvDtype d) {
    return d == KvDtype::fp32 ? CUDA_R_32F : d == KvDtype::fp16 ? CUDA_R_16F : CUDA_R_16BF;
}

class Blas {
public:
    Blas() { KVSCOPE_CUDA(cublasCreate(&handle_)); }
    ~Blas() { cublasDestroy(handle_); }
    Blas(const Blas&) = delete;
    Blas& operator=(const Blas&) = delete;
    // y[b·rows + r] = alpha · Σ_k W[r·cols + k] · x[b·cols + k]: W row-major [rows][cols] is column-major
    // cols × rows, so y (column-major rows × batch) = Wᵀ · x.
    void matmul(cudaDataType type, const void* w, std::uint64_t rows, std::uint64_t cols, const void* x,
                std::uint64_t batch, float* y, float alpha) const {
        const float beta = 0;
        const auto m = static_cast<int>(rows), n = static_cast<int>(batch), k = static_cast<int>(cols);
        KVSCOPE_CUDA(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w, type, k, x, type, k, &beta, y,
                                  CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

private:
    cublasHandle_t handle_{};
};

// Events marking where a step's phases begin; the time to the next mark is the phase's.
enum class Phase { outer, outer_weights, layers, weights, attention, other, end };

class Marks {
public:
    explicit Marks(bool on) : on_(on) {}
    Marks(const Marks&) = delete;
    Marks& operator=(const Marks&) = delete;
    ~Marks() {
        for (cudaEvent_t e : events_) KVSCOPE_CUDA_NOTHROW(cudaEventDestroy(e));
    }
    void mark(Phase p) {
        if (!on_) return;
        if (used_ == events_.size()) {
            cudaEvent_t e{};
            KVSCOPE_CUDA(cudaEventCreate(&e));
            events_.push_back(e);
        }
        KVSCOPE_CUDA(cudaEventRecord(events_[used_]));
        phases_.resize(used_ + 1);
        phases_[used_++] = p;
    }
    // Milliseconds per phase, after the last mark has completed.
    std::vector<double> totals() {
        std::vector<double> t(static_cast<std::size_t>(Phase::end) + 1, 0.0);
        if (used_ == 0) return t;
        KVSCOPE_CUDA(cudaEventSynchronize(events_[used_ - 1]));
        for (std::size_t i = 0; i + 1 < used_; ++i) {
            float ms = 0;
            KVSCOPE_CUDA(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
            t[static_cast<std::size_t>(phases_[i])] += ms;
        }
        used_ = 0;
        return t;
    }

private:
    bool on_;
    std::vector<cudaEvent_t> events_;
    std::vector<Phase> phases_;
    std::size_t used_ = 0;
};

// One layer's weights: a dense MLP (up, down) or experts (the router, every expert's up and down side by
// side, expert-major, and the shared experts' MLP in up and down).
struct LayerBuffers {
    DeviceBuffer qkv, o, up, down;
    bool moe = false;
    DeviceBuffer router, experts_up, experts_down;
};

// The check of the step's cache writes: each new K and V row, as the step wrote it into the cache, against the
// CPU's encoding (cpu::from_float) of the fp32 values the step staged. The formats round the same way on both
// (nearest, ties to even; llama.cpp's blocks as its reference code writes them), so a byte that differs is a
// wrong write. "" when every byte agrees.
std::string new_rows_differ(KvDtype kv, const float* staged, const std::vector<step::ReferenceSlot>& slots,
                            const AttentionShape& sh, std::uint64_t row_k, std::uint64_t row_v, std::uint64_t batch) {
    std::vector<float> values(slots.size() * (sh.row_k + sh.row_v));
    KVSCOPE_CUDA(cudaMemcpy(values.data(), staged, values.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<std::byte> want(std::max(row_k, row_v));
    std::string first;  // the first row that differs, in words
    std::uint64_t rows_wrong = 0, bytes_wrong = 0;
    for (std::size_t at = 0; at < slots.size(); ++at) {
        const step::ReferenceSlot& slot = slots[at];
        for (const bool key : {true, false}) {
            const std::uint64_t bytes = key ? row_k : row_v;
            cpu::from_float(kv, values.data() + at * (sh.row_k + sh.row_v) + (key ? 0 : sh.row_k), want.data(),
                            key ? sh.row_k : sh.row_v);
            const auto* got = static_cast<const std::byte*>(key ? slot.k : slot.v) + (slot.tokens - 1) * bytes;
            std::string where;  // the offsets that differ, the first few
            std::uint64_t wrong = 0;
            for (std::uint64_t i = 0; i < bytes; ++i)
                if (got[i] != want[i] && ++wrong <= 6) where += (where.empty() ? "" : ", ") + std::to_string(i);
            if (wrong == 0) continue;
            ++rows_wrong;
            bytes_wrong += wrong;
            if (!first.empty()) continue;
            // The row's first bytes on both sides, so that a wrong write can be told from a wrong place.
            std::string both;
            for (const auto* row : {got, static_cast<const std::byte*>(want.data())}) {
                both += both.empty() ? "; the step's first bytes:" : "; the CPU's:";
                for (std::uint64_t j = 0; j < std::min<std::uint64_t>(bytes, 6); ++j)
                    both += " " + std::to_string(std::to_integer<int>(row[j]));
            }
            first = "the new token's " + std::string(key ? "K" : "V") + " row of layer " + std::to_string(at / batch) +
                    ", sequence " + std::to_string(at % batch) + " differs from the CPU's " +
                    std::string(to_string(kv)) + " encoding of the same values in " + std::to_string(wrong) + " of " +
                    std::to_string(bytes) + " bytes (at " + where + (wrong > 6 ? ", …" : "") + both + ")";
        }
    }
    if (!first.empty())
        return first + "; " + std::to_string(rows_wrong) + " of " + std::to_string(2 * slots.size()) + " rows, " +
               std::to_string(bytes_wrong) + " bytes in all: the step's cache write is wrong";
    return "";
}

}  // namespace

StepReport run_cuda_step(const StepRequest& req, const Control& control, const DeviceInfo& device) {
    StepReport r;
    r.device = device;
    const Architecture& a = req.arch;
    r.layers_total = a.layers;
    Dims d;
    if (std::string why = step::dims_of(req, d); !why.empty()) return fail(r, Status::invalid_input, why);
    if (d.top_k > kMaxTopK)
        return fail(r, Status::invalid_input,
                    "experts_per_token: the CUDA step routes each token to at most " + std::to_string(kMaxTopK) +
                        " experts (not " + std::to_string(d.top_k) + "); the CPU backend runs it (--backend cpu)");
    if (d.experts > kMaxExperts)
        return fail(r, Status::invalid_input,
                    "num_experts: the CUDA step groups a layer's tokens among at most " + std::to_string(kMaxExperts) +
                        " experts (not " + std::to_string(d.experts) + "); the CPU backend runs it (--backend cpu)");
    auto tensors = step::cache_tensors(req);  // refuses, with the reason, the formats the probe does not store
    if (!tensors) return fail(r, Status::invalid_input, tensors.error_text());
    if (std::string why = step::whole_cache_problem(req); !why.empty()) return fail(r, Status::invalid_input, why);
    const KernelWishRead wish = attention_kernel_wish_from_environment();
    if (!wish.error.empty()) return fail(r, Status::invalid_input, wish.error);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> fp8_shapes;  // every matrix cuBLASLt multiplies in fp8
    if (req.weight_dtype == KvDtype::fp8_e4m3) {                      // (the experts' GEMV is ours)
        auto& shapes = fp8_shapes;
        shapes = {{d.qkv_rows(), d.hidden}, {d.hidden, d.q_heads * d.dv}, {d.vocab, d.hidden}};
        const std::uint64_t inter_s = d.shared * d.expert_intermediate;
        bool dense = false;  // a layer with the dense MLP
        for (std::uint64_t l = 0; l < a.layers && !dense; ++l) dense = !step::expert_layer(a, d, l);
        if (dense) shapes.insert(shapes.end(), {{d.up_rows(d.intermediate), d.hidden}, {d.hidden, d.intermediate}});
        if (a.moe && d.experts > 0) shapes.emplace_back(d.experts, d.hidden);
        if (inter_s) shapes.insert(shapes.end(), {{d.up_rows(inter_s), d.hidden}, {d.hidden, inter_s}});
        KVSCOPE_CUDA(cudaFree(nullptr));
        if (std::string why = Fp8Gemm::unavailable(shapes); !why.empty()) {
            r.weight_dtype_refused = true;
            return fail(r, Status::invalid_input, why);
        }
    }
    const std::uint64_t B = req.workload.batch, H = d.hidden;
    const KvDtype wd = req.weight_dtype;
    // fp8 weights multiply bf16 activations (quantised to fp8 inside each GEMM: cuda_fp8_gemm.h); the others
    // activations of their own format.
    const bool fp8 = wd == KvDtype::fp8_e4m3;
    const KvDtype ad = fp8 ? KvDtype::bf16 : wd;
    const int wcode = code_of(wd), acode = code_of(ad), kvcode = code_of(req.kv_dtype);
    const cudaDataType wtype = cuda_type(wd);
    const std::size_t eb = cpu::element_bytes(wd), ab = cpu::element_bytes(ad);
    const unsigned sms = std::max(1u, device.compute_units);

    KVSCOPE_CUDA(cudaFree(nullptr));  // the context first, so the free memory read next is what the step may use
    std::size_t free0 = 0, total = 0;
    KVSCOPE_CUDA(cudaMemGetInfo(&free0, &total));

    const std::uint64_t limit =
        control.memory_limit_bytes ? std::min<std::uint64_t>(control.memory_limit_bytes, free0) : free0;

    // The read ceiling first, so its buffer is gone before the model is allocated (within the limit too).
    control.report(0.02, "measuring the read bandwidth ceiling");
    {
        const std::uint64_t l2 = device.cache_bytes;
        const std::uint64_t bytes =
            std::min<std::uint64_t>(req.ceiling_bytes ? std::max<std::uint64_t>(req.ceiling_bytes, 1ull << 20)
                                                      : std::max<std::uint64_t>({8 * l2, 1ull << 30}),
                                    limit / 2) /
            16 * 16;
        DeviceBuffer ceiling(bytes), sink(sizeof(unsigned));
        fill_random(ceiling.get(), bytes / 4, kFp32, 99);
        r.ceiling_gbps = read_ceiling_gbps(ceiling.get(), bytes, sms, sink.get<unsigned>());
    }

    // As many layers as fit beside the embedding, the head, the activations and cuBLAS's workspace. Each
    // allocation counts as cudaMalloc hands it out, rounded up to whole 2 MiB pages.
    const auto paged = [](std::uint64_t bytes) { return (bytes + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20); };
    const std::uint64_t up_rows = d.up_rows(d.intermediate);
    // Expert layers (as the CPU step's moe_layer): the router, every expert, and the shared experts' MLP.
    const auto moe_layer = [&](std::uint64_t l) { return step::expert_layer(a, d, l); };
    const std::uint64_t inter_e = d.expert_intermediate, up_rows_e = d.up_rows(inter_e), K = d.top_k;
    const std::uint64_t inter_s = d.shared * inter_e, up_rows_s = d.up_rows(inter_s);
    const std::uint64_t expert_bytes = (up_rows_e + inter_e) * H * eb;  // one expert's up and down
    // What layer l stores, and the part of it a step reads for every token (all but the experts).
    const auto mlp_bytes = [&](std::uint64_t l) {
        return moe_layer(l) ? (d.experts * H + (up_rows_s + inter_s) * H) * eb : (up_rows + d.intermediate) * H * eb;
    };
    const std::uint64_t attention_bytes = (d.qkv_rows() * H + H * d.q_heads * d.dv) * eb;
    const auto layer_paged = [&](std::uint64_t l) {
        const std::uint64_t attention = paged(d.qkv_rows() * H * eb) + paged(H * d.q_heads * d.dv * eb);
        if (!moe_layer(l)) return attention + paged(up_rows * H * eb) + paged(H * d.intermediate * eb);
        return attention + paged(d.experts * H * eb) + paged(d.experts * up_rows_e * H * eb) +
               paged(d.experts * H * inter_e * eb) +
               (d.shared ? paged(up_rows_s * H * eb) + paged(H * inter_s * eb) : 0);
    };
    const std::uint64_t outer_weights = (a.tied_embeddings ? 1 : 2) * paged(d.vocab * H * eb);
    std::uint64_t max_tokens = 1;
    std::vector<std::uint64_t> layer_kv(a.layers, 0);
    for (const KvTensor& t : *tensors) {
        layer_kv[t.layer] += paged(t.bytes);
        max_tokens = std::max(max_tokens, t.attended);
    }
    const AttentionShape sh = attention_shape(a);
    const std::uint64_t staged_row = sh.row_k + sh.row_v;  // a sequence's new K and V in fp32 (launch_rope_store)
    const DecodePlan plan = plan_decode(sh, req.kv_dtype, B, max_tokens, sms, wish.wish, wish.splits);
    const std::uint64_t width = std::max({d.qkv_rows(), up_rows, up_rows_s, d.vocab, H});
    const std::uint64_t input_width = std::max({H, d.intermediate, inter_s, d.q_heads * d.dv});  // the GEMMs' widest
    const std::uint64_t gemm_rows = std::max(width, d.experts);  // the most rows a GEMM gives (the router's too)
    // The experts' scratch: router logits, each (token, choice) pair's up output, activation and down output.
    const std::uint64_t expert_scratch =
        a.moe ? B * (d.experts + K * (up_rows_e + H) + H) * sizeof(float) + B * K * inter_e * ab : 0;
    const std::uint64_t activations =
        B * (2 * H + width + d.q_heads * (d.dk + d.dv)) * sizeof(float) + B * input_width * ab +
        (fp8 ? Fp8Gemm::device_bytes(B * input_width, B * gemm_rows) : 0) + plan.scores_bytes + plan.part_out_bytes +
        plan.part_ml_bytes + plan.out_bytes + expert_scratch;
    const std::uint64_t margin = 256ull << 20;  // cuBLAS's workspace and handle
    std::uint64_t need = outer_weights + activations + margin, layers_run = 0;
    for (std::uint64_t l = 0; l < a.layers; ++l) {
        const std::uint64_t more =
            layer_paged(l) + layer_kv[l] + 2 * B * sizeof(SlotDev) + B * K * 8 + B * staged_row * sizeof(float);
        if (need + more > limit) break;
        need += more;
        ++layers_run;
    }
    if (layers_run == 0)
        return fail(r, Status::out_of_memory,
                    "one layer (" + format_bytes(layer_paged(0) + layer_kv[0]) + " of weights and cache) beside the " +
                        "embedding and head (" + format_bytes(outer_weights) + "), the activations (" +
                        format_bytes(activations) + ") and cuBLAS's workspace (" + format_bytes(margin) +
                        ") needs more than the " + format_bytes(limit) + " of device memory " +
                        (control.memory_limit_bytes ? "the memory limit allows" : "free") +
                        "; lower the batch, the context or the weight precision");
    if (std::string why = step::experts_not_run(req, layers_run); !why.empty())
        return fail(r, Status::out_of_memory, why);
    r.layers_run = layers_run;
    r.scaled = layers_run < a.layers;

    control.report(0.1, "allocating " + format_bytes(need - margin) + " of weights and cache on " + device.name + " (" +
                            std::to_string(layers_run) + " of " + std::to_string(a.layers) + " layers)");
    // cuBLASLt's kernels for the fp8 GEMMs are chosen before anything large is allocated, so a shape it has none
    // for is refused at once.
    std::optional<Fp8Gemm> fp8_gemm;
    if (fp8) {
        fp8_gemm.emplace(B * input_width, B * gemm_rows);
        if (std::string why = fp8_gemm->prepare(fp8_shapes, B); !why.empty()) {
            r.weight_dtype_refused = true;
            return fail(r, Status::invalid_input, why);
        }
    }
    Blas blas;
    std::uint64_t seed = 104729;
    auto weights = [&](std::uint64_t elements) {
        DeviceBuffer w(elements * eb);
        fill_random(w.get(), elements, wcode, seed++);
        return w;
    };
    DeviceBuffer embedding = weights(d.vocab * H);
    DeviceBuffer head_own = a.tied_embeddings ? DeviceBuffer() : weights(d.vocab * H);
    const void* head = a.tied_embeddings ? embedding.get() : head_own.get();
    std::vector<LayerBuffers> layers;
    layers.reserve(layers_run);
    for (std::uint64_t l = 0; l < layers_run; ++l) {
        if (control.cancelled())
            return fail(r, Status::cancelled, "cancelled while allocating; all device memory was freed");
        LayerBuffers& w = layers.emplace_back();
        w.qkv = weights(d.qkv_rows() * H);
        w.o = weights(H * d.q_heads * d.dv);
        w.moe = moe_layer(l);
        if (w.moe) {
            w.router = weights(d.experts * H);
            w.experts_up = weights(d.experts * up_rows_e * H);
            w.experts_down = weights(d.experts * H * inter_e);
            if (d.shared) {
                w.up = weights(up_rows_s * H);
                w.down = weights(H * inter_s);
            }
        } else {
            w.up = weights(up_rows * H);
            w.down = weights(H * d.intermediate);
        }
    }
    // The cache of the layers run, filled at random, and where each sequence's new K and V row goes.
    const std::uint64_t row_k = cpu::row_size(req.kv_dtype, sh.row_k), row_v = cpu::row_size(req.kv_dtype, sh.row_v);
    std::vector<DeviceBuffer> cache;
    std::vector<SlotDev> slots(layers_run * B);
    std::vector<void*> new_k(layers_run * B), new_v(layers_run * B);
    std::vector<std::uint64_t> positions(layers_run * B);
    for (std::size_t i = 0; i < tensors->size(); ++i) {
        const KvTensor& t = (*tensors)[i];
        if (t.layer >= layers_run || !t.is_key()) continue;
        const KvTensor& v = (*tensors)[i + 1];
        auto* kb = static_cast<std::byte*>(cache.emplace_back(t.bytes).get());
        auto* vb = static_cast<std::byte*>(cache.emplace_back(v.bytes).get());
        fill_random(kb, cpu::values_in(req.kv_dtype, t.bytes), kvcode, 7 + 2 * i);
        fill_random(vb, cpu::values_in(req.kv_dtype, v.bytes), kvcode, 8 + 2 * i);
        const std::uint64_t at = t.layer * B + t.sequence;
        // The slot's `layer` indexes the queries: here, one row of queries per sequence.
        slots[at] = {kb, vb, t.attended, static_cast<std::uint32_t>(t.sequence)};
        new_k[at] = kb + (t.attended - 1) * row_k;
        new_v[at] = vb + (t.attended - 1) * row_v;
        positions[at] = t.attended - 1;
    }
    const DeviceArray<SlotDev> slot_table(slots);
    const DeviceArray<void*> new_k_dev(new_k), new_v_dev(new_v);
    const DeviceArray<std::uint64_t> positions_dev(positions);
    std::vector<std::uint64_t> tokens(B);
    for (std::uint64_t b = 0; b < B; ++b) tokens[b] = (b * 2654435761ull + 12345) % d.vocab;
    const DeviceArray<std::uint64_t> tokens_dev(tokens);
    DeviceArray<float> staged(layers_run * B * staged_row);
    DeviceArray<float> x(B * H), y(B * width), q(B * d.q_heads * d.dk), scores(plan.scores_bytes / sizeof(float) + 1),
        part_out(plan.part_out_bytes / sizeof(float) + 1), part_ml(plan.part_ml_bytes / sizeof(float) + 1),
        attn(plan.out_bytes / sizeof(float) + 1);
    DeviceBuffer xn(B * input_width * ab);
    // The experts' scratch, and each layer's choices (kept for the bytes read and the float64 check).
    DeviceArray<float> router_logits(a.moe ? B * d.experts : 1), expert_up(a.moe ? B * K * up_rows_e : 1),
        expert_down(a.moe ? B * K * H : 1), expert_out(a.moe ? B * H : 1),
        route_weights(std::max<std::uint64_t>(1, layers_run * B * K));
    DeviceArray<std::uint32_t> route_ids(std::max<std::uint64_t>(1, layers_run * B * K));
    DeviceArray<std::uint32_t> group_count(1), group_expert(B * K + 1), group_start(B * K + 1), group_order(B * K + 1);
    const ExpertGroups groups{group_count.get(), group_expert.get(), group_start.get(), group_order.get(),
                              static_cast<std::uint32_t>(d.experts)};
    DeviceBuffer expert_act(std::max<std::uint64_t>(1, B * K * inter_e * ab));
    // y = alpha · W·x for the whole batch: cuBLAS, or cuBLASLt's FP8 GEMM for fp8 weights.
    const auto gemm = [&](const void* w, std::uint64_t rows, std::uint64_t cols, float* out, float alpha) {
        if (fp8_gemm)
            fp8_gemm->matmul(w, rows, cols, xn.get(), B, out, alpha);
        else
            blas.matmul(wtype, w, rows, cols, xn.get(), B, out, alpha);
    };
    KVSCOPE_CUDA(cudaDeviceSynchronize());

    const RopeShape rope{static_cast<std::uint32_t>(d.q_heads), static_cast<std::uint32_t>(d.kv_heads),
                         static_cast<std::uint32_t>(d.dk), static_cast<std::uint32_t>(d.dv), d.qkv_rows()};
    const auto in_scale = [](std::uint64_t inputs) {
        return static_cast<float>(1.0 / std::sqrt(static_cast<double>(inputs)));
    };
    // A gated (or plain) MLP of the whole batch on xn, added to x; SiLU's output overwrites xn.
    const auto mlp = [&](const void* up, const void* down, std::uint64_t rows, std::uint64_t inter, Marks& fine) {
        fine.mark(Phase::weights);
        gemm(up, rows, H, y.get(), in_scale(H));
        fine.mark(Phase::other);
        launch_silu(y.get(), B, inter, d.gated, xn.get(), acode);
        fine.mark(Phase::weights);
        gemm(down, H, inter, y.get(), in_scale(inter));
        fine.mark(Phase::other);
        launch_add(x.get(), y.get(), B * H);
    };
    // One step for the batch. `fine` (when on) marks where each phase begins; `coarse` (when on) only the
    // layers and what is outside them, so the timed steps are not slowed by many events.
    auto run_step = [&](Marks& fine, Marks& coarse) {
        fine.mark(Phase::outer);
        coarse.mark(Phase::outer);
        launch_embed(embedding.get(), wcode, tokens_dev.get(), B, H, x.get());
        coarse.mark(Phase::layers);
        for (std::uint64_t l = 0; l < layers_run; ++l) {
            const LayerBuffers& w = layers[l];
            fine.mark(Phase::other);
            launch_rms_norm(x.get(), B, H, xn.get(), acode);
            fine.mark(Phase::weights);
            gemm(w.qkv.get(), d.qkv_rows(), H, y.get(), in_scale(H));
            fine.mark(Phase::attention);
            launch_rope_store(y.get(), rope, positions_dev.get() + l * B, new_k_dev.get() + l * B,
                              new_v_dev.get() + l * B, kvcode, q.get(), staged.get() + l * B * staged_row, B);
            launch_decode(plan,
                          {slot_table.get() + l * B, q.get(), scores.get(), part_out.get(), part_ml.get(), attn.get()});
            fine.mark(Phase::other);
            launch_cast(attn.get(), B * d.q_heads * d.dv, xn.get(), acode);
            fine.mark(Phase::weights);
            gemm(w.o.get(), H, d.q_heads * d.dv, y.get(), in_scale(d.q_heads * d.dv));
            fine.mark(Phase::other);
            launch_add(x.get(), y.get(), B * H);
            launch_rms_norm(x.get(), B, H, xn.get(), acode);
            if (w.moe) {
                // The router (raw products, as the CPU step's), each token's top-k, the choices grouped by
                // expert, each chosen expert's MLP for the tokens that chose it (its rows read once), summed
                // with the routing weights. The shared experts' MLP below still reads xn, which the experts
                // leave as it is.
                std::uint32_t* ids = route_ids.get() + l * B * K;
                float* chosen = route_weights.get() + l * B * K;
                fine.mark(Phase::weights);
                gemm(w.router.get(), d.experts, H, router_logits.get(), 1.0f);
                fine.mark(Phase::other);
                launch_route(router_logits.get(), B, static_cast<std::uint32_t>(d.experts),
                             static_cast<std::uint32_t>(K), ids, chosen);
                launch_group_pairs(ids, B * K, groups);
                fine.mark(Phase::weights);
                launch_expert_gemv(w.experts_up.get(), up_rows_e, H, groups, B * K, xn.get(),
                                   static_cast<std::uint32_t>(K), in_scale(H), expert_up.get(), wcode, acode);
                fine.mark(Phase::other);
                launch_silu(expert_up.get(), B * K, inter_e, d.gated, expert_act.get(), acode);
                fine.mark(Phase::weights);
                launch_expert_gemv(w.experts_down.get(), H, inter_e, groups, B * K, expert_act.get(), 1,
                                   in_scale(inter_e), expert_down.get(), wcode, acode);
                fine.mark(Phase::other);
                launch_expert_sum(expert_down.get(), chosen, B, static_cast<std::uint32_t>(K), H, expert_out.get());
                launch_add(x.get(), expert_out.get(), B * H);
                if (d.shared) mlp(w.up.get(), w.down.get(), up_rows_s, inter_s, fine);
            } else {
                mlp(w.up.get(), w.down.get(), up_rows, d.intermediate, fine);
            }
        }
        fine.mark(Phase::outer);
        coarse.mark(Phase::outer);
        launch_rms_norm(x.get(), B, H, xn.get(), acode);
        fine.mark(Phase::outer_weights);
        gemm(head, d.vocab, H, y.get(), in_scale(H));
        fine.mark(Phase::end);
        coarse.mark(Phase::end);
    };
    auto ms_of = [](const std::vector<double>& p, Phase x) { return p[static_cast<std::size_t>(x)]; };

    // One warm-up step, then the timed ones; the per-layer part is scaled to every layer.
    Marks off(false), coarse(true);
    std::vector<double> totals;
    const double f = static_cast<double>(a.layers) / static_cast<double>(layers_run);
    const int runs = std::max(1, req.timing_runs);
    for (int run = 0; run <= runs; ++run) {
        if (control.cancelled())
            return fail(r, Status::cancelled, "cancelled while timing; all device memory was freed");
        control.report(0.2 + 0.6 * run / (runs + 1),
                       "timing the decode step, run " + std::to_string(run) + " of " + std::to_string(runs));
        try {
            run_step(off, coarse);
        } catch (const CudaError& e) {
            // cuBLASLt refusing an fp8 GEMM only when it runs (its heuristic had offered a kernel, as on the H200 of
            // 2026-12-04) is a refusal of the weight format, as prepare()'s are: step.cpp then runs the step in bf16.
            if (!fp8_gemm || run > 0 || e.code() != cudaErrorNotSupported) throw;
            r.weight_dtype_refused = true;
            return fail(r, Status::invalid_input, std::string("weight_dtype: ") + e.what());
        }
        const std::vector<double> p = coarse.totals();
        if (run > 0) totals.push_back(ms_of(p, Phase::outer) + ms_of(p, Phase::layers) * f);
    }
    r.runs = runs;
    r.step_ms = step::median_of(totals);
    r.min_step_ms = *std::min_element(totals.begin(), totals.end());

    // The breakdown from one more step with a mark between phases (the marks cost a little time, so they
    // give the shares, and the median the total).
    control.report(0.85, "timing the phases of one step");
    Marks fine(true);
    run_step(fine, off);  // creates the events, so the run that is read does not wait for their creation
    (void)fine.totals();
    run_step(fine, off);
    const std::vector<double> p = fine.totals();
    const double outer = ms_of(p, Phase::outer) + ms_of(p, Phase::outer_weights);
    const double in_layers = (ms_of(p, Phase::weights) + ms_of(p, Phase::attention) + ms_of(p, Phase::other)) * f;
    const double share = outer + in_layers > 0 ? r.step_ms / (outer + in_layers) : 0;
    r.weights_ms = (ms_of(p, Phase::outer_weights) + ms_of(p, Phase::weights) * f) * share;
    r.attention_ms = ms_of(p, Phase::attention) * f * share;
    r.other_ms = std::max(0.0, r.step_ms - r.weights_ms - r.attention_ms);
    // What a step reads: the head, one embedding row a sequence, and each layer's matrices — of the experts,
    // those the batch chose in the last run (as the CPU step counts them), scaled to every layer.
    std::vector<std::uint32_t> ids_host(layers_run * B * K);
    std::vector<float> weights_host(layers_run * B * K);
    if (K) {
        KVSCOPE_CUDA(cudaMemcpy(ids_host.data(), route_ids.get(), ids_host.size() * sizeof(std::uint32_t),
                                cudaMemcpyDeviceToHost));
        KVSCOPE_CUDA(cudaMemcpy(weights_host.data(), route_weights.get(), weights_host.size() * sizeof(float),
                                cudaMemcpyDeviceToHost));
    }
    std::uint64_t layers_read = 0, experts_chosen = 0;
    for (std::uint64_t l = 0; l < layers_run; ++l) {
        layers_read += attention_bytes + mlp_bytes(l);
        if (!moe_layer(l)) continue;
        std::vector<bool> seen(d.experts, false);
        for (std::uint64_t i = l * B * K; i < (l + 1) * B * K; ++i)
            if (!seen[ids_host[i]]) {
                seen[ids_host[i]] = true;
                ++experts_chosen;
                layers_read += expert_bytes;
            }
    }
    r.weights_bytes_read =
        d.vocab * H * eb + B * H * eb + static_cast<std::uint64_t>(std::llround(static_cast<double>(layers_read) * f));
    r.experts_read = static_cast<std::uint64_t>(std::llround(static_cast<double>(experts_chosen) * f));
    r.kv_bytes_read = kv_bytes_read(*tensors);

    // The logits must be numbers: a step that overflowed would time nothing real.
    std::vector<float> logits(B * d.vocab);
    KVSCOPE_CUDA(cudaMemcpy(logits.data(), y.get(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (std::string why = step::non_finite_logits(logits); !why.empty()) return fail(r, Status::failed, why);
    // The check: the same layers in float64 on the host (step_reference.h), for models small enough to redo
    // that way, as the CPU step does. The GEMMs' inputs are rounded to the weight format, as engines keep
    // activations, so a 16-bit step differs from float64 by about that rounding.
    std::string checked = "logits checked finite (against float64 for up to 64 MiB of weights and 256 MiB of cache)";
    std::uint64_t run_weights = (a.tied_embeddings ? 1 : 2) * d.vocab * H * eb;
    for (std::uint64_t l = 0; l < layers_run; ++l)
        run_weights += attention_bytes + mlp_bytes(l) + (moe_layer(l) ? d.experts * expert_bytes : 0);
    std::uint64_t run_cache = 0;
    for (const SlotDev& slot : slots) run_cache += slot.tokens * (row_k + row_v);
    if (run_weights <= step::kReferenceWeightBytes && run_cache <= step::kReferenceCacheBytes) {
        try {
            control.report(0.9, "checking the logits against float64");
            std::vector<std::vector<std::byte>> host;  // the copies the reference reads
            const auto to_host = [&host](const void* device, std::uint64_t bytes) -> const void* {
                std::vector<std::byte>& h = host.emplace_back(bytes);
                KVSCOPE_CUDA(cudaMemcpy(h.data(), device, bytes, cudaMemcpyDeviceToHost));
                return h.data();
            };
            step::ReferenceStep ref;
            ref.dims = d;
            ref.weight_dtype = wd;
            ref.kv_dtype = req.kv_dtype;
            ref.embedding = to_host(embedding.get(), d.vocab * H * eb);
            ref.head = a.tied_embeddings ? ref.embedding : to_host(head, d.vocab * H * eb);
            ref.routes.resize(layers_run);
            for (std::uint64_t l = 0; l < layers_run; ++l) {
                const LayerBuffers& w = layers[l];
                step::ReferenceLayer& rl = ref.layers.emplace_back();
                rl.qkv = to_host(w.qkv.get(), d.qkv_rows() * H * eb);
                rl.o = to_host(w.o.get(), H * d.q_heads * d.dv * eb);
                rl.moe = w.moe;
                if (!w.moe) {
                    rl.up = to_host(w.up.get(), up_rows * H * eb);
                    rl.down = to_host(w.down.get(), H * d.intermediate * eb);
                    continue;
                }
                const auto* ups =
                    static_cast<const std::byte*>(to_host(w.experts_up.get(), d.experts * up_rows_e * H * eb));
                const auto* downs =
                    static_cast<const std::byte*>(to_host(w.experts_down.get(), d.experts * H * inter_e * eb));
                for (std::uint64_t e = 0; e < d.experts; ++e) {
                    rl.expert_up.push_back(ups + e * up_rows_e * H * eb);
                    rl.expert_down.push_back(downs + e * H * inter_e * eb);
                }
                if (d.shared) {
                    rl.shared_up = to_host(w.up.get(), up_rows_s * H * eb);
                    rl.shared_down = to_host(w.down.get(), H * inter_s * eb);
                }
                rl.router = to_host(w.router.get(), d.experts * H * eb);  // the GPU's choices are checked
                for (std::uint64_t b = 0; b < B; ++b) {                   // the experts the GPU chose, with its weights
                    step::Route& route = ref.routes[l].emplace_back();
                    for (std::uint64_t j = 0; j < K; ++j) {
                        route.experts.push_back(ids_host[(l * B + b) * K + j]);
                        route.weights.push_back(weights_host[(l * B + b) * K + j]);
                    }
                }
            }
            for (const SlotDev& slot : slots)  // each holds the last run's new K and V row, as the step wrote it
                ref.slots.push_back(
                    {to_host(slot.k, slot.tokens * row_k), to_host(slot.v, slot.tokens * row_v), slot.tokens});
            if (std::string why = new_rows_differ(req.kv_dtype, staged.get(), ref.slots, sh, row_k, row_v, B);
                !why.empty())
                return fail(r, Status::failed, why);
            ref.tokens = tokens;
            // The GEMMs' inputs are in the weight format (fp8: quantised to fp8_e4m3 with one scale).
            ref.slack = wd == KvDtype::fp32 ? 1e-4 : fp8 ? 0.1 : 1e-2;
            const step::ReferenceResult checked_step = step::reference_step(ref);
            if (!checked_step.wrong_row.empty()) return fail(r, Status::failed, checked_step.wrong_row);
            r.max_rel_error = max_relative_error(logits.data(), checked_step.logits);
            checked = "logits checked against float64 of the same layers";
        } catch (const std::bad_alloc&) {
            checked = "logits checked finite (this host could not hold the copies the float64 check reads)";
        }
    }
    r.kernel =
        (fp8 ? std::string("cuBLASLt FP8 GEMMs (fp8_e4m3 weights, per-tensor scale; the bf16 activations quantised to "
                           "fp8_e4m3 before each with one dynamic scale, amax / 448, as vLLM's fp8 layers do; fp32 "
                           "accumulate)")
             : "cuBLAS GEMMs (cublasGemmEx, " + std::string(to_string(wd)) + " in, fp32 accumulate)") +
        ", each weight read once per step for the whole batch" +
        (a.moe ? std::string("; experts: the router's top-k chosen on the GPU, the choices grouped by expert on the "
                             "GPU, each chosen expert's rows read once for the tokens that chose it (8 at a time") +
                     (fp8 ? ", fp8 weights beside bf16 inputs)" : ")")
               : "") +
        "; attention: " + plan.description + "; " + checked;
    step::predict(r, req, total);
    control.report(1.0, "done");
    r.message = step::finished_message(r);
    return r;
}

}  // namespace kvscope::probe::cuda
