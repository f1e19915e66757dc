// kvscope-cli simulate as a user runs it: described traffic and trace files (paths with spaces and non-ASCII letters,
// in every locale the suite runs in), the same answer for the same seed, the text and the JSON agreeing, and every
// bad input refused naming the option or the file's line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"
#include "kvscope/calculator/numbers.h"

namespace {

const std::string kSim = "simulate --model llama-3-8b --gpu h100-sxm ";

TEST(CliSimulate, TheTextAndTheJsonSayTheSameAndTheSeedFixesThem) {
    const std::string args = kSim +
                             "--requests 300 --rate 6 --input-tokens 1500 --input-range 0.5 --output-tokens 200 "
                             "--shared-prefix 500 --prefix-groups 2 --seed 5";
    const CliRun text = cli(args);
    ASSERT_EQ(text.status, 0) << text.err;
    const CliRun a = cli(args + " --json"), b = cli(args + " --json");
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);  // the same seed, the same answer
    const auto v = json_of(a);
    const auto& sim = *v.find("simulation");
    EXPECT_EQ(sim.find("requests")->as_u64(), 300u);
    EXPECT_EQ(v.find("traffic")->find("prefix_groups")->as_u64(), 2u);
    EXPECT_EQ(v.find("engine_settings")->find("max_num_batched_tokens")->as_u64(), 8192u);  // vLLM's on an H100
    // The table shows the JSON's figures.
    const std::string peak = std::to_string(*sim.find("kv_peak_blocks")->as_u64());
    const std::string with_comma =
        peak.size() > 3 ? peak.substr(0, peak.size() - 3) + "," + peak.substr(peak.size() - 3) : peak;
    EXPECT_NE(text.out.find("KV blocks:     peak " + with_comma + " of 27,714"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("served:        300 requests in"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("prefix cache:"), std::string::npos);
    // Half the prompts' start is one of two system prompts: each but the first two requests finds its 500 tokens.
    EXPECT_GT(sim.find("prefix_hit_rate")->as_double(), 0.2);
    const CliRun other = cli(kSim +
                             "--requests 300 --rate 6 --input-tokens 1500 --input-range 0.5 --output-tokens 200 "
                             "--shared-prefix 500 --prefix-groups 2 --seed 6 --json");
    EXPECT_NE(json_of(other).find("simulation")->dump(), sim.dump());
    // The timeline as CSV.
    const CliRun csv = cli(args + " --csv");
    ASSERT_EQ(csv.status, 0) << csv.err;
    EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')), "t_s,running,waiting,kv_used_bytes,kv_unshared_bytes");
}

TEST(CliSimulate, SglangIsSimulatedWithItsRadixCache) {
    // Twenty requests a few seconds apart behind one 1,000-token system prompt: SGLang's radix cache finds all of it
    // for each after the first, vLLM's blocks of 16 the 992 tokens of its 62 full blocks.
    const std::string traffic =
        "--requests 20 --rate 0.5 --input-tokens 500 --output-tokens 20 --shared-prefix 1000 --json";
    const CliRun sglang = cli(kSim + "--engine sglang " + traffic), vllm = cli(kSim + traffic);
    ASSERT_EQ(sglang.status, 0) << sglang.err;
    ASSERT_EQ(vllm.status, 0) << vllm.err;
    const auto s = json_of(sglang), v = json_of(vllm);
    EXPECT_EQ(s.find("engine")->as_string(), "sglang");
    EXPECT_EQ(s.find("engine_settings")->find("block_size")->as_u64(), 1u);
    EXPECT_EQ(s.find("engine_settings")->find("max_num_batched_tokens")->as_u64(), 8192u);  // chunked_prefill_size
    EXPECT_EQ(s.find("simulation")->find("prefix_hit_tokens")->as_u64(), 19u * 1000);
    EXPECT_EQ(v.find("simulation")->find("prefix_hit_tokens")->as_u64(), 19u * 992);
    EXPECT_NE(s.dump().find("SGLang's scheduler (v0.5.6)"), std::string::npos);
}

TEST(CliSimulate, ATargetGivesTheHighestRateThatMeetsIt) {
    const CliRun r = cli(kSim +
                         "--requests 200 --input-tokens 1000 --output-tokens 100 --tpot-ms 20 --percentile 90 "
                         "--json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    ASSERT_NE(v.find("max_rate_meeting_slo"), nullptr);
    const double best = v.find("max_rate_meeting_slo")->as_double();
    EXPECT_GT(best, 0.5);
    EXPECT_EQ(v.find("slo")->find("percentile")->as_double(), 90.0);
    EXPECT_TRUE(v.find("slo")->find("ttft_ms")->is_null());
    // At that rate the target holds (the rate written as the CLI reads it in every locale: a decimal point).
    const CliRun at = cli(kSim + "--requests 200 --input-tokens 1000 --output-tokens 100 --rate " +
                          kvscope::number_text(best) + " --json");
    ASSERT_EQ(at.status, 0) << at.err;
    EXPECT_LE(json_of(at).find("simulation")->find("tpot_ms")->find("p90")->as_double(), 20.0);
    const CliRun text = cli(kSim + "--requests 200 --input-tokens 1000 --output-tokens 100 --tpot-ms 20");
    EXPECT_NE(text.out.find("target:        TPOT ≤ 20 ms at P99"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("highest rate:"), std::string::npos) << text.out;
}

TEST(CliSimulate, ATraceInAFolderWithSpacesAndAccentsIsRead) {
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope traces é " + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    const auto azure = folder / "Azure conv.csv";
    std::ofstream(azure) << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                            "2023-11-16 18:15:46.6805900,374,44\n"
                            "2023-11-16 18:15:50.9951690,396,109\n"
                            "2023-11-16 18:15:51.2224670,879,55\n";
    const CliRun r = cli(kSim + "--trace '" + azure.string() + "' --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(v.find("traffic")->find("trace")->as_string(), azure.string());
    EXPECT_EQ(v.find("simulation")->find("requests")->as_u64(), 3u);
    // The first two requests of it.
    EXPECT_EQ(json_of(cli(kSim + "--trace '" + azure.string() + "' --requests 2 --json"))
                  .find("simulation")
                  ->find("requests")
                  ->as_u64(),
              2u);
    // A broken line: the file and the line.
    const auto bad = folder / "bad.csv";
    std::ofstream(bad) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,12x,4\n";
    const CliRun broken = cli(kSim + "--trace '" + bad.string() + "'");
    EXPECT_EQ(broken.status, 2);
    EXPECT_NE(broken.err.find("--trace: " + bad.string() + ":2: ContextTokens: '12x' is not a whole number"),
              std::string::npos)
        << broken.err;
    // Only its lengths: the traffic described at a rate of its own, with the trace's prompts and answers.
    const CliRun drawn = cli(kSim + "--lengths-from '" + azure.string() + "' --rate 5 --requests 60 --json");
    ASSERT_EQ(drawn.status, 0) << drawn.err;
    const auto d = json_of(drawn);
    EXPECT_EQ(d.find("traffic")->find("lengths_from")->as_string(), azure.string());
    EXPECT_EQ(d.find("simulation")->find("requests")->as_u64(), 60u);
    const double mean_in = d.find("simulation")->find("input_throughput")->as_double() /
                           d.find("simulation")->find("request_throughput")->as_double();
    EXPECT_GT(mean_in, 374 - 1e-6);  // every prompt one of the trace's: 374, 396 or 879 tokens
    EXPECT_LT(mean_in, 879 + 1e-6);
    EXPECT_NE(cli(kSim + "--lengths-from '" + azure.string() + "' --rate 5 --requests 60")
                  .out.find("prompts and answers as long as those of " + azure.string()),
              std::string::npos);
    const CliRun beside = cli(kSim + "--lengths-from '" + azure.string() + "' --input-tokens 100");
    EXPECT_EQ(beside.status, 2);
    EXPECT_NE(beside.err.find("--input-tokens: the lengths come from"), std::string::npos) << beside.err;
    const CliRun with_trace = cli(kSim + "--lengths-from '" + azure.string() + "' --trace '" + azure.string() + "'");
    EXPECT_EQ(with_trace.status, 2);
    EXPECT_NE(with_trace.err.find("--lengths-from: --trace gives the requests themselves"), std::string::npos)
        << with_trace.err;
    std::filesystem::remove_all(folder);
    // Options a trace replaces are refused beside it, not ignored.
    const CliRun both = cli(kSim + "--trace '" + azure.string() + "' --rate 5");
    EXPECT_EQ(both.status, 2);
    EXPECT_NE(both.err.find("--rate: the trace gives the requests"), std::string::npos) << both.err;
    const CliRun missing = cli(kSim + "--trace /nonexistent/trace.csv");
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("--trace: /nonexistent/trace.csv: cannot be opened"), std::string::npos) << missing.err;
}

TEST(CliSimulate, VllmsCustomJsonLinesAreServedWithTheirEstimatesSaid) {
    // vllm bench serve --dataset-name custom's file: prompts as text, sent all at once; 30 of them, each a question
    // behind the same 2,048 characters, in a folder with a space and an accent.
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope custom ü " + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    const auto custom = folder / "my prompts.jsonl";
    {
        std::ofstream f(custom);
        for (int i = 0; i < 30; ++i)
            f << "{\"prompt\": \"" << std::string(2048, 's') << " question " << i << "?\", \"output_tokens\": 50}\n";
    }
    const CliRun r = cli(kSim + "--trace '" + custom.string() + "' --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(v.find("simulation")->find("requests")->as_u64(), 30u);
    // The 2,048 shared characters are 32 pieces of 16 tokens: the later requests find them cached (vLLM's blocks of
    // 16 tokens, all 512 tokens of them) once the first has been scheduled.
    EXPECT_EQ(v.find("simulation")->find("prefix_hit_tokens")->as_u64(), 29u * 512);
    EXPECT_NE(v.dump().find("holds prompts as text; their tokens are estimated"), std::string::npos);
    const CliRun text = cli(kSim + "--trace '" + custom.string() + "'");
    EXPECT_NE(text.out.find("warning: not exact: " + custom.string() + " holds prompts as text"), std::string::npos)
        << text.out;
    std::filesystem::remove_all(folder);
}

TEST(CliSimulate, BadTrafficIsRefusedNamingTheOption) {
    const std::pair<std::string, std::string> cases[] = {
        {"--rate 0", "--rate: '0' is not a rate above 0"},
        {"--rate fast", "--rate: 'fast' is not a rate above 0"},
        {"--input-range 2", "--input-range: '2' is not a ratio from 0 to 1"},
        {"--percentile 95", "--percentile: '95' is not 50, 90 or 99"},
        {"--prefix-caching maybe", "--prefix-caching: 'maybe' is not on or off"},
        {"--batch 4", "--batch: simulate's sequences are the traffic's requests"},
        {"--engine tensorrt-llm",
         "--engine: simulate follows vLLM's and SGLang's schedulers; tensorrt-llm's is not simulated yet"},
        {"--requests 0", "--requests: must be at least 1"},
        // Past what a desktop's memory holds (about 360 bytes a request), and a clock so far out that its
        // milliseconds are lost (latencies of 0 ms before).
        {"--requests 10000001", "--requests: at most 10,000,000 requests are simulated"},
        {"--rate 1e-15", "a second arrive over more than 31 years (10^9 s)"},
    };
    for (const auto& [args, said] : cases) {
        const CliRun r = cli(kSim + args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_NE(r.err.find(said), std::string::npos) << args << ": " << r.err;
    }
    const CliRun no_gpu = cli("simulate --model llama-3-8b");
    EXPECT_EQ(no_gpu.status, 2);
    EXPECT_NE(no_gpu.err.find("--gpu"), std::string::npos) << no_gpu.err;
}

TEST(CliSimulate, TrafficEveryRequestOfWhichIsRefusedHasNoLatenciesAndMeetsNoTarget) {
    // Every prompt is longer than the context served: each request is refused, and the latencies are "—" in the text
    // and null in the JSON, never a mean of 0 ms that reads as measured, or that "meets" a target.
    const auto both = [](const std::string& args) {
        const CliRun text = cli(args), json = cli(args + " --json");
        EXPECT_EQ(text.status, 0) << text.err;
        EXPECT_EQ(json.status, 0) << json.err;
        return std::pair{text.out, json_of(json)};
    };
    const auto [sim_text, sim_json] = both(
        "simulate --model llama-3-8b --gpu h100-sxm --requests 20 --input-tokens 128k --output-tokens 16 --rate 5");
    EXPECT_NE(sim_text.find("served:        0 requests"), std::string::npos) << sim_text;
    EXPECT_NE(sim_text.find("20 refused"), std::string::npos) << sim_text;
    EXPECT_NE(sim_text.find("TTFT (ms):     — (no request was served)"), std::string::npos) << sim_text;
    EXPECT_EQ(sim_text.find("mean 0.00"), std::string::npos) << sim_text;
    const auto* sim = sim_json.find("simulation");
    ASSERT_NE(sim, nullptr);
    for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
        ASSERT_NE(sim->find(key), nullptr) << key;
        EXPECT_TRUE(sim->find(key)->is_null()) << key;
    }

    const auto [plan_text, plan_json] = both(
        "plan --model llama-3.1-8b --gpu h100-sxm --context 4k --input-tokens 8000 --requests 20 --rate 2 "
        "--ttft-ms 500");
    const std::string serving = plan_text.substr(std::min(plan_text.find("\nserving "), plan_text.size()));
    EXPECT_NE(serving.find("no layout meets the target"), std::string::npos) << plan_text;
    EXPECT_EQ(serving.find(" yes"), std::string::npos) << plan_text;
    // Refused by one replica, refused by any: the search does not double to 64 replicas in vain.
    EXPECT_NE(serving.find("TP 1 × PP 1 "), std::string::npos) << plan_text;
    EXPECT_EQ(serving.find("64 replicas  "), std::string::npos) << plan_text;
    EXPECT_NE(plan_text.find("a layout that refuses requests (20 here"), std::string::npos) << plan_text;
    const auto* layouts = plan_json.find("layouts_serving");
    ASSERT_NE(layouts, nullptr);
    ASSERT_FALSE(layouts->items().empty());
    for (const auto& l : layouts->items()) {
        EXPECT_FALSE(l.find("meets_slo")->as_bool());
        EXPECT_TRUE(l.find("ttft_ms")->is_null());
    }
    EXPECT_TRUE(plan_json.find("smallest_meeting_slo")->is_null());
}

TEST(CliSimulate, PlanFindsTheSmallestLayoutMeetingATargetAtARate) {
    const std::string plan =
        "plan --model llama-3.1-8b --context 8k --gpu h100-sxm --gpus-per-node 2 "
        "--max-pp 1 --requests 600 --rate 12 --input-tokens 2000 --input-range 0.5 "
        "--output-tokens 200 --output-range 0.5 --tpot-ms 25 --percentile 90";
    const CliRun json = cli(plan + " --json");
    ASSERT_EQ(json.status, 0) << json.err;
    const auto v = json_of(json);
    const auto& layouts = v.find("layouts_serving")->items();
    ASSERT_FALSE(layouts.empty());
    const kvscope::json::Value* first_meeting = nullptr;
    for (const auto& l : layouts) {
        EXPECT_EQ(l.find("meets_slo")->as_bool(), l.find("tpot_ms")->as_double() <= 25);
        if (l.find("meets_slo")->as_bool() && !first_meeting) first_meeting = &l;
    }
    ASSERT_NE(first_meeting, nullptr);
    EXPECT_EQ(v.find("smallest_meeting_slo")->find("gpus")->as_u64(), first_meeting->find("gpus")->as_u64());
    EXPECT_EQ(v.find("slo")->find("percentile")->as_double(), 90.0);
    const CliRun text = cli(plan);
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("smallest layout meeting the target: "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("TPOT P90 ms"), std::string::npos) << text.out;
    // A rate alone is refused, not ignored.
    const CliRun rate_alone = cli("plan --model llama-3.1-8b --gpu h100-sxm --rate 5");
    EXPECT_EQ(rate_alone.status, 2);
    EXPECT_NE(rate_alone.err.find("--rate: plan serves a traffic"), std::string::npos) << rate_alone.err;
    EXPECT_EQ(v.find("router")->as_string(), "round-robin");
    // The prefix router: named in the JSON and the text, its not-exact warning with it; a router no one has refused.
    const CliRun prefix = cli(plan + " --shared-prefix 1000 --prefix-groups 4 --router prefix --json");
    ASSERT_EQ(prefix.status, 0) << prefix.err;
    const auto p = json_of(prefix);
    EXPECT_EQ(p.find("router")->as_string(), "prefix");
    EXPECT_GT(p.find("layouts_serving")->items().front().find("prefix_hit_tokens")->as_u64(), 0u);
    const CliRun prefix_text = cli(plan + " --shared-prefix 1000 --prefix-groups 4 --router prefix");
    EXPECT_NE(prefix_text.out.find("(the conversations of one system prompt together)"), std::string::npos)
        << prefix_text.out;
    const CliRun bad = cli(plan + " --router random");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--router: 'random' is not prefix or round-robin"), std::string::npos) << bad.err;
    const CliRun simulate_router = cli("simulate --model llama-3.1-8b --gpu h100-sxm --router prefix");
    EXPECT_EQ(simulate_router.status, 2) << simulate_router.out;
}

// A GPU the catalog has no dense BF16 rate for (the T4: Turing has no BF16) times a step by its reads alone, and says
// that its prefill and TTFT are then too fast, in the text and the JSON's warnings; a GPU with a rate says nothing of
// it.
TEST(CliSimulate, AGpuWithoutAComputeRateSaysItsStepsAreItsReadsAlone) {
    const std::string args =
        "simulate --model llama-3.2-1b --requests 1 --input-tokens 8000 --output-tokens 16 "
        "--context 16k --gpu ";
    const CliRun t4 = cli(args + "t4");
    ASSERT_EQ(t4.status, 0) << t4.err;
    EXPECT_NE(t4.out.find("warning: not exact: the NVIDIA T4 16GB has no dense BF16 rate in the catalog"),
              std::string::npos)
        << t4.out;
    const CliRun json = cli(args + "t4 --json");
    EXPECT_NE(json.out.find("the new tokens' work is not timed"), std::string::npos) << json.out;
    const CliRun l4 = cli(args + "l4");
    ASSERT_EQ(l4.status, 0) << l4.err;
    EXPECT_EQ(l4.out.find("no dense BF16 rate"), std::string::npos) << l4.out;
}

}  // namespace
