// Hybrid, recurrent, chunked and shared-KV layouts, exact: every spelling transformers uses and every
// such catalog model, against bytes worked out by hand from the published config.json, with the engine
// file each rule follows. bf16 = 2 bytes, fp32 = 4.
#include <algorithm>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/learn.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/quiz.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/variants.h"
#include "kvscope/calculator/vllm_pages.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::catalog_arch;

using testing::import;
using testing::report;

TEST(Hybrid, CatalogModelsMatchTheHandArithmetic) {
    struct Expected {
        const char* id;
        std::uint64_t kv_per_token;        // all layers, one sequence, bf16
        std::uint64_t state_per_sequence;  // every recurrent layer, one sequence
        const char* mix;
    };
    const Expected expected[] = {
        // Qwen3-Next: full_attention_interval 4 -> 12 of 48 layers attend (2 KV heads x 256). The 36 gated
        // DeltaNet layers keep conv 3 x (2·16·128 + 32·128) = 24,576 values and SSM 32 x 128 x 128 = 524,288
        // values, bf16: 1,097,728 bytes each (vllm qwen3_next.py -> gated_delta_net_state_shape).
        {"qwen3-next-80b-a3b", 2ull * 12 * 2 * 256 * 2, 36ull * (3 * 8192 + 32 * 128 * 128) * 2,
         "48 layers: 36 linear attention (gated DeltaNet), 12 full attention"},
        // Qwen3.5-35B-A3B: layer_types lists 10 full of 40; the SSM state is fp32 (mamba_ssm_dtype float32,
        // read by vLLM's Qwen3_5ForConditionalGenerationConfig), the conv state bf16.
        {"qwen3.5-35b-a3b", 2ull * 10 * 2 * 256 * 2, 30ull * (3 * 8192 * 2 + 32 * 128 * 128 * 4),
         "40 layers: 30 linear attention (gated DeltaNet), 10 full attention"},
        // Jamba v0.1: layer i attends when i % 8 == 4 (4 of 32; 8 KV heads x 128). Mamba-1 layers (vllm
        // jamba.py): d_inner = 2 x 4096; conv 3 x 8192, SSM 8192 x 16.
        {"jamba-v0.1", 2ull * 4 * 8 * 128 * 2, 28ull * (3 * 8192 + 8192 * 16) * 2,
         "32 layers: 28 Mamba, 4 full attention"},
        // Nemotron-H 56B: hybrid_override_pattern has 10 '*', 54 'M', 54 '-'. Mamba-2 (vllm nemotron_h.py):
        // d_inner = 256 heads x 64; conv 3 x (16384 + 2·8·256) bf16; SSM 256 x 64 x 256 in fp32 (vLLM's
        // NemotronHForCausalLMConfig default).
        {"nemotron-h-56b", 2ull * 10 * 8 * 128 * 2, 54ull * (3 * (16384 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4),
         "118 layers: 54 Mamba-2, 54 MLP only, 10 full attention"},
        // LFM2-700M: full_attn_idxs lists 6 of 16 layers (8 KV heads x 1536/24 = 64); the 10 short
        // convolutions keep (conv_L_cache 3 - 1) x 1536 values (vllm lfm2.py -> short_conv_state_shape).
        {"lfm2-700m", 2ull * 6 * 8 * 64 * 2, 10ull * 2 * 1536 * 2, "16 layers: 10 short convolution, 6 full attention"},
        // Mamba-Codestral: 64 Mamba-2 layers, no attention. d_inner = 2 x 4096; conv 3 x (8192 + 2·8·128),
        // SSM 128 heads x 64 x 128 (vllm mamba2.py).
        {"mamba-codestral-7b", 0, 64ull * (3 * (8192 + 2 * 8 * 128) + 128 * 64 * 128) * 2, "64 layers: 64 Mamba-2"},
        // MiniMax-M1: attn_type_list has 10 softmax layers of 80 (8 KV heads x 128); the 70 lightning-attention
        // layers keep 64 heads x 128 x 128 each (vllm minimax_text_01.py -> linear_attention_state_shape).
        {"minimax-m1", 2ull * 10 * 8 * 128 * 2, 70ull * 64 * 128 * 128 * 2,
         "80 layers: 70 linear attention, 10 full attention"},
        // RecurrentGemma 9B: block_types recurrent, recurrent, attention repeated: 12 local-attention layers of 38
        // (1 KV head x 256, window 2,048). Each RG-LRU layer keeps conv 3 x 4,096 bf16 and 4,096 fp32 values
        // (modeling_recurrent_gemma.py _setup_cache).
        {"recurrentgemma-9b", 2ull * 12 * 1 * 256 * 2, 26ull * (3 * 4096 * 2 + 4096 * 4),
         "38 layers: 26 RG-LRU recurrence, 12 sliding window 2,048"},
        // Nemotron 3 Nano: hybrid_override_pattern has 6 '*', 23 'M', 23 'E'. Mamba-2: 64 heads x 64 = 4,096,
        // 8 groups of 128; conv 3 x (4096 + 2·8·128) bf16; SSM 64 x 64 x 128 fp32 (mamba_ssm_cache_dtype).
        {"nemotron-3-nano-30b-a3b", 2ull * 6 * 2 * 128 * 2, 23ull * (3 * (4096 + 2 * 8 * 128) * 2 + 64 * 64 * 128 * 4),
         "52 layers: 23 Mamba-2, 23 MLP only, 6 full attention"},
        // Llama 4: 3 of every 4 layers attend within 8,192-token chunks; per token every layer stores a row.
        {"llama-4-scout", 2ull * 48 * 8 * 128 * 2, 0, "48 layers: 36 chunked attention 8,192, 12 full attention"},
        {"llama-4-maverick", 2ull * 48 * 8 * 128 * 2, 0, "48 layers: 36 chunked attention 8,192, 12 full attention"},
        // Plain models of today: every layer full attention.
        {"qwen3-30b-a3b", 2ull * 48 * 4 * 128 * 2, 0, ""},
        {"qwen3-235b-a22b", 2ull * 94 * 4 * 128 * 2, 0, ""},
        {"kimi-k2", 61ull * (512 + 64) * 2, 0, ""},  // MLA latent + rope, no x2
        {"glm-4.7", 2ull * 92 * 8 * 128 * 2, 0, ""},
        // Granite 4.0-H Tiny: layer_types lists 4 attention layers of 40 (4 KV heads x 128). Mamba-2 (vllm
        // granitemoehybrid.py): 48 heads x 64 = 3,072, 1 group of 128; conv 3 x (3,072 + 2 x 128), SSM 48 x 64 x 128,
        // fp16 (no dtype in the file).
        {"granite-4.0-h-tiny", 2ull * 4 * 4 * 128 * 2, 36ull * (3 * (3072 + 2 * 128) + 48 * 64 * 128) * 2,
         "40 layers: 36 Mamba-2, 4 full attention"},
        // Falcon-H1 7B: attention (2 KV heads x 128) and a Mamba-2 mixer side by side on all 44 layers (vllm
        // falcon_h1.py): mamba_d_ssm 3,072 = 24 heads x 128, 1 group of 256; conv 3 x (3,072 + 2 x 256), SSM
        // 24 x 128 x 256.
        {"falcon-h1-7b", 2ull * 44 * 2 * 128 * 2, 44ull * (3 * (3072 + 2 * 256) + 24 * 128 * 256) * 2,
         "44 layers: 44 full attention + Mamba-2"},
        // MiMo-V2-Flash's published file: hybrid_layer_pattern's 9 full layers (4 KV heads) and 39 sliding ones (8 KV
        // heads, window 128), keys 192 and values 128 wide (SGLang mimo_v2_flash.py).
        {"mimo-v2-flash", 9ull * 4 * 320 * 2 + 39ull * 8 * 320 * 2, 0,
         "48 layers: 9 full attention, 39 sliding window 128 (8 KV heads × 192/128)"},
        // GLM-5.2: index_topk_freq 4 from index_skip_topk_offset 3 keeps the indexer's key on layers 0-2, 6, 10,
        // ..., 74.
        {"glm-5.2", 78ull * 576 * 2 + 21ull * 132, 0, "78 layers: 21 MLA, 57 MLA without an indexer key"},
        // Step-3.7-Flash: layer_types gives every fourth layer from 0 full attention, the others a 512-token window.
        {"step-3.7-flash", 2ull * 45 * 8 * 128 * 2, 0, "45 layers: 12 full attention, 33 sliding window 512"},
        // Gemma 3 4B: 34 layers (29 sliding 1024, 5 global), 4 KV heads x 256 (gemma3_text defaults).
        {"gemma-3-4b", 2ull * 34 * 4 * 256 * 2, 0, "34 layers: 29 sliding window 1,024, 5 full attention"},
    };
    for (const Expected& e : expected) {
        const Architecture& a = catalog_arch(e.id);
        const KvCacheReport r = report(a, 4096, 3);
        EXPECT_EQ(r.bytes_per_token, e.kv_per_token) << e.id;
        EXPECT_EQ(r.state_bytes_per_sequence, e.state_per_sequence) << e.id;
        EXPECT_EQ(r.state_bytes, 3 * e.state_per_sequence) << e.id;
        EXPECT_EQ(r.memory_bytes, r.total_bytes + r.state_bytes) << e.id;
        EXPECT_EQ(layer_mix_text(a), e.mix) << e.id;
        EXPECT_TRUE(a.not_exact.empty()) << e.id << ": " << testing::join(a.not_exact);
    }
}

TEST(Hybrid, TheIssuesThreeExamplesAtOneHundredTwentyEightK) {
    // Qwen3-Next: 3.0 GiB of KV (not 12.0) plus its linear-attention state.
    EXPECT_EQ(report(catalog_arch("qwen3-next-80b-a3b"), 131072).total_bytes, 3ull << 30);
    // Jamba: 2.0 GiB of KV (not 16.0) plus the Mamba state.
    EXPECT_EQ(report(catalog_arch("jamba-v0.1"), 131072).total_bytes, 2ull << 30);
    // Llama 4 Scout: 12 full layers x 131,072 + 36 chunked layers x 8,192 tokens, 4,096 bytes each:
    // 7.125 GiB (not 24.0). vLLM keeps at most a chunk for those layers (ChunkedLocalAttentionSpec).
    EXPECT_EQ(report(catalog_arch("llama-4-scout"), 131072).total_bytes, (12ull * 131072 + 36ull * 8192) * 4096);
}

TEST(Hybrid, EverySpellingIsReadWithItsRule) {
    const std::string base =
        R"("num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512, "head_dim": 64, )";
    struct Case {
        const char* name;
        std::string body;
        std::vector<LayerKind> kinds;
    };
    using K = LayerKind;
    const Case cases[] = {
        // transformers configuration_qwen3_next.py: layer_types names linear_attention layers.
        {"layer_types",
         R"("model_type": "qwen3_next", "num_hidden_layers": 4, )" + base +
             R"("layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention"])",
         {K::recurrent, K::full, K::recurrent, K::full}},
        // configuration_qwen3_next.py: (i + 1) % full_attention_interval == 0 attends.
        {"full_attention_interval",
         R"("model_type": "qwen3_next", "num_hidden_layers": 6, )" + base + R"("full_attention_interval": 3)",
         {K::recurrent, K::recurrent, K::full, K::recurrent, K::recurrent, K::full}},
        // configuration_jamba.py: i % attn_layer_period == attn_layer_offset attends.
        {"attn_layer_period",
         R"("model_type": "jamba", "num_hidden_layers": 6, )" + base +
             R"("attn_layer_period": 4, "attn_layer_offset": 1)",
         {K::recurrent, K::full, K::recurrent, K::recurrent, K::recurrent, K::full}},
        // configuration_nemotron_h.py: M Mamba-2, * attention, - MLP, E experts.
        {"hybrid_override_pattern",
         R"("model_type": "nemotron_h", "num_hidden_layers": 5, )" + base + R"("hybrid_override_pattern": "M*-EM")",
         {K::recurrent, K::full, K::none, K::none, K::recurrent}},
        // Newer nemotron_h configs: no num_hidden_layers, layers_block_type names each layer (transformers
        // configuration_nemotron_h.py counts the layers from it).
        {"layers_block_type, nemotron_h",
         R"("model_type": "nemotron_h", )" + base + R"("layers_block_type": ["mamba", "attention", "moe", "mlp"])",
         {K::recurrent, K::full, K::none, K::none}},
        // configuration_granitemoehybrid.py: layers_block_type "mamba" / "attention".
        {"layers_block_type",
         R"("model_type": "granitemoehybrid", "num_hidden_layers": 3, )" + base +
             R"("layers_block_type": ["mamba", "attention", "mamba"])",
         {K::recurrent, K::full, K::recurrent}},
        // MiniMax (hub configuration_minimax_text_01.py, vllm minimax_text_01.py): 0 linear, 1 softmax.
        {"attn_type_list",
         R"("model_type": "minimax", "num_hidden_layers": 4, )" + base + R"("attn_type_list": [0, 0, 0, 1])",
         {K::recurrent, K::recurrent, K::recurrent, K::full}},
        // configuration_lfm2.py: full_attn_idxs attend, the rest are short convolutions.
        {"full_attn_idxs",
         R"("model_type": "lfm2", "num_hidden_layers": 4, )" + base + R"("full_attn_idxs": [1, 3])",
         {K::recurrent, K::full, K::recurrent, K::full}},
        // configuration_bamba.py: attn_layer_indices attend, the rest are Mamba-2.
        {"attn_layer_indices",
         R"("model_type": "bamba", "num_hidden_layers": 3, )" + base + R"("attn_layer_indices": [2])",
         {K::recurrent, K::recurrent, K::full}},
        // configuration_llama4.py: RoPE layers (no_rope_layers[i] == 1) attend within attention_chunk_size.
        {"attention_chunk_size",
         R"("model_type": "llama4_text", "num_hidden_layers": 4, )" + base +
             R"("attention_chunk_size": 1024, "no_rope_layers": [1, 0, 1, 1])",
         {K::chunked, K::full, K::chunked, K::chunked}},
        // configuration_gemma3n.py: the last num_kv_shared_layers layers keep no cache of their own.
        {"num_kv_shared_layers",
         R"("model_type": "gemma3n_text", "num_hidden_layers": 5, )" + base +
             R"("sliding_window": 512, "layer_types": ["sliding_attention", "sliding_attention",
                                     "full_attention", "sliding_attention", "full_attention"], "num_kv_shared_layers": 2)",
         {K::sliding, K::sliding, K::full, K::shared, K::shared}},
        // configuration_recurrent_gemma.py: layers_block_type repeats block_types; attention layers are local.
        {"block_types",
         R"("model_type": "recurrent_gemma", "num_hidden_layers": 5, )" + base +
             R"("attention_window_size": 256, "block_types": ["recurrent", "attention"])",
         {K::recurrent, K::sliding, K::recurrent, K::sliding, K::recurrent}},
        // Kimi Linear (vllm kimi_linear.py): kda_layers, counted from 1, are Kimi Delta Attention; the rest MLA.
        {"linear_attn_config",
         R"("model_type": "kimi_linear", "num_hidden_layers": 4, )" + base +
             R"("kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
             "linear_attn_config": {"kda_layers": [1, 2, 3], "full_attn_layers": [4], "num_heads": 8,
             "head_dim": 64, "short_conv_kernel_size": 4})",
         {K::recurrent, K::recurrent, K::recurrent, K::full}},
        // configuration_afmoe.py (Arcee's Trinity) without layer_types: (i + 1) % global_attn_every_n_layers == 0
        // attends to everything, the others slide.
        {"global_attn_every_n_layers",
         R"("model_type": "afmoe", "num_hidden_layers": 4, )" + base +
             R"("sliding_window": 256, "global_attn_every_n_layers": 2)",
         {K::sliding, K::full, K::sliding, K::full}},
        // vLLM bailing_moe_linear.py is_linear_layer (Ring-linear): (i + 1) % layer_group_size != 0 is linear
        // (lightning) attention.
        {"layer_group_size",
         R"("model_type": "bailing_moe_linear", "num_hidden_layers": 6, )" + base + R"("layer_group_size": 3)",
         {K::recurrent, K::recurrent, K::full, K::recurrent, K::recurrent, K::full}},
        // Step-3.5-Flash: layer_types lists the MTP layers after the model's (vLLM step3p5.py reads entry i for
        // layer i).
        {"layer_types with the MTP layers",
         R"("model_type": "step3p5", "num_hidden_layers": 3, "num_nextn_predict_layers": 2, )" + base +
             R"("sliding_window": 512, "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
             "full_attention", "full_attention"])",
         {K::full, K::sliding, K::sliding}},
        // configuration_utils.py ALLOWED_LAYER_TYPES: "hybrid" (attention beside a recurrent mixer), "moe" and
        // nemotron_h's "mlp" (no mixer), legacy "mamba"/"attention".
        {"layer_types hybrid",
         R"("model_type": "falcon_h1", "num_hidden_layers": 3, )" + base +
             R"("layer_types": ["hybrid", "mlp", "attention"])",
         {K::full, K::none, K::full}},
    };
    for (const Case& c : cases) {
        auto m = import(c.body);
        ASSERT_TRUE(m) << c.name << ": " << m.error_text();
        std::vector<LayerKind> kinds;
        for (std::uint64_t l = 0; l < m->arch.layers; ++l) kinds.push_back(m->arch.layer(l).kind);
        EXPECT_EQ(kinds, c.kinds) << c.name;
        EXPECT_TRUE(m->arch.not_exact.empty()) << c.name << ": " << testing::join(m->arch.not_exact);
        // A recurrent layer always comes with a state it can size.
        if (m->arch.state_layers() > 0) EXPECT_TRUE(m->arch.recurrent.has_value()) << c.name;
    }
}

