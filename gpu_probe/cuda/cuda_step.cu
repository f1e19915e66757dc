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
#include "cpu_formats.h"
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

// The step in phases, as the CPU step's (step.cpp: check_inputs, fit_layers, measure_ceiling, allocate,
// time_steps, count_reads, check_logits, finish): each phase fills its part of the report, or fails it and
// ends the step. Everything the step allocates is owned here and freed with it, on every path.
class CudaStep {
public:
    CudaStep(const StepRequest& req, const Control& control, const DeviceInfo& device)
        : req_(req),
          control_(control),
          device_(device),
          a_(req.arch),
          B_(req.workload.batch),
          wd_(req.weight_dtype),
          fp8_(wd_ == KvDtype::fp8_e4m3),
          ad_(fp8_ ? KvDtype::bf16 : wd_),
          wcode_(code_of(wd_)),
          acode_(code_of(ad_)),
          kvcode_(code_of(req.kv_dtype)),
          wtype_(cuda_type(wd_)),
          eb_(cpu::element_bytes(wd_)),
          ab_(cpu::element_bytes(ad_)),
          sms_(std::max(1u, device.compute_units)) {
        r_.device = device;
        r_.layers_total = a_.layers;
    }

    StepReport run() {
        if (check_inputs() && measure_ceiling() && fit_layers() && allocate() && time_steps() && count_reads() &&
            check_logits())
            finish();
        return std::move(r_);
    }

private:
    bool failed(Status s, std::string why) {
        r_ = fail(std::move(r_), s, std::move(why));
        return false;
    }
    bool refused_weights(std::string why) {
        r_.weight_dtype_refused = true;
        return failed(Status::invalid_input, std::move(why));
    }

    // What the CUDA step cannot run (beside what every step refuses), and cuBLASLt's fp8 GEMMs for every shape.
    bool check_inputs() {
        if (std::string why = step::dims_of(req_, d_); !why.empty()) return failed(Status::invalid_input, why);
        if (d_.top_k > kMaxTopK)
            return failed(Status::invalid_input, "experts_per_token: the CUDA step routes each token to at most " +
                                                     std::to_string(kMaxTopK) + " experts (not " +
                                                     std::to_string(d_.top_k) +
                                                     "); the CPU backend runs it (--backend cpu)");
        if (d_.experts > kMaxExperts)
            return failed(Status::invalid_input, "num_experts: the CUDA step groups a layer's tokens among at most " +
                                                     std::to_string(kMaxExperts) + " experts (not " +
                                                     std::to_string(d_.experts) +
                                                     "); the CPU backend runs it (--backend cpu)");
        auto tensors = step::cache_tensors(req_);  // refuses, with the reason, the formats the probe does not store
        if (!tensors) return failed(Status::invalid_input, tensors.error_text());
        tensors_ = std::move(tensors).value();
        if (std::string why = step::whole_cache_problem(req_); !why.empty()) return failed(Status::invalid_input, why);
        wish_ = attention_kernel_wish_from_environment();
        if (!wish_.error.empty()) return failed(Status::invalid_input, wish_.error);
        H_ = d_.hidden;
        K_ = d_.top_k;
        up_rows_ = d_.up_rows(d_.intermediate);
        inter_e_ = d_.expert_intermediate;
        up_rows_e_ = d_.up_rows(inter_e_);
        inter_s_ = d_.shared * inter_e_;
        up_rows_s_ = d_.up_rows(inter_s_);
        if (!fp8_) return true;
        // Every matrix cuBLASLt multiplies in fp8 (the experts' GEMV is ours).
        fp8_shapes_ = {{d_.qkv_rows(), H_}, {H_, d_.q_heads * d_.dv}, {d_.vocab, H_}};
        bool dense = false;  // a layer with the dense MLP
        for (std::uint64_t l = 0; l < a_.layers && !dense; ++l) dense = !moe_layer(l);
        if (dense) fp8_shapes_.insert(fp8_shapes_.end(), {{up_rows_, H_}, {H_, d_.intermediate}});
        if (a_.moe && d_.experts > 0) fp8_shapes_.emplace_back(d_.experts, H_);
        if (inter_s_) fp8_shapes_.insert(fp8_shapes_.end(), {{up_rows_s_, H_}, {H_, inter_s_}});
        KVSCOPE_CUDA(cudaFree(nullptr));
        if (std::string why = Fp8Gemm::unavailable(fp8_shapes_); !why.empty()) return refused_weights(why);
        return true;
    }

