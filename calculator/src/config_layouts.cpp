// What each layer of a config.json keeps: the per-layer description (full, sliding, chunked, shared,
// recurrent, none) from every layout spelling of transformers' config classes, and the not-exact reasons for layout
// fields KVScope does not model (the recurrent state's shapes: config_states.cpp). Each rule names its source.
#include <algorithm>
#include <map>
#include <span>

#include "config_blocks.h"
#include "config_layouts.h"
#include "config_reader.h"
#include "config_unmodelled.h"
#include "kvscope/calculator/units.h"
#include "names.h"

namespace kvscope::importer {
namespace {

// A list of one layer kind name per layer (layer_types, layers_block_type) into `specs`; names KVScope does
// not know are counted by value as not exact (as full attention). False, with an error naming `key`, for a
// list that is not one name per layer.
bool read_named_kinds(Reader& r, const char* key, const Value& list, Architecture& a, std::vector<LayerSpec>& specs) {
    if (!list.is_array()) {
        r.error(key, list.line(), std::string(key) + " must be an array of strings");
        return false;
    }
    // A list may name the multi-token-prediction layers after the model's (Step-3.5-Flash: 45 layers and 3 MTP
    // layers, 48 layer_types; vLLM step3p5.py reads layer_types[i] for layer i, so the model's are the first).
    const std::size_t n = list.items().size();
    const bool with_mtp = a.mtp_layers > 0 && n == a.layers + a.mtp_layers;
    if (n != a.layers && !with_mtp) {
        r.error(key, list.line(),
                std::string(key) + " lists " + std::to_string(n) + " layers but the model has " +
                    std::to_string(a.layers) +
                    (a.mtp_layers > 0 ? " (and " + std::to_string(a.mtp_layers) + " MTP layers)" : std::string()));
        return false;
    }
    if (with_mtp) {
        r.out_.notes.push_back(std::string(key) + " lists the " + std::to_string(a.mtp_layers) +
                               " MTP layers after the model's " + std::to_string(a.layers) +
                               ": the first are the model's (as vLLM reads them)");
        // --mtp counts each MTP layer as full attention (parameters.cpp with_mtp_layers), as the nemotron_h rule
        // says of mtp_hybrid_override_pattern: other kinds there are said.
        const auto mtp_kinds = std::span(list.items()).subspan(a.layers);
        if (std::any_of(mtp_kinds.begin(), mtp_kinds.end(),
                        [](const Value& v) { return !v.is_string() || v.as_string() != "full_attention"; }))
            a.mtp_not_exact.push_back(std::string(key) + " (line " + std::to_string(list.line()) +
                                      ") gives the MTP layers kinds other than full_attention; --mtp counts each "
                                      "as full attention");
    }
    std::map<std::string, std::uint64_t> unknown;
    for (const Value& v : std::span(list.items()).first(a.layers)) {
        const std::string name = v.is_string() ? v.as_string() : "";
        const auto spec = spec_of_layer_type(name);
        if (!spec) ++unknown[name];
        specs.push_back(spec.value_or(LayerSpec{}));
    }
    for (const auto& [type, count] : unknown)
        a.not_exact.push_back(std::string(key) + " (line " + std::to_string(list.line()) + ") lists " +
                              std::to_string(count) + " '" + type + "' layer" + (count == 1 ? "" : "s") +
                              ", a kind KVScope does not know; counted here as full attention");
    return true;
}

// RecurrentGemma (transformers configuration_recurrent_gemma.py): layer i is block_types[i % n] (the config's
// layers_block_type repeats the list; default recurrent, recurrent, attention). The attention layers are local:
// modeling_recurrent_gemma.py keeps attention_window_size tokens (default 2048) of their keys and values.
// Another block name is refused, as transformers refuses it (TEMPORAL_BLOCK_CLASSES has these two).
bool read_block_types(Reader& r, const Value* blocks, ImportedModel& out, std::vector<LayerSpec>& specs) {
    std::vector<std::string> cycle = {"recurrent", "recurrent", "attention"};
    if (blocks) {
        cycle.clear();
        if (blocks->is_array())
            for (const Value& v : blocks->items()) cycle.push_back(v.is_string() ? v.as_string() : "");
        if (cycle.empty()) {
            r.error("block_types", blocks->line(), "block_types must be a non-empty array of block names");
            return false;
        }
    } else {
        out.assumed.emplace_back("block_types = recurrent, recurrent, attention (" + out.model_type +
                                 " default; not in the file)");
    }
    r.layout_keys.emplace_back("attention_window_size");
    const auto window = r.number({"attention_window_size"});
    const std::uint64_t w = window ? window->value : 2048;
    if (!window) out.assumed.emplace_back("attention_window_size = 2048 (recurrent_gemma default; not in the file)");
    for (std::uint64_t i = 0; i < out.arch.layers; ++i) {
        const std::string& name = cycle[i % cycle.size()];
        if (name == "recurrent")
            specs.push_back({LayerKind::recurrent});
        else if (name == "attention" && w > 0)
            specs.push_back({LayerKind::sliding, w});
        else {
            r.error("block_types", blocks ? blocks->line() : r.cfg_.line(),
                    name == "attention" ? "attention_window_size must be above 0"
                                        : "block_types holds '" + name + "'; known are recurrent and attention");
            return false;
        }
    }
    return true;
}

// Kimi Linear (the configuration_kimi.py it ships; vLLM kimi_linear.py KimiDecoderLayer): layer i runs Kimi
// Delta Attention, a recurrent layer, when i + 1 is listed in linear_attn_config.kda_layers (the list counts from
// 1); every other layer runs MLA attention and keeps its latent.
bool read_kda_layers(Reader& r, const Value& lin, ImportedModel& out, std::vector<LayerSpec>& specs) {
    const Value* kda = lin.is_object() ? lin.find("kda_layers") : nullptr;
    if (!kda || !kda->is_array()) {
        r.error("linear_attn_config", lin.line(),
                "linear_attn_config must hold kda_layers, the list of linear-attention layers (counted from 1)");
        return false;
    }
    const std::uint64_t layers = out.arch.layers;
    specs.assign(layers, LayerSpec{LayerKind::full});
    for (const Value& v : kda->items()) {
        const auto n = v.as_u64();
        if (!n || *n == 0 || *n > layers) {
            r.error("linear_attn_config", v.line(),
                    "linear_attn_config.kda_layers holds " + Reader::describe(v) + "; layer numbers from 1 to " +
                        std::to_string(layers) + " expected");
            return false;
        }
        specs[*n - 1] = {LayerKind::recurrent};
    }
    return true;
}

// A layout field the importer reads: named in r.layout_keys (never reported as unknown), and its value.
const Value* take(Reader& r, const char* key) {
    r.layout_keys.emplace_back(key);
    return r.get(key);
}

// Phi-4-mini-flash (SambaY: vLLM phi4flash.py SambaYDecoderLayer and SambaYModel.forward, the hub's
// configuration_phi4flash.py): layer i is Mamba when i % mb_per_layer == 0, else attention. In the lower half an odd
// attention layer slides over sliding_window; layer L/2 + 1 is the one full layer that writes keys and values. From
// L/2 + 2 on (the cross-decoder) the attention layers read that layer's cache (kv_sharing_target_layer_name) and the
// Mamba ones reuse the last state (gated memory units): the states are the lower half's and layer L/2's
// (num_mamba_layers = L/2/mb_per_layer + 1).
void read_sambay_layers(Reader& r, ImportedModel& out, std::vector<LayerSpec>& specs) {
    take(r, "mb_per_layer");
    const auto given = r.number({"mb_per_layer"});
    const std::uint64_t mb = given ? given->value : 2;
    if (!given) out.assumed.emplace_back("mb_per_layer = 2 (phi4flash default; not in the file)");
    const std::uint64_t n = out.arch.layers, half = n / 2;
    for (std::uint64_t i = 0; i < n; ++i) {
        const bool mamba = mb > 0 && i % mb == 0;
        if (i >= half + 2)
            specs.push_back({mamba ? LayerKind::none : LayerKind::shared});
        else if (mamba)
            specs.push_back({LayerKind::recurrent});
        else
            specs.push_back({i < half && i % 2 == 1 ? LayerKind::sliding : LayerKind::full});
    }
    // vLLM's registry lists Phi4FlashForCausalLM under _PREVIOUSLY_SUPPORTED_MODELS (last in 0.10.2), and phi4flash.py
    // is SupportsV0Only: on V0 every layer shares one block table, so a sliding layer holds the whole context.
    out.arch.not_exact.emplace_back(
        "phi4flash: vLLM served it only on its V0 engine, up to 0.10.2 (its registry's _PREVIOUSLY_SUPPORTED_MODELS), "
        "on one GPU, where each sliding layer holds the whole context (--vllm-version 0.9 counts that); the cache here "
        "is the model's own layers, as transformers' modeling_phi4flash.py keeps them");
}

// PLaMo 2 (vLLM plamo2.py is_mamba): layer i is Mamba-2 unless i % mamba_step == mamba_step / 2; a model of no more
// than mamba_step / 2 layers attends on its last layer only. The attention layers take no window of their own
// (Plamo2AttentionMixer passes none to Attention), so they keep the model-wide sliding_window, as vLLM's cache
// config carries it, or the whole context without one.
void read_plamo2_layers(Reader& r, ImportedModel& out, std::vector<LayerSpec>& specs) {
    take(r, "mamba_step");
    const auto given = r.number({"mamba_step"});
    const std::uint64_t step = given && given->value > 1 ? given->value : 2;
    if (!given)
        out.assumed.emplace_back("mamba_step = 2 (plamo2 default; not in the file)");
    else if (given->value < 2)
        out.arch.not_exact.push_back("mamba_step (line " + std::to_string(given->line) + ") is " +
                                     std::to_string(given->value) +
                                     ", which vLLM's plamo2.py refuses (it must be above 1); counted as 2");
    // PLaMo's own attention_window_size is the window vLLM takes from sliding_window.
    r.layout_keys.emplace_back("attention_window_size");
    r.layout_keys.emplace_back("mamba_enabled");
    if (const auto enabled = r.flag("mamba_enabled"); enabled && !*enabled)
        out.arch.not_exact.emplace_back(
            "mamba_enabled is false, which vLLM's plamo2.py does not read: its Mamba layers are counted as it builds "
            "them");
    const auto window = r.number({"sliding_window"});
    const LayerSpec attention{window && window->value > 0 ? LayerKind::sliding : LayerKind::full};
    const std::uint64_t n = out.arch.layers;
    for (std::uint64_t i = 0; i < n; ++i) {
        const bool mamba = n <= step / 2 ? i != n - 1 : i % step != step / 2;
        specs.push_back(mamba ? LayerSpec{LayerKind::recurrent} : attention);
    }
}

// transformers configuration_nemotron_h.py: M = Mamba-2, * = attention, - = MLP, E = mixture of experts;
// each layer is one of these blocks (modeling_nemotron_h.py NemotronHBlock), so no mixer has an MLP.
// False, with an error, for a pattern that is not one known letter per layer.
bool read_override_pattern(Reader& r, const Value& pattern, Architecture& a, std::vector<LayerSpec>& specs) {
    a.mlp_beside_mixer = false;
    if (!pattern.is_string() || pattern.as_string().size() != a.layers) {
        r.error("hybrid_override_pattern", pattern.line(),
                "hybrid_override_pattern must be a text of one letter per layer (" + std::to_string(a.layers) + ")");
        return false;
    }
    for (const char c : pattern.as_string()) {
        if (c == 'M')
            specs.push_back({LayerKind::recurrent});
        else if (c == '*')
            specs.push_back({LayerKind::full});
        else if (c == '-' || c == 'E')
            specs.push_back({LayerKind::none});
        else {
            r.error("hybrid_override_pattern", pattern.line(),
                    std::string("hybrid_override_pattern holds '") + c + "'; known are M, *, - and E");
            return false;
        }
    }
    // The MTP block's own pattern (vLLM nemotron_h_mtp.py: its layers follow mtp_hybrid_override_pattern, "*E" in
    // Nemotron 3 Super): --mtp counts one attention layer per MTP layer, which is that pattern's cache.
    if (const Value* mtp = take(r, "mtp_hybrid_override_pattern"); mtp && mtp->is_string()) {
        const std::string& p = mtp->as_string();
        if (std::count(p.begin(), p.end(), '*') != 1 || p.find('M') != std::string::npos)
            a.mtp_not_exact.push_back("mtp_hybrid_override_pattern (line " + std::to_string(mtp->line()) + ") \"" + p +
                                      "\": --mtp counts one attention layer and no Mamba state per MTP layer");
    }
    return true;
}

// transformers configuration_jamba.py: layer i attends when i % attn_layer_period == attn_layer_offset
// (defaults 8 and 4); the others are Mamba layers.
// False, with an error, for a period of 0.
bool read_attn_layer_period(Reader& r, ImportedModel& out, std::vector<LayerSpec>& specs) {
    take(r, "attn_layer_period"), take(r, "attn_layer_offset");
    const auto period = r.number({"attn_layer_period"}), offset = r.number({"attn_layer_offset"});
    const std::uint64_t p = period ? period->value : 8, o = offset ? offset->value : 4;
    if (!period || !offset)
        out.assumed.push_back("attn_layer_period = " + std::to_string(p) +
                              ", attn_layer_offset = " + std::to_string(o) + " (jamba defaults where not in the file)");
    if (p == 0) {
        r.error("attn_layer_period", period ? period->line : 0, "attn_layer_period must be at least 1");
        return false;
    }
    for (std::uint64_t i = 0; i < out.arch.layers; ++i)
        specs.push_back({i % p == o ? LayerKind::full : LayerKind::recurrent});
    return true;
}

// MiniMax (configuration_minimax_text_01.py of the hub, vLLM minimax_text_01.py): 0 = linear
// (lightning) attention, 1 = softmax attention.
// False, with an error, for a list that is not one 0 or 1 per layer.
bool read_attn_type_list(Reader& r, const Value& list, const Architecture& a, std::vector<LayerSpec>& specs) {
    if (!list.is_array() || list.items().size() != a.layers) {
        r.error("attn_type_list", list.line(),
                "attn_type_list must list one 0 or 1 per layer (" + std::to_string(a.layers) + ")");
        return false;
    }
    for (const Value& v : list.items()) {
        const auto n = v.as_u64();
        if (!n || *n > 1) {
            r.error("attn_type_list", v.line(), "attn_type_list holds " + Reader::describe(v) + "; 0 or 1 expected");
            return false;
        }
        specs.push_back({*n == 1 ? LayerKind::full : LayerKind::recurrent});
    }
    return true;
}

// transformers configuration_lfm2.py: layers listed in full_attn_idxs attend, the others are short
// convolutions; with neither layer_types nor full_attn_idxs every layer attends.
// `idx` is full_attn_idxs or nullptr. False, with an error, for a layer number out of range.
bool read_full_attn_idxs(Reader& r, const Value* idx, const Architecture& a, std::vector<LayerSpec>& specs) {
    specs.assign(a.layers, LayerSpec{idx ? LayerKind::recurrent : LayerKind::full});
    if (idx && idx->is_array())
        for (const Value& v : idx->items()) {
            const auto n = v.as_u64();
            if (!n || *n >= a.layers) {
                r.error("full_attn_idxs", v.line(),
                        "full_attn_idxs holds " + Reader::describe(v) + "; layer numbers below " +
                            std::to_string(a.layers) + " expected");
                return false;
            }
            specs[*n] = {LayerKind::full};
        }
    return true;
}

// Every n-th layer full attention, the others `others`: layer i is full when (i + 1) % n == 0.
// - Qwen3-Next's full_attention_interval (transformers configuration_qwen3_next.py, default 4): the others are
//   linear attention (gated DeltaNet).
// - AFMoE's global_attn_every_n_layers (transformers configuration_afmoe.py, default 4, when the file has no
//   layer_types): the others are sliding.
// - Ring-linear's layer_group_size (vLLM bailing_moe_linear.py is_linear_layer, default 1: every layer full): the
//   others are linear (lightning) attention; 0 makes every layer full there too.
// False, with an error, for an n of 0 where the model's code divides by it.
bool read_every_nth_full(Reader& r, ImportedModel& out, const char* key, std::uint64_t fallback, LayerKind others,
                         std::vector<LayerSpec>& specs) {
    take(r, key);
    const auto given = r.number({key});
    const std::uint64_t n = given ? given->value : fallback;
    if (!given)
        out.assumed.push_back(std::string(key) + " = " + std::to_string(fallback) + " (" + out.model_type +
                              " default; not in the file)");
    const bool zero_is_full = std::string_view(key) == "layer_group_size";
    if (n == 0 && !zero_is_full) {
        r.error(key, given->line, std::string(key) + " must be at least 1");
        return false;
    }
    for (std::uint64_t i = 0; i < out.arch.layers; ++i)
        specs.push_back({n == 0 || (i + 1) % n == 0 ? LayerKind::full : others});
    return true;
}

// transformers configuration_llama4.py: a layer with RoPE (no_rope_layers[i] == 1; default every
// layer but each 4th) attends within attention_chunk_size; NoPE layers attend to everything
// (vLLM llama4.py: chunked local attention on the RoPE layers).
void read_llama4_layers(Reader& r, const Architecture& a, std::vector<LayerSpec>& specs) {
    take(r, "attention_chunk_size"), take(r, "no_rope_layers"), take(r, "no_rope_layer_interval");
    const auto chunk = r.number({"attention_chunk_size"});
    const Value* nope = r.get("no_rope_layers");
    const auto interval = r.number({"no_rope_layer_interval"});
    const std::uint64_t every = interval ? interval->value : 4;
    for (std::uint64_t i = 0; i < a.layers; ++i) {
        bool rope = every == 0 || (i + 1) % every != 0;
        if (nope && nope->is_array() && nope->items().size() == a.layers)
            rope = nope->items()[i].as_u64().value_or(1) != 0;
        specs.push_back(rope && chunk && chunk->value > 0 ? LayerSpec{LayerKind::chunked, chunk->value}
                                                          : LayerSpec{LayerKind::full});
    }
}

// The windows the layers of `specs` left open. False, with an error, for a window that is missing or 0.
bool read_layer_windows(Reader& r, std::vector<LayerSpec>& specs) {
    // Chunked layers take attention_chunk_size; sliding layers sliding_window.
    for (auto& l : specs) {
        if (l.kind == LayerKind::chunked && l.window == 0) {
            take(r, "attention_chunk_size");
            const auto c = r.number({"attention_chunk_size"});
            if (!c || c->value == 0) {
                r.error(Field::attention_chunk_size, r.cfg_.line(),
                        "chunked_attention layers need an attention_chunk_size above 0");
                return false;
            }
            l.window = c->value;
        }
        if (l.kind == LayerKind::sliding && l.window == 0) {
            const auto w = r.number_or_default({"sliding_window"});
            if (!w || w->value == 0) {
                r.error(Field::sliding_window, r.cfg_.line(), "sliding_attention layers need a sliding_window above 0");
                return false;
            }
            l.window = w->value;
        }
    }
    return true;
}

// The per-layer description of hybrid, chunked and shared-KV layouts. Returns true when one of their
// spellings decided the layout (read_windows then only fills in sliding windows it left open).
bool read_hybrid_layout(Reader& r, ImportedModel& out) {
    Architecture& a = out.arch;
    const std::string& t = out.model_type;
    std::vector<LayerSpec> specs;

    if (state_space_type(t)) {
        specs.assign(a.layers, LayerSpec{LayerKind::recurrent});
    } else if (const Value* pattern = take(r, "hybrid_override_pattern")) {
        if (!read_override_pattern(r, *pattern, a, specs)) return true;
    } else if (const Value* types = r.get("layer_types")) {
        r.layout_keys.emplace_back("layer_types");
        // An explicit list wins over the spellings it may have been made from (configuration_qwen3_next.py,
        // configuration_jamba.py, configuration_lfm2.py, …: layer_types first, the others only without it).
        for (const char* k : {"full_attention_interval", "attn_layer_period", "attn_layer_offset", "attn_type_list",
                              "full_attn_idxs", "attn_layer_indices", "layers_block_type", "block_types",
                              "linear_attn_config", "global_attn_every_n_layers", "layer_group_size"})
            r.layout_keys.emplace_back(k);
        if (!read_named_kinds(r, "layer_types", *types, a, specs)) return true;
    } else if (const Value* blocks = take(r, "block_types"); blocks || t == "recurrent_gemma") {
        if (!read_block_types(r, blocks, out, specs)) return true;
    } else if (const Value* lin = take(r, "linear_attn_config")) {
        if (!read_kda_layers(r, *lin, out, specs)) return true;
    } else if (t == "jamba" || r.get("attn_layer_period")) {
        if (!read_attn_layer_period(r, out, specs)) return true;
    } else if (t == "falcon_h1") {
        // transformers modeling_falcon_h1.py FalconH1DecoderLayer: every layer runs attention and a
        // Mamba-2 mixer in parallel (vLLM falcon_h1.py FalconH1ParallelHybrid): KV and state on every layer.
        LayerSpec both{LayerKind::full};
        both.state = true;
        specs.assign(a.layers, both);
    } else if (const Value* list = take(r, "attn_type_list")) {
        if (!read_attn_type_list(r, *list, a, specs)) return true;
    } else if (const Value* layers_block = take(r, "layers_block_type")) {
        // transformers configuration_granitemoehybrid.py / configuration_zamba2.py: "mamba" or "attention".
        if (!read_named_kinds(r, "layers_block_type", *layers_block, a, specs)) return true;
    } else if (const Value* idx = take(r, "full_attn_idxs"); idx || one_of(t, {"lfm2", "lfm2_moe"})) {
        if (!read_full_attn_idxs(r, idx, a, specs)) return true;
    } else if (const Value* idx2 = take(r, "attn_layer_indices"); idx2 || t == "bamba") {
        // transformers configuration_bamba.py: attn_layer_indices attend, every other layer is Mamba-2.
        specs.assign(a.layers, LayerSpec{LayerKind::recurrent});
        if (idx2 && idx2->is_array())
            for (const Value& v : idx2->items())
                if (const auto n = v.as_u64(); n && *n < a.layers) specs[*n] = {LayerKind::full};
    } else if (one_of(t, {"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}) || r.get("full_attention_interval")) {
        if (!read_every_nth_full(r, out, "full_attention_interval", 4, LayerKind::recurrent, specs)) return true;
    } else if (t == "afmoe") {
        if (!read_every_nth_full(r, out, "global_attn_every_n_layers", 4, LayerKind::sliding, specs)) return true;
    } else if (t == "bailing_moe_linear") {
        if (!read_every_nth_full(r, out, "layer_group_size", 1, LayerKind::recurrent, specs)) return true;
    } else if (t == "phi4flash") {
        read_sambay_layers(r, out, specs);
    } else if (t == "plamo2") {
        read_plamo2_layers(r, out, specs);
    } else if (one_of(t, {"llama4", "llama4_text"})) {
        read_llama4_layers(r, a, specs);
    } else {
        if (r.get("attention_chunk_size")) return false;  // left to find_unmodelled_layouts
        return false;
    }

    if (!read_layer_windows(r, specs)) return true;
    a.layer_specs = std::move(specs);
    return true;
}

// Gemma 4 (configuration_gemma4.py; vLLM gemma4.py Gemma4DecoderLayer, transformers modeling_gemma4.py): the
// full-attention layers have their own head dimension (global_head_dim), and their own KV heads
// (num_global_key_value_heads) only where attention_k_eq_v makes their values their keys; without it they keep
// num_key_value_heads. The sliding layers keep the model's. vLLM caches keys and values both on a k_eq_v layer (it
// loads the key weights into both slots); an engine that stored one would keep half.
void read_global_heads(Reader& r, ImportedModel& out) {
    Architecture& a = out.arch;
    const auto heads = r.number({"num_global_key_value_heads"});
    const auto dim = r.number({"global_head_dim"});
    r.layout_keys.emplace_back("num_global_key_value_heads");
    r.layout_keys.emplace_back("global_head_dim");
    const bool k_eq_v = r.flag("attention_k_eq_v").value_or(false);
    if (heads && heads->value > 0 && !k_eq_v && heads->value != a.kv_heads)
        out.notes.push_back("num_global_key_value_heads (" + format_count(heads->value) +
                            ") is read only with attention_k_eq_v (vLLM gemma4.py): the full-attention layers keep " +
                            format_count(a.kv_heads) + " KV heads");
    const bool global_heads = k_eq_v && heads && heads->value > 0;
    if (!global_heads && (!dim || dim->value == 0)) return;
    if (a.layer_specs.empty()) a.layer_specs.assign(a.layers, LayerSpec{});
    for (auto& l : a.layer_specs) {
        if (l.kind != LayerKind::full) continue;
        if (global_heads) l.kv_heads = heads->value;
        if (dim && dim->value > 0) l.head_dim_k = l.head_dim_v = dim->value;
    }
    if (k_eq_v) {
        r.layout_keys.emplace_back("attention_k_eq_v");
        const Value* v = r.get("attention_k_eq_v");
        a.not_exact.push_back("attention_k_eq_v (line " + std::to_string(v ? v->line() : 0) +
                              "): the full-attention layers use one tensor as key and value; KVScope counts "
                              "both, as vLLM caches them (gemma4.py), and an engine that stored one would keep less");
    }
}

// Step-3.5/3.7-Flash (vLLM step3p5.py Step3p5DecoderLayer): a layer whose layer_types entry is
// attention_other_setting's attention_type takes that block's num_attention_groups as its KV heads and its head_dim;
// its num_attention_heads are the layer's query heads, which change the weights, not the cache. Without an
// attention_type vLLM reads none of it (and the block is named as unread by find_unmodelled_layouts).
void read_other_attention(Reader& r, ImportedModel& out) {
    const Value* other = r.get("attention_other_setting");
    const Value* types = r.get("layer_types");
    const Value* type = other != nullptr && other->is_object() ? other->find("attention_type") : nullptr;
    if (type == nullptr || !type->is_string() || types == nullptr || !types->is_array()) {
        r.asked.erase("attention_other_setting");  // not read: find_unmodelled_layouts names what it holds
        return;
    }
    r.layout_keys.emplace_back("attention_other_setting");
    Architecture& a = out.arch;
    const auto number = [other](const char* key) -> std::uint64_t {
        const Value* v = other->find(key);
        return v != nullptr && v->is_number() ? v->as_u64().value_or(0) : 0;
    };
    const std::uint64_t kv = number("num_attention_groups"), dim = number("head_dim"),
                        heads = number("num_attention_heads");
    std::uint64_t layers = 0;
    for (std::uint64_t l = 0; l < a.layers && l < types->items().size(); ++l) {
        const Value& t = types->items()[l];
        if (!t.is_string() || t.as_string() != type->as_string()) continue;
        if (a.layer_specs.empty()) a.layer_specs.assign(a.layers, LayerSpec{});
        LayerSpec& spec = a.layer_specs[l];
        if (kv > 0 && kv != a.kv_heads) spec.kv_heads = kv;
        if (dim > 0 && dim != a.head_dim_k) spec.head_dim_k = spec.head_dim_v = dim;
        ++layers;
    }
    if (layers > 0 && heads > 0 && heads != a.query_heads)
        out.notes.push_back("attention_other_setting: the " + format_count(layers) + " " + type->as_string() +
                            " layers have " + format_count(heads) +
                            " query heads (vLLM step3p5.py), which the weights estimate counts as the model's " +
                            format_count(a.query_heads) + "; their cache takes the block's KV heads and head_dim");
}

// Gemma 3n (transformers configuration_gemma3n.py): the last num_kv_shared_layers layers read the cache of the
// last earlier layer of their own kind and keep none (vLLM gemma3n.py: kv_sharing_target_layer_name; a
// shared layer is given no cache).
void read_shared_layers(Reader& r, ImportedModel& out) {
    Architecture& a = out.arch;
    const auto shared = r.number({"num_kv_shared_layers"});
    r.layout_keys.emplace_back("num_kv_shared_layers");
    if (!shared || shared->value == 0) return;
    if (shared->value >= a.layers) {
        r.error("num_kv_shared_layers", shared->line,
                "num_kv_shared_layers (" + std::to_string(shared->value) + ") must be fewer than the " +
                    std::to_string(a.layers) + " layers");
        return;
    }
    if (a.layer_specs.empty()) a.layer_specs.assign(a.layers, LayerSpec{});
    // A shared layer keeps the window it attends within (it reads a layer of its own kind), for the
    // attention it computes; it stores nothing.
    for (std::uint64_t i = a.layers - shared->value; i < a.layers; ++i) a.layer_specs[i].kind = LayerKind::shared;
}

void read_windows(Reader& r, const Value& cfg, ImportedModel& out) {
    Architecture& a = out.arch;
    // Per-layer windows are a table of one entry per layer; validate() names an absurd count.
    if (a.layers > kMaxLayers) return;
    const auto window = [&]() -> std::optional<Found> { return r.number_or_default({"sliding_window"}); };

    const bool gemma3 = out.model_type == "gemma3_text";
    const auto pattern = r.number_or_default({"sliding_window_pattern"});
    if (pattern || gemma3) {
        const auto w = window();
        if (!pattern || pattern->value == 0 || !w || w->value == 0) {
            r.error("sliding_window_pattern", cfg.line(), "sliding_window_pattern needs a sliding_window above 0");
            return;
        }
        a.layer_specs.assign(a.layers, LayerSpec{});
        // Every pattern-th layer is global; the others are local (transformers' Gemma 3 rule).
        for (std::uint64_t i = 0; i < a.layers; ++i)
            if ((i + 1) % pattern->value != 0) a.layer_specs[i] = {LayerKind::sliding, w->value};
        return;
    }

    if (one_of(out.model_type, {"gemma2", "gpt_oss"})) {
        const auto w = window();
        if (!w || w->value == 0) return;
        a.layer_specs.assign(a.layers, LayerSpec{});
        // Gemma 2 and gpt-oss alternate without layer_types: even layers local, odd layers global
        // (transformers configuration_gemma2.py, configuration_gpt_oss.py: "sliding_attention" if (i + 1) % 2; vLLM
        // gpt_oss.py: sliding_window if layer_idx % 2 == 0).
        for (std::uint64_t i = 0; i < a.layers; i += 2) a.layer_specs[i] = {LayerKind::sliding, w->value};
        return;
    }

    if (const auto use = r.flag("use_sliding_window"); use.has_value()) {
        if (!*use) return;
        const auto w = r.number({"sliding_window"});
        if (!w || w->value == 0) {
            r.error(Field::sliding_window, cfg.line(), "use_sliding_window is true but sliding_window is missing or 0");
            return;
        }
        const auto first = r.number_or_default({"max_window_layers"});
        const std::uint64_t from = first ? first->value : 0;
        a.layer_specs.assign(a.layers, LayerSpec{});
        // Qwen2's rule: layers from max_window_layers on use the window.
        for (std::uint64_t i = from; i < a.layers; ++i) a.layer_specs[i] = {LayerKind::sliding, w->value};
        return;
    }

    if (const auto w = r.number({"sliding_window"}); w && w->value > 0)
        a.layer_specs.assign(a.layers, LayerSpec{LayerKind::sliding, w->value});
}

}  // namespace

// One layer kind per `layer_types` value (transformers configuration_utils.py ALLOWED_LAYER_TYPES, with its
// legacy names "mamba" and "attention"; nemotron_h's "mlp"; configuration_lfm2.py "conv").
std::optional<LayerSpec> spec_of_layer_type(const std::string& s) {
    if (one_of(s, {"full_attention", "attention", "deepseek_sparse_attention"})) return LayerSpec{LayerKind::full};
    if (s == "sliding_attention") return LayerSpec{LayerKind::sliding};
    if (s == "chunked_attention") return LayerSpec{LayerKind::chunked};
    if (one_of(s, {"linear_attention", "mamba", "conv"})) return LayerSpec{LayerKind::recurrent};
    if (s == "hybrid") {  // attention and a recurrent mixer side by side (Falcon-H1, Zamba2)
        LayerSpec l{LayerKind::full};
        l.state = true;
        return l;
    }
    if (one_of(s, {"mlp", "moe", "dense", "sparse"})) return LayerSpec{LayerKind::none};
    return std::nullopt;
}

bool state_space_type(const std::string& type) { return one_of(type, {"mamba", "mamba2", "falcon_mamba"}); }

void read_layouts(Reader& r, const Value& cfg, const Value& root, ImportedModel& out) {
    Architecture& a = out.arch;
    // Per-layer descriptions are tables of one entry per layer: an absurd layer count is named by validate()
    // afterwards, never allocated.
    const bool layout = r.errors.empty() && a.layers <= kMaxLayers;
    if (layout && !read_block_configs(r, out) && !read_mimo_layout(r, out) && !read_hybrid_layout(r, out))
        read_windows(r, cfg, out);
    if (layout && r.errors.empty()) read_global_heads(r, out);
    if (layout && r.errors.empty()) read_other_attention(r, out);
    if (layout && r.errors.empty()) read_shared_layers(r, out);
    if (layout && r.errors.empty()) read_indexer_layers(r, out);
    if (r.errors.empty() && a.state_layers() > 0) {
        if (auto st = read_state(r, out))
            a.recurrent = *st;
        else {
            // Recurrent layers of a type whose state KVScope cannot size: counted as keeping nothing.
            for (auto& l : a.layer_specs) {
                l.state = false;
                if (l.kind == LayerKind::recurrent) l.kind = LayerKind::none;
            }
            a.not_exact.push_back("model_type " + out.model_type +
                                  " has recurrent layers whose state KVScope cannot size; their state is not counted");
        }
    }
    find_unmodelled_layouts(cfg, root, out, r.layout_keys, r.asked);
}

}  // namespace kvscope::importer
