// kvscope-cli at the edges of its figures: what lies beyond a figure's range is said in words, in the table and in
// the JSON, and inputs are read as the program itself prints them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <unistd.h>

#include "cli_run.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/scenario_file.h"

namespace {

bool has_warning(const kvscope::json::Value& v, const std::string& part) {
    const auto* w = v.find("warnings");
    return w != nullptr && std::any_of(w->items().begin(), w->items().end(), [&](const kvscope::json::Value& x) {
               return x.as_string().find(part) != std::string::npos;
           });
}

TEST(CliLimits, AHeadLayoutPast2To64BytesIsSaidAndThePercentagesStillHold) {
    // MHA's cache of 10^10 sequences of 8k tokens passes 2^64 bytes; GQA-8's is a quarter of it, not 0%.
    const std::string args = "compare --model llama-3-8b --context 8k --batch 1e10";
    const CliRun table = cli(args);
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("25.0%"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("warning: MHA is left out of the comparison: its cache at this context and batch "
                             "would pass 2^64 bytes (16 EiB)"),
              std::string::npos)
        << table.out;
    const auto v = json_of(cli(args + " --json"));
    EXPECT_DOUBLE_EQ(v.find("variants")->items()[0].find("percent_of_mha")->as_double(), 25.0);
    EXPECT_TRUE(has_warning(v, "MHA is left out of the comparison"));
}

TEST(CliLimits, FitAndPlanWarnOfAContextPastTheModelsPositions) {
    const std::string said = "the context of 32,768 tokens exceeds the model's 8,192 max positions";
    const std::string fit = "fit --model llama-3-70b --context 32k --batch 16 --gpu h100-sxm --gpus 4 --kv-dtype fp8";
    const CliRun text = cli(fit);
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("warning: " + said), std::string::npos) << text.out;
    EXPECT_TRUE(has_warning(json_of(cli(fit + " --json")), said));
    const std::string plan = "plan --model llama-3-70b --context 32k --batch 16 --gpu h100-sxm --kv-dtype fp8";
    EXPECT_NE(cli(plan).out.find("warning: " + said), std::string::npos);
    EXPECT_TRUE(has_warning(json_of(cli(plan + " --json")), said));
}

TEST(CliLimits, AModelWithOnlyWindowedAttentionHasNoContextLimit) {
    // RecurrentGemma keeps 2,048 tokens at most: no context is too long, and 2^40 (the search's end) is not shown.
    const CliRun r = cli("fit --model recurrentgemma-9b --gpu a100-80gb --context 1e13");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("max context:     no limit: every attention layer keeps only its window"), std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("1,099,511,627,776"), std::string::npos) << r.out;
    const auto v = json_of(cli("fit --model recurrentgemma-9b --gpu a100-80gb --context 1e13 --json"));
    EXPECT_TRUE(v.find("max_context")->is_null());
    const CliRun plan = cli("plan --model recurrentgemma-9b --gpu a100-80gb --context 1e13");
    EXPECT_NE(plan.out.find("no limit"), std::string::npos) << plan.out;
}

