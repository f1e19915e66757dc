// Serving traffic (traffic.h, simulate.h): the invariants any serving system keeps, vLLM's rules where a user would see
// them (prefix hits, preemption, refusals), and the trace formats as their publishers write them.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>

#include <unistd.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/traffic.h"
#include "kvscope/calculator/traffic_answer.h"
#include "serving_testing.h"
#include "testing.h"

namespace kvscope {
namespace {

TEST(Simulate, LittlesLawHoldsAndEveryRequestIsServed) { expect_littles_law(setup_for(llama_on_h100())); }

TEST(Simulate, AloneARequestWaitsOnePrefillStepThenOneDecodeStepAToken) {
    const ServingSetup setup = setup_for(llama_on_h100());
    TrafficSpec t;
    t.requests = 10;
    t.rate = 0.001;  // one at a time: each alone in the engine
    t.input = {1000, 0};
    t.output = {50, 0};
    const auto requests = make_traffic(t);
    ASSERT_TRUE(requests);
    const SimulationReport r = simulate(*requests, setup);
    const StepCost& c = setup.cost;
    // The prefill step: the weights, the prompt's cache, the prompt's work and its attention over itself.
    const double prefill = step_seconds(c, c.weight_bytes + kv_read_bytes(c, 1000),
                                        1000 * c.flops_per_token + 1000 * (1001.0 / 2) * c.attention_flops_per_pair);
    // The API server's time first, then the prefill step.
    const double api = setup.settings.api_serial_s + setup.settings.api_latency_s;
    EXPECT_NEAR(r.ttft_ms.median, (api + prefill) * 1e3, 1e-9);
    EXPECT_NEAR(r.ttft_ms.p99, (api + prefill) * 1e3, 1e-9);
    // Each later token: one decode step over the context so far.
    double decode = 0;
    for (std::uint64_t context = 1001; context < 1050; ++context)
        decode += step_seconds(c, c.weight_bytes + kv_read_bytes(c, context),
                               c.flops_per_token + static_cast<double>(context) * c.attention_flops_per_pair);
    EXPECT_NEAR(r.tpot_ms.mean, decode / 49 * 1e3, 1e-9);
    EXPECT_EQ(r.max_running, 1u);
    EXPECT_EQ(r.preemptions, 0u);
    // A decode step of an 8B model in bf16 on an H100: ~16 GB at 80% of 3.35 TB/s, and 1 ms.
    EXPECT_GT(r.tpot_ms.mean, 6.0);
    EXPECT_LT(r.tpot_ms.mean, 9.0);
}

TEST(Simulate, TheSamePromptHitsEveryFullBlockButTheLast) {
    const Scenario s = llama_on_h100();
    std::vector<TrafficRequest> requests(50);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        requests[i].arrival_s = static_cast<double>(i);  // one after another
        requests[i].prompt_tokens = 1000;
        requests[i].output_tokens = 10;
        requests[i].spans = {{7, 1000}};
        requests[i].output_id = 1000 + i;
    }
    const SimulationReport on = simulate(requests, setup_for(s, true));
    // vLLM hits whole blocks of the prompt but the token it computes for the logits: floor(999/16) = 62 blocks.
    EXPECT_EQ(on.prefix_hit_tokens, 49u * 62 * 16);
    EXPECT_NEAR(on.prefix_hit_rate, 49.0 * 992 / (50 * 1000), 1e-12);
    const SimulationReport off = simulate(requests, setup_for(s, false));
    EXPECT_EQ(off.prefix_hit_tokens, 0u);
    EXPECT_LT(on.ttft_ms.median, off.ttft_ms.median);  // the hit skips most of the prefill
}

TEST(Simulate, ASharedPromptIsHeldOnceAndWhatItSavedIsCounted) {
    const Scenario s = llama_on_h100();
    // Eight requests at once, each a 1,600-token system prompt (100 full blocks of 16, the same content) and 64
    // tokens of its own.
    std::vector<TrafficRequest> requests(8);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        requests[i].prompt_tokens = 1664;
        requests[i].output_tokens = 50;
        requests[i].spans = {{7, 1600}, {100 + i, 64}};
        requests[i].output_id = 1000 + i;
    }
    const ServingSetup setup = setup_for(s, true);
    const SimulationReport on = simulate(requests, setup);
    // The first computes the prompt and caches its blocks as it is scheduled; the seven admitted in the same step hit
    // all 100: while the eight run, seven copies of 100 blocks are not held.
    EXPECT_EQ(on.prefix_hit_tokens, 7u * 1600);
    EXPECT_EQ(on.prefix_saved_peak_bytes_per_gpu, 7u * 100 * setup.settings.bytes_per_block);
    EXPECT_GT(on.prefix_saved_mean_bytes_per_gpu, 0u);
    EXPECT_LE(on.prefix_saved_mean_bytes_per_gpu, on.prefix_saved_peak_bytes_per_gpu);
    std::uint64_t widest_gap = 0;
    for (const TimelinePoint& p : on.timeline) {
        ASSERT_GE(p.kv_unshared_bytes, p.kv_used_bytes);
        widest_gap = std::max(widest_gap, p.kv_unshared_bytes - p.kv_used_bytes);
    }
    EXPECT_EQ(widest_gap, on.prefix_saved_peak_bytes_per_gpu);
    // The prefill skipped: the hit tokens' work at the rate the steps use.
    const StepCost& c = setup.cost;
    EXPECT_NEAR(on.prefix_saved_prefill_s,
                7.0 * 1600 * c.flops_per_token * static_cast<double>(c.stages) / (c.flops_per_s * c.compute_efficiency),
                1e-12);
    // Without prefix caching nothing is shared or skipped, and the two lines are one.
    const SimulationReport off = simulate(requests, setup_for(s, false));
    EXPECT_EQ(off.prefix_saved_peak_bytes_per_gpu, 0u);
    EXPECT_EQ(off.prefix_saved_prefill_s, 0.0);
    for (const TimelinePoint& p : off.timeline) EXPECT_EQ(p.kv_unshared_bytes, p.kv_used_bytes);
}

