// The engines' table: names, default fractions, budget rules (engine.h).
#include "kvscope/calculator/engine.h"

#include <array>
#include <initializer_list>
#include <string>

#include "kvscope/calculator/tables.h"

namespace kvscope {
namespace {

// A set of cache formats, one bit a format.
constexpr std::uint32_t formats(std::initializer_list<KvDtype> dtypes) {
    std::uint32_t out = 0;
    for (KvDtype d : dtypes) out |= 1u << static_cast<unsigned>(d);
    return out;
}
static_assert(kKvDtypeCount <= 32, "formats: one bit a KvDtype");

// llama.cpp's cache types (common/arg.cpp kv_cache_types: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1): no
// fp8, no plain int8 or int4, no mxfp4. Ollama passes OLLAMA_KV_CACHE_TYPE to it (envconfig/config.go).
constexpr std::uint32_t kLlamaCppMissing =
    formats({KvDtype::fp8_e4m3, KvDtype::fp8_e5m2, KvDtype::int8, KvDtype::int4, KvDtype::mxfp4});
constexpr std::string_view kLlamaCppFormats =
    "--cache-type-k/-v take f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 and q5_1: common/arg.cpp";

struct EngineInfo {
    Engine engine;
    std::string_view id;
    double fraction;
    std::string_view rule;
    bool takes_fraction = true;     // the engine has a memory-fraction setting
    bool fraction_per_gpu = false;  // its default is derived for the GPU and layout, not `fraction`
    // The cache formats the engine has no option for, and where its own list of formats is.
    std::uint32_t missing_formats = 0;
    std::string_view formats_source = {};
};

constexpr std::array<EngineInfo, kEngineCount> kEngines{{
    {Engine::vllm, "vllm", 0.90,
     "total x gpu_memory_utilization - weights - profile-run peak - non-torch memory - CUDA graphs (0.21 on)", true,
     false, formats({KvDtype::q8_0, KvDtype::q4_0, KvDtype::int4, KvDtype::mxfp4}), "vllm/config/cache.py CacheDType"},
    {Engine::sglang, "sglang", 0.88,
     "(total - in use before loading) x mem_fraction_static - weights; the fraction SGLang's own for the GPU unless "
     "given",
     true, true, formats({KvDtype::q8_0, KvDtype::q4_0, KvDtype::int4, KvDtype::int8}),
     "python/sglang/srt/server_args.py --kv-cache-dtype"},
    {Engine::tensorrt_llm, "tensorrt-llm", 0.90,
     "(total - weights - profiling-run peak - memory outside torch) x free_gpu_memory_fraction", true, false,
     formats({KvDtype::q8_0, KvDtype::q4_0}), "ggml's block formats are llama.cpp's alone"},
    {Engine::llama_cpp, "llama.cpp", 1.0,
     "total - weights - compute buffers - runtime overhead; one contiguous cache for n_ctx", false, false,
     kLlamaCppMissing, kLlamaCppFormats},
    {Engine::ollama, "ollama", 1.0,
     "llama.cpp as Ollama starts it: num_ctx by VRAM, its batch by context, the layers by llama.cpp's --fit", false,
     false, kLlamaCppMissing, kLlamaCppFormats},
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

bool engine_keeps_kv_format(Engine engine, KvDtype dtype) {
    return (kEngines.at(static_cast<std::size_t>(engine)).missing_formats & (1u << static_cast<unsigned>(dtype))) == 0;
}
std::string_view kv_formats_source(Engine engine) {
    return kEngines.at(static_cast<std::size_t>(engine)).formats_source;
}

namespace {

// Whose each setting is, and what SGLang calls it where it reads vLLM's.
struct SettingInfo {
    EngineSetting setting;
    std::string_view owner;
    std::string_view sglang_name;  // empty: SGLang does not read it
};
constexpr std::array<SettingInfo, enum_count<EngineSetting>()> kSettings{{
    {EngineSetting::max_num_batched_tokens, "vLLM's", "chunked_prefill_size"},
    {EngineSetting::max_num_seqs, "vLLM's", "max_running_requests"},
    {EngineSetting::enforce_eager, "vLLM's", {}},
    {EngineSetting::vllm_version, "vLLM's", {}},
    {EngineSetting::max_num_tokens, "TensorRT-LLM's", {}},
    {EngineSetting::ubatch, "llama.cpp's", {}},
    {EngineSetting::flash_attn, "llama.cpp's", {}},
}};
static_assert(lists_in_order(kSettings, [](const SettingInfo& s) { return s.setting; }),
              "kSettings: one entry per EngineSetting, in order");

const SettingInfo& info(EngineSetting setting) { return kSettings.at(static_cast<std::size_t>(setting)); }

}  // namespace

bool engine_reads(Engine engine, EngineSetting setting, SettingUse use, bool fraction_given) {
    switch (setting) {
        case EngineSetting::max_num_batched_tokens:
            return engine == Engine::vllm ||
                   (engine == Engine::sglang && (use == SettingUse::serving || !fraction_given));
        case EngineSetting::max_num_seqs:
            return engine == Engine::vllm || (engine == Engine::sglang && use == SettingUse::serving);
        case EngineSetting::enforce_eager:
        case EngineSetting::vllm_version:
            return engine == Engine::vllm;
        case EngineSetting::max_num_tokens:
            return engine == Engine::tensorrt_llm;
        case EngineSetting::ubatch:
        case EngineSetting::flash_attn:
            return runs_llama_cpp(engine);
    }
    return false;
}

bool engine_has_setting(Engine engine, EngineSetting setting) {
    return engine_reads(engine, setting, SettingUse::fit) || engine_reads(engine, setting, SettingUse::serving);
}

std::optional<std::string> setting_unread_note(Engine engine, EngineSetting setting, bool serving, bool fraction_given,
                                               std::string_view option) {
    if (engine_reads(engine, setting, SettingUse::fit, fraction_given) ||
        (serving && engine_reads(engine, setting, SettingUse::serving, fraction_given)))
        return std::nullopt;
    const SettingInfo& s = info(setting);
    std::string note = std::string(option) + " is " + std::string(s.owner) + " setting";
    if (engine != Engine::sglang || s.sglang_name.empty())
        return note + "; " + std::string(to_string(engine)) + " has none, so it changes nothing here";
    // SGLang reads it, but not here: in its simulation alone, or in its own memory fraction, which one given replaces.
    note += " (SGLang's " + std::string(s.sglang_name) + ", which its simulation reads";
    if (engine_reads(engine, setting, SettingUse::fit, false))
        return note + ", and its own memory fraction, which the fraction given replaces), so it changes nothing here";
    return note + "); SGLang's fit has none, so it changes nothing here";
}

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
