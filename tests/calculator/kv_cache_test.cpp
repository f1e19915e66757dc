#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/fit.h"

#include <algorithm>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/deployment.h"

#include "kvscope/calculator/units.h"
#include "kvscope/calculator/variants.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::make_arch;

TEST(KvCache, ABlockFormatNeedsWholeBlocksAHeadAsLlamaCppDoes) {
    // open_llama_3b's head dimension of 100 in q8_0: llama.cpp refuses the cache, so no figure is given for it.
    const Architecture odd = testing::make_arch(26, 32, 32, 100);
    const auto r = kv_cache_report(odd, KvDtype::q8_0, {2048, 1, 1, false});
    EXPECT_FIELD_ERROR(r, "kv_dtype",
                       "q8_0 stores blocks of 32 values, and the key head dimension 100 is not a multiple of 32: "
                       "llama.cpp refuses such a cache (\"K cache type q8_0 with block size 32 does not divide "
                       "n_embd_head_k\")");
    EXPECT_TRUE(kv_cache_report(odd, KvDtype::fp16, {2048, 1, 1, false}).ok());
    EXPECT_TRUE(kv_cache_report(testing::make_arch(32, 32, 8, 128), KvDtype::q4_0, {2048, 1, 1, false}).ok());
    // A value dimension of its own (72) is checked too.
    Architecture v72 = testing::make_arch(4, 8, 8, 128);
    v72.head_dim_v = 72;
    EXPECT_FIELD_ERROR(kv_cache_report(v72, KvDtype::q4_0, {64, 1, 1, false}), "kv_dtype",
                       "the value head dimension 72 is not a multiple of 32");
    // MLA: llama.cpp's K row is the latent and the rotary part (DeepSeek V3's 512 + 64 = 576, whole blocks), V the
    // latent.
    Architecture mla = Catalog::builtin().find_model("deepseek-v3")->model.arch;
    EXPECT_TRUE(kv_cache_report(mla, KvDtype::q8_0, {64, 1, 1, false}).ok());
    mla.mla->kv_lora_rank = 500;
    EXPECT_FIELD_ERROR(kv_cache_report(mla, KvDtype::q8_0, {64, 1, 1, false}), "kv_dtype",
                       "the key (MLA latent and rotary part) head dimension 564 is not a multiple of 32");
    mla.mla->qk_rope_head_dim = 12;  // 500 + 12 = 512 whole blocks of K; the latent of V, 500, is not
    EXPECT_FIELD_ERROR(kv_cache_report(mla, KvDtype::q8_0, {64, 1, 1, false}), "kv_dtype",
                       "the value (MLA latent) head dimension 500 is not a multiple of 32");
}

TEST(KvCache, LessonReferenceMhaGqaMqa) {
    // 32 layers, 32 query heads, model dim 4096 (head dim 128), fp16, 8192 tokens, batch 1.
    const Architecture a = teaching_model();
    const Workload w{.context_tokens = 8192, .batch = 1};
    auto variants = compare_variants(a, KvDtype::fp16, w);
    ASSERT_TRUE(variants.ok()) << variants.error_text();
    ASSERT_EQ(variants->size(), 3u);
    const auto& mha = (*variants)[0];
    const auto& gqa = (*variants)[1];
    const auto& mqa = (*variants)[2];
    EXPECT_EQ(mha.name, "MHA");
    EXPECT_EQ(mha.kv_cache_bytes, 4ull << 30);  // 2 x 8192 x 32 x 32 x 128 x 2 bytes
    EXPECT_EQ(format_bytes(mha.kv_cache_bytes), "4.00 GiB");
    EXPECT_EQ(gqa.name, "GQA-8");
    EXPECT_EQ(gqa.kv_cache_bytes, 1ull << 30);
    EXPECT_EQ(format_bytes(gqa.kv_cache_bytes), "1.00 GiB");
    EXPECT_DOUBLE_EQ(gqa.percent_of_mha, 25.0);
    EXPECT_EQ(mqa.name, "MQA");
    EXPECT_EQ(mqa.kv_cache_bytes, 128ull << 20);
    EXPECT_EQ(format_bytes(mqa.kv_cache_bytes), "128 MiB");
    EXPECT_NEAR(mqa.percent_of_mha, 3.125, 1e-12);
    EXPECT_TRUE(mha.is_model);
    EXPECT_FALSE(gqa.is_model);
}

