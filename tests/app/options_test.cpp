// The option declarations (app/options/options.cpp): what a command's help lists is exactly what it takes;
// anything else is an error naming the option; the lists in the help come from the tables they describe.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_dtype.h"
#include "options.h"

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
    static const std::set<std::string> flags{"--full-window", "--linear", "--all-layers", "--json", "--csv"};
    if (flags.contains(name)) return {name};
    static const std::map<std::string, std::string> values{
        {"--utilization", "0.8"},      {"--format", "json"},  {"--units", "gb"},      {"--gpu-memory", "80GiB"},
        {"--gpu-bandwidth", "3350GB"}, {"--reserve", "1GiB"}, {"--overhead", "1GiB"}, {"--memory-limit", "1GiB"},
        {"--ceiling-size", "1MiB"},    {"--context", "8k"},   {"--from", "128"},      {"--to", "8k"}};
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
}

TEST(Options, TheHelpsListsComeFromTheirTables) {
    const std::string fit = options_help(Command::fit);
    EXPECT_NE(fit.find(engine_list()), std::string::npos) << fit;
    EXPECT_NE(fit.find(kv_dtype_list()), std::string::npos) << fit;
    EXPECT_NE(fit.find("vllm 0.90, sglang 0.88, tensorrt-llm 0.90"), std::string::npos) << fit;
    for (std::size_t i = 0; i < kCommandCount; ++i) {
        const auto c = static_cast<Command>(i);
        EXPECT_EQ(parse_command(to_string(c)), c == Command::window ? std::nullopt : std::optional(c));
    }
    EXPECT_EQ(command_list(), "models, gpus, kv, compare, sweep, fit, plan, devices, probe, stopwatch");
}

}  // namespace
}  // namespace kvscope::cli
