// The second line of defence of "never a silent wrong answer": the config fields that may change what a layer keeps
// and that no rule of the importer read, named in the model's not-exact reasons.
#include <algorithm>

#include "config_layouts.h"
#include "config_reader.h"
#include "config_unmodelled.h"
#include "names.h"

namespace kvscope::importer {
namespace {

struct Known {
    const char* key;
    const char* meaning;  // and where the rule is defined
    const char* counted;  // how the answer counts the layers instead
};
// Hymba's remote modeling_hymba.py (no engine KVScope follows serves it): layers of a kv_reuse_group read the first
// one's keys and values and store none, the global_attn_idx layers attend over the whole context while the others
// keep a window, and num_memory_tokens meta tokens open every sequence, cached as prompt tokens are.
const Known kKnown[] = {
    {"attention_chunk_size",
     "attention within chunks on some layers; which layers is known for Llama 4 only "
     "(transformers configuration_llama4.py)",
     "counted here as every layer full attention"},
    {"kv_reuse_group", "groups of layers that share one layer's keys and values (Hymba's modeling_hymba.py)",
     "counted here as every layer storing its own"},
    {"global_attn_idx", "the layers that attend over the whole context while the others keep a window (Hymba)",
     "counted here as the other fields say"},
    {"num_memory_tokens", "meta tokens that open every sequence and are cached like prompt tokens (Hymba)",
     "not counted here"},
};
// Recurrent models whose state KVScope does not size (transformers configuration_rwkv.py).
const char* const kStateSpace[] = {"rwkv"};
// Layout fields the importer reads (read_windows): not reported.
// expert_layer_period/offset place Jamba's experts (an MLP matter, not a cache one).
const char* const kRead[] = {"sliding_window_pattern", "layer_types", "expert_layer_period", "expert_layer_offset"};
// Layout-like fields of a model type that do not change what any layer caches: not reported.
struct Harmless {
    const char* model_type;
    const char* key;  // and why, with the source
};
const Harmless kHarmless[] = {
    // NoPE layers drop the rotary embedding only; every layer still caches its keys and values
    // (transformers configuration_smollm3.py, modeling_smollm3.py use_rope).
    {"smollm3", "no_rope_layer_interval"},
    {"smollm3", "no_rope_layers"},
    // Which layers' MLPs are experts (transformers configuration_ernie4_5_moe.py): an MLP matter.
    {"ernie4_5_moe", "moe_layer_interval"},
    {"ernie4_5_moe_vl", "moe_layer_interval"},  // vLLM ernie45_vl_moe.py reads it for the same
    {"ernie4_5_vl_moe", "moe_layer_interval"},
    {"ernie4_5_vl_moe_text", "moe_layer_interval"},
    // The sparsity of each layer's MLP activations (transformers configuration_gemma3n.py).
    {"gemma3n", "activation_sparsity_pattern"},
    {"gemma3n_text", "activation_sparsity_pattern"},
};
// The sizes of a recurrent state, which is memory too and is not counted yet.
const char* const kStatePrefixes[] = {"mamba_",      "ssm_",    "linear_",    "conv_L",
                                      "conv_kernel", "d_state", "state_size", "time_step"};

// Layer kinds listed, every one of them a kind KVScope knows (an unknown one may keep a state).
bool known_kinds(const Value& cfg, const char* key) {
    const Value* list = cfg.find(key);
    return list != nullptr && list->is_array() &&
           std::all_of(list->items().begin(), list->items().end(),
                       [](const Value& v) { return v.is_string() && spec_of_layer_type(v.as_string()).has_value(); });
}

bool harmless(const std::string& key, const std::string& model_type, bool kinds_listed) {
    // transformers' Gemma 3 config saves the period it derives layer_types from beside them
    // (configuration_gemma3.py _sliding_window_pattern); with layer_types read, it says nothing more.
    if (key == "_sliding_window_pattern" && kinds_listed) return true;
    return std::any_of(std::begin(kHarmless), std::end(kHarmless),
                       [&](const Harmless& h) { return key == h.key && (model_type == h.model_type); });
}

std::string line_of(const Value& v) { return " (line " + std::to_string(v.line()) + ")"; }

// Hunyuan's cross-layer attention: each layer of a group of cla_share_factor reuses the first one's keys and
// values (vLLM hunyuan_v1.py _get_cla_factor, HunYuanCrossAttention), so fewer layers store a cache; how an
// engine sizes those layers is not modelled.
void find_cross_layer_attention(const Value& cfg, std::vector<std::string>& reasons) {
    if (const Value* cla = cfg.find("use_cla"); cla && cla->is_bool() && cla->as_bool()) {
        const Value* factor = cfg.find("cla_share_factor");
        const std::uint64_t f = factor ? factor->as_u64().value_or(1) : 1;
        if (f > 1)
            reasons.push_back("use_cla" + line_of(*cla) + ": each group of " + std::to_string(f) +
                              " layers shares the first one's keys and values (cross-layer attention, vLLM "
                              "hunyuan_v1.py), so about 1 in " +
                              std::to_string(f) +
                              " layers stores a cache; counted here as every layer storing its own");
    }
}

// The second line of defence: a list with one entry per layer, or a list of objects (one per layer or block, as
// Llama-Nemotron's block_configs), that no rule asked for describes layers KVScope does not know; what it changes
// (a layer without attention, other heads, a window) is unknown, so the answer is not exact.
bool per_layer_list(const std::string& key, const Value& v, const Architecture& a) {
    // Lists of token ids and names, whatever their length (transformers configuration_utils.py, generation config).
    // And the rotary embedding's settings per layer, which change no layer's cache (Step-3.5-Flash's rope_theta and
    // partial_rotary_factors, one a layer and MTP layer: vLLM step3p5.py).
    if (one_of(key, {"architectures", "eos_token_id", "bos_token_id", "pad_token_id", "suppress_tokens",
                     "begin_suppress_tokens", "bad_words_ids", "forced_decoder_ids", "stop_token_ids", "rope_theta",
                     "partial_rotary_factors", "partial_rotary_factor"}))
        return false;
    // Where the experts are and how many (Hunyuan-A13B's num_shared_expert, one a layer: vLLM hunyuan_v1.py) places
    // MLPs, not caches.
    if (key.find("expert") != std::string::npos || key.starts_with("moe_")) return false;
    if (!v.is_array() || v.items().empty()) return false;
    if (std::all_of(v.items().begin(), v.items().end(), [](const Value& i) { return i.is_object(); })) return true;
    // One entry per layer, or per layer and MTP layer (DeepSeek-V4's compress_ratios lists its MTP layer too).
    const std::size_t n = v.items().size();
    return a.layers > 1 && (n == a.layers || (a.mtp_layers > 0 && n == a.layers + a.mtp_layers));
}

// An object of settings no rule read (MiniMax-M3's sparse_attention_config) whose lists of numbers have one entry
// per layer, or that gives heads other than the model's: the first such member, else nullptr. The other models' configs
// (vision, audio) and the weights' quantization are not about the language model's layers.
const std::pair<std::string, Value>* nested_per_layer_list(const std::string& key, const Value& v,
                                                           const Architecture& a,
                                                           const std::set<std::string, std::less<>>& asked) {
    static const char* kNotLayerSettings[] = {
        "quantization_config", "vision_config",   "audio_config",  "speech_config",      "vision_tower",
        "rope_scaling",        "rope_parameters", "auto_map",      "text_config",        "llm_config",
        "language_config",     "thinker_config",  "talker_config", "compression_config", "generation_config"};
    if (!v.is_object() || asked.contains(key) ||
        std::any_of(std::begin(kNotLayerSettings), std::end(kNotLayerSettings),
                    [&](const char* k) { return key == k; }))
        return nullptr;
    for (const auto& m : v.members()) {
        const Value& list = m.second;
        // Another layer kind's heads (Step-3.5/3.7-Flash's attention_other_setting: the sliding layers' 96 query
        // heads, vLLM step3p5.py): a head count that differs from the model's.
        // Only in an object of attention settings: another model's config (a vocoder's, a perceiver's) has heads of
        // its own that are no layer's of this one.
        const bool attention_settings =
            key.find("attention") != std::string::npos || key.find("attn") != std::string::npos;
        const bool other_heads =
            attention_settings &&
            one_of(m.first, {"num_attention_heads", "num_key_value_heads", "num_attention_groups", "head_dim"}) &&
            list.is_number() &&
            list.as_u64() != (m.first == "num_attention_heads" ? a.query_heads
                              : m.first == "head_dim"          ? a.head_dim_k
                                                               : a.kv_heads);
        if (other_heads) return &m;
        const bool numbers = list.is_array() && !list.items().empty() &&
                             std::all_of(list.items().begin(), list.items().end(),
                                         [](const Value& i) { return i.is_number() || i.is_bool(); });
        if (numbers && per_layer_list(m.first, list, a)) return &m;
    }
    return nullptr;
}

// The not-exact reason for a layout field no rule read: a known one, a per-layer list, a nested per-layer list or
// a layout-like name; empty for none of them.
std::string layout_reason(const std::string& key, const Value& value, const Architecture& a,
                          const std::set<std::string, std::less<>>& asked) {
    const auto known = std::find_if(std::begin(kKnown), std::end(kKnown), [&](const Known& k) { return key == k.key; });
    // Spellings of "which layers": an interval, a period, a pattern, every n layers (AFMoE, ModernBERT), a group of
    // layers (Ring-linear's layer_group_size), and loops over the layers (Ouro's total_ut_steps, IQuest-Coder's
    // loop_num: each pass keeps a cache of its own, vLLM ouro.py and iquest_loopcoder.py).
    // An expert layout's own (Step-3.5's moe_every_n_layer) places MLPs, not caches.
    const bool layout_like = key.ends_with("_interval") || key.ends_with("_period") ||
                             key.find("pattern") != std::string::npos ||
                             (!key.starts_with("moe_") && key.find("every_n") != std::string::npos) ||
                             key.find("layer_group") != std::string::npos || key.find("loop") != std::string::npos ||
                             key.find("ut_steps") != std::string::npos;
    // Spellings of a KV head count no rule read (num_attention_groups was Step-3.5's before it was read).
    const bool heads_like = key.find("kv_head") != std::string::npos ||
                            key.find("key_value_head") != std::string::npos ||
                            key.find("attention_groups") != std::string::npos;
    if (known != std::end(kKnown)) {
        return key + line_of(value) + ": " + known->meaning + "; " + known->counted;
    }
    if (per_layer_list(key, value, a) && !asked.contains(key)) {
        const bool objects = value.items().front().is_object();
        return key + line_of(value) + " describes the layers one by one (" + std::to_string(value.items().size()) +
               (objects ? " objects" : " entries") +
               ") and KVScope does not read it; it may change what a layer keeps (no attention, "
               "other heads, a window), so every layer is counted as the other fields say";
    }
    if (const auto* inner = nested_per_layer_list(key, value, a, asked)) {
        if (!inner->second.is_array())
            return key + "." + inner->first + " = " + Reader::describe(inner->second) + line_of(inner->second) +
                   " gives some layers other attention heads, and KVScope does not read it; every layer is counted "
                   "with the model's " +
                   inner->first +
                   (inner->first == "num_attention_heads" ? " (the cache does not change; the weights do)" : "");
        return key + "." + inner->first + line_of(inner->second) + " describes the layers one by one (" +
               std::to_string(inner->second.items().size()) +
               " entries) and KVScope does not read it; it may change what a layer keeps (an index "
               "key, no attention, a window), so every layer is counted as the other fields say";
    }
    if (heads_like && !asked.contains(key) && value.is_number() && value.as_u64() != a.kv_heads) {
        return key + line_of(value) + " may give the KV heads of some or all layers, and KVScope does not read it; " +
               "counted here with " + std::to_string(a.kv_heads) + " KV heads a layer";
    }
    if (layout_like) {
        return key + line_of(value) + " may change which layers keep a KV cache, and KVScope does not know it; " +
               (a.layer_specs.empty() ? "counted here as every layer full attention"
                                      : "counted here as the other fields say");
    }
    return {};
}

}  // namespace

// Config fields that change which layers keep a KV cache, and what the others keep instead. The
// calculator does not model these layouts yet; a model that has one is computed as if every layer
// were full attention and says so (Architecture::not_exact), never as an exact answer.
void find_unmodelled_layouts(const Value& cfg, const Value& root, ImportedModel& out,
                             const std::vector<std::string>& read, const std::set<std::string, std::less<>>& asked) {
    const bool kinds_listed = known_kinds(cfg, "layer_types") || known_kinds(cfg, "layers_block_type");
    // Layer kinds listed, none of them keeping a state (Granite 4.0 Micro: granitemoehybrid, every layer
    // attention): its mamba_* sizes describe no layer.
    const bool no_state = kinds_listed && !out.arch.layer_specs.empty() && out.arch.state_layers() == 0;

    std::vector<std::string>& reasons = out.arch.not_exact;
    for (const char* type : kStateSpace)
        if (out.model_type == type)
            reasons.push_back("model_type " + out.model_type +
                              " is a recurrent model whose state per sequence KVScope does not size");
    find_cross_layer_attention(cfg, reasons);
    std::vector<std::string> seen;
    bool state = false;
    for (const Value* obj : {&cfg, &root}) {
        for (const auto& member : obj->members()) {
            const std::string& key = member.first;  // named, not a structured binding: lambdas below use it
            const Value& value = member.second;
            if (value.is_null() || std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
            if (std::any_of(std::begin(kRead), std::end(kRead), [&](const char* k) { return key == k; }) ||
                std::find(read.begin(), read.end(), key) != read.end() || harmless(key, out.model_type, kinds_listed))
                continue;
            std::string reason = layout_reason(key, value, out.arch, asked);
            // A name is no size (PLaMo 2's linear_type "fp8" is its weights' format); a number, a list or an object
            // of sizes (a mamba_config) may be.
            if (reason.empty() && !value.is_string() && !state && !out.arch.recurrent && !no_state &&
                std::any_of(std::begin(kStatePrefixes), std::end(kStatePrefixes),
                            [&](const char* p) { return key.starts_with(p); })) {
                state = true;
                reason = key + line_of(value) +
                         " sizes a recurrent state (Mamba, linear attention or convolution), which is "
                         "memory per sequence that is not counted yet";
            }
            if (reason.empty()) continue;
            seen.push_back(key);
            reasons.push_back(std::move(reason));
        }
    }
}

}  // namespace kvscope::importer
