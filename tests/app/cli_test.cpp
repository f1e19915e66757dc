// kvscope-cli end to end: run the real binary, read its stdout, stderr and exit status.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/json.h"

namespace {

TEST(Cli, ADeploymentThatDoesNotFitHasNoDecodeSpeedOfItsOwn) {
    // 131 GiB of Llama 3 70B's weights on one 80 GB GPU: the floor is what it would be if it fitted.
    CliRun r = cli("fit --model llama-3-70b --gpu h100-sxm");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("verdict:         DOES NOT FIT"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("decode floor:    if it fitted, "), std::string::npos) << r.out;
    r = cli("fit --model llama-3-8b --gpu h100-sxm");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("verdict:         FITS"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("if it fitted"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("decode floor:    "), std::string::npos) << r.out;
}

TEST(Cli, GpusThatTensorParallelCannotSplitNameGpusAndTheLayoutsThatDo) {
    // --gpus 3 alone would be tensor parallel 3, which 64 query heads do not divide: the error is --gpus's, with the
    // layout of three GPUs that works, not "tensor parallel 3" the user never gave.
    const CliRun r = cli("fit --model llama-3-70b --gpu h100-sxm --gpus 3");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--gpus: 3 GPUs as tensor parallel alone do not split this model (tensor parallel 3 must "
                         "divide the query heads (64)); give --pp 3"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("tp: "), std::string::npos) << r.err;
    EXPECT_EQ(cli("fit --model llama-3-70b --gpu h100-sxm --pp 3").status, 0);
    // So many GPUs that no layout takes them: said at once, never a search through 10^15 degrees.
    const CliRun huge = cli("fit --model llama-3-70b --gpu h100-sxm --gpus 1e15");
    EXPECT_EQ(huge.status, 2);
    EXPECT_NE(huge.err.find("--gpus: 1,000,000,000,000,000 GPUs as tensor parallel alone do not split this model"),
              std::string::npos)
        << huge.err;
}

TEST(Cli, WhatLlamaCppDoesNotDoIsSaid) {
    // fp8 weights and tensor parallel 2 under llama.cpp: neither is llama.cpp's, and the figures are said to be not
    // its own (with what counts its own instead), in the text and the JSON warnings.
    CliRun r = cli("fit --model llama-3-8b --gpu h100-sxm --engine llama.cpp --weight-dtype fp8_e4m3 --tp 2");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("warning: not exact: llama.cpp has no fp8_e4m3 weights"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--weight-dtype q8_0 counts llama.cpp's format"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("warning: not exact: llama.cpp has no tensor parallelism that splits the KV heads"),
              std::string::npos)
        << r.out;
    r = cli("fit --model llama-3-8b --gpu h100-sxm --engine llama.cpp --pp 2 --weight-dtype q8_0 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("llama.cpp has no"), std::string::npos) << r.out;
}

TEST(Cli, KvJsonTheLessonsReference) {
    const CliRun r = cli("kv --model kvscope-teaching-32l --context 8k --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(u64(v, "kv_cache_bytes"), 4ull << 30);
    EXPECT_EQ(u64(v, "kv_cache_bytes_per_gpu"), 4ull << 30);
    EXPECT_EQ(u64(v, "bytes_per_token"), 524288u);
    EXPECT_EQ(u64(v, "context_tokens"), 8192u);
    EXPECT_EQ(u64(v, "batch"), 1u);
    EXPECT_EQ(v.find("kv_dtype")->as_string(), "fp16");
    const auto* arch = v.find("architecture");
    ASSERT_NE(arch, nullptr);
    EXPECT_EQ(u64(*arch, "layers"), 32u);
    EXPECT_EQ(u64(*arch, "query_heads"), 32u);
    EXPECT_EQ(u64(*arch, "kv_heads"), 32u);
    EXPECT_EQ(u64(*arch, "head_dim"), 128u);
    EXPECT_EQ(arch->find("attention")->as_string(), "MHA");
    const auto& variants = v.find("variants")->items();
    ASSERT_EQ(variants.size(), 3u);
    EXPECT_EQ(variants[1].find("name")->as_string(), "GQA-8");
    EXPECT_EQ(u64(variants[1], "kv_cache_bytes"), 1ull << 30);
    EXPECT_DOUBLE_EQ(variants[1].find("percent_of_mha")->as_double(), 25.0);
    EXPECT_EQ(u64(variants[2], "kv_cache_bytes"), 128ull << 20);
}

TEST(Cli, TableShowsTheLessonsNumbers) {
    const CliRun r = cli("kv --model teaching --context 8192");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("4.00 GiB (4.29 GB)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1.00 GiB"), std::string::npos);
    EXPECT_NE(r.out.find("25.0%"), std::string::npos);
    EXPECT_NE(r.out.find("128 MiB"), std::string::npos);
    EXPECT_NE(r.out.find("3.1%"), std::string::npos);
}

TEST(Cli, AnswersForEveryCatalogModel) {
    const CliRun models = cli("models --json");
    ASSERT_EQ(models.status, 0) << models.err;
    const auto list = json_of(models);
    ASSERT_GE(list.find("models")->items().size(), 20u);
    for (const auto& m : list.find("models")->items()) {
        const std::string id = m.find("id")->as_string();
        const CliRun r = cli("kv --model " + id + " --context 4k --batch 2 --json");
        ASSERT_EQ(r.status, 0) << id << ": " << r.err;
        const auto v = json_of(r);
        // The window-free per-token size times the context bounds the cache from above.
        EXPECT_EQ(u64(v, "bytes_per_token"), u64(m, "bytes_per_token")) << id;
        EXPECT_LE(u64(v, "kv_cache_bytes"), u64(v, "bytes_per_token") * 4096 * 2) << id;
        // Every model keeps something: a KV cache, a recurrent state, or both.
        EXPECT_GT(u64(v, "memory_bytes"), 0u) << id;
        EXPECT_EQ(u64(v, "memory_bytes"), u64(v, "kv_cache_bytes") + u64(v, "state_bytes")) << id;
    }
}

TEST(Cli, VersionIsPrinted) {
    const CliRun r = cli("--version");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("kvscope-cli ")) << r.out;
    EXPECT_NE(r.out.find_first_of("0123456789"), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(Cli, OneKvHeadIsOneHead) {
    // Gemma 3 1B keeps one KV head (MQA); the attention line counts it in the singular.
    const CliRun r = cli("kv --model gemma-3-1b");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("MQA — 26 layers, 4 query heads, 1 KV head, head dim 256"), std::string::npos) << r.out;
    // Llama 3.1's ids and its Hugging Face names find the model the catalog now holds.
    const CliRun l = cli("kv --model meta-llama/Meta-Llama-3.1-8B-Instruct --context 128k --json");
    ASSERT_EQ(l.status, 0) << l.err;
    EXPECT_EQ(u64(json_of(l), "kv_cache_bytes"), 131072ull * 131072);  // 16 GiB: 128k tokens x 128 KiB
}

TEST(Cli, HuggingFaceRepoIdAndCaseInsensitiveIds) {
    const CliRun a = cli("kv --model meta-llama/Meta-Llama-3-8B --json");
    const CliRun b = cli("kv --model LLAMA-3-8B --json");
    ASSERT_EQ(a.status, 0) << a.err;
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(u64(json_of(a), "kv_cache_bytes"), 131072ull * 8192);
    EXPECT_EQ(u64(json_of(b), "kv_cache_bytes"), 131072ull * 8192);
}

TEST(Cli, FitJsonContract) {
    const CliRun r =
        cli("fit --model llama-3-70b --context 32k --batch 16 --gpu h100-sxm --gpus 2 --kv-dtype fp8 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(u64(v, "weights_bytes"), 70'553'706'496ull * 2);
    // 76,968,728,985 (0.90 of an H100) - 70,553,706,496 (weights per GPU) - 2,783,969,280 (vLLM's reserve:
    // the sampler's 1,024 x 128,256 x 20 bytes and 150 MiB outside torch), for each of 2 GPUs.
    EXPECT_EQ(v.find("kv_budget_bytes")->as_i64(), 2 * 3'631'053'209ll);
    EXPECT_EQ(u64(v, "reserve_bytes_per_gpu"), 2'783'969'280u);
    const auto& items = v.find("reserve_items")->items();
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].find("name")->as_string(), "profile peak");
    EXPECT_EQ(u64(items[0], "bytes"), 2'626'682'880u);
    EXPECT_NE(items[0].find("how")->as_string().find("vllm/v1/worker/gpu_model_runner.py"), std::string::npos);
    const auto* vllm = v.find("vllm");
    ASSERT_NE(vllm, nullptr);
    EXPECT_EQ(vllm->find("version")->as_string(), "0.20");
    EXPECT_EQ(u64(*vllm, "max_num_batched_tokens"), 8192u);
    EXPECT_EQ(u64(*vllm, "max_num_seqs"), 1024u);
    EXPECT_FALSE(v.find("fits")->as_bool());
    EXPECT_EQ(u64(v, "max_batch"), 1u);
    EXPECT_EQ(u64(v, "max_context"), 2770u);  // 3,631,053,209 / (81,920 x 16)
    EXPECT_GT(v.find("decode_tokens_per_s")->as_double(), 0.0);
}

TEST(Cli, SlidingLayersBesideFullOnesAreInVllmsPagesAndItsStartCheckInTheVerdict) {
    // Gemma 3 27B at 128k on one H100 at 0.85: a decoding sequence's 10.5 GiB fit the 12.2 GiB budget, vLLM's start
    // check (14.2 GiB) does not. The table, the JSON and the CSV say the same.
    const std::string args = "fit --model gemma-3-27b --gpu h100-sxm --context 128k --utilization 0.85";
    const CliRun table = cli(args);
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("DOES NOT FIT: short by 1.98 GiB per GPU at vLLM's start check (see the warning); "
                             "decoding alone would fit"),
              std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("KV needed:       10.5 GiB per GPU in vLLM's hybrid layout (plain sum 10.4 GiB)"),
              std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("warning: vLLM would not start"), std::string::npos) << table.out;
    const auto v = json_of(cli(args + " --json"));
    EXPECT_FALSE(v.find("fits")->as_bool());
    EXPECT_TRUE(v.find("short_at_startup")->as_bool());
    EXPECT_TRUE(v.find("headroom_from_startup")->as_bool());
    EXPECT_EQ(u64(v, "vllm_startup_bytes_per_gpu"), 10ull * 131072 * (8192 + 6 * 577));
    EXPECT_EQ(*v.find("headroom_bytes_per_gpu")->as_i64(),
              *v.find("kv_budget_bytes_per_gpu")->as_i64() - 10ll * 131072 * (8192 + 6 * 577));
    const auto* layout = v.find("vllm_hybrid_layout");
    ASSERT_NE(layout, nullptr);
    EXPECT_EQ(u64(*layout, "group_size"), 10u);
    EXPECT_EQ(u64(*layout, "sliding_groups"), 6u);
    EXPECT_EQ(u64(*layout, "sliding_window_tokens"), 1024u);
    EXPECT_EQ(u64(v, "max_batch"), 0u);
    // The CSV row carries the same: its headroom is the start check's, and says so.
    const CliRun csv = cli(args + " --csv");
    ASSERT_EQ(csv.status, 0) << csv.err;
    EXPECT_NE(csv.out.find(",fits,headroom_bytes_per_gpu,headroom_from_startup,vllm_startup_bytes_per_gpu,"),
              std::string::npos)
        << csv.out;
    EXPECT_NE(csv.out.find(",false," + std::to_string(*v.find("headroom_bytes_per_gpu")->as_i64()) + ",true," +
                           std::to_string(10ull * 131072 * (8192 + 6 * 577)) + ","),
              std::string::npos)
        << csv.out;
    // A smaller prefill chunk passes the check.
    const auto small = json_of(cli(args + " --max-num-batched-tokens 1024 --json"));
    EXPECT_TRUE(small.find("fits")->as_bool());
    EXPECT_FALSE(small.find("short_at_startup")->as_bool());
    // vLLM before 0.10 had no hybrid KV cache manager: the sliding layers keep the whole context, as --full-window
    // counts them, and that is said.
    const auto old = json_of(cli(args + " --vllm-version 0.9 --json"));
    const auto full = json_of(cli(args + " --vllm-version 0.9 --full-window --json"));
    EXPECT_EQ(u64(old, "kv_cache_bytes_per_gpu"), u64(full, "kv_cache_bytes_per_gpu"));
    EXPECT_TRUE(old.find("vllm_hybrid_layout")->is_null());
    const CliRun old_table = cli(args + " --vllm-version 0.9");
    EXPECT_NE(old_table.out.find("vLLM before 0.10 (no hybrid KV cache manager) keeps the whole context"),
              std::string::npos)
        << old_table.out;
    // Where the weights alone do not fit, they are the reason; the start check is not reached.
    const CliRun small_gpu = cli("fit --model gemma-3-27b --gpu rtx-4090 --context 32k");
    EXPECT_EQ(small_gpu.out.find("start check"), std::string::npos) << small_gpu.out;
}

// Llama 4's chunked layers as each engine keeps them, end to end: vLLM 0.20 in its pages ("windowed_layers":
// "chunked"), vLLM 0.12 and SGLang with the whole context on every layer, and the same figure in the table.
TEST(Cli, ChunkedLayersAreKeptAsEachEngineKeepsThem) {
    const std::string args = "fit --model llama-4-scout --gpu h100-sxm --gpus 4 --tp 4 --context 128k --batch 4";
    const auto now = json_of(cli(args + " --json"));
    const auto* layout = now.find("vllm_hybrid_layout");
    ASSERT_TRUE(layout && layout->is_object()) << "vLLM 0.20 lays the chunked layers out in its pages";
    EXPECT_EQ(layout->find("windowed_layers")->as_string(), "chunked");
    EXPECT_EQ(u64(*layout, "sliding_window_tokens"), 8192u);
    EXPECT_EQ(u64(now, "memory_bytes_needed_per_gpu"), 4ull * (12 * 1024 * 131072 + 36 * 1024 * 8192));
    // 48 layers x 1,024 bytes a token on each GPU, every token kept.
    const std::uint64_t whole = 4ull * 48 * 1024 * 131072;
    for (const std::string engine : {"--vllm-version 0.12", "--engine sglang"}) {
        const auto v = json_of(cli(args + " " + engine + " --json"));
        EXPECT_EQ(u64(v, "kv_cache_bytes_per_gpu"), whole) << engine;
        EXPECT_TRUE(v.find("vllm_hybrid_layout")->is_null()) << engine;
    }
    const CliRun old = cli(args + " --vllm-version 0.12");
    ASSERT_EQ(old.status, 0) << old.err;
    EXPECT_NE(old.out.find("KV needed:       24.0 GiB per GPU"), std::string::npos) << old.out;
    EXPECT_NE(old.out.find("note: vLLM 0.12 keeps the whole context on the chunked-attention layers"),
              std::string::npos)
        << old.out;
}

TEST(Cli, VllmsStartupSettingsChangeItsReserveAndTheFitNamesEachPart) {
    const std::string base = "fit --model llama-3-70b --context 32k --batch 16 --gpu h100-sxm --gpus 2 --kv-dtype fp8";
    const CliRun r = cli(base + " --vllm-version 0.21 --max-num-seqs 256 --max-num-batched-tokens 4k");
    ASSERT_EQ(r.status, 0) << r.err;
    // 4,096 x (3 x 8,192 + 3 x 14,336) x 2 = 553,648,128 bytes against 256 x 128,256 x 20 = 656,670,720.
    EXPECT_NE(
        r.out.find("reserved:        1.01 GiB per GPU (estimate): profile peak 626 MiB, non-torch memory 150 MiB, CUDA "
                   "graphs 256 MiB"),
        std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("vLLM 0.21's startup profile: the reserve is an estimate"), std::string::npos) << r.out;
    const CliRun eager = cli(base + " --vllm-version 0.21 --enforce-eager --json");
    ASSERT_EQ(eager.status, 0) << eager.err;
    EXPECT_EQ(json_of(eager).find("reserve_items")->items().size(), 2u);
    // --reserve fixes it, as for the other engines; --overhead alone is the non-torch memory beside the estimate.
    const CliRun fixed = cli(base + " --reserve 2GiB");
    EXPECT_NE(fixed.out.find("per GPU: activation reserve 2.00 GiB, runtime overhead 512 MiB"), std::string::npos)
        << fixed.out;
    const CliRun overhead = cli(base + " --overhead 300MiB");
    EXPECT_NE(overhead.out.find("(estimate): profile peak 2.45 GiB, non-torch memory 300 MiB"), std::string::npos)
        << overhead.out;
    // Absurd and empty batch limits are named, never an exabyte of reserve.
    const CliRun huge = cli(base + " --max-num-batched-tokens 1e15");
    EXPECT_NE(huge.status, 0);
    EXPECT_NE(huge.err.find("--max-num-batched-tokens: 1,000,000,000,000,000 tokens a step is more than any"),
              std::string::npos)
        << huge.err;
    // Fewer tokens a step than sequences: vLLM does not start, and the fit says so with the setting's name.
    const CliRun few = cli(base + " --max-num-batched-tokens 512");
    EXPECT_EQ(few.status, 2);
    EXPECT_NE(few.err.find("--max-num-batched-tokens: vLLM does not start when a step's tokens (max_num_batched_tokens "
                           "512) are fewer than its sequences (max_num_seqs 1,024, vLLM's default here)"),
              std::string::npos)
        << few.err;
    const CliRun none = cli(base + " --max-num-seqs 0");
    EXPECT_NE(none.err.find("--max-num-seqs: must be at least 1"), std::string::npos) << none.err;
    // 0.6.4 alone counted the CUDA context outside torch (PR #9352 until #10511): its patch is read and named.
    const CliRun v064 = cli(base + " --vllm-version v0.6.4.post1 --json");
    ASSERT_EQ(v064.status, 0) << v064.err;
    EXPECT_EQ(json_of(v064).find("vllm")->find("version")->as_string(), "0.6.4");
    EXPECT_EQ(json_of(v064).find("reserve_items")->items()[1].find("bytes")->as_u64(), kvscope::kVllm064NonTorchBytes);
    const CliRun v06 = cli(base + " --vllm-version 0.6");
    EXPECT_NE(v06.out.find("non-torch memory 150 MiB"), std::string::npos) << v06.out;
    EXPECT_NE(v06.out.find("0.6.4 alone also counted the CUDA context"), std::string::npos) << v06.out;
    for (const char* bad :
         {"1.2", "0.5", "latest", "0.x", "0.99999999999999999999999", "0.21.garbage", "0.100", "0.6.", "0.6.100"}) {
        const CliRun b = cli(base + " --vllm-version " + bad);
        EXPECT_NE(b.status, 0) << bad;
        EXPECT_NE(b.err.find("--vllm-version: '" + std::string(bad) + "'"), std::string::npos) << b.err;
    }
}

TEST(Cli, AQuantizedCheckpointIsWeighedAsItsSchemeStoresIt) {
    // gpt-oss-20b's config says MXFP4 on the experts: 13.66 GiB as vLLM loads it (13.72 logged), not 20.9 G
    // parameters in one format.
    const CliRun r = cli("fit --model gpt-oss-20b --gpu a100-80gb --context 8k");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("weights:         13.7 GiB (14.7 GB) estimated for MXFP4, 4-bit float with an 8-bit scale per "
                         "32 weights, the experts only, the rest in bf16"),
              std::string::npos)
        << r.out;
    const CliRun j = cli("fit --model gpt-oss-20b --gpu a100-80gb --context 8k --json");
    ASSERT_EQ(j.status, 0) << j.err;
    const kvscope::json::Value v = json_of(j);
    const kvscope::json::Value* q = v.find("weight_quantization");
    ASSERT_NE(q, nullptr) << j.out;
    EXPECT_EQ(q->find("method")->as_string(), "mxfp4");
    EXPECT_TRUE(q->find("experts_only")->as_bool());
    EXPECT_EQ(u64(*q, "quantized_parameters"), 19'110'297'600u);
    EXPECT_FALSE(v.find("weights_exact")->as_bool());
    const std::uint64_t quantized = u64(v, "weights_bytes");
    EXPECT_GT(quantized, 13ull << 30);
    EXPECT_LT(quantized, 14ull << 30);
    // --weight-dtype picks a plain format for every parameter instead: the scheme no longer applies.
    const CliRun plain = cli("fit --model gpt-oss-20b --gpu a100-80gb --context 8k --weight-dtype bf16 --json");
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(json_of(plain).find("weight_quantization"), nullptr) << plain.out;
    EXPECT_GT(u64(json_of(plain), "weights_bytes"), quantized);
}

TEST(Cli, ADraftModelCountsInTheFitsTableAndJson) {
    // An EAGLE-3 head's config.json in a folder with a space and a non-ASCII letter, as users keep them.
    const auto dir = std::filesystem::temp_directory_path() / ("kvscope draft é " + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
        "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 1,
        "num_key_value_heads": 8, "vocab_size": 128256, "draft_vocab_size": 32000, "torch_dtype": "float16",
        "tie_word_embeddings": false, "max_position_embeddings": 2048})";
    const std::string base = "fit --model llama-3-8b --gpu h100-sxm --context 8k --draft '" + dir.string() + "'";
    const CliRun r = cli(base);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("draft:           " + dir.string() +
                         " (eagle3): 425 M parameters, 810 MiB (849 MB) (in the "
                         "weights above); its KV 4,096 bytes a token, 32.0 MiB per GPU (in the KV needed)"),
              std::string::npos)
        << r.out;
    const CliRun j = cli(base + " --json");
    ASSERT_EQ(j.status, 0) << j.err;
    const kvscope::json::Value v = json_of(j);
    const kvscope::json::Value* draft = v.find("draft");
    ASSERT_TRUE(draft && draft->is_object()) << j.out;
    EXPECT_EQ(draft->find("method")->as_string(), "eagle3");
    EXPECT_EQ(u64(*draft, "parameters"), 424'689'664u);
    EXPECT_EQ(u64(*draft, "weights_bytes"), 2 * 424'689'664ull);
    EXPECT_EQ(u64(*draft, "kv_bytes_per_token"), 4096u);
    EXPECT_EQ(u64(*draft, "kv_bytes_per_gpu"), 4096ull * 8192);
    EXPECT_TRUE(draft->find("parameters_estimated")->as_bool());
    EXPECT_FALSE(draft->find("weights_exact")->as_bool());
    // The reserve is the model's profile run: said, not presented as exact.
    const kvscope::json::Value* notes = v.find("warnings");
    ASSERT_NE(notes, nullptr) << j.out;
    EXPECT_TRUE(std::any_of(notes->items().begin(), notes->items().end(), [](const kvscope::json::Value& n) {
        return n.as_string().starts_with("not exact: the reserve is the model's profile run");
    })) << j.out;
    // Without it: null, and the weights and cache are the model's alone.
    const CliRun alone = cli("fit --model llama-3-8b --gpu h100-sxm --context 8k --json");
    ASSERT_EQ(alone.status, 0) << alone.err;
    const kvscope::json::Value a = json_of(alone);
    EXPECT_TRUE(a.find("draft")->is_null());
    EXPECT_EQ(u64(v, "weights_bytes") - u64(a, "weights_bytes"), 2 * 424'689'664ull);
    // --draft-method overrides the class; what is wrong is named by the option.
    const CliRun eagle = cli(base + " --draft-method eagle --json");
    ASSERT_EQ(eagle.status, 0) << eagle.err;
    EXPECT_EQ(json_of(eagle).find("draft")->find("method")->as_string(), "eagle");
    const CliRun bad_method = cli(base + " --draft-method medusa");
    EXPECT_NE(bad_method.status, 0);
    EXPECT_NE(bad_method.err.find("--draft-method: 'medusa' is not a method (draft_model, eagle, eagle3)"),
              std::string::npos)
        << bad_method.err;
    const CliRun lonely = cli("fit --model llama-3-8b --gpu h100-sxm --draft-method eagle");
    EXPECT_NE(lonely.err.find("--draft-method: there is no draft model to serve"), std::string::npos) << lonely.err;
    const CliRun unknown = cli("fit --model llama-3-8b --gpu h100-sxm --draft no-such-draft");
    EXPECT_NE(unknown.status, 0);
    EXPECT_NE(unknown.err.find("--draft: unknown draft model 'no-such-draft'"), std::string::npos) << unknown.err;
    const CliRun both = cli(base + " --mtp");
    EXPECT_NE(both.status, 0);
    EXPECT_NE(both.err.find("fit: vLLM serves one speculative method"), std::string::npos) << both.err;
    std::filesystem::remove_all(dir);
    // A catalog model as the draft, in plan too.
    const CliRun plan =
        cli("plan --model llama-3-70b --gpu h100-sxm --context 32k --batch 8 --draft llama-3.2-1b --json");
    ASSERT_EQ(plan.status, 0) << plan.err;
    const kvscope::json::Value p = json_of(plan);
    ASSERT_TRUE(p.find("draft") && p.find("draft")->is_object()) << plan.out;
    EXPECT_EQ(p.find("draft")->find("name")->as_string(), "llama-3.2-1b");
    EXPECT_EQ(p.find("draft")->find("method")->as_string(), "draft_model");
}

TEST(Cli, LlamaCppsComputeBufferFollowsItsSettings) {
    const std::string base = "fit --model llama-3-8b --gpu rtx-4090 --engine llama.cpp --context 8k";
    const CliRun r = cli(base);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(
        r.out.find("reserved:        770 MiB per GPU (estimate): compute buffer 258 MiB, runtime overhead 512 MiB"),
        std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("note: llama.cpp's compute buffer: one micro-batch of 512 tokens (n_ubatch, llama.cpp's "
                         "default), flash attention on"),
              std::string::npos)
        << r.out;
    const CliRun off = cli(base + " --flash-attn off --ubatch 1k --json");
    ASSERT_EQ(off.status, 0) << off.err;
    const kvscope::json::Value v = json_of(off);
    EXPECT_EQ(u64(*v.find("llama_cpp"), "ubatch"), 1024u);
    EXPECT_FALSE(v.find("llama_cpp")->find("flash_attn")->as_bool());
    EXPECT_EQ(u64(v.find("reserve_items")->items()[0], "bytes"), 4ull * 1024 * (8192ull * 33 + 4 * 4096));
    const CliRun bad = cli(base + " --flash-attn sometimes");
    EXPECT_NE(bad.err.find("--flash-attn: 'sometimes' is not on, off or auto"), std::string::npos) << bad.err;
    const CliRun overhead = cli(base + " --overhead 1GiB");
    EXPECT_NE(overhead.out.find("(estimate): compute buffer 258 MiB, runtime overhead 1.00 GiB"), std::string::npos)
        << overhead.out;
    const CliRun zero = cli(base + " --ubatch 0");
    EXPECT_NE(zero.err.find("--ubatch: must be at least 1"), std::string::npos) << zero.err;
}

TEST(Cli, TensorRtLlmsReserveFollowsItsProfilingRun) {
    const std::string base = "fit --model llama-3-8b --gpu h100-sxm --engine trt-llm --context 8k";
    const CliRun r = cli(base);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("reserved:        1.34 GiB per GPU (estimate): profile peak 864 MiB, outside torch 512 MiB"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("note: not exact: TensorRT-LLM's reserve follows its PyTorch backend's profiling run"),
              std::string::npos)
        << r.out;
    const CliRun j = cli(base + " --max-num-tokens 16k --json");
    ASSERT_EQ(j.status, 0) << j.err;
    const kvscope::json::Value v = json_of(j);
    EXPECT_EQ(u64(*v.find("tensorrt_llm"), "max_num_tokens"), 16384u);
    EXPECT_EQ(u64(v.find("reserve_items")->items()[0], "bytes"), 16384ull * (3 * 4096 + 3 * 14336) * 2);
    // The estimate is a warning in the JSON, as on screen.
    const auto& warnings = v.find("warnings")->items();
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const kvscope::json::Value& w) {
        return w.as_string().starts_with("not exact: TensorRT-LLM's reserve");
    })) << j.out;
    // plan says it too, once for all its layouts, in its text and its JSON warnings.
    const CliRun plan = cli("plan --model llama-3-70b --gpu h100-sxm --engine trt-llm --context 8k --batch 8");
    ASSERT_EQ(plan.status, 0) << plan.err;
    const std::string said = "note: not exact: TensorRT-LLM's reserve";
    const std::size_t first = plan.out.find(said);
    EXPECT_NE(first, std::string::npos) << plan.out;
    EXPECT_EQ(plan.out.find(said, first + 1), std::string::npos) << plan.out;
    const CliRun plan_json = cli("plan --model llama-3-70b --gpu h100-sxm --engine trt-llm --context 8k --json");
    ASSERT_EQ(plan_json.status, 0) << plan_json.err;
    const kvscope::json::Value pj = json_of(plan_json);
    // With the even split of the weights over pipeline stages, said once for every pipelined layout.
    ASSERT_EQ(pj.find("warnings")->items().size(), 2u) << plan_json.out;
    EXPECT_TRUE(pj.find("warnings")->items()[0].as_string().starts_with("not exact: TensorRT-LLM's reserve"));
    EXPECT_TRUE(pj.find("warnings")->items()[1].as_string().starts_with("not exact: the weights are split evenly"));
    const CliRun zero = cli(base + " --max-num-tokens 0");
    EXPECT_NE(zero.err.find("--max-num-tokens: must be at least 1"), std::string::npos) << zero.err;
    const CliRun huge = cli(base + " --max-num-tokens 32M");
    EXPECT_NE(huge.err.find("--max-num-tokens: "), std::string::npos) << huge.err;
    EXPECT_NE(huge.err.find("more than any deployment takes"), std::string::npos) << huge.err;
}