TEST(Hybrid, StateShapesFollowVllmForEveryKind) {
    // One recurrent layer each, bf16, one sequence; the arithmetic of vllm mamba_utils.py beside each.
    struct Case {
        const char* name;
        std::string body;
        std::uint64_t state_bytes;
    };
    const Case cases[] = {
        // Mamba-1 (mamba.py): conv (4-1) x 1024, SSM 1024 x 16.
        {"mamba", R"("model_type": "mamba", "num_hidden_layers": 1, "hidden_size": 512, "intermediate_size": 1024,
            "state_size": 16, "conv_kernel": 4)",
         (3 * 1024 + 1024 * 16) * 2},
        // Falcon-H1 (falcon_h1.py): mamba_d_ssm 1024, 1 group of 128; conv 3 x (1024 + 2·128); SSM 16 x 64 x 128;
        // and every layer also attends.
        {"falcon_h1", R"("model_type": "falcon_h1", "num_hidden_layers": 1, "num_attention_heads": 8,
            "num_key_value_heads": 2, "hidden_size": 512, "head_dim": 64, "mamba_d_ssm": 1024, "mamba_n_groups": 1,
            "mamba_n_heads": 16, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_d_conv": 4)",
         (3 * (1024 + 2 * 128) + 16 * 64 * 128) * 2},
        // MiniMax lightning attention (minimax_text_01.py): 8 heads x 64 x 64, no conv.
        {"minimax", R"("model_type": "minimax", "num_hidden_layers": 1, "num_attention_heads": 8,
            "num_key_value_heads": 8, "hidden_size": 512, "head_dim": 64, "attn_type_list": [0])",
         8 * 64 * 64 * 2},
        // Kimi Linear (kimi_linear.py -> kda_state_shape): q, k, v convs of 3 x 8·64 bf16 and a recurrent state
        // of 8 x 64 x 64 always in fp32 (MambaStateDtypeCalculator.kda_state_dtype).
        {"kimi_linear", R"("model_type": "kimi_linear", "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 8, "hidden_size": 512, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128, "v_head_dim": 128, "linear_attn_config": {"kda_layers": [1],
            "num_heads": 8, "head_dim": 64, "short_conv_kernel_size": 4})",
         3 * 3 * 8 * 64 * 2 + 8 * 64 * 64 * 4},
        // RecurrentGemma (modeling_recurrent_gemma.py): conv 3 x hidden 512 bf16; RG-LRU lru_width 256 in fp32.
        {"recurrent_gemma", R"("model_type": "recurrent_gemma", "num_hidden_layers": 1, "num_attention_heads": 8,
            "num_key_value_heads": 1, "hidden_size": 512, "lru_width": 256, "conv1d_width": 4,
            "block_types": ["recurrent"])",
         3 * 512 * 2 + 256 * 4},
        // Granite 4.0-H (granitemoehybrid.py): d_inner = mamba_expand 2 x 512; conv 3 x (1024 + 2·1·64);
        // SSM 8 x 128 x 64.
        {"granitemoehybrid", R"("model_type": "granitemoehybrid", "num_hidden_layers": 1, "num_attention_heads": 8,
            "num_key_value_heads": 2, "hidden_size": 512, "layer_types": ["mamba"], "mamba_expand": 2,
            "mamba_n_groups": 1, "mamba_n_heads": 8, "mamba_d_head": 128, "mamba_d_state": 64, "mamba_d_conv": 4)",
         (3 * (1024 + 2 * 64) + 8 * 128 * 64) * 2},
    };
    for (const Case& c : cases) {
        auto m = import(c.body);
        ASSERT_TRUE(m) << c.name << ": " << m.error_text();
        EXPECT_EQ(report(m->arch, 1000).state_bytes_per_sequence, c.state_bytes) << c.name;
        EXPECT_TRUE(m->arch.not_exact.empty()) << c.name << ": " << testing::join(m->arch.not_exact);
    }
}

