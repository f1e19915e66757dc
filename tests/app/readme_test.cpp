// The README's examples are tests: every fenced block that begins with `$ kvscope-cli …` (or `$ kvscope …`, the
// window's program, where it is built) is run, and what the program prints (standard output, then standard error) must
// be the lines the README shows. A line `…` alone stands for any number of lines. A block whose output depends on the
// machine (timings, the CPU's name) is marked `<!-- machine-dependent: why -->` on the line before its fence; it is not
// compared, and the marker must say why.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

std::string rstrip(std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
    return s;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(rstrip(line));
    while (!out.empty() && out.back().empty()) out.pop_back();
    return out;
}

struct Example {
    int line = 0;         // of the `$` line in README.md, 1-based
    std::string program;  // kvscope-cli or kvscope
    std::string args;     // after the program's name
    std::vector<std::string> expected;
    bool machine_dependent = false;
    std::string why;  // the marker's reason
};

const std::string kMarker = "<!-- machine-dependent:";

// The program a `$` line runs, and its arguments; false for any other line.
bool command_of(const std::string& line, std::string& program, std::string& args) {
    for (const std::string p : {"kvscope-cli", "kvscope"}) {
        const std::string prompt = "$ " + p + " ";
        if (line.rfind(prompt, 0) == 0) {
            program = p;
            args = line.substr(prompt.size());
            return true;
        }
    }
    return false;
}

std::vector<Example> examples_of(const std::vector<std::string>& readme) {
    std::vector<Example> out;
    for (std::size_t i = 0; i < readme.size(); ++i) {
        if (readme[i].rfind("```", 0) != 0) continue;
        std::size_t end = i + 1;
        while (end < readme.size() && readme[end].rfind("```", 0) != 0) ++end;
        std::string program, args;
        if (end > i + 1 && command_of(readme[i + 1], program, args)) {
            Example ex;
            if (i > 0 && readme[i - 1].rfind(kMarker, 0) == 0) {
                ex.machine_dependent = true;
                ex.why = readme[i - 1].substr(kMarker.size());
            }
            for (std::size_t k = i + 1; k < end; ++k) {
                if (command_of(readme[k], program, args)) {
                    if (!ex.args.empty()) out.push_back(ex);
                    ex.line = static_cast<int>(k + 1);
                    ex.program = program;
                    ex.args = args;
                    ex.expected.clear();
                } else {
                    ex.expected.push_back(readme[k]);
                }
            }
            out.push_back(ex);
        }
        i = end;  // the closing fence
    }
    return out;
}

// Whether `actual` from `a` on is what `expected` from `e` on shows, a `…` line standing for any lines.
bool matches(const std::vector<std::string>& expected, std::size_t e, const std::vector<std::string>& actual,
             std::size_t a) {
    if (e == expected.size()) return a == actual.size();
    if (expected[e] == "…") {
        for (std::size_t skip = a; skip <= actual.size(); ++skip)
            if (matches(expected, e + 1, actual, skip)) return true;
        return false;
    }
    return a < actual.size() && expected[e] == actual[a] && matches(expected, e + 1, actual, a + 1);
}

// The first line where they part, for the failure message.
std::string first_difference(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
    std::size_t a = 0;
    for (std::size_t e = 0; e < expected.size(); ++e) {
        if (expected[e] == "…") return "(after a `…` line) README: " + (e + 1 < expected.size() ? expected[e + 1] : "");
        if (a >= actual.size()) return "README shows more:  " + expected[e];
        if (expected[e] != actual[a]) return "README:  " + expected[e] + "\nprinted: " + actual[a];
        ++a;
    }
    return a < actual.size() ? "printed more: " + actual[a] : "";
}

std::string readme_text() {
    std::ifstream in(KVSCOPE_README_PATH);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<Example> readme_examples() {
    std::vector<std::string> lines;
    std::istringstream s(readme_text());
    for (std::string line; std::getline(s, line);) lines.push_back(rstrip(line));
    return examples_of(lines);
}

}  // namespace

TEST(Readme, FindsItsExamples) {
    // The parser itself: a marked block, a block of two commands, a `…` line, a block of another kind.
    const std::vector<std::string> md = {"text",
                                         "```",
                                         "$ kvscope-cli kv --model gpt2",
                                         "a",
                                         "…",
                                         "b",
                                         "$ kvscope --help",
                                         "c",
                                         "```",
                                         "```sh",
                                         "kvscope-cli kv",
                                         "```",
                                         "<!-- machine-dependent: timings -->",
                                         "```",
                                         "$ kvscope-cli stopwatch",
                                         "x",
                                         "```"};
    const auto ex = examples_of(md);
    ASSERT_EQ(ex.size(), 3u);
    EXPECT_EQ(ex[0].line, 3);
    EXPECT_EQ(ex[0].args, "kv --model gpt2");
    EXPECT_EQ(ex[0].expected, (std::vector<std::string>{"a", "…", "b"}));
    EXPECT_EQ(ex[0].program, "kvscope-cli");
    EXPECT_EQ(ex[1].program, "kvscope");
    EXPECT_EQ(ex[1].args, "--help");
    EXPECT_FALSE(ex[1].machine_dependent);
    EXPECT_TRUE(ex[2].machine_dependent);
    EXPECT_EQ(ex[2].why, " timings -->");

    EXPECT_TRUE(matches({"a", "…", "d"}, 0, {"a", "b", "c", "d"}, 0));
    EXPECT_TRUE(matches({"a", "…"}, 0, {"a"}, 0));
    EXPECT_FALSE(matches({"a", "…", "d"}, 0, {"a", "b", "c"}, 0));
    EXPECT_FALSE(matches({"a", "b"}, 0, {"a", "b", "c"}, 0));
}

