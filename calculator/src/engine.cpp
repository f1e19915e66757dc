// The engines' table: names, default fractions, budget rules (engine.h).
#include "kvscope/calculator/engine.h"

#include <array>

#include "kvscope/calculator/tables.h"

namespace kvscope {
namespace {

struct EngineInfo {
    Engine engine;
    std::string_view id;
    double fraction;
    std::string_view rule;
    bool takes_fraction = true;     // the engine has a memory-fraction setting
    bool fraction_per_gpu = false;  // its default is derived for the GPU and layout, not `fraction`
};

constexpr std::array<EngineInfo, kEngineCount> kEngines{{
    {Engine::vllm, "vllm", 0.90,
     "total x gpu_memory_utilization - weights - profile-run peak - non-torch memory - CUDA graphs (0.21 on)"},
    {Engine::sglang, "sglang", 0.88,
     "(total - in use before loading) x mem_fraction_static - weights; the fraction SGLang's own for the GPU unless "
     "given",
     true, true},
    {Engine::tensorrt_llm, "tensorrt-llm", 0.90,
     "(total - weights - profiling-run peak - memory outside torch) x free_gpu_memory_fraction"},
    {Engine::llama_cpp, "llama.cpp", 1.0,
     "total - weights - compute buffers - runtime overhead; one contiguous cache for n_ctx", false},
    {Engine::ollama, "ollama", 1.0,
     "llama.cpp as Ollama starts it: num_ctx by VRAM, its batch by context, the layers by llama.cpp's --fit", false},
    {Engine::plain, "plain", 1.0, "total - weights - activation reserve - runtime overhead", false},
}};
static_assert(lists_in_order(kEngines, [](const EngineInfo& e) { return e.engine; }),
              "kEngines: one entry per Engine, in order");

}  // namespace

std::string_view to_string(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).id; }
double default_fraction(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).fraction; }
bool engine_takes_fraction(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).takes_fraction; }
bool default_fraction_per_gpu(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).fraction_per_gpu; }
std::string_view budget_rule(Engine engine) { return kEngines.at(static_cast<std::size_t>(engine)).rule; }

std::optional<Engine> parse_engine(std::string_view text) {
    const std::string t = ascii_lower(text);
    for (const auto& e : kEngines)
        if (t == e.id) return e.engine;
    if (t == "trt-llm" || t == "trtllm" || t == "tensorrt_llm" || t == "tensorrtllm") return Engine::tensorrt_llm;
    if (t == "llama-cpp" || t == "llamacpp" || t == "llama_cpp") return Engine::llama_cpp;
    return std::nullopt;
}

std::string engine_list() {
    std::string out;
    for (const auto& e : kEngines) out += (out.empty() ? "" : ", ") + std::string(e.id);
    return out;
}

}  // namespace kvscope
