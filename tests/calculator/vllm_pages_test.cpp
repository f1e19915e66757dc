// vLLM's pages for models whose layers keep different things: hybrid models whose recurrent state shares a page
// with attention, and sliding-window layers grouped beside full ones, with the start check vLLM runs on them.
// Bytes worked out by hand from the published config.json, with the vLLM file each rule follows.
#include <algorithm>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/engine_layers.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/serving.h"
#include "kvscope/calculator/vllm_pages.h"
#include "testing.h"

namespace kvscope {
namespace {

// A layout of one pipeline stage whose page groups are `windowed` sliding (or chunked) and `full` full-attention ones.
void expect_one_stage(const HybridPages& pages, std::uint64_t windowed, std::uint64_t full) {
    ASSERT_EQ(pages.stages.size(), 1u);
    EXPECT_EQ(pages.stages[0].sliding_groups, windowed);
    EXPECT_EQ(pages.stages[0].attention_groups, full);
}

using testing::catalog_arch;

TEST(VllmPages, TheVllmEngineLaysOutHybridModelsInItsPages) {
    // vllm/platforms/interface.py _align_hybrid_block_size: the attention block is 16 x cdiv(state page,
    // 16 x attention bytes per token); the state page is padded to block x attention bytes per token.
    const Architecture& next = catalog_arch("qwen3-next-80b-a3b");
    // bf16 cache: an attention layer stores 2 x 2 x 256 x 2 = 2,048 bytes a token; a state is 1,097,728 bytes.
    auto bf16 = vllm_hybrid_pages(next, KvDtype::bf16, {.context_tokens = 131072}, {});
    ASSERT_TRUE(bf16);
    EXPECT_EQ(bf16->attention_block, 16u * ((1'097'728 + 32'767) / 32'768));  // 544
    EXPECT_EQ(bf16->page_bytes, 544u * 2048);
    // 12 attention and 36 state layers: groups of 12 (36 >= 1.5 x 12), 1 attention group and 3 state groups.
    ASSERT_EQ(bf16->stages.size(), 1u);
    EXPECT_EQ(bf16->stages[0].group_size, 12u);
    EXPECT_EQ(bf16->stages[0].attention_groups, 1u);
    EXPECT_EQ(bf16->stages[0].state_groups, 3u);
    EXPECT_EQ(bf16->bytes_per_sequence(131072).value(), 12ull * 1'114'112 * ((131072 + 543) / 544 + 3));
    // An fp8 cache halves the attention row: vLLM logs "Setting attention block size to 1072 tokens".
    EXPECT_EQ(vllm_hybrid_pages(next, KvDtype::fp8_e4m3, {}, {})->attention_block, 1072u);

    // The fit of the vllm engine uses it, says so and keeps the plain figure; the plain engine does not.
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    d.gpu_count = 2;
    d.weight_dtype = KvDtype::fp8_e4m3;
    const Workload w{.context_tokens = 131072, .batch = 8};
    auto f = fit(next, KvDtype::bf16, w, {.tp = 2}, d);
    ASSERT_TRUE(f) << f.error_text();
    ASSERT_TRUE(f->engine_pages);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, 8 * f->engine_pages->bytes_per_sequence(131072).value());
    EXPECT_EQ(f->plain_memory_bytes_per_gpu, f->kv_bytes_per_gpu + f->state_bytes_per_gpu);
    EXPECT_GT(f->memory_bytes_per_gpu_needed, f->plain_memory_bytes_per_gpu);
    EXPECT_EQ(f->max_batch, static_cast<std::uint64_t>(f->kv_budget_bytes_per_gpu) /
                                f->engine_pages->bytes_per_sequence(131072).value());
    EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(),
                            [](const std::string& n) { return n.starts_with("vLLM's hybrid cache manager"); }));
    d.engine = Engine::plain;
    auto plain = fit(next, KvDtype::bf16, w, {.tp = 2}, d);
    ASSERT_TRUE(plain);
    EXPECT_FALSE(plain->engine_pages);
    EXPECT_EQ(plain->memory_bytes_per_gpu_needed, plain->plain_memory_bytes_per_gpu);
    // A model without recurrent layers has no such layout.
    EXPECT_FALSE(vllm_hybrid_pages(catalog_arch("llama-3-8b"), KvDtype::bf16, {}, {}));
}

