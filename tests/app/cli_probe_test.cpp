// kvscope-cli's probe commands end to end (probe, probe --step, stopwatch, devices): the real binary, its
// output, its exit status and the measurements it keeps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/resource.h>

#include "cli_run.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/json.h"

namespace {

TEST(Cli, ProbeOnTheCpuChecksThePredictionAndReportsBandwidth) {
    const CliRun r =
        cli("probe --backend cpu --model kvscope-teaching-32l --context 1k --kv-dtype fp16 --runs 2 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(v.find("status")->as_string(), "ok");
    EXPECT_EQ(v.find("backend")->as_string(), "cpu");
    EXPECT_EQ(u64(v, "predicted_bytes"), 512ull << 20);  // 512 KiB per token × 1024
    EXPECT_EQ(u64(v, "requested_bytes"), 512ull << 20);
    EXPECT_GT(u64(v, "measured_bytes"), 500ull << 20);
    EXPECT_EQ(u64(v, "granularity_bytes"), 4096u);
    EXPECT_EQ(v.find("granularity_source")->as_string(), "the system's page size");
    for (const char* key : {"decode_attention_ms", "kv_read_gbps", "ceiling_gbps", "fraction_of_ceiling"})
        EXPECT_GT(v.find(key)->as_double(), 0.0) << key;
    EXPECT_LT(v.find("max_rel_error")->as_double(), 1e-4);
    // How the step was computed, so that figures from two machines can be compared.
    EXPECT_NE(v.find("kernel")->as_string().find("flash-decoding order"), std::string::npos);
    EXPECT_EQ(u64(v, "heads_per_row"), 1u);  // the teaching model's MHA
}

TEST(Cli, AProbeOfALatentReadByEveryHeadSaysItsFractionMeasuresTheKernel) {
    // DeepSeek-V3's one latent row serves 128 query heads: 1% of the ceiling is arithmetic, not slow memory, and the
    // report says so; Llama 3 8B's groups of 4 read the cache as memory-bound, without the note.
    CliRun r = cli("probe --backend cpu --model deepseek-v3 --context 256 --runs 1");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("note: each cached row is read by 128 query heads, so this step is bound by arithmetic, not "
                         "by reading the cache: the fraction of the ceiling measures the kernel, not the memory\n"),
              std::string::npos)
        << r.out;
    r = cli("probe --backend cpu --model deepseek-v3 --context 256 --runs 1 --json");
    const auto v = json_of(r);
    EXPECT_EQ(u64(v, "heads_per_row"), 128u);
    bool said = false;  // the same words in the JSON's notes
    for (const auto& n : v.find("notes")->items())
        said = said || n.as_string().starts_with("each cached row is read by 128");
    EXPECT_TRUE(said) << r.out;
    r = cli("probe --backend cpu --model llama-3-8b --context 256 --runs 1");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("bound by arithmetic"), std::string::npos) << r.out;
}

TEST(Cli, ProbeRefusesWhatDoesNotFitAndFormatsItCannotStore) {
    CliRun r = cli("probe --backend cpu --model llama-3-8b --context 8k --memory-limit 100MiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("out_of_memory"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("memory limit"), std::string::npos) << r.err;
    r = cli("probe --backend cpu --model llama-3-8b --context 8k --kv-dtype int4");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(
        r.err.find("the probe stores fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, q8_0 or q4_0 (not int4: engines"),
        std::string::npos)
        << r.err;
    r = cli("probe --backend cpu --model llama-3-8b --context 1k --ceiling-size 4KiB");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--ceiling-size: 4.00 KiB is too small"), std::string::npos) << r.err;
    r = cli("probe --backend tpu --model llama-3-8b");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("'tpu' is not a backend"), std::string::npos) << r.err;
}

// The peak resident memory of the largest child this test process has waited for (each test runs in a process of
// its own under ctest).
long children_peak_kib() {
    rusage u{};
    ::getrusage(RUSAGE_CHILDREN, &u);
    return u.ru_maxrss;
}

