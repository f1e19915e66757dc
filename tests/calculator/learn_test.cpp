// The Learn tab's numbers: the derivation a learner multiplies by hand, prefill against
// decode, the cost of recomputing, the what-ifs, the context window, and the questions.
#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/learn.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/quiz.h"
#include "kvscope/calculator/weights.h"
#include "testing.h"

namespace kvscope {
namespace {

Scenario lesson(std::uint64_t kv_heads = 32) {
    Scenario s;
    s.arch = teaching_model();
    s.arch.kv_heads = kv_heads;
    s.kv_dtype = KvDtype::fp16;
    s.workload = {8192, 1, 1, false};
    return s;
}

Scenario catalog_scenario(const std::string& id, std::uint64_t tokens) {
    Scenario s;
    const CatalogModel* m = Catalog::builtin().find_model(id);
    EXPECT_NE(m, nullptr) << id;
    s.arch = m->model.arch;
    s.kv_dtype = KvDtype::bf16;
    s.workload = {tokens, 1, 1, false};
    return s;
}

std::vector<std::string> texts(const std::vector<Factor>& factors) {
    std::vector<std::string> out;
    for (const auto& f : factors) out.push_back(f.text);
    return out;
}

TEST(Derivation, TheLessonModelFactorByFactor) {
    auto d = derive_kv_bytes(teaching_model(), KvDtype::fp16, {8192, 1, 1, false}, {});
    ASSERT_TRUE(d.ok()) << d.error_text();
    EXPECT_EQ(d->form, "MHA");
    ASSERT_TRUE(d->kv_pair.has_value());
    EXPECT_EQ(d->kv_pair->value, 2u);
    ASSERT_EQ(d->groups.size(), 1u);
    EXPECT_EQ(d->groups[0].layers.text, "32 layers");
    EXPECT_EQ(d->groups[0].layers.field, Field::layers);
    EXPECT_EQ(d->groups[0].tokens.text, "8,192 tokens");
    EXPECT_EQ(d->groups[0].tokens.field, Field::context_tokens);
    EXPECT_EQ(texts(d->row), (std::vector<std::string>{"32 KV heads", "128 head dim", "2 bytes (fp16)"}));
    EXPECT_EQ(d->row[0].field, Field::kv_heads);
    EXPECT_EQ(d->row[1].field, Field::head_dim);
    EXPECT_EQ(d->row[2].field, Field::kv_dtype);
    EXPECT_EQ(texts(d->tail), (std::vector<std::string>{"1 sequence"}));
    EXPECT_EQ(d->tail[0].field, Field::batch);
    EXPECT_EQ(d->row_bytes, 2u * 32 * 128 * 2);
    EXPECT_EQ(product_of_factors(*d), 4294967296u);  // 4.00 GiB
}

TEST(Derivation, GqaMlaSlidingWindowAndReplicasMultiplyToTheReport) {
    struct Named {
        std::string what;
        Scenario s;
        std::string form;
    };
    Scenario gqa = lesson(8);
    Scenario mla = catalog_scenario("deepseek-v3", 32768);
    Scenario sliding = catalog_scenario("gemma-2-9b", 32768);
    Scenario replicas = catalog_scenario("llama-3-70b", 8192);
    replicas.parallel.tp = 16;  // 8 KV heads on 16 GPUs: each head kept twice
    Scenario blocks = lesson(8);
    blocks.workload = {1000, 3, 16, false};
    blocks.kv_dtype = KvDtype::q8_0;
    for (const auto& [what, s, form] : std::vector<Named>{{"GQA", gqa, "GQA-8"},
                                                          {"MLA", mla, "MLA"},
                                                          {"sliding", sliding, "sliding window + GQA-8"},
                                                          {"replicas", replicas, "GQA-8"},
                                                          {"blocks", blocks, "GQA-8"}}) {
        auto report = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
        auto d = derive_kv_bytes(s.arch, s.kv_dtype, s.workload, s.parallel);
        ASSERT_TRUE(report.ok() && d.ok()) << what;
        EXPECT_EQ(product_of_factors(*d), report->total_bytes) << what << ": " << derivation_text(*d);
        EXPECT_EQ(d->form, form) << what;
    }
    auto m = derive_kv_bytes(mla.arch, mla.kv_dtype, mla.workload, {});
    EXPECT_FALSE(m->kv_pair.has_value()) << "MLA stores one latent, not K and V";
    EXPECT_EQ(m->row[0].text, "(512 latent + 64 rope) values");
    auto g = derive_kv_bytes(sliding.arch, sliding.kv_dtype, sliding.workload, {});
    ASSERT_EQ(g->groups.size(), 2u);
    EXPECT_EQ(g->groups[1].tokens.text, "4,096 tokens (sliding window)");
    EXPECT_EQ(g->groups[1].tokens.field, Field::full_window);
    auto r = derive_kv_bytes(replicas.arch, replicas.kv_dtype, replicas.workload, replicas.parallel);
    EXPECT_EQ(r->row.back().field, Field::tp);
    EXPECT_EQ(r->row.back().value, 2u);
    auto b = derive_kv_bytes(blocks.arch, blocks.kv_dtype, blocks.workload, {});
    EXPECT_EQ(b->groups[0].tokens.text, "1,008 tokens (1,000 rounded up to blocks of 16)");
    EXPECT_EQ(b->row.back().text, "1.0625 bytes (q8_0, 34 bytes per 32 values)");
}

TEST(Derivation, InvalidInputsNameTheField) {
    EXPECT_FIELD_ERROR(derive_kv_bytes(testing::make_arch(32, 32, 5, 128), KvDtype::fp16, {}, {}), "kv_heads",
                       "divide");
}

TEST(PhaseCosts, PrefillIsOneBigPassAndDecodeReadsEverything) {
    const Scenario s = catalog_scenario("llama-3-8b", 8192);
    auto p = phase_costs(s);
    ASSERT_TRUE(p.ok()) << p.error_text();
    auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
    EXPECT_EQ(p->prefill_kv_written_bytes, kv->total_bytes);
    EXPECT_EQ(p->decode_kv_bytes_read, kv->total_bytes);
    // 8B parameters in bf16, less the untied input embedding: ~15 GB read per step.
    EXPECT_NEAR(static_cast<double>(p->decode_weight_bytes_read), 2.0 * 7.5e9, 0.6e9);
    // Prefill of 8192 tokens ≈ 2 × 7.5e9 × 8192 FLOPs plus attention; a cached step ≈ 2 × 7.5e9.
    EXPECT_GT(p->prefill_flops, 2 * 7.0e9 * 8192);
    EXPECT_NEAR(p->decode_flops_cached - attention_flops(s.arch, s.workload, 8192), 2 * 7.5e9, 0.6e9);
    EXPECT_DOUBLE_EQ(p->decode_flops_uncached, p->prefill_flops) << "without a cache every step is a prefill";
    // Prefill does thousands of FLOPs per byte; decode about one: why decode is memory-bound.
    EXPECT_GT(p->arithmetic_intensity_prefill, 1000);
    EXPECT_LT(p->arithmetic_intensity_decode, 2);
    // The quiz and the fit count every stored weight; the step reads fewer, and says why.
    auto stored = weights_bytes(parameters(s.arch).total, KvDtype::bf16);
    EXPECT_EQ(p->weights_bytes, *stored);
    EXPECT_LT(p->decode_weight_bytes_read, p->weights_bytes);
    EXPECT_EQ(p->weights_read_reason, "the embedding table is looked up, one row per token, not read whole");
}

TEST(PhaseCosts, AMixtureOfExpertsReadsOnlyTheRoutedExperts) {
    const Scenario s = catalog_scenario("mixtral-8x7b", 4096);
    auto p = phase_costs(s);
    ASSERT_TRUE(p.ok()) << p.error_text();
    EXPECT_LT(p->decode_weight_bytes_read * 2, p->weights_bytes);
    EXPECT_NE(p->weights_read_reason.find("only the experts the router picks are read"), std::string::npos);
}

TEST(RecomputeCurve, FlatWithTheCacheAndQuadraticWithout) {
    const Scenario s = catalog_scenario("llama-3-8b", 8192);
    auto c = recompute_curve(s.arch, s.workload, 4096, 100);
    ASSERT_TRUE(c.ok()) << c.error_text();
    ASSERT_EQ(c->tokens.front(), 1u);
    ASSERT_EQ(c->tokens.back(), 4096u);
    const std::size_t n = c->tokens.size();
    // Per token: with the cache barely grows (attention only), without it grows ~linearly.
    EXPECT_LT(c->per_token_cached.back() / c->per_token_cached.front(), 1.2);
    EXPECT_GT(c->per_token_uncached.back() / c->per_token_uncached.front(), 3000);
    // Cumulative: straight line vs n(n+1)/2 — doubling the tokens about quadruples the work.
    const std::size_t half = n / 2;
    const double t_half = static_cast<double>(c->tokens[half]), t_end = static_cast<double>(c->tokens.back());
    EXPECT_NEAR(c->cumulative_cached.back() / c->cumulative_cached[half], t_end / t_half, 0.1);
    EXPECT_NEAR(c->cumulative_uncached.back() / c->cumulative_uncached[half], (t_end * t_end) / (t_half * t_half), 0.3);
    EXPECT_NEAR(c->speedup_bound, 4097.0 / 2, 150);
    EXPECT_FIELD_ERROR(recompute_curve(s.arch, s.workload, 0), "max_tokens", "at least one");
}

const WhatIf& find(const std::vector<WhatIf>& all, const std::string& id) {
    for (const auto& w : all)
        if (w.id == id) return w;
    throw std::runtime_error("no what-if " + id);
}

TEST(WhatIfs, EachShowsTheNewSizeAndTheChange) {
    const auto all = what_ifs(lesson(8));  // GQA-8, 1.00 GiB
    ASSERT_EQ(all.size(), 5u);
    const WhatIf& halve = find(all, "halve_kv_heads");
    EXPECT_EQ(halve.title, "Halve the KV heads (8 → 4)");
    ASSERT_TRUE(halve.available);
    EXPECT_EQ(halve.total_before, 1ull << 30);
    EXPECT_EQ(halve.total_after, 1ull << 29);
    EXPECT_DOUBLE_EQ(halve.percent_change, -50);
    EXPECT_FALSE(halve.per_gpu) << "one GPU: the total is what changes";
    EXPECT_EQ(halve.scenario.arch.kv_heads, 4u);
    EXPECT_EQ(find(all, "mqa").total_after, 128ull << 20);
    EXPECT_DOUBLE_EQ(find(all, "fp8").percent_change, -50);
    EXPECT_EQ(find(all, "double_context").total_after, 2ull << 30);
    const WhatIf& tp = find(all, "tp2");
    ASSERT_TRUE(tp.available);
    EXPECT_EQ(tp.total_after, tp.total_before) << "tensor parallel splits the cache, it does not shrink it";
    EXPECT_EQ(tp.per_gpu_after, tp.per_gpu_before / 2);
    EXPECT_DOUBLE_EQ(tp.percent_change, -50);
    EXPECT_TRUE(tp.per_gpu);
}

TEST(WhatIfs, SayWhyOneDoesNotApply) {
    const auto mqa = what_ifs(lesson(1));
    EXPECT_FALSE(find(mqa, "halve_kv_heads").available);
    EXPECT_EQ(find(mqa, "halve_kv_heads").unavailable_reason, "1 KV head (MQA) is the fewest there can be");
    EXPECT_FALSE(find(mqa, "mqa").available);
    Scenario fp8 = lesson(8);
    fp8.kv_dtype = KvDtype::fp8_e4m3;
    EXPECT_EQ(find(what_ifs(fp8), "fp8").unavailable_reason, "the cache is already fp8");
    Scenario bad = lesson(5);  // 5 does not divide 32
    for (const auto& w : what_ifs(bad)) {
        EXPECT_FALSE(w.available) << w.id;
        EXPECT_NE(w.unavailable_reason.find("kv_heads"), std::string::npos) << w.unavailable_reason;
    }
    // Past the model's context window the change still applies, and says so.
    Scenario near_limit = catalog_scenario("llama-3-8b", 8192);
    const auto near_limit_ifs = what_ifs(near_limit);
    const WhatIf& longer = find(near_limit_ifs, "double_context");
    EXPECT_TRUE(longer.available);
    EXPECT_NE(longer.why.find("beyond the model's 8,192-token context window"), std::string::npos) << longer.why;
    // A deployment follows the GPU count of tensor parallel.
    Scenario deployed = lesson(8);
    deployed.deployment = Deployment{};
    deployed.deployment->gpu = *Catalog::builtin().find_gpu("h100-sxm");
    const auto deployed_ifs = what_ifs(deployed);
    const WhatIf& tp = find(deployed_ifs, "tp2");
    ASSERT_TRUE(tp.available) << tp.unavailable_reason;
    EXPECT_EQ(tp.scenario.deployment->gpu_count, 2u);
}

TEST(ContextWindow, TheEarliestTokensLeaveAndSlidingLayersSeeTheirWindow) {
    const Architecture gemma = Catalog::builtin().find_model("gemma-2-9b")->model.arch;  // 8,192 window, 4,096 sliding
    auto v = context_window_view(gemma, 10000);
    EXPECT_EQ(v.context_window, 8192u);
    EXPECT_EQ(v.in_window, 8192u);
    EXPECT_EQ(v.dropped, 1808u);
    ASSERT_EQ(v.rows.size(), 2u);
    EXPECT_EQ(v.rows[0].label, "21 full-attention layers");
    EXPECT_EQ(v.rows[0].visible, 8192u);
    EXPECT_EQ(v.rows[1].label, "21 sliding-window layers (window 4,096)");
    EXPECT_EQ(v.rows[1].visible, 4096u);
    auto short_talk = context_window_view(gemma, 1000);
    EXPECT_EQ(short_talk.dropped, 0u);
    EXPECT_EQ(short_talk.rows[1].visible, 1000u);
    Architecture unknown = teaching_model();
    unknown.max_positions = 0;  // no limit known: nothing leaves
    EXPECT_EQ(context_window_view(unknown, 1u << 20).dropped, 0u);
}

const Question& question(const std::vector<Question>& qs, const std::string& id) {
    for (const auto& q : qs)
        if (q.id == id) return q;
    throw std::runtime_error("no question " + id);
}

TEST(Quiz, QuestionsComeFromTheScenarioAndAnswersAreChecked) {
    const auto qs = questions_for(lesson(32));
    ASSERT_EQ(qs.size(), 5u);
    const Question& heads = question(qs, "other_kv_heads");
    EXPECT_EQ(heads.text, "With 16 KV heads instead of 32, and everything else as it is, how big is the cache?");
    EXPECT_DOUBLE_EQ(heads.answer, 2.0 * (1ull << 30));
    EXPECT_TRUE(check_answer(heads, "2 GiB").correct);
    EXPECT_TRUE(check_answer(heads, "2.15 GB").correct) << "decimal units within the tolerance";
    EXPECT_TRUE(check_answer(heads, "2147483648").correct);
    const AnswerCheck wrong = check_answer(heads, "4 GiB");
    EXPECT_TRUE(wrong.understood);
    EXPECT_FALSE(wrong.correct);
    EXPECT_EQ(wrong.message, "Not quite: you answered 4.00 GiB; the answer is 2.00 GiB (2,147,483,648 bytes).");
    EXPECT_NE(heads.worked.find("16 KV heads"), std::string::npos) << heads.worked;
    const AnswerCheck huge = check_answer(heads, "18446744073709551616");
    EXPECT_EQ(huge.message, "Not quite: you answered 16.0 EiB; the answer is 2.00 GiB (2,147,483,648 bytes).");
    const AnswerCheck garbled = check_answer(heads, "lots");
    EXPECT_FALSE(garbled.understood);
    EXPECT_EQ(garbled.message, "Type a size such as 1.5 GiB, 1.6 GB or 1610612736 (at most 2^64).");

    const Question& per_token = question(qs, "per_token");
    EXPECT_TRUE(check_answer(per_token, "512 KiB").correct);
    EXPECT_NE(per_token.worked.find("= 524,288 bytes."), std::string::npos) << per_token.worked;

    const Question& share = question(qs, "share_of_mha");  // MHA: asks about MQA
    EXPECT_TRUE(check_answer(share, "3.125%").correct);
    EXPECT_FALSE(check_answer(share, "25").correct);

    const Question& crossing = question(qs, "outgrows_weights");
    EXPECT_EQ(crossing.unit, AnswerUnit::tokens);
    EXPECT_GT(crossing.answer, 1000);
    // One rounding rule: the worked answer ends on the answer itself, the first whole token past the quotient.
    const std::string answer = format_count(static_cast<std::uint64_t>(crossing.answer));
    EXPECT_NE(crossing.worked.find("so the first whole token past it is " + answer + "."), std::string::npos)
        << crossing.worked;
    EXPECT_EQ(crossing.worked.find("≈"), std::string::npos) << crossing.worked;
    EXPECT_NE(crossing.text.find("(all of them, as stored)"), std::string::npos) << crossing.text;
    EXPECT_TRUE(check_answer(crossing, std::to_string(static_cast<long long>(crossing.answer * 1.03))).correct);
    // A count with a lone point and three digits (a German's thousands) is no whole number: said, never rounded and
    // marked wrong; a size with a unit may be approximate ("1.3 KiB").
    const AnswerCheck grouped = check_answer(crossing, "30.634");
    EXPECT_FALSE(grouped.understood);
    EXPECT_EQ(grouped.message,
              "'30.634' has a lone point, which is a decimal point here: for 30634 write 30634 or 30,634.");
    EXPECT_FALSE(check_answer(crossing, "30.000").understood);  // never read as 30 tokens
    EXPECT_FALSE(check_answer(heads, "131.072 bytes").understood);
    EXPECT_TRUE(check_answer(per_token, "511.9 KiB").understood);
    EXPECT_FALSE(check_answer(crossing, std::to_string(static_cast<long long>(crossing.answer * 1.5))).correct);

    EXPECT_TRUE(check_answer(question(qs, "double_context"), "8 GiB").correct);
}

TEST(WhatIf, TwoRowsThatMakeTheSameScenarioAreOneChange) {
    // 2 KV heads: halving them is MQA. The MQA row says so instead of repeating the same figures.
    const auto rows = what_ifs(lesson(2));
    const auto find = [&](const std::string& id) {
        return *std::find_if(rows.begin(), rows.end(), [&](const WhatIf& w) { return w.id == id; });
    };
    EXPECT_TRUE(find("halve_kv_heads").available);
    EXPECT_FALSE(find("mqa").available);
    EXPECT_EQ(find("mqa").unavailable_reason, "it is the same change as \"Halve the KV heads (2 → 1)\" for this model");
    // With 8 they differ, and both stand.
    const auto eight = what_ifs(lesson(8));
    EXPECT_TRUE(std::all_of(eight.begin(), eight.begin() + 2, [](const WhatIf& w) { return w.available; }));
}

TEST(Quiz, TheWorkedQuotientIsRoundedAndOneKvHeadIsSingular) {
    // Llama 3 70B's 131 GiB of weights against 327,680 bytes a token of context (batch 1, fp8 cache halves it): the
    // quotient with two decimals, rounded ("…813,802.0" was the tenths cut off), and "1 KV head".
    Scenario s = lesson(8);
    s.arch = testing::catalog_arch("llama-3-70b");
    s.workload.context_tokens = 8192;
    const auto qs = questions_for(s);
    const Question& crossing = question(qs, "outgrows_weights");
    const std::string::size_type eq = crossing.worked.find(" = ", crossing.worked.find(" ÷ "));
    ASSERT_NE(eq, std::string::npos) << crossing.worked;
    const std::string quotient = crossing.worked.substr(eq + 3, crossing.worked.find(" tokens", eq) - eq - 3);
    const std::string::size_type point = quotient.find('.');
    ASSERT_NE(point, std::string::npos) << quotient;
    EXPECT_EQ(quotient.size() - point, 3u) << quotient;  // two decimals
    // One KV head is one head.
    Scenario gqa = lesson(2);
    const auto heads = questions_for(gqa);
    EXPECT_EQ(question(heads, "other_kv_heads").text.find("With 1 KV head instead of 2"), 0u)
        << question(heads, "other_kv_heads").text;
}

TEST(Quiz, GqaAsksForItsShareAndInvalidInputsAskNothing) {
    const auto qs = questions_for(lesson(8));
    const Question& share = question(qs, "share_of_mha");
    EXPECT_NE(share.text.find("GQA-8"), std::string::npos) << share.text;
    EXPECT_TRUE(check_answer(share, "25%").correct);
    EXPECT_EQ(question(qs, "other_kv_heads").text.find("With 4 KV heads instead of 8"), 0u);
    EXPECT_TRUE(questions_for(lesson(5)).empty());
}

TEST(Quiz, ParsesTheWaysPeopleTypeNumbers) {
    EXPECT_EQ(parse_answer("1.5 GiB", AnswerUnit::bytes), 1.5 * (1ull << 30));
    EXPECT_EQ(parse_answer("1,073,741,824", AnswerUnit::bytes), 1073741824.0);
    EXPECT_EQ(parse_answer("12k", AnswerUnit::tokens), 12288.0);
    EXPECT_EQ(parse_answer("25 %", AnswerUnit::percent), 25.0);
    EXPECT_FALSE(parse_answer("-3 GiB", AnswerUnit::bytes).has_value());
    EXPECT_FALSE(parse_answer("3 parsecs", AnswerUnit::bytes).has_value());
    EXPECT_FALSE(parse_answer("", AnswerUnit::tokens).has_value());
    // Beyond 2^64 (or infinite once scaled) is a slip, not an answer (the units fuzzer found 1e308k).
    EXPECT_FALSE(parse_answer("1e308k", AnswerUnit::bytes).has_value());
    EXPECT_FALSE(parse_answer("5555555555555555555500000000000000000", AnswerUnit::tokens).has_value());
    EXPECT_FALSE(parse_answer("nan", AnswerUnit::percent).has_value());
    EXPECT_EQ(parse_answer("18446744073709551616", AnswerUnit::bytes), 18446744073709551616.0);  // 2^64 itself
}

TEST(Fields, KeysReadBackAsTheirMembers) {
    // The Learn page's links carry a factor's key; each must lead back to its own input.
    for (std::size_t i = 1; i < kFieldCount; ++i) {
        const auto f = static_cast<Field>(i);
        EXPECT_FALSE(to_string(f).empty());
        EXPECT_EQ(parse_field(to_string(f)), f) << to_string(f);
    }
    EXPECT_EQ(parse_field(""), Field::none);
    EXPECT_EQ(parse_field("num_hidden_layers"), Field::none);  // a config.json key is not an input
}

TEST(TrafficLesson, TheWorstCaseOverstatesWhatRequestsHoldStepByStep) {
    // The lesson's model (32 layers, 32 KV heads of 128, fp16: 512 KiB a token) with 8 sequences at 8k tokens;
    // requests of 2,000 prompt tokens (1,000 of them a shared system prompt) and 300 answer tokens.
    Scenario s = lesson();
    s.workload.batch = 8;
    const std::uint64_t per_token = 2ull * 32 * 32 * 128 * 2;
    const auto l = traffic_lesson(s, 2000, 300, 1000);
    ASSERT_TRUE(l) << l.error_text();
    ASSERT_EQ(l->steps.size(), 4u);
    EXPECT_EQ(l->steps[0].bytes, 8 * 8192 * per_token);              // every sequence at the full context
    EXPECT_EQ(l->steps[1].bytes, 8 * 2150 * per_token);              // a prompt and half the answer
    EXPECT_EQ(l->steps[2].bytes, 8 * 2160 * per_token);              // in whole blocks of 16 tokens
    EXPECT_EQ(l->steps[3].bytes, (8 * 2160 - 7 * 992) * per_token);  // the prefix's 62 full blocks kept once
    EXPECT_DOUBLE_EQ(l->steps[0].of_worst, 1.0);
    EXPECT_NEAR(l->steps[3].of_worst, (8.0 * 2160 - 7 * 992) / (8 * 8192), 1e-12);
    EXPECT_NE(l->steps[0].title.find("8 sequences at the full context (8,192 tokens)"), std::string::npos);
    // One sequence shares nothing; a prefix longer than the prompt is refused naming it.
    s.workload.batch = 1;
    EXPECT_EQ(traffic_lesson(s, 2000, 300, 1000)->steps.size(), 3u);
    EXPECT_FIELD_ERROR(traffic_lesson(s, 100, 10, 200), "shared prefix", "at most its 100 tokens");
}

}  // namespace
}  // namespace kvscope