TEST(VllmPages, VllmGroupsSlidingAndFullLayersInPagesAndChecksAPrefillChunkAtStart) {
    // Gemma 3 27B: 52 sliding (window 1024) and 10 full layers of 16 KV heads x 128, bf16: 8,192 bytes a token and
    // layer, a page of 16 tokens 131,072 bytes. vLLM groups them by 10 (52 >= 1.5 x 10): 1 full group, 6 sliding
    // groups of which the 60 places hold 52 layers ("Add 8 padding layers"), each block costing 10 pages
    // (vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size).
    const Architecture& gemma = catalog_arch("gemma-3-27b");
    const auto pages = vllm_hybrid_pages(gemma, KvDtype::bf16, {.context_tokens = 32768}, {});
    ASSERT_TRUE(pages);
    EXPECT_EQ(pages->attention_block, 16u);
    EXPECT_EQ(pages->page_bytes, 131072u);
    EXPECT_EQ(pages->window, 1024u);
    ASSERT_NO_FATAL_FAILURE(expect_one_stage(*pages, 6, 1));
    EXPECT_EQ(pages->stages[0].group_size, 10u);
    // A sliding group holds every block up to the window, then the window's 64 and the one it starts in.
    EXPECT_EQ(pages->sliding_blocks(100), 7u);
    EXPECT_EQ(pages->sliding_blocks(1024), 64u);
    EXPECT_EQ(pages->sliding_blocks(1025), 65u);
    EXPECT_EQ(pages->sliding_blocks(32768), 65u);
    // At 32k: 2,048 blocks of the full group and 65 of each sliding group, 10 pages each: 2.98 GiB, against
    // 2.91 GiB as the plain per-layer sum ((10 x 32,768 + 52 x 1,024) x 8,192).
    const std::uint64_t block = 10 * 131072;
    EXPECT_EQ(pages->bytes_per_sequence(32768).value(), block * (2048 + 6 * 65));
    const auto plain = kv_cache_report(gemma, KvDtype::bf16, {.context_tokens = 32768, .block_size = 16});
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->per_sequence_bytes, (10ull * 32768 + 52 * 1024) * 8192);
    // At start vLLM checks one request of max_model_len as it counts one at most: a sliding group holds its window
    // less one and a prefill chunk (8,192 tokens), and a block more: 577 blocks (kv_cache_interface.py
    // SlidingWindowSpec.max_memory_usage_bytes), 6.73 GiB where a decoding sequence keeps 2.98 GiB.
    EXPECT_EQ(pages->startup_bytes(32768, 8192).value(), block * (2048 + 6 * 577));
    EXPECT_EQ(pages->startup_bytes(512, 8192).value(), block * (32 + 6 * 33));  // the request is shorter than both
    // The longest contexts each allows in 10 GiB: the steady one from the blocks left after the sliding groups'
    // 65; the start's after their 576 and the block more.
    const std::uint64_t ten = 10 * kGiB;
    EXPECT_EQ(pages->max_tokens(ten, 1), (ten / block - 6 * 65) * 16);
    EXPECT_EQ(pages->startup_max_tokens(ten, 8192), (ten / block - 6 * 577) * 16);
    EXPECT_LE(pages->bytes_per_sequence(pages->max_tokens(ten, 1)).value(), ten);
    EXPECT_GT(pages->bytes_per_sequence(pages->max_tokens(ten, 1) + 1).value(), ten);
    EXPECT_LE(pages->startup_bytes(pages->startup_max_tokens(ten, 8192), 8192).value(), ten);
    EXPECT_GT(pages->startup_bytes(pages->startup_max_tokens(ten, 8192) + 1, 8192).value(), ten);
    // At the edge where every group has just reached the sliding groups' most, the full group grows on alone.
    for (std::uint64_t extra = 0; extra < 8; ++extra) {
        const std::uint64_t budget = block * (7 * 65 + extra);
        const std::uint64_t most = pages->max_tokens(budget, 1);
        EXPECT_EQ(most, (65 + extra) * 16) << extra;
        EXPECT_LE(pages->bytes_per_sequence(most).value(), budget) << extra;
        EXPECT_GT(pages->bytes_per_sequence(most + 1).value(), budget) << extra;
    }

    // gpt-oss-20b alternates 12 sliding (128) and 12 full layers: one group of each, nothing padded.
    const auto oss = vllm_hybrid_pages(catalog_arch("gpt-oss-20b"), KvDtype::bf16, {.context_tokens = 131072}, {});
    ASSERT_TRUE(oss);
    EXPECT_EQ(oss->stages[0].group_size, 12u);
    EXPECT_EQ(oss->stages[0].attention_groups, 1u);
    EXPECT_EQ(oss->stages[0].sliding_groups, 1u);
    // Every layer full (--full-window), or every layer sliding: one kind, the plain sum.
    EXPECT_FALSE(vllm_hybrid_pages(gemma, KvDtype::bf16, {.context_tokens = 32768, .full_window = true}, {}));
    EXPECT_FALSE(vllm_hybrid_pages(catalog_arch("mistral-7b-v0.1"), KvDtype::bf16, {.context_tokens = 32768}, {}));

    // The fit: Gemma 3 27B in bf16 at 128k on one H100 at a memory fraction of 0.85. A decoding sequence's cache
    // (11.3 GB) fits the budget (13.1 GB), but the start's check (15.3 GB) does not pass: the verdict says so, and
    // why, and the longest context is the start's.
    const auto says = [](const std::vector<std::string>& lines, const std::string& part) {
        return std::any_of(lines.begin(), lines.end(),
                           [&](const std::string& l) { return l.find(part) != std::string::npos; });
    };
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.fraction = 0.85;
    d.fraction_given = true;
    const Workload w{.context_tokens = 131072, .batch = 1};
    auto f = fit(gemma, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    ASSERT_TRUE(f->engine_pages);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, block * (8192 + 6 * 65));
    EXPECT_LT(static_cast<std::int64_t>(f->memory_bytes_per_gpu_needed), f->kv_budget_bytes_per_gpu)
        << "the example needs a budget between a decoding sequence and the start's check";
    const std::uint64_t start = block * (8192 + 6 * 577);
    EXPECT_GT(static_cast<std::int64_t>(start), f->kv_budget_bytes_per_gpu);
    EXPECT_FALSE(f->fits);
    EXPECT_EQ(f->max_batch, 0u);
    EXPECT_EQ(f->headroom_bytes_per_gpu, f->kv_budget_bytes_per_gpu - static_cast<std::int64_t>(start));
    EXPECT_EQ(f->max_context, pages->startup_max_tokens(static_cast<std::uint64_t>(f->kv_budget_bytes_per_gpu), 8192));
    EXPECT_TRUE(says(f->warnings,
                     "vLLM would not start: its check that one request of max_model_len 131,072 "
                     "tokens fits needs 14.2 GiB per GPU"))
        << testing::join(f->warnings);
    EXPECT_TRUE(says(f->notes,
                     "the 52 sliding-window and 10 full-attention layers in groups of 10 "
                     "(6 sliding, 1 full; 8 padding layers, as vLLM adds them)"))
        << testing::join(f->notes);
    EXPECT_TRUE(f->short_at_startup);
    EXPECT_TRUE(f->headroom_from_startup);
    // A smaller budget, short for decoding too: the shortfall is still the start's, the larger, and says so.
    d.fraction = 0.78;
    auto both = fit(gemma, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(both) << both.error_text();
    EXPECT_FALSE(both->fits);
    EXPECT_FALSE(both->short_at_startup);
    EXPECT_TRUE(both->headroom_from_startup);
    EXPECT_EQ(both->headroom_bytes_per_gpu, both->kv_budget_bytes_per_gpu - static_cast<std::int64_t>(start));
    d.fraction = 0.85;
    // Under pipeline parallelism every stage keeps the model's 7 groups with its share of their layers: four stages
    // of 15, 16, 16 and 15 layers (vllm/distributed/utils.py get_pp_indices) hold at most 3 layers of a group
    // (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs), so the fullest GPU's sequence is 3 pages a block.
    const auto pp4 = vllm_hybrid_pages(gemma, KvDtype::bf16, {.context_tokens = 131072},
                                       {.pp = 4, .split = StageSplit::before_last});
    ASSERT_TRUE(pp4);
    ASSERT_EQ(pp4->stages.size(), 4u);
    EXPECT_EQ(pp4->model_group_size, 10u);
    for (const auto& st : pp4->stages) {
        EXPECT_EQ(st.attention_groups, 1u);
        EXPECT_EQ(st.sliding_groups, 6u);
    }
    EXPECT_EQ(pp4->bytes_per_sequence(131072).value(), 3ull * 131072 * (8192 + 6 * 65));
    // A smaller prefill chunk lowers the start's need below the budget: it fits.
    d.vllm.max_num_batched_tokens = 1024;
    f = fit(gemma, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_TRUE(f->fits) << testing::join(f->warnings);
    EXPECT_GE(f->max_batch, 1u);
    // The plain engine keeps the per-layer sum, and no start check.
    d.engine = Engine::plain;
    d.vllm.max_num_batched_tokens = 0;
    f = fit(gemma, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_FALSE(f->engine_pages);
}

// Llama 4's chunked-attention layers (attention_chunk_size 8,192) beside its full ones (every fourth, NoPE), under
// vLLM's hybrid cache manager (on for them by default in the newest releases): grouped as sliding layers are, each
// chunked group holding the current chunk's blocks (single_type_kv_cache_manager.py ChunkedLocalAttentionManager
// frees every block wholly before the chunk's start), and the start check counting the chunk and a prefill chunk
// with no block more (kv_cache_interface.py ChunkedLocalAttentionSpec.max_memory_usage_bytes).
TEST(VllmPages, SlidingLayersBesideAStateHoldTheirWindowInTheStatesPages) {
    // PLaMo 2 1B (pfnet/plamo-2-1b's config.json): 8 sliding layers of 1 KV head x 128 (512 bytes a token a layer)
    // over 2,048 tokens, and 8 Mamba-2 states of 548,864 bytes. vLLM sizes the block so a page holds a state
    // (model_executor/models/config.py HybridAttentionMambaModelConfig: 16 x cdiv(548,864, 16 x 512) = 1,072 tokens,
    // a page of 548,864 bytes, no padding), groups the 8 and 8 layers in groups of 8 (kv_cache_utils.py
    // _get_kv_cache_groups_uniform_page_size) and the sliding group keeps its window's blocks and one more
    // (SlidingWindowManager): at 32k, 3 pages a sliding layer and 1 a state, 32 pages of 548,864 bytes, against the
    // plain sum of 8,388,608 + 4,390,912. Counted before as that plain sum, shown as exact.
    auto plamo = testing::import(R"("architectures": ["PlamoForCausalLM"], "model_type": "plamo2",
        "attention_window_size": 2048, "hidden_size": 2048, "hidden_size_per_head": 128, "intermediate_size": 8192,
        "mamba_chunk_size": 256, "mamba_d_conv": 4, "mamba_d_state": 64, "mamba_enabled": true,
        "mamba_num_heads": 32, "mamba_step": 2, "max_position_embeddings": 10485760, "num_attention_heads": 16,
        "num_hidden_layers": 16, "num_key_value_heads": 1, "sliding_window": 2048, "torch_dtype": "bfloat16",
        "vocab_size": 100000)");
    ASSERT_TRUE(plamo) << plamo.error_text();
    const Workload w{.context_tokens = 32768, .batch = 4};
    auto pages = vllm_hybrid_pages(plamo->arch, KvDtype::bf16, w, {});
    ASSERT_TRUE(pages);
    EXPECT_EQ(pages->attention_block, 1072u);
    EXPECT_EQ(pages->page_bytes, 548'864u);
    EXPECT_EQ(pages->window, 2048u);
    ASSERT_EQ(pages->stages.size(), 1u);
    EXPECT_EQ(pages->stages[0].group_size, 8u);
    EXPECT_EQ(pages->stages[0].attention_groups, 0u);
    EXPECT_EQ(pages->stages[0].sliding_groups, 1u);
    EXPECT_EQ(pages->stages[0].state_groups, 1u);
    EXPECT_EQ(pages->bytes_per_sequence(32768).value(), 8ull * 548'864 * (3 + 1));  // 17,563,648
    // Below the window a sequence holds what it has: 1 block at 1,000 tokens.
    EXPECT_EQ(pages->bytes_per_sequence(1000).value(), 8ull * 548'864 * (1 + 1));
    // The fit uses it and says so; no context is too long for it (the windows stop growing).
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("l4");
    auto f = fit(plamo->arch, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f) << f.error_text();
    ASSERT_TRUE(f->engine_pages);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, 4ull * 17'563'648);
    EXPECT_EQ(f->plain_memory_bytes_per_gpu, 4ull * (8'388'608 + 4'390'912));
    EXPECT_EQ(f->max_batch, static_cast<std::uint64_t>(f->kv_budget_bytes_per_gpu) / 17'563'648);
    EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(), [](const std::string& n) {
        return n.find("(1 sliding, 1 state), a sliding group holding its 2,048-token window's 2 blocks") !=
               std::string::npos;
    })) << testing::join(f->notes);

    // The simulation takes the same groups and names only the kinds it has.
    Scenario scenario;
    scenario.arch = plamo->arch;
    scenario.workload = w;
    scenario.deployment = d;
    const auto served = serving_setup(scenario, false, 0);
    ASSERT_TRUE(served) << served.error_text();
    EXPECT_EQ(served->settings.groups.full, 0u);
    EXPECT_EQ(served->settings.groups.sliding, 1u);
    EXPECT_EQ(served->settings.groups.state, 1u);
    EXPECT_TRUE(std::any_of(served->notes.begin(), served->notes.end(), [](const std::string& n) {
        return n.starts_with("vLLM's hybrid KV cache manager: 1 sliding-window group (2,048-token window");
    })) << testing::join(served->notes);

    // RecurrentGemma 9B: 12 sliding layers (2,048 tokens) and 26 RG-LRU states: groups of 12 (26 is not under
    // 1.5 x 12), 1 sliding group and 3 state groups, 10 padding layers. vLLM does not serve the model, and the fit says
    // its figures are vLLM's rules applied to it.
    const Architecture& rg = catalog_arch("recurrentgemma-9b");
    auto rg_pages = vllm_hybrid_pages(rg, KvDtype::bf16, {.context_tokens = 8192}, {});
    ASSERT_TRUE(rg_pages);
    EXPECT_EQ(rg_pages->stages[0].group_size, 12u);
    EXPECT_EQ(rg_pages->stages[0].sliding_groups, 1u);
    EXPECT_EQ(rg_pages->stages[0].state_groups, 3u);
    // At 8k a sequence holds 44 blocks of 48 tokens a sliding layer (the window's, and one more) and a page a state:
    // 12 x 49,152 x (44 + 3) bytes. Two pipeline stages of 19 layers each keep every group with their share: 6
    // sliding layers and at most 5 of a state group each, so a stage's block costs 6 pages. A --block-size above the
    // computed block is kept: 128 tokens, 17 of them a window.
    EXPECT_EQ(rg_pages->bytes_per_sequence(8192).value(), 12ull * 49'152 * (44 + 3));
    auto staged = vllm_hybrid_pages(rg, KvDtype::bf16, {.context_tokens = 8192}, {.tp = 1, .pp = 2});
    ASSERT_TRUE(staged);
    ASSERT_EQ(staged->stages.size(), 2u);
    for (const HybridPages::Stage& st : staged->stages) {
        EXPECT_EQ(st.group_size, 6u);
        EXPECT_EQ(st.sliding_groups, 1u);
        EXPECT_EQ(st.state_groups, 3u);
    }
    EXPECT_EQ(staged->bytes_per_sequence(8192).value(), 6ull * 49'152 * (44 + 3));
    auto big = vllm_hybrid_pages(rg, KvDtype::bf16, {.context_tokens = 8192, .block_size = 128}, {});
    ASSERT_TRUE(big);
    EXPECT_EQ(big->attention_block, 128u);
    EXPECT_EQ(big->bytes_per_sequence(8192).value(), 12ull * 128 * 1024 * (17 + 3));
    auto rg_fit = fit(rg, KvDtype::bf16, {.context_tokens = 8192}, {}, d);
    ASSERT_TRUE(rg_fit) << rg_fit.error_text();
    EXPECT_TRUE(std::any_of(rg_fit->warnings.begin(), rg_fit->warnings.end(), [](const std::string& s) {
        return s.starts_with("not exact: vLLM does not serve RecurrentGemma");
    })) << testing::join(rg_fit->warnings);
    // Under --full-window every attention layer is full: one attention group, no sliding one.
    auto whole = vllm_hybrid_pages(plamo->arch, KvDtype::bf16, {.context_tokens = 32768, .full_window = true}, {});
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->window, 0u);
    EXPECT_EQ(whole->stages[0].attention_groups, 1u);
    EXPECT_EQ(whole->stages[0].sliding_groups, 0u);
}

TEST(VllmPages, ChunkedAttentionLayersHoldTheirChunkBesideFullOnes) {
    const Architecture& scout = catalog_arch("llama-4-scout");
    // TP 4: 2 of the 8 KV heads a GPU, 2 x 2 x 128 x 2 = 1,024 bytes a token and layer, 16,384 a page. 36 chunked and
    // 12 full layers: groups of 12 (36 >= 1.5 x 12), 3 chunked and 1 full, no padding.
    const auto pages = vllm_hybrid_pages(scout, KvDtype::bf16, {.context_tokens = 131072}, {.tp = 4});
    ASSERT_TRUE(pages);
    EXPECT_TRUE(pages->chunked);
    EXPECT_EQ(pages->window, 8192u);
    EXPECT_EQ(pages->page_bytes, 16384u);
    EXPECT_EQ(pages->model_group_size, 12u);
    ASSERT_NO_FATAL_FAILURE(expect_one_stage(*pages, 3, 1));
    // The chunk starts on a block: 512 blocks at most, not the 513 a window of 8,192 may span.
    EXPECT_EQ(pages->sliding_blocks(100'000), 512u);
    EXPECT_EQ(pages->sliding_blocks(1000), 63u);
    const std::uint64_t block = 12ull * 16384;
    EXPECT_EQ(pages->bytes_per_sequence(131072).value(), block * (8192 + 3 * 512));
    // The same as the plain per-layer sum, padding none: 12 x 1,024 x 131,072 + 36 x 1,024 x 8,192.
    EXPECT_EQ(pages->bytes_per_sequence(131072).value(), 12ull * 1024 * 131072 + 36ull * 1024 * 8192);
    // The start check: the chunk and a prefill chunk of 8,192 tokens, 1,024 blocks a chunked group, none more.
    EXPECT_EQ(pages->startup_bytes(131072, 8192).value(), block * (8192 + 3 * 1024));
    EXPECT_EQ(pages->startup_bytes(4096, 8192).value(), block * (256 + 3 * 256));  // shorter than both
    const std::uint64_t budget = block * (8192 + 3 * 1024) - 1;
    EXPECT_EQ(pages->startup_max_tokens(budget, 8192), (8192 - 1) * 16u);
    EXPECT_LE(pages->startup_bytes(pages->startup_max_tokens(budget, 8192), 8192).value(), budget);

    // The fit says so in its words, and its JSON names the windowed layers.
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = 4;
    auto f = fit(scout, KvDtype::bf16, {.context_tokens = 131072, .batch = 4}, {.tp = 4}, d);
    ASSERT_TRUE(f) << f.error_text();
    ASSERT_TRUE(f->engine_pages);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, 4 * block * (8192 + 3 * 512));
    EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(), [](const std::string& n) {
        return n.find(
                   "the 36 chunked-attention and 12 full-attention layers in groups of 12 (3 chunked, 1 full), "
                   "blocks of 16 tokens, a chunked group holding the current chunk's blocks, 512 at most") !=
               std::string::npos;
    })) << testing::join(f->notes);

    // Before 0.14 the manager was off for models with attention_chunk_size (vllm/config/vllm.py, vllm/envs.py
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE "0"), and before 0.10 there was none: every layer keeps the
    // whole context, 48 x 1,024 bytes a token on each GPU. So does an EAGLE drafter in any release.
    for (const std::uint64_t minor : {9u, 12u, 13u}) {
        d.vllm.version_minor = minor;
        f = fit(scout, KvDtype::bf16, {.context_tokens = 131072, .batch = 4}, {.tp = 4}, d);
        ASSERT_TRUE(f) << f.error_text();
        EXPECT_FALSE(f->engine_pages) << minor;
        EXPECT_EQ(f->kv_bytes_per_gpu, 4ull * 48 * 1024 * 131072) << minor;
        EXPECT_TRUE(std::any_of(f->notes.begin(), f->notes.end(), [&](const std::string& n) {
            return n.starts_with("vLLM 0." + std::to_string(minor) +
                                 " keeps the whole context on the chunked-attention layers beside full ones");
        })) << testing::join(f->notes);
    }
    // 0.13 to 0.15: which side of the change is not certain, and the fit says so; 0.12 and 0.16 are.
    const auto unsure = [&](std::uint64_t minor) {
        d.vllm.version_minor = minor;
        const auto g = fit(scout, KvDtype::bf16, {.context_tokens = 131072, .batch = 4}, {.tp = 4}, d);
        return g && !g->warnings.empty() && std::any_of(g->warnings.begin(), g->warnings.end(), [](const auto& w) {
                   return w.starts_with("not exact: whether vLLM 0.1");
               });
    };
    EXPECT_TRUE(unsure(13));
    EXPECT_TRUE(unsure(15));
    EXPECT_FALSE(unsure(12));
    EXPECT_FALSE(unsure(16));
    d.vllm.version_minor = 14;
    EXPECT_FALSE(vllm_keeps_full_context(d, scout));
    d.draft = DraftModel{};
    d.draft->method = DraftMethod::eagle3;
    EXPECT_TRUE(vllm_keeps_full_context(d, scout));
    EXPECT_FALSE(unsure(15)) << "an EAGLE drafter keeps the whole context in every release: that figure is certain";
    d.draft->method = DraftMethod::draft_model;
    EXPECT_FALSE(vllm_keeps_full_context(d, scout));
    // Sliding layers are not chunked ones: Gemma 3 keeps its windows from 0.10 whatever the drafter.
    d.draft->method = DraftMethod::eagle;
    d.vllm.version_minor = 12;
    EXPECT_FALSE(vllm_keeps_full_context(d, catalog_arch("gemma-3-27b")));
}

}  // namespace
}  // namespace kvscope
