#include "kvscope/calculator/field.h"

#include <iterator>

#include "kvscope/calculator/tables.h"

namespace kvscope {

namespace {

struct FieldName {
    Field field;
    std::string_view name;
};

constexpr FieldName kFields[] = {
    {Field::none, ""},
    {Field::layers, "layers"},
    {Field::layer_specs, "layer_specs"},
    {Field::query_heads, "query_heads"},
    {Field::kv_heads, "kv_heads"},
    {Field::head_dim, "head_dim"},
    {Field::head_dim_v, "head_dim_v"},
    {Field::sliding_window, "sliding_window"},
    {Field::attention_chunk_size, "attention_chunk_size"},
    {Field::recurrent_state, "recurrent_state"},
    {Field::conv_kernel, "conv_kernel"},
    {Field::state_size, "state_size"},
    {Field::kv_lora_rank, "kv_lora_rank"},
    {Field::v_head_dim, "v_head_dim"},
    {Field::qk_nope_head_dim, "qk_nope_head_dim"},
    {Field::num_experts, "num_experts"},
    {Field::experts_per_token, "experts_per_token"},
    {Field::first_k_dense_replace, "first_k_dense_replace"},
    {Field::expert_layer_period, "expert_layer_period"},
    {Field::params_active, "params_active"},
    {Field::mtp_layers, "mtp_layers"},
    {Field::kv_dtype, "kv_dtype"},
    {Field::weight_dtype, "weight_dtype"},
    {Field::context_tokens, "context_tokens"},
    {Field::max_tokens, "max_tokens"},
    {Field::batch, "batch"},
    {Field::block_size, "block_size"},
    {Field::full_window, "full_window"},
    {Field::tp, "tp"},
    {Field::pp, "pp"},
    {Field::gpus, "gpus"},
    {Field::gpu_memory, "gpu_memory"},
    {Field::gpu_bandwidth, "gpu_bandwidth"},
    {Field::utilization, "utilization"},
    {Field::gpus_per_node, "gpus_per_node"},
    {Field::max_pp, "max_pp"},
    {Field::max_num_batched_tokens, "max_num_batched_tokens"},
    {Field::max_num_seqs, "max_num_seqs"},
    {Field::vllm_version, "vllm_version"},
    {Field::ubatch, "ubatch"},
    {Field::gpu_layers, "gpu_layers"},
    {Field::cpu_moe_layers, "cpu_moe_layers"},
    {Field::host_memory, "host_memory"},
    {Field::host_bandwidth, "host_bandwidth"},
    {Field::max_num_tokens, "max_num_tokens"},
    {Field::draft, "draft"},
};
static_assert(std::size(kFields) == kFieldCount && lists_in_order(kFields, [](const FieldName& f) { return f.field; }),
              "kFields: one entry per Field, in order");

}  // namespace

std::string_view to_string(Field field) { return kFields[static_cast<std::size_t>(field)].name; }

Field parse_field(std::string_view key) {
    for (const FieldName& f : kFields)
        if (!key.empty() && f.name == key) return f.field;
    return Field::none;
}

}  // namespace kvscope