TEST(Simulate, ALaterTurnHitsTheWholeConversationBeforeIt) {
    TrafficSpec t;
    t.requests = 2;
    t.turns = 2;
    t.input = {480, 0};
    t.output = {160, 0};
    const auto requests = make_traffic(t);
    ASSERT_TRUE(requests);
    ASSERT_EQ(requests->size(), 2u);
    EXPECT_EQ((*requests)[1].follows, 0u);
    EXPECT_EQ((*requests)[1].prompt_tokens, 480u + 160 + 480);
    EXPECT_EQ(shared_tokens((*requests)[0].spans, (*requests)[1].spans), 480u);
    const SimulationReport r = simulate(*requests, setup_for(llama_on_h100()));
    // The second prompt finds the first prompt and its answer as far as their cache was computed: the last answer
    // token is sampled but never fed back, so 639 tokens were computed and 39 blocks of 16 are full and cached.
    EXPECT_EQ(r.prefix_hit_tokens, 624u);
    EXPECT_EQ(r.requests, 2u);
}

TEST(Simulate, ASmallCachePreemptsButNeverHoldsMoreThanItsBlocksAndServesEveryone) {
    ServingSetup setup = setup_for(llama_on_h100());
    setup.settings.kv_blocks = 401;  // 400 usable blocks of 16 tokens
    const SimulationReport r = simulate(all_at_once(300), setup);
    EXPECT_EQ(r.kv_budget_blocks, 400u);
    EXPECT_LE(r.kv_peak_blocks, 400u);
    for (const TimelinePoint& p : r.timeline) EXPECT_LE(p.kv_used_bytes, 400 * setup.settings.bytes_per_block);
    EXPECT_GT(r.preemptions, 0u);
    EXPECT_EQ(r.requests + r.refused, 300u);
    EXPECT_EQ(r.refused, 0u);  // each fits the cache alone
}

TEST(Simulate, ASlidingWindowModelHoldsOnlyItsWindowsBlocks) {
    // gpt-oss-20b: 12 layers of a 128-token window beside 12 of full attention, one vLLM group of each.
    const ServingSetup setup = setup_for(on_h100("gpt-oss-20b"));
    const ServingSettings& st = setup.settings;
    ASSERT_EQ(st.groups.full, 1u);
    ASSERT_EQ(st.groups.sliding, 1u);
    ASSERT_EQ(st.groups.window, 128u);
    ASSERT_EQ(st.block_size, 16u);
    EXPECT_TRUE(std::none_of(setup.warnings.begin(), setup.warnings.end(),
                             [](const std::string& w) { return w.find("full attention") != std::string::npos; }));
    // One request of 8,000 + 100 tokens alone. At its last step it has computed 8,098 tokens and needs 8,099: the
    // full group holds ceil(8,099 / 16) blocks, the sliding group those after the (8,098 + 1 − 128) / 16 it freed.
    const std::vector<TrafficRequest> requests{{0, 8000, 100, {{1, 8000}}, 2}};
    const SimulationReport r = simulate(requests, setup);
    ASSERT_EQ(r.requests, 1u);
    const std::uint64_t full = (8099 + 15) / 16, sliding = full - (8098 + 1 - 128) / 16;  // 507 and 9
    EXPECT_EQ(r.timeline.back().kv_used_bytes, (full + sliding) * st.bytes_per_block);
    // The worst case is the hybrid layout's: a full group's blocks and the window's, not two full groups'.
    EXPECT_EQ(r.kv_worst_case_bytes_per_gpu, st.worst_case_bytes_per_sequence);
    // (the window's 8 blocks and the one it starts inside)
    EXPECT_EQ(st.worst_case_bytes_per_sequence, (8192 / 16 + 128 / 16 + 1) * st.bytes_per_block);
}

