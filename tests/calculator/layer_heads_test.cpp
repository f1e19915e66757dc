// Layers with heads or rows of their own, exact against hand arithmetic: MiMo-V2's sliding layers with their own KV
// heads and values narrower than keys, and an MLA model whose indexer keeps its key on some layers only (GLM-5.2).
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/scenario_file.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::import;
using testing::report;

// GLM-5.2's indexer fields on DeepSeek-V3.2's MLA shape (78 layers): index_topk_freq 4, index_skip_topk_offset 3.
std::string indexer_some_layers(const std::string& extra) {
    return R"("model_type": "glm_moe_dsa", "num_hidden_layers": 78, "num_attention_heads": 64,
        "num_key_value_heads": 64, "hidden_size": 6144, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 192, "v_head_dim": 256, "q_lora_rank": 2048, "index_head_dim": 128,
        "index_n_heads": 32, "index_topk": 2048, "torch_dtype": "bfloat16", "num_nextn_predict_layers": 1, )" +
           extra;
}

TEST(Hybrid, AnIndexerOnSomeLayersKeepsKeysOnThoseAlone) {
    // vLLM deepseek_v2.py: a layer keeps the indexer's key unless max(l - offset + 1, 0) % freq != 0: layers 0, 1, 2
    // (max(., 0) = 0), then 6, 10, ..., 74 — 21 of 78.
    auto m = import(indexer_some_layers(R"("index_topk_freq": 4, "index_skip_topk_offset": 3)"));
    ASSERT_TRUE(m) << m.error_text();
    const Architecture& a = m->arch;
    EXPECT_TRUE(a.not_exact.empty()) << testing::join(a.not_exact);
    std::vector<std::uint64_t> keyed;
    for (std::uint64_t l = 0; l < a.layers; ++l)
        if (!a.layer(l).no_indexer) keyed.push_back(l);
    ASSERT_EQ(keyed.size(), 21u);
    EXPECT_EQ(keyed[3], 6u);
    EXPECT_EQ(keyed.back(), 74u);
    // 78 latents of (512 + 64) x 2 bytes and 21 keys of 132 bytes: 89,856 + 2,772 = 92,628 bytes a token, where a key
    // on every layer said 78 x 1,284 = 100,152.
    EXPECT_EQ(report(a, 1000).bytes_per_token, 78ull * 1152 + 21ull * 132);
    // An fp8 cache keeps the model's 656-byte fp8_ds_mla latent on every layer.
    auto fp8 = kv_cache_report(a, KvDtype::fp8_e4m3, {.context_tokens = 1000});
    ASSERT_TRUE(fp8);
    EXPECT_EQ(fp8->bytes_per_token, 78ull * 656 + 21ull * 132);
    EXPECT_NE(testing::join(m->notes).find("the sparse-attention indexer keeps its key on 21 of 78 layers"),
              std::string::npos)
        << testing::join(m->notes);
    // The MTP layer always keeps its key (vLLM: is_mtp_layer builds a full indexer).
    Deployment d;
    d.mtp = true;
    auto served = fit_cache_architecture(a, d, FitReport{});
    ASSERT_TRUE(served) << served.error_text();
    EXPECT_EQ(report(*served, 1000).bytes_per_token, 79ull * 1152 + 22ull * 132);
    // The derivation adds the rows layer by layer, and a saved scenario keeps which layers have no key.
    auto derived = derive_kv_bytes(a, KvDtype::bf16, {.context_tokens = 1000}, {});
    ASSERT_TRUE(derived) << derived.error_text();
    Scenario s;
    s.arch = a;
    auto back = scenario_from_json(scenario_to_json(s), "glm.kvscope.json");
    ASSERT_TRUE(back) << back.error_text();
    EXPECT_EQ(back->scenario.arch, a);

    // The same layers from an explicit pattern; an indexer_types list that disagrees with the rule is said.
    std::string pattern;
    for (std::uint64_t l = 0; l < 78; ++l) pattern += a.layer(l).no_indexer ? 'S' : 'F';
    auto p = import(indexer_some_layers(R"("index_topk_pattern": ")" + pattern + R"(")"));
    ASSERT_TRUE(p) << p.error_text();
    EXPECT_EQ(report(p->arch, 1000).bytes_per_token, 78ull * 1152 + 21ull * 132);
    std::string types;
    for (std::uint64_t l = 0; l < 78; ++l) types += std::string(l ? ", " : "") + (l % 2 ? "\"shared\"" : "\"full\"");
    auto t = import(
        indexer_some_layers(R"("index_topk_freq": 4, "index_skip_topk_offset": 3, "indexer_types": [)" + types + "]"));
    ASSERT_TRUE(t) << t.error_text();
    EXPECT_NE(testing::join(t->arch.not_exact).find("indexer_types (line"), std::string::npos);
    // Without the fields every layer keeps a key (DeepSeek-V3.2, GLM-5); a zero frequency or a stray letter is named.
    auto all = import(indexer_some_layers(R"("index_topk_freq": 1)"));
    ASSERT_TRUE(all) << all.error_text();
    EXPECT_EQ(report(all->arch, 1000).bytes_per_token, 78ull * 1284);
    EXPECT_FIELD_ERROR(import(indexer_some_layers(R"("index_topk_freq": 0)")), "index_topk_freq",
                       "index_topk_freq must be at least 1");
    EXPECT_FIELD_ERROR(import(indexer_some_layers(R"("index_topk_pattern": "FF)" + std::string(75, 'S') + R"(X")")),
                       "index_topk_pattern", "index_topk_pattern must hold only F and S, found 'X' at layer 77");
    EXPECT_FIELD_ERROR(import(indexer_some_layers(R"("index_topk_pattern": "FFS")")), "index_topk_pattern",
                       "one letter for each of the 78 layers, found 3 letters");
    // A list that disagrees is said even where the rule keeps every layer's key.
    auto listed = import(indexer_some_layers(R"("indexer_types": [)" + types + "]"));
    ASSERT_TRUE(listed) << listed.error_text();
    EXPECT_NE(testing::join(listed->arch.not_exact).find("indexer_types (line"), std::string::npos);
}