TEST(Cli, AQuantizationItCannotReadIsAWarningInTheJson) {
    // A field that could change the answer and is not understood: said on screen and in the JSON's warnings.
    const auto path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-quant-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
        "hidden_size": 256, "vocab_size": 1000, "quantization_config": {"quant_method": "gptq", "bits": "8"}})";
    const std::string said = "quantization_config 'gptq': bits is not a whole number of the right sign";
    for (const char* command : {"kv", "fit --gpu h100-sxm", "plan --gpu h100-sxm"}) {
        const CliRun j = cli(std::string(command) + " --config " + path.string() + " --json");
        ASSERT_EQ(j.status, 0) << command << ": " << j.err;
        const kvscope::json::Value v = json_of(j);
        const kvscope::json::Value* w = v.find("warnings");
        ASSERT_NE(w, nullptr) << command << ": " << j.out;
        ASSERT_EQ(w->items().size(), 1u) << command << ": " << j.out;
        EXPECT_EQ(w->items()[0].as_string().rfind(said, 0), 0u) << w->items()[0].as_string();
    }
    const CliRun text = cli("fit --gpu h100-sxm --config " + path.string());
    std::filesystem::remove(path);
    EXPECT_NE(text.out.find("note: " + said), std::string::npos) << text.out;
}