TEST(Hybrid, TensorParallelSplitsTheStateAsVllmDoes) {
    // Qwen3-Next on 2 GPUs: each keeps conv 3 x 4,096 and SSM 16 x 128 x 128 per layer: half, and the sum stays.
    const Architecture& next = catalog_arch("qwen3-next-80b-a3b");
    const KvCacheReport one = report(next, 4096), two = report(next, 4096, 1, 2);
    EXPECT_EQ(two.state_bytes_per_gpu, 36ull * (3 * 4096 + 16 * 128 * 128) * 2);
    EXPECT_EQ(two.state_bytes, one.state_bytes);
    // Mamba-2 with one B/C group on 2 GPUs: the group is replicated (extra_groups_for_head_shards), so each GPU
    // keeps conv 3 x (1024 + 2·2·64) / 2 values, and the sum over GPUs grows by the copy.
    RecurrentState st{StateKind::mamba2, 4, 1024, 1, 16, 64, 64, KvDtype::bf16, KvDtype::bf16};
    EXPECT_EQ(state_bytes_per_gpu(st, 2).value(), (3 * (1024 + 2 * 2 * 64) / 2 + 8 * 64 * 64) * 2);
    // A degree that does not divide the state's heads is what vLLM refuses too: an error naming tp.
    EXPECT_FIELD_ERROR(kv_cache_report(next, KvDtype::bf16, {}, {.tp = 3}), "tp", "heads of the recurrent state");
}

