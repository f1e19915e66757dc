#pragma once
// The scenarios and calls the serving simulation's tests share (simulate_test.cpp, simulate_sglang_test.cpp).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/serving.h"
#include "kvscope/calculator/simulate.h"
#include "kvscope/calculator/traffic.h"

namespace kvscope {

// Llama 3.1 8B on one H100 under vLLM.
inline Scenario llama_on_h100() {
    Scenario s;
    s.arch = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    s.model_id = "llama-3.1-8b";
    s.workload.context_tokens = 8192;
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    s.deployment = d;
    return s;
}

inline ServingSetup setup_for(const Scenario& s, bool prefix_caching = true) {
    auto setup = serving_setup(s, prefix_caching, 0);
    EXPECT_TRUE(setup) << setup.error_text();
    return setup ? *setup : ServingSetup{};
}

inline SimulationReport simulate(const std::vector<TrafficRequest>& requests, const ServingSetup& setup) {
    auto r = simulate_serving(requests, setup.settings, setup.cost);
    EXPECT_TRUE(r) << r.error_text();
    return r ? *r : SimulationReport{};
}

// A model on one H100 under vLLM, at an 8,192-token context.
inline Scenario on_h100(const std::string& model) {
    Scenario s = llama_on_h100();
    s.arch = Catalog::builtin().find_model(model)->model.arch;
    s.model_id = model;
    return s;
}

// 3,000 requests at 20 a second (1,500 ± 80% tokens in, 300 ± 80% out, a system prompt of `shared_prefix`) served on
// `setup`: every one served, Little's law (requests in the system on average = throughput × mean latency, the counts
// integrated step by step against the requests' own timestamps), the cache within its budget, the output all counted.
inline SimulationReport expect_littles_law(const ServingSetup& setup, std::uint64_t shared_prefix = 0) {
    TrafficSpec t;
    t.requests = 3000;
    t.rate = 20;
    t.input = {1500, 0.8};
    t.output = {300, 0.8};
    t.shared_prefix = shared_prefix;
    t.seed = 7;
    const auto requests = make_traffic(t);
    EXPECT_TRUE(requests) << requests.error_text();
    if (!requests) return {};
    const SimulationReport r = simulate(*requests, setup);
    EXPECT_EQ(r.requests, 3000u);
    EXPECT_EQ(r.refused, 0u);
    EXPECT_NEAR(r.mean_in_system, r.request_throughput * r.e2e_ms.mean / 1e3, 0.02 * r.mean_in_system);
    EXPECT_LE(r.kv_peak_blocks, r.kv_budget_blocks);
    EXPECT_GT(r.mean_running, 1.0);
    EXPECT_LE(r.ttft_ms.median, r.ttft_ms.p90);
    EXPECT_LE(r.ttft_ms.p90, r.ttft_ms.p99);
    std::uint64_t output = 0;
    for (const auto& q : *requests) output += q.output_tokens;
    EXPECT_NEAR(r.output_throughput * r.duration_s, static_cast<double>(output), 1e-6 * static_cast<double>(output));
    return r;
}

// `n` requests all at once, 600 ± 50% tokens in and 400 ± 50% out (seed 3): more than a small cache holds at once.
inline std::vector<TrafficRequest> all_at_once(std::uint64_t n) {
    TrafficSpec t;
    t.requests = n;
    t.input = {600, 0.5};
    t.output = {400, 0.5};
    t.seed = 3;
    auto requests = make_traffic(t);
    EXPECT_TRUE(requests) << requests.error_text();
    return requests ? *requests : std::vector<TrafficRequest>{};
}

}  // namespace kvscope
