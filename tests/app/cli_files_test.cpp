// The files users already have (a GGUF, a model folder, safetensors weights, the local model caches), read
// end to end through kvscope-cli.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "cli_run.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/scenario_file.h"

namespace {

void write_file(const std::filesystem::path& p, const std::string& bytes) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
}

// A safetensors file of one BF16 tensor of `values` values: the 8-byte header length, the header, the data. `shape`
// ("32,32") makes it a matrix; a list of `values` by default.
std::string safetensors_of(const std::string& name, std::uint64_t values, const std::string& dtype = "BF16",
                           const std::string& shape = "") {
    const std::uint64_t width = dtype == "F32" ? 4 : 2;
    const std::string header = R"({")" + name + R"(":{"dtype":")" + dtype + R"(","shape":[)" +
                               (shape.empty() ? std::to_string(values) : shape) + R"(],"data_offsets":[0,)" +
                               std::to_string(values * width) + "]}}";
    std::string out;
    kvscope::gguf::Writer::put(out, header.size(), 8);
    return out + header + std::string(values * width, '\0');
}

constexpr const char* kLlama3Config = R"({"_name_or_path": "meta-llama/Meta-Llama-3-8B", "model_type": "llama",
    "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "torch_dtype": "bfloat16", "vocab_size": 128256})";

// The whole file is written (its tensors' data a hole): a header alone is a file llama.cpp cannot load, and is said.
kvscope::gguf::Writer llama3_gguf() {
    kvscope::gguf::Writer w;
    w.str("general.architecture", "llama").str("general.name", "Meta Llama 3 8B").u32("llama.block_count", 32);
    w.u32("llama.context_length", 8192).u32("llama.embedding_length", 4096).u32("llama.feed_forward_length", 14336);
    w.u32("llama.attention.head_count", 32).u32("llama.attention.head_count_kv", 8).u32("llama.vocab_size", 128256);
    w.tensor("token_embd.weight", {4096, 128256}, 12).tensor("output.weight", {4096, 128256}, 14);
    return w;
}

}  // namespace