TEST(KvCache, ReportsTotalPerSequencePerTokenAndPerLayer) {
    const Architecture a = make_arch(32, 32, 8, 128);  // Llama-3-8B shape
    auto r = kv_cache_report(a, KvDtype::bf16, {.context_tokens = 4096, .batch = 3});
    ASSERT_TRUE(r.ok()) << r.error_text();
    // per token: 2 (K,V) x 32 layers x 8 heads x 128 dims x 2 bytes = 131072
    EXPECT_EQ(r->bytes_per_token, 131072u);
    EXPECT_EQ(r->per_sequence_bytes, 131072ull * 4096);
    EXPECT_EQ(r->total_bytes, 131072ull * 4096 * 3);
    EXPECT_EQ(r->per_gpu_bytes, r->total_bytes);
    ASSERT_EQ(r->layers.size(), 32u);
    EXPECT_EQ(r->layers[7].bytes, r->total_bytes / 32);
    EXPECT_EQ(r->layers[7].stored_tokens, 4096u);
}

TEST(KvCache, DifferentKeyAndValueHeadDims) {
    Architecture a = make_arch(2, 4, 2, 0);
    a.head_dim_k = 192;
    a.head_dim_v = 128;
    a.hidden_size = 512;
    auto r = kv_cache_report(a, KvDtype::fp16, {.context_tokens = 10});
    ASSERT_TRUE(r.ok()) << r.error_text();
    // 2 layers x 2 heads x (192 + 128) x 2 bytes = 2560 per token
    EXPECT_EQ(r->bytes_per_token, 2560u);
    EXPECT_EQ(r->total_bytes, 25600u);
}

TEST(KvCache, MlaStoresOneLatentPerTokenWithoutTimesTwo) {
    Architecture a = make_arch(61, 128, 128, 192);
    a.mla = MlaDims{.kv_lora_rank = 512, .qk_rope_head_dim = 64, .qk_nope_head_dim = 128, .v_head_dim = 128};
    auto r = kv_cache_report(a, KvDtype::bf16, {.context_tokens = 1000});
    ASSERT_TRUE(r.ok()) << r.error_text();
    EXPECT_EQ(r->bytes_per_token, 61u * (512 + 64) * 2);  // 70272
    EXPECT_EQ(r->total_bytes, 70272ull * 1000);
    // Under TP 8 every GPU keeps the whole latent: the total counts 8 copies.
    auto tp = kv_cache_report(a, KvDtype::bf16, {.context_tokens = 1000}, {.tp = 8});
    ASSERT_TRUE(tp.ok()) << tp.error_text();
    EXPECT_EQ(tp->per_gpu_bytes, 70272ull * 1000);
    EXPECT_EQ(tp->total_bytes, 8 * 70272ull * 1000);
    EXPECT_EQ(tp->replication, 8u);
}

TEST(KvCache, SlidingWindowsCapLayersUnlessTheEngineKeepsTheFullContext) {
    Architecture a = make_arch(4, 8, 8, 64);
    a.layer_specs = sliding_layers({1024, 0, 1024, 0});  // alternating local / global
    const std::uint64_t per_layer_token = 2 * 8 * 64 * 2;
    auto r = kv_cache_report(a, KvDtype::fp16, {.context_tokens = 5000});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->total_bytes, per_layer_token * (1024 * 2 + 5000 * 2));
    EXPECT_EQ(r->layers[0].stored_tokens, 1024u);
    EXPECT_EQ(r->layers[1].stored_tokens, 5000u);
    // bytes_per_token has no window cap.
    EXPECT_EQ(r->bytes_per_token, per_layer_token * 4);

    auto full = kv_cache_report(a, KvDtype::fp16, {.context_tokens = 5000, .full_window = true});
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(full->total_bytes, per_layer_token * 5000 * 4);
    EXPECT_FALSE(full->warnings.empty());

    // Below the window nothing changes.
    auto short_ctx = kv_cache_report(a, KvDtype::fp16, {.context_tokens = 100});
    EXPECT_EQ(short_ctx->total_bytes, per_layer_token * 100 * 4);
}