TEST(CliLimits, AStateSpaceModelWithADraftCountsTheDraftsCache) {
    // Mamba-Codestral keeps no KV cache of its own; its draft's 16 attention layers do (32,768 bytes a token).
    const CliRun r = cli("fit --model mamba-codestral-7b --draft llama-3.2-1b --gpu h100-sxm --context 32k --batch 4");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("its KV 32,768 bytes a token"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("cache holds:     no KV cache"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" tokens in all"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("never (the model keeps no KV cache; the draft's is not in the step)"), std::string::npos)
        << r.out;
    // Without the draft there is none.
    const CliRun alone = cli("fit --model mamba-codestral-7b --gpu h100-sxm --context 32k --batch 4");
    EXPECT_NE(alone.out.find("cache holds:     no KV cache"), std::string::npos) << alone.out;
}

TEST(CliLimits, AGpuMemoryWithoutItsUnitIsRefusedAndACatalogGpuGivenOtherMemorySaysSo) {
    // "80" is a unit left off, as --gpu-bandwidth 3350 is: not an 80-byte GPU that does not fit.
    const CliRun bare = cli("fit --model llama-3-8b --gpu-memory 80 --gpu-bandwidth 3TB");
    EXPECT_EQ(bare.status, 2);
    EXPECT_NE(bare.err.find("--gpu-memory: '80' is 80 bytes, less than any GPU's memory: give its unit"),
              std::string::npos)
        << bare.err;
    // An H100 with 40 GiB is not "NVIDIA H100 SXM 80GB, 40.0 GiB each".
    const CliRun half = cli("fit --model llama-3-8b --gpu h100-sxm --gpu-memory 40GiB");
    ASSERT_EQ(half.status, 0) << half.err;
    EXPECT_NE(half.out.find("1 × NVIDIA H100 SXM 80GB with 40.0 GiB, 40.0 GiB (42.9 GB) each"), std::string::npos)
        << half.out;
}

TEST(CliLimits, ASweepThatWouldRunBackwardsIsRefusedOrStartsAtTheBeginning) {
    CliRun r = cli("sweep --model llama-3-8b --from 128k --to 128 --points 5 --csv");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--from: the curve starts at 131,072 tokens, after its end at 128"), std::string::npos)
        << r.err;
    // A curve that ends before the default start of 128 starts at 1 instead of being a single row.
    r = cli("sweep --model llama-3-8b --to 100 --points 3 --csv");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out,
              "tokens,MHA bytes,GQA-8 bytes,MQA bytes\n1,524288,131072,16384\n10,5242880,1310720,163840\n"
              "100,52428800,13107200,1638400\n");
    // The model's own curve past 2^64 bytes is an error naming the option typed, not the scenario's key.
    r = cli("sweep --model llama-3-8b --to 1e15");
    EXPECT_NE(r.err.find("sweep: --to: the curve's end at"), std::string::npos) << r.err;
    // Without --to the end is the model's max positions, which the user did not set: lowered, and said, never
    // refused (MiniMax-M1's 10^6 tokens for 10^8 sequences would pass 2^64 bytes).
    r = cli("sweep --model minimax-m1 --batch 1e8 --points 3 --csv");
    ASSERT_EQ(r.status, 0) << r.err;
    r = cli("sweep --model minimax-m1 --batch 1e8 --points 3");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("warning: the chart ends at"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("past it the cache of 100,000,000 sequences would pass 2^64 bytes (16 EiB)"),
              std::string::npos)
        << r.out;
    // A --from past that lowered end is refused, not quietly moved before it.
    r = cli("sweep --model minimax-m1 --batch 1e8 --from 8M");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--from: the curve starts at 8,388,608 tokens, after its end at 4,500,015"), std::string::npos)
        << r.err;
    // Another layout's is left out of the curves and said, as kv and compare leave it out of the comparison.
    r = cli("sweep --model llama-3-8b --to 1e14 --points 3");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::size_t head = r.out.find("\ntokens");
    ASSERT_NE(head, std::string::npos) << r.out;
    const std::string columns = r.out.substr(head + 1, r.out.find('\n', head + 1) - head - 1);
    EXPECT_EQ(columns.find("MHA"), std::string::npos) << columns;
    EXPECT_NE(columns.find("GQA-8 *"), std::string::npos) << columns;
    EXPECT_NE(r.out.find("warning: MHA is left out of the chart: its cache would pass 2^64 bytes (16 EiB) before the "
                         "chart's end at 100,000,000,000,000 tokens"),
              std::string::npos)
        << r.out;
}