TEST(Cli, AProbeOfAHugeBatchIsRefusedBeforeItsBuffersAreListed) {
    // 10^6 sequences of GPT-2's 24 buffers: more than the probe keeps track of, refused at once on the batch (a list
    // of 24 million buffers took 1.8 GB and 11 s before it was refused, and ran out of memory under a smaller cap).
    for (const char* step : {"", " --step"}) {
        const CliRun r = cli(std::string("probe --backend cpu --model gpt2 --context 256 --batch 1000000 "
                                         "--memory-limit 2GiB") +
                             step);
        EXPECT_EQ(r.status, 2) << step << r.err;
        EXPECT_NE(r.err.find("24 buffers a sequence x 1,000,000 sequences is more than the 4,194,304 buffers it "
                             "keeps track of; lower the batch"),
                  std::string::npos)
            << r.err;
    }
    // 170,000 sequences (4.08 million buffers) are weighed against the limit before their list is built.
    const CliRun r = cli("probe --backend cpu --model gpt2 --context 256 --batch 170000 --memory-limit 2GiB");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("out_of_memory: the cache needs 1.46 TiB, and the probe"), std::string::npos) << r.err;
    // That list alone is 230 MB; the CLI itself (under the sanitizers too) far less.
    EXPECT_LT(children_peak_kib(), 128L << 10);
}

TEST(Cli, TheReadCeilingsBufferIsNamedAndKeptWithinTheMemoryLimit) {
    // 128 MiB of cache is within a 200 MiB limit; a 1 GiB ceiling buffer is not, and the message says which.
    CliRun r = cli("probe --backend cpu --context 256 --memory-limit 200MiB --ceiling-size 1GiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("the cache needs 128 MiB, and the probe"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1.00 GiB for the read ceiling (--ceiling-size): more than the 200 MiB the memory limit "
                         "allows"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("or the read ceiling's size"), std::string::npos) << r.err;
    // The step measures its ceiling before it allocates the model: within the limit too.
    r = cli("probe --backend cpu --step --model gpt2 --context 16 --memory-limit 200MiB --ceiling-size 1GiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("the read ceiling's 1.00 GiB buffer is more than the 200 MiB the memory limit allows; "
                         "--ceiling-size sets a smaller one"),
              std::string::npos)
        << r.err;
}

TEST(Cli, ProbeStepTimesTheWholeModelBesideTheCalculatorsFloor) {
    const auto path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-step-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 1024, "vocab_size": 1000,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096})";
    const std::string args = "probe --step --backend cpu --config " + path.string() +
                             " --context 64 --batch 2 --runs 1 --ceiling-size 16MiB";
    const CliRun r = cli(args + " --json");
    const CliRun text = cli(args);
    // --weight-dtype fp8_e4m3: one byte a weight, half of bf16's; only --step takes it, and only the formats
    // the step multiplies.
    const CliRun fp8 = cli(args + " --weight-dtype fp8_e4m3 --json");
    const CliRun no_step = cli("probe --backend cpu --config " + path.string() + " --weight-dtype fp8_e4m3");
    const CliRun q4 = cli(args + " --weight-dtype q4_0");
    std::filesystem::remove(path);
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const auto doc = kvscope::json::parse(r.out);
    ASSERT_TRUE(doc.value.has_value()) << r.out;
    const kvscope::json::Value& v = *doc.value;
    EXPECT_EQ(v.find("status")->as_string(), "ok");
    EXPECT_EQ(v.find("weight_dtype")->as_string(), "bf16");
    const kvscope::json::Value& st = *v.find("step");
    EXPECT_EQ(u64(st, "layers_run"), 2u);
    EXPECT_EQ(u64(st, "layers_total"), 2u);
    EXPECT_FALSE(st.find("scaled")->as_bool());
    EXPECT_GT(st.find("step_ms")->as_double(), 0.0);
    EXPECT_GT(st.find("predicted_step_ms")->as_double(), 0.0);
    // predicted ÷ measured, and tokens/s per sequence and for both sequences.
    EXPECT_NEAR(st.find("fraction_of_prediction")->as_double(),
                st.find("predicted_step_ms")->as_double() / st.find("step_ms")->as_double(), 1e-9);
    EXPECT_NEAR(st.find("tokens_per_s_total")->as_double(), 2 * st.find("tokens_per_s")->as_double(), 1e-9);
    // 2 sequences x 2 layers x (K + V) x 2 heads x 64 dims x 64 tokens x 2 bytes (bf16, the config's dtype).
    EXPECT_EQ(u64(st, "kv_bytes_read"), 2u * 2 * 2 * 2 * 64 * 64 * 2);
    ASSERT_TRUE(st.find("max_rel_error")->is_number());
    EXPECT_LT(st.find("max_rel_error")->as_double(), 1e-4);
    for (const char* k : {"weights_ms", "attention_ms", "other_ms"})
        EXPECT_GE(st.find("breakdown")->find(k)->as_double(), 0.0) << k;
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("measured/predicted:"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("2 of 2 run"), std::string::npos) << text.out;
    // Only probe takes --step.
    EXPECT_EQ(cli("kv --model llama-3-8b --step").status, 2);
    ASSERT_EQ(fp8.status, 0) << fp8.err << fp8.out;
    const auto fp8_doc = kvscope::json::parse(fp8.out);
    ASSERT_TRUE(fp8_doc.value.has_value()) << fp8.out;
    EXPECT_EQ(fp8_doc.value->find("weight_dtype")->as_string(), "fp8_e4m3");
    const kvscope::json::Value& f8 = *fp8_doc.value->find("step");
    EXPECT_EQ(2 * u64(f8, "weights_bytes_read"), u64(st, "weights_bytes_read"));
    EXPECT_LT(f8.find("max_rel_error")->as_double(), 1e-4);  // the same fp8 values, decoded exactly
    EXPECT_EQ(no_step.status, 2);
    EXPECT_NE(no_step.err.find("--weight-dtype: only probe --step multiplies weights"), std::string::npos)
        << no_step.err;
    EXPECT_NE(q4.status, 0);
    EXPECT_NE(q4.err.find("weight_dtype: the step multiplies fp32, fp16, bf16 or fp8_e4m3 weights (not q4_0)"),
              std::string::npos)
        << q4.err;
}

