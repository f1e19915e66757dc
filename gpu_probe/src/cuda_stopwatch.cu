#include "cuda_stopwatch.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "cuda_check.h"
#include "tiny_transformer.h"

namespace kvscope::probe {

namespace {

using M = TinyTransformer;
using Clock = std::chrono::steady_clock;

// Device memory for `n` floats, freed on every path.
class Floats {
public:
    explicit Floats(std::size_t n) { KVSCOPE_CUDA(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(float))); }
    Floats(const std::vector<float>& host) : Floats(host.size()) {
        KVSCOPE_CUDA(cudaMemcpy(p_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    }
    ~Floats() { KVSCOPE_CUDA_NOTHROW(cudaFree(p_)); }
    Floats(const Floats&) = delete;
    Floats& operator=(const Floats&) = delete;
    float* get() const { return p_; }

private:
    float* p_ = nullptr;
};

class Cublas {
public:
    Cublas() { KVSCOPE_CUDA(cublasCreate(&h_)); }
    ~Cublas() { cublasDestroy(h_); }
    Cublas(const Cublas&) = delete;
    Cublas& operator=(const Cublas&) = delete;
    cublasHandle_t get() const { return h_; }

private:
    cublasHandle_t h_{};
};

// Y[n × out] = X[n × in] · Wᵀ with W row-major out × in (all row-major): in cuBLAS's column-major
// terms Yᵀ = W · Xᵀ, i.e. op(A) = (W viewed as in × out)ᵀ.
void project(const Cublas& blas, const float* w, const float* x, float* y, int n, int in, int out) {
    const float one = 1.0f, zero = 0.0f;
    KVSCOPE_CUDA(cublasSgemm(blas.get(), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, in, x, in, &zero, y, out));
}

__global__ void gather_kernel(const float* embed, const int* tokens, float* x, int n) {
    const int row = blockIdx.x;
    if (row < n)
        for (int d = threadIdx.x; d < M::kModel; d += blockDim.x) x[row * M::kModel + d] = embed[tokens[row] * M::kModel + d];
}

// y = x / rms(x) per row (the norm weights are ones).
__global__ void rmsnorm_kernel(const float* x, float* y, int n) {
    __shared__ float partial[M::kModel];
    const int row = blockIdx.x, d = threadIdx.x;
    const float v = x[row * M::kModel + d];
    partial[d] = v * v;
    __syncthreads();
    for (int s = M::kModel / 2; s > 0; s /= 2) {
        if (d < s) partial[d] += partial[d + s];
        __syncthreads();
    }
    y[row * M::kModel + d] = v * rsqrtf(partial[0] / M::kModel + 1e-6f);
}

// Rotary embedding for rows at positions first … first + n − 1.
__global__ void rope_kernel(float* v, int first) {
    const int row = blockIdx.x, pair = threadIdx.x;  // kModel / 2 pairs
    const int head = pair / (M::kHeadDim / 2), i = pair % (M::kHeadDim / 2);
    const double theta = (first + row) * pow(10000.0, -2.0 * i / M::kHeadDim);
    const float c = static_cast<float>(cos(theta)), s = static_cast<float>(sin(theta));
    float* a = v + row * M::kModel + head * M::kHeadDim + 2 * i;
    const float a0 = a[0], b0 = a[1];
    a[0] = a0 * c - b0 * s;
    a[1] = a0 * s + b0 * c;
}

// Causal attention: query row i (position first + i) over keys 0 … first + i. One block per (row, head).
__global__ void attention_kernel(const float* q, const float* k, const float* v, float* out, int first) {
    extern __shared__ float scores[];
    __shared__ float reduce[2];
    const int row = blockIdx.x, head = blockIdx.y, n = first + row + 1;
    const float* qh = q + row * M::kModel + head * M::kHeadDim;
    const float scale = rsqrtf(static_cast<float>(M::kHeadDim));
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        float dot = 0;
        for (int d = 0; d < M::kHeadDim; ++d) dot += qh[d] * k[t * M::kModel + head * M::kHeadDim + d];
        scores[t] = dot * scale;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float mx = -INFINITY, sum = 0;
        for (int t = 0; t < n; ++t) mx = fmaxf(mx, scores[t]);
        for (int t = 0; t < n; ++t) sum += expf(scores[t] - mx);
        reduce[0] = mx;
        reduce[1] = sum;
    }
    __syncthreads();
    for (int d = threadIdx.x; d < M::kHeadDim; d += blockDim.x) {
        float acc = 0;
        for (int t = 0; t < n; ++t) acc += expf(scores[t] - reduce[0]) * v[t * M::kModel + head * M::kHeadDim + d];
        out[row * M::kModel + head * M::kHeadDim + d] = acc / reduce[1];
    }
}

__global__ void add_kernel(float* x, const float* y, int count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) x[i] += y[i];
}

__global__ void swiglu_kernel(float* gate, const float* up, int count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

class GpuModel {
public:
    GpuModel(const TinyTransformer& m, int max_positions)
        : max_(max_positions), embed_(m.embedding()), tokens_dev_(static_cast<std::size_t>(max_positions)),
          x_(act(M::kModel)), h_(act(M::kModel)), q_(act(M::kModel)), k_(act(M::kModel)), v_(act(M::kModel)),
          attn_(act(M::kModel)), o_(act(M::kModel)), gate_(act(M::kHidden)), up_(act(M::kHidden)), logits_(static_cast<std::size_t>(m.vocab())),
          vocab_(m.vocab()) {
        for (const auto& l : m.layers()) layers_.push_back(std::make_unique<Layer>(l, max_positions));
    }

    // Runs positions first … first + n − 1 (tokens already on the device), appending their K and V
    // to the cache, and returns the logits after the last one.
    std::vector<float> forward(const std::vector<int>& tokens, int first) {
        const int n = static_cast<int>(tokens.size());
        KVSCOPE_CUDA(cudaMemcpy(tokens_dev_.get(), tokens.data(), tokens.size() * sizeof(int), cudaMemcpyHostToDevice));
        gather_kernel<<<n, 128>>>(embed_.get(), tokens_dev_.get(), x_.get(), n);
        for (auto& L : layers_) {
            rmsnorm_kernel<<<n, M::kModel>>>(x_.get(), h_.get(), n);
            float* kc = L->k_cache.get() + static_cast<std::size_t>(first) * M::kModel;
            float* vc = L->v_cache.get() + static_cast<std::size_t>(first) * M::kModel;
            project(blas_, L->wq.get(), h_.get(), q_.get(), n, M::kModel, M::kModel);
            project(blas_, L->wk.get(), h_.get(), kc, n, M::kModel, M::kModel);
            project(blas_, L->wv.get(), h_.get(), vc, n, M::kModel, M::kModel);
            rope_kernel<<<n, M::kModel / 2>>>(q_.get(), first);
            rope_kernel<<<n, M::kModel / 2>>>(kc, first);
            attention_kernel<<<dim3(n, M::kHeads), 128, static_cast<std::size_t>(first + n) * sizeof(float)>>>(
                q_.get(), L->k_cache.get(), L->v_cache.get(), attn_.get(), first);
            project(blas_, L->wo.get(), attn_.get(), o_.get(), n, M::kModel, M::kModel);
            add_kernel<<<(n * M::kModel + 255) / 256, 256>>>(x_.get(), o_.get(), n * M::kModel);
            rmsnorm_kernel<<<n, M::kModel>>>(x_.get(), h_.get(), n);
            project(blas_, L->w1.get(), h_.get(), gate_.get(), n, M::kModel, M::kHidden);
            project(blas_, L->w3.get(), h_.get(), up_.get(), n, M::kModel, M::kHidden);
            swiglu_kernel<<<(n * M::kHidden + 255) / 256, 256>>>(gate_.get(), up_.get(), n * M::kHidden);
            project(blas_, L->w2.get(), gate_.get(), o_.get(), n, M::kHidden, M::kModel);
            add_kernel<<<(n * M::kModel + 255) / 256, 256>>>(x_.get(), o_.get(), n * M::kModel);
        }
        const float* last = x_.get() + static_cast<std::size_t>(n - 1) * M::kModel;
        rmsnorm_kernel<<<1, M::kModel>>>(last, h_.get(), 1);
        project(blas_, embed_.get(), h_.get(), logits_.get(), 1, M::kModel, vocab_);  // tied LM head
        KVSCOPE_CUDA(cudaGetLastError());
        std::vector<float> out(static_cast<std::size_t>(vocab_));
        KVSCOPE_CUDA(cudaMemcpy(out.data(), logits_.get(), out.size() * sizeof(float), cudaMemcpyDeviceToHost));
        return out;
    }

private:
    struct Layer {
        Layer(const TinyTransformer::Layer& l, int max_positions)
            : wq(l.wq), wk(l.wk), wv(l.wv), wo(l.wo), w1(l.w1), w2(l.w2), w3(l.w3),
              k_cache(static_cast<std::size_t>(max_positions) * M::kModel),
              v_cache(static_cast<std::size_t>(max_positions) * M::kModel) {}
        Floats wq, wk, wv, wo, w1, w2, w3, k_cache, v_cache;
    };
    std::size_t act(int width) const { return static_cast<std::size_t>(max_) * static_cast<std::size_t>(width); }

    int max_;
    Cublas blas_;
    Floats embed_;
    class Ints {
    public:
        explicit Ints(std::size_t n) { KVSCOPE_CUDA(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(int))); }
        ~Ints() { KVSCOPE_CUDA_NOTHROW(cudaFree(p_)); }
        Ints(const Ints&) = delete;
        Ints& operator=(const Ints&) = delete;
        int* get() const { return p_; }

    private:
        int* p_ = nullptr;
    } tokens_dev_;
    Floats x_, h_, q_, k_, v_, attn_, o_, gate_, up_, logits_;
    int vocab_;
    std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace

StopwatchReport run_cuda_stopwatch(const StopwatchRequest& request, const Control& control) {
    StopwatchReport r;
    if (request.tokens < 1 || request.tokens > 4096) {
        r.status = Status::invalid_input;
        r.message = "tokens: " + std::to_string(request.tokens) + " is outside 1 … 4096";
        return r;
    }
    try {
        const TinyTransformer model;
        const std::vector<int> prompt = model.encode(request.prompt);
        const int max_positions = static_cast<int>(prompt.size()) + request.tokens + 1;
        GpuModel gpu(model, max_positions);
        const double total = 2.0 * request.tokens;

        // With the cache: the prompt once, then one position per token.
        std::vector<float> logits = gpu.forward(prompt, 0);
        std::vector<int> history = prompt, cached_tokens;
        std::vector<std::vector<float>> cached_logits;
        for (int i = 0; i < request.tokens; ++i) {
            if (control.cancelled()) {
                r.status = Status::cancelled;
                r.message = "cancelled after " + std::to_string(i) + " cached tokens; device memory freed";
                return r;
            }
            const auto start = Clock::now();
            const int next = TinyTransformer::pick(logits, history);
            cached_tokens.push_back(next);
            cached_logits.push_back(logits);
            history.push_back(next);
            logits = gpu.forward({next}, static_cast<int>(history.size()) - 1);
            r.cached_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
            if (control.stopwatch_step) control.stopwatch_step(true, r.cached_ms.back());
            control.report((i + 1) / total, "with the cache: token " + std::to_string(i + 1));
        }
        // Without: every step runs a forward over the whole prefix (the cache is overwritten from 0).
        std::vector<int> prefix = prompt, uncached_tokens;
        for (int i = 0; i < request.tokens; ++i) {
            if (control.cancelled()) {
                r.status = Status::cancelled;
                r.message = "cancelled after " + std::to_string(i) + " recomputed tokens; device memory freed";
                return r;
            }
            const auto start = Clock::now();
            const std::vector<float> l = gpu.forward(prefix, 0);
            const int next = TinyTransformer::pick(l, prefix);
            r.uncached_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
            if (control.stopwatch_step) control.stopwatch_step(false, r.uncached_ms.back());
            for (std::size_t j = 0; j < l.size(); ++j)
                r.max_logit_diff = std::max(r.max_logit_diff, static_cast<double>(std::abs(l[j] - cached_logits[static_cast<std::size_t>(i)][j])));
            uncached_tokens.push_back(next);
            prefix.push_back(next);
            control.report((request.tokens + i + 1) / total, "recomputing: token " + std::to_string(i + 1));
        }
        r.text_cached = model.decode(cached_tokens);
        r.text_uncached = model.decode(uncached_tokens);
        r.tokens_identical = cached_tokens == uncached_tokens;
        double cached = 0, uncached = 0;
        for (double ms : r.cached_ms) cached += ms;
        for (double ms : r.uncached_ms) uncached += ms;
        char buf[200];
        std::snprintf(buf, sizeof buf, "%d tokens on the GPU (cuBLAS): %.1f ms with the cache, %.1f ms recomputing (%.1f× slower); texts %s",
                      request.tokens, cached, uncached, cached > 0 ? uncached / cached : 0.0,
                      r.tokens_identical ? "identical" : "differ");
        r.message = buf;
    } catch (const cuda::CudaError& e) {
        r.status = e.code() == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::failed;
        r.message = std::string(e.what()) + "; all device memory was freed";
    }
    return r;
}

}  // namespace kvscope::probe
