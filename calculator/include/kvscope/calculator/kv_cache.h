#pragma once
// The one formula of KVScope:
//
//   bytes = Σ over layers l:  sequences
//                             × round_up(kept_l(T), block)
//                             × kv_heads_per_gpu_l × (d_k,l + d_v,l) × bits_per_element / 8
//   kept_l(T) = T (full attention), min(T, w) (sliding window w, chunk w), 0 (shared, recurrent, none)
//   (MLA layers: one latent of kv_lora_rank + qk_rope_head_dim values, no ×2)
//   kv_heads_per_gpu = max(1, kv_heads / tp)   (replicated when tp > kv_heads)
//
//   state = Σ over layers that keep a recurrent state:  sequences × (conv + SSM state per GPU)
//   (vLLM's shapes, vllm/model_executor/layers/mamba/mamba_utils.py; flat in T)
//
// Every KV and state byte count in the program comes from here.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// The window the engine honours on `layer` (a sliding window or a chunk), or 0 (the full context)
// when the layer has none or the engine keeps the full context on sliding layers.
std::uint64_t honoured_window(const Architecture& arch, const Workload& workload, std::uint64_t layer);
std::uint64_t honoured_window(const LayerSpec& layer, const Workload& workload);

// One token of one MLA layer on one GPU: the latent and rope values in `dtype`, and, for DeepSeek-V3.2,
// the indexer's key. As vLLM stores them (vllm/v1/kv_cache_interface.py MLAAttentionSpec,
// vllm/model_executor/models/deepseek_v2.py Indexer): the indexer's key is index_head_dim fp8 values
// plus one fp32 scale per 128 of them whatever the cache format (132 bytes for 128), and a model with
// an indexer keeps an fp8 latent as fp8_ds_mla, 656 bytes (512 fp8 values, 4 fp32 scales, 64 bf16
// rope values), for FlashMLA's sparse kernels.
Checked mla_row_bytes(const MlaDims& mla, KvDtype dtype, bool with_indexer = true);
// The indexer's key alone (0 without an indexer): index_head_dim fp8 values and an fp32 scale per 128.
Checked indexer_row_bytes(const MlaDims& mla);

// One layer's recurrent state for one sequence on one GPU of `tp` tensor-parallel GPUs, in vLLM's shapes:
// the values of its convolution state and of its SSM state, and their bytes in their formats.
struct StateValues {
    Checked conv;
    Checked ssm;
};
StateValues state_values_per_gpu(const RecurrentState& state, std::uint64_t tp);
Checked state_bytes_per_gpu(const RecurrentState& state, std::uint64_t tp);

// What a byte count covers: the attention KV cache alone, or the KV cache and the recurrent state.
enum class Memory { kv, kv_and_state };

// The cache's shape with the formula's constant factors folded, so that the bytes
// at any context are a handful of multiplications (curves evaluate it thousands of times).
class KvLayout {
public:
    static Result<KvLayout> make(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                 const Parallelism& parallel);

    // One sequence, one GPU of pipeline stage `stage`, at context `tokens`.
    [[nodiscard]] Checked stage_bytes_per_sequence(std::size_t stage, std::uint64_t tokens,
                                                   Memory what = Memory::kv) const;
    // One sequence on the heaviest GPU.
    [[nodiscard]] Checked gpu_bytes_per_sequence(std::uint64_t tokens, Memory what = Memory::kv) const;
    // One sequence summed over every GPU (replicated heads count on each GPU).
    [[nodiscard]] Checked all_gpu_bytes_per_sequence(std::uint64_t tokens, Memory what = Memory::kv) const;
    // The same KV sum in long double, where the exact one passes 2^64 bytes: only ever compared (a percentage of
    // MHA), never shown as a byte count.
    [[nodiscard]] long double all_gpu_bytes_per_sequence_approx(std::uint64_t tokens) const;
    // The recurrent state of one sequence: on the GPU of stage `stage`, and over every GPU.
    [[nodiscard]] std::uint64_t stage_state_bytes_per_sequence(std::size_t stage) const {
        return stage_state_.at(stage);
    }
    [[nodiscard]] Checked all_gpu_state_bytes_per_sequence() const;
    // One layer's state for one sequence on one GPU (0 for a layer without one).
    [[nodiscard]] std::uint64_t layer_state_bytes_per_gpu(std::uint64_t layer) const {
        return layer_row_.at(layer).state;
    }
    // Bytes for one more token of one sequence, all layers, no window cap, all GPUs / heaviest GPU.
    [[nodiscard]] Checked bytes_per_token_all_gpus() const;
    [[nodiscard]] Checked bytes_per_token_per_gpu() const;
    // Tokens a layer with window `window` keeps (and a decode step attends to) at context `tokens`.
    [[nodiscard]] static std::uint64_t kept_tokens(std::uint64_t window, std::uint64_t tokens) {
        return window == 0 ? tokens : std::min(tokens, window);
    }
    // Tokens actually stored for layer window `window` at context `tokens`: kept, rounded up to blocks.
    [[nodiscard]] std::uint64_t stored_tokens(std::uint64_t window, std::uint64_t tokens) const;