TEST(Cli, AStepSaysTheScenariosWarningsAndAFailedOneGivesNoFigures) {
    // GPT-2 at 2k: past its 1,024 positions, as kv and probe say; the step says so too, in the text and the JSON.
    const std::string args = "probe --step --backend cpu --model gpt2 --context 2k --runs 1 --ceiling-size 16MiB";
    const CliRun json = cli(args + " --json");
    ASSERT_EQ(json.status, 0) << json.err;
    const auto parsed = kvscope::json::parse(json.out);
    ASSERT_TRUE(parsed.value.has_value()) << json.out;
    const kvscope::json::Value* warnings = parsed.value->find("warnings");
    ASSERT_TRUE(warnings != nullptr && warnings->items().size() == 1) << json.out;
    EXPECT_EQ(warnings->items().front().as_string(),
              "the context of 2,048 tokens exceeds the model's 1,024 max positions");
    const CliRun text = cli(args);
    EXPECT_NE(text.out.find("warning: the context of 2,048 tokens exceeds"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("(1 run)"), std::string::npos) << text.out;
    // Refused for memory: "step" is null, not a row of zeros a script could read as measured.
    const CliRun refused = cli(args + " --memory-limit 1MiB --json");
    EXPECT_EQ(refused.status, 1);
    const auto doc = kvscope::json::parse(refused.out);
    ASSERT_TRUE(doc.value.has_value()) << refused.out;
    EXPECT_EQ(doc.value->find("status")->as_string(), "out_of_memory");
    ASSERT_NE(doc.value->find("step"), nullptr);
    EXPECT_TRUE(doc.value->find("step")->is_null());
    EXPECT_NE(doc.value->find("message")->as_string().find("64.0 MiB kept for activations and scratch"),
              std::string::npos)
        << refused.out;
    // A context whose cache passes 2^64 bytes is no input, as probe says it, not a machine short of memory.
    const CliRun huge = cli("probe --step --backend cpu --model llama-3-8b --context 1e15");
    EXPECT_EQ(huge.status, 2) << huge.err;
    EXPECT_NE(huge.err.find("invalid_input: context_tokens: a context of 1,000,000,000,000,000 tokens needs more "
                            "than 2^64 bytes"),
              std::string::npos)
        << huge.err;
}

TEST(Cli, AStepOfAGgufInAFormatItDoesNotMultiplyRunsInBf16AndSaysSo) {
    // A q8_0 GGUF: the step multiplies bf16 weights of the same shapes, and says so; --weight-dtype q8_0, given by
    // the user, is refused with the formats it takes.
    kvscope::gguf::Writer w;
    w.str("general.architecture", "llama").u32("llama.block_count", 2).u32("llama.context_length", 4096);
    w.u32("llama.embedding_length", 256).u32("llama.feed_forward_length", 512).u32("llama.attention.head_count", 4);
    w.u32("llama.attention.head_count_kv", 2).u32("llama.vocab_size", 1000);
    w.tensor("token_embd.weight", {256, 1000}, 8).tensor("blk.0.ffn_gate.weight", {256, 512}, 8);
    const auto path = std::filesystem::temp_directory_path() / ("kvscope-q8 " + std::to_string(::getpid()) + ".gguf");
    w.write_file(path.string());
    const std::string args =
        "probe --step --backend cpu --gguf '" + path.string() + "' --context 64 --runs 1 --ceiling-size 16MiB";
    const CliRun r = cli(args + " --json");
    const CliRun refused = cli(args + " --weight-dtype q8_0");
    std::filesystem::remove(path);
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const auto doc = kvscope::json::parse(r.out);
    ASSERT_TRUE(doc.value.has_value()) << r.out;
    EXPECT_EQ(doc.value->find("weight_dtype")->as_string(), "bf16");
    EXPECT_NE(r.out.find("this run uses bf16 instead of q8_0"), std::string::npos) << r.out;
    EXPECT_EQ(refused.status, 2) << refused.err;
    EXPECT_NE(refused.err.find("fp8_e4m3 weights (not q8_0)"), std::string::npos) << refused.err;
}

TEST(Cli, AStepMeasuredHereIsKeptAndFitShowsItOnTheGpuItRanOn) {
    // A folder with a space and accents, given with --data-dir.
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope données " + std::to_string(::getpid()));
    const auto config = folder / "modèle.json";
    std::filesystem::create_directories(folder);
    std::ofstream(config) << R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 1024, "vocab_size": 1000,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096})";
    const std::string scenario =
        " --config '" + config.string() + "' --context 64 --batch 2 --data-dir '" + folder.string() + "'";
    const CliRun step = cli("probe --step --backend cpu --runs 1 --ceiling-size 16MiB" + scenario);
    ASSERT_EQ(step.status, 0) << step.err << step.out;
    const auto store = folder / "measured-steps.json";
    EXPECT_NE(step.out.find("kept in:"), std::string::npos) << step.out;
    EXPECT_NE(step.out.find(store.string() + " (fit shows steps measured on a catalog GPU"), std::string::npos)
        << step.out;
    std::ifstream in(store);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    in.close();
    auto doc = kvscope::json::parse(text);
    ASSERT_TRUE(doc) << text;
    const auto& kept = doc.value->find("steps")->items();
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].find("backend")->as_string(), "cpu");
    EXPECT_TRUE(kept[0].find("gpu")->is_null());  // a CPU is no catalog GPU: fit shows it nowhere
    const double step_ms = kept[0].find("step_ms")->as_double();
    EXPECT_GT(step_ms, 0.0);
    const CliRun before = cli("fit --gpu h200 --json" + scenario);
    ASSERT_EQ(before.status, 0) << before.err;
    EXPECT_TRUE(json_of(before).find("measured_step")->is_null());

    // The same entry as a CUDA backend on an H200 would have kept it: fit on an H200 now shows it, with the
    // same key the probe wrote (the probe and fit agree on the scenario), and nowhere else.
    const auto at = text.find("\"gpu\": null");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 11, "\"gpu\": \"h200\"");
    std::ofstream(store) << text;
    const CliRun fit = cli("fit --gpu h200 --json" + scenario);
    ASSERT_EQ(fit.status, 0) << fit.err;
    const kvscope::json::Value report = json_of(fit);
    const auto* m = report.find("measured_step");
    ASSERT_TRUE(m != nullptr && m->is_object()) << fit.out;
    EXPECT_DOUBLE_EQ(m->find("step_ms")->as_double(), step_ms);
    EXPECT_NEAR(m->find("fraction_of_estimate")->as_double(), report.find("decode_step_ms")->as_double() / step_ms,
                1e-9);
    const CliRun fit_text = cli("fit --gpu h200" + scenario);
    EXPECT_NE(fit_text.out.find("decode measured:"), std::string::npos) << fit_text.out;
    EXPECT_NE(fit_text.out.find("× the floor (probe --step on "), std::string::npos) << fit_text.out;
    const CliRun csv = cli("fit --gpu h200 --csv" + scenario);
    EXPECT_NE(csv.out.find(",measured_decode_tokens_per_s\n"), std::string::npos) << csv.out;
    EXPECT_TRUE(json_of(cli("fit --gpu h100 --json" + scenario)).find("measured_step")->is_null());
    EXPECT_TRUE(json_of(cli("fit --gpu h200 --batch 3 --json --config '" + config.string() +
                            "' --context 64 --data-dir '" + folder.string() + "'"))
                    .find("measured_step")
                    ->is_null());
    std::filesystem::remove_all(folder);
}