// MiMo-V2-Flash's fields as SGLang models/mimo_v2_flash.py reads them: hybrid_layer_pattern 1 = sliding window,
// 0 = full (layers 0, 5, 11, ..., 47: 9 full, 39 sliding); full layers 4 KV heads of 192-wide keys and 128-wide
// values, sliding layers 8 heads of the same widths (swa_*), within sliding_window_size 128.
std::string mimo_v2_flash(const std::string& pattern_override = "") {
    std::string pattern, moe;
    for (int l = 0; l < 48; ++l) {
        pattern += std::string(l ? ", " : "") + (l == 0 || (l + 1) % 6 == 0 ? "0" : "1");
        moe += std::string(l ? ", " : "") + (l == 0 ? "0" : "1");
    }
    return R"("architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "vocab_size": 152576,
        "hidden_size": 4096, "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4,
        "head_dim": 192, "v_head_dim": 128, "swa_num_attention_heads": 64, "swa_num_key_value_heads": 8,
        "swa_head_dim": 192, "swa_v_head_dim": 128, "sliding_window": 128, "sliding_window_size": 128,
        "add_swa_attention_sink_bias": true, "add_full_attention_sink_bias": false, "intermediate_size": 16384,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "torch_dtype": "bfloat16",
        "max_position_embeddings": 262144, "moe_layer_freq": [)" +
           moe + R"(], "hybrid_layer_pattern": [)" + (pattern_override.empty() ? pattern : pattern_override) + "]";
}

TEST(Hybrid, MiMoV2SlidingLayersHaveHeadsOfTheirOwnAndValuesNarrowerThanKeys) {
    auto m = import(mimo_v2_flash());
    ASSERT_TRUE(m.ok()) << m.error_text();
    const Architecture& a = m->arch;
    EXPECT_TRUE(a.not_exact.empty()) << testing::join(a.not_exact);
    EXPECT_EQ(a.count_layers(LayerKind::full), 9u);
    EXPECT_EQ(a.count_layers(LayerKind::sliding), 39u);
    EXPECT_EQ(a.head_dim_k, 192u);
    EXPECT_EQ(a.head_dim_v, 128u);
    EXPECT_EQ(a.layer(1).kv_heads, 8u);
    EXPECT_EQ(a.layer(1).window, 128u);
    // Per token: 9 x 4 x (192 + 128) x 2 + 39 x 8 x (192 + 128) x 2 = 23,040 + 199,680 = 222,720 bytes.
    // At 32,768 tokens: 23,040 x 32,768 + 199,680 x 128 = 754,974,720 + 25,559,040 = 780,533,760 bytes, where the file
    // read as full attention with the model's heads on every layer gave 48 x 2,560 x 32,768 = 4,026,531,840.
    const KvCacheReport r = report(a, 32768);
    EXPECT_EQ(r.bytes_per_token, 222'720u);
    EXPECT_EQ(r.total_bytes, 780'533'760u);
    // moe_layer_freq's leading 0 is a dense layer: 309 G parameters as the model card says, not 315 G.
    ASSERT_TRUE(a.moe.has_value());
    EXPECT_EQ(a.moe->dense_layers, 1u);
    EXPECT_NEAR(static_cast<double>(estimate_parameters(a).total), 309e9, 0.01 * 309e9);

    // A pattern of another length, or a value that is neither 0 nor 1: errors naming the field.
    EXPECT_FIELD_ERROR(import(mimo_v2_flash("0, 1")), "hybrid_layer_pattern",
                       "hybrid_layer_pattern must list 0 (full attention) or 1 (sliding window) for each of the 48 "
                       "layers, found 2 entries");
    std::string two = "2";
    for (int l = 1; l < 48; ++l) two += ", 0";
    EXPECT_FIELD_ERROR(import(mimo_v2_flash(two)), "hybrid_layer_pattern",
                       "hybrid_layer_pattern[0] must be 0 (full attention) or 1 (sliding window), found 2");
}

}  // namespace
}  // namespace kvscope