TEST(Simulate, ASlidingHitNeedsTheWindowsBlocksStillCached) {
    ServingSetup setup = setup_for(on_h100("gpt-oss-20b"));
    setup.settings.kv_blocks = 600;  // 599 usable
    // A: 2,048 tokens of a prompt and 2 of answer. Its second step frees the sliding blocks wholly before its window
    // ((2,048 + 1 − 128) / 16 = 120), cached still, at the tail of the free queue; then its 129 + 9 at its end.
    // B, later: the first 1,000 tokens of A's prompt and 24 of its own: its full hit is 62 blocks, and the sliding
    // group needs the 8 blocks before the hit's end (ceil(127 / 16)) still cached.
    const TrafficRequest a{0, 2048, 2, {{7, 2048}}, 1};
    const TrafficRequest b{200, 1024, 2, {{7, 1000}, {9, 24}}, 3};
    const SimulationReport kept = simulate({a, b}, setup);
    EXPECT_EQ(kept.prefix_hit_tokens, 62u * 16);
    // C between them takes every block never used (599 − 2 × 129) and the 120 freed sliding blocks, and 3 of A's
    // full ones (its last): 2 × ceil(3,700 / 16) = 464. B's full blocks are still cached; its window's are not, nor
    // any before them: no hit, where paging every layer as full attention would have found 992 tokens.
    const TrafficRequest c{100, 3700, 1, {{11, 3700}}, 5};
    static_assert(2 * ((3700 + 15) / 16) == 599 - 2 * 129 + 120 + 3);
    const SimulationReport evicted = simulate({a, c, b}, setup);
    EXPECT_EQ(evicted.requests, 3u);
    EXPECT_EQ(evicted.prefix_hit_tokens, 0u);
}

TEST(Simulate, AHitAtTheHeadOfTheFreeQueueIsNotTakenAsANewBlock) {
    ServingSetup setup = setup_for(on_h100("gpt-oss-20b"));
    setup.settings.kv_blocks = 259;  // 258 usable: A takes them all
    // A: 2,048 + 2 tokens. Its second step frees the 120 sliding blocks before its window, the last first, so once it
    // is done the free queue starts with them (positions 119 down to 0). B shares A's first 1,900 tokens: its hit is
    // 118 blocks in each group, the sliding group's last 8 (positions 110–117) among the first in the queue; its own
    // 100 tokens take 7 new blocks in each group from the head of the queue, which must not be those hits.
    const TrafficRequest a{0, 2048, 2, {{7, 2048}}, 1};
    const TrafficRequest b{200, 2000, 2, {{7, 1900}, {9, 100}}, 3};
    const SimulationReport r = simulate({a, b}, setup);
    EXPECT_EQ(r.requests, 2u);
    EXPECT_EQ(r.prefix_hit_tokens, 118u * 16);
    // One request at a time shares nothing: a hit taken as a new block too would part the two counts.
    EXPECT_EQ(r.prefix_saved_peak_bytes_per_gpu, 0u);
    EXPECT_LE(r.kv_peak_blocks, 258u);
    for (const TimelinePoint& p : r.timeline) EXPECT_EQ(p.kv_unshared_bytes, p.kv_used_bytes);
}

TEST(Simulate, ARequestWhosePrefillOutgrowsThePoolIsRefusedBeforeItStarts) {
    // gpt-oss-20b with 599 blocks: 8,100 tokens end with 507 + 9 blocks, but its prompt in one 8,192-token chunk
    // takes 500 in each group before the window frees any: it could never run, and is refused at once.
    ServingSetup setup = setup_for(on_h100("gpt-oss-20b"));
    setup.settings.kv_blocks = 600;
    const SimulationReport r = simulate({{0, 8000, 100, {{1, 8000}}, 2}}, setup);
    EXPECT_EQ(r.refused, 1u);
    EXPECT_EQ(r.steps, 0u);
}

TEST(Simulate, ARecurrentModelKeepsItsStateBlocksAndNoPrefixCache) {
    // Granite 4.0 H Tiny: Mamba-2 layers beside full attention; vLLM raises the attention block so that a page holds
    // a state, and turns prefix caching off.
    const ServingSetup setup = setup_for(on_h100("granite-4.0-h-tiny"), true);
    const ServingSettings& st = setup.settings;
    ASSERT_GT(st.groups.state, 0u);
    EXPECT_GT(st.block_size, 16u);
    EXPECT_TRUE(std::any_of(setup.notes.begin(), setup.notes.end(),
                            [](const std::string& n) { return n.find("prefix caching off") != std::string::npos; }));
    std::vector<TrafficRequest> requests(3);
    for (std::size_t i = 0; i < requests.size(); ++i)
        requests[i] = {100.0 * static_cast<double>(i), 3000, 10, {{7, 3000}}, 10 + i};
    const SimulationReport r = simulate(requests, setup);
    ASSERT_EQ(r.requests, 3u);
    EXPECT_EQ(r.prefix_hit_tokens, 0u);  // the same prompt three times: recomputed each time
    // Alone at its last step: each full group a block per block_size of 3,009 tokens, each state group its one.
    const std::uint64_t blocks = st.groups.full * ((3009 + st.block_size - 1) / st.block_size) + st.groups.state;
    EXPECT_EQ(r.timeline.back().kv_used_bytes, blocks * st.bytes_per_block);
}