    // The memory the step may use, and the read ceiling first, so that its buffer is gone before the model is
    // allocated (within the limit too).
    bool measure_ceiling() {
        KVSCOPE_CUDA(cudaFree(nullptr));  // the context first, so the free memory read next is what the step may use
        std::size_t free0 = 0;
        KVSCOPE_CUDA(cudaMemGetInfo(&free0, &total_));
        limit_ = control_.memory_limit_bytes ? std::min<std::uint64_t>(control_.memory_limit_bytes, free0) : free0;
        control_.report(0.02, "measuring the read bandwidth ceiling");
        const std::uint64_t l2 = device_.cache_bytes;
        const std::uint64_t bytes =
            std::min<std::uint64_t>(req_.ceiling_bytes ? std::max<std::uint64_t>(req_.ceiling_bytes, 1ull << 20)
                                                       : std::max<std::uint64_t>({8 * l2, 1ull << 30}),
                                    limit_ / 2) /
            16 * 16;
        DeviceBuffer ceiling(bytes), sink(sizeof(unsigned));
        fill_random(ceiling.get(), bytes / 4, kFp32, 99);
        r_.ceiling_gbps = read_ceiling_gbps(ceiling.get(), bytes, sms_, sink.get<unsigned>());
        return true;
    }

    // Each allocation counts as cudaMalloc hands it out, rounded up to whole 2 MiB pages.
    static std::uint64_t paged(std::uint64_t bytes) { return (bytes + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20); }
    // Expert layers (as the CPU step's moe_layer): the router, every expert, and the shared experts' MLP.
    [[nodiscard]] bool moe_layer(std::uint64_t l) const { return step::expert_layer(a_, d_, l); }
    [[nodiscard]] std::uint64_t expert_bytes() const { return (up_rows_e_ + inter_e_) * H_ * eb_; }  // up and down
    [[nodiscard]] std::uint64_t attention_bytes() const { return (d_.qkv_rows() * H_ + H_ * d_.q_heads * d_.dv) * eb_; }
    // What layer l stores, and the part of it a step reads for every token (all but the experts).
    [[nodiscard]] std::uint64_t mlp_bytes(std::uint64_t l) const {
        return moe_layer(l) ? (d_.experts * H_ + (up_rows_s_ + inter_s_) * H_) * eb_
                            : (up_rows_ + d_.intermediate) * H_ * eb_;
    }
    [[nodiscard]] std::uint64_t layer_paged(std::uint64_t l) const {
        const std::uint64_t attention = paged(d_.qkv_rows() * H_ * eb_) + paged(H_ * d_.q_heads * d_.dv * eb_);
        if (!moe_layer(l)) return attention + paged(up_rows_ * H_ * eb_) + paged(H_ * d_.intermediate * eb_);
        return attention + paged(d_.experts * H_ * eb_) + paged(d_.experts * up_rows_e_ * H_ * eb_) +
               paged(d_.experts * H_ * inter_e_ * eb_) +
               (d_.shared ? paged(up_rows_s_ * H_ * eb_) + paged(H_ * inter_s_ * eb_) : 0);
    }

    // As many layers as fit beside the embedding, the head, the activations and cuBLAS's workspace.
    bool fit_layers() {
        const std::uint64_t outer_weights = (a_.tied_embeddings ? 1 : 2) * paged(d_.vocab * H_ * eb_);
        std::uint64_t max_tokens = 1;
        std::vector<std::uint64_t> layer_kv(a_.layers, 0);
        for (const KvTensor& t : tensors_) {
            layer_kv[t.layer] += paged(t.bytes);
            max_tokens = std::max(max_tokens, t.attended);
        }
        sh_ = attention_shape(a_);
        staged_row_ = sh_.row_k + sh_.row_v;  // a sequence's new K and V in fp32 (launch_rope_store)
        plan_ = plan_decode(sh_, req_.kv_dtype, B_, max_tokens, sms_, wish_.wish, wish_.splits);
        width_ = std::max({d_.qkv_rows(), up_rows_, up_rows_s_, d_.vocab, H_});
        input_width_ = std::max({H_, d_.intermediate, inter_s_, d_.q_heads * d_.dv});  // the GEMMs' widest
        gemm_rows_ = std::max(width_, d_.experts);  // the most rows a GEMM gives (the router's too)
        // The experts' scratch: router logits, each (token, choice) pair's up output, activation and down output.
        const std::uint64_t expert_scratch =
            a_.moe ? B_ * (d_.experts + K_ * (up_rows_e_ + H_) + H_) * sizeof(float) + B_ * K_ * inter_e_ * ab_ : 0;
        const std::uint64_t activations =
            B_ * (2 * H_ + width_ + d_.q_heads * (d_.dk + d_.dv)) * sizeof(float) + B_ * input_width_ * ab_ +
            (fp8_ ? Fp8Gemm::device_bytes(B_ * input_width_, B_ * gemm_rows_) : 0) + plan_.scores_bytes +
            plan_.part_out_bytes + plan_.part_ml_bytes + plan_.out_bytes + expert_scratch;
        const std::uint64_t margin = 256ull << 20;  // cuBLAS's workspace and handle
        std::uint64_t need = outer_weights + activations + margin, layers_run = 0;
        for (std::uint64_t l = 0; l < a_.layers; ++l) {
            const std::uint64_t more = layer_paged(l) + layer_kv[l] + 2 * B_ * sizeof(SlotDev) + B_ * K_ * 8 +
                                       B_ * staged_row_ * sizeof(float);
            if (need + more > limit_) break;
            need += more;
            ++layers_run;
        }
        if (layers_run == 0)
            return failed(Status::out_of_memory,
                          "one layer (" + format_bytes(layer_paged(0) + layer_kv[0]) +
                              " of weights and cache) beside the embedding and head (" + format_bytes(outer_weights) +
                              "), the activations (" + format_bytes(activations) + ") and cuBLAS's workspace (" +
                              format_bytes(margin) + ") needs more than the " + format_bytes(limit_) +
                              " of device memory " +
                              (control_.memory_limit_bytes ? "the memory limit allows" : "free") +
                              "; lower the batch, the context or the weight precision");
        if (std::string why = step::experts_not_run(req_, layers_run); !why.empty())
            return failed(Status::out_of_memory, why);
        layers_run_ = layers_run;
        allocated_bytes_ = need - margin;
        r_.layers_run = layers_run;
        r_.scaled = layers_run < a_.layers;
        return true;
    }