TEST(Readme, EveryExampleRunsAsShown) {
    const auto examples = readme_examples();
    int compared = 0;
    for (const auto& ex : examples) {
        if (ex.machine_dependent) {
            // A marker without its reason is no marker.
            const std::string why = ex.why.substr(0, ex.why.find("-->"));
            EXPECT_NE(why.find_first_not_of(' '), std::string::npos)
                << "README.md:" << ex.line << ": say why the output depends on the machine";
            continue;
        }
        CliRun r;
        if (ex.program == "kvscope-cli") {
            r = cli(ex.args);
        } else {
#ifdef KVSCOPE_APP_PATH
            // The window's program with no display: its help and its exports need none.
            r = run_program(KVSCOPE_APP_PATH, ex.args, "QT_QPA_PLATFORM=offscreen");
#else
            continue;  // a build without the window (cmake -DKVSCOPE_GUI=OFF) has no kvscope to run
#endif
        }
        const auto actual = lines_of(r.out + r.err);
        EXPECT_TRUE(matches(ex.expected, 0, actual, 0))
            << "README.md:" << ex.line << ": $ " << ex.program << " " << ex.args << "\n"
            << first_difference(ex.expected, actual) << "\n--- printed ---\n"
            << r.out << r.err;
        ++compared;
    }
    // The README's opening examples (kv, fit, a hybrid model), plan, --help and an error at least.
    EXPECT_GE(compared, 6);
}

namespace {

// Every key of a JSON value, at every depth.
void collect_keys(const kvscope::json::Value& v, std::set<std::string>& keys) {
    if (v.is_object())
        for (const auto& [k, x] : v.members()) {
            keys.insert(k);
            collect_keys(x, keys);
        }
    else if (v.is_array())
        for (const auto& x : v.items()) collect_keys(x, keys);
}

}  // namespace

TEST(Readme, TheJsonContractNamesEveryKeyTheProgramsWrite) {
    const std::string readme = readme_text();
    const auto from = readme.find("### JSON contract");
    const auto to = readme.find("## How it calculates", from);
    ASSERT_NE(from, std::string::npos);
    ASSERT_NE(to, std::string::npos);
    const std::string contract = readme.substr(from, to - from);
    // Models and settings that make the optional members appear: a recurrent state, MLA with an indexer, experts,
    // MTP layers, a draft, Gemma 3n's extra parameters, every engine, the catalogs, the probe and the stopwatch.
    const char* commands[] = {
        "kv --model qwen3-next-80b-a3b --json",
        "kv --model deepseek-v3.2 --json",
        "kv --model mixtral-8x7b --json",
        "kv --model gemma-3n-e4b --json",
        "kv --model llama-4-scout --json",
        "fit --model qwen3-next-80b-a3b --gpu h100-sxm --gpus 4 --mtp --json",
        "fit --model llama-3.1-70b --gpu h100-sxm --gpus 4 --draft llama-3.2-1b --json",
        "fit --model llama-3-8b --gpu h100-sxm --engine sglang --json",
        "fit --model llama-3-8b --gpu h100-sxm --engine llama.cpp --json",
        "fit --model llama-3-8b --gpu h100-sxm --engine tensorrt-llm --json",
        "plan --model llama-3-70b --context 8k --batch 64 --gpu h100-sxm --json",
        "simulate --model llama-3-8b --gpu h100-sxm --requests 50 --rate 5 --shared-prefix 100 --turns 2 --tpot-ms 30 "
        "--json",
        "plan --model llama-3-8b --context 8k --batch 100 --gpu h100-sxm --max-pp 1 --gpus-per-node 2 --requests 100 "
        "--rate 5 --tpot-ms 30 --json",
        "compare --model llama-3-8b --json",
        "sweep --model gpt2 --json",
        "models --json",
        "gpus --json",
        "devices --json",
        "probe --backend cpu --model gpt2 --context 256 --json",
        "probe --step --backend cpu --model gpt2 --context 64 --json",
        "stopwatch --tokens 4 --json",
    };
    // models --local on a made-up Hugging Face cache: one snapshot that loads, one repository whose download left
    // no snapshot (listed with its problem).
    const auto hub = std::filesystem::temp_directory_path() / ("kvscope-readme-hub-" + std::to_string(::getpid()));
    std::filesystem::create_directories(hub / "models--acme--good" / "snapshots" / "abc");
    std::ofstream(hub / "models--acme--good" / "snapshots" / "abc" / "config.json")
        << R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256})";
    for (const char* repo : {"models--acme--good", "models--acme--broken"}) {
        std::filesystem::create_directories(hub / repo / "refs");
        std::ofstream(hub / repo / "refs" / "main") << "abc";
    }
    const CliRun local = cli("models --local --json",
                             "HF_HUB_CACHE='" + hub.string() + "' OLLAMA_MODELS=/nonexistent HOME=/nonexistent");
    std::filesystem::remove_all(hub);
    ASSERT_EQ(local.status, 0) << local.err;
    std::set<std::string> local_keys;
    collect_keys(json_of(local), local_keys);
    EXPECT_TRUE(local_keys.contains("problem")) << local.out;  // the broken snapshot was found and said
    for (const auto& k : local_keys)
        EXPECT_NE(contract.find("`" + k + "`"), std::string::npos)
            << "models --local --json writes \"" << k << "\", which README.md's JSON contract does not name";
    for (const char* c : commands) {
        const CliRun r = cli(c);
        ASSERT_EQ(r.status, 0) << c << "\n" << r.err;
        std::set<std::string> keys;
        collect_keys(json_of(r), keys);
        for (const auto& k : keys)
            EXPECT_NE(contract.find("`" + k + "`"), std::string::npos)
                << c << " writes \"" << k << "\", which README.md's JSON contract does not name";
    }
}