TEST(Hybrid, TheFitCountsTheStateInTheBudgetBatchAndContext) {
    const CatalogModel* m = Catalog::builtin().find_model("nemotron-h-56b");
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.weight_dtype = KvDtype::fp8_e4m3;
    d.engine = Engine::plain;  // the plain per-layer sum (vLLM's own layout: the next test)
    const Workload w{.context_tokens = 8192, .batch = 8};
    auto f = fit(m->model.arch, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    const KvCacheReport kv = report(m->model.arch, 8192, 8);
    EXPECT_EQ(f->state_bytes_per_gpu, kv.state_bytes);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, kv.total_bytes + kv.state_bytes);
    EXPECT_EQ(f->headroom_bytes_per_gpu, f->kv_budget_bytes_per_gpu - static_cast<std::int64_t>(kv.memory_bytes));
    // max_batch: whole sequences of KV + state in the budget.
    const std::uint64_t per_sequence = (kv.total_bytes + kv.state_bytes) / 8;
    EXPECT_EQ(f->max_batch, static_cast<std::uint64_t>(f->kv_budget_bytes_per_gpu) / per_sequence);
    EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(), [](const std::string& n) {
        return n.starts_with("the recurrent state of 8 sequences");
    })) << testing::join(f->notes);

    // When the state of the batch alone is over the budget, no context fits.
    const Workload huge{.context_tokens = 1, .batch = 200000};
    auto g = fit(m->model.arch, KvDtype::bf16, huge, {}, d);
    ASSERT_TRUE(g);
    EXPECT_FALSE(g->fits);
    EXPECT_EQ(g->max_context, 0u);
}

