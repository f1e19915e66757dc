// Configs of models no catalog entry names, read as the engine that serves them keeps their layers: each against
// bytes worked out by hand from the published config.json, with the engine file each rule follows. bf16 = 2 bytes.
#include <algorithm>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::import;
using testing::report;

TEST(UnnamedConfigs, AreReadAsTheirEnginesRunThem) {
    // Ring-mini-linear-2.0 (inclusionAI/Ring-mini-linear-2.0 config.json, its layout fields): layer_group_size 5
    // makes 4 of 20 layers softmax attention (4 KV heads x 128); the 16 linear-attention layers keep 16 heads x 128
    // x 128 each (vLLM bailing_moe_linear.py is_linear_layer, get_mamba_state_shape_from_config). Counted as 20
    // full layers before: five times the cache.
    auto ring = import(R"("architectures": ["BailingMoeLinearV2ForCausalLM"], "model_type": "bailing_moe_linear",
        "num_hidden_layers": 20, "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4,
        "head_dim": 128, "layer_group_size": 5, "linear_silu": false, "group_norm_size": 4, "num_experts": 256,
        "num_experts_per_tok": 8, "moe_intermediate_size": 512, "intermediate_size": 5120, "first_k_dense_replace": 1,
        "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "vocab_size": 157184)");
    ASSERT_TRUE(ring) << ring.error_text();
    EXPECT_TRUE(ring->arch.not_exact.empty()) << testing::join(ring->arch.not_exact);
    const KvCacheReport r = report(ring->arch, 32768);
    EXPECT_EQ(r.total_bytes, 4ull * 2 * 4 * 128 * 2 * 32768);  // 268,435,456
    EXPECT_EQ(r.state_bytes_per_sequence, 16ull * 16 * 128 * 128 * 2);

    // Trinity-Nano-Preview (arcee-ai's config.json has global_attn_every_n_layers 4 and no layer_types):
    // transformers configuration_afmoe.py makes every fourth layer global, the others slide over 2,048 tokens.
    // Counted as 56 sliding layers before: a fifth of the cache.
    auto trinity = import(R"("model_type": "afmoe", "num_hidden_layers": 56, "hidden_size": 1024,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "sliding_window": 2048,
        "global_attn_every_n_layers": 4, "max_position_embeddings": 131072, "dtype": "bfloat16")");
    ASSERT_TRUE(trinity) << trinity.error_text();
    const KvCacheReport t = report(trinity->arch, 32768);
    EXPECT_EQ(t.total_bytes, (14ull * 32768 + 42ull * 2048) * 2 * 2 * 128 * 2);  // 557,842,432

    // LongCat-Flash (meituan-longcat's config.json gives num_layers 28 and no model_type): two MLA attention blocks
    // a layer, each with its own cache (vLLM longcat_flash.py). The weights estimate is said not to be LongCat's.
    auto longcat = import(R"("architectures": ["LongcatFlashForCausalLM"], "num_layers": 28, "hidden_size": 6144,
        "num_attention_heads": 64, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "ffn_hidden_size": 12288, "vocab_size": 131072,
        "max_position_embeddings": 131072, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(longcat) << longcat.error_text();
    EXPECT_EQ(longcat->arch.layers, 56u);
    // As transformers saves it (num_hidden_layers 56 beside num_layers 28: no contradiction), and LongCat-Flash-Lite's
    // class (the same layers).
    for (const char* cls : {"LongcatFlashForCausalLM", "LongcatFlashNgramForCausalLM"}) {
        auto saved = import(std::string(R"("architectures": [")") + cls + R"("], "model_type": "longcat_flash",
            "num_hidden_layers": 28, "num_layers": 14, "hidden_size": 3072, "num_attention_heads": 32,
            "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "ffn_hidden_size": 6144, "vocab_size": 131072, "torch_dtype": "bfloat16")");
        ASSERT_TRUE(saved) << cls << ": " << saved.error_text();
        EXPECT_EQ(saved->arch.layers, 28u) << cls;
    }
    EXPECT_EQ(report(longcat->arch, 32768).total_bytes, 56ull * (512 + 64) * 2 * 32768);  // 2,113,929,216
    ASSERT_EQ(longcat->arch.not_exact.size(), 1u);
    EXPECT_NE(longcat->arch.not_exact.front().find("weights estimated from the config"), std::string::npos);

    // Step-3.5-Flash's own spellings: num_attention_groups for its 8 KV heads, moe_top_k for the experts a token
    // takes (vLLM step3p5.py). Read as 64 KV heads before (eight times the cache), and refused for moe_top_k.
    auto step = import(R"("model_type": "step3p5", "num_hidden_layers": 4, "hidden_size": 4096,
        "num_attention_heads": 64, "num_attention_groups": 8, "head_dim": 128, "moe_num_experts": 288,
        "moe_top_k": 8, "moe_intermediate_size": 1280, "intermediate_size": 11264, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(step) << step.error_text();
    EXPECT_EQ(step->arch.kv_heads, 8u);
    ASSERT_TRUE(step->arch.moe.has_value());
    EXPECT_EQ(step->arch.moe->experts_per_token, 8u);

    // Step-3.5's MTP layers listed as sliding: --mtp counts them as full attention, and a fit with --mtp says so;
    // the model's own figures (kv, a fit without --mtp) count no MTP layer and are exact.
    auto mtp = import(R"("model_type": "step3p5", "num_hidden_layers": 2, "num_nextn_predict_layers": 1,
        "hidden_size": 4096, "num_attention_heads": 64, "num_attention_groups": 8, "head_dim": 128,
        "sliding_window": 512, "layer_types": ["full_attention", "sliding_attention", "sliding_attention"])");
    ASSERT_TRUE(mtp) << mtp.error_text();
    EXPECT_TRUE(mtp->arch.not_exact.empty()) << testing::join(mtp->arch.not_exact);
    ASSERT_EQ(mtp->arch.mtp_not_exact.size(), 1u);
    EXPECT_NE(mtp->arch.mtp_not_exact.front().find("gives the MTP layers kinds other than full_attention; --mtp "
                                                   "counts each as full attention"),
              std::string::npos);
    Deployment on_h200;
    on_h200.gpu = *Catalog::builtin().find_gpu("h200");
    const auto said = [&](bool drafting) {
        on_h200.mtp = drafting;
        const auto f = fit(mtp->arch, KvDtype::bf16, {.context_tokens = 4096, .batch = 1}, {}, on_h200);
        return f && std::any_of(f->warnings.begin(), f->warnings.end(), [](const std::string& w) {
                   return w.find("gives the MTP layers kinds other than full_attention") != std::string::npos;
               });
    };
    EXPECT_TRUE(said(true));
    EXPECT_FALSE(said(false));

    // Step-3.5-Flash's attention_other_setting: vLLM step3p5.py gives the layers of its attention_type (here
    // sliding_attention) the block's num_attention_groups as KV heads and its head_dim; a variant with 4 KV heads of
    // 64 on its sliding layers keeps 4 x 64 x 2 x 2 bytes a token there and 8 x 128 x 2 x 2 on its full one. Its 96
    // query heads change the weights, said in a note. Before, every layer was counted with the model's heads, with a
    // warning that the cache did not change.
    auto other = import(R"("model_type": "step3p5", "num_hidden_layers": 4, "hidden_size": 4096,
        "num_attention_heads": 64, "num_attention_groups": 8, "head_dim": 128, "sliding_window": 512,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"],
        "attention_other_setting": {"attention_type": "sliding_attention", "num_attention_heads": 96,
        "num_attention_groups": 4, "head_dim": 64, "true_head_dim": 64}, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(other) << other.error_text();
    EXPECT_TRUE(other->arch.not_exact.empty()) << testing::join(other->arch.not_exact);
    EXPECT_EQ(report(other->arch, 4096).total_bytes, 4096ull * (8 * 128 * 2 * 2) + 3ull * 512 * (4 * 64 * 2 * 2));
    EXPECT_TRUE(std::any_of(other->notes.begin(), other->notes.end(), [](const std::string& n) {
        return n.starts_with("attention_other_setting: the 3 sliding_attention layers have 96 query heads");
    })) << testing::join(other->notes);

    // A multimodal config whose language model is under llm_config (InternVL: vLLM internvl.py) or
    // thinker_config.text_config (Qwen3-Omni's thinker) is read from there, and said so.
    for (const auto& [outer, inner] :
         {std::pair{"llm_config", "llm_config"}, std::pair{"thinker_config", "thinker_config.text_config"}}) {
        const std::string text = R"({"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896,
            "num_attention_heads": 14, "num_key_value_heads": 2, "torch_dtype": "bfloat16"})";
        const std::string language = std::string(outer) == "thinker_config" ? R"({"text_config": )" + text + "}" : text;
        const std::string body = R"("model_type": "wrapper", "vision_config": {"num_hidden_layers": 27}, ")" +
                                 std::string(outer) + R"(": )" + language;
        auto m = import(body);
        ASSERT_TRUE(m) << outer << ": " << m.error_text();
        EXPECT_EQ(m->arch.layers, 24u) << outer;
        EXPECT_EQ(report(m->arch, 32768).total_bytes, 24ull * 2 * 2 * 64 * 2 * 32768) << outer;  // 402,653,184
        const std::string said = "read the language model from " + std::string(inner);
        EXPECT_NE(std::find(m->notes.begin(), m->notes.end(), said), m->notes.end())
            << outer << ": " << testing::join(m->notes);
    }
}