TEST(Cli, ConfigFileAndCsv) {
    const auto path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-config-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
                               "num_key_value_heads": 2, "hidden_size": 512, "max_position_embeddings": 4096})";
    const CliRun r = cli("compare --config " + path.string() + " --context 1k --csv");
    std::filesystem::remove(path);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
              "name,kv_heads,kv_cache_bytes,bytes_per_token,percent_of_mha,is_model,replication,state_bytes");
    // GQA-2 is the model's own: 2 layers x 2 (K,V) x 2 heads x 64 dims x 2 bytes x 1024 tokens; no state.
    EXPECT_NE(r.out.find("GQA-2,2,1048576,1024,25.000,true,1,0"), std::string::npos) << r.out;
}

TEST(Cli, SweepCsvHasOneColumnPerVariant) {
    const CliRun r = cli("sweep --model llama-3-8b --points 4 --from 1k --to 8k --csv");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out,
              "tokens,MHA bytes,GQA-8 bytes,MQA "
              "bytes\n1024,536870912,134217728,16777216\n2048,1073741824,268435456,33554432\n"
              "4096,2147483648,536870912,67108864\n8192,4294967296,1073741824,134217728\n");
}

TEST(Cli, BadInputExitsTwoWithOneClearLine) {
    auto expect_usage = [](const CliRun& r, const std::string& fragment) {
        EXPECT_EQ(r.status, 2) << r.out;
        EXPECT_TRUE(r.out.empty()) << r.out;
        EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    };
    expect_usage(cli("kv --model no-such-model"), "unknown model 'no-such-model'");
    expect_usage(cli("kv --model llama-3-8b --context 12q"), "--context: '12q' is not a whole number");
    expect_usage(cli("kv --model llama-3-8b --context 1000000000000000"), "--context: a context of");
    expect_usage(cli("kv --model llama-3-8b --kv-dtype fp7"), "--kv-dtype: 'fp7' is not a KV format");
    expect_usage(cli("kv --model llama-3-8b --tp 3"), "tp: tensor parallel 3 must divide the query heads");
    expect_usage(cli("kv --bogus"), "--bogus: unknown option");
    expect_usage(cli("fit --model llama-3-8b"), "fit needs a GPU");
    expect_usage(cli("fit --model llama-3-8b --gpu h900"), "unknown GPU 'h900'");
    expect_usage(cli("frobnicate"), "unknown command 'frobnicate'");
    expect_usage(cli("kv --config /nonexistent/config.json"), "/nonexistent/config.json: cannot be opened");
}