    bool allocate() {
        control_.report(0.1, "allocating " + format_bytes(allocated_bytes_) + " of weights and cache on " +
                                 device_.name + " (" + std::to_string(layers_run_) + " of " +
                                 std::to_string(a_.layers) + " layers)");
        // cuBLASLt's kernels for the fp8 GEMMs are chosen before anything large is allocated, so a shape it has
        // none for is refused at once.
        if (fp8_) {
            fp8_gemm_.emplace(B_ * input_width_, B_ * gemm_rows_);
            if (std::string why = fp8_gemm_->prepare(fp8_shapes_, B_); !why.empty()) return refused_weights(why);
        }
        blas_.emplace();
        return allocate_weights() && allocate_cache() && allocate_activations();
    }

    DeviceBuffer random_weights(std::uint64_t elements) {
        DeviceBuffer w(elements * eb_);
        fill_random(w.get(), elements, wcode_, seed_++);
        return w;
    }

    bool allocate_weights() {
        embedding_ = random_weights(d_.vocab * H_);
        if (!a_.tied_embeddings) head_own_ = random_weights(d_.vocab * H_);
        head_ = a_.tied_embeddings ? embedding_.get() : head_own_.get();
        layers_.reserve(layers_run_);
        for (std::uint64_t l = 0; l < layers_run_; ++l) {
            if (control_.cancelled())
                return failed(Status::cancelled, "cancelled while allocating; all device memory was freed");
            LayerBuffers& w = layers_.emplace_back();
            w.qkv = random_weights(d_.qkv_rows() * H_);
            w.o = random_weights(H_ * d_.q_heads * d_.dv);
            w.moe = moe_layer(l);
            if (w.moe) {
                w.router = random_weights(d_.experts * H_);
                w.experts_up = random_weights(d_.experts * up_rows_e_ * H_);
                w.experts_down = random_weights(d_.experts * H_ * inter_e_);
                if (d_.shared) {
                    w.up = random_weights(up_rows_s_ * H_);
                    w.down = random_weights(H_ * inter_s_);
                }
            } else {
                w.up = random_weights(up_rows_ * H_);
                w.down = random_weights(H_ * d_.intermediate);
            }
        }
        return true;
    }

    // The cache of the layers run, filled at random, and where each sequence's new K and V row goes.
    bool allocate_cache() {
        row_k_ = cpu::row_size(req_.kv_dtype, sh_.row_k);
        row_v_ = cpu::row_size(req_.kv_dtype, sh_.row_v);
        slots_.assign(layers_run_ * B_, {});
        std::vector<void*> new_k(layers_run_ * B_), new_v(layers_run_ * B_);
        std::vector<std::uint64_t> positions(layers_run_ * B_);
        for (std::size_t i = 0; i < tensors_.size(); ++i) {
            const KvTensor& t = tensors_[i];
            if (t.layer >= layers_run_ || !t.is_key()) continue;
            const KvTensor& v = tensors_[i + 1];
            auto* kb = static_cast<std::byte*>(cache_.emplace_back(t.bytes).get());
            auto* vb = static_cast<std::byte*>(cache_.emplace_back(v.bytes).get());
            fill_random(kb, cpu::values_in(req_.kv_dtype, t.bytes), kvcode_, 7 + 2 * i);
            fill_random(vb, cpu::values_in(req_.kv_dtype, v.bytes), kvcode_, 8 + 2 * i);
            const std::uint64_t at = t.layer * B_ + t.sequence;
            // The slot's `layer` indexes the queries: here, one row of queries per sequence.
            slots_[at] = {kb, vb, t.attended, static_cast<std::uint32_t>(t.sequence)};
            new_k[at] = kb + (t.attended - 1) * row_k_;
            new_v[at] = vb + (t.attended - 1) * row_v_;
            positions[at] = t.attended - 1;
        }
        slot_table_ = DeviceArray<SlotDev>(slots_);
        new_k_dev_ = DeviceArray<void*>(new_k);
        new_v_dev_ = DeviceArray<void*>(new_v);
        positions_dev_ = DeviceArray<std::uint64_t>(positions);
        return true;
    }