TEST(Simulate, RequestsLongerThanTheContextAreRefusedAsVllmRefusesThem) {
    const ServingSetup setup = setup_for(llama_on_h100());  // max_model_len 8192
    std::vector<TrafficRequest> requests(2);
    requests[0] = {0, 8000, 100, {{1, 8000}}, 2};
    requests[1] = {0, 9000, 100, {{3, 9000}}, 4};
    const SimulationReport r = simulate(requests, setup);
    EXPECT_EQ(r.requests, 1u);
    EXPECT_EQ(r.refused, 1u);
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_NE(r.warnings.front().find("1 request refused"), std::string::npos);
}

TEST(Simulate, TheSameSeedGivesTheSameAnswer) {
    const ServingSetup setup = setup_for(llama_on_h100());
    TrafficSpec t;
    t.requests = 500;
    t.rate = 15;
    t.input = {800, 0.5};
    t.output = {200, 0.5};
    t.seed = 11;
    const auto a = make_traffic(t), b = make_traffic(t);
    t.seed = 12;
    const auto c = make_traffic(t);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(simulation_json(simulate(*a, setup)).dump(), simulation_json(simulate(*b, setup)).dump());
    EXPECT_NE(simulation_json(simulate(*a, setup)).dump(), simulation_json(simulate(*c, setup)).dump());
    // The lengths as vllm bench serve's random range: uniform within [N(1−R), N(1+R)], all of them taken.
    std::uint64_t lo = ~0ull, hi = 0;
    for (const auto& r : *a) {
        lo = std::min(lo, r.prompt_tokens);
        hi = std::max(hi, r.prompt_tokens);
    }
    EXPECT_GE(lo, 400u);
    EXPECT_LE(hi, 1200u);
    EXPECT_LT(lo, 420u);
    EXPECT_GT(hi, 1180u);
    // The first numbers of splitmix64 from seed 0 (the published reference sequence).
    SplitMix64 rng(0);
    EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
    EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
}

TEST(Simulate, TheHighestRateMeetingATargetMeetsItAndAFasterOneDoesNot) {
    const ServingSetup setup = setup_for(llama_on_h100());
    TrafficSpec t;
    t.requests = 400;
    t.input = {1000, 0.5};
    t.output = {150, 0.5};
    const SloTarget target{std::nullopt, 12.0, 90};
    const auto best = max_rate_meeting_slo(t, setup.settings, setup.cost, target);
    ASSERT_TRUE(best) << best.error_text();
    ASSERT_TRUE(best->has_value());
    const auto at = [&](double rate) {
        TrafficSpec u = t;
        u.rate = rate;
        return simulate(*make_traffic(u), setup).tpot_ms.p90;
    };
    EXPECT_LE(at(**best), 12.0);
    EXPECT_GT(at(**best * 1.2), 12.0);
    EXPECT_FALSE(max_rate_meeting_slo(t, setup.settings, setup.cost, {}));  // no target
}

TEST(Simulate, ADecodeStepMeasuredOnTheGpuTimesTheStepsAndSaysSo) {
    const Scenario s = llama_on_h100();
    // probe --step on this H100: 10 ms a step where the floor on the 3,000 GB/s it measured was 8 ms.
    MeasuredStep m;
    m.step_ms = 10;
    m.predicted_step_ms = 8;
    m.ceiling_gbps = 3000;
    m.device = "NVIDIA H100 80GB HBM3";
    m.measured_on = "2026-12-01";
    auto measured = serving_setup(s, true, 0, m);
    ASSERT_TRUE(measured) << measured.error_text();
    EXPECT_EQ(measured->step_time_source, "measured");
    EXPECT_NEAR(measured->cost.bandwidth_efficiency, 3000e9 * 0.8 / 3.35e12, 1e-12);
    EXPECT_TRUE(std::any_of(measured->notes.begin(), measured->notes.end(), [](const std::string& n) {
        return n.find("probe --step on NVIDIA H100 80GB HBM3, 2026-12-01") != std::string::npos;
    }));
    TrafficSpec t;
    t.requests = 5;
    t.rate = 0.001;
    t.input = {1000, 0};
    t.output = {50, 0};
    TrafficQuestion q;
    q.spec = t;
    q.measured = m;
    const auto a = answer_traffic(s, q);
    ASSERT_TRUE(a) << a.error_text();
    EXPECT_EQ(a->report.step_time_source, "measured");
    EXPECT_EQ(simulation_json(a->report).find("step_time_source")->as_string(), "measured");
    // A slower step than the roofline's 80%: each token takes longer.
    q.measured.reset();
    const auto roofline = answer_traffic(s, q);
    ASSERT_TRUE(roofline);
    EXPECT_EQ(roofline->report.step_time_source, "roofline");
    EXPECT_GT(a->report.tpot_ms.mean, roofline->report.tpot_ms.mean);
}