TEST(CliLimits, GpuSizesAndBandwidthsReadAsTheProgramPrintsThem) {
    // "3.35 TB/s" as `gpus` prints it; PiB and EiB as units; a bandwidth with no unit is not taken as bytes/s.
    CliRun r = cli("fit --model llama-3-8b --gpu-memory 80GiB --gpu-bandwidth '3.35 TB/s' --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(u64(json_of(r), "memory_bytes_per_gpu"), 80ull << 30);
    r = cli("fit --model llama-3-8b --gpu-memory 80GiB --gpu-bandwidth 3350");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--gpu-bandwidth: '3350' is 3,350 bytes/s, slower than any memory: give its unit"),
              std::string::npos)
        << r.err;
    // Beyond 1 PiB a GPU's memory is refused, never clamped into a budget of 8 EiB.
    r = cli("fit --model llama-3-8b --gpu-memory 2EiB --gpu-bandwidth 1TB");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--gpu-memory: the GPU's memory must be at most 1 PiB"), std::string::npos) << r.err;
    r = cli("fit --model llama-3-8b --gpu-memory 16EiB --gpu-bandwidth 1TB");
    EXPECT_NE(r.err.find("--gpu-memory: '16EiB' is too large (more than 2^64)"), std::string::npos) << r.err;
    // And a bandwidth far past any memory's, which printed a step of 0.0000 ms.
    r = cli("fit --model llama-3-8b --gpu-memory 80GiB --gpu-bandwidth 18446744073709551615");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--gpu-bandwidth: the GPU's memory bandwidth must be at most 1 PB/s"), std::string::npos)
        << r.err;
    r = cli("fit --model llama-3-8b --gpu-memory 1PiB --gpu-bandwidth 1TB --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(u64(json_of(r), "memory_bytes_per_gpu"), 1ull << 50);
}

TEST(CliLimits, ADecimalCommaIsRefusedInSizesAndCountsAndDigitGroupsStay) {
    // The command line takes a decimal point in every locale: "1,5GiB" and "1,5k" were read as 1.5 before, while
    // "0,85" was refused; now each says the spelling that works. "131,072" groups digits, as the program prints.
    const std::pair<std::string, std::string> refused[] = {
        {"fit --model llama-3-8b --gpu-memory 1,5GiB --gpu-bandwidth 1TB",
         "--gpu-memory: '1,5GiB': the command line takes a decimal point in every locale (1.5GiB)"},
        {"kv --model llama-3-8b --context 1,5k",
         "--context: '1,5k': the command line takes a decimal point in every locale (1.5k)"},
        // Spaces that group digits make the comma a decimal one (1 000,5).
        {"kv --model llama-3-8b --context '1 000,5k'",
         "--context: '1 000,5k': the command line takes a decimal point in every locale"},
        // A plain decimal takes no comma at all, whatever digits follow it.
        {"simulate --model llama-3-8b --gpu h100-sxm --rate 1,500",
         "--rate: '1,500': the command line takes a decimal point in every locale (1.500)"},
    };
    for (const auto& [args, said] : refused) {
        const CliRun r = cli(args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_NE(r.err.find(said), std::string::npos) << args << ": " << r.err;
    }
    const CliRun grouped = cli("kv --model llama-3-8b --context 131,072 --json");
    ASSERT_EQ(grouped.status, 0) << grouped.err;
    EXPECT_EQ(u64(json_of(grouped), "context_tokens"), 131072u);
}

TEST(CliLimits, ABlockPastAnyEnginesIsNamedNotBlamedOnTheContext) {
    const CliRun r = cli("kv --model llama-3-8b --block-size 1e15");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--block-size: a block of 1,000,000,000,000,000 tokens is more than the 1,048,576"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("--context"), std::string::npos) << r.err;
}

TEST(CliLimits, ACacheFormatTheEngineDoesNotKeepIsSaid) {
    // llama.cpp's --cache-type-k/-v have no fp8 (common/arg.cpp), and ggml's q8_0 is no format of vLLM's.
    const std::pair<std::string, std::string> cases[] = {
        {"--engine llama.cpp --kv-dtype fp8", "not exact: llama.cpp keeps no fp8_e4m3 cache"},
        {"--engine ollama --kv-dtype int8", "not exact: llama.cpp keeps no int8 cache"},
        {"--engine vllm --kv-dtype q8_0", "not exact: vllm keeps no q8_0 cache"},
        {"--engine vllm --kv-dtype int4", "not exact: vllm keeps no int4 cache"},
        {"--engine sglang --kv-dtype int8", "not exact: sglang keeps no int8 cache"},
    };
    for (const auto& [args, said] : cases) {
        const CliRun r = cli("fit --model llama-3-8b --gpu rtx-4090 " + args);
        ASSERT_EQ(r.status, 0) << args << ": " << r.err;
        EXPECT_NE(r.out.find(said), std::string::npos) << args << ": " << r.out;
    }
    const CliRun fine = cli("fit --model llama-3-8b --gpu rtx-4090 --engine llama.cpp --kv-dtype q8_0");
    ASSERT_EQ(fine.status, 0) << fine.err;
    EXPECT_EQ(fine.out.find("keeps no"), std::string::npos) << fine.out;
}

// Llama 3.1 70B's 131 GiB of bf16 weights on a 24 GiB card: the engine has no budget for a cache at all, which is
// said as such, never as a negative budget ("-111 GiB") that reads as one.
TEST(CliLimits, NoKvBudgetIsSaidAsNoneNotAsANegativeSize) {
    const CliRun r = cli("fit --model llama-3.1-70b --gpu rtx-4090 --context 8k");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("KV budget:       none: the weights and reserves exceed the memory the engine may use by "
                         "111 GiB per GPU"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("KV budget:       -"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("DOES NOT FIT: short by 113 GiB per GPU"), std::string::npos) << r.out;
    const CliRun fits = cli("fit --model llama-3-8b --gpu h100-sxm --context 8k");
    ASSERT_EQ(fits.status, 0) << fits.err;
    EXPECT_NE(fits.out.find("KV budget:       5"), std::string::npos) << fits.out;
    EXPECT_NE(fits.out.find(" GiB per GPU\nKV needed"), std::string::npos) << fits.out;
}

// A scenario file of a catalog model deployed on a catalog GPU with `engine`, in the temporary folder under a name
// starting with `name` (spaces and accents welcome), as the window saves one.
std::filesystem::path saved_scenario(const std::string& name, const std::string& model, const std::string& gpu,
                                     kvscope::Engine engine) {
    kvscope::Scenario saved;
    saved.arch = kvscope::Catalog::builtin().find_model(model)->model.arch;
    saved.model_id = model;
    kvscope::Deployment d;
    d.gpu = *kvscope::Catalog::builtin().find_gpu(gpu);
    d.engine = engine;
    saved.deployment = d;
    const auto path =
        std::filesystem::temp_directory_path() / (name + " " + std::to_string(::getpid()) + ".kvscope.json");
    std::ofstream(path) << kvscope::scenario_to_json(saved);
    return path;
}

// An option of another engine than the one fitted (--ubatch is llama.cpp's -ub) is said to change nothing, in the text
// and in the JSON's warnings, never taken in silence; the engines that read it say nothing.
TEST(CliLimits, AnotherEnginesOptionIsSaidToChangeNothing) {
    const CliRun vllm = cli("fit --model llama-3-8b --gpu h100-sxm --ubatch 1024");
    ASSERT_EQ(vllm.status, 0) << vllm.err;
    EXPECT_NE(vllm.out.find("note: --ubatch is llama.cpp's setting; vllm has none, so it changes nothing here"),
              std::string::npos)
        << vllm.out;
    const CliRun json = cli("fit --model llama-3-8b --gpu h100-sxm --engine llama.cpp --enforce-eager --json");
    ASSERT_EQ(json.status, 0) << json.err;
    EXPECT_NE(json.out.find("--enforce-eager is vLLM's setting; llama.cpp has none, so it changes nothing here"),
              std::string::npos)
        << json.out;
    for (const char* read : {"fit --engine llama.cpp --ubatch 1024", "fit --engine ollama --ubatch 1024",
                             "fit --enforce-eager", "fit --engine tensorrt-llm --max-num-tokens 4096",
                             "simulate --engine sglang --max-num-seqs 8 --requests 20"}) {
        const std::string command(read);
        const std::size_t space = command.find(' ');
        const CliRun r = cli(command.substr(0, space) + " --model llama-3-8b --gpu h100-sxm" + command.substr(space));
        ASSERT_EQ(r.status, 0) << read << ": " << r.err;
        EXPECT_EQ(r.out.find("changes nothing here"), std::string::npos) << read << ": " << r.out;
    }
    // SGLang's scheduler reads the batch limits when it serves traffic; its fit does not read max_running_requests.
    const CliRun sglang = cli("fit --model llama-3-8b --gpu h100-sxm --engine sglang --max-num-seqs 8");
    ASSERT_EQ(sglang.status, 0) << sglang.err;
    EXPECT_NE(sglang.out.find("note: --max-num-seqs is vLLM's setting (SGLang's max_running_requests, which its "
                              "simulation reads); SGLang's fit has none, so it changes nothing here"),
              std::string::npos)
        << sglang.out;
    // Its chunked_prefill_size sizes its own fraction: read by the fit (0.835 becomes 0.383 on an H100 at 32,768),
    // said to change nothing once a fraction is given.
    const CliRun chunk = cli("fit --model llama-3-8b --gpu h100-sxm --engine sglang --max-num-batched-tokens 32k");
    ASSERT_EQ(chunk.status, 0) << chunk.err;
    EXPECT_EQ(chunk.out.find("changes nothing here"), std::string::npos) << chunk.out;
    EXPECT_NE(chunk.out.find("sglang (fraction 0.383)"), std::string::npos) << chunk.out;
    EXPECT_NE(chunk.out.find("1.5 x chunked prefill 32,768 (given)"), std::string::npos) << chunk.out;
    const CliRun given =
        cli("fit --model llama-3-8b --gpu h100-sxm --engine sglang --max-num-batched-tokens 32k --utilization 0.8");
    ASSERT_EQ(given.status, 0) << given.err;
    EXPECT_NE(given.out.find("note: --max-num-batched-tokens is vLLM's setting (SGLang's chunked_prefill_size, which "
                             "its simulation reads, and its own memory fraction, which the fraction given replaces), "
                             "so it changes nothing here"),
              std::string::npos)
        << given.out;
    // Where what SGLang keeps back takes the whole GPU, it does not start: refused, naming the option.
    const CliRun whole = cli("fit --model llama-3-8b --gpu rtx-4090 --engine sglang --max-num-batched-tokens 32k");
    EXPECT_EQ(whole.status, 2);
    EXPECT_NE(whole.err.find("SGLang keeps back 49,840 MiB"), std::string::npos) << whole.err;
    EXPECT_NE(whole.err.find("a smaller chunked prefill (--max-num-batched-tokens)"), std::string::npos) << whole.err;
    EXPECT_NE(whole.err.find("its default mem_fraction_static at -1.029: SGLang does not start"), std::string::npos)
        << whole.err;
    // Beside a saved scenario too.
    const auto path = saved_scenario("other engine", "llama-3-8b", "h100-sxm", kvscope::Engine::tensorrt_llm);
    const CliRun file = cli("fit --scenario '" + path.string() + "' --ubatch 256");
    std::filesystem::remove(path);
    ASSERT_EQ(file.status, 0) << file.err;
    EXPECT_NE(file.out.find("note: --ubatch is llama.cpp's setting; tensorrt-llm has none"), std::string::npos)
        << file.out;
}

TEST(CliLimits, ProbeValuesOutOfRangeAreRefusedNotRunAsTheNearest) {
    const std::pair<const char*, const char*> cases[] = {
        {"probe --backend cpu --runs 0", "--runs: 0 is outside 1 … 1,000"},
        {"probe --backend cpu --runs 1M", "--runs: 1,048,576 is outside 1 … 1,000"},
        {"probe --backend cpu --memory-limit 0", "--memory-limit: must be more than 0 bytes"},
        {"stopwatch --backend cpu --tokens 1e9", "--tokens: 1,000,000,000 is outside 1 … 4,096"},
    };
    for (const auto& [args, said] : cases) {
        const CliRun r = cli(args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_NE(r.err.find(said), std::string::npos) << args << ": " << r.err;
    }
}

TEST(CliLimits, TheProbeSaysWhatKvSaysOfTheScenarioAndOfAQuantizedCheckpoint) {
    // GPT-2 was trained for 1,024 positions: the probe at 2k says so, as kv does.
    const std::string args = "probe --backend cpu --model gpt2 --context 2k --runs 1 --ceiling-size 16MiB";
    const std::string said = "the context of 2,048 tokens exceeds the model's 1,024 max positions";
    const CliRun text = cli(args);
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("warning: " + said), std::string::npos) << text.out;
    EXPECT_TRUE(has_warning(json_of(cli(args + " --json")), said));
    // A model with no attention: nothing was checked against float64, so no error figure is given.
    const auto state =
        json_of(cli("probe --backend cpu --model mamba-codestral-7b --context 64 --ceiling-size 16MiB "
                    "--json"));
    EXPECT_TRUE(state.find("max_rel_error")->is_null());
    // An AWQ checkpoint's step multiplies plain weights of its shapes, and the JSON says so as the text does.
    const auto path = std::filesystem::temp_directory_path() / ("kvscope-awq-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 1024, "vocab_size": 1000,
        "torch_dtype": "float16", "max_position_embeddings": 4096,
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}})";
    const std::string step =
        "probe --step --backend cpu --config " + path.string() + " --context 64 --runs 1 --ceiling-size 16MiB";
    const CliRun st = cli(step);
    const CliRun sj = cli(step + " --json");
    std::filesystem::remove(path);
    ASSERT_EQ(st.status, 0) << st.err;
    EXPECT_NE(st.out.find("(the checkpoint's AWQ"), std::string::npos) << st.out;
    EXPECT_TRUE(has_warning(json_of(sj), "is multiplied as fp16 here")) << sj.out;
}

TEST(CliLimits, AConfigThatIsAFolderOrHasADtypeThatIsNotANameIsSaidAsSuch) {
    const auto dir = std::filesystem::temp_directory_path() / ("kvscope-folder-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    CliRun r = cli("kv --config " + dir.string());
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("is a folder, not a file (--model-dir"), std::string::npos) << r.err;
    const auto path = dir / "config.json";
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 8, "num_attention_heads": 8,
        "hidden_size": 512, "torch_dtype": 16})";
    r = cli("kv --config " + path.string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("fp16 (torch_dtype is not a name of a format (\"bfloat16\"); fp16 used)"), std::string::npos)
        << r.out;
    // A key given twice: the last is read, as Python reads it, and that is said (JSON: in the warnings).
    std::ofstream(path) << "{\"model_type\": \"llama\", \"num_attention_heads\": 8, \"hidden_size\": 512,\n"
                           "\"num_hidden_layers\": 32,\n\"num_hidden_layers\": 16}";
    r = cli("kv --config " + path.string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("16 layers"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("num_hidden_layers is given twice (lines 2 and 3): the last is read"), std::string::npos)
        << r.out;
    EXPECT_TRUE(has_warning(json_of(cli("kv --config " + path.string() + " --json")), "is given twice"));
    std::filesystem::remove_all(dir);
}