TEST(Hybrid, LlamaCppKeepsTheStateInF32WhateverTheModelsDtype) {
    // Qwen3-Next's Gated DeltaNet layers in bf16 (vLLM): 36 x (3 x 8,192 conv x 2 + 32 x 128 x 128 SSM x 2) bytes a
    // sequence; llama.cpp keeps both tensors in f32 (llama-model.cpp create_memory), twice that. A GGUF of the model
    // is read the same way (gguf_import.cpp); a config.json served by llama.cpp must be too.
    const Architecture& a = catalog_arch("qwen3-next-80b-a3b");
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    const Workload w{.context_tokens = 32768, .batch = 1};
    d.engine = Engine::plain;
    auto plain = fit(a, KvDtype::bf16, w, {}, d);
    d.engine = Engine::llama_cpp;
    auto llama = fit(a, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(plain && llama) << plain.error_text() << llama.error_text();
    EXPECT_EQ(plain->state_bytes_per_gpu, 36ull * (3 * 8192 * 2 + 32 * 128 * 128 * 2));
    EXPECT_EQ(llama->state_bytes_per_gpu, 2 * plain->state_bytes_per_gpu);
    EXPECT_TRUE(std::any_of(llama->notes.begin(), llama->notes.end(), [](const std::string& n) {
        return n.starts_with("llama.cpp keeps the recurrent state in f32");
    })) << testing::join(llama->notes);
    // A model without a state has nothing to say.
    auto dense = fit(catalog_arch("llama-3-8b"), KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(dense);
    EXPECT_FALSE(std::any_of(dense->notes.begin(), dense->notes.end(),
                             [](const std::string& n) { return n.find("f32") != std::string::npos; }));
}

// SGLang keeps one token pool for every layer (mem_cache/memory_pool.py MHATokenToKVPool): a sliding layer holds the
// whole context, its window the kernel's alone, for Gemma 2 and 3 (model_overrides/gemma2_gemma3.py turns hybrid SWA
// memory off) and every family not in configs/model_config.py is_hybrid_swa_model. Those in it are said not exact.
TEST(Hybrid, SglangKeepsTheWholeContextOnSlidingLayers) {
    const Architecture& gemma = catalog_arch("gemma-3-27b");
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    d.engine = Engine::sglang;
    const Workload w{.context_tokens = 32768, .batch = 2};
    auto f = fit(gemma, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    // 62 layers x 16 KV heads x 128 x 2 x 2 bytes = 8,192 bytes a token and layer, for every token.
    EXPECT_EQ(f->kv_bytes_per_gpu, 2ull * 62 * 8192 * 32768);
    EXPECT_TRUE(std::any_of(f->warnings.begin(), f->warnings.end(), [](const std::string& x) {
        return x.starts_with(
            "not exact: SGLang keeps the whole context on sliding-window and chunked-attention layers");
    })) << testing::join(f->warnings);
    // vLLM and TensorRT-LLM keep the windows: 10 full layers and 52 of 1,024 tokens.
    d.engine = Engine::tensorrt_llm;
    f = fit(gemma, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_EQ(f->kv_bytes_per_gpu, 2ull * 8192 * (10 * 32768 + 52 * 1024));
    // A model of full layers only is not touched.
    d.engine = Engine::sglang;
    EXPECT_FALSE(sglang_keeps_full_context(d, catalog_arch("llama-3-8b")));
    EXPECT_TRUE(sglang_keeps_full_context(d, catalog_arch("llama-4-scout")));
}

TEST(Hybrid, APureStateSpaceModelSaysSoAndDividesByNothing) {
    const Architecture& a = catalog_arch("mamba-codestral-7b");
    const KvCacheReport r = report(a, 1'000'000, 4);
    EXPECT_EQ(r.total_bytes, 0u);
    EXPECT_EQ(r.bytes_per_token, 0u);
    EXPECT_EQ(r.state_bytes, 4 * 138'149'888ull);
    EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(),
                            [](const std::string& w) { return w.starts_with("no layer of this model attends"); }));
    auto v = compare_variants(a, KvDtype::bf16, {.context_tokens = 4096});
    ASSERT_TRUE(v);
    ASSERT_EQ(v->size(), 1u);
    EXPECT_EQ(v->front().name, "no attention");
    auto c = kv_curves(a, KvDtype::bf16, {.context_tokens = 4096, .batch = 2}, {}, {.points = 8, .max_tokens = 65536});
    ASSERT_TRUE(c) << c.error_text();
    for (auto b : c->series.front().bytes) EXPECT_EQ(b, 2 * 138'149'888ull);  // flat: the state alone
}

TEST(Hybrid, TheAllFullAttentionComparisonPutsTheSavingInNumbers) {
    const Architecture& a = catalog_arch("qwen3-next-80b-a3b");
    auto v = compare_variants(a, KvDtype::bf16, {.context_tokens = 131072});
    ASSERT_TRUE(v);
    const auto full =
        std::find_if(v->begin(), v->end(), [](const Variant& x) { return x.name == "all full attention"; });
    ASSERT_NE(full, v->end());
    EXPECT_EQ(full->kv_cache_bytes, 12ull << 30);  // 48 layers x 2 x 2 x 256 x 2 x 131,072
    const auto own = std::find_if(v->begin(), v->end(), [](const Variant& x) { return x.is_model; });
    EXPECT_EQ(own->kv_cache_bytes, 3ull << 30);
    // The head variants apply to the attention layers only: MHA is 16 heads on 12 layers.
    EXPECT_EQ(v->front().kv_cache_bytes, 2ull * 12 * 16 * 256 * 2 * 131072);
    // On the chart the comparison is a line; the model's line stands on its flat state.
    auto c = kv_curves(a, KvDtype::bf16, {.context_tokens = 4096}, {}, {.points = 4, .max_tokens = 8192});
    ASSERT_TRUE(c);
    const auto own_curve = std::find_if(c->series.begin(), c->series.end(), [](const Curve& x) { return x.is_model; });
    EXPECT_EQ(own_curve->state_bytes, 36ull * 1'097'728);
    EXPECT_EQ(own_curve->bytes.back(), 8192ull * 24576 + own_curve->state_bytes);
}

TEST(Hybrid, ASavedScenarioKeepsTheLayerDescriptionAndState) {
    // Every kind of layout and state, and what the parameter estimate reads (no MLP beside Nemotron's mixers,
    // Jamba's experts every other layer, RecurrentGemma's fp32 RG-LRU state), comes back whole.
    for (const char* id : {"nemotron-h-56b", "nemotron-3-nano-30b-a3b", "jamba-v0.1", "recurrentgemma-9b"}) {
        Scenario s;
        s.model_id = id;
        s.arch = catalog_arch(id);
        auto back = scenario_from_json(scenario_to_json(s), "saved.kvscope.json");
        ASSERT_TRUE(back) << id << ": " << back.error_text();
        EXPECT_EQ(back->scenario.arch, s.arch) << id;
        EXPECT_EQ(estimate_parameters(back->scenario.arch).total, estimate_parameters(s.arch).total) << id;
    }
    EXPECT_FALSE(catalog_arch("nemotron-3-nano-30b-a3b").mlp_beside_mixer);
    EXPECT_EQ(catalog_arch("jamba-v0.1").moe->period, 2u);
    EXPECT_EQ(catalog_arch("jamba-v0.1").moe->offset, 1u);
    // A file of an earlier version (one window a layer) still opens, as sliding and full layers.
    const std::string old = R"({"kvscope_scenario": 1, "model_id": "x", "architecture": {"name": "x", "layers": 2,
        "query_heads": 8, "kv_heads": 2, "head_dim_k": 64, "head_dim_v": 64, "hidden_size": 512,
        "layer_windows": [128, 0]}, "kv_dtype": "bf16", "workload": {"context_tokens": 1000, "batch": 1,
        "block_size": 1, "full_window": false}, "parallel": {"tp": 1, "pp": 1}})";
    auto legacy = scenario_from_json(old, "old.kvscope.json");
    ASSERT_TRUE(legacy) << legacy.error_text();
    EXPECT_EQ(legacy->scenario.arch.layer_specs, sliding_layers({128, 0}));
}