    // Random token ids, the activations, the attention's scratch and the experts'.
    bool allocate_activations() {
        tokens_.resize(B_);
        for (std::uint64_t b = 0; b < B_; ++b) tokens_[b] = (b * 2654435761ull + 12345) % d_.vocab;
        tokens_dev_ = DeviceArray<std::uint64_t>(tokens_);
        staged_ = DeviceArray<float>(layers_run_ * B_ * staged_row_);
        x_ = DeviceArray<float>(B_ * H_);
        y_ = DeviceArray<float>(B_ * width_);
        q_ = DeviceArray<float>(B_ * d_.q_heads * d_.dk);
        scores_ = DeviceArray<float>(plan_.scores_bytes / sizeof(float) + 1);
        part_out_ = DeviceArray<float>(plan_.part_out_bytes / sizeof(float) + 1);
        part_ml_ = DeviceArray<float>(plan_.part_ml_bytes / sizeof(float) + 1);
        attn_ = DeviceArray<float>(plan_.out_bytes / sizeof(float) + 1);
        xn_ = DeviceBuffer(B_ * input_width_ * ab_);
        // The experts' scratch, and each layer's choices (kept for the bytes read and the float64 check).
        router_logits_ = DeviceArray<float>(a_.moe ? B_ * d_.experts : 1);
        expert_up_ = DeviceArray<float>(a_.moe ? B_ * K_ * up_rows_e_ : 1);
        expert_down_ = DeviceArray<float>(a_.moe ? B_ * K_ * H_ : 1);
        expert_out_ = DeviceArray<float>(a_.moe ? B_ * H_ : 1);
        route_weights_ = DeviceArray<float>(std::max<std::uint64_t>(1, layers_run_ * B_ * K_));
        route_ids_ = DeviceArray<std::uint32_t>(std::max<std::uint64_t>(1, layers_run_ * B_ * K_));
        group_count_ = DeviceArray<std::uint32_t>(1);
        group_expert_ = DeviceArray<std::uint32_t>(B_ * K_ + 1);
        group_start_ = DeviceArray<std::uint32_t>(B_ * K_ + 1);
        group_order_ = DeviceArray<std::uint32_t>(B_ * K_ + 1);
        groups_ = {group_count_.get(), group_expert_.get(), group_start_.get(), group_order_.get(),
                   static_cast<std::uint32_t>(d_.experts)};
        expert_act_ = DeviceBuffer(std::max<std::uint64_t>(1, B_ * K_ * inter_e_ * ab_));
        KVSCOPE_CUDA(cudaDeviceSynchronize());
        return true;
    }

