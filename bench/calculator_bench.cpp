// Speed of the calculator and the CLI. Targets (issue: calculator core):
//   a full scenario recompute — every report plus three 512-point curves — under 50 µs (the
//   window plans every layout only while its Deployment tab is shown: BM_Plan, for reference);
//   kvscope-cli from start to answer in a few milliseconds and under 30 MiB (it loads no GPU library:
//   the probe's CUDA backend is a plugin).
// Files users have (issue: GGUF, safetensors, local model caches): a 400 GB GGUF opens in milliseconds (its header
// only: BM_GgufHeaderOf400GBFile prints its time and its ratio to reading the same header bytes raw, the least any
// reader can take); scanning a cache of 1,000 models stays under a second (BM_ScanLocalModels prints its time).
// The recompute prints its ratio to the 50 µs target; the CLI its time and peak memory with their ratios
// to starting /bin/true, measured in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <unistd.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/plan.h"

extern char** environ;

namespace kvscope {
namespace {

void BM_FullScenarioRecompute(benchmark::State& state, const char* model_id) {
    const auto& catalog = Catalog::builtin();
    const auto& arch = catalog.find_model(model_id)->model.arch;
    Deployment d;
    d.gpu = *catalog.find_gpu("h100-sxm");
    d.gpu_count = 2;
    const Workload w{.context_tokens = 32768, .batch = 16};
    const Parallelism p{.tp = 2};
    std::uint64_t sink = 0;
    double seconds = 0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        auto kv = kv_cache_report(arch, KvDtype::fp8_e4m3, w, p);
        auto variants = compare_variants(arch, KvDtype::fp8_e4m3, w, p);
        auto curves = kv_curves(arch, KvDtype::fp8_e4m3, w, p, {.points = 512, .min_tokens = 128});
        auto fit_report = fit(arch, KvDtype::fp8_e4m3, w, p, d);
        auto decode = decode_estimate(arch, KvDtype::fp8_e4m3, w, p, d, *fit_report);
        sink += kv->total_bytes + variants->size() + curves->series.size() * curves->tokens.size() +
                fit_report->max_batch + decode->kv_bytes_read_per_gpu;
        benchmark::DoNotOptimize(sink);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    const double us = seconds * 1e6 / static_cast<double>(state.iterations());
    state.counters["points"] = static_cast<double>(512 * (variant_shapes(arch).size()));
    state.counters["us_per_recompute"] = us;
    state.counters["ratio_to_50us_target"] = us / 50.0;
}
BENCHMARK_CAPTURE(BM_FullScenarioRecompute, llama_3_70b, "llama-3-70b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FullScenarioRecompute, gemma_3_27b_windows, "gemma-3-27b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FullScenarioRecompute, llama_3_1_405b_126_layers, "llama-3.1-405b")->Unit(benchmark::kMicrosecond);
// Hybrids: recurrent state beside 12 of 48 attention layers (and the all-full-attention comparison line);
// 118 layers of three kinds with vLLM's hybrid page layout in the fit.
BENCHMARK_CAPTURE(BM_FullScenarioRecompute, qwen3_next_hybrid, "qwen3-next-80b-a3b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FullScenarioRecompute, nemotron_h_118_layers, "nemotron-h-56b")->Unit(benchmark::kMicrosecond);

// "How many GPUs?" alone: every TP within a node × PP until one replica serves 64 sequences.
void BM_Plan(benchmark::State& state, const char* model_id) {
    const auto& catalog = Catalog::builtin();
    const auto& arch = catalog.find_model(model_id)->model.arch;
    Deployment d;
    d.gpu = *catalog.find_gpu("h100-sxm");
    const Workload w{.context_tokens = 32768, .batch = 64};
    std::size_t rows = 0;
    for (auto _ : state) {
        auto plan = plan_deployments(arch, KvDtype::fp8_e4m3, w, d);
        rows = plan->options.size();
        benchmark::DoNotOptimize(rows);
    }
    state.counters["layouts"] = static_cast<double>(rows);
}
BENCHMARK_CAPTURE(BM_Plan, llama_3_70b, "llama-3-70b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Plan, llama_3_1_405b_126_layers, "llama-3.1-405b")->Unit(benchmark::kMicrosecond);

// Starts `argv` (stdout to /dev/null), waits for it, and returns the wall time in ms; negative
// when it cannot be started. `peak_kib` gets the process's peak resident memory.
double spawn_and_wait_ms(const char* const argv[], long* peak_kib = nullptr) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const bool started = posix_spawn(&pid, argv[0], &actions, nullptr, const_cast<char**>(argv), environ) == 0;
    if (started) {
        int status = 0;
        rusage usage{};
        wait4(pid, &status, 0, &usage);
        if (peak_kib) *peak_kib = usage.ru_maxrss;
    }
    posix_spawn_file_actions_destroy(&actions);
    return started ? std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() : -1.0;
}

// Ceiling measured in the same run: starting /bin/true, the least any process start costs (time, and
// peak resident memory in KiB).
struct ProcessStart {
    double ms = 0;
    long peak_kib = 0;
};
const ProcessStart& process_start() {
    static const ProcessStart start = [] {
        const char* argv[] = {"/bin/true", nullptr};
        constexpr int kRuns = 50;
        ProcessStart s;
        for (int i = 0; i < kRuns; ++i) {
            long peak = 0;
            s.ms += spawn_and_wait_ms(argv, &peak) / kRuns;
            s.peak_kib = std::max(s.peak_kib, peak);
        }
        return s;
    }();
    return start;
}

void BM_CliStartToAnswer(benchmark::State& state) {
    const char* argv[] = {KVSCOPE_CLI_PATH, "fit",      "--model", "llama-3-70b", "--context", "32k",
                          "--gpu",          "h100-sxm", "--gpus",  "2",           "--json",    nullptr};
    double total_ms = 0;
    long peak_kib = 0;
    for (auto _ : state) {
        long peak = 0;
        const double ms = spawn_and_wait_ms(argv, &peak);
        peak_kib = std::max(peak_kib, peak);
        if (ms < 0) {
            state.SkipWithError("cannot start kvscope-cli");
            break;
        }
        total_ms += ms;
    }
    const double ms = total_ms / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["ms_start_to_answer"] = ms;
    state.counters["ratio_to_process_start"] = ms / process_start().ms;
    state.counters["peak_MiB"] = static_cast<double>(peak_kib) / 1024.0;
    state.counters["peak_ratio_to_process_start"] =
        static_cast<double>(peak_kib) / static_cast<double>(std::max(1L, process_start().peak_kib));
}
BENCHMARK(BM_CliStartToAnswer)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();

// A GGUF of Llama 3.1 405B's header (a 128,256-token vocabulary and its 280,147 merges, 1,136 tensor infos) followed by
// 400 GB of tensor data that is never read (a sparse file: no disk is used for it).
struct TempFile {
    std::filesystem::path path;
    ~TempFile() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
};

std::filesystem::path big_gguf() {
    static const TempFile file{[] {
        gguf::Writer w;
        w.str("general.architecture", "llama").str("general.name", "Llama 3.1 405B").u32("llama.block_count", 126);
        w.u32("llama.context_length", 131072).u32("llama.embedding_length", 16384);
        w.u32("llama.feed_forward_length", 53248).u32("llama.attention.head_count", 128);
        w.u32("llama.attention.head_count_kv", 8).strings("tokenizer.ggml.tokens", 128256);
        w.strings("tokenizer.ggml.merges", 280147);
        w.tensor("token_embd.weight", {16384, 128256}, 12).tensor("output.weight", {16384, 128256}, 14);
        for (int l = 0; l < 126; ++l)
            for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down",
                                  "attn_norm", "ffn_norm"})
                w.tensor("blk." + std::to_string(l) + "." + t + ".weight", {16384, 1024}, 12);
        const auto p =
            std::filesystem::temp_directory_path() / ("kvscope-bench-400GB-" + std::to_string(::getpid()) + ".gguf");
        std::ofstream(p, std::ios::binary) << w.bytes();
        std::filesystem::resize_file(p, 400'000'000'000ull);
        return p;
    }()};
    return file.path;
}

void BM_GgufHeaderOf400GBFile(benchmark::State& state) {
    const std::string path = big_gguf().string();
    std::uint64_t header = 0;
    double ms = 0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        auto m = gguf::import_file(path);
        ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (!m) {
            state.SkipWithError(m.error_text().c_str());
            break;
        }
        header = gguf::read_file(path)->header_bytes;
        benchmark::DoNotOptimize(m);
    }
    // The ceiling: the same header bytes read raw, in one piece.
    std::vector<char> bytes(header);
    const auto start = std::chrono::steady_clock::now();
    constexpr int kRaw = 20;
    for (int i = 0; i < kRaw; ++i) {
        std::ifstream in(path, std::ios::binary);
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        benchmark::DoNotOptimize(bytes.data());
    }
    const double raw_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kRaw;
    const double per = ms / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
    state.counters["ms_to_open"] = per;
    state.counters["header_MiB"] = static_cast<double>(header) / (1 << 20);
    state.counters["ratio_to_raw_read"] = per / raw_ms;
}
BENCHMARK(BM_GgufHeaderOf400GBFile)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();

// 1,000 Hugging Face repos, 200 Ollama models and 200 LM Studio files, as folders, refs and manifests.
void BM_ScanLocalModels(benchmark::State& state) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("kvscope-bench-cache-" + std::to_string(::getpid()));
    for (int i = 0; i < 1000; ++i) {
        const fs::path repo = root / "hub" / ("models--org--model-" + std::to_string(i));
        fs::create_directories(repo / "snapshots" / "abc");
        fs::create_directories(repo / "refs");
        std::ofstream(repo / "refs" / "main") << "abc";
        std::ofstream(repo / "snapshots" / "abc" / "config.json") << "{}";
    }
    for (int i = 0; i < 200; ++i) {
        const fs::path m = root / "ollama" / "manifests" / "registry.ollama.ai" / "library" / ("m" + std::to_string(i));
        fs::create_directories(m);
        std::ofstream(m / "latest")
            << R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" << i << R"("}]})";
        const fs::path l = root / "lms" / "pub" / ("repo" + std::to_string(i));
        fs::create_directories(l);
        std::ofstream(l / "model.gguf") << "GGUF";
    }
    const LocalRoots roots{(root / "hub").string(), (root / "ollama").string(), (root / "lms").string()};
    std::size_t found = 0;
    for (auto _ : state) found = scan_local_models(roots).size();
    state.counters["models_found"] = static_cast<double>(found);
    fs::remove_all(root);
}
BENCHMARK(BM_ScanLocalModels)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();

}  // namespace
}  // namespace kvscope

BENCHMARK_MAIN();
