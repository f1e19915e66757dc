#pragma once
// A model split between the GPU and the host as llama.cpp splits it (-ngl, --n-cpu-moe, --no-kv-offload): which
// layers' weights and cache live in VRAM and which in system RAM, with the compute buffers each reserves, the most
// layers that fit the GPU,
// and the decode floor of the split, each part read at its own memory's bandwidth (offload.cpp).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// A host memory of the table: its peak bandwidth is channels x 64 bits x the transfer rate (JEDEC's DDR4 and DDR5
// rates; LPDDR5X's 128-bit bus for laptops' soldered memory).
struct HostPlatform {
    std::string_view id;    // "ddr5-5600-2ch"
    std::string_view name;  // "DDR5-5600, two channels (desktop)"
    std::uint64_t bandwidth_bytes_per_s = 0;
};
std::span<const HostPlatform> host_platforms();
const HostPlatform* find_host_platform(std::string_view id);
// "ddr4-3200-2ch, ddr5-5600-2ch, …" for help and errors.
std::string host_platform_ids();
// The host memory taken when none is given: a desktop's two channels of DDR5-5600.
constexpr std::string_view kDefaultHostPlatform = "ddr5-5600-2ch";

// What llama.cpp's --fit leaves free on each device (common/common.h fit_params_target: 1,024 MiB).
constexpr std::uint64_t kLlamaCppFitTargetBytes = 1024ull << 20;

// The most layers llama.cpp takes: its blocks and the output layer.
inline std::uint64_t llama_cpp_total_layers(const Architecture& arch) { return arch.layers + 1; }

// Whether llama.cpp keeps block `layer`'s cache on the GPU: its layer is among the last (-ngl counts the output
// layer first; src/llama-model.cpp load_tensors i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0)) and the cache
// follows its layer (src/llama-kv-cache.cpp; --no-kv-offload keeps all of it on the host).
inline bool llama_cpp_block_on_gpu(std::uint64_t layer, std::uint64_t n_layer, std::uint64_t gpu_layers) {
    return layer + gpu_layers >= n_layer + 1;
}

struct Offload {
    std::uint64_t total_layers = 0;     // llama.cpp's n_layer + 1: the blocks and the output layer
    std::uint64_t gpu_layers = 0;       // on the GPU: the output layer first, then the blocks from the last
    std::uint64_t most_gpu_layers = 0;  // the most that fit the GPU at this context and batch
    std::uint64_t cpu_moe_layers = 0;   // --n-cpu-moe: the first blocks whose experts stay in host memory
    // Bytes where they live: the weights, the cache (KV and recurrent state of every sequence), the compute buffers
    // and, on the GPU, the runtime overhead; their sums.
    std::uint64_t weights_gpu_bytes = 0, weights_host_bytes = 0;
    std::uint64_t kv_on_gpu_bytes = 0, kv_on_host_bytes = 0;
    std::uint64_t state_on_gpu_bytes = 0, state_on_host_bytes = 0;  // of those: the recurrent state
    std::uint64_t input_bytes = 0;  // of weights_host_bytes: the input layer's (the token embedding)
    std::uint64_t compute_buffer_gpu_bytes = 0, compute_buffer_host_bytes = 0;
    std::uint64_t overhead_gpu_bytes = 0;
    std::uint64_t gpu_bytes = 0, host_bytes = 0;
    std::uint64_t gpu_usable_bytes = 0;   // the GPU's memory at the engine's fraction
    std::uint64_t host_memory_bytes = 0;  // the host's RAM (0: not given, not checked)
    // The decode floor of the split: each step reads the GPU's part at its bandwidth and the host's at the host's.
    std::uint64_t host_bandwidth_bytes_per_s = 0;
    std::uint64_t read_gpu_bytes = 0, read_host_bytes = 0;  // per step: weights a token reads, cache and state
    double step_time_s = 0;
    double decode_tokens_per_s = 0;  // per sequence
    bool gpu_layers_given = false;   // -ngl given; else llama.cpp's default, every layer
    bool gpu_layers_auto = false;    // chosen as llama.cpp's --fit does: the most that leave its target free
    bool most_fit_host = true;       // the host holds the rest at most_gpu_layers (or its RAM is not known)
    bool kv_offload = true;          // the cache lives with its layer (--no-kv-offload: all in host memory)
    bool fits_gpu = false, fits_host = true;
    bool weights_exact = false;  // by layer from the GGUF's tensors, else the parameter count's shares
    std::vector<std::string> notes;
    [[nodiscard]] bool partial() const { return gpu_layers < total_layers; }
    // Anything of a layer in host memory beside the token embedding: layers, experts or the cache.
    [[nodiscard]] bool splits() const { return partial() || cpu_moe_layers > 0 || !kv_offload; }
    [[nodiscard]] bool fits() const { return fits_gpu && fits_host; }
    // What the host's part needs beyond its RAM (0 when it fits or the RAM is not known).
    [[nodiscard]] std::uint64_t host_short_bytes() const {
        return host_memory_bytes > 0 && host_bytes > host_memory_bytes ? host_bytes - host_memory_bytes : 0;
    }
};

// llama.cpp's split of the model `model` (its weights) whose cache is `cache` (engine_architecture's layers, one
// for each of the model's) at `workload` (engine_workload's) on the deployment's one GPU and host: the layers
// d.llama_cpp.gpu_layers asks (all when not given), and the most that fit. Errors name --gpu-layers and --n-cpu-moe
// when they ask for more layers than the model has.
Result<Offload> llama_cpp_offload(const Architecture& model, const Architecture& cache, KvDtype kv_dtype,
                                  const Workload& workload, const Deployment& d);

// The longest context (at the workload's batch) and the largest batch (at its context) whose split at the same
// layers fits the GPU and the host, up to the caps given: what a fit of a split model reports as its capacity.
struct SplitCapacity {
    std::uint64_t max_context = 0, max_batch = 0;
};
SplitCapacity split_capacity(const Architecture& model, const Architecture& cache, KvDtype kv_dtype,
                             const Workload& workload, const Deployment& d, std::uint64_t context_cap,
                             std::uint64_t batch_cap);

// The split in words, as every report shows it: "28 of 33 layers on the GPU: 14.2 GiB of VRAM, 5.1 GiB of RAM".
std::string offload_text(const Offload& o);
// The host's part: "3.1 GiB weights + 0.2 GiB compute buffer in RAM of 32 GiB; read at 89.6 GB/s; the most layers …".
std::string offload_host_text(const Offload& o);

}  // namespace kvscope