TEST(Simulate, APlanGivesEachLayoutTheFewestReplicasThatMeetTheTarget) {
    Scenario s = llama_on_h100();
    auto plan = plan_deployments(s.arch, s.kv_dtype, s.workload, *s.deployment, {.gpus_per_node = 2, .max_pp = 1});
    ASSERT_TRUE(plan) << plan.error_text();
    TrafficQuestion q;
    q.spec.requests = 600;
    q.spec.rate = 12;  // more than one H100 serves of these within 25 ms a token
    q.spec.input = {2000, 0.5};
    q.spec.output = {200, 0.5};
    q.target.tpot_ms = 25;
    q.target.percentile = 90;
    const auto served = serve_plan(s, *plan, q);
    ASSERT_TRUE(served) << served.error_text();
    ASSERT_EQ(served->size(), 2u);  // TP 1 and TP 2, each in the replicas it needs
    for (const LayoutService& l : *served) {
        EXPECT_TRUE(l.meets);
        EXPECT_LE(l.tpot_ms, 25);
        EXPECT_EQ(l.gpus, l.tp * l.pp * l.replicas);
        EXPECT_NEAR(l.request_throughput, 12, 1.5);  // every request served, at the rate it came
        // One replica fewer misses it: the fewest.
        if (l.replicas > 1) {
            Plan one;
            PlanOption o;
            o.tp = l.tp;
            o.pp = l.pp;
            o.fits = true;
            one.options.push_back(o);
            const auto fewer = serve_plan(s, one, q, l.replicas - 1);
            ASSERT_TRUE(fewer);
            EXPECT_FALSE(fewer->front().meets) << "TP " << l.tp << " with " << l.replicas - 1 << " replicas";
        }
    }
    EXPECT_LE(served->front().gpus, served->back().gpus);  // fewest GPUs first
    // A plan stops when asked to (the window's Cancel), and says so; the progress it gives is the layouts begun.
    std::vector<double> told;
    EXPECT_FIELD_ERROR(serve_plan(s, *plan, q, 64,
                                  [&told](double f) {
                                      told.push_back(f);
                                      return told.size() < 3;
                                  }),
                       "simulate", "cancelled");
    ASSERT_FALSE(told.empty());
    EXPECT_EQ(told.front(), 0.0);  // the first layout under way: none finished
    EXPECT_LT(told.back(), 1.0);
    // Without a rate the question is refused naming what is missing.
    q.spec.rate.reset();
    EXPECT_FIELD_ERROR(serve_plan(s, *plan, q), "--rate", "not all at once");
}

