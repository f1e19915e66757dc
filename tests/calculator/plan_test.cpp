// "How many GPUs do I need?": the planner's layouts, replicas and order.
#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/plan.h"
#include "testing.h"

namespace kvscope {
namespace {

Deployment h100() {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.engine = Engine::vllm;
    d.fraction = 0.90;
    d.weight_dtype = KvDtype::bf16;
    return d;
}

const Architecture& arch_of(const char* id) { return Catalog::builtin().find_model(id)->model.arch; }

// Llama 3 70B in bf16 (141 GB of weights) with an fp8 cache, 64 sequences of 8k on H100 SXM 80GB.
TEST(Plan, Llama3_70bDoesNotFitOneGpuAndReplicasServeTheRest) {
    const Workload w{.context_tokens = 8192, .batch = 64};
    auto plan = plan_deployments(arch_of("llama-3-70b"), KvDtype::fp8_e4m3, w, h100());
    ASSERT_TRUE(plan) << plan.error_text();
    EXPECT_EQ(plan->sequences, 64u);
    ASSERT_FALSE(plan->options.empty());
    // One GPU cannot hold the weights: listed first, as not fitting, with the reason.
    const PlanOption& one = plan->options.front();
    EXPECT_EQ(one.gpus, 1u);
    EXPECT_FALSE(one.fits);
    EXPECT_NE(one.why_not.find("the weights"), std::string::npos) << one.why_not;
    std::uint64_t previous = 0;
    for (const PlanOption& o : plan->options) {
        EXPECT_GE(o.gpus, previous) << "smallest GPU count first";
        previous = o.gpus;
        EXPECT_EQ(o.gpus, o.tp * o.pp * o.replicas);
        EXPECT_EQ(64 % o.tp, 0u) << "tensor parallel divides the query heads";
        EXPECT_LE(o.tp, 8u) << "within a node";
        if (!o.fits) continue;
        // Each replica holds its share, and together they serve every sequence.
        EXPECT_GE(o.replicas * o.sequences_per_replica, 64u);
        EXPECT_LE(o.sequences_per_replica, o.max_batch);
        EXPECT_GE(o.headroom_bytes_per_gpu, 0);
        // The same fit the fit command gives for one replica at its share of the sequences.
        Workload share = w;
        share.batch = o.sequences_per_replica;
        Deployment d = h100();
        d.gpu_count = o.tp * o.pp;
        auto f = fit(arch_of("llama-3-70b"), KvDtype::fp8_e4m3, share, {.tp = o.tp, .pp = o.pp}, d);
        ASSERT_TRUE(f);
        EXPECT_TRUE(f->fits);
        EXPECT_EQ(f->headroom_bytes_per_gpu, o.headroom_bytes_per_gpu);
        // The fit command's decode floor for one replica at its share: the same per-sequence speed.
        auto d2 = decode_estimate(arch_of("llama-3-70b"), KvDtype::fp8_e4m3, share, {.tp = o.tp, .pp = o.pp}, d);
        ASSERT_TRUE(d2);
        EXPECT_DOUBLE_EQ(o.decode_tokens_per_s_per_sequence, d2->tokens_per_s_per_sequence);
    }
    // TP 8 on one node holds all 64 sequences: one replica, 8 GPUs.
    const auto tp8 = std::find_if(plan->options.begin(), plan->options.end(),
                                  [](const PlanOption& o) { return o.tp == 8 && o.pp == 1; });
    ASSERT_NE(tp8, plan->options.end());
    EXPECT_TRUE(tp8->fits);
    EXPECT_EQ(tp8->replicas, 1u);
    EXPECT_EQ(tp8->gpus, 8u);
    EXPECT_EQ(plan_layout_text(*tp8), "TP 8 × PP 1");
}

TEST(Plan, ALayoutWithMoreGpusAndNoMoreSpeedIsLeftOutAndCounted) {
    // Llama 3 70B, 16 sequences of 32k: TP 1 × PP 3 × 3 replicas (9 GPUs) decodes slower in all than TP 8 (8 GPUs).
    const Workload w{.context_tokens = 32768, .batch = 16};
    auto plan = plan_deployments(arch_of("llama-3-70b"), KvDtype::bf16, w, h100());
    ASSERT_TRUE(plan) << plan.error_text();
    double best = -1;
    std::uint64_t best_gpus = 0;
    for (const PlanOption& o : plan->options) {
        if (!o.fits || o.dominated) continue;
        // Every fitting layout listed is faster than any fitting one with fewer GPUs listed above it.
        if (o.gpus > best_gpus && best >= 0) EXPECT_GT(o.decode_tokens_per_s, best) << plan_layout_text(o);
        if (o.decode_tokens_per_s > best) best = o.decode_tokens_per_s, best_gpus = o.gpus;
    }
    const auto nine =
        std::find_if(plan->options.begin(), plan->options.end(), [](const PlanOption& o) { return o.gpus == 9; });
    ASSERT_NE(nine, plan->options.end());  // kept, flagged: the tables leave it out unless it is in use
    EXPECT_TRUE(nine->dominated);
    EXPECT_TRUE(std::any_of(plan->notes.begin(), plan->notes.end(), [](const std::string& n) {
        return n == "2 layouts left out: each takes more GPUs than one above it and decodes no faster in all";
    }));
    // The window's caption reads the same two notes from their own fields, never by matching the text.
    EXPECT_EQ(plan->dominated_note,
              "2 layouts left out: each takes more GPUs than one above it and decodes no faster in all");
    EXPECT_TRUE(plan->scope_note.starts_with("tensor parallel within a node of 8 GPUs")) << plan->scope_note;
}

TEST(Plan, KvHeadsThatCannotBeSplitAreLeftOut) {
    // 32 query heads and 8 KV heads: TP 3, 5, 6, 7 divide neither.
    auto plan = plan_deployments(arch_of("llama-3-8b"), KvDtype::bf16, {.context_tokens = 8192, .batch = 1}, h100());
    ASSERT_TRUE(plan) << plan.error_text();
    for (const PlanOption& o : plan->options) EXPECT_TRUE(o.tp == 1 || o.tp == 2 || o.tp == 4 || o.tp == 8) << o.tp;
    // Llama 3 8B fits one H100 with one sequence: the first option, one GPU.
    EXPECT_TRUE(plan->options.front().fits);
    EXPECT_EQ(plan->options.front().gpus, 1u);
    EXPECT_EQ(plan_layout_text(plan->options.front()), "TP 1 × PP 1");
}

TEST(Plan, NothingFitsIsSaidAndBadInputsAreErrors) {
    Deployment small = h100();
    small.gpu.memory_bytes = 1ull << 30;
    auto plan = plan_deployments(arch_of("llama-3-70b"), KvDtype::bf16, {.context_tokens = 8192, .batch = 1}, small,
                                 {.gpus_per_node = 2, .max_pp = 2});
    ASSERT_TRUE(plan);
    for (const PlanOption& o : plan->options) EXPECT_FALSE(o.fits);
    ASSERT_EQ(plan->notes.size(), 3u);
    EXPECT_NE(plan->notes[1].find("no layout within these limits"), std::string::npos);
    // Layouts with two stages were tried: their weights' even split is said once, for all of them.
    EXPECT_TRUE(plan->notes[2].starts_with(kEvenPipelineNote)) << plan->notes[2];
    auto bad = plan_deployments(arch_of("llama-3-70b"), KvDtype::bf16, {.context_tokens = 0, .batch = 1}, h100());
    EXPECT_FALSE(bad);
}

TEST(Plan, AbsurdInputsAreErrorsOrRowsNeverACrashOrAHang) {
    EXPECT_FALSE(plan_deployments(arch_of("llama-3-8b"), KvDtype::bf16, {.context_tokens = 8192, .batch = 1}, h100(),
                                  {.gpus_per_node = 1'000'000'000'000'000, .max_pp = 8}));
    EXPECT_FALSE(plan_deployments(arch_of("llama-3-8b"), KvDtype::bf16, {.context_tokens = 8192, .batch = 1}, h100(),
                                  {.gpus_per_node = 8, .max_pp = 0}));
    // 2^64 - 1 sequences: replicas without wrapping, and the GPU count that cannot be said is a reason.
    const std::uint64_t all = ~0ull;
    auto plan = plan_deployments(arch_of("llama-3-8b"), KvDtype::bf16, {.context_tokens = 8192, .batch = all}, h100());
    ASSERT_TRUE(plan) << plan.error_text();
    ASSERT_FALSE(plan->options.empty());
    for (const PlanOption& o : plan->options) {
        if (!o.fits) {
            EXPECT_FALSE(o.why_not.empty());
            continue;
        }
        EXPECT_GE(static_cast<unsigned __int128>(o.replicas) * o.sequences_per_replica, all);
        EXPECT_EQ(static_cast<unsigned __int128>(o.gpus), static_cast<unsigned __int128>(o.tp) * o.pp * o.replicas);
    }
}

TEST(ModelName, AHuggingFaceSnapshotIsNamedByItsRepoElseByItsFolder) {
    EXPECT_EQ(model_name_from_path("/home/a/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct/snapshots/"
                                   "a09a35458c702b33eeacc393d103063234e8bc28/config.json"),
              "Qwen/Qwen2.5-7B-Instruct");
    EXPECT_EQ(model_name_from_path("/srv/models/Llama 3 70B – Kopie/config.json"), "Llama 3 70B – Kopie");
    EXPECT_EQ(model_name_from_path("C:\\models\\mistral\\config.json"), "mistral");
    EXPECT_EQ(model_name_from_path("config.json"), "config.json");
}

}  // namespace
}  // namespace kvscope