TEST(Cli, TheFilesUsersHaveGgufModelFoldersSafetensorsAndLocalCaches) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("kvscope cli files ü " + std::to_string(::getpid()));
    fs::remove_all(dir);
    const auto at = [&](const std::string& rest) { return "'" + (dir / rest).string() + "'"; };
    const auto kv_bytes = [](const CliRun& r) { return u64(json_of(r), "kv_cache_bytes"); };
    const std::uint64_t catalog = kv_bytes(cli("kv --model llama-3-8b --context 8k --json"));
    ASSERT_GT(catalog, 0u);

    // A GGUF: the same cache as the catalog's config.json, the engine llama.cpp, the weights exact.
    llama3_gguf().write_file((dir / "Meta Llama 3 8B.Q4_K_M.gguf").string());
    EXPECT_EQ(kv_bytes(cli("kv --gguf " + at("Meta Llama 3 8B.Q4_K_M.gguf") + " --context 8k --json")), catalog);
    const CliRun fit = cli("fit --gguf " + at("Meta Llama 3 8B.Q4_K_M.gguf") + " --gpu rtx-4090 --json");
    ASSERT_EQ(fit.status, 0) << fit.err;
    const auto f = json_of(fit);
    const std::uint64_t gguf_weights = 4096ull * 128256 / 256 * (144 + 210);
    EXPECT_EQ(f.find("engine")->as_string(), "llama.cpp");
    EXPECT_EQ(u64(f, "weights_bytes"), gguf_weights) << fit.out;
    EXPECT_TRUE(f.find("weights_exact")->as_bool());

    // A model folder: config.json and two shards with their index; --weights on a catalog model reads the same.
    const fs::path folder = dir / "Llama 3 8B";
    write_file(folder / "config.json", kLlama3Config);
    write_file(folder / "model-00001-of-00002.safetensors", safetensors_of("a", 1000));
    write_file(folder / "model-00002-of-00002.safetensors", safetensors_of("b", 24));
    write_file(folder / "model.safetensors.index.json",
               R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
    for (const std::string& args :
         {"--model-dir " + at("Llama 3 8B"), "--model llama-3-8b --weights " + at("Llama 3 8B")}) {
        const CliRun r = cli("fit " + args + " --gpu h100-sxm --json");
        ASSERT_EQ(r.status, 0) << args << ": " << r.err;
        const auto v = json_of(r);
        EXPECT_EQ(u64(v, "weights_bytes"), 2048u) << args;
        EXPECT_EQ(v.find("weights_source")->as_string(), "2,048 bytes, exact from 2 safetensors headers (BF16)")
            << args;
        EXPECT_EQ(v.find("engine")->as_string(), "vllm");
    }
    const CliRun table = cli("fit --model-dir " + at("Llama 3 8B") + " --gpu h100-sxm");
    EXPECT_NE(table.out.find("2,048 bytes, exact from 2 safetensors headers"), std::string::npos) << table.out;
    // A float32 checkpoint is counted as vLLM serves it, in the config's bf16, through --model-dir and --weights.
    const fs::path f32 = dir / "Llama 3 8B float32";
    write_file(f32 / "config.json", kLlama3Config);
    write_file(f32 / "model.safetensors", safetensors_of("a", 1024, "F32"));
    for (const std::string& args :
         {"--model-dir " + at("Llama 3 8B float32"), "--model llama-3-8b --weights " + at("Llama 3 8B float32")}) {
        const auto v = json_of(cli("fit " + args + " --gpu h100-sxm --json"));
        EXPECT_EQ(u64(v, "weights_bytes"), 2048u) << args;
        EXPECT_EQ(v.find("weights_source")->as_string(),
                  "2,048 bytes, exact from 1 safetensors header: their 4,096 bytes of F32 loaded as BF16")
            << args;
    }
    // --weight-dtype asks for another format than the files hold: the files as that format is served (their 1-D
    // tensors are no linear layers: as stored), the same through --model-dir as through --weights.
    const auto fp8 = json_of(cli("fit --model-dir " + at("Llama 3 8B") + " --gpu h100-sxm --weight-dtype fp8 --json"));
    EXPECT_TRUE(fp8.find("weights_exact")->as_bool());
    EXPECT_EQ(u64(fp8, "weights_bytes"), 2048u);
    // --weights with --weight-dtype fp8: the files' linear layers as vLLM's --quantization fp8 makes them at load; a
    // format no engine makes of them at load is refused, naming --weight-dtype, rather than counted as stored.
    write_file(dir / "one layer" / "model.safetensors",
               safetensors_of("model.layers.0.mlp.down_proj.weight", 1024, "BF16", "32,32"));
    const CliRun online =
        cli("fit --model llama-3-8b --gpu h100-sxm --weight-dtype fp8 --json --weights " + at("one layer"));
    ASSERT_EQ(online.status, 0) << online.err;
    EXPECT_EQ(u64(json_of(online), "weights_bytes"), 1024u);
    EXPECT_NE(json_of(online).find("weights_source")->as_string().find("1,024 values quantized to fp8_e4m3 at load"),
              std::string::npos)
        << online.out;
    // A file of nothing an engine loads (GPT-2's mask alone) is said, not taken for the estimate in silence.
    write_file(dir / "mask only" / "model.safetensors", safetensors_of("h.0.attn.bias", 16, "F32"));
    const CliRun masks = cli("fit --model gpt2 --gpu h100-sxm --weights " + at("mask only"));
    EXPECT_EQ(masks.status, 2);
    EXPECT_NE(masks.err.find("holds no weights an engine loads (1 tensor, all buffers engines skip at load)"),
              std::string::npos)
        << masks.err;
    // --model-dir's own files are read the same way when --weight-dtype asks for another format.
    write_file(dir / "one layer" / "config.json", kLlama3Config);
    const CliRun own = cli("fit --model-dir " + at("one layer") + " --gpu h100-sxm --weight-dtype fp8 --json");
    ASSERT_EQ(own.status, 0) << own.err;
    EXPECT_EQ(u64(json_of(own), "weights_bytes"), 1024u);
    const CliRun q4 = cli("fit --model llama-3-8b --gpu h100-sxm --weight-dtype q4_0 --weights " + at("one layer"));
    EXPECT_EQ(q4.status, 2);
    EXPECT_NE(
        q4.err.find(
            "--weight-dtype: the weights' files hold BF16 values, and KVScope knows no engine that makes q4_0 of them"),
        std::string::npos)
        << q4.err;

    // Bad files: a clear line naming the file, exit 2.
    write_file(dir / "broken.gguf", llama3_gguf().bytes().substr(0, 100));
    const CliRun broken = cli("kv --gguf " + at("broken.gguf"));
    EXPECT_EQ(broken.status, 2);
    EXPECT_NE(broken.err.find("broken.gguf: byte "), std::string::npos) << broken.err;
    const CliRun missing = cli("fit --model llama-3-8b --gpu h100-sxm --weights " + at("nowhere"));
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("--weights"), std::string::npos) << missing.err;
    const CliRun two = cli("kv --gguf " + at("a.gguf") + " --model-dir " + at("x"));
    EXPECT_EQ(two.status, 2);
    EXPECT_NE(two.err.find("give one of --model, --config, --gguf, --model-dir and --scenario"), std::string::npos)
        << two.err;

    // The models on this machine: a Hugging Face cache, an Ollama store and an LM Studio folder.
    const fs::path snap = dir / "hub" / "models--meta-llama--Meta-Llama-3-8B" / "snapshots" / "abc";
    write_file(snap / "config.json", kLlama3Config);
    write_file(dir / "hub" / "models--meta-llama--Meta-Llama-3-8B" / "refs" / "main", "abc");
    llama3_gguf().write_file((dir / "ollama" / "blobs" / "sha256-feed").string());
    write_file(dir / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "llama3" / "8b",
               R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:feed"}]})");
    llama3_gguf().write_file(
        (dir / "home" / ".lmstudio" / "models" / "lmstudio-community" / "Llama-3-GGUF" / "llama3.gguf").string());
    const std::string env = "HF_HUB_CACHE=" + at("hub") + " OLLAMA_MODELS=" + at("ollama") + " HOME=" + at("home");
    const CliRun local = cli("models --local --json", env);
    ASSERT_EQ(local.status, 0) << local.err;
    const auto listed = json_of(local);
    std::vector<std::string> ids;
    for (const auto& m : listed.find("models")->items()) ids.push_back(m.find("id")->as_string());
    EXPECT_EQ(ids, (std::vector<std::string>{"meta-llama/Meta-Llama-3-8B", "llama3:8b",
                                             "lmstudio-community/Llama-3-GGUF/llama3.gguf"}));
    const CliRun local_table = cli("models --local", env);
    EXPECT_NE(local_table.out.find("Ollama"), std::string::npos) << local_table.out;
    EXPECT_EQ(local_table.out.find("not readable as found"), std::string::npos) << local_table.out;
    // A pull that did not finish is listed, with why, in each format; choosing it says the same.
    write_file(dir / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "qwen3" / "8b",
               R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:beef"}]})");
    const std::string why = "qwen3:8b: its weights file " + (dir / "ollama" / "blobs" / "sha256-beef").string() +
                            " is missing (the pull did not finish?); run ollama pull qwen3:8b";
    const CliRun partial = cli("models --local", env);
    EXPECT_NE(partial.out.find("Found, but not readable as found:\n  " + why + "\n"), std::string::npos) << partial.out;
    // Apart from the models that load: not a row of the table.
    EXPECT_EQ(partial.out.substr(0, partial.out.find("Found, but")).find("qwen3:8b"), std::string::npos) << partial.out;
    EXPECT_NE(cli("models --local --json", env).out.find("\"ready\": false"), std::string::npos);
    EXPECT_NE(cli("models --local --json", env).out.find("\"problem\": \"its weights file"), std::string::npos);
    EXPECT_NE(cli("models --local --csv", env).out.find(",problem\n"), std::string::npos);
    const CliRun chosen = cli("kv --model qwen3:8b", env);
    EXPECT_NE(chosen.status, 0);
    EXPECT_NE(chosen.err.find("qwen3:8b (Ollama): its weights file"), std::string::npos) << chosen.err;
    fs::remove_all(dir / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "qwen3");
    EXPECT_NE(local_table.out.find((dir / "hub").string()), std::string::npos) << local_table.out;
    // --model resolves to them when the catalog does not know the name.
    EXPECT_EQ(kv_bytes(cli("kv --model llama3:8b --context 8k --json", env)), catalog);
    EXPECT_EQ(kv_bytes(cli("kv --model lmstudio-community/Llama-3-GGUF/llama3.gguf --context 8k --json", env)),
              catalog);
    // A model of Ollama's store is run by Ollama (ollama.h): its engine, its default context for the GPU (32,768 on
    // 24 GiB, no more than the model's 8,192) and its batch for that context (1,024 above 4,096); --engine replaces it.
    const CliRun by_ollama = cli("fit --model llama3:8b --gpu rtx-4090 --json", env);
    ASSERT_EQ(by_ollama.status, 0) << by_ollama.err;
    const auto o = json_of(by_ollama);
    EXPECT_EQ(o.find("engine")->as_string(), "ollama");
    EXPECT_EQ(u64(o, "context_tokens"), 8192u);
    EXPECT_EQ(u64(*o.find("llama_cpp"), "ubatch"), 1024u);
    EXPECT_NE(by_ollama.out.find(
                  "the context is Ollama's default num_ctx for 24.0 GiB of GPU memory: 32,768, no longer than the "
                  "model's 8,192"),
              std::string::npos)
        << by_ollama.out;
    const auto as_llama = json_of(cli("fit --model llama3:8b --gpu rtx-4090 --engine llama.cpp --json", env));
    EXPECT_EQ(as_llama.find("engine")->as_string(), "llama.cpp");
    EXPECT_EQ(u64(*as_llama.find("llama_cpp"), "ubatch"), 512u);
    const CliRun unknown = cli("kv --model nobody/nothing", env);
    EXPECT_EQ(unknown.status, 2);
    EXPECT_NE(unknown.err.find("models --local"), std::string::npos) << unknown.err;
    fs::remove_all(dir);
}

