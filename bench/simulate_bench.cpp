// The serving simulation's figures, printed (never asserted):
//   each published vLLM run of published_runs.h simulated: request throughput, median TTFT and median TPOT beside
//   the published ones, |error| of each, and the median |error| over the runs;
//   the speed: 100,000 requests of a chat workload simulated, seconds against the 2 s target.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/engine.h"
#include "kvscope/calculator/traffic.h"
#include "kvscope/calculator/traffic_answer.h"
#include "published_runs.h"

using namespace kvscope;

namespace {

// Qwen/Qwen3-14B's config.json (huggingface.co/Qwen/Qwen3-14B), the fields that size it.
constexpr const char* kQwen3_14b = R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
  "hidden_size": 5120, "intermediate_size": 17408, "num_attention_heads": 40, "num_hidden_layers": 40,
  "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960, "vocab_size": 151936,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

std::optional<Scenario> scenario_of(const bench::PublishedRun& run) {
    Scenario s;
    if (std::string(run.model) == "qwen3-14b") {
        auto imported = import_config(kQwen3_14b, "Qwen3-14B config.json");
        if (!imported) return std::nullopt;
        s.arch = imported->arch;
        s.kv_dtype = imported->kv_dtype;
    } else {
        const CatalogModel* m = Catalog::builtin().find_model(run.model);
        if (!m) return std::nullopt;
        s.arch = m->model.arch;
        s.kv_dtype = m->model.kv_dtype;
    }
    s.model_id = run.model;
    s.workload.context_tokens = run.max_model_len;
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu(run.gpu);
    d.weight_dtype = run.fp8_weights ? KvDtype::fp8_e4m3 : KvDtype::bf16;
    if (run.sglang) {
        d.engine = Engine::sglang;
        d.fraction = default_fraction(Engine::sglang);  // SGLang's own for the GPU
    }
    s.deployment = d;
    return s;
}

double error(double simulated, double published) { return std::fabs(simulated - published) / published; }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main() {
    // Each engine's errors: throughput, TTFT, TPOT.
    std::vector<double> throughput_errors[2], ttft_errors[2], tpot_errors[2];
    std::printf("%-36s %21s %25s %21s\n", "published run", "requests/s (error)", "median TTFT ms (error)",
                "median TPOT ms (error)");
    for (const bench::PublishedRun& run : bench::kPublishedRuns) {
        const auto s = scenario_of(run);
        if (!s) {
            std::printf("%s: model or GPU missing\n", run.name);
            continue;
        }
        auto setup = serving_setup(*s, true, run.concurrency);
        if (!setup) {
            std::printf("%s: %s\n", run.name, setup.error_text().c_str());
            continue;
        }
        TrafficSpec t;
        t.requests = run.prompts;
        t.input = {run.input_tokens, 0};
        t.output = {run.output_tokens, 0};
        if (run.rate > 0) t.rate = run.rate;
        t.shared_prefix = run.shared_prefix;
        t.prefix_groups = run.prefix_groups;
        t.seed = 42;
        auto r = simulate_serving(*make_traffic(t), setup->settings, setup->cost);
        if (!r) {
            std::printf("%s: %s\n", run.name, r.error_text().c_str());
            continue;
        }
        const double e1 = error(r->request_throughput, run.request_throughput);
        // A source that printed means (its ITL for the TPOT column) is compared with the simulation's means.
        const double ttft = run.means ? r->ttft_ms.mean : r->ttft_ms.median;
        const double tpot = run.means ? r->itl_ms.mean : r->tpot_ms.median;
        const double e2 = error(ttft, run.median_ttft_ms);
        const double e3 = error(tpot, run.median_tpot_ms);
        const int engine = run.sglang ? 1 : 0;
        throughput_errors[engine].push_back(e1);
        ttft_errors[engine].push_back(e2);
        tpot_errors[engine].push_back(e3);
        std::printf("%-36s %7.2f vs %6.2f (%3.0f%%) %10.1f vs %9.1f (%3.0f%%) %7.2f vs %6.2f (%3.0f%%)%s\n", run.name,
                    r->request_throughput, run.request_throughput, 100 * e1, ttft, run.median_ttft_ms, 100 * e2, tpot,
                    run.median_tpot_ms, 100 * e3, run.means ? " (means: TTFT, ITL)" : "");
    }
    for (int engine : {0, 1})
        std::printf("%s: median |error| over %zu runs: throughput %.0f%%, median TTFT %.0f%%, median TPOT %.0f%%\n",
                    engine == 0 ? "vLLM" : "SGLang", throughput_errors[engine].size(),
                    100 * median(throughput_errors[engine]), 100 * median(ttft_errors[engine]),
                    100 * median(tpot_errors[engine]));

    // Speed: a chat workload of 100,000 requests on Llama 3.1 8B and one H100.
    bench::PublishedRun chat{"chat", "llama-3.1-8b", "h100-sxm", 8192, 0, 0, 0, 0, 0, 0, 0, ""};
    const auto s = scenario_of(chat);
    auto setup = serving_setup(*s, true, 0);
    TrafficSpec t;
    t.requests = 100000;
    t.rate = 12;
    t.input = {1000, 0.5};
    t.output = {250, 0.5};
    t.shared_prefix = 500;
    t.prefix_groups = 4;
    const auto requests = make_traffic(t);
    const auto start = std::chrono::steady_clock::now();
    auto r = simulate_serving(*requests, setup->settings, setup->cost);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "100,000 chat requests (1000±50%% + 500 shared prompt tokens, 250±50%% out, 12/s) on one H100: "
        "%.2f s simulated in %.2f s, %.0f requests/s of simulation; %.2fx the 2 s target (%llu steps)\n",
        r ? r->duration_s : 0.0, seconds, 100000 / seconds, seconds / 2,
        static_cast<unsigned long long>(r ? r->steps : 0));
    return 0;
}