TEST(Simulate, APrefixRouterKeepsTheConversationsOfOneSystemPromptTogether) {
    // Twelve conversations over four system prompts (1, 2, 3, 4, 1, 2, …).
    std::vector<std::uint64_t> prompt(12);
    for (std::size_t k = 0; k < prompt.size(); ++k) prompt[k] = 1 + k % 4;
    const auto rr = route_conversations(prompt, 3, Router::round_robin);
    for (std::size_t k = 0; k < prompt.size(); ++k) EXPECT_EQ(rr[k], k % 3);
    // As many groups as replicas or more: a group a replica, the largest first to the least loaded (ties: the first);
    // the fourth would overload replica 0 (6 of 12, past the even share of 4), so its conversations are dealt in turn.
    const auto by_prompt = route_conversations(prompt, 3, Router::prefix);
    const std::vector<std::uint64_t> shared_out{0, 1, 2, 0, 0, 1, 2, 1, 0, 1, 2, 2};
    EXPECT_EQ(by_prompt, shared_out);
    // Five equal groups on four replicas: none holds more than its even share (5 of 20, where whole groups gave 10).
    std::vector<std::uint64_t> five(20);
    for (std::size_t k = 0; k < five.size(); ++k) five[k] = 1 + k % 5;
    const auto spilled = route_conversations(five, 4, Router::prefix);
    for (std::uint64_t r = 0; r < 4; ++r) EXPECT_EQ(std::count(spilled.begin(), spilled.end(), r), 5) << r;
    // Fewer groups than replicas: each group its own replicas (r mod G), its conversations among them in turn.
    std::vector<std::uint64_t> two(10);
    for (std::size_t k = 0; k < two.size(); ++k) two[k] = 7 + k % 2;
    const auto spread = route_conversations(two, 5, Router::prefix);
    const std::vector<std::uint64_t> expected{0, 1, 2, 3, 4, 1, 0, 3, 2, 1};
    EXPECT_EQ(spread, expected);
    // No system prompt: one group, so in turn.
    EXPECT_EQ(route_conversations(std::vector<std::uint64_t>(7, kNoRequest), 3, Router::prefix),
              route_conversations(std::vector<std::uint64_t>(7, kNoRequest), 3, Router::round_robin));

    // Served: four replicas of one H100 each (a target none meets, so all four are used), three long system prompts.
    Scenario s = llama_on_h100();
    Plan one;
    one.options.push_back(PlanOption{});
    one.options.back().fits = true;
    TrafficQuestion q;
    q.spec.requests = 200;
    q.spec.rate = 8;
    q.spec.input = {200, 0};
    q.spec.output = {20, 0};
    q.spec.shared_prefix = 4000;
    q.spec.prefix_groups = 3;
    q.target.tpot_ms = 0.001;
    const auto in_turn = serve_plan(s, one, q, 4);
    q.router = Router::prefix;
    const auto together = serve_plan(s, one, q, 4);
    ASSERT_TRUE(in_turn && together);
    ASSERT_EQ(in_turn->front().replicas, 4u);
    ASSERT_EQ(together->front().replicas, 4u);
    // In turn every replica computes every prompt once (12 misses); together the first prompt has two replicas and
    // the others one each (4 misses): 8 × 4,000 tokens more found cached (250 whole blocks each; the request's own
    // 200 tokens are shared by none).
    EXPECT_EQ(together->front().prefix_hit_tokens - in_turn->front().prefix_hit_tokens, 8u * 4000);
    const auto says = [](const LayoutService& l, const std::string& text) {
        return std::any_of(l.warnings.begin(), l.warnings.end(),
                           [&](const std::string& w) { return w.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(says(together->front(), "the prefix router routes by the prompts alone"));
    EXPECT_FALSE(says(in_turn->front(), "prefix router"));
}

TEST(Simulate, ARateIsRequestsASecondWithTurnsTooAndRefusedRequestsMeetNoTarget) {
    const ServingSetup setup = setup_for(llama_on_h100());
    TrafficSpec t;
    t.requests = 800;
    t.rate = 4;
    t.turns = 4;
    t.input = {300, 0};
    t.output = {50, 0};
    const auto requests = make_traffic(t);
    ASSERT_TRUE(requests);
    // Conversations start at 1 a second, so the requests come at about 4 a second.
    EXPECT_NEAR(requests->back().arrival_s, 800.0 / 4, 30);
    // Every request longer than the context: refused, and no rate meets a target with them.
    TrafficSpec too_long;
    too_long.requests = 20;
    too_long.input = {9000, 0};
    const auto none = max_rate_meeting_slo(too_long, setup.settings, setup.cost, {.ttft_ms = 500});
    ASSERT_TRUE(none) << none.error_text();
    EXPECT_FALSE(none->has_value());
    // A target every request at once meets: any rate.
    TrafficSpec light;
    light.requests = 4;
    const auto any = max_rate_meeting_slo(light, setup.settings, setup.cost, {.ttft_ms = 1e7});
    ASSERT_TRUE(any && any->has_value());
    EXPECT_TRUE(std::isinf(**any));
    EXPECT_EQ(slo_rows({.ttft_ms = 1e7}, *any).back().second, "any: even every request at once meets it");
    // An arrival that is no time is refused, not simulated forever.
    std::vector<TrafficRequest> bad(1);
    bad[0] = {std::numeric_limits<double>::quiet_NaN(), 10, 10, {{1, 10}}, 2};
    EXPECT_FIELD_ERROR(simulate_serving(bad, setup.settings, setup.cost), "--trace", "arrival time");
    EXPECT_FIELD_ERROR(make_traffic({.requests = 10, .turns = 5000}), "--turns", "at most 1000 turns");
}

TEST(Simulate, EverySimulationMemberIsDeclaredOnce) {
    const SimulationReport r = simulate(*make_traffic({}), setup_for(llama_on_h100()));
    testing::expect_declared_once(r, simulation_json(r), "SimulationReport");
}

TEST(Simulate, BadTrafficIsRefusedNamingTheOption) {
    TrafficSpec t;
    t.rate = 0;
    EXPECT_FIELD_ERROR(make_traffic(t), "--rate", "above 0");
    t = {};
    t.input.range = 1.5;
    EXPECT_FIELD_ERROR(make_traffic(t), "--input-range", "from 0 to 1");
    t = {};
    t.requests = 0;
    EXPECT_FIELD_ERROR(make_traffic(t), "--requests", "at least 1");
    Scenario s = llama_on_h100();
    s.deployment->engine = Engine::tensorrt_llm;
    EXPECT_FIELD_ERROR(serving_setup(s, true, 0), "--engine", "not simulated yet (use vllm or sglang)");
}

TEST(Traces, AzuresCsvAsPublished) {
    // AzurePublicDataset data/AzureLLMInferenceTrace_conv.csv, its first lines; and a 2024 line with its offset.
    const auto r = read_trace(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:50.9951690,396,109\n"
        "2023-11-16 18:15:51.2224670,879,55\n",
        "conv.csv");
    ASSERT_TRUE(r) << r.error_text();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].arrival_s, 0.0);
    EXPECT_NEAR((*r)[1].arrival_s, 4.314579, 1e-6);
    EXPECT_NEAR((*r)[2].arrival_s, 4.541877, 1e-6);
    EXPECT_EQ((*r)[2].prompt_tokens, 879u);
    EXPECT_EQ((*r)[2].output_tokens, 55u);
    EXPECT_EQ(shared_tokens((*r)[0].spans, (*r)[1].spans), 0u);
    const auto y2024 = read_trace(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-12 00:00:00+00:00,10,5\n2024-05-12 "
        "00:00:00.001163+00:00,20,6\n",
        "week.csv");
    ASSERT_TRUE(y2024) << y2024.error_text();
    EXPECT_NEAR((*y2024)[1].arrival_s, 0.001163, 1e-9);
    EXPECT_FIELD_ERROR(read_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,12x,4\n", "bad.csv"),
                       "--trace", "bad.csv:2: ContextTokens: '12x' is not a whole number");
    EXPECT_FIELD_ERROR(read_trace("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,12,4\n", "bad.csv"), "--trace",
                       "bad.csv:2: TIMESTAMP");
}

TEST(Traces, ADescribedTrafficDrawsItsLengthsFromATrace) {
    // Azure's first lines as a file in a folder with a space and an accent (its own per process: ctest runs the
    // locales' copies at once); one request with no answer, which is no length to draw.
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope lengths é " + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    const std::string path = (folder / "conv.csv").string();
    std::ofstream(path) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                           "2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.2224670,879,0\n";
    TrafficSpec t;
    t.requests = 400;
    t.rate = 10;
    t.shared_prefix = 100;
    t.lengths_from = path;
    EXPECT_FIELD_ERROR(make_traffic(t), "--lengths-from", "not read");  // fill_lengths first
    const auto filled = fill_lengths(t);
    ASSERT_TRUE(filled) << filled.error_text();
    ASSERT_EQ(filled->lengths.size(), 2u);
    const auto requests = make_traffic(*filled);
    ASSERT_TRUE(requests) << requests.error_text();
    std::size_t first = 0;
    for (const TrafficRequest& r : *requests) {
        // The system prompt described, then one of the trace's prompts and its answer.
        ASSERT_EQ(r.spans.size(), 2u);
        EXPECT_EQ(r.spans[0].tokens, 100u);
        const LengthPair pair{r.spans[1].tokens, r.output_tokens};
        EXPECT_TRUE((pair.prompt == 374 && pair.output == 44) || (pair.prompt == 396 && pair.output == 109));
        first += pair.prompt == 374 ? 1 : 0;
    }
    EXPECT_GT(first, 150u);  // both drawn, about equally
    EXPECT_LT(first, 250u);
    const auto again = make_traffic(*filled);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->back().prompt_tokens, requests->back().prompt_tokens);  // the seed fixes the draw
    // Missing, unreadable, or with no request that has an answer: said under --lengths-from.
    t.lengths_from = (folder / "none.csv").string();
    EXPECT_FIELD_ERROR(fill_lengths(t), "--lengths-from", "none.csv");
    std::ofstream(folder / "failed.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,374,0\n";
    t.lengths_from = (folder / "failed.csv").string();
    EXPECT_FIELD_ERROR(fill_lengths(t), "--lengths-from", "failed.csv: holds no request to serve");
    std::filesystem::remove_all(folder);
}

TEST(Traces, MooncakesJsonLinesShareTheirEqualBlocks) {
    // kvcache-ai/Mooncake FAST25-release/traces/conversation_trace.jsonl, its first two lines.
    const auto r = read_trace(
        R"({"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}
{"timestamp": 3000, "input_length": 7322, "output_length": 490, "hash_ids": [0, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27]}
)",
        "mooncake.jsonl");
    ASSERT_TRUE(r) << r.error_text();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[1].arrival_s, 3.0);
    EXPECT_EQ((*r)[0].spans.size(), 14u);
    EXPECT_EQ((*r)[0].spans.back().tokens, 6758u - 13 * 512);
    EXPECT_EQ(shared_tokens((*r)[0].spans, (*r)[1].spans), 512u);  // hash id 0: the first block
    EXPECT_FIELD_ERROR(
        read_trace(R"({"timestamp": 0, "input_length": 2000, "output_length": 5, "hash_ids": [1, 2]})", "m.jsonl"),
        "--trace", "m.jsonl:1: hash_ids: 2 ids for 2000 tokens");
    EXPECT_FIELD_ERROR(read_trace("{\"timestamp\": 0}\n", "m.jsonl"), "--trace", "m.jsonl:1: input_length: missing");
}