TEST(Cli, StopwatchJsonHasBothRunsAndTheirTexts) {
    const CliRun r = cli("stopwatch --backend cpu --tokens 12 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(v.find("cached_ms")->items().size(), 12u);
    EXPECT_EQ(v.find("uncached_ms")->items().size(), 12u);
    EXPECT_TRUE(v.find("tokens_identical")->as_bool());
    EXPECT_EQ(v.find("text_cached")->as_string(), v.find("text_uncached")->as_string());
    EXPECT_FALSE(v.find("text_cached")->as_string().empty());
    // The measured ratio is the runs' own times (how large it comes out is a measurement: probe_bench prints it),
    // beside the calculator's bound for 12 tokens (about 6.5× the work).
    const auto total = [&](const char* key) {
        double t = 0;
        for (const auto& ms : v.find(key)->items()) t += ms.as_double();
        return t;
    };
    EXPECT_NEAR(v.find("speedup")->as_double(), total("uncached_ms") / total("cached_ms"),
                1e-9 * v.find("speedup")->as_double());
    EXPECT_GT(v.find("speedup_bound")->as_double(), 3.0);
    EXPECT_LT(v.find("speedup_bound")->as_double(), 12.0);
}

TEST(Cli, AMissingGpuIsAJsonResultWithItsStatus) {
    const CliRun devices = cli("devices --json");
    ASSERT_EQ(devices.status, 0) << devices.err;
    if (json_of(devices).items().at(1).find("name")->as_string() != "unavailable")
        GTEST_SKIP() << "a CUDA device answers here, so there is no missing device to report";
    for (const char* command : {"probe --model llama-3-8b --context 1k", "stopwatch --tokens 4"}) {
        const CliRun r = cli(std::string(command) + " --backend cuda --json");
        EXPECT_EQ(r.status, 1) << command;  // a result, not a usage error
        const auto v = json_of(r);
        EXPECT_EQ(v.find("status")->as_string(), "no_device") << command;
        EXPECT_EQ(v.find("backend")->as_string(), "cuda");
        EXPECT_NE(v.find("message")->as_string().find("--backend cuda: "), std::string::npos);
    }
    const CliRun text = cli("probe --model llama-3-8b --context 1k --backend cuda");
    EXPECT_EQ(text.status, 1);
    EXPECT_NE(text.err.find("kvscope-cli probe: no_device: --backend cuda: "), std::string::npos) << text.err;
}

TEST(Cli, DevicesListsTheCpuAndSaysWhyCudaIsMissing) {
    const CliRun r = cli("devices --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    ASSERT_GE(v.items().size(), 2u);
    EXPECT_EQ(v.items()[0].find("backend")->as_string(), "cpu");
    EXPECT_EQ(v.items()[1].find("backend")->as_string(), "cuda");
}

}  // namespace

namespace {

// ctest also runs this suite with LC_ALL=de_DE.UTF-8 and fr_FR.UTF-8, which kvscope-cli inherits
// and adopts: its numbers must not notice.
}  // namespace