TEST(Hybrid, TheJsonCarriesKindsWindowsAndState) {
    Scenario s;
    s.model_id = "jamba-v0.1";
    s.arch = catalog_arch("jamba-v0.1");
    s.kv_dtype = KvDtype::bf16;
    s.workload = {.context_tokens = 4096, .batch = 2};
    const KvCacheReport kv = report(s.arch, 4096, 2);
    const auto v = kv_report_json(s, kv, *compare_variants(s.arch, s.kv_dtype, s.workload));
    EXPECT_EQ(v.find("kv_cache_bytes")->as_u64(), 2ull * 4 * 2 * 8 * 128 * 2 * 4096);
    EXPECT_EQ(v.find("state_bytes")->as_u64(), 2 * 8'716'288ull);
    EXPECT_EQ(v.find("state_bytes_per_sequence")->as_u64(), 8'716'288ull);
    EXPECT_EQ(v.find("memory_bytes")->as_u64(), kv.total_bytes + kv.state_bytes);
    const auto* kinds = v.find("architecture")->find("layer_kinds");
    EXPECT_EQ(kinds->find("full")->as_u64(), 4u);
    EXPECT_EQ(kinds->find("recurrent")->as_u64(), 28u);
    const auto& layers = v.find("layers")->items();
    EXPECT_EQ(layers[4].find("kind")->as_string(), "full");
    EXPECT_TRUE(layers[4].find("window")->is_null());  // null: every token kept
    EXPECT_EQ(layers[0].find("kind")->as_string(), "recurrent");
    EXPECT_EQ(layers[0].find("state_bytes")->as_u64(), 2 * 311'296ull);
    EXPECT_EQ(layers[0].find("bytes")->as_u64(), 0u);
}

TEST(Hybrid, DeepSeekV32KeepsItsIndexersKeysBesideTheLatent) {
    // configuration_deepseek_v32.py: MLA (512 latent + 64 rope) and an indexer key of index_head_dim 128.
    // vLLM (deepseek_v2.py Indexer): 128 fp8 values + one fp32 scale = 132 bytes a token a layer, whatever
    // the cache format; an fp8 latent is fp8_ds_mla, 656 bytes (512 fp8 + 4 fp32 scales + 64 bf16 rope).
    auto m = import(R"("model_type": "deepseek_v32", "num_hidden_layers": 61, "num_attention_heads": 128,
        "num_key_value_heads": 128, "hidden_size": 7168, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536, "index_head_dim": 128,
        "index_n_heads": 64, "index_topk": 2048, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_TRUE(m->arch.not_exact.empty()) << testing::join(m->arch.not_exact);
    EXPECT_EQ(report(m->arch, 1000).bytes_per_token, 61ull * (576 * 2 + 132));
    auto fp8 = kv_cache_report(m->arch, KvDtype::fp8_e4m3, {.context_tokens = 1000});
    ASSERT_TRUE(fp8);
    EXPECT_EQ(fp8->bytes_per_token, 61ull * (656 + 132));
    // Any fp8 cache: vLLM turns fp8_e5m2 into fp8_ds_mla too (cache_dtype.startswith("fp8")), not 576 e5m2 bytes.
    auto e5m2 = kv_cache_report(m->arch, KvDtype::fp8_e5m2, {.context_tokens = 1000});
    ASSERT_TRUE(e5m2);
    EXPECT_EQ(e5m2->bytes_per_token, 61ull * (656 + 132));
    // The derivation still multiplies to the exact bytes, with the row as the bytes it takes.
    auto d = derive_kv_bytes(m->arch, KvDtype::bf16, {.context_tokens = 1000}, {});
    ASSERT_TRUE(d) << d.error_text();
    EXPECT_NE(
        derivation_text(*d).find("1,284 bytes per token per layer (the MLA latent in bf16 and the indexer's key)"),
        std::string::npos)
        << derivation_text(*d);
    Scenario s;
    s.arch = m->arch;
    auto back = scenario_from_json(scenario_to_json(s), "v32.kvscope.json");
    ASSERT_TRUE(back);
    EXPECT_EQ(back->scenario.arch.mla->indexer_head_dim, 128u);
    // The catalog's DeepSeek-V3.2 is the same shape: fp8, as vLLM serves it with --kv-cache-dtype fp8.
    auto catalog_fp8 = kv_cache_report(catalog_arch("deepseek-v3.2"), KvDtype::fp8_e4m3, {.context_tokens = 131072});
    ASSERT_TRUE(catalog_fp8);
    EXPECT_EQ(catalog_fp8->total_bytes, 131072ull * 61 * (656 + 132));
}

TEST(Hybrid, LearnersSeeWhatEachKindOfLayerKeeps) {
    Scenario s;
    s.arch = catalog_arch("qwen3-next-80b-a3b");
    s.kv_dtype = KvDtype::bf16;
    s.workload = {.context_tokens = 4096};
    // The context window: 12 layers see every token, 36 keep a state that summarises them.
    const ContextWindowView v = context_window_view(s.arch, 10000);
    ASSERT_EQ(v.rows.size(), 2u);
    EXPECT_EQ(v.rows[0].label, "12 full-attention layers");
    EXPECT_EQ(v.rows[1].label, "36 recurrent layers (a fixed state that summarises every token)");
    // Past the 262,144-token window the attention layers lose the first tokens; the state keeps them summarised.
    const ContextWindowView past = context_window_view(s.arch, 300000);
    EXPECT_EQ(past.rows[0].visible, 262144u);
    EXPECT_TRUE(past.rows[1].summarised);
    EXPECT_EQ(past.rows[1].visible, 300000u);
    // Llama 4's chunked layers see the tokens of the current chunk only: 10,000 = 8,192 + 1,808.
    const ContextWindowView llama = context_window_view(catalog_arch("llama-4-scout"), 10000);
    ASSERT_EQ(llama.rows.size(), 2u);
    EXPECT_EQ(llama.rows[1].label, "36 chunked-attention layers (chunk 8,192)");
    EXPECT_EQ(llama.rows[1].visible, 1808u);
    // The quiz's worked answer for one more token counts the layers that keep a KV cache.
    const auto questions = questions_for(s);
    const auto per_token =
        std::find_if(questions.begin(), questions.end(), [](const Question& q) { return q.id == "per_token"; });
    ASSERT_NE(per_token, questions.end());
    EXPECT_NE(per_token->worked.find("× 12 of the 48 layers (the others keep no KV cache) = 24,576 bytes."),
              std::string::npos)
        << per_token->worked;
}

TEST(Hybrid, WhatVllmRefusesOrCannotSizeIsNamed) {
    // A state with no values at all (expand 0, no heads) is no state: named, not a crash.
    EXPECT_FIELD_ERROR(import(R"("model_type": "mamba2", "num_hidden_layers": 2, "hidden_size": 64, "expand": 0,
        "n_groups": 0, "num_heads": 0, "head_dim": 64, "state_size": 16, "conv_kernel": 4)"),
                       "state_size", "the recurrent state has no values");
    // vLLM's MambaMixer2 needs the groups to divide over the GPUs (or a single group): Nemotron-H has 8.
    EXPECT_FIELD_ERROR(kv_cache_report(catalog_arch("nemotron-h-56b"), KvDtype::bf16, {}, {.tp = 16}), "tp",
                       "groups of the Mamba-2 state");
    // A block size of the user's larger than vLLM's alignment is kept; a smaller one is not.
    const Architecture& next = catalog_arch("qwen3-next-80b-a3b");
    EXPECT_EQ(vllm_hybrid_pages(next, KvDtype::bf16, {.block_size = 64}, {})->attention_block, 544u);
    EXPECT_EQ(vllm_hybrid_pages(next, KvDtype::bf16, {.block_size = 1024}, {})->attention_block, 1024u);
    // A model with no KV cache and no max positions has no context limit, and says so instead of a number.
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    auto f = fit(catalog_arch("mamba-codestral-7b"), KvDtype::bf16, {.context_tokens = 4096, .batch = 8}, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_TRUE(f->max_context_unbounded);
    // Gemma 3n's shared layers keep the window of the layers they read (for the attention they compute).
    auto g = import(R"("model_type": "gemma3n_text", "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "head_dim": 64, "sliding_window": 512,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"], "num_kv_shared_layers": 1)");
    ASSERT_TRUE(g) << g.error_text();
    EXPECT_EQ(g->arch.layer(2).kind, LayerKind::shared);
    EXPECT_EQ(g->arch.layer(2).window, 512u);
    EXPECT_EQ(report(g->arch, 4096).total_bytes, (512ull + 4096) * 2 * 2 * 64 * 2);  // the shared layer adds nothing
}

TEST(Hybrid, PythonsInfinityInAConfigIsRead) {
    // Mamba-2 and Nemotron-H configs hold "time_step_limit": [0.0, Infinity], which Python's json writes.
    auto m = import(R"("model_type": "mamba2", "num_hidden_layers": 2, "hidden_size": 256, "expand": 2,
        "n_groups": 1, "num_heads": 8, "head_dim": 64, "state_size": 16, "conv_kernel": 4,
        "time_step_limit": [0.0, Infinity], "other": -Infinity, "x": NaN)");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_EQ(m->arch.attention_layers(), 0u);
    // A scenario file stays strict JSON.
    EXPECT_FALSE(json::parse(R"({"a": Infinity})"));
}

TEST(Hybrid, BadLayoutFieldsAreNamed) {
    EXPECT_FIELD_ERROR(import(R"("model_type": "nemotron_h", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "hybrid_override_pattern": "M*M")"),
                       "hybrid_override_pattern", "one letter per layer (4)");
    EXPECT_FIELD_ERROR(import(R"("model_type": "nemotron_h", "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "hybrid_override_pattern": "M*X")"),
                       "hybrid_override_pattern", "holds 'X'");
    EXPECT_FIELD_ERROR(import(R"("model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "num_kv_shared_layers": 4)"),
                       "num_kv_shared_layers", "must be fewer than the 4 layers");
    EXPECT_FIELD_ERROR(import(R"("model_type": "lfm2", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "full_attn_idxs": [1, 9])"),
                       "full_attn_idxs", "layer numbers below 4");
    // The layer number itself is named, not "a fraction".
    EXPECT_FIELD_ERROR(import(R"("model_type": "lfm2", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "full_attn_idxs": [1, 9])"),
                       "full_attn_idxs", "holds 9;");
    // transformers has no other temporal block than recurrent and attention.
    EXPECT_FIELD_ERROR(import(R"("model_type": "recurrent_gemma", "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 1, "hidden_size": 512, "block_types": ["recurrent", "mlstm"])"),
                       "block_types", "holds 'mlstm'; known are recurrent and attention");
    // Kimi Linear counts its layers from 1; 0 is no layer.
    const std::string kimi = R"("model_type": "kimi_linear", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 8, "hidden_size": 512, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, )";
    EXPECT_FIELD_ERROR(import(kimi + R"("linear_attn_config": {"kda_layers": [0, 1], "num_heads": 8, "head_dim": 64,
        "short_conv_kernel_size": 4})"),
                       "linear_attn_config", "kda_layers holds 0; layer numbers from 1 to 4");
    EXPECT_FIELD_ERROR(import(kimi + R"("linear_attn_config": {"kda_layers": [1], "head_dim": 64,
        "short_conv_kernel_size": 4})"),
                       "linear_attn_config", "linear_attn_config.num_heads must be a whole number above 0");
}

}  // namespace
}  // namespace kvscope
