// Never a silent wrong answer: a config whose layer layout the calculator does not model (chunks outside
// Llama 4, a recurrent model type whose state it cannot size, unknown layer kinds or layout fields) gets its figures
// with a warning naming the field, in the report's warnings and the fit's notes; engines' dtype and multi-query rules
// are followed. (The layouts it does model are checked against hand arithmetic in hybrid_test.cpp.)
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/scenario_file.h"
#include "testing.h"

namespace kvscope {
namespace {

Result<ImportedModel> import(const std::string& extra, const std::string& type = "llama") {
    return import_config(R"({"model_type": ")" + type + R"(", "num_hidden_layers": 8, "num_attention_heads": 16,
        "num_key_value_heads": 2, "hidden_size": 2048, "max_position_embeddings": 32768)" +
                             (extra.empty() ? "" : ",\n" + extra) + "}",
                         "config.json");
}

// The one reason naming `fragment`, or an empty text.
std::string reason(const Architecture& a, const std::string& fragment) {
    for (const auto& r : a.not_exact)
        if (r.find(fragment) != std::string::npos) return r;
    return {};
}

TEST(Layouts, EveryHybridSpellingIsNamedWithItsLine) {
    const std::vector<std::pair<std::string, std::string>> spellings{
        {R"("attention_chunk_size": 8192)", "attention_chunk_size (line 3): attention within chunks"},
        {R"("moe_attention_interval": 3)", "moe_attention_interval (line 3) may change which layers"},
        {R"("mamba_d_state": 128)", "mamba_d_state (line 3) sizes a recurrent state"},
        // Which layers, spelt as every n layers or a group of layers, on a model type with no rule for it.
        {R"("global_attn_every_n_layers": 3)", "global_attn_every_n_layers (line 3) may change which layers"},
        {R"("layer_group_size": 4)", "layer_group_size (line 3) may change which layers"},
        // Layers run more than once, each pass with a cache of its own (Ouro's total_ut_steps, vLLM ouro.py;
        // IQuest-Coder's loop_num, vLLM iquest_loopcoder.py): not modelled, so said.
        {R"("total_ut_steps": 4)", "total_ut_steps (line 3) may change which layers"},
        {R"("loop_num": 2)", "loop_num (line 3) may change which layers"},
        // A KV head count of another spelling that no rule read, and another layer kind's heads.
        {R"("num_global_kv_heads": 8)", "num_global_kv_heads (line 3) may give the KV heads"},
        {R"("attention_other_setting": {"num_attention_heads": 96, "head_dim": 128})",
         "attention_other_setting.num_attention_heads = 96 (line 3) gives some layers other attention heads"},
    };
    for (const auto& spelling : spellings) {
        const std::string &extra = spelling.first, &expected = spelling.second;  // clang 14's lambdas take no bindings
        auto m = import(extra);
        ASSERT_TRUE(m) << extra << ": " << m.error_text();
        EXPECT_NE(reason(m->arch, expected), "") << extra << " gave: " << testing::join(m->arch.not_exact);
        // The figures come with it wherever they are shown.
        auto kv = kv_cache_report(m->arch, KvDtype::bf16, {.context_tokens = 8192});
        ASSERT_TRUE(kv);
        EXPECT_TRUE(std::any_of(kv->warnings.begin(), kv->warnings.end(), [&](const std::string& w) {
            return w.starts_with("not exact: ") && w.find(expected) != std::string::npos;
        })) << extra;
    }
}

TEST(Layouts, UnknownLayerTypesAreCountedNotSilent) {
    auto m = import(R"("layer_types": ["window_attention", "window_attention", "full_attention", "full_attention",
        "full_attention", "full_attention", "full_attention", "full_attention"])");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_NE(reason(m->arch,
                     "layer_types (line 3) lists 2 'window_attention' layers, a kind KVScope does not know; "
                     "counted here as full attention"),
              "")
        << testing::join(m->arch.not_exact);
    // Linear-attention layers of a model type whose state KVScope cannot size keep nothing counted, and say so.
    auto linear = import(R"("layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention",
        "linear_attention", "full_attention", "linear_attention", "full_attention"])");
    ASSERT_TRUE(linear) << linear.error_text();
    EXPECT_NE(reason(linear->arch, "model_type llama has recurrent layers whose state KVScope cannot size"), "")
        << testing::join(linear->arch.not_exact);
    // Known values stay exact: sliding and full layers.
    auto exact = import(R"("sliding_window": 4096, "layer_types": ["sliding_attention", "full_attention",
        "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention",
        "full_attention"])");
    ASSERT_TRUE(exact) << exact.error_text();
    EXPECT_TRUE(exact->arch.not_exact.empty()) << testing::join(exact->arch.not_exact);
}