TEST(Traces, VllmsCustomJsonLinesAreEstimatedFromTheirTextAndShareWhatTheyBeginWith) {
    // vllm/benchmarks/datasets.py CustomDataset's own example lines, then two prompts that begin with the same 400
    // characters (a system prompt) and go on apart, and one without output_tokens.
    const std::string system(400, 's');
    const std::string text = R"({"prompt": "What is the capital of India?", "output_tokens": 10})"
                             "\n"
                             R"({"prompt": "What is the capital of Iran?", "output_tokens": 1520})"
                             "\n{\"prompt\": \"" +
                             system + std::string(200, 'a') + "\", \"output_tokens\": 5}\n{\"prompt\": \"" + system +
                             std::string(100, 'b') + "\"}\n{\"prompt\": \"日本の首都は\", \"output_tokens\": 3}\n";
    std::vector<std::string> warnings;
    const auto r = read_trace(text, "custom data.jsonl", &warnings);
    ASSERT_TRUE(r) << r.error_text();
    ASSERT_EQ(r->size(), 5u);
    EXPECT_EQ((*r)[0].prompt_tokens, 8u);  // 29 ASCII characters: a token per 4, rounded up
    EXPECT_EQ((*r)[0].output_tokens, 10u);
    EXPECT_EQ((*r)[1].output_tokens, 1520u);
    EXPECT_EQ((*r)[2].prompt_tokens, 150u);  // 600 characters
    EXPECT_EQ((*r)[3].output_tokens, 256u);  // vllm bench serve's --custom-output-len default
    EXPECT_EQ((*r)[4].prompt_tokens, 6u);    // six characters outside ASCII: a token each
    // The 400 shared characters (6 pieces of 64 and 16 of the next) are one prefix of 96 tokens; no more.
    EXPECT_EQ(shared_tokens((*r)[2].spans, (*r)[3].spans), 6u * 16);
    EXPECT_EQ(shared_tokens((*r)[0].spans, (*r)[1].spans), 0u);
    for (const auto& q : *r) EXPECT_EQ(q.arrival_s, 0.0);  // no times: all at once
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_NE(warnings[0].find("not exact: custom data.jsonl holds prompts as text"), std::string::npos);
    EXPECT_NE(warnings[1].find("1 of its prompts gives no output_tokens: 256 tokens each"), std::string::npos);
    EXPECT_FIELD_ERROR(read_trace("{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n", "c.jsonl"), "--trace",
                       "c.jsonl:2: prompt: missing");
    EXPECT_FIELD_ERROR(read_trace("{\"prompt\": \"a\", \"output_tokens\": \"many\"}\n", "c.jsonl"), "--trace",
                       "c.jsonl:1: output_tokens: is not a whole number above 0");
    EXPECT_FIELD_ERROR(read_trace("{\"prompt\": \"\"}\n", "c.jsonl"), "--trace", "c.jsonl:1: prompt: is empty");
}