TEST(KvCache, PagedBlocksRoundEachSequenceUp) {
    const Architecture a = make_arch(2, 4, 4, 32);
    const std::uint64_t per_token = 2 * 2 * 4 * 32 * 2;
    auto r = kv_cache_report(a, KvDtype::fp16, {.context_tokens = 1000, .batch = 3, .block_size = 16});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->total_bytes, per_token * 1008 * 3);  // 1000 rounds to 63 blocks of 16
    EXPECT_EQ(r->layers[0].stored_tokens, 1008u);
    // A window rounds up too: 100 -> 112.
    Architecture w = a;
    w.layer_specs = sliding_layers({100, 100});
    auto rw = kv_cache_report(w, KvDtype::fp16, {.context_tokens = 1000, .block_size = 16});
    EXPECT_EQ(rw->layers[0].stored_tokens, 112u);
}

TEST(KvCache, TensorParallelSplitsKvHeadsAndReplicatesBeyondThem) {
    const Architecture a = make_arch(80, 64, 8, 128);  // Llama-3-70B shape
    const Workload w{.context_tokens = 1000};
    auto one = kv_cache_report(a, KvDtype::bf16, w);
    auto tp8 = kv_cache_report(a, KvDtype::bf16, w, {.tp = 8});
    auto tp16 = kv_cache_report(a, KvDtype::bf16, w, {.tp = 16});
    ASSERT_TRUE(one.ok() && tp8.ok() && tp16.ok());
    EXPECT_EQ(tp8->per_gpu_bytes, one->total_bytes / 8);
    EXPECT_EQ(tp8->total_bytes, one->total_bytes);
    EXPECT_EQ(tp8->kv_heads_per_gpu, 1u);
    // 16 GPUs, 8 KV heads: each head lives on two GPUs.
    EXPECT_EQ(tp16->kv_heads_per_gpu, 1u);
    EXPECT_EQ(tp16->per_gpu_bytes, one->total_bytes / 8);
    EXPECT_EQ(tp16->total_bytes, one->total_bytes * 2);
    EXPECT_EQ(tp16->replication, 2u);
    EXPECT_FALSE(tp16->warnings.empty());
}

TEST(KvCache, PipelineParallelSplitsLayersAndTheBusiestStageCounts) {
    const Architecture a = make_arch(80, 64, 8, 128);
    auto r = kv_cache_report(a, KvDtype::bf16, {.context_tokens = 1000}, {.pp = 3});
    ASSERT_TRUE(r.ok());
    const std::uint64_t per_layer = 2 * 8 * 128 * 2 * 1000;
    EXPECT_EQ(r->per_gpu_bytes, 27 * per_layer);  // stages of 27, 27, 26 layers
    EXPECT_EQ(r->total_bytes, 80 * per_layer);
    EXPECT_EQ(r->bytes_per_token_per_gpu, 27u * 2 * 8 * 128 * 2);
}