TEST(UnnamedConfigs, PhiFourMiniFlashKeepsOneFullLayerEightWindowsAndNineMambaStates) {
    // microsoft/Phi-4-mini-flash-reasoning's config.json (SambaY, vLLM phi4flash.py): Mamba on even layers; the
    // lower half's odd layers slide over 512 tokens; layer 17 is the one full layer, whose cache layers 19, 21, …, 31
    // read; the Mamba layers from 18 on reuse layer 16's state. 20 KV heads x 64 (2,560 / 40), bf16: 5,120 bytes a
    // token a layer. Nine Mamba-1 states of conv 3 x 5,120 and SSM 5,120 x 16 (mamba_expand 2, mamba_d_conv 4,
    // mamba_d_state 16: its config class's). Counted before as 32 sliding layers and no state, and shown as exact.
    auto m = import(R"("architectures": ["Phi4FlashForCausalLM"], "model_type": "phi4flash", "hidden_size": 2560,
        "intermediate_size": 10240, "max_position_embeddings": 262144, "mb_per_layer": 2, "num_attention_heads": 40,
        "num_hidden_layers": 32, "num_key_value_heads": 20, "sliding_window": 512, "torch_dtype": "bfloat16",
        "tie_word_embeddings": true, "vocab_size": 200064)");
    ASSERT_TRUE(m) << m.error_text();
    // vLLM served it only on V0 (up to 0.10.2), where the sliding layers hold the whole context: said.
    ASSERT_EQ(m->arch.not_exact.size(), 1u) << testing::join(m->arch.not_exact);
    EXPECT_NE(m->arch.not_exact.front().find("vLLM served it only on its V0 engine, up to 0.10.2"), std::string::npos);
    for (const std::uint64_t tokens : {32768ull, 131072ull}) {
        const KvCacheReport r = report(m->arch, tokens);
        EXPECT_EQ(r.total_bytes, (8ull * 512 + tokens) * 5120) << tokens;  // 188,743,680 at 32k
        EXPECT_EQ(r.state_bytes_per_sequence, 9ull * (3 * 5120 + 5120 * 16) * 2) << tokens;
    }
    using K = LayerKind;
    EXPECT_EQ(m->arch.layer(16).kind, K::recurrent);
    EXPECT_EQ(m->arch.layer(17).kind, K::full);
    EXPECT_EQ(m->arch.layer(18).kind, K::none);
    EXPECT_EQ(m->arch.layer(19).kind, K::shared);
    EXPECT_EQ(m->arch.layer(15).kind, K::sliding);
    // A decode step reads layer 17's cache once for it and once for each of the 7 cross-decoder layers that attend
    // over it (the cache stored counted it once before): 8 windows + 8 x 131,072 tokens, 5,120 bytes each.
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.engine = Engine::vllm;
    d.weight_dtype = KvDtype::bf16;
    const auto step = decode_estimate(m->arch, KvDtype::bf16, {.context_tokens = 131072}, {}, d);
    ASSERT_TRUE(step) << step.error_text();
    EXPECT_EQ(step->kv_bytes_read_per_gpu, (8ull * 512 + 8ull * 131072) * 5120);  // 5,389,680,640
}