TEST(CliLimits, AUnifiedMemoryComputersShareIsSaidAndBounded) {
    const std::string fit = "fit --model llama-3.1-8b --gpu m4-max-128gb --engine llama.cpp --context 32k";
    const CliRun mac = cli(fit);
    ASSERT_EQ(mac.status, 0) << mac.err;
    EXPECT_NE(mac.out.find("unified memory: the GPU uses 96.0 GiB (75%) of the machine's 128 GiB: macOS"),
              std::string::npos)
        << mac.out;
    // The wired limit raised: the share as given.
    const CliRun raised = cli(fit + " --gpu-memory 110GiB --json");
    ASSERT_EQ(raised.status, 0) << raised.err;
    EXPECT_NE(raised.out.find("of the machine's 128 GiB, as given"), std::string::npos) << raised.out;
    const CliRun over = cli(fit + " --gpu-memory 200GiB");
    EXPECT_EQ(over.status, 2);
    EXPECT_NE(over.err.find("--gpu-memory: more than the machine's 128 GiB of unified memory"), std::string::npos)
        << over.err;
    const CliRun table = cli("gpus");
    EXPECT_NE(table.out.find("of 128 GiB unified"), std::string::npos) << table.out;
    // A saved Mac scenario given another share: still that machine, named once with its share.
    const auto path = saved_scenario("mac é", "llama-3.1-8b", "m4-max-128gb", kvscope::Engine::llama_cpp);
    const CliRun reopened = cli("fit --scenario '" + path.string() + "' --gpu-memory 110GiB --json");
    std::filesystem::remove(path);
    ASSERT_EQ(reopened.status, 0) << reopened.err;
    EXPECT_NE(reopened.out.find("Apple M4 Max 128GB (16-core CPU, 40-core GPU) with 110 GiB\""), std::string::npos)
        << reopened.out;
    EXPECT_NE(reopened.out.find("of the machine's 128 GiB, as given"), std::string::npos) << reopened.out;
}

