#include "kvscope/calculator/catalog.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/plan.h"
#include "testing.h"

namespace kvscope {
namespace {

std::uint64_t bytes_per_token(const CatalogModel& m) {
    auto r = kv_cache_report(m.model.arch, m.model.kv_dtype, {.context_tokens = 1});
    EXPECT_TRUE(r.ok()) << m.id << ": " << r.error_text();
    return r.ok() ? r->bytes_per_token : 0;
}

// Bytes per token (all layers, one sequence) worked out by hand from each published config:
// 2 (K and V) x layers x KV heads x head dim x bytes per element, in the config's dtype.
TEST(Catalog, BytesPerTokenOfEveryModelMatchesTheHandArithmetic) {
    const std::map<std::string, std::uint64_t> expected{
        {"kvscope-teaching-32l", 2ull * 32 * 32 * 128 * 2},         // 524,288 fp16
        {"llama-2-7b", 2ull * 32 * 32 * 128 * 2},                   // 524,288 fp16
        {"llama-2-13b", 2ull * 40 * 40 * 128 * 2},                  // 819,200 fp16
        {"llama-2-70b", 2ull * 80 * 8 * 128 * 2},                   // 327,680 fp16
        {"llama-3-8b", 2ull * 32 * 8 * 128 * 2},                    // 131,072 bf16
        {"llama-3-70b", 2ull * 80 * 8 * 128 * 2},                   // 327,680 bf16
        {"llama-3.1-8b", 2ull * 32 * 8 * 128 * 2},                  // 131,072 bf16
        {"llama-3.1-70b", 2ull * 80 * 8 * 128 * 2},                 // 327,680 bf16
        {"llama-3.3-70b", 2ull * 80 * 8 * 128 * 2},                 // 327,680 bf16
        {"llama-3.1-405b", 2ull * 126 * 8 * 128 * 2},               // 516,096 bf16
        {"llama-3.3-nemotron-super-49b", 2ull * 49 * 8 * 128 * 2},  // 200,704: 49 of 80 layers attend (block_configs)
        {"llama-3.2-1b", 2ull * 16 * 8 * 64 * 2},                   // 32,768 bf16
        {"mistral-7b-v0.1", 2ull * 32 * 8 * 128 * 2},               // 131,072 bf16
        {"mixtral-8x7b", 2ull * 32 * 8 * 128 * 2},                  // 131,072 bf16
        {"qwen2.5-7b", 2ull * 28 * 4 * 128 * 2},                    // 57,344 bf16 (3584 / 28 = 128)
        {"qwen2.5-72b", 2ull * 80 * 8 * 128 * 2},                   // 327,680 bf16
        {"qwen3-8b", 2ull * 36 * 8 * 128 * 2},                      // 147,456 bf16 (explicit head_dim 128)
        {"gemma-2-9b", 2ull * 42 * 8 * 256 * 2},                    // 344,064: float32 as published, served as bf16
        {"gemma-3-27b", 2ull * 62 * 16 * 128 * 2},                  // 507,904 bf16 (text_config)
        {"phi-3-mini", 2ull * 32 * 32 * 96 * 2},                    // 393,216 bf16 (3072 / 32 = 96)
        {"falcon-7b", 2ull * 32 * 1 * 64 * 2},                      // 8,192 bf16 (multi_query, 4544 / 71 = 64)
        {"gpt2", 2ull * 12 * 12 * 64 * 2},                          // 36,864 fp16 (no dtype: default)
        {"deepseek-v3", 61ull * (512 + 64) * 2},                    // 70,272 bf16 (MLA latent + rope, no x2)
        {"gpt-oss-20b", 2ull * 24 * 8 * 64 * 2},                    // 49,152 bf16 (no dtype; MXFP4 runs in bf16)
        {"gpt-oss-120b", 2ull * 36 * 8 * 64 * 2},                   // 73,728 bf16
        // Today's models (their layer mixes and states: hybrid_test.cpp). Only layers with a KV cache count.
        {"qwen3-30b-a3b", 2ull * 48 * 4 * 128 * 2},             // 98,304 bf16
        {"qwen3-235b-a22b", 2ull * 94 * 4 * 128 * 2},           // 192,512 bf16
        {"qwen3-next-80b-a3b", 2ull * 12 * 2 * 256 * 2},        // 24,576: 12 of 48 layers attend
        {"qwen3.5-35b-a3b", 2ull * 10 * 2 * 256 * 2},           // 20,480: 10 of 40
        {"llama-4-scout", 2ull * 48 * 8 * 128 * 2},             // 196,608 (chunked layers keep a row per token too)
        {"llama-4-maverick", 2ull * 48 * 8 * 128 * 2},          // 196,608
        {"gemma-3-4b", 2ull * 34 * 4 * 256 * 2},                // 139,264 (gemma3_text defaults)
        {"gemma-3-1b", 2ull * 26 * 1 * 256 * 2},                // 26,624 (one KV head, head_dim 256)
        {"gemma-3-12b", 2ull * 48 * 8 * 256 * 2},               // 393,216 (gemma3_text default head_dim 256)
        {"kimi-k2", 61ull * (512 + 64) * 2},                    // 70,272 MLA
        {"glm-4.7", 2ull * 92 * 8 * 128 * 2},                   // 376,832
        {"jamba-v0.1", 2ull * 4 * 8 * 128 * 2},                 // 16,384: 4 of 32 layers attend
        {"nemotron-h-56b", 2ull * 10 * 8 * 128 * 2},            // 40,960: 10 of 118
        {"lfm2-700m", 2ull * 6 * 8 * 64 * 2},                   // 12,288: 6 of 16
        {"mamba-codestral-7b", 0},                              // no attention
        {"deepseek-v3.2", 61ull * ((512 + 64) * 2 + 128 + 4)},  // 78,324: latent + the indexer's fp8 key and scale
        {"mistral-small-3.1-24b", 2ull * 40 * 8 * 128 * 2},     // 163,840 bf16 (text_config)
        {"minimax-m1", 2ull * 10 * 8 * 128 * 2},                // 40,960: 10 of 80 (fp16: no dtype in the file)
        {"recurrentgemma-9b", 2ull * 12 * 1 * 256 * 2},         // 12,288: 12 of 38, each within 2,048 tokens
        {"nemotron-3-nano-30b-a3b", 2ull * 6 * 2 * 128 * 2},    // 6,144: 6 of 52
        {"gemma-3n-e4b", 2ull * 20 * 2 * 256 * 2},              // 40,960: the last 15 of 35 share earlier caches
        {"granite-4.0-h-tiny", 2ull * 4 * 4 * 128 * 2},         // 8,192: 4 of 40 attend (fp16: no dtype given)
        {"falcon-h1-7b", 2ull * 44 * 2 * 128 * 2},              // 45,056: every layer attends beside its Mamba-2
        // 9 full layers of 4 KV heads, 39 sliding of 8, keys 192 and values 128 wide: 23,040 + 199,680 = 222,720.
        {"mimo-v2-flash", 9ull * 4 * (192 + 128) * 2 + 39ull * 8 * (192 + 128) * 2},
        {"glm-5.2", 78ull * (512 + 64) * 2 + 21ull * (128 + 4)},  // 92,628: MLA, the indexer's key on 21 of 78
        {"qwen3-32b", 2ull * 64 * 8 * 128 * 2},                   // 262,144
        {"step-3.7-flash", 2ull * 45 * 8 * 128 * 2},              // 184,320 (33 of them keep a 512-token window)
    };
    const auto& catalog = Catalog::builtin();
    EXPECT_EQ(catalog.models().size(), expected.size());
    for (const auto& [id, bytes] : expected) {
        const CatalogModel* m = catalog.find_model(id);
        ASSERT_NE(m, nullptr) << id;
        EXPECT_EQ(bytes_per_token(*m), bytes) << id;
    }
}

TEST(Catalog, GptOssIsServedInBf16AsVllmRunsMxfp4) {
    // Its config.json names no torch_dtype; vLLM runs an MXFP4 checkpoint in bf16 only (quantization/mxfp4.py).
    for (const char* id : {"gpt-oss-20b", "gpt-oss-120b"}) {
        const auto& m = Catalog::builtin().find_model(id)->model;
        EXPECT_EQ(m.kv_dtype, KvDtype::bf16) << id;
        EXPECT_NE(m.kv_dtype_source.find("MXFP4"), std::string::npos) << m.kv_dtype_source;
    }
    // Without the quantization, no torch_dtype is still fp16, said as such (GPT-2).
    EXPECT_EQ(Catalog::builtin().find_model("gpt2")->model.kv_dtype, KvDtype::fp16);
}

TEST(Catalog, SlidingWindowModelsStoreWhatTheirLayersKeep) {
    const auto& c = Catalog::builtin();
    // Gemma 3 27B at 128k: every 6th layer global (10 of 62), the rest keep 1024 tokens.
    const auto* g3 = c.find_model("gemma-3-27b");
    auto r = kv_cache_report(g3->model.arch, KvDtype::bf16, {.context_tokens = 131072});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->total_bytes, 8192ull * (10 * 131072 + 52 * 1024));  // 2 x 16 x 128 x 2 = 8192 per layer-token
    // Gemma 3 1B at its 32k: sliding_window_pattern 6 makes layers 5, 11, 17 and 23 global, the other 22 keep
    // 512 tokens; 2 x 1 KV head x 256 x 2 bytes = 1,024 per layer-token.
    auto r1 = kv_cache_report(c.find_model("gemma-3-1b")->model.arch, KvDtype::bf16, {.context_tokens = 32768});
    ASSERT_TRUE(r1.ok()) << r1.error_text();
    EXPECT_EQ(r1->total_bytes, 1024ull * (4 * 32768 + 22 * 512));  // 145,752,064
    // Gemma 3 12B at 128k: 8 of 48 global, 40 keep 1,024 tokens; 2 x 8 x 256 x 2 = 8,192 per layer-token.
    auto r12 = kv_cache_report(c.find_model("gemma-3-12b")->model.arch, KvDtype::bf16, {.context_tokens = 131072});
    ASSERT_TRUE(r12.ok()) << r12.error_text();
    EXPECT_EQ(r12->total_bytes, 8192ull * (8 * 131072 + 40 * 1024));
    // Gemma 2 9B at 8k: even layers slide over 4096.
    const auto* g2 = c.find_model("gemma-2-9b");
    auto r2 = kv_cache_report(g2->model.arch, KvDtype::fp32, {.context_tokens = 8192});
    EXPECT_EQ(r2->total_bytes, 16384ull * (21 * 8192 + 21 * 4096));
    EXPECT_EQ(g2->model.arch.window_of(0), 4096u);
    EXPECT_EQ(g2->model.arch.window_of(1), 0u);
    // Mistral 7B: every layer slides over 4096, so 32k costs what 4k costs.
    const auto* m = c.find_model("mistral-7b-v0.1");
    auto r3 = kv_cache_report(m->model.arch, KvDtype::bf16, {.context_tokens = 32768});
    EXPECT_EQ(r3->total_bytes, 131072ull * 4096);
    // gpt-oss: alternating 128-token windows from layer_types.
    const auto* oss = c.find_model("gpt-oss-20b");
    EXPECT_EQ(oss->model.arch.window_of(0), 128u);
    EXPECT_EQ(oss->model.arch.window_of(1), 0u);
    // Qwen2.5 publishes sliding_window but use_sliding_window false: no windows.
    EXPECT_FALSE(c.find_model("qwen2.5-7b")->model.arch.has_sliding_layers());
}

TEST(Catalog, FindsIdsAliasesAndRepoIdsCaseInsensitively) {
    const auto& c = Catalog::builtin();
    ASSERT_NE(c.find_model("LLAMA-3-8B"), nullptr);
    EXPECT_EQ(c.find_model("meta-llama/Meta-Llama-3-8B")->id, "llama-3-8b");
    EXPECT_EQ(c.find_model("Qwen/Qwen2.5-7B-Instruct")->id, "qwen2.5-7b");
    EXPECT_EQ(c.find_model("nope"), nullptr);
    const auto hints = c.suggest_models("llama3-70b");  // a typo: the closest id comes first
    ASSERT_FALSE(hints.empty());
    EXPECT_EQ(hints.front(), "llama-3-70b");
    ASSERT_NE(c.find_gpu("H100-SXM"), nullptr);
    for (const char* id : {"h100-sxm",
                           "h100-pcie",
                           "h200",
                           "b200",
                           "a100-40gb",
                           "a100-80gb",
                           "l40s",
                           "l4",
                           "a10g",
                           "rtx-4090",
                           "rtx-3090",
                           "rtx-6000-ada",
                           "mi300x",
                           "b300",
                           "gb200",
                           "gb300",
                           "h800",
                           "rtx-5090",
                           "rtx-pro-6000-blackwell",
                           "mi325x",
                           "mi355x",
                           "gaudi-3",
                           "h100-nvl",
                           "h200-nvl",
                           "gh200-96gb",
                           "gh200-144gb",
                           "a100-80gb-pcie",
                           "l40",
                           "rtx-a6000",
                           "a10",
                           "mi350x"}) {
        const GpuSpec* g = c.find_gpu(id);
        ASSERT_NE(g, nullptr) << id;
        EXPECT_GT(g->memory_bytes, 16ull << 30) << id;
        EXPECT_GT(g->bandwidth_bytes_per_s, 250'000'000'000ull) << id;
        EXPECT_GT(g->bf16_tflops, 50.0) << id;
        EXPECT_FALSE(g->source.empty()) << id;
    }
    EXPECT_EQ(c.find_gpu("h200")->memory_bytes, 143771ull << 20);
    EXPECT_EQ(c.find_gpu("b200")->memory_bytes, 183359ull << 20);
    EXPECT_EQ(c.find_gpu("h100-nvl")->memory_bytes, 95830ull << 20);
    EXPECT_EQ(c.find_gpu("gh200")->memory_bytes, 97871ull << 20);  // the GPU's HBM, not the Grace CPU's memory
    EXPECT_EQ(c.find_gpu("a6000")->memory_bytes, 49140ull << 20);
    // The NVIDIA A10 is not AWS's A10G: 125 dense BF16 TFLOPS against 70, the same memory and bandwidth.
    EXPECT_EQ(c.find_gpu("a10")->bf16_tflops, 125.0);
    EXPECT_EQ(c.find_gpu("a10g")->bf16_tflops, 70.0);
    // HGX B200 and B300 read 7.7 TB/s per GPU (NVIDIA's datasheets); GB200 and GB300 8 TB/s.
    EXPECT_EQ(c.find_gpu("b200")->bandwidth_bytes_per_s, 7'700'000'000'000u);
    EXPECT_EQ(c.find_gpu("gb200")->bandwidth_bytes_per_s, 8'000'000'000'000u);
    // Turing has no BF16: the T4 gives none, shown as unknown rather than its FP16 figure.
    EXPECT_EQ(c.find_gpu("tesla-t4")->memory_bytes, 15360ull << 20);
    EXPECT_EQ(c.find_gpu("t4")->bf16_tflops, 0.0);
    // What the driver reports, where a published report was found (nvidia-smi MiB x 2^20), else the sheet's GiB.
    EXPECT_EQ(c.find_gpu("b300")->memory_bytes, 275040ull << 20);
    EXPECT_EQ(c.find_gpu("gb200")->memory_bytes, 189471ull << 20);
    EXPECT_EQ(c.find_gpu("rtx-5090")->memory_bytes, 32607ull << 20);
    EXPECT_EQ(c.find_gpu("rtx-pro-6000")->memory_bytes, 97887ull << 20);
    EXPECT_EQ(c.find_gpu("mi355x")->memory_bytes, 288ull << 30);
    EXPECT_EQ(c.find_gpu("gaudi3")->memory_bytes, 131072ull << 20);
    // Dense figures: the B300's 2,250 TFLOPS is NVIDIA's non-sparse BF16, half the sparse figure of its sheet.
    EXPECT_DOUBLE_EQ(c.find_gpu("b300")->bf16_tflops, 2250.0);

    // The cards of people's own machines and the export parts: memory and bandwidth from the sheet (bus bits / 8
    // × Gbps), BF16 where a vendor document gives it and 0 (unknown) where none does.
    struct Card {
        const char* id;
        std::uint64_t memory, bandwidth;
        double bf16;
    };
    for (const Card& k : {Card{"h20", 97871ull << 20, 4'000'000'000'000ull, 148.0},
                          Card{"a800", 81920ull << 20, 2'039'000'000'000ull, 312.0},
                          Card{"rtx-5080", 16ull << 30, 256 / 8 * 30'000'000'000ull, 0.0},
                          Card{"rtx-5070-ti", 16ull << 30, 256 / 8 * 28'000'000'000ull, 0.0},
                          Card{"rtx-5060-ti-16gb", 16ull << 30, 128 / 8 * 28'000'000'000ull, 0.0},
                          Card{"rtx-4080", 16376ull << 20, 256 / 8 * 22'400'000'000ull, 97.5},
                          Card{"rtx-4070-ti-super", 16ull << 30, 256 / 8 * 21'000'000'000ull, 0.0},
                          Card{"rtx-4060-ti-16gb", 16ull << 30, 128 / 8 * 18'000'000'000ull, 0.0},
                          Card{"rtx-3060-12gb", 12ull << 30, 192 / 8 * 15'000'000'000ull, 0.0}}) {
        const GpuSpec* g = c.find_gpu(k.id);
        ASSERT_NE(g, nullptr) << k.id;
        EXPECT_EQ(g->memory_bytes, k.memory) << k.id;
        EXPECT_EQ(g->bandwidth_bytes_per_s, k.bandwidth) << k.id;
        EXPECT_DOUBLE_EQ(g->bf16_tflops, k.bf16) << k.id;
        EXPECT_FALSE(g->source.empty()) << k.id;
    }
}

TEST(Catalog, EstimatedParametersAgreeWithThePublishedCounts) {
    // The estimate (embeddings, attention, MLP or experts, norms) is what imported
    // configs use; it must land near the published totals of the catalog's models.
    for (const auto& m : Catalog::builtin().models()) {
        const auto& a = m.model.arch;
        if (a.params_total == 0) continue;
        // The estimate counts attention on the layers that attend, the recurrent mixer on those that keep a
        // state, and the MLP or experts where a layer has one (Llama 4: its shared expert and its dense layers'
        // intermediate_size_mlp; Scout's published 109B includes its vision encoder). Not made for: LFM2 (its
        // MLP width is derived from block_ff_dim).
        if (m.id.starts_with("lfm2")) continue;
        const auto est = estimate_parameters(a);
        const double ratio = static_cast<double>(est.total) / static_cast<double>(a.params_total);
        EXPECT_NEAR(ratio, 1.0, 0.03) << m.id << ": estimated " << est.total << ", published " << a.params_total;
    }
    // Models without a published count in the catalog: the estimate, against the figures published elsewhere.
    // Nemotron 3 Nano: 31.6B (model card). 23 Mamba-2 mixers, 6 attention layers, 23 blocks of 128 experts
    // (relu2: two matrices); the estimate gives its one shared expert the routed experts' width (1,856, where
    // the model's is 3,712), about 0.23B short.
    const auto nano = estimate_parameters(Catalog::builtin().find_model("nemotron-3-nano-30b-a3b")->model.arch);
    EXPECT_TRUE(nano.estimated);
    EXPECT_NEAR(static_cast<double>(nano.total) / 31.6e9, 1.0, 0.03) << nano.total;
    // RecurrentGemma 9B: about 9B (Open LLM Leaderboard request: "params": 9). MLP of intermediate_size / 2
    // (modeling_recurrent_gemma.py), tied embeddings (configuration default).
    const auto rg = estimate_parameters(Catalog::builtin().find_model("recurrentgemma-9b")->model.arch);
    EXPECT_NEAR(static_cast<double>(rg.total) / 9e9, 1.0, 0.06) << rg.total;
    // Gemma 3n E4B (modeling_gemma3n.py), by hand: the tied embedding 262,400 x 2,048 = 537,395,200; 35 layers of
    // attention 2,048 x (2,048 + 2 x 512) + 2,048 x 2,048 = 10,485,760, MLP 3 x 2,048 x 16,384 = 100,663,296 and two
    // norms 4,096; the final norm 2,048: 4,427,757,568. Beside them the per-layer embeddings 262,144 x 35 x 256 =
    // 2,348,810,240; the per-layer projection 2,048 x 35 x 256 + its norm 256 and AltUp's 2 x 3 x 2,048^2 =
    // 43,516,160; per layer AltUp 2,048 + 16 + 64 + 8,192 + 2,048, Laurel 2 x 2,048 x 64 + 2,048, the per-layer
    // input 2 x 2,048 x 256 + 2,048, two more norms and q/k norms 4,096 + 512: 1,331,792 x 35 = 46,612,720. In all
    // 6,866,696,688 — the published 7.85B less the vision and audio encoders, where the blocks alone said 4.97B.
    const auto g3n = estimate_parameters(Catalog::builtin().find_model("gemma-3n-e4b")->model.arch);
    EXPECT_EQ(g3n.total, 6'866'696'688ull);
    EXPECT_EQ(g3n.embedding, 537'395'200ull + 2'348'810'240ull);  // read one row a token: not in a step's bytes
    // Llama 3 8B is exact: 2 x 128256 x 4096 + 32 x 218,112,000 + 4096.
    EXPECT_EQ(estimate_parameters(Catalog::builtin().find_model("llama-3-8b")->model.arch).total, 8'030'261'248ull);
    // Llama 3.1 and 3.3 keep Llama 3's shapes: the published totals are the shape's own count, to the parameter.
    EXPECT_EQ(estimate_parameters(Catalog::builtin().find_model("llama-3.1-8b")->model.arch).total, 8'030'261'248ull);
    EXPECT_EQ(estimate_parameters(Catalog::builtin().find_model("llama-3.3-70b")->model.arch).total, 70'553'706'496ull);
}

TEST(Catalog, MoeActiveParametersAreAFractionOfTheTotal) {
    const auto* mixtral = Catalog::builtin().find_model("mixtral-8x7b");
    const auto est = estimate_parameters(mixtral->model.arch);
    EXPECT_NEAR(static_cast<double>(est.active) / 12.9e9, 1.0, 0.03);
    const auto* ds = Catalog::builtin().find_model("deepseek-v3");
    const auto ds_est = estimate_parameters(ds->model.arch);
    EXPECT_NEAR(static_cast<double>(ds_est.total) / 671e9, 1.0, 0.03);
    EXPECT_NEAR(static_cast<double>(ds_est.active) / 37e9, 1.0, 0.05);
}

TEST(Catalog, TheWeightsAStepReadsAgreeWithTheShapeWhateverThePublishersConvention) {
    // A decode step reads the active parameters less the input embedding (decode.cpp). OpenAI's published active
    // counts already leave the embedding out (gpt-oss-20b: 3.61 B = its layers' 3.03 B + the 0.58 B unembedding),
    // and Llama 4's every expert layer has a shared expert no config key names: either one, miscounted, was
    // 16% or 37% off the shape's own count.
    for (const char* id : {"gpt-oss-20b", "gpt-oss-120b", "llama-4-scout", "llama-4-maverick", "mixtral-8x7b",
                           "qwen3-30b-a3b", "deepseek-v3"}) {
        Architecture published = Catalog::builtin().find_model(id)->model.arch;
        ASSERT_GT(published.params_active, 0u) << id;
        Architecture shape = published;
        shape.params_total = shape.params_active = 0;
        const double ratio =
            static_cast<double>(matmul_parameters(published)) / static_cast<double>(matmul_parameters(shape));
        EXPECT_NEAR(ratio, 1.0, 0.02) << id << ": " << matmul_parameters(published) << " published, "
                                      << matmul_parameters(shape) << " from the shape";
    }
    // gpt-oss-20b: the model card's 3.61 B are what a step reads.
    EXPECT_EQ(matmul_parameters(Catalog::builtin().find_model("gpt-oss-20b")->model.arch), 3'610'000'000u);
}

class UserFolder : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("kvscope-user-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_ / "models");
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
    std::filesystem::path dir_;
};

TEST(Catalog, AUnifiedMemoryComputersGpuTakesItsShareOfTheMachine) {
    // An M4 Max with 128 GB: macOS lets its GPU wire 3/4 of it by default, 96 GiB.
    const GpuSpec* mac = Catalog::builtin().find_gpu("m4-max-128gb");
    ASSERT_NE(mac, nullptr);
    EXPECT_EQ(mac->unified_memory_bytes, 128ull << 30);
    EXPECT_EQ(mac->memory_bytes, 96ull << 30);
    EXPECT_EQ(mac->bandwidth_bytes_per_s, 546'000'000'000u);
    EXPECT_EQ(mac->bf16_tflops, 0.0);  // Apple publishes none: unknown, never a guess
    EXPECT_NE(mac->share_rule.find("iogpu.wired_limit_mb"), std::string::npos);
    // Every unified-memory entry: a share of its machine, a rule and a source.
    int unified = 0;
    for (const GpuSpec& g : Catalog::builtin().gpus()) {
        if (g.unified_memory_bytes == 0) continue;
        ++unified;
        EXPECT_FALSE(g.share_rule.empty()) << g.id;
        EXPECT_NE(g.source.find("https://"), std::string::npos) << g.id;
    }
    EXPECT_GE(unified, 10);
    // A fit on it says whose share it is; one that takes all the memory says the system's own is not counted.
    Workload w;
    w.context_tokens = 8192;
    Deployment d;
    d.gpu = *mac;
    d.engine = Engine::llama_cpp;
    const Architecture arch = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    const auto f = fit(arch, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_EQ(f->memory_bytes_per_gpu, 96ull << 30);
    EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(), [](const std::string& n) {
        return n.starts_with("unified memory: the GPU uses 96.0 GiB (75%) of the machine's 128 GiB: macOS");
    }));
    d.gpu = *Catalog::builtin().find_gpu("dgx-spark");
    const auto spark = fit(arch, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(spark) << spark.error_text();
    EXPECT_TRUE(std::any_of(spark->warnings.begin(), spark->warnings.end(), [](const std::string& n) {
        return n.find("shares all of the machine's memory with the system") != std::string::npos;
    }));
    // Plans: one GPU a machine, machines in pipeline stages.
    const auto plan = plan_deployments(arch, KvDtype::bf16, w, d, {});
    ASSERT_TRUE(plan) << plan.error_text();
    for (const PlanOption& o : plan->options) EXPECT_EQ(o.tp, 1u);
    EXPECT_TRUE(plan->scope_note.starts_with("one GPU a machine")) << plan->scope_note;
    // More than the machine, however it came (a saved file edited by hand): refused naming the GPU's memory.
    d.gpu = *mac;
    d.gpu.memory_bytes = 200ull << 30;
    EXPECT_FIELD_ERROR(fit(arch, KvDtype::bf16, w, {}, d), "gpu_memory",
                       "more than the machine's 128 GiB of unified memory");
    // A user's own entry with memory_bytes (a raised limit) keeps it, within the machine; a bad share is named.
    const auto own = parse_gpu_list(R"({"gpus": [{"id": "my-mac", "unified_memory_bytes": 137438953472,
        "gpu_share": 0.75, "memory_bytes": 118111600640, "bandwidth_bytes_per_s": 546000000000}]})",
                                    "gpus.json");
    ASSERT_TRUE(own) << own.error_text();
    EXPECT_EQ(own->front().memory_bytes, 110ull << 30);
    EXPECT_FIELD_ERROR(parse_gpu_list(R"({"gpus": [{"id": "box", "unified_memory_bytes": 1000, "gpu_share": 1.5,
        "bandwidth_bytes_per_s": 5}]})",
                                      "gpus.json"),
                       "gpu_share", "a gpu_share above 0 and at most 1");
    EXPECT_FIELD_ERROR(parse_gpu_list(R"({"gpus": [{"id": "box", "unified_memory_bytes": 1000, "gpu_share": 0.5,
        "memory_bytes": 2000, "bandwidth_bytes_per_s": 5}]})",
                                      "gpus.json"),
                       "memory_bytes", "more than unified_memory_bytes");
}

TEST_F(UserFolder, AddsModelsOverridesGpusAndReportsBrokenFiles) {
    write("models/my-model.json", R"({"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "torch_dtype": "bfloat16"})");
    write("models/broken.json", "{ \"num_hidden_layers\": ");
    write("gpus.json",
          R"({"gpus": [{"id": "h100-sxm", "name": "My H100", "memory_bytes": 1000, "bandwidth_bytes_per_s": 5},
                                    {"id": "lab-gpu", "memory_bytes": 2000, "bandwidth_bytes_per_s": 7}]})");
    std::vector<std::string> problems;
    const Catalog c = Catalog::with_user_folder(dir_.string(), problems);
    ASSERT_NE(c.find_model("my-model"), nullptr);
    EXPECT_EQ(c.find_model("my-model")->model.arch.kv_heads, 2u);
    EXPECT_EQ(c.find_gpu("h100-sxm")->name, "My H100");
    EXPECT_EQ(c.find_gpu("lab-gpu")->memory_bytes, 2000u);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("broken.json:1:"), std::string::npos) << problems[0];
    // The built-in catalog itself is untouched.
    EXPECT_EQ(Catalog::builtin().find_model("my-model"), nullptr);
    EXPECT_NE(Catalog::builtin().find_gpu("h100-sxm")->name, "My H100");
}

}  // namespace
}  // namespace kvscope
