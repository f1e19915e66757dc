// What lies beyond a figure's range is said, never shown as a figure: a head layout whose cache passes 2^64
// bytes, a fit at a context past the model's positions, a context limit that is only the search's bound.
#include <algorithm>

#include "kvscope/calculator/analysis.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/draft.h"
#include "kvscope/calculator/draft_import.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/weights.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::catalog_arch;

bool says(const std::vector<std::string>& lines, const std::string& part) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

Scenario llama_3_8b(std::uint64_t context, std::uint64_t batch) {
    Scenario s;
    s.model_id = "llama-3-8b";
    s.arch = catalog_arch("llama-3-8b");
    s.kv_dtype = KvDtype::bf16;
    s.workload = {.context_tokens = context, .batch = batch};
    return s;
}

TEST(Limits, ALayoutPast2To64BytesIsNamedAndThePercentagesStillCompareWithMha) {
    // 128 KiB a token x 8,192 tokens x 10^10 sequences = 1.07 x 10^19 bytes fits in 64 bits; MHA's four times
    // that does not.
    auto r = analyze(llama_3_8b(8192, 10'000'000'000), {.with_curves = false});
    ASSERT_TRUE(r) << r.error_text();
    ASSERT_EQ(r->variants.size(), 2u);
    EXPECT_EQ(r->variants[0].name, "GQA-8");
    EXPECT_EQ(r->variants[0].kv_cache_bytes, 131072ull * 8192 * 10'000'000'000ull);
    // A quarter and an eighth of MHA's, not 0% against a missing row.
    EXPECT_DOUBLE_EQ(r->variants[0].percent_of_mha, 25.0);
    EXPECT_DOUBLE_EQ(r->variants[1].percent_of_mha, 3.125);
    EXPECT_TRUE(says(r->kv.warnings,
                     "MHA is left out of the comparison: its cache at this context and batch would "
                     "pass 2^64 bytes (16 EiB)"))
        << testing::join(r->kv.warnings);

    // The window computes the chart too: MHA is left out of it as well, said once, and the rest still shows.
    auto shown = analyze(llama_3_8b(8192, 10'000'000'000), {});
    ASSERT_TRUE(shown) << shown.error_text();
    ASSERT_EQ(shown->curves.series.size(), 2u);
    EXPECT_EQ(shown->curves.series[0].name, "GQA-8");
    EXPECT_TRUE(says(shown->kv.warnings, "MHA is left out of the comparison and the chart"))
        << testing::join(shown->kv.warnings);

    // A model whose max positions are 10^15 (a config says so): the scenario is answered, as kvscope-cli kv answers
    // it; the chart's end is the calculator's choice and is lowered where the cache would pass 2^64 bytes, and said.
    Scenario far = llama_3_8b(8192, 1);
    far.arch.max_positions = 1'000'000'000'000'000;
    auto r_far = analyze(far);
    ASSERT_TRUE(r_far) << r_far.error_text();
    EXPECT_EQ(r_far->kv.total_bytes, 131072ull * 8192);
    EXPECT_EQ(r_far->curves.tokens.back(), (1ull << 47) - 1);
    EXPECT_TRUE(says(r_far->curve_warnings,
                     "the chart ends at 140,737,488,355,327 tokens, not at "
                     "1,000,000,000,000,000: past it the cache of 1 sequence would pass 2^64 "
                     "bytes (16 EiB)"))
        << testing::join(r_far->curve_warnings);
    EXPECT_FALSE(says(r_far->kv.warnings, "the chart"));  // nothing of the cache's own figures
    EXPECT_TRUE(says(curve_warnings(*r_far), "the chart ends at"));

    // A context so long that MHA's cache of one sequence passes 2^64 bytes: its size is summed in long double.
    std::vector<LeftOutVariant> too_large;
    auto v = compare_variants(catalog_arch("llama-3-8b"), KvDtype::bf16, {.context_tokens = 100'000'000'000'000}, {},
                              &too_large);
    ASSERT_TRUE(v) << v.error_text();
    EXPECT_EQ(too_large, (std::vector<LeftOutVariant>{{"MHA", VariantKind::mha}}));
    EXPECT_DOUBLE_EQ((*v)[0].percent_of_mha, 25.0);

    // Within 64 bits nothing is left out or said.
    auto small = analyze(llama_3_8b(8192, 8), {.with_curves = false});
    ASSERT_TRUE(small);
    EXPECT_EQ(small->variants.size(), 3u);
    EXPECT_FALSE(says(small->kv.warnings, "left out"));
}

Deployment h100s(std::uint64_t count) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = count;
    return d;
}

TEST(Limits, AFitAndAPlanPastTheModelsPositionsSayItAsTheCacheDoes) {
    // Llama 3 70B was trained for 8,192 positions: 32k tokens fit in memory, and every report says what kv says.
    const Architecture& a = catalog_arch("llama-3-70b");
    const Workload w{.context_tokens = 32768, .batch = 16};
    const std::string said = "the context of 32,768 tokens exceeds the model's 8,192 max positions";
    auto f = fit(a, KvDtype::fp8_e4m3, w, {.tp = 4}, h100s(4));
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_TRUE(f->fits);
    EXPECT_TRUE(says(f->warnings, said)) << testing::join(f->warnings);
    Scenario s;
    s.arch = a;
    s.kv_dtype = KvDtype::fp8_e4m3;
    s.workload = w;
    s.parallel = {.tp = 4};
    s.deployment = h100s(4);
    auto d = decode_estimate(a, s.kv_dtype, w, s.parallel, *s.deployment, *f);
    ASSERT_TRUE(d);
    const json::Value j = fit_report_json(s, *f, *d, nullptr);
    const auto& items = j.find("warnings")->items();
    EXPECT_TRUE(std::any_of(items.begin(), items.end(), [&](const json::Value& x) { return x.as_string() == said; }));
    auto plan = plan_deployments(a, KvDtype::fp8_e4m3, w, h100s(1));
    ASSERT_TRUE(plan) << plan.error_text();
    EXPECT_TRUE(says(plan->warnings, said)) << testing::join(plan->warnings);
    // A layout's own warning stays with its fit: one KV head on several GPUs is not every layout's.
    auto wide = fit(a, KvDtype::fp8_e4m3, {.context_tokens = 8192, .batch = 16}, {.tp = 16}, h100s(16));
    ASSERT_TRUE(wide) << wide.error_text();
    EXPECT_TRUE(says(wide->warnings, "each KV head is stored on 2 GPUs")) << testing::join(wide->warnings);
    EXPECT_FALSE(says(plan->warnings, "each KV head"));
    // Within the positions, nothing is said.
    auto within = fit(a, KvDtype::fp8_e4m3, {.context_tokens = 8192, .batch = 16}, {.tp = 4}, h100s(4));
    ASSERT_TRUE(within);
    EXPECT_TRUE(within->warnings.empty()) << testing::join(within->warnings);
}

TEST(Limits, AModelWhoseAttentionLayersAllKeepAWindowHasNoContextLimitRatherThanTheSearchsBound) {
    // RecurrentGemma: local attention over 2,048 tokens and recurrent blocks, no max positions in its config. Its
    // memory stops growing at the window, so no context is too long: 2^40 tokens is only where the search stops.
    const Architecture& rg = catalog_arch("recurrentgemma-9b");
    ASSERT_EQ(rg.max_positions, 0u);
    auto f = fit(rg, KvDtype::bf16, {.context_tokens = 10'000'000'000'000, .batch = 1}, {}, h100s(1));
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_TRUE(f->fits);
    EXPECT_TRUE(f->max_context_unbounded);
    EXPECT_EQ(unbounded_context_reason(rg),
              "every attention layer keeps only its window, so a longer context does not change the memory");
    EXPECT_EQ(unbounded_context_reason(catalog_arch("mamba-codestral-7b")),
              "no layer keeps a KV cache, so the context does not change the memory");
    // A full-attention model with no max positions has a real limit, the memory's.
    Architecture open = catalog_arch("llama-3-8b");
    open.max_positions = 0;
    auto g = fit(open, KvDtype::bf16, {.context_tokens = 8192, .batch = 1}, {}, h100s(1));
    ASSERT_TRUE(g) << g.error_text();
    EXPECT_FALSE(g->max_context_unbounded);
    EXPECT_GT(g->max_context, 8192u);
    EXPECT_LT(g->max_context, 1'000'000u);  // about 70 GiB of budget at 128 KiB a token
}

TEST(Limits, PipelineStagesSayThatTheirWeightsAreSplitEvenly) {
    // Llama 3 70B over 7 RTX 4090s: the first stage's GPU also holds the embedding, 128,256 x 8,192 x 2 bytes.
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("rtx-4090");
    d.gpu_count = 7;
    auto f = fit(catalog_arch("llama-3-70b"), KvDtype::bf16, {.context_tokens = 1024}, {.pp = 7}, d);
    ASSERT_TRUE(f) << f.error_text();
    EXPECT_TRUE(says(f->notes,
                     "not exact: the weights are split evenly over the 7 pipeline stages; engines keep "
                     "the embedding (1.96 GiB per GPU) on the first stage"))
        << testing::join(f->notes);
    d.gpu_count = 1;
    auto one = fit(catalog_arch("llama-3-8b"), KvDtype::bf16, {.context_tokens = 1024}, {}, d);
    ASSERT_TRUE(one);
    EXPECT_FALSE(says(one->notes, "split evenly"));
}

TEST(Limits, ADraftsHeadsServeItsOwnQueryHeadsNotTheModels) {
    // GPT-2's 12 KV heads do not divide Llama 3 70B's 64 query heads, and need not: they serve GPT-2's own 12.
    DraftModel draft = draft_from_model(Catalog::builtin().find_model("gpt2")->model, "gpt2", std::nullopt);
    auto cache = with_draft_layers(catalog_arch("llama-3-70b"), draft);
    ASSERT_TRUE(cache) << cache.error_text();
    EXPECT_TRUE(validate(*cache).empty());
    EXPECT_EQ(cache->layers, 92u);
    // Its heads are split over the same tensor-parallel GPUs as the model's: 12 heads over 8 GPUs are refused (on
    // the draft), never rounded down to one head a GPU.
    Deployment d = h100s(8);
    d.draft = draft;
    auto f = fit(catalog_arch("llama-3-70b"), KvDtype::bf16, {.context_tokens = 8192}, {.tp = 8}, d);
    EXPECT_TRUE(
        testing::has_error(f.errors(), "draft", "the draft gpt2: tensor parallel 8 must divide the query heads"))
        << f.error_text();
    EXPECT_TRUE(fit(catalog_arch("llama-3-70b"), KvDtype::bf16, {.context_tokens = 8192}, {.tp = 4}, [&] {
        Deployment four = h100s(4);
        four.draft = draft;
        return four;
    }()));
}

TEST(Limits, APlanWhereNothingFitsStillGivesTheCachesWarnings) {
    // 1 GiB GPUs hold no layout of Llama 3 70B; the context past its positions is still said.
    Deployment tiny = h100s(1);
    tiny.gpu.memory_bytes = 1ull << 30;
    auto plan = plan_deployments(catalog_arch("llama-3-70b"), KvDtype::bf16, {.context_tokens = 32768}, tiny,
                                 {.gpus_per_node = 1, .max_pp = 1});
    ASSERT_TRUE(plan) << plan.error_text();
    EXPECT_TRUE(says(plan->warnings, "exceeds the model's 8,192 max positions")) << testing::join(plan->warnings);
}

// The series of what the engine allocates meets the budget line where the fit stops fitting: every point at or
// before the fit's max context is within the budget, every point after it is over.
void expect_the_allocated_curve_meets_the_budget_at_the_fits_limit(const Analysis& a, const std::string& name) {
    ASSERT_TRUE(a.fit.has_value());
    const auto allocated = std::find_if(a.curves.series.begin(), a.curves.series.end(),
                                        [](const Curve& c) { return c.series == VariantKind::allocated; });
    ASSERT_NE(allocated, a.curves.series.end());
    EXPECT_EQ(allocated->name, name);
    const auto budget = static_cast<std::uint64_t>(a.fit->kv_budget_bytes);
    std::size_t over = 0;
    for (std::size_t i = 0; i < a.curves.tokens.size(); ++i) {
        EXPECT_EQ(a.curves.tokens[i] <= a.fit->max_context, allocated->bytes[i] <= budget)
            << a.curves.tokens[i] << " tokens: " << allocated->bytes[i] << " bytes against " << budget;
        over += allocated->bytes[i] > budget;
    }
    EXPECT_GT(over, 0u);
    ASSERT_TRUE(a.stops_fitting_at.has_value());
    EXPECT_EQ(*a.stops_fitting_at, a.fit->max_context + 1);
}

TEST(Limits, TheChartShowsWhatTheEngineAllocatesWhereItIsNotThePlainSum) {
    // Nemotron-H 56B, 118 sequences of 8k on two H200s: vLLM's hybrid pages need 8% more than the plain per-layer
    // sum. The plain curve stays under the budget at 8k while the fit says it does not fit; the allocated one
    // crosses the budget where the fit's max context ends.
    Scenario s;
    s.model_id = "nemotron-h-56b";
    s.arch = catalog_arch("nemotron-h-56b");
    s.kv_dtype = KvDtype::bf16;
    s.workload = {.context_tokens = 8192, .batch = 118};
    s.parallel.tp = 2;
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    d.gpu_count = 2;
    s.deployment = d;
    auto hybrid = analyze(s, {});
    ASSERT_TRUE(hybrid) << hybrid.error_text();
    EXPECT_FALSE(hybrid->fit->fits);
    const auto model = std::find_if(hybrid->curves.series.begin(), hybrid->curves.series.end(),
                                    [](const Curve& c) { return c.is_model; });
    ASSERT_NE(model, hybrid->curves.series.end());
    const std::size_t at_8k = static_cast<std::size_t>(
        std::find(hybrid->curves.tokens.begin(), hybrid->curves.tokens.end(), 8192u) - hybrid->curves.tokens.begin());
    ASSERT_LT(at_8k, hybrid->curves.tokens.size());
    EXPECT_LT(model->bytes[at_8k], static_cast<std::uint64_t>(hybrid->fit->kv_budget_bytes));
    expect_the_allocated_curve_meets_the_budget_at_the_fits_limit(*hybrid,
                                                                  "as vllm allocates it (the fullest GPU × 2)");

    // llama.cpp keeps gpt-oss's sliding layers' window and a micro-batch more, padded: more than the plain sum.
    Scenario g;
    g.model_id = "gpt-oss-20b";
    g.arch = catalog_arch("gpt-oss-20b");
    g.kv_dtype = KvDtype::bf16;
    g.workload = {.context_tokens = 131072, .batch = 8};
    Deployment cpp;
    cpp.gpu = *Catalog::builtin().find_gpu("rtx-4090");
    adopt_model_weights(cpp, Catalog::builtin().find_model("gpt-oss-20b")->model.model_weights());  // MXFP4
    cpp.engine = Engine::llama_cpp;
    g.deployment = cpp;
    auto windows = analyze(g, {});
    ASSERT_TRUE(windows) << windows.error_text();
    expect_the_allocated_curve_meets_the_budget_at_the_fits_limit(*windows, "as llama.cpp allocates it");

    // Pipeline stages of unequal layers (80 over 3: 27, 27, 26): the fullest stage is what stops fitting.
    Scenario staged = llama_3_8b(8192, 200);
    staged.model_id = "llama-3-70b";
    staged.arch = catalog_arch("llama-3-70b");
    staged.parallel.pp = 3;
    staged.deployment = d;
    staged.deployment->gpu_count = 3;
    auto stages = analyze(staged, {});
    ASSERT_TRUE(stages) << stages.error_text();
    expect_the_allocated_curve_meets_the_budget_at_the_fits_limit(*stages,
                                                                  "as vllm allocates it (the fullest GPU × 3)");

    // A dense model on one GPU allocates its plain sum: no second line.
    Scenario dense = llama_3_8b(8192, 8);
    dense.deployment = d;
    dense.deployment->gpu_count = 1;
    auto plain = analyze(dense, {});
    ASSERT_TRUE(plain) << plain.error_text();
    EXPECT_TRUE(std::none_of(plain->curves.series.begin(), plain->curves.series.end(),
                             [](const Curve& c) { return c.series == VariantKind::allocated; }));
}

}  // namespace
}  // namespace kvscope
