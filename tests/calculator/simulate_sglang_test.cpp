// SGLang's scheduler (simulate_sglang.cpp): the invariants any serving system keeps, and SGLang's rules where a user
// would see them — its settings for the GPU, token-granular prefix hits, prefill batches that pause decoding,
// retraction when the tokens run out, the radix cache's least recently used eviction.
#include <algorithm>

#include "kvscope/calculator/engine.h"
#include "kvscope/calculator/simulation_report.h"
#include "kvscope/calculator/traffic.h"
#include "serving_testing.h"
#include "testing.h"

namespace kvscope {
namespace {

Scenario sglang(Scenario s) {
    s.deployment->engine = Engine::sglang;
    return s;
}

TEST(SglangSimulate, ItsSettingsAreSglangsDefaultsForTheGpu) {
    const ServingSetup h100 = setup_for(sglang(llama_on_h100()));
    const ServingSettings& st = h100.settings;
    EXPECT_EQ(st.engine, Engine::sglang);
    EXPECT_EQ(st.block_size, 1u);                 // page size 1: the pool counts tokens
    EXPECT_EQ(st.max_num_batched_tokens, 8192u);  // chunked_prefill_size for 60–160 GiB
    // max_running_requests: the request pool (pool tokens / context × 512, within 2,048–4,096), under half the pool.
    EXPECT_EQ(st.max_num_seqs, std::min<std::uint64_t>(std::clamp<std::uint64_t>(st.kv_blocks * 512 / 8192, 2048, 4096),
                                                       st.kv_blocks / 2));
    // The pool: the fit's SGLang budget over one token of every layer (128 KiB for Llama 3.1 8B in bf16).
    EXPECT_EQ(st.bytes_per_block, 128u * 1024);
    ASSERT_TRUE(std::any_of(h100.notes.begin(), h100.notes.end(),
                            [](const std::string& n) { return n.find("SGLang's scheduler") != std::string::npos; }));
    Scenario l4 = sglang(llama_on_h100());
    l4.deployment->gpu = *Catalog::builtin().find_gpu("l4");
    EXPECT_EQ(setup_for(l4).settings.max_num_batched_tokens, 2048u);  // under 35 GiB
    Scenario b200 = sglang(llama_on_h100());
    b200.deployment->gpu = *Catalog::builtin().find_gpu("b200");
    EXPECT_EQ(setup_for(b200).settings.max_num_batched_tokens, 16384u);  // 160 GiB and more
}

TEST(SglangSimulate, LittlesLawHoldsAndEveryRequestIsServed) {
    const ServingSetup setup = setup_for(sglang(llama_on_h100()));
    const SimulationReport r = expect_littles_law(setup, 500);
    EXPECT_EQ(r.kv_budget_blocks, setup.settings.kv_blocks);  // no null block: every token usable
    EXPECT_GT(r.prefix_hit_tokens, 0u);
}

TEST(SglangSimulate, AloneARequestWaitsOnePrefillStepThenOneDecodeStepAToken) {
    const ServingSetup setup = setup_for(sglang(llama_on_h100()));
    const std::vector<TrafficRequest> requests{{0, 1000, 50, {{1, 1000}}, 2}};
    const SimulationReport r = simulate(requests, setup);
    const StepCost& c = setup.cost;
    const double prefill = step_seconds(c, c.weight_bytes + kv_read_bytes(c, 1000),
                                        1000 * c.flops_per_token + 1000 * 500.5 * c.attention_flops_per_pair);
    EXPECT_NEAR(r.ttft_ms.mean, 1e3 * (prefill + setup.settings.api_serial_s + setup.settings.api_latency_s), 1e-6);
    EXPECT_EQ(r.steps, 50u);  // one prefill, 49 decodes
}

TEST(SglangSimulate, ThePromptHitsToTheTokenButTheLast) {
    // The same 1,000-token prompt, one request after another: the radix cache matches 999 tokens of each later one
    // (vLLM's blocks of 16: 992).
    std::vector<TrafficRequest> requests(20);
    for (std::size_t i = 0; i < requests.size(); ++i)
        requests[i] = {static_cast<double>(i), 1000, 10, {{7, 1000}}, 1000 + i};
    const SimulationReport r = simulate(requests, setup_for(sglang(llama_on_h100())));
    EXPECT_EQ(r.prefix_hit_tokens, 19u * 999);
    const SimulationReport off = simulate(requests, setup_for(sglang(llama_on_h100()), false));
    EXPECT_EQ(off.prefix_hit_tokens, 0u);
    // A later turn finds the turn before it, its answer but the last token (computed, not cached).
    std::vector<TrafficRequest> turns{{0, 600, 100, {{3, 600}}, 50}, {0, 800, 10, {{3, 600}, {50, 100}, {9, 100}}, 51}};
    turns[1].follows = 0;
    EXPECT_EQ(simulate(turns, setup_for(sglang(llama_on_h100()))).prefix_hit_tokens, 600u + 99);
}

TEST(SglangSimulate, APrefillBatchPausesTheDecodes) {
    // A decodes alone; B's 8,000-token prompt (one token of answer) arrives and is prefilled in a batch of its own:
    // A's tokens wait the whole prefill step more than they do without B (vLLM would run A's decode in that step).
    const ServingSetup setup = setup_for(sglang(llama_on_h100()));
    const TrafficRequest a{0, 100, 400, {{1, 100}}, 2}, b{1, 8000, 1, {{3, 8000}}, 4};
    const SimulationReport alone = simulate({a}, setup), with_b = simulate({a, b}, setup);
    const StepCost& c = setup.cost;
    const double b_prefill = step_seconds(c, c.weight_bytes + kv_read_bytes(c, 8000),
                                          8000 * c.flops_per_token + 8000 * 4000.5 * c.attention_flops_per_pair);
    // A's 399 gaps together (B has none): longer by B's prefill step.
    EXPECT_NEAR((with_b.itl_ms.mean - alone.itl_ms.mean) * 399 / 1e3, b_prefill, 1e-9);
    EXPECT_GT(b_prefill, 0.1);
}

TEST(SglangSimulate, ASmallPoolRetractsButNeverHoldsMoreThanItAndServesEveryone) {
    ServingSetup setup = setup_for(sglang(llama_on_h100()));
    setup.settings.kv_blocks = 20000;  // tokens
    const SimulationReport r = simulate(all_at_once(200), setup);
    EXPECT_LE(r.kv_peak_blocks, 20000u);
    EXPECT_GT(r.preemptions, 0u);
    EXPECT_EQ(r.requests, 200u);
    EXPECT_NEAR(r.mean_in_system, r.request_throughput * r.e2e_ms.mean / 1e3, 0.02 * r.mean_in_system);
}

TEST(SglangSimulate, AHitLockedIsNoLongerRoomForTheNext) {
    // A pool of 5,000 tokens; A's 2,000-token prompt stays in the tree (2,001 tokens, evictable) once A is done. B
    // and C arrive together, each that prompt and 1,600 tokens of its own. B's admission locks the 2,001: what is
    // free and evictable falls to 2,999, less B's 1,602, so C waits for B rather than both taking 3,200 of 2,999.
    ServingSetup setup = setup_for(sglang(llama_on_h100()));
    setup.settings.kv_blocks = 5000;
    setup.settings.api_serial_s = 0;  // B and C reach the scheduler together
    const TrafficRequest a{0, 2000, 2, {{1, 2000}}, 11}, b{10, 3600, 2, {{1, 2000}, {2, 1600}}, 12},
        c{10, 3600, 2, {{1, 2000}, {3, 1600}}, 13};
    const SimulationReport r = simulate({a, b, c}, setup);
    EXPECT_EQ(r.requests, 3u);
    EXPECT_EQ(r.prefix_hit_tokens, 2u * 2000);
    EXPECT_LE(r.kv_peak_blocks, 5000u);
    EXPECT_EQ(r.max_running, 1u);
}

TEST(SglangSimulate, TheLeastRecentlyUsedPromptIsEvictedFirst) {
    // A pool of 5,000 tokens: A's 2,000-token prompt, then B's, then C needs 2,500: the tree gives up A's (used
    // longest ago) and keeps B's, so a repeat of B hits all but its last token and a repeat of A nothing.
    ServingSetup setup = setup_for(sglang(llama_on_h100()));
    setup.settings.kv_blocks = 5000;
    const TrafficRequest a{0, 2000, 2, {{1, 2000}}, 11}, b{10, 2000, 2, {{2, 2000}}, 12},
        c{20, 2500, 2, {{3, 2500}}, 13};
    const TrafficRequest b_again{30, 2000, 2, {{2, 2000}}, 14}, a_again{30, 2000, 2, {{1, 2000}}, 15};
    EXPECT_EQ(simulate({a, b, c, b_again}, setup).prefix_hit_tokens, 1999u);
    EXPECT_EQ(simulate({a, b, c, a_again}, setup).prefix_hit_tokens, 0u);
}

TEST(SglangSimulate, ARequestAsLongAsTheContextIsRefusedAsSglangRefusesIt) {
    // SGLang refuses input + max_new_tokens >= context_len (tokenizer_manager.py _validate_one_request); vLLM only
    // longer than max_model_len.
    const std::vector<TrafficRequest> requests{{0, 8000, 192, {{1, 8000}}, 2}};  // 8,192: the context
    EXPECT_EQ(simulate(requests, setup_for(sglang(llama_on_h100()))).refused, 1u);
    EXPECT_EQ(simulate(requests, setup_for(llama_on_h100())).refused, 0u);
}

// Random traffic (seeded) on every engine and kind of model, on pools from tight to roomy: whatever the mix, every
// request is served or refused, Little's law holds, the cache never passes its budget, what the requests share is
// never less than nothing, and the same seed gives the same answer.
TEST(ServingInvariants, RandomTrafficKeepsThemOnEveryEngineAndModel) {
    struct Case {
        const char* model;
        Engine engine;
    };
    const Case cases[] = {{"llama-3.1-8b", Engine::vllm},
                          {"llama-3.1-8b", Engine::sglang},
                          {"gpt-oss-20b", Engine::vllm},
                          {"granite-4.0-h-tiny", Engine::vllm}};
    SplitMix64 rng(2026);
    const auto pick = [&](std::uint64_t lo, std::uint64_t hi) { return lo + rng.next() % (hi - lo + 1); };
    for (int round = 0; round < 24; ++round) {
        const Case& c = cases[round % 4];
        Scenario s = on_h100(c.model);
        s.deployment->engine = c.engine;
        if (c.engine == Engine::sglang) s.deployment->fraction = default_fraction(Engine::sglang);
        ServingSetup setup = setup_for(s);
        // A pool from a few requests' worth to the whole budget.
        const std::uint64_t tight =
            (pick(0, 2) == 0)
                ? setup.settings.kv_blocks
                : std::min<std::uint64_t>(setup.settings.kv_blocks, pick(3000, 40000) / setup.settings.block_size);
        setup.settings.kv_blocks = std::max<std::uint64_t>(tight, 64);
        TrafficSpec t;
        t.requests = pick(20, 160);
        if (pick(0, 1) == 1) t.rate = static_cast<double>(pick(1, 40));
        t.input = {pick(50, 2500), static_cast<double>(pick(0, 8)) / 10};
        t.output = {pick(1, 400), static_cast<double>(pick(0, 8)) / 10};
        t.shared_prefix = pick(0, 2) == 0 ? 0 : pick(16, 1500);
        t.prefix_groups = pick(1, 3);
        t.turns = pick(1, 3);
        t.seed = rng.next();
        const auto requests = make_traffic(t);
        ASSERT_TRUE(requests) << requests.error_text();
        const std::string label = std::string(c.model) + " " + std::string(to_string(c.engine)) + " round " +
                                  std::to_string(round) + " blocks " + std::to_string(setup.settings.kv_blocks);
        const SimulationReport r = simulate(*requests, setup);
        EXPECT_EQ(r.requests + r.refused, requests->size()) << label;
        EXPECT_TRUE(r.warnings.empty() || r.refused > 0) << label << ": " << r.warnings.front();
        if (r.requests > 0 && r.mean_in_system > 0.05)
            EXPECT_NEAR(r.mean_in_system, r.request_throughput * r.e2e_ms.mean / 1e3, 0.02 * r.mean_in_system) << label;
        EXPECT_LE(r.kv_peak_blocks, r.kv_budget_blocks) << label;
        EXPECT_LT(r.prefix_saved_peak_bytes_per_gpu, 1ull << 50) << label;  // never a wrapped count
        for (const TimelinePoint& p : r.timeline) {
            EXPECT_LE(p.kv_used_bytes, r.kv_budget_bytes_per_gpu) << label;
            EXPECT_GE(p.kv_unshared_bytes, p.kv_used_bytes) << label;
        }
        EXPECT_EQ(simulation_json(r).dump(), simulation_json(simulate(*requests, setup)).dump()) << label;
    }
}

}  // namespace
}  // namespace kvscope
