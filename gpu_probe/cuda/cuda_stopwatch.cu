#include "cuda_stopwatch.h"

#include <cmath>
#include <memory>
#include <vector>

#include "cuda_block_reduce.cuh"
#include "cuda_check.h"
#include "cuda_memory.h"
#include "tiny_transformer.h"

namespace kvscope::probe {

namespace {

using M = TinyTransformer;

using cuda::DeviceArray;
using Floats = DeviceArray<float>;

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
        for (int d = threadIdx.x; d < M::kModel; d += blockDim.x)
            x[row * M::kModel + d] = embed[tokens[row] * M::kModel + d];
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

// Causal attention: query row i (position first + i) over keys 0 … first + i. One block per
// (row, head); the scores sit in shared memory (scores_floats(first + rows) floats).
__global__ void attention_kernel(const float* q, const float* k, const float* v, float* out, int first) {
    extern __shared__ float scores[];
    const int row = blockIdx.x, head = blockIdx.y, n = first + row + 1;
    const float* qh = q + row * M::kModel + head * M::kHeadDim;
    const float scale = rsqrtf(static_cast<float>(M::kHeadDim));
    float mx = -INFINITY;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        float dot = 0;
        for (int d = 0; d < M::kHeadDim; ++d) dot += qh[d] * k[t * M::kModel + head * M::kHeadDim + d];
        scores[t] = dot * scale;
        mx = fmaxf(mx, scores[t]);
    }
    mx = cuda::block_max(mx);
    float sum = 0;
    for (int t = threadIdx.x; t < n; t += blockDim.x) sum += (scores[t] = expf(scores[t] - mx));
    const float inv = 1.0f / cuda::block_sum(sum);  // its barriers also publish the weights
    for (int d = threadIdx.x; d < M::kHeadDim; d += blockDim.x) {
        float acc = 0;
        for (int t = 0; t < n; ++t) acc += scores[t] * v[t * M::kModel + head * M::kHeadDim + d];
        out[row * M::kModel + head * M::kHeadDim + d] = acc * inv;
    }
}

// Shared memory for `keys` scores, rounded up to whole 16-byte words with one word to spare:
// compute-sanitizer saw the compiled score loop read 12 bytes at once past a one- or two-score
// allocation.
constexpr std::size_t scores_bytes(int keys) { return (static_cast<std::size_t>(keys) + 7) / 4 * 16; }

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
        : max_(max_positions),
          embed_(m.embedding()),
          tokens_dev_(static_cast<std::size_t>(max_positions)),
          x_(act(M::kModel)),
          h_(act(M::kModel)),
          q_(act(M::kModel)),
          k_(act(M::kModel)),
          v_(act(M::kModel)),
          attn_(act(M::kModel)),
          o_(act(M::kModel)),
          gate_(act(M::kHidden)),
          up_(act(M::kHidden)),
          logits_(static_cast<std::size_t>(m.vocab())),
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
            attention_kernel<<<dim3(n, M::kHeads), 128, scores_bytes(first + n)>>>(
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
            : wq(l.wq),
              wk(l.wk),
              wv(l.wv),
              wo(l.wo),
              w1(l.w1),
              w2(l.w2),
              w3(l.w3),
              k_cache(static_cast<std::size_t>(max_positions) * M::kModel),
              v_cache(static_cast<std::size_t>(max_positions) * M::kModel) {}
        Floats wq, wk, wv, wo, w1, w2, w3, k_cache, v_cache;
    };
    std::size_t act(int width) const { return static_cast<std::size_t>(max_) * static_cast<std::size_t>(width); }

    int max_;
    Cublas blas_;
    Floats embed_;
    DeviceArray<int> tokens_dev_;
    Floats x_, h_, q_, k_, v_, attn_, o_, gate_, up_, logits_;
    int vocab_;
    std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace

StopwatchReport run_cuda_stopwatch(const StopwatchRequest& request, const Control& control) {
    try {
        const TinyTransformer model;
        const std::size_t max_positions =
            model.encode(request.prompt).size() + static_cast<std::size_t>(std::max(request.tokens, 0)) + 1;
        if (max_positions > 8192) {  // the device cache and the attention's scores are sized for this
            StopwatchReport r;
            r.status = Status::invalid_input;
            r.message = "prompt: the prompt plus the generated tokens must stay within 8192 positions";
            return r;
        }
        GpuModel gpu(model, static_cast<int>(max_positions));
        Generator device;
        device.prefill = [&](const std::vector<int>& prompt) { return gpu.forward(prompt, 0); };
        device.step = [&](int token, int position) { return gpu.forward({token}, position); };
        // The whole prefix in one batched forward, overwriting the cache from position 0.
        device.recompute = [&](const std::vector<int>& prefix) { return gpu.forward(prefix, 0); };
        device.where = " on the GPU (cuBLAS)";
        return generate_both(model, request, control, device);
    } catch (const cuda::CudaError& e) {
        StopwatchReport r;
        r.status = e.code() == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::failed;
        r.message = std::string(e.what()) + "; all device memory was freed";
        return r;
    }
}

}  // namespace kvscope::probe