    static float in_scale(std::uint64_t inputs) {
        return static_cast<float>(1.0 / std::sqrt(static_cast<double>(inputs)));
    }
    // y = alpha · W·x for the whole batch: cuBLAS, or cuBLASLt's FP8 GEMM for fp8 weights.
    void gemm(const void* w, std::uint64_t rows, std::uint64_t cols, float* out, float alpha) {
        if (fp8_gemm_)
            fp8_gemm_->matmul(w, rows, cols, xn_.get(), B_, out, alpha);
        else
            blas_->matmul(wtype_, w, rows, cols, xn_.get(), B_, out, alpha);
    }
    // A gated (or plain) MLP of the whole batch on xn, added to x; SiLU's output overwrites xn.
    void mlp(const void* up, const void* down, std::uint64_t rows, std::uint64_t inter, Marks& fine) {
        fine.mark(Phase::weights);
        gemm(up, rows, H_, y_.get(), in_scale(H_));
        fine.mark(Phase::other);
        launch_silu(y_.get(), B_, inter, d_.gated, xn_.get(), acode_);
        fine.mark(Phase::weights);
        gemm(down, H_, inter, y_.get(), in_scale(inter));
        fine.mark(Phase::other);
        launch_add(x_.get(), y_.get(), B_ * H_);
    }
    // The router (raw products, as the CPU step's), each token's top-k, the choices grouped by expert, each
    // chosen expert's MLP for the tokens that chose it (its rows read once), summed with the routing weights.
    // The shared experts' MLP still reads xn, which the experts leave as it is.
    void experts(std::uint64_t l, const LayerBuffers& w, Marks& fine) {
        std::uint32_t* ids = route_ids_.get() + l * B_ * K_;
        float* chosen = route_weights_.get() + l * B_ * K_;
        fine.mark(Phase::weights);
        gemm(w.router.get(), d_.experts, H_, router_logits_.get(), 1.0f);
        fine.mark(Phase::other);
        launch_route(router_logits_.get(), B_, static_cast<std::uint32_t>(d_.experts), static_cast<std::uint32_t>(K_),
                     ids, chosen);
        launch_group_pairs(ids, B_ * K_, groups_);
        fine.mark(Phase::weights);
        launch_expert_gemv(w.experts_up.get(), up_rows_e_, H_, groups_, B_ * K_, xn_.get(),
                           static_cast<std::uint32_t>(K_), in_scale(H_), expert_up_.get(), wcode_, acode_);
        fine.mark(Phase::other);
        launch_silu(expert_up_.get(), B_ * K_, inter_e_, d_.gated, expert_act_.get(), acode_);
        fine.mark(Phase::weights);
        launch_expert_gemv(w.experts_down.get(), H_, inter_e_, groups_, B_ * K_, expert_act_.get(), 1,
                           in_scale(inter_e_), expert_down_.get(), wcode_, acode_);
        fine.mark(Phase::other);
        launch_expert_sum(expert_down_.get(), chosen, B_, static_cast<std::uint32_t>(K_), H_, expert_out_.get());
        launch_add(x_.get(), expert_out_.get(), B_ * H_);
        if (d_.shared) mlp(w.up.get(), w.down.get(), up_rows_s_, inter_s_, fine);
    }
    // Layer l's attention: the QKV projection, RoPE and the new rows into the cache, decode, the output
    // projection and the residual.
    void attention(std::uint64_t l, const LayerBuffers& w, Marks& fine) {
        const RopeShape rope{static_cast<std::uint32_t>(d_.q_heads), static_cast<std::uint32_t>(d_.kv_heads),
                             static_cast<std::uint32_t>(d_.dk), static_cast<std::uint32_t>(d_.dv), d_.qkv_rows()};
        fine.mark(Phase::other);
        launch_rms_norm(x_.get(), B_, H_, xn_.get(), acode_);
        fine.mark(Phase::weights);
        gemm(w.qkv.get(), d_.qkv_rows(), H_, y_.get(), in_scale(H_));
        fine.mark(Phase::attention);
        launch_rope_store(y_.get(), rope, positions_dev_.get() + l * B_, new_k_dev_.get() + l * B_,
                          new_v_dev_.get() + l * B_, kvcode_, q_.get(), staged_.get() + l * B_ * staged_row_, B_);
        launch_decode(
            plan_, {slot_table_.get() + l * B_, q_.get(), scores_.get(), part_out_.get(), part_ml_.get(), attn_.get()});
        fine.mark(Phase::other);
        launch_cast(attn_.get(), B_ * d_.q_heads * d_.dv, xn_.get(), acode_);
        fine.mark(Phase::weights);
        gemm(w.o.get(), H_, d_.q_heads * d_.dv, y_.get(), in_scale(d_.q_heads * d_.dv));
        fine.mark(Phase::other);
        launch_add(x_.get(), y_.get(), B_ * H_);
    }
    // One step for the batch. `fine` (when on) marks where each phase begins; `coarse` (when on) only the
    // layers and what is outside them, so the timed steps are not slowed by many events.
    void run_step(Marks& fine, Marks& coarse) {
        fine.mark(Phase::outer);
        coarse.mark(Phase::outer);
        launch_embed(embedding_.get(), wcode_, tokens_dev_.get(), B_, H_, x_.get());
        coarse.mark(Phase::layers);
        for (std::uint64_t l = 0; l < layers_run_; ++l) {
            const LayerBuffers& w = layers_[l];
            attention(l, w, fine);
            launch_rms_norm(x_.get(), B_, H_, xn_.get(), acode_);
            if (w.moe)
                experts(l, w, fine);
            else
                mlp(w.up.get(), w.down.get(), up_rows_, d_.intermediate, fine);
        }
        fine.mark(Phase::outer);
        coarse.mark(Phase::outer);
        launch_rms_norm(x_.get(), B_, H_, xn_.get(), acode_);
        fine.mark(Phase::outer_weights);
        gemm(head_, d_.vocab, H_, y_.get(), in_scale(H_));
        fine.mark(Phase::end);
        coarse.mark(Phase::end);
    }
    static double ms_of(const std::vector<double>& p, Phase x) { return p[static_cast<std::size_t>(x)]; }

