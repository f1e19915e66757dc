// Llama-Nemotron's per-block layout (block_configs), for read_layouts (config_layouts.cpp).
#include <algorithm>

#include "config_reader.h"
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

}  // namespace kvscope::importer