TEST(Layouts, ARecurrentModelKvScopeCannotSizeSaysSo) {
    auto m = import(R"("attention_hidden_size": 2048)", "rwkv");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_NE(reason(m->arch, "model_type rwkv is a recurrent model whose state per sequence KVScope does not size"),
              "");
}

TEST(Layouts, TheFitCarriesTheWarningAndAScenarioFileKeepsIt) {
    auto m = import(R"("attention_chunk_size": 8192)");
    ASSERT_TRUE(m);
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    auto f = fit(m->arch, KvDtype::bf16, {.context_tokens = 131072}, {}, d);
    ASSERT_TRUE(f);
    EXPECT_TRUE(std::any_of(f->warnings.begin(), f->warnings.end(),
                            [](const std::string& n) { return n.starts_with("not exact: attention_chunk_size"); }));
    Scenario s;
    s.arch = m->arch;
    auto back = scenario_from_json(scenario_to_json(s), "plan.kvscope.json");
    ASSERT_TRUE(back) << back.error_text();
    EXPECT_EQ(back->scenario.arch.not_exact, m->arch.not_exact);
}

TEST(Layouts, EveryCatalogModelIsDescribedExactly) {
    // No false alarms: the built-in models are all ones the calculator describes exactly (and there are some).
    ASSERT_GE(Catalog::builtin().models().size(), 50u);
    for (const CatalogModel& c : Catalog::builtin().models())
        EXPECT_TRUE(c.model.arch.not_exact.empty()) << c.id << ": " << testing::join(c.model.arch.not_exact);
}

TEST(Layouts, AFloat32ConfigIsServedInBf16AsVllmDoes) {
    // vllm/config/model.py _resolve_auto_dtype: dtype="auto" downcasts a float32 checkpoint.
    auto m = import(R"("torch_dtype": "float32")", "gemma2");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_EQ(m->kv_dtype, KvDtype::bf16);
    EXPECT_EQ(m->weight_dtype, KvDtype::bf16);
    EXPECT_EQ(
        m->kv_dtype_source,
        "torch_dtype float32, served as bf16 (vLLM dtype=auto downcasts float32; --kv-dtype fp32 for the file's own)");
    // Gemma 2 9B was published in float32: 42 layers x 2 (K, V) x 8 KV heads x 256 dims x 2 bytes per token.
    const CatalogModel* g = Catalog::builtin().find_model("gemma-2-9b");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->model.kv_dtype, KvDtype::bf16);
}

TEST(Layouts, FalconMultiQueryRunsWithOneKvHeadWhateverTheSavedCount) {
    // transformers modeling_falcon.py: without new_decoder_architecture, multi_query means 1 KV head.
    auto m = import_config(R"({"model_type": "falcon", "num_hidden_layers": 32, "num_attention_heads": 71,
        "num_kv_heads": 71, "multi_query": true, "hidden_size": 4544})",
                           "config.json");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_EQ(m->arch.kv_heads, 1u);
    EXPECT_TRUE(std::any_of(m->assumed.begin(), m->assumed.end(), [](const std::string& a) {
        return a.starts_with("1 KV head: multi_query is true (line 2) and num_kv_heads = 71 is not used");
    })) << testing::join(m->assumed);
}