TEST(Traces, QuotedHeadersAByteOrderMarkAndNumbersOutOfRangeAreReadOrSaid) {
    const auto quoted = read_trace(
        "\xEF\xBB\xBF\"TIMESTAMP\",\"ContextTokens\",\"GeneratedTokens\"\r\n"
        "\"2023-11-16 18:15:46.6805900\",374,44\r\n",
        "quoted.csv");
    ASSERT_TRUE(quoted) << quoted.error_text();
    EXPECT_EQ(quoted->front().prompt_tokens, 374u);
    EXPECT_FIELD_ERROR(
        read_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,99999999999999999999,4\n", "big.csv"),
        "--trace", "big.csv:2: ContextTokens: '99999999999999999999' is too large");
    EXPECT_FIELD_ERROR(read_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 25:15:46,9,4\n", "hour.csv"),
                       "--trace", "hour.csv:2: TIMESTAMP");
    EXPECT_FIELD_ERROR(read_trace(R"({"timestamp": -1e999, "input_length": 10, "output_length": 10})", "inf.jsonl"),
                       "--trace", "inf.jsonl:1: timestamp");
}

TEST(Traces, BurstGptsCsvLeavesOutFailedRequests) {
    // HPMLL/BurstGPT README's schema; a failed request has 0 response tokens.
    const auto r = read_trace(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "45,ChatGPT,1087,0,1087,Conversation log\n"
        "118,GPT-4,417,276,693,Conversation log\n",
        "burst.csv");
    ASSERT_TRUE(r) << r.error_text();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[1].arrival_s, 113.0);
    EXPECT_EQ((*r)[1].prompt_tokens, 417u);
    EXPECT_FIELD_ERROR(read_trace("hello\n", "x.txt"), "--trace", "x.txt:1: not a trace");
    EXPECT_FIELD_ERROR(read_trace_file("/nonexistent/trace.csv"), "--trace", "cannot be opened");
}

}  // namespace
}  // namespace kvscope