TEST(Cli, MalformedConfigNamesLineAndColumn) {
    const auto path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-bad-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << "{\n  \"num_hidden_layers\": 32,\n  \"hidden_size\": 4096\n  \"n_head\": 32\n}";
    const CliRun r = cli("kv --config " + path.string());
    std::filesystem::remove(path);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(path.string() + ":4:3: expected ',' or '}'"), std::string::npos) << r.err;
}

TEST(Cli, HelpForEveryCommand) {
    for (const char* c : {"models", "gpus", "kv", "compare", "sweep", "fit"}) {
        const CliRun r = cli(std::string(c) + " --help");
        EXPECT_EQ(r.status, 0) << c;
        EXPECT_NE(r.out.find(std::string("usage: kvscope-cli ") + c), std::string::npos) << c;
    }
}

}  // namespace

namespace {

TEST(Cli, SizesAsEnginesPrintThemAreTheNearestByte) {
    // vLLM logs "23.58 GiB"; the fit takes it as the nearest whole byte.
    const CliRun r = cli("fit --model llama-3-8b --gpu-memory 23.58GiB --gpu-bandwidth 936GB --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(u64(json_of(r), "memory_bytes_per_gpu"), 25'318'832'210u);
    EXPECT_EQ(cli("fit --model llama-3-8b --gpu-memory 1024.5 --gpu-bandwidth 936GB").status, 2);
}

TEST(Cli, FractionalOptionsAndJsonAreTheSameInEveryLocale) {
    const CliRun r = cli("fit --model llama-3-70b --context 32k --gpu h100-sxm --gpus 2 --utilization 0.85 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    const auto* utilization = v.find("utilization");
    ASSERT_NE(utilization, nullptr) << r.out;
    EXPECT_EQ(utilization->as_double(), 0.85);
    const auto* per_sequence = v.find("decode_tokens_per_s_per_sequence");
    ASSERT_NE(per_sequence, nullptr) << r.out;
    EXPECT_GT(per_sequence->as_double(), 44.0);  // 44.7: its whole part alone would read 44
    EXPECT_LT(per_sequence->as_double(), 45.0);
    const CliRun table = cli("fit --model llama-3-70b --context 32k --gpu h100-sxm --gpus 2 --utilization 0.85");
    EXPECT_NE(table.out.find("fraction 0.85"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("22.35 ms per step"), std::string::npos) << table.out;

    // A decimal comma is refused with the spelling that works, whatever the locale.
    const CliRun comma = cli("fit --model llama-3-70b --gpu h100-sxm --utilization 0,85");
    EXPECT_EQ(comma.status, 2);
    EXPECT_NE(comma.err.find("--utilization: '0,85': the command line takes a decimal point in every locale (0.85)"),
              std::string::npos)
        << comma.err;
}

TEST(Cli, PlanListsEveryLayoutSmallestFirstInJsonAndATable) {
    const CliRun r = cli("plan --model llama-3-70b --context 8k --batch 64 --gpu h100-sxm --kv-dtype fp8 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    EXPECT_EQ(u64(v, "sequences"), 64u);
    EXPECT_EQ(u64(v, "context_tokens"), 8192u);
    EXPECT_EQ(v.find("gpu")->as_string(), "h100-sxm");
    const auto* options = v.find("options");
    ASSERT_NE(options, nullptr);
    ASSERT_GE(options->items().size(), 4u);
    std::uint64_t previous = 0;
    bool eight = false;
    for (const auto& o : options->items()) {
        for (const char* key : {"tp", "pp", "replicas", "gpus", "max_batch", "max_context"})
            EXPECT_NE(o.find(key), nullptr) << key;
        for (const char* key :
             {"fits", "headroom_bytes_per_gpu", "decode_tokens_per_s_per_sequence", "decode_tokens_per_s"})
            EXPECT_NE(o.find(key), nullptr) << key;
        EXPECT_EQ(u64(o, "gpus"), u64(o, "tp") * u64(o, "pp") * u64(o, "replicas"));
        EXPECT_GE(u64(o, "gpus"), previous);
        previous = u64(o, "gpus");
        eight |= u64(o, "tp") == 8 && u64(o, "pp") == 1 && o.find("fits")->as_bool() && u64(o, "replicas") == 1;
    }
    EXPECT_TRUE(eight) << "TP 8 on one H100 node serves 64 sequences of 8k with an fp8 cache";
    EXPECT_FALSE(options->items().front().find("fits")->as_bool()) << "one GPU cannot hold 141 GB of weights";

    const CliRun table = cli("plan --model llama-3-70b --context 8k --batch 64 --gpu h100-sxm --kv-dtype fp8");
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("TP 8 × PP 1"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("TP 1 × PP 1: the weights"), std::string::npos) << table.out;
}

TEST(Cli, PlanRefusesAFixedLayoutAndNeedsAGpu) {
    const CliRun fixed = cli("plan --model llama-3-8b --gpu h100-sxm --tp 2");
    EXPECT_EQ(fixed.status, 2);
    EXPECT_NE(fixed.err.find("--tp: plan tries every TP × PP layout"), std::string::npos) << fixed.err;
    const CliRun huge = cli("plan --model llama-3-8b --gpu h100-sxm --gpus-per-node 1e15");
    EXPECT_EQ(huge.status, 2);
    EXPECT_NE(huge.err.find("--gpus-per-node: GPUs per node must be between 1 and 4096"), std::string::npos)
        << huge.err;
    const CliRun no_gpu = cli("plan --model llama-3-8b");
    EXPECT_EQ(no_gpu.status, 2);
    EXPECT_NE(no_gpu.err.find("plan needs a GPU: --gpu ID"), std::string::npos) << no_gpu.err;
}

TEST(Cli, ReplicatedHeadsAreSaidInTheCompareTable) {
    const CliRun r = cli("compare --model kvscope-teaching-32l --tp 2");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("MQA (replicated on 2 GPUs)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("GQA-8 (replicated"), std::string::npos) << r.out;
}

TEST(Cli, AHybridModelShowsItsLayerMixAndState) {
    // Jamba's published layout: 4 of 32 layers attend, 28 Mamba layers keep 311,296 bytes of state each.
    const auto path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-jamba-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path) << R"({"model_type": "jamba", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "attn_layer_period": 8, "attn_layer_offset": 4,
        "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "torch_dtype": "bfloat16"})";
    const CliRun table = cli("kv --config " + path.string() + " --context 128k --batch 2");
    const CliRun json = cli("kv --config " + path.string() + " --context 128k --batch 2 --json");
    std::filesystem::remove(path);
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("layer mix:  32 layers: 28 Mamba, 4 full attention"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("KV cache:      4.00 GiB (4.29 GB) — 4,294,967,296 bytes\n"), std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("17,432,576 bytes of recurrent state, 8.31 MiB per sequence"), std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("    28  recurrent  —"), std::string::npos) << table.out;
    EXPECT_EQ(table.out.find("NOT EXACT"), std::string::npos) << table.out;
    ASSERT_EQ(json.status, 0) << json.err;
    const auto v = json_of(json);
    EXPECT_EQ(u64(v, "state_bytes"), 2ull * 28 * 311296);
    EXPECT_EQ(u64(v, "memory_bytes"), (4ull << 30) + 2ull * 28 * 311296);
    EXPECT_TRUE(v.find("warnings")->items().empty()) << json.out;
}

TEST(Cli, TheStateFormatsAreVllmsOptions) {
    // Qwen3-Next's 36 gated-DeltaNet layers: conv 24,576 values and SSM 524,288 values each.
    const auto state = [](const std::string& extra) {
        const CliRun r = cli("kv --model qwen3-next-80b-a3b --json " + extra);
        EXPECT_EQ(r.status, 0) << r.err;
        return u64(json_of(r), "state_bytes_per_sequence");
    };
    EXPECT_EQ(state(""), 36ull * (24576 + 524288) * 2);  // auto: the model's bf16
    EXPECT_EQ(state("--mamba-cache-dtype float32"), 36ull * (24576 + 524288) * 4);
    EXPECT_EQ(state("--mamba-ssm-cache-dtype float32"), 36ull * (24576 * 2 + 524288 * 4));
    EXPECT_EQ(state("--mamba-cache-dtype auto --mamba-ssm-cache-dtype auto"), 36ull * (24576 + 524288) * 2);
    // Nemotron-H keeps its SSM state in fp32 (vLLM's rule for it) whatever --mamba-cache-dtype says.
    const CliRun n = cli("kv --model nemotron-h-56b --json --mamba-cache-dtype float16");
    ASSERT_EQ(n.status, 0) << n.err;
    EXPECT_EQ(json_of(n).find("architecture")->find("recurrent_state")->find("ssm_dtype")->as_string(), "fp32");
    // …and says so; once --mamba-ssm-cache-dtype sets another format, the note says that one instead.
    EXPECT_NE(cli("kv --model nemotron-h-56b").out.find("note: the SSM state is kept in fp32"), std::string::npos);
    const CliRun bf16 = cli("kv --model nemotron-h-56b --mamba-ssm-cache-dtype bfloat16");
    EXPECT_EQ(bf16.out.find("kept in fp32"), std::string::npos) << bf16.out;
    EXPECT_NE(bf16.out.find("note: the SSM state is kept in bf16 (--mamba-ssm-cache-dtype)"), std::string::npos)
        << bf16.out;
    // Errors name the option.
    const CliRun bad = cli("kv --model qwen3-next-80b-a3b --mamba-cache-dtype fp8");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--mamba-cache-dtype: 'fp8' is not a state format (auto, float32, float16, bfloat16)"),
              std::string::npos)
        << bad.err;
    const CliRun none = cli("kv --model llama-3-8b --mamba-ssm-cache-dtype float32");
    EXPECT_NE(none.err.find("--mamba-ssm-cache-dtype: this model keeps no recurrent state"), std::string::npos)
        << none.err;
}

TEST(Cli, AnUnmodelledLayoutIsAWarningInTheTableAndTheJson) {
    const auto path =
        std::filesystem::temp_directory_path() / ("kvscope-cli-chunked-" + std::to_string(::getpid()) + ".json");
    // attention_chunk_size outside Llama 4: which layers attend within chunks is not known.
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096,
        "attention_chunk_size": 8192})";
    const CliRun table = cli("kv --config " + path.string() + " --context 128k");
    const CliRun json = cli("kv --config " + path.string() + " --context 128k --json");
    std::filesystem::remove(path);
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("warning: not exact: attention_chunk_size (line 3)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("bytes — NOT EXACT: see the warnings below"), std::string::npos) << table.out;
    ASSERT_EQ(json.status, 0) << json.err;
    const auto v = json_of(json);
    bool named = false;
    for (const auto& w : v.find("warnings")->items())
        named |= w.as_string().starts_with("not exact: attention_chunk_size (line 3)");
    EXPECT_TRUE(named) << json.out;
}

}  // namespace

namespace {

TEST(Cli, HostThisIsThisMachineMeasured) {
    // --host this: the CPU probe's read ceiling as the host's bandwidth, and this machine's RAM unless given.
    const std::string split =
        "fit --model qwen3-32b --engine llama.cpp --weight-dtype q4_k_m --gpu rtx-4060-ti-16gb --context 16k "
        "--gpu-layers 44 --json --host this";
    const CliRun r = cli(split);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json_of(r);
    const kvscope::json::Value* o = v.find("offload");
    ASSERT_TRUE(o != nullptr && o->is_object());
    EXPECT_GT(u64(*o, "host_bandwidth_bytes_per_s"), 0u);
    EXPECT_GT(u64(*o, "host_memory_bytes"), 0u);
    EXPECT_NE(r.out.find("the host is this machine: "), std::string::npos) << r.out;
    const CliRun given = cli(split + " --host-memory 32GB");
    ASSERT_EQ(given.status, 0) << given.err;
    EXPECT_EQ(u64(*json_of(given).find("offload"), "host_memory_bytes"), 32'000'000'000u);
    // A bandwidth given beside it stays (only the RAM is measured).
    const CliRun bandwidth = cli(split + " --host-bandwidth 50GB");
    ASSERT_EQ(bandwidth.status, 0) << bandwidth.err;
    EXPECT_EQ(u64(*json_of(bandwidth).find("offload"), "host_bandwidth_bytes_per_s"), 50'000'000'000u);
    const CliRun bad = cli("fit --model qwen3-32b --engine llama.cpp --gpu rtx-4060-ti-16gb --host nowhere");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--host: 'nowhere' is not a host memory of the table"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("or this (this machine, measured)"), std::string::npos) << bad.err;
}

}  // namespace
