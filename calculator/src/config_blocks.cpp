// Layouts whose layers have heads of their own: Llama-Nemotron's per-block layout (block_configs) and MiMo-V2's
// hybrid_layer_pattern, and the layers of an MLA model that keep no indexer key, for read_layouts
// (config_layouts.cpp).
#include <algorithm>

#include "config_blocks.h"
#include "config_layouts.h"
#include "kvscope/calculator/units.h"

namespace kvscope::importer {

// Llama-Nemotron (DeciLMForCausalLM, model_type nemotron-nas): block_configs gives each layer its attention and FFN
// (the hub's block_config.py AttentionConfig / FFNConfig). vLLM nemotron_nas.py builds attention only where
// attention.no_op is false, with num_attention_heads // attention.n_heads_in_group KV heads and LlamaAttention's
// head_dim (head_dim, else hidden / heads); it does not read window_length (every attention layer keeps the whole
// context), and sizes each layer's cache by its own heads (vllm/v1/core/kv_cache_utils.py, UniformTypeKVCacheSpecs:
// one group, a tensor per layer). The model's KV heads are the first attending block's (vLLM
// NemotronNasModelArchConfigConvertor.get_total_num_kv_heads). False when the file has no block_configs.
bool read_block_configs(Reader& r, ImportedModel& out) {
    const Value* blocks = r.get("block_configs");
    if (!blocks) return false;
    r.layout_keys.emplace_back("block_configs");
    Architecture& a = out.arch;
    if (!blocks->is_array() || blocks->items().size() != a.layers) {
        r.error(
            "block_configs", blocks->line(),
            "block_configs must list one object per layer (" + std::to_string(a.layers) + "), found " +
                (blocks->is_array() ? std::to_string(blocks->items().size()) + " entries" : Reader::describe(*blocks)));
        return true;
    }
    const auto flag = [](const Value* sub, const char* key) {
        const Value* v = sub ? sub->find(key) : nullptr;
        return v != nullptr && v->is_bool() && v->as_bool();
    };
    std::vector<LayerSpec> specs;
    std::uint64_t first_kv = 0, ffn_sum = 0, ffn_min = 0, ffn_max = 0, linear = 0, windowed = 0;
    for (std::size_t i = 0; i < blocks->items().size(); ++i) {
        const Value& b = blocks->items()[i];
        const std::string at = "block_configs[" + std::to_string(i) + "]";
        const Value* att = b.is_object() ? b.find("attention") : nullptr;
        const Value* ffn = b.is_object() ? b.find("ffn") : nullptr;
        if (!att || !att->is_object() || !ffn || !ffn->is_object()) {
            r.error("block_configs", b.line(), at + " must be an object with an attention and an ffn object");
            return true;
        }
        if (flag(att, "no_op") || flag(att, "replace_with_linear")) {
            // No attention, or a linear map in its place (hub modeling_decilm.py DeciLMLinearAttention): no cache.
            specs.push_back({LayerKind::none});
            linear += flag(att, "no_op") ? 0 : 1;
        } else {
            const Value* g = att->find("n_heads_in_group");
            const auto n = g ? g->as_u64() : std::nullopt;
            if (!n || *n == 0 || a.query_heads % *n != 0) {
                r.error("block_configs", g ? g->line() : att->line(),
                        at +
                            ".attention.n_heads_in_group must be a whole number above 0 that divides "
                            "num_attention_heads (" +
                            std::to_string(a.query_heads) + "), found " + (g ? Reader::describe(*g) : "none"));
                return true;
            }
            LayerSpec l{LayerKind::full};
            l.kv_heads = a.query_heads / *n;
            if (first_kv == 0) first_kv = l.kv_heads;
            specs.push_back(l);
            if (const Value* w = att->find("window_length"); w && !w->is_null()) ++windowed;
        }
        // The FFN's width: vLLM _ffn_mult_to_intermediate_size, int(2 * ffn_mult * hidden / 3) rounded up to a
        // multiple of 256; none for a no_op FFN; a linear hidden x hidden map in its place weighs as a width of
        // hidden / 3 of the gated MLP's three matrices.
        std::uint64_t width = 0;
        if (flag(ffn, "no_op")) {
            width = 0;
        } else if (flag(ffn, "replace_with_linear")) {
            width = a.hidden_size / 3;
        } else if (const Value* m = ffn->find("ffn_mult"); m && m->is_number()) {
            const double w = 2 * m->as_double() * static_cast<double>(a.hidden_size) / 3;
            if (!(w > 0) || w > 1e12) {
                r.error("block_configs", m->line(),
                        at + ".ffn.ffn_mult must be a positive number, found " + Reader::describe(*m));
                return true;
            }
            width = static_cast<std::uint64_t>(w);
            if (width % 256 != 0) width += 256 - width % 256;
        } else if (const Value* is = ffn->find("intermediate_size"); is && is->as_u64()) {
            width = *is->as_u64();
        } else {
            r.error("block_configs", ffn->line(), at + ".ffn needs an ffn_mult, an intermediate_size or no_op");
            return true;
        }
        ffn_sum += width;
        ffn_min = i == 0 ? width : std::min(ffn_min, width);
        ffn_max = std::max(ffn_max, width);
    }
    for (auto& l : specs)
        if (l.kv_heads == first_kv) l.kv_heads = 0;  // the model's: an edit of KV heads moves them
    if (first_kv > 0) a.kv_heads = first_kv;
    r.keys[Field::kv_heads] = "block_configs";
    r.lines[Field::kv_heads] = blocks->line();
    a.layer_specs = std::move(specs);
    // The weights: the gated MLP's parameters are linear in its width, so the mean width gives every layer's together.
    a.intermediate_size = (ffn_sum + a.layers / 2) / a.layers;
    if (ffn_min != ffn_max)
        out.assumed.push_back("block_configs gives FFN widths of " + format_count(ffn_min) + " to " +
                              format_count(ffn_max) + " (vLLM nemotron_nas.py); the weights take their mean, " +
                              format_count(a.intermediate_size) + ", on every layer: the same total");
    if (windowed > 0)
        out.notes.push_back("block_configs gives " + format_count_of(windowed, "attention layer", "attention layers") +
                            " a window_length, which vLLM nemotron_nas.py does not read: they keep the whole context");
    if (linear > 0)
        out.notes.push_back("block_configs replaces attention with a linear map on " +
                            format_count_of(linear, "layer", "layers") +
                            " (no cache); vLLM nemotron_nas.py cannot load such a model");
    return true;
}

// MiMo-V2-Flash and MiMo-V2 (model_type mimo_v2_flash, mimo_v2): hybrid_layer_pattern gives each layer 1 for sliding-
// window attention, 0 for full (SGLang models/mimo_v2_flash.py is_swa_layer; configs/model_config.py
// get_hybrid_layer_ids; vLLM models/mimo_v2_flash.py). A full layer has num_key_value_heads heads of head_dim keys and
// v_head_dim values; a sliding layer swa_num_key_value_heads heads of swa_head_dim keys and swa_v_head_dim values,
// within sliding_window_size tokens (SGLang ModelConfig._get_sliding_window_size: sliding_window_size, then
// sliding_window). Both engines store K and V at their own sizes (SGLang mem_cache/memory_pool.py
// MHATokenToKVPool's v_buffer of v_head_dim; vLLM FullAttentionSpec head_size_v). The SWA layers' attention sinks
// are one scalar per head (attention_sink_bias), no cached token. False when the file is no MiMo-V2.
bool read_mimo_layout(Reader& r, ImportedModel& out) {
    if (out.model_type != "mimo_v2_flash" && out.model_type != "mimo_v2") return false;
    const Value* pattern = r.get("hybrid_layer_pattern");
    if (!pattern) return false;
    Architecture& a = out.arch;
    for (const char* k :
         {"hybrid_layer_pattern", "swa_num_key_value_heads", "swa_num_attention_heads", "swa_head_dim",
          "swa_v_head_dim", "v_head_dim", "sliding_window_size", "sliding_window", "attention_chunk_size"})
        r.layout_keys.emplace_back(k);
    if (!pattern->is_array() || pattern->items().size() != a.layers) {
        r.error("hybrid_layer_pattern", pattern->line(),
                "hybrid_layer_pattern must list 0 (full attention) or 1 (sliding window) for each of the " +
                    std::to_string(a.layers) + " layers, found " +
                    (pattern->is_array() ? std::to_string(pattern->items().size()) + " entries"
                                         : Reader::describe(*pattern)));
        return true;
    }
    // The values' widths: v_head_dim of the full layers, else head_dim (K and V alike).
    if (const auto v = r.number({"v_head_dim"})) {
        a.head_dim_v = v->value;
        r.lines[Field::head_dim_v] = v->line;
        r.keys[Field::head_dim_v] = v->key;
    }
    const auto swa_heads = r.number({"swa_num_key_value_heads"});
    const auto swa_k = r.number({"swa_head_dim"});
    const auto swa_v = r.number({"swa_v_head_dim"});
    // sliding_window_size first, sliding_window only without it (SGLang _get_sliding_window_size): not synonyms.
    auto window = r.number({"sliding_window_size"});
    if (!window) window = r.number({"sliding_window"});
    if (!r.errors.empty()) return true;
    std::vector<LayerSpec> specs;
    for (std::size_t i = 0; i < pattern->items().size(); ++i) {
        const Value& p = pattern->items()[i];
        const auto kind = p.as_u64();
        if (!kind || *kind > 1) {
            r.error("hybrid_layer_pattern", p.line(),
                    "hybrid_layer_pattern[" + std::to_string(i) +
                        "] must be 0 (full attention) or 1 (sliding window), found " + Reader::describe(p));
            return true;
        }
        if (*kind == 0) {
            specs.push_back({LayerKind::full});
            continue;
        }
        if (!window || window->value == 0) {
            r.error("sliding_window_size", r.cfg_.line(),
                    "hybrid_layer_pattern marks sliding-window layers; they need a sliding_window_size above 0");
            return true;
        }
        LayerSpec l{LayerKind::sliding, window->value};
        // Absent swa_* sizes are the full layers' (SGLang reads them with the full layers' as default).
        if (swa_heads && swa_heads->value != a.kv_heads) l.kv_heads = swa_heads->value;
        const std::uint64_t k = swa_k ? swa_k->value : a.head_dim_k;
        const std::uint64_t v = swa_v ? swa_v->value : a.head_dim_v;
        if (k != a.head_dim_k || v != a.head_dim_v) l.head_dim_k = k, l.head_dim_v = v;
        specs.push_back(l);
    }
    if (r.get("attention_chunk_size"))
        out.notes.emplace_back(
            "attention_chunk_size is not read for MiMo-V2: SGLang and vLLM (mimo_v2_flash.py) take "
            "the window from sliding_window_size");
    if (a.mtp_layers > 0)
        a.not_exact.emplace_back(
            "num_nextn_predict_layers: MiMo-V2's MTP layers attend in a sliding window with the sliding layers' heads "
            "(vLLM mimo_v2_mtp.py serves 1 of them); --mtp counts each as a full-attention layer");
    a.layer_specs = std::move(specs);
    return true;
}

// DeepSeek-V3.2-style sparse attention whose indexer runs on some layers only (GLM-5.2: index_topk_freq 4,
// index_skip_topk_offset 3). vLLM deepseek_v2.py DeepseekV2MLAAttention builds an Indexer, and so its key cache, unless
// the layer skips the top-k selection: index_topk_pattern[l] == 'S' where a pattern is given, else
// max(l - index_skip_topk_offset + 1, 0) % index_topk_freq != 0 (getattr defaults 1 and 2: every layer); the MTP layers
// always build theirs. SGLang's dsa_layer_skips_topk is the same rule, and its pool leaves those layers out since PR
// #30531 (older SGLang keeps a slot on every layer). transformers' GlmMoeDsaConfig derives indexer_types ("full" or
// "shared") by the same rule; vLLM does not read it, so it is only checked against the rule.
void read_indexer_layers(Reader& r, ImportedModel& out) {
    Architecture& a = out.arch;
    if (!a.mla || a.mla->indexer_head_dim == 0) return;
    for (const char* k : {"index_topk_freq", "index_skip_topk_offset", "index_topk_pattern", "indexer_types"})
        r.layout_keys.emplace_back(k);
    const auto freq = r.number({"index_topk_freq"});
    const auto offset = r.number({"index_skip_topk_offset"});
    const Value* pattern = r.get("index_topk_pattern");
    if (freq && freq->value == 0 && !pattern) {
        r.error("index_topk_freq", freq->line, "index_topk_freq must be at least 1");
        return;
    }
    if (pattern && (!pattern->is_string() || pattern->as_string().size() != a.layers)) {
        r.error("index_topk_pattern", pattern->line(),
                "index_topk_pattern must be a text of F (an indexer) and S (none), one letter for each of the " +
                    std::to_string(a.layers) + " layers, found " +
                    (pattern->is_string() ? std::to_string(pattern->as_string().size()) + " letters"
                                          : Reader::describe(*pattern)));
        return;
    }
    const std::uint64_t f = freq ? freq->value : 1, o = offset ? offset->value : 2;
    std::vector<bool> skips(a.layers, false);
    std::uint64_t skipped = 0;
    for (std::uint64_t l = 0; l < a.layers; ++l) {
        if (pattern) {
            const std::string& p = pattern->as_string();
            if (l < p.size() && p[l] != 'S' && p[l] != 'F') {
                r.error("index_topk_pattern", pattern->line(),
                        "index_topk_pattern must hold only F and S, found '" + std::string(1, p[l]) + "' at layer " +
                            std::to_string(l));
                return;
            }
            skips[l] = l < p.size() && p[l] == 'S';
        } else {
            skips[l] = (l + 1 > o ? l + 1 - o : 0) % f != 0;
        }
        skipped += skips[l] ? 1 : 0;
    }
    const std::string rule =
        pattern ? "index_topk_pattern"
                : "index_topk_freq " + std::to_string(f) + ", index_skip_topk_offset " + std::to_string(o);
    // An explicit list beside the rule, checked whether or not the rule skips a layer.
    if (const Value* types = r.get("indexer_types")) {
        bool agrees = types->is_array() && types->items().size() == a.layers;
        for (std::size_t l = 0; agrees && l < types->items().size(); ++l) {
            const Value& t = types->items()[l];
            agrees = t.is_string() && (t.as_string() == "full") == !skips[l];
        }
        if (!agrees)
            a.not_exact.push_back("indexer_types (line " + std::to_string(types->line()) +
                                  ") puts the indexer on other layers than " + rule +
                                  " does; vLLM deepseek_v2.py follows the rule, and so does this count");
    }
    if (skipped == 0) return;
    if (a.layer_specs.empty()) a.layer_specs.assign(a.layers, LayerSpec{});
    for (std::uint64_t l = 0; l < a.layers; ++l) a.layer_specs[l].no_indexer = skips[l];
    out.notes.push_back("the sparse-attention indexer keeps its key on " + format_count(a.layers - skipped) + " of " +
                        format_count_of(a.layers, "layer", "layers") + " (" + rule +
                        ": vLLM deepseek_v2.py, SGLang since PR #30531); the MTP layers keep theirs");
}

}  // namespace kvscope::importer