TEST(CliLimits, TheCatalogsCsvHoldsExactFiguresUnderTheJsonsNames) {
    const CliRun gpus = cli("gpus --csv");
    ASSERT_EQ(gpus.status, 0) << gpus.err;
    EXPECT_TRUE(gpus.out.starts_with("id,name,memory_bytes,bandwidth_bytes_per_s,bf16_tflops,unified_memory_bytes\n"))
        << gpus.out;
    // The H100 SXM's 85,520,809,984 bytes (79.6 GiB) and 3.35 TB/s, as gpus --json gives them.
    const auto json = json_of(cli("gpus --json"));
    for (const auto& g : json.find("gpus")->items())
        if (g.find("id")->as_string() == "h100-sxm") {
            const std::string row = "h100-sxm,NVIDIA H100 SXM 80GB," + std::to_string(u64(g, "memory_bytes")) + "," +
                                    std::to_string(u64(g, "bandwidth_bytes_per_s")) + ",";
            EXPECT_TRUE(g.find("unified_memory_bytes")->is_null());
            EXPECT_NE(gpus.out.find("\n" + row), std::string::npos) << row << "\n" << gpus.out;
        } else if (g.find("id")->as_string() == "rtx-5080") {
            // No vendor BF16 figure: null in JSON, an empty cell in CSV, a dash in the table — never 0 TFLOP/s.
            EXPECT_TRUE(g.find("bf16_tflops")->is_null());
            EXPECT_NE(gpus.out.find("\nrtx-5080,NVIDIA GeForce RTX 5080 16GB,17179869184,960000000000,,\n"),
                      std::string::npos)
                << gpus.out;
        }
    const CliRun table = cli("gpus");
    EXPECT_EQ(table.out.find(" 0 TFLOP/s"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("(— no dense bf16 figure in a vendor document"), std::string::npos) << table.out;
    const CliRun models = cli("models --csv");
    ASSERT_EQ(models.status, 0) << models.err;
    EXPECT_TRUE(
        models.out.starts_with("id,name,layers,query_heads,kv_heads,head_dim,attention,max_positions,"
                               "parameters,parameters_estimated,kv_dtype,bytes_per_token\n"))
        << models.out;
    // Llama 3 8B: 8,192 positions, its published 8,030,261,248 parameters, 131,072 bytes a token in bf16.
    EXPECT_NE(models.out.find("\nllama-3-8b,Llama 3 8B,32,32,8,128,GQA,8192,8030261248,false,bf16,131072\n"),
              std::string::npos)
        << models.out;
    EXPECT_EQ(models.out.find("GiB"), std::string::npos);
}

}  // namespace