namespace {

TEST(Cli, AScenarioSavedInTheWindowGivesTheSameNumbersHeadless) {
    // The window's File > Save writes a .kvscope.json; kvscope-cli --scenario reads it on a server: the same model,
    // workload and deployment, and the options beside it change them (as the window's own --scenario does).
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("kvscope scénario " + std::to_string(::getpid()));
    fs::create_directories(dir);
    kvscope::Scenario s;
    s.model_id = "llama-3-70b";
    s.arch = kvscope::Catalog::builtin().find_model("llama-3-70b")->model.arch;
    s.kv_dtype = kvscope::KvDtype::fp8_e4m3;
    s.workload.context_tokens = 32768;
    s.workload.batch = 16;
    s.parallel.tp = 2;
    kvscope::Deployment d;
    d.gpu = *kvscope::Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = 2;
    s.deployment = d;
    const fs::path file = dir / "plan ü.kvscope.json";
    write_file(file, kvscope::scenario_to_json(s));
    const std::string scenario = " --scenario '" + file.string() + "'";
    const auto kv_bytes = [](const CliRun& run) { return u64(json_of(run), "kv_cache_bytes"); };
    CliRun r = cli("kv" + scenario + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const CliRun same = cli("kv --model llama-3-70b --kv-dtype fp8 --context 32k --batch 16 --tp 2 --json");
    EXPECT_EQ(kv_bytes(r), kv_bytes(same));
    r = cli("fit" + scenario);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("model:      llama-3-70b (Llama 3 70B, from " + file.string() + ")"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("GPUs:            2 × NVIDIA H100 SXM 80GB"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("KV dtype:   fp8_e4m3 (the scenario file)"), std::string::npos) << r.out;
    // An option beside it changes the file's figure.
    r = cli("kv" + scenario + " --context 8k --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(kv_bytes(r), kv_bytes(same) / 4);
    // Beside --model, or a file that is not there: said, naming the option.
    r = cli("kv --model llama-3-8b" + scenario);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(
        r.err.find("give one of --model, --config, --gguf, --model-dir and --scenario, not --model and --scenario"),
        std::string::npos)
        << r.err;
    r = cli("kv --scenario '" + (dir / "none.kvscope.json").string() + "'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("none.kvscope.json"), std::string::npos) << r.err;
    fs::remove_all(dir);
}

}  // namespace