// Layers that do not divide among the stages: TensorRT-LLM gives the first stages one more (torch.tensor_split), vLLM
// the stages before the last (get_pp_indices: 30 layers on 4 stages are 7, 8, 8, 7), SGLang the last ones.
TEST(KvCache, EachEngineGivesTheLayersLeftOverToItsOwnStages) {
    const auto counts = [](std::uint64_t layers, std::uint64_t pp, StageSplit split) {
        std::vector<std::uint64_t> out;
        std::uint64_t next = 0;
        for (std::uint64_t s = 0; s < pp; ++s) {
            const StageLayers st = stage_layers(layers, {.pp = pp, .split = split}, s);
            EXPECT_EQ(st.first, next) << layers << " layers, stage " << s;  // contiguous, in order
            next += st.count;
            out.push_back(st.count);
        }
        EXPECT_EQ(next, layers);
        return out;
    };
    using V = std::vector<std::uint64_t>;
    EXPECT_EQ(counts(30, 4, StageSplit::first), (V{8, 8, 7, 7}));
    EXPECT_EQ(counts(30, 4, StageSplit::before_last), (V{7, 8, 8, 7}));
    EXPECT_EQ(counts(30, 4, StageSplit::last), (V{7, 7, 8, 8}));
    EXPECT_EQ(counts(61, 8, StageSplit::before_last), (V{7, 7, 8, 8, 8, 8, 8, 7}));
    EXPECT_EQ(counts(11, 4, StageSplit::before_last), (V{3, 3, 3, 2}));  // 3 left over: every stage but the last
    EXPECT_EQ(counts(32, 4, StageSplit::last), (V{8, 8, 8, 8}));
    for (std::uint64_t layers = 1; layers <= 24; ++layers)
        for (std::uint64_t pp = 1; pp <= layers; ++pp)
            for (const StageSplit split : {StageSplit::first, StageSplit::before_last, StageSplit::last}) {
                const V c = counts(layers, pp, split);
                EXPECT_EQ(*std::max_element(c.begin(), c.end()), (layers + pp - 1) / pp);
                EXPECT_EQ(*std::min_element(c.begin(), c.end()), layers / pp);
            }

    // LFM2 700M's six attention layers (2, 5, 8, 10, 12, 14 of 16) on 3 stages at 128k tokens, bf16: 2,048 bytes a
    // token and layer. TensorRT-LLM's stages 0-5, 6-10, 11-15 hold 2 each; SGLang's 10-15 holds 3; vLLM's 5-10 holds
    // 3, in its hybrid pages: 3 tensors x 32,768-byte pages x (8,192 blocks + 2 state groups).
    const Architecture& lfm2 = testing::catalog_arch("lfm2-700m");
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    d.gpu_count = 3;
    const Workload w{.context_tokens = 131072, .batch = 1};
    const std::uint64_t layer = 131072ull * 2048;
    d.engine = Engine::tensorrt_llm;
    auto f = fit(lfm2, KvDtype::bf16, w, {.pp = 3}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->kv_bytes_per_gpu, 2 * layer);
    d.engine = Engine::sglang;
    f = fit(lfm2, KvDtype::bf16, w, {.pp = 3}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->kv_bytes_per_gpu, 3 * layer);
    d.engine = Engine::vllm;
    f = fit(lfm2, KvDtype::bf16, w, {.pp = 3}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->kv_bytes_per_gpu, 3 * layer);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, 3ull * 32768 * (8192 + 2));
    EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(), [](const std::string& n) {
        return n.starts_with(
            "vLLM gives the 1 layer left over from 16 on 3 stages to the stages before the last: 5, 6, 5 "
            "layers (vllm/distributed/utils.py get_pp_indices)");
    })) << testing::join(f->notes);
    // Without an engine (kvscope-cli kv) the first stages take them.
    EXPECT_EQ(kv_cache_report(lfm2, KvDtype::bf16, w, {.pp = 3})->per_gpu_bytes, 2 * layer);
}

TEST(KvCache, QuantizedFormatsAreExact) {
    const Architecture a = make_arch(32, 32, 8, 128);  // rows of 8 x 128 = 1024 values
    auto bytes = [&](KvDtype d) { return kv_cache_report(a, d, {.context_tokens = 1})->bytes_per_token; };
    EXPECT_EQ(bytes(KvDtype::fp32), 32u * 2 * 1024 * 4);
    EXPECT_EQ(bytes(KvDtype::fp8_e4m3), 32u * 2 * 1024);
    EXPECT_EQ(bytes(KvDtype::fp8_e5m2), 32u * 2 * 1024);
    EXPECT_EQ(bytes(KvDtype::int8), 32u * 2 * 1024);
    EXPECT_EQ(bytes(KvDtype::int4), 32u * 2 * 512);
    EXPECT_EQ(bytes(KvDtype::q8_0), 32u * 2 * (1024 / 32) * 34);  // 69,632
    EXPECT_EQ(bytes(KvDtype::q4_0), 32u * 2 * (1024 / 32) * 18);  // 36,864
    EXPECT_EQ(row_bytes(KvDtype::q8_0, 33).value(), 68u);         // a partial block is a whole block
    EXPECT_EQ(row_bytes(KvDtype::int4, 3).value(), 2u);           // 12 bits -> 2 bytes
    EXPECT_DOUBLE_EQ(bits_per_value(KvDtype::q8_0), 8.5);
}

// Integer caches are counted as their bits alone, which is exact only where the engine keeps one scale per
// tensor beside the layer (TensorRT-LLM's int8): the report says what it leaves out for LMDeploy's.
TEST(KvCache, IntegerFormatsSayWhichEnginesLayoutTheyCount) {
    const Architecture a = make_arch(32, 32, 8, 128);
    auto warnings = [&](KvDtype d) { return kv_cache_report(a, d, {.context_tokens = 1})->warnings; };
    for (const KvDtype d : {KvDtype::int8, KvDtype::int4}) {
        const auto w = warnings(d);
        ASSERT_EQ(w.size(), 1u) << to_string(d);
        EXPECT_NE(w[0].find(std::string(to_string(d)) + (d == KvDtype::int8 ? ": counted at " : " is counted at ")),
                  std::string::npos)
            << w[0];
        EXPECT_NE(w[0].find("LMDeploy"), std::string::npos) << w[0];
        EXPECT_NE(w[0].find("per token and KV head"), std::string::npos) << w[0];
    }
    EXPECT_NE(warnings(KvDtype::int8)[0].find("TensorRT-LLM"), std::string::npos);
    // No engine stores int4 without scales: the figure is marked as not exact.
    EXPECT_EQ(warnings(KvDtype::int4)[0].rfind("not exact: ", 0), 0u);
    EXPECT_FALSE(kv_cache_report(a, KvDtype::int4, {.context_tokens = 1})->exact);
    EXPECT_TRUE(kv_cache_report(a, KvDtype::int8, {.context_tokens = 1})->exact);
    for (const KvDtype d : {KvDtype::fp16, KvDtype::fp8_e4m3, KvDtype::q8_0, KvDtype::q4_0})
        EXPECT_TRUE(warnings(d).empty()) << to_string(d);
}