TEST(Layouts, ListsInsideSettingsAndListsThatCountTheMtpLayerAreNamed) {
    // MiniMax-M3's sparse_attention_config holds per-layer lists; DeepSeek-V4's compress_ratios lists the layers and
    // the MTP layer (9 entries for 8 + 1). A vision tower's per-layer list is not about these layers.
    auto sparse = import(R"("sparse_attention_config": {"use_sparse_attention": true, "sparse_index_dim": 128,
        "sparse_attention_freq": [0, 0, 1, 1, 1, 1, 1, 1]})");
    ASSERT_TRUE(sparse) << sparse.error_text();
    EXPECT_NE(reason(sparse->arch,
                     "sparse_attention_config.sparse_attention_freq (line 4) describes the layers one by "
                     "one (8 entries)"),
              "");
    auto ratios = import(R"("num_nextn_predict_layers": 1, "compress_ratios": [0, 4, 128, 4, 128, 4, 128, 4, 0])");
    ASSERT_TRUE(ratios) << ratios.error_text();
    EXPECT_NE(reason(ratios->arch, "compress_ratios (line 3) describes the layers one by one (9 entries)"), "");
    // Nemotron 3 Super's MTP block "*E" is one attention layer, as --mtp counts it; a Mamba mixer in it is not.
    const std::string nemotron = R"("hybrid_override_pattern": "M*M-M*ME", "num_nextn_predict_layers": 1,
        "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 1, "conv_kernel": 4, "expand": 2,
        "mtp_hybrid_override_pattern": )";
    auto super = import(nemotron + R"("*E")", "nemotron_h");
    ASSERT_TRUE(super) << super.error_text();
    EXPECT_TRUE(super->arch.not_exact.empty()) << testing::join(super->arch.not_exact);
    auto mamba_mtp = import(nemotron + R"("M*E")", "nemotron_h");
    ASSERT_TRUE(mamba_mtp) << mamba_mtp.error_text();
    // Said where --mtp counts the MTP layers (a fit), not of the model's own figures.
    EXPECT_TRUE(mamba_mtp->arch.not_exact.empty()) << testing::join(mamba_mtp->arch.not_exact);
    ASSERT_EQ(mamba_mtp->arch.mtp_not_exact.size(), 1u);
    EXPECT_TRUE(mamba_mtp->arch.mtp_not_exact.front().starts_with(
        "mtp_hybrid_override_pattern (line 5) \"M*E\": --mtp counts one attention"));
    // The rotary embedding's base and share per layer (Step-3.5-Flash's, with its MTP layer) change no cache; nor
    // does a KV head count spelt twice alike, or another setting's heads that are the model's own.
    auto rope = import(R"("num_nextn_predict_layers": 1, "rope_theta": [5e6, 1e4, 1e4, 1e4, 5e6, 1e4, 1e4, 1e4, 5e6],
        "partial_rotary_factors": [0.5, 1, 1, 1, 0.5, 1, 1, 1, 0.5], "num_kv_heads": 2,
        "attention_other_setting": {"num_attention_heads": 16, "head_dim": 128})");
    ASSERT_TRUE(rope) << rope.error_text();
    EXPECT_TRUE(rope->arch.not_exact.empty()) << testing::join(rope->arch.not_exact);
    // Nor do the spellings the rules read or that place experts, or another model's heads in the same file:
    // - Falcon re-saved by transformers (num_kv_heads 71 beside multi_query, read and set aside);
    // - Trinity's layer_types beside the global_attn_every_n_layers they came from;
    // - Step-3.5's moe_every_n_layer (which layers have experts);
    // - Qwen3-Omni's code2wav_config (a vocoder's heads).
    const std::pair<std::string, std::string> quiet[] = {
        {R"("num_kv_heads": 71, "multi_query": true, "num_hidden_layers": 2, "num_attention_heads": 71,
            "hidden_size": 4544)",
         "falcon"},
        {R"("sliding_window": 512, "global_attn_every_n_layers": 4, "layer_types": ["sliding_attention",
            "sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
            "sliding_attention", "full_attention"])",
         "afmoe"},
        {R"("moe_every_n_layer": 1)", "step3p5"},
        {R"("code2wav_config": {"num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 64})", "llama"},
    };
    for (const auto& [extra, type] : quiet) {
        auto m = type == "falcon" ? import_config("{\"model_type\": \"falcon\", " + extra + "}", "config.json")
                                  : import(extra, type);
        ASSERT_TRUE(m) << type << ": " << m.error_text();
        EXPECT_TRUE(m->arch.not_exact.empty()) << type << ": " << testing::join(m->arch.not_exact);
    }
    auto vision = import(R"("vision_config": {"layer_scales": [1, 1, 1, 1, 1, 1, 1, 1]})");
    ASSERT_TRUE(vision) << vision.error_text();
    EXPECT_TRUE(vision->arch.not_exact.empty()) << testing::join(vision->arch.not_exact);
}

}  // namespace
}  // namespace kvscope