TEST(UnnamedConfigs, PlamoTwoAttendsOnEveryOtherLayerAndKeepsMambaTwoStatesOnTheRest) {
    // pfnet/plamo-2-1b's config.json (vLLM plamo2.py): is_mamba(i) is i % mamba_step != mamba_step / 2, so with
    // mamba_step 2 the odd layers attend (8 of 16) and the even ones are Mamba-2. The attention layers take the
    // model-wide sliding_window (2,048) and have 1 KV head x 128 (hidden_size_per_head): 512 bytes a token a layer.
    // Each Mamba-2 state: conv 3 x 4,096 (32 heads x 128, no B/C groups) and SSM 32 x 128 x 64, in the served bf16
    // (the file's float32 downcast). Counted before as 16 attention layers and no state, with a warning that named
    // linear_type, its weights' format.
    auto m = import(R"("architectures": ["PlamoForCausalLM"], "model_type": "plamo2", "attention_window_size": 2048,
        "hidden_size": 2048, "hidden_size_per_head": 128, "intermediate_size": 8192, "linear_type": "fp8",
        "mamba_chunk_size": 256, "mamba_d_conv": 4, "mamba_d_state": 64, "mamba_enabled": true, "mamba_num_heads": 32,
        "mamba_step": 2, "max_position_embeddings": 10485760, "num_attention_heads": 16, "num_hidden_layers": 16,
        "num_key_value_heads": 1, "sliding_window": 2048, "torch_dtype": "float32", "vocab_size": 100000)");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_TRUE(m->arch.not_exact.empty()) << testing::join(m->arch.not_exact);
    EXPECT_EQ(m->arch.layer(0).kind, LayerKind::recurrent);
    EXPECT_EQ(m->arch.layer(1).kind, LayerKind::sliding);
    const KvCacheReport r = report(m->arch, 32768);
    EXPECT_EQ(r.total_bytes, 8ull * 2048 * 1 * 128 * 2 * 2);                       // 8,388,608
    EXPECT_EQ(r.state_bytes_per_sequence, 8ull * (3 * 4096 + 32 * 128 * 64) * 2);  // 4,390,912
    // A short model attends on its last layer only; mamba_step 4 puts attention on layers 2, 6, 10, …
    auto four = import(R"("model_type": "plamo2", "hidden_size": 2048, "hidden_size_per_head": 128,
        "mamba_d_conv": 4, "mamba_d_state": 64, "mamba_num_heads": 32, "mamba_step": 4, "num_attention_heads": 16,
        "num_hidden_layers": 8, "num_key_value_heads": 4, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(four) << four.error_text();
    EXPECT_EQ(four->arch.layer(2).kind, LayerKind::full);  // no sliding_window: the whole context
    EXPECT_EQ(four->arch.layer(6).kind, LayerKind::full);
    EXPECT_EQ(four->arch.attention_layers(), 2u);
    EXPECT_EQ(four->arch.state_layers(), 6u);
    // The head size is hidden_size_per_head (vLLM plamo2.py sets config.head_dim from it), not hidden ÷ heads: 64
    // here against 4,096 ÷ 32 = 128. 8 attention layers x 4 KV heads x 64 x 2 x 2 bytes a token.
    auto narrow = import(R"("model_type": "plamo2", "hidden_size": 4096, "hidden_size_per_head": 64,
        "mamba_d_conv": 4, "mamba_d_state": 64, "mamba_num_heads": 64, "mamba_step": 2, "num_attention_heads": 32,
        "num_hidden_layers": 16, "num_key_value_heads": 4, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(narrow) << narrow.error_text();
    EXPECT_EQ(narrow->arch.head_dim_k, 64u);
    EXPECT_EQ(report(narrow->arch, 8192).total_bytes, 8ull * 4 * 64 * 2 * 2 * 8192);  // 33,554,432
}

TEST(UnnamedConfigs, GptOssWithoutLayerTypesAlternatesAsItsConfigClassDoes) {
    // gpt-oss-120b's shape with layer_types taken out: transformers configuration_gpt_oss.py makes layer i sliding
    // when (i + 1) % 2 (the even ones), vLLM gpt_oss.py the same; 18 full layers and 18 windows of 128, 8 KV heads x
    // 64. Counted before as 36 sliding layers: a hundredth of the cache, shown as exact.
    auto m = import(R"("model_type": "gpt_oss", "num_hidden_layers": 36, "hidden_size": 2880,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128,
        "num_local_experts": 128, "num_experts_per_tok": 4, "intermediate_size": 2880, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_EQ(report(m->arch, 32768).total_bytes, (18ull * 32768 + 18ull * 128) * 8 * 64 * 2 * 2);  // 1,212,678,144
    EXPECT_EQ(m->arch.layer(0).kind, LayerKind::sliding);
    EXPECT_EQ(m->arch.layer(1).kind, LayerKind::full);
}

TEST(UnnamedConfigs, MiniMaxMTwoIsSixtyTwoFullLayersAndItsMtpModulesAreNoDraftVllmServes) {
    // MiniMax-M2's config.json (MiniMaxAI/MiniMax-M2): 62 layers of 8 KV heads x 128, attn_type_list all softmax
    // attention (1), and use_mtp with 3 MTP modules, which vLLM has no MTP model for (model_executor/models has no
    // minimax_m2_mtp.py): the import says so, --mtp counts none and SGLang keeps nothing back for it.
    std::string types;
    for (int i = 0; i < 62; ++i) types += std::string(i ? ", " : "") + "1";
    auto m = import(R"("architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "hidden_size": 3072,
        "intermediate_size": 1536, "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "rotary_dim": 64, "num_local_experts": 256, "num_experts_per_tok": 8,
        "shared_intermediate_size": 0, "scoring_func": "sigmoid", "use_routing_bias": true, "use_qk_norm": true,
        "qk_norm_type": "per_layer", "max_position_embeddings": 196608, "vocab_size": 200064,
        "num_mtp_modules": 3, "mtp_transformer_layers": 1, "use_mtp": true, "attn_type_list": [)" +
                    types + R"(], "torch_dtype": "bfloat16")");
    ASSERT_TRUE(m) << m.error_text();
    EXPECT_TRUE(m->arch.not_exact.empty()) << testing::join(m->arch.not_exact);
    EXPECT_EQ(report(m->arch, 32768).total_bytes, 62ull * 32768 * 8 * 128 * 2 * 2);  // 8,321,499,136
    EXPECT_EQ(m->arch.mtp_layers, 0u);
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    d.gpu_count = 8;
    d.mtp = true;
    const auto fitted = fit(m->arch, KvDtype::bf16, {.context_tokens = 32768, .batch = 1}, {.tp = 8}, d);
    ASSERT_TRUE(fitted) << fitted.error_text();
    EXPECT_TRUE(std::any_of(m->notes.begin(), m->notes.end(), [](const std::string& n) {
        return n.starts_with("num_mtp_modules: 3 MTP modules, which vLLM serves no draft for");
    })) << testing::join(m->notes);
    EXPECT_TRUE(std::any_of(fitted->notes.begin(), fitted->notes.end(), [](const std::string& n) {
        return n.starts_with("--mtp: the model has no multi-token-prediction layers");
    })) << testing::join(fitted->notes);
    // Nothing drafts, so nothing is kept back for it: SGLang's own fraction is the one without --mtp.
    d.engine = Engine::sglang;
    const auto sglang = fit(m->arch, KvDtype::bf16, {.context_tokens = 32768, .batch = 1}, {.tp = 8}, d);
    Deployment plain = d;
    plain.mtp = false;
    ASSERT_TRUE(sglang) << sglang.error_text();
    EXPECT_DOUBLE_EQ(sglang->fraction, sglang_default_fraction(plain, {.tp = 8}).fraction);
    EXPECT_GT(sglang->fraction, sglang_default_fraction(d, {.tp = 8}).fraction);
}

TEST(UnnamedConfigs, GemmaFoursGlobalKvHeadsComeWithKEqualsVAlone) {
    // Gemma 4 31B's text config (google/gemma-4-31B): 60 layers, every sixth full attention. vLLM gemma4.py
    // Gemma4DecoderLayer: a full layer's head dim is global_head_dim (512) and its KV heads num_global_key_value_heads
    // (4) where attention_k_eq_v, keys and values both cached; a sliding layer keeps 16 heads x 256 over 1,024 tokens.
    // At 32k: 10 x 4 x 512 x 2 x 2 x 32,768 + 50 x 16 x 256 x 2 x 2 x 1,024 = 3,523,215,360 bytes.
    std::string types;
    for (int i = 0; i < 60; ++i)
        types += std::string(i ? ", " : "") + ((i + 1) % 6 == 0 ? "\"full_attention\"" : "\"sliding_attention\"");
    const auto gemma = [&](const char* k_eq_v) {
        return import(std::string(R"("model_type": "gemma4_text", "num_hidden_layers": 60, "hidden_size": 5376,
            "num_attention_heads": 32, "num_key_value_heads": 16, "num_global_key_value_heads": 4, "head_dim": 256,
            "global_head_dim": 512, "sliding_window": 1024, "intermediate_size": 21504, "vocab_size": 262144,
            "attention_k_eq_v": )") +
                      k_eq_v + R"(, "layer_types": [)" + types + R"(], "dtype": "bfloat16")");
    };
    auto paired = gemma("true");
    ASSERT_TRUE(paired) << paired.error_text();
    EXPECT_EQ(report(paired->arch, 32768).total_bytes, 3'523'215'360ull);
    // Without k_eq_v vLLM and transformers give the full layers num_key_value_heads (16), whatever the global count
    // says, and the import says it was not used. Counted with 4 before: a quarter of the full layers' cache.
    auto separate = gemma("false");
    ASSERT_TRUE(separate) << separate.error_text();
    EXPECT_EQ(report(separate->arch, 32768).total_bytes,
              10ull * 16 * 512 * 2 * 2 * 32768 + 50ull * 16 * 256 * 2 * 2 * 1024);  // 11,576,279,040
    EXPECT_TRUE(separate->arch.not_exact.empty()) << testing::join(separate->arch.not_exact);
    EXPECT_TRUE(std::any_of(separate->notes.begin(), separate->notes.end(), [](const std::string& n) {
        return n.starts_with("num_global_key_value_heads (4) is read only with attention_k_eq_v");
    })) << testing::join(separate->notes);
}

TEST(UnnamedConfigs, WhatChangesNoCacheIsNotSaidAndWhatDoesIsNamed) {
    // Hunyuan-A13B gives num_shared_expert one a layer: where experts are changes no layer's cache.
    auto hunyuan = import(R"("model_type": "hunyuan_v1_moe", "num_hidden_layers": 4, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "num_experts": 64, "moe_topk": [8, 8, 8, 8],
        "num_shared_expert": [1, 1, 1, 1], "torch_dtype": "bfloat16")");
    ASSERT_TRUE(hunyuan) << hunyuan.error_text();
    EXPECT_EQ(testing::join(hunyuan->arch.not_exact).find("num_shared_expert"), std::string::npos)
        << testing::join(hunyuan->arch.not_exact);
    // Hymba (nvidia/Hymba-1.5B-Base, served by its remote modeling_hymba.py only): the fields that change its cache
    // are named, not a weights-format field.
    auto hymba = import(R"("model_type": "hymba", "num_hidden_layers": 4, "hidden_size": 1600,
        "num_attention_heads": 25, "num_key_value_heads": 5, "sliding_window": 1024, "global_attn_idx": [0, 3],
        "kv_reuse_group": [[1, 2]], "num_memory_tokens": 128, "torch_dtype": "bfloat16")");
    ASSERT_TRUE(hymba) << hymba.error_text();
    const std::string said = testing::join(hymba->arch.not_exact);
    for (const char* field : {"global_attn_idx (line 2): the layers that attend over the whole context",
                              "kv_reuse_group (line 3): groups of layers that share one layer's keys and values",
                              "num_memory_tokens (line 3): meta tokens"})
        EXPECT_NE(said.find(field), std::string::npos) << field << " in " << said;
    // A recurrent model nobody named whose state sizes sit in an object is not exact; a name beside it is no size.
    auto hybrid = import(R"("model_type": "newhybrid", "num_hidden_layers": 4, "hidden_size": 1024,
        "num_attention_heads": 8, "num_key_value_heads": 8, "linear_type": "fp8", "ssm_cfg": {"d_state": 128})");
    ASSERT_TRUE(hybrid) << hybrid.error_text();
    const std::string state = testing::join(hybrid->arch.not_exact);
    EXPECT_NE(state.find("ssm_cfg (line 2) sizes a recurrent state"), std::string::npos) << state;
    EXPECT_EQ(state.find("linear_type"), std::string::npos) << state;
}

}  // namespace
}  // namespace kvscope
