// The option declarations (app/options/options.cpp): what a command's help lists is exactly what it takes;
// anything else is an error naming the option; the lists in the help come from the tables they describe.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_dtype.h"
#include "options.h"
#include "scenario_options.h"

namespace kvscope::cli {
namespace {

// The options a help text lists ("  --context N   tokens …" -> --context).
std::set<std::string> listed(const std::string& help) {
    std::set<std::string> names;
    const std::regex line(R"(^  (--[a-z-]+))", std::regex::multiline);
    for (auto it = std::sregex_iterator(help.begin(), help.end(), line); it != std::sregex_iterator(); ++it)
        names.insert((*it)[1]);
    return names;
}

// One use of the option: a value of the right kind where it takes one.
std::vector<std::string> use(const std::string& name) {
    static const std::set<std::string> flags{"--full-window", "--linear",       "--all-layers", "--json",
                                             "--csv",         "--step",         "--local",      "--enforce-eager",
                                             "--mtp",         "--no-kv-offload"};
    if (flags.contains(name)) return {name};
    static const std::map<std::string, std::string> values{{"--utilization", "0.8"},
                                                           {"--format", "json"},
                                                           {"--units", "gb"},
                                                           {"--gpu-memory", "80GiB"},
                                                           {"--gpu-bandwidth", "3350GB"},
                                                           {"--host", "ddr5-5600-2ch"},
                                                           {"--host-memory", "64GB"},
                                                           {"--host-bandwidth", "89.6GB"},
                                                           {"--reserve", "1GiB"},
                                                           {"--overhead", "1GiB"},
                                                           {"--memory-limit", "1GiB"},
                                                           {"--ceiling-size", "1MiB"},
                                                           {"--vllm-version", "0.21"},
                                                           {"--context", "8k"},
                                                           {"--from", "128"},
                                                           {"--to", "8k"},
                                                           {"--input-range", "0.5"},
                                                           {"--output-range", "0.5"},
                                                           {"--percentile", "90"},
                                                           {"--prefix-caching", "off"},
                                                           {"--router", "prefix"}};
    const auto v = values.find(name);
    return {name, v != values.end() ? v->second : (name == "--model" || name == "--config" ? "x" : "2")};
}

TEST(Options, EachCommandTakesWhatItsHelpListsAndNamesEverythingElse) {
    std::set<std::string> every;
    for (std::size_t i = 0; i < kCommandCount; ++i) every.merge(listed(options_help(static_cast<Command>(i))));
    ASSERT_GT(every.size(), 30u);
    for (std::size_t i = 0; i < kCommandCount; ++i) {
        const auto c = static_cast<Command>(i);
        const std::set<std::string> takes = listed(options_help(c));
        for (const std::string& name : every) {
            std::vector<std::string> args;
            if (c != Command::window) args.emplace_back(to_string(c));
            for (auto& a : use(name)) args.push_back(a);
            const auto r = c == Command::window ? parse_options(args, Command::window) : parse_options(args);
            if (takes.contains(name)) {
                EXPECT_TRUE(r) << to_string(c) << " " << name << ": " << r.error_text();
            } else {
                ASSERT_FALSE(r) << to_string(c) << " took " << name << " although its help does not list it";
                EXPECT_EQ(r.errors().front().field, name) << to_string(c);
            }
        }
    }
}

TEST(Options, TheIssuesExamplesAreErrorsNamingTheOption) {
    auto models = parse_options({"models", "--batch", "3"});
    ASSERT_FALSE(models);
    EXPECT_EQ(models.errors().front().field, "--batch");
    EXPECT_EQ(models.errors().front().message, "this command does not take it");
    auto kv = parse_options({"kv", "--points", "5"});
    ASSERT_FALSE(kv);
    EXPECT_EQ(kv.errors().front().field, "--points");
    // plan says why it refuses a layout.
    auto plan = parse_options({"plan", "--gpu", "h200", "--tp", "2"});
    ASSERT_FALSE(plan);
    EXPECT_EQ(plan.errors().front().field, "--tp");
    EXPECT_NE(plan.errors().front().message.find("plan tries every TP × PP layout"), std::string::npos);
    // The window takes no command word.
    auto window = parse_options({"kv", "--context", "8k"}, Command::window);
    ASSERT_FALSE(window);
    EXPECT_EQ(window.errors().front().field, "kv");
    // --help is always taken, whatever else is given.
    EXPECT_TRUE(parse_options({"models", "--batch", "3", "--help"}));
    // Two output formats are refused, never the last taken in silence; the same one twice is one.
    auto both = parse_options({"kv", "--model", "llama-3-8b", "--json", "--csv"});
    ASSERT_FALSE(both);
    EXPECT_EQ(both.errors().front().field, "--csv");
    EXPECT_NE(both.errors().front().message.find("another output format was given already"), std::string::npos);
    auto named = parse_options({"kv", "--model", "llama-3-8b", "--format", "table", "--json"});
    ASSERT_FALSE(named);
    EXPECT_EQ(named.errors().front().field, "--json");
    EXPECT_TRUE(parse_options({"kv", "--model", "llama-3-8b", "--json", "--format", "json"}));
}

TEST(Options, OptionsBesideASavedScenarioOverrideItsDeploymentToo) {
    const Catalog& catalog = Catalog::builtin();
    Scenario saved;
    saved.model_id = "gpt-oss-120b";
    saved.arch = catalog.find_model("gpt-oss-120b")->model.arch;
    // A new deployment: the GPU named, the weights as the model's files say (MXFP4 experts), as build_scenario does.
    auto gpu = parse_options({"--gpu", "h200"}, Command::window);
    ASSERT_TRUE(gpu);
    Scenario s = saved;
    EXPECT_TRUE(apply_scenario_options(*gpu, catalog, s).empty());
    ASSERT_TRUE(s.deployment);
    EXPECT_EQ(s.deployment->gpu.id, "h200");
    EXPECT_EQ(s.deployment->weight_dtype, catalog.find_model("gpt-oss-120b")->model.weight_dtype);
    ASSERT_TRUE(s.deployment->weight_quant.has_value());
    EXPECT_EQ(s.deployment->weight_quant->method, "mxfp4");
    // --tp over a saved deployment changes its GPU count with it.
    auto tp = parse_options({"--tp", "2"}, Command::window);
    ASSERT_TRUE(tp);
    EXPECT_TRUE(apply_scenario_options(*tp, catalog, s).empty());
    EXPECT_EQ(s.parallel.tp, 2u);
    EXPECT_EQ(s.deployment->gpu_count, 2u);
    // --gpus alone keeps the pipeline stages: 8 GPUs over 2 stages is TP 4.
    s.parallel = {.tp = 2, .pp = 2};
    auto gpus = parse_options({"--gpus", "8"}, Command::window);
    ASSERT_TRUE(gpus);
    EXPECT_TRUE(apply_scenario_options(*gpus, catalog, s).empty());
    EXPECT_EQ(s.parallel.tp, 4u);
    EXPECT_EQ(s.deployment->gpu_count, 8u);
    // Memory alone over a saved GPU keeps its bandwidth.
    auto memory = parse_options({"--gpu-memory", "96GiB"}, Command::window);
    ASSERT_TRUE(memory);
    EXPECT_TRUE(apply_scenario_options(*memory, catalog, s).empty());
    EXPECT_EQ(s.deployment->gpu.memory_bytes, 96ull << 30);
    EXPECT_GT(s.deployment->gpu.bandwidth_bytes_per_s, 0u);
}

TEST(Options, FormatsAStateTheEngineFixesAreRefused) {
    // probe and stopwatch write a table or JSON.
    auto csv = parse_options({"probe", "--format", "csv"});
    ASSERT_FALSE(csv);
    EXPECT_EQ(csv.errors().front().field, "--format");
    EXPECT_TRUE(parse_options({"probe", "--format", "json"}));
    // RecurrentGemma's RG-LRU state is always fp32: the SSM format option is refused, the conv one applies.
    const Catalog& catalog = Catalog::builtin();
    Scenario s;
    s.arch = catalog.find_model("recurrentgemma-9b")->model.arch;
    auto ssm = parse_options({"kv", "--mamba-ssm-cache-dtype", "float16"});
    ASSERT_TRUE(ssm);
    const Errors e = apply_workload_options(*ssm, s);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e.front().field, "--mamba-ssm-cache-dtype");
    auto conv = parse_options({"kv", "--mamba-cache-dtype", "float32"});
    ASSERT_TRUE(conv);
    EXPECT_TRUE(apply_workload_options(*conv, s).empty());
    EXPECT_EQ(s.arch.recurrent->conv_dtype, KvDtype::fp32);
    EXPECT_EQ(s.arch.recurrent->ssm_dtype, KvDtype::fp32);
}

TEST(Options, TheHelpsListsComeFromTheirTables) {
    const std::string fit = options_help(Command::fit);
    EXPECT_NE(fit.find(engine_list()), std::string::npos) << fit;
    EXPECT_NE(fit.find(kv_dtype_list()), std::string::npos) << fit;
    EXPECT_NE(fit.find("vllm 0.90, sglang its own for the GPU, tensorrt-llm 0.90"), std::string::npos) << fit;
    for (std::size_t i = 0; i < kCommandCount; ++i) {
        const auto c = static_cast<Command>(i);
        EXPECT_EQ(parse_command(to_string(c)), c == Command::window ? std::nullopt : std::optional(c));
    }
    EXPECT_EQ(command_list(), "models, gpus, kv, compare, sweep, fit, plan, simulate, devices, probe, stopwatch");
}

}  // namespace
}  // namespace kvscope::cli