    // One warm-up step, then the timed ones; the per-layer part is scaled to every layer. Then the breakdown
    // from one more step with a mark between phases (the marks cost a little time, so they give the shares, and
    // the median the total).
    bool time_steps() {
        Marks off(false), coarse(true);
        std::vector<double> totals;
        const double f = layer_scale();
        const int runs = std::max(1, req_.timing_runs);
        for (int run = 0; run <= runs; ++run) {
            if (control_.cancelled())
                return failed(Status::cancelled, "cancelled while timing; all device memory was freed");
            control_.report(0.2 + 0.6 * run / (runs + 1),
                            "timing the decode step, run " + std::to_string(run) + " of " + std::to_string(runs));
            try {
                run_step(off, coarse);
            } catch (const CudaError& e) {
                // cuBLASLt refusing an fp8 GEMM only when it runs (its heuristic had offered a kernel, as on the H200
                // of 2026-12-04) is a refusal of the weight format, as prepare()'s are: step.cpp then runs the step
                // in bf16.
                if (!fp8_gemm_ || run > 0 || e.code() != cudaErrorNotSupported) throw;
                return refused_weights(std::string("weight_dtype: ") + e.what());
            }
            const std::vector<double> p = coarse.totals();
            if (run > 0) totals.push_back(ms_of(p, Phase::outer) + ms_of(p, Phase::layers) * f);
        }
        r_.runs = runs;
        r_.step_ms = step::median_of(totals);
        r_.min_step_ms = *std::min_element(totals.begin(), totals.end());

        control_.report(0.85, "timing the phases of one step");
        Marks fine(true);
        run_step(fine, off);  // creates the events, so the run that is read does not wait for their creation
        (void)fine.totals();
        run_step(fine, off);
        const std::vector<double> p = fine.totals();
        const double outer = ms_of(p, Phase::outer) + ms_of(p, Phase::outer_weights);
        const double in_layers = (ms_of(p, Phase::weights) + ms_of(p, Phase::attention) + ms_of(p, Phase::other)) * f;
        const double share = outer + in_layers > 0 ? r_.step_ms / (outer + in_layers) : 0;
        r_.weights_ms = (ms_of(p, Phase::outer_weights) + ms_of(p, Phase::weights) * f) * share;
        r_.attention_ms = ms_of(p, Phase::attention) * f * share;
        r_.other_ms = std::max(0.0, r_.step_ms - r_.weights_ms - r_.attention_ms);
        return true;
    }
    [[nodiscard]] double layer_scale() const {
        return static_cast<double>(a_.layers) / static_cast<double>(layers_run_);
    }

    // What a step reads: the head, one embedding row a sequence, and each layer's matrices — of the experts,
    // those the batch chose in the last run (as the CPU step counts them), scaled to every layer.
    bool count_reads() {
        ids_host_.resize(layers_run_ * B_ * K_);
        weights_host_.resize(layers_run_ * B_ * K_);
        if (K_) {
            KVSCOPE_CUDA(cudaMemcpy(ids_host_.data(), route_ids_.get(), ids_host_.size() * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToHost));
            KVSCOPE_CUDA(cudaMemcpy(weights_host_.data(), route_weights_.get(), weights_host_.size() * sizeof(float),
                                    cudaMemcpyDeviceToHost));
        }
        std::uint64_t layers_read = 0, experts_chosen = 0;
        for (std::uint64_t l = 0; l < layers_run_; ++l) {
            layers_read += attention_bytes() + mlp_bytes(l);
            if (!moe_layer(l)) continue;
            std::vector<bool> seen(d_.experts, false);
            for (std::uint64_t i = l * B_ * K_; i < (l + 1) * B_ * K_; ++i)
                if (!seen[ids_host_[i]]) {
                    seen[ids_host_[i]] = true;
                    ++experts_chosen;
                    layers_read += expert_bytes();
                }
        }
        const double f = layer_scale();
        r_.weights_bytes_read = d_.vocab * H_ * eb_ + B_ * H_ * eb_ +
                                static_cast<std::uint64_t>(std::llround(static_cast<double>(layers_read) * f));
        r_.experts_read = static_cast<std::uint64_t>(std::llround(static_cast<double>(experts_chosen) * f));
        r_.kv_bytes_read = kv_bytes_read(tensors_);
        return true;
    }