    // The honoured window of `layer` (0 = full context).
    [[nodiscard]] std::uint64_t window(std::uint64_t layer) const { return layer_row_.at(layer).window; }
    // Bytes of one token of `layer` on one GPU (0 for a layer that keeps no KV of its own).
    [[nodiscard]] std::uint64_t row_bytes_per_gpu(std::uint64_t layer) const { return layer_row_.at(layer).kv; }
    [[nodiscard]] std::uint64_t kv_heads_per_gpu() const { return kv_heads_per_gpu_; }
    [[nodiscard]] std::uint64_t replication() const { return replication_; }
    [[nodiscard]] std::uint64_t tp() const { return tp_; }
    [[nodiscard]] std::size_t stages() const { return stages_.size(); }
    [[nodiscard]] std::uint64_t block_size() const { return block_; }
    // The cache's format.
    [[nodiscard]] KvDtype dtype() const { return dtype_; }

private:
    struct Group {
        std::uint64_t window;     // 0 = full context
        std::uint64_t row_bytes;  // K + V (or the MLA latent) for one token, one layer, one GPU
        std::uint64_t layers;
        std::uint64_t token_bytes;  // layers x row_bytes: one token of every layer of the group
    };
    struct Row {
        std::uint64_t window = 0;  // honoured: 0 = full context
        std::uint64_t kv = 0;      // bytes of one token on one GPU (0: no KV of its own)
        std::uint64_t state = 0;   // recurrent state of one sequence on one GPU
    };
    std::vector<std::vector<Group>> stages_;  // pipeline stages, each its caching layers grouped by window and row
    std::vector<std::uint64_t> stage_state_;  // recurrent state of one sequence on each stage's GPU
    std::vector<Row> layer_row_;
    std::uint64_t kv_heads_per_gpu_ = 0;
    std::uint64_t replication_ = 1;  // how many GPUs hold the same KV head
    std::uint64_t tp_ = 1;
    std::uint64_t block_ = 1;
    std::uint64_t layers_ = 0;
    KvDtype dtype_ = KvDtype::fp16;
};

struct LayerKv {
    std::uint64_t layer = 0;
    LayerKind kind = LayerKind::full;
    std::uint64_t window = 0;         // 0 = full attention (after the full-window switch)
    std::uint64_t stored_tokens = 0;  // per sequence, after window and block rounding
    std::uint64_t bytes = 0;          // KV, all sequences, all GPUs
    std::uint64_t state_bytes = 0;    // recurrent state, all sequences, all GPUs
};

struct KvCacheReport {
    std::uint64_t total_bytes = 0;         // all sequences, all GPUs, replicas counted
    std::uint64_t per_gpu_bytes = 0;       // the heaviest GPU
    std::uint64_t per_sequence_bytes = 0;  // one sequence, all GPUs
    std::uint64_t bytes_per_token = 0;     // one more token of one sequence, all layers, no window cap
    std::uint64_t bytes_per_token_per_gpu = 0;
    // The recurrent state (flat in the context, one per sequence): all sequences and GPUs, one
    // sequence over every GPU, all sequences on the heaviest GPU.
    std::uint64_t state_bytes = 0;
    std::uint64_t state_bytes_per_sequence = 0;
    std::uint64_t state_bytes_per_gpu = 0;
    std::uint64_t memory_bytes = 0;          // KV + state, all sequences, all GPUs
    std::uint64_t memory_bytes_per_gpu = 0;  // KV + state on the heaviest GPU
    std::uint64_t kv_heads_per_gpu = 0;
    std::uint64_t replication = 1;
    std::uint64_t gpus = 1;
    std::vector<LayerKv> layers;
    std::vector<std::string> warnings;  // things worth knowing that are not errors
    bool exact = true;                  // false when one of them says the figure is not exact ("not exact: …")
};

Result<KvCacheReport> kv_cache_report(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                      const Parallelism& parallel = {});
// The same report from a layout already made of these inputs (callers that also need the layout).
Result<KvCacheReport> kv_cache_report(const KvLayout& layout, const Architecture& arch, const Workload& workload,
                                      const Parallelism& parallel);

// Whose bytes a search compares: the heaviest GPU's, or the sum over every GPU.
enum class KvScope { heaviest_gpu, all_gpus };

// The smallest context (tokens per sequence) at which the cache of `workload.batch` sequences
// holds more than `limit_bytes`; none up to `search_limit` tokens (sliding windows can cap the
// cache below any limit). The one search behind "where the cache outgrows the weights" and
// "the longest context that fits".
// With Memory::kv_and_state the recurrent state counts too; when the state alone is over the limit the
// answer is 0.
std::optional<std::uint64_t> context_where_kv_exceeds(const KvLayout& layout, const Workload& workload,
                                                      std::uint64_t limit_bytes, KvScope scope = KvScope::all_gpus,
                                                      std::uint64_t search_limit = 1ull << 48,
                                                      Memory what = Memory::kv);

// The overflow message for `tokens`, naming the input responsible.
FieldError overflow_error(Field field, const std::string& what);

}  // namespace kvscope