TEST(KvCache, HugeContextIsAnErrorNamingTheContextNotAWrappedNumber) {
    const Architecture a = make_arch(32, 32, 8, 128);
    auto r = kv_cache_report(a, KvDtype::bf16, {.context_tokens = 1'000'000'000'000'000ull});
    EXPECT_FIELD_ERROR(r, "context_tokens", "2^64");
    auto b = kv_cache_report(a, KvDtype::bf16, {.context_tokens = 1ull << 20, .batch = 1ull << 40});
    EXPECT_FIELD_ERROR(b, "batch", "2^64");
}

TEST(KvCache, ContextBeyondMaxPositionsIsAWarningNotAnError) {
    Architecture a = make_arch(2, 4, 4, 32);
    a.max_positions = 4096;
    auto r = kv_cache_report(a, KvDtype::fp16, {.context_tokens = 8192});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->warnings.size(), 1u);
    EXPECT_NE(r->warnings[0].find("max positions"), std::string::npos);
}

TEST(Validation, ReturnsEveryProblemWithItsField) {
    Architecture a = make_arch(0, 0, 0, 0);
    const Errors e = validate(a);
    EXPECT_TRUE(testing::has_error(e, "layers", "at least 1"));
    EXPECT_TRUE(testing::has_error(e, "query_heads", "at least 1"));
    EXPECT_TRUE(testing::has_error(e, "kv_heads", "at least 1"));
    EXPECT_TRUE(testing::has_error(e, "head_dim", "at least 1"));
}

TEST(Validation, KvHeadsMustDivideQueryHeads) {
    auto r = kv_cache_report(make_arch(32, 32, 5, 128), KvDtype::fp16, {});
    EXPECT_FIELD_ERROR(r, "kv_heads", "must divide the query heads (32)");
    auto more = kv_cache_report(make_arch(32, 8, 16, 128), KvDtype::fp16, {});
    EXPECT_FIELD_ERROR(more, "kv_heads", "cannot exceed query heads");
}

TEST(Validation, WorkloadAndParallelism) {
    const Architecture a = make_arch(8, 32, 8, 128);
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {.context_tokens = 0}), "context_tokens", "at least 1");
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {.batch = 0}), "batch", "at least 1");
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {.block_size = 0}), "block_size", "at least 1");
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {}, {.tp = 3}), "tp", "divide the query heads");
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {}, {.pp = 9}), "pp", "at least that many layers");
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {}, {.tp = 0}), "tp", "at least 1");
    Architecture w = a;
    w.layer_specs = sliding_layers({1, 2});
    EXPECT_FIELD_ERROR(kv_cache_report(w, KvDtype::fp16, {}), "layer_specs", "2 per-layer descriptions for 8 layers");
    // A window larger than the max positions is allowed.
    Architecture big = a;
    big.max_positions = 4096;
    big.layer_specs.assign(8, LayerSpec{LayerKind::sliding, 1u << 20});
    EXPECT_TRUE(kv_cache_report(big, KvDtype::fp16, {}).ok());
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

TEST(KvCache, AbsurdLayerAndHeadCountsAreErrorsNotAllocations) {
    Architecture a = testing::make_arch(32, 32, 8, 128);
    a.layers = 1'000'000'000'000'000ull;
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {}, {}), "layers", "is more than the 65,536 supported");
    a = testing::make_arch(32, 32, 8, 128);
    a.query_heads = 1ull << 40;
    EXPECT_FIELD_ERROR(kv_cache_report(a, KvDtype::fp16, {}, {}), "query_heads",
                       "is more than the 1,048,576 supported");
}

}  // namespace
}  // namespace kvscope