    // The logits must be numbers: a step that overflowed would time nothing real. Then the same layers in float64
    // on the host (step_reference.h), for models small enough to redo that way, as the CPU step does. The GEMMs'
    // inputs are rounded to the weight format, as engines keep activations, so a 16-bit step differs from float64
    // by about that rounding.
    bool check_logits() {
        std::vector<float> logits(B_ * d_.vocab);
        KVSCOPE_CUDA(cudaMemcpy(logits.data(), y_.get(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost));
        if (std::string why = step::non_finite_logits(logits); !why.empty()) return failed(Status::failed, why);
        checked_ = "logits checked finite (against float64 for up to 64 MiB of weights and 256 MiB of cache)";
        std::uint64_t run_weights = (a_.tied_embeddings ? 1 : 2) * d_.vocab * H_ * eb_;
        for (std::uint64_t l = 0; l < layers_run_; ++l)
            run_weights += attention_bytes() + mlp_bytes(l) + (moe_layer(l) ? d_.experts * expert_bytes() : 0);
        std::uint64_t run_cache = 0;
        for (const SlotDev& slot : slots_) run_cache += slot.tokens * (row_k_ + row_v_);
        if (run_weights > step::kReferenceWeightBytes || run_cache > step::kReferenceCacheBytes) return true;
        try {
            control_.report(0.9, "checking the logits against float64");
            std::vector<std::vector<std::byte>> host;  // the copies the reference reads
            step::ReferenceStep ref = reference(host);
            if (std::string why = new_rows_differ(req_.kv_dtype, staged_.get(), ref.slots, sh_, row_k_, row_v_, B_);
                !why.empty())
                return failed(Status::failed, why);
            const step::ReferenceResult checked_step = step::reference_step(ref);
            if (!checked_step.wrong_row.empty()) return failed(Status::failed, checked_step.wrong_row);
            r_.max_rel_error = max_relative_error(logits.data(), checked_step.logits);
            checked_ = "logits checked against float64 of the same layers";
        } catch (const std::bad_alloc&) {
            checked_ = "logits checked finite (this host could not hold the copies the float64 check reads)";
        }
        return true;
    }

    // The step's weights, cache and the experts the GPU chose, copied to `host` as the float64 reference reads
    // them.
    step::ReferenceStep reference(std::vector<std::vector<std::byte>>& host) const {
        const auto to_host = [&host](const void* device, std::uint64_t bytes) -> const void* {
            std::vector<std::byte>& h = host.emplace_back(bytes);
            KVSCOPE_CUDA(cudaMemcpy(h.data(), device, bytes, cudaMemcpyDeviceToHost));
            return h.data();
        };
        step::ReferenceStep ref;
        ref.dims = d_;
        ref.weight_dtype = wd_;
        ref.kv_dtype = req_.kv_dtype;
        ref.embedding = to_host(embedding_.get(), d_.vocab * H_ * eb_);
        ref.head = a_.tied_embeddings ? ref.embedding : to_host(head_, d_.vocab * H_ * eb_);
        ref.routes.resize(layers_run_);
        for (std::uint64_t l = 0; l < layers_run_; ++l) {
            const LayerBuffers& w = layers_[l];
            step::ReferenceLayer& rl = ref.layers.emplace_back();
            rl.qkv = to_host(w.qkv.get(), d_.qkv_rows() * H_ * eb_);
            rl.o = to_host(w.o.get(), H_ * d_.q_heads * d_.dv * eb_);
            rl.moe = w.moe;
            if (!w.moe) {
                rl.up = to_host(w.up.get(), up_rows_ * H_ * eb_);
                rl.down = to_host(w.down.get(), H_ * d_.intermediate * eb_);
                continue;
            }
            const auto* ups =
                static_cast<const std::byte*>(to_host(w.experts_up.get(), d_.experts * up_rows_e_ * H_ * eb_));
            const auto* downs =
                static_cast<const std::byte*>(to_host(w.experts_down.get(), d_.experts * H_ * inter_e_ * eb_));
            for (std::uint64_t e = 0; e < d_.experts; ++e) {
                rl.expert_up.push_back(ups + e * up_rows_e_ * H_ * eb_);
                rl.expert_down.push_back(downs + e * H_ * inter_e_ * eb_);
            }
            if (d_.shared) {
                rl.shared_up = to_host(w.up.get(), up_rows_s_ * H_ * eb_);
                rl.shared_down = to_host(w.down.get(), H_ * inter_s_ * eb_);
            }
            rl.router = to_host(w.router.get(), d_.experts * H_ * eb_);  // the GPU's choices are checked
            for (std::uint64_t b = 0; b < B_; ++b) {                     // the experts the GPU chose, with its weights
                step::Route& route = ref.routes[l].emplace_back();
                for (std::uint64_t j = 0; j < K_; ++j) {
                    route.experts.push_back(ids_host_[(l * B_ + b) * K_ + j]);
                    route.weights.push_back(weights_host_[(l * B_ + b) * K_ + j]);
                }
            }
        }
        for (const SlotDev& slot : slots_)  // each holds the last run's new K and V row, as the step wrote it
            ref.slots.push_back(
                {to_host(slot.k, slot.tokens * row_k_), to_host(slot.v, slot.tokens * row_v_), slot.tokens});
        ref.tokens = tokens_;
        // The GEMMs' inputs are in the weight format (fp8: quantised to fp8_e4m3 with one scale).
        ref.slack = wd_ == KvDtype::fp32 ? 1e-4 : fp8_ ? 0.1 : 1e-2;
        return ref;
    }

    void finish() {
        r_.kernel =
            (fp8_
                 ? std::string("cuBLASLt FP8 GEMMs (fp8_e4m3 weights, per-tensor scale; the bf16 activations quantised "
                               "to fp8_e4m3 before each with one dynamic scale, amax / 448, as vLLM's fp8 layers do; "
                               "fp32 accumulate)")
                 : "cuBLAS GEMMs (cublasGemmEx, " + std::string(to_string(wd_)) + " in, fp32 accumulate)") +
            ", each weight read once per step for the whole batch" +
            (a_.moe ? std::string("; experts: the router's top-k chosen on the GPU, the choices grouped by expert on "
                                  "the GPU, each chosen expert's rows read once for the tokens that chose it (8 at a "
                                  "time") +
                          (fp8_ ? ", fp8 weights beside bf16 inputs)" : ")")
                    : "") +
            "; attention: " + plan_.description + "; " + checked_;
        step::predict(r_, req_, total_);
        control_.report(1.0, "done");
        r_.message = step::finished_message(r_);
    }

    // The request, and the formats it multiplies in: fp8 weights multiply bf16 activations (quantised to fp8
    // inside each GEMM: cuda_fp8_gemm.h); the others activations of their own format.
    const StepRequest& req_;
    const Control& control_;
    const DeviceInfo& device_;
    const Architecture& a_;
    const std::uint64_t B_;
    const KvDtype wd_;
    const bool fp8_;
    const KvDtype ad_;
    const int wcode_, acode_, kvcode_;
    const cudaDataType wtype_;
    const std::size_t eb_, ab_;
    const unsigned sms_;
    StepReport r_;

    // check_inputs: the shapes, the cache's tensors, the attention kernel asked for.
    Dims d_;
    std::uint64_t H_ = 0, K_ = 0, up_rows_ = 0, inter_e_ = 0, up_rows_e_ = 0, inter_s_ = 0, up_rows_s_ = 0;
    std::vector<KvTensor> tensors_;
    KernelWishRead wish_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> fp8_shapes_;
    // measure_ceiling and fit_layers: the memory, the layers run, the attention's plan and the widest buffers.
    std::size_t total_ = 0;
    std::uint64_t limit_ = 0, layers_run_ = 0, allocated_bytes_ = 0;
    AttentionShape sh_{};
    std::uint64_t staged_row_ = 0, width_ = 0, input_width_ = 0, gemm_rows_ = 0;
    DecodePlan plan_;
    // allocate: the GEMMs, the weights, the cache and the activations.
    std::optional<Fp8Gemm> fp8_gemm_;
    std::optional<Blas> blas_;
    std::uint64_t seed_ = 104729;
    DeviceBuffer embedding_, head_own_;
    const void* head_ = nullptr;
    std::vector<LayerBuffers> layers_;
    std::uint64_t row_k_ = 0, row_v_ = 0;
    std::vector<DeviceBuffer> cache_;
    std::vector<SlotDev> slots_;
    DeviceArray<SlotDev> slot_table_;
    DeviceArray<void*> new_k_dev_, new_v_dev_;
    DeviceArray<std::uint64_t> positions_dev_, tokens_dev_;
    std::vector<std::uint64_t> tokens_;
    DeviceArray<float> staged_, x_, y_, q_, scores_, part_out_, part_ml_, attn_;
    DeviceBuffer xn_;
    DeviceArray<float> router_logits_, expert_up_, expert_down_, expert_out_, route_weights_;
    DeviceArray<std::uint32_t> route_ids_, group_count_, group_expert_, group_start_, group_order_;
    ExpertGroups groups_{};
    DeviceBuffer expert_act_;
    // count_reads and check_logits: the experts the last run chose, and how the logits were checked.
    std::vector<std::uint32_t> ids_host_;
    std::vector<float> weights_host_;
    std::string checked_;
};

}  // namespace

StepReport run_cuda_step(const StepRequest& req, const Control& control, const DeviceInfo& device) {
    CudaStep step(req, control, device);
    return step.run();
}

}  // namespace kvscope::probe::cuda
