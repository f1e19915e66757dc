#pragma once
// The inputs a scenario is made of, as one enum: errors, the derivation's factors and the window's marks
// name them by member, so a field renamed or removed fails to compile instead of leaving a mark that never
// lights up. Each member's name is the key errors show for it (`kv_heads: …`); most are also the input's key
// in a scenario file (not all: `head_dim` is saved as `head_dim_k`, `gpus` as `gpu_count`).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvscope {

enum class Field : std::uint8_t {
    none,  // not one input: a file, a command-line option, the whole result
    // the architecture
    layers,
    layer_specs,
    query_heads,
    kv_heads,
    head_dim,
    head_dim_v,
    sliding_window,
    attention_chunk_size,
    recurrent_state,
    conv_kernel,
    state_size,
    kv_lora_rank,
    v_head_dim,
    qk_nope_head_dim,
    num_experts,
    experts_per_token,
    first_k_dense_replace,
    expert_layer_period,
    params_active,
    mtp_layers,
    // formats
    kv_dtype,
    weight_dtype,
    // the workload
    context_tokens,
    max_tokens,  // the longest context a curve, a sweep or the recompute page reaches
    batch,
    block_size,
    full_window,
    // parallelism and the deployment
    tp,
    pp,
    gpus,
    gpu_memory,
    gpu_bandwidth,
    utilization,
    gpus_per_node,
    max_pp,
    // vLLM's startup settings
    max_num_batched_tokens,
    max_num_seqs,
    vllm_version,
    // llama.cpp's micro-batch and its split between the GPU and the host
    ubatch,
    gpu_layers,
    cpu_moe_layers,
    host_memory,
    host_bandwidth,
    // TensorRT-LLM's tokens a step
    max_num_tokens,
    // a separate draft model for speculative decoding
    draft,
};

inline constexpr std::size_t kFieldCount = static_cast<std::size_t>(Field::draft) + 1;

// The member's key ("kv_heads"); "" for none.
std::string_view to_string(Field field);
// The member with this key; Field::none for any other text.
Field parse_field(std::string_view key);

}  // namespace kvscope
