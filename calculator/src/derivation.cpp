#include "kvscope/calculator/derivation.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

namespace {

Factor element_factor(KvDtype dtype) {
    const KvDtypeInfo& i = info(dtype);
    Factor f;
    f.value = i.bits_per_block;
    f.divisor = 8 * i.values_per_block;
    f.text = element_size_text(dtype);
    f.field = Field::kv_dtype;
    f.note = "Bytes each stored value takes in the KV cache format " + std::string(i.id) + ".";
    return f;
}

// The row factors with the exact value they multiply to (numerator / denominator).
struct Row {
    std::optional<Factor> kv_pair;
    std::vector<Factor> factors;
};

Row row_factors(const Architecture& arch, KvDtype dtype) {
    Row r;
    if (arch.mla) {
        Factor latent;
        latent.value = arch.mla->kv_lora_rank + arch.mla->qk_rope_head_dim;
        latent.text = "(" + format_count(arch.mla->kv_lora_rank) + " latent + " +
                      format_count(arch.mla->qk_rope_head_dim) + " rope) values";
        latent.note =
            "MLA stores one compressed latent per token and layer, shared by every head, instead of K "
            "and V per head; its size is fixed by the model.";
        r.factors.push_back(latent);
    } else {
        Factor heads;
        heads.value = arch.kv_heads;
        heads.text = format_count_of(arch.kv_heads, "KV head", "KV heads");
        heads.field = Field::kv_heads;
        heads.note = "Each KV head stores its own key and value; query heads in a group share one.";
        Factor dim;
        dim.field = Field::head_dim;
        if (arch.head_dim_k == arch.head_dim_v) {
            Factor pair;
            pair.value = 2;
            pair.text = "2 (K and V)";
            pair.note = "Every token keeps a key and a value.";
            r.kv_pair = pair;
            dim.value = arch.head_dim_k;
            dim.text = format_count(arch.head_dim_k) + " head dim";
            dim.note = "Values in one head's key (and in its value).";
        } else {
            dim.value = arch.head_dim_k + arch.head_dim_v;
            dim.text = "(" + format_count(arch.head_dim_k) + " K + " + format_count(arch.head_dim_v) + " V) head dims";
            dim.note = "Keys and values have different sizes in this model, so they are added, not doubled.";
        }
        r.factors.push_back(heads);
        r.factors.push_back(dim);
    }
    r.factors.push_back(element_factor(dtype));
    return r;
}

// Exact value of a list of factors, or none when not a whole number or too large.
std::optional<std::uint64_t> exact_product(const std::optional<Factor>& lead, const std::vector<Factor>& factors) {
    __extension__ using u128 = unsigned __int128;
    u128 num = lead ? lead->value : 1, den = 1;
    constexpr u128 limit = static_cast<u128>(1) << 100;
    for (const Factor& f : factors) {
        num *= f.value;
        den *= f.divisor;
        if (num > limit || den > limit) return std::nullopt;
    }
    if (den == 0 || num % den != 0) return std::nullopt;
    const u128 v = num / den;
    if (v > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

// The sequences factor, then the check that every factor multiplies to the report's exact bytes.
Result<KvDerivation> finish(KvDerivation d, const Workload& workload, const KvCacheReport& report) {
    Factor sequences;
    sequences.value = workload.batch;
    sequences.text = format_count_of(workload.batch, "sequence", "sequences");
    sequences.field = Field::batch;
    sequences.note = "Every concurrent sequence keeps its own cache.";
    d.tail.push_back(sequences);
    d.total_bytes = report.total_bytes;
    const auto product = product_of_factors(d);
    if (!product || *product != report.total_bytes)
        return Errors{{"kv_cache", "the factor-by-factor derivation does not reproduce the cache size " +
                                       format_count(report.total_bytes) + " bytes; please report this scenario"}};
    return d;
}

// Layers with KV heads or head dimensions of their own (Gemma 4's global layers): no common row, so each
// group of layers shows its tokens times its own row bytes.
Result<KvDerivation> derive_per_layer_rows(const KvLayout& layout, const Architecture& arch, const Workload& workload,
                                           const KvCacheReport& report) {
    KvDerivation d;
    // MLA rows differ only by the indexer's key (GLM-5.2's layers that skip it); other models by their heads.
    const bool mla = arch.mla.has_value();
    d.form = attention_label(arch) + (mla ? " with the indexer's key on some layers" : " with per-layer heads");
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>> groups;  // (tokens, row)
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const std::uint64_t row = layout.row_bytes_per_gpu(l) * layout.tp();
        if (row == 0) continue;
        auto& [count, window] = groups[{layout.stored_tokens(layout.window(l), workload.context_tokens), row}];
        ++count;
        window = layout.window(l);
    }
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
        const auto& [tokens, row] = it->first;
        LayerGroup g;
        g.window = it->second.second;
        g.layers.value = it->second.first;
        g.layers.text = format_count_of(g.layers.value, "layer", "layers");
        g.layers.field = Field::layers;
        g.layers.note =
            mla ? "Layers that keep the same row (the latent, with or without the indexer's key) and tokens."
                : "Layers with the same heads, head dimensions and tokens kept.";
        const Checked value = Checked(tokens) * row;
        if (value.overflow()) return overflow_error(Field::context_tokens, "the cache of these layers");
        g.tokens.value = value.value();
        g.tokens.text = format_count_of(tokens, "token", "tokens") + " × " + format_count(row) + " bytes";
        g.tokens.field = Field::context_tokens;
        g.tokens.note = mla ? "Tokens kept times the bytes of one token of one such layer (its latent, and the "
                              "indexer's key where the layer keeps one)."
                            : "Tokens kept times the bytes of one token of one such layer (K and V of its own heads).";
        d.groups.push_back(std::move(g));
    }
    return finish(std::move(d), workload, report);
}

}  // namespace

std::string element_size_text(KvDtype dtype) {
    const KvDtypeInfo& i = info(dtype);
    if (i.values_per_block == 1 && i.bits_per_block % 8 == 0)
        return format_count_of(i.bits_per_block / 8, "byte", "bytes") + " (" + std::string(i.id) + ")";
    const std::string buf = number_text(bits_per_value(dtype) / 8.0, Notation::general, 6);
    if (i.values_per_block == 1) return buf + " bytes (" + std::string(i.id) + ")";
    return buf + " bytes (" + std::string(i.id) + ", " + std::to_string(i.bits_per_block / 8) + " bytes per " +
           std::to_string(i.values_per_block) + " values)";
}

Result<KvDerivation> derive_kv_bytes(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                     const Parallelism& parallel) {
    auto layout = KvLayout::make(arch, dtype, workload, parallel);
    if (!layout) return layout.errors();
    auto report = kv_cache_report(*layout, arch, workload, parallel);
    if (!report) return report.errors();
    return derive_kv_bytes(*layout, arch, dtype, workload, *report);
}

Result<KvDerivation> derive_kv_bytes(const KvLayout& layout, const Architecture& arch, KvDtype dtype,
                                     const Workload& workload, const KvCacheReport& report) {
    KvDerivation d;
    d.form = attention_label(arch);
    // The layers that keep a KV cache of their own, grouped by the tokens they store, most first.
    // Shared, recurrent and MLP-only layers keep no KV (their state, if any, is reported beside it).
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> by_tokens;  // tokens -> (layers, window)
    std::uint64_t row_per_gpu = 0, caching = 0;
    bool chunked = false;
    for (std::uint64_t l = 0; l < arch.layers; ++l) {
        const std::uint64_t row = layout.row_bytes_per_gpu(l);
        if (row == 0) continue;
        if (row_per_gpu != 0 && row != row_per_gpu) return derive_per_layer_rows(layout, arch, workload, report);
        row_per_gpu = row;
        ++caching;
        chunked = chunked || (arch.layer(l).kind == LayerKind::chunked && layout.window(l) > 0);
        auto& [count, window] = by_tokens[layout.stored_tokens(layout.window(l), workload.context_tokens)];
        ++count;
        window = layout.window(l);
    }
    bool windowed = false;
    for (auto it = by_tokens.rbegin(); it != by_tokens.rend(); ++it) {
        const auto& [tokens, lw] = *it;
        const auto& [layers, window] = lw;
        LayerGroup g;
        g.window = window;
        g.layers.value = layers;
        g.layers.text = format_count_of(layers, "layer", "layers");
        g.layers.field = Field::layers;
        g.layers.note = caching == arch.layers
                            ? "Every layer keeps its own cache."
                            : "The layers that keep a KV cache of their own (" + layer_mix_text(arch) + ").";
        g.tokens.value = tokens;
        g.tokens.text = format_count_of(tokens, "token", "tokens");
        const std::uint64_t kept = KvLayout::kept_tokens(window, workload.context_tokens);
        if (kept < workload.context_tokens) {
            windowed = true;
            const std::uint64_t w = window;  // named, not a structured binding: the lambda below uses it
            const bool chunk =
                chunked && std::any_of(arch.layer_specs.begin(), arch.layer_specs.end(),
                                       [w](const auto& s) { return s.kind == LayerKind::chunked && s.window == w; });
            g.tokens.text += chunk ? " (chunk)" : " (sliding window)";
            g.tokens.field = Field::full_window;
            g.tokens.note = chunk ? "These layers attend within chunks of " + format_count(window) +
                                        " tokens; the engine keeps at most one chunk (vLLM "
                                        "ChunkedLocalAttentionSpec)."
                                  : "These layers attend only to the last " + format_count(window) +
                                        " tokens, so they keep no more than that.";
        } else {
            g.tokens.field = Field::context_tokens;
            g.tokens.note = "Every token of the context (prompt and generated) is kept.";
        }
        if (tokens != kept) {
            g.tokens.text +=
                " (" + format_count(kept) + " rounded up to blocks of " + format_count(layout.block_size()) + ")";
            g.tokens.note += " Paged engines allocate whole blocks of " + format_count(layout.block_size()) + ".";
        }
        d.groups.push_back(std::move(g));
    }
    if (windowed) d.form = "sliding window + " + d.form;

    Row row = row_factors(arch, dtype);
    const std::uint64_t row_all_gpus = row_per_gpu * layout.tp();
    if (layout.replication() > 1) {
        Factor copies;
        copies.value = layout.replication();
        copies.field = Field::tp;
        if (arch.mla) {
            copies.text = std::to_string(layout.replication()) + " copies (every tensor-parallel GPU keeps the latent)";
            copies.note = "The latent is shared by all heads, so each of the " + std::to_string(layout.tp()) +
                          " GPUs keeps all of it.";
        } else {
            copies.text = std::to_string(layout.replication()) + " copies (tensor parallel " +
                          std::to_string(layout.tp()) + " replicates each KV head)";
            copies.note = "More GPUs than KV heads: each head is stored on several GPUs.";
        }
        row.factors.push_back(copies);
    }
    const auto exact = exact_product(row.kv_pair, row.factors);
    if (exact && *exact == row_all_gpus) {
        d.kv_pair = row.kv_pair;
        d.row = std::move(row.factors);
    } else {
        // Block formats round each row up to whole blocks: show the row as the bytes it takes.
        Factor whole;
        whole.value = row_all_gpus;
        whole.field = Field::kv_dtype;
        if (arch.mla && arch.mla->indexer_head_dim > 0) {
            whole.text = format_count(row_all_gpus) + " bytes per token per layer (the MLA latent in " +
                         std::string(to_string(dtype)) + " and the indexer's key)";
            whole.note = "DeepSeek-V3.2 keeps, beside its latent, a key for its sparse-attention indexer: " +
                         format_count(arch.mla->indexer_head_dim) +
                         " fp8 values and a scale per token and layer, as vLLM stores them.";
        } else {
            whole.text = format_count(row_all_gpus) + " bytes per token per layer (K and V rows of " +
                         std::string(to_string(dtype)) + ", rounded up to whole blocks)";
            whole.note = "Quantized formats store values in blocks with a scale; a row is rounded up to whole blocks.";
        }
        d.row = {whole};
    }
    d.row_bytes = row_all_gpus;

    return finish(std::move(d), workload, report);
}

std::string derivation_text(const KvDerivation& d, UnitSystem units) {
    if (d.groups.empty()) return "no layer keeps a KV cache = 0 bytes";
    std::string text = d.kv_pair ? d.kv_pair->text + " × " : "";
    std::string row;
    for (const Factor& f : d.row) row += " × " + f.text;
    if (d.groups.size() == 1) {
        text += d.groups[0].layers.text + row + " × " + d.groups[0].tokens.text;
    } else {
        std::string sum;
        for (const LayerGroup& g : d.groups) sum += (sum.empty() ? "" : " + ") + g.layers.text + " × " + g.tokens.text;
        text += "(" + sum + ")" + row;
    }
    for (const Factor& f : d.tail) text += " × " + f.text;
    return text + " = " + format_count(d.total_bytes) + " bytes = " + format_bytes(d.total_bytes, units);
}

std::optional<std::uint64_t> product_of_factors(const KvDerivation& d) {
    const auto row = exact_product(d.kv_pair, d.row);
    if (!row) return std::nullopt;
    Checked rows;
    for (const LayerGroup& g : d.groups) rows += Checked(g.layers.value) * g.tokens.value;
    Checked total = rows * *row;
    for (const Factor& f : d.tail) {
        if (f.divisor != 1) return std::nullopt;
        total *= Checked(f.value);
    }
    if (total.overflow()) return std::nullopt;
    return total.value();
}

}  // namespace kvscope

namespace kvscope {

std::string state_derivation_text(const Architecture& arch, const Parallelism& parallel, std::uint64_t sequences,
                                  UnitSystem units) {
    if (!arch.recurrent || arch.state_layers() == 0) return {};
    const RecurrentState& st = *arch.recurrent;
    const StateValues v = state_values_per_gpu(st, parallel.tp);
    const Checked per_gpu = state_bytes_per_gpu(st, parallel.tp);
    const Checked total = per_gpu * arch.state_layers() * sequences * parallel.tp;
    if (v.conv.overflow() || v.ssm.overflow() || total.overflow()) return {};
    std::vector<std::string> parts;
    if (v.conv.value() > 0)
        parts.push_back("conv " + format_count(st.conv_kernel - 1) + " × " +
                        format_count(v.conv.value() / (st.conv_kernel - 1)) + " values × " +
                        element_size_text(st.conv_dtype));
    if (v.ssm.value() > 0 && st.head_dim == 1 && st.state_size == 1)  // one value per channel (RG-LRU)
        parts.push_back("recurrence " + format_count(st.heads / parallel.tp) + " values × " +
                        element_size_text(st.ssm_dtype));
    else if (v.ssm.value() > 0)
        parts.push_back("SSM " + format_count(st.heads / parallel.tp) + " × " + format_count(st.head_dim) + " × " +
                        format_count(st.state_size) + " values × " + element_size_text(st.ssm_dtype));
    if (parts.empty()) return {};
    std::string text = format_count_of(arch.state_layers(), "layer", "layers") + " × ";
    text += parts.size() == 1 ? parts.front() : "(" + parts[0] + " + " + parts[1] + ")";
    text += " × " + format_count_of(sequences, "sequence", "sequences");
    if (parallel.tp > 1) text += " × " + std::to_string(parallel.tp) + " GPUs";
    return text + " = " + format_count(total.value()) + " bytes = " + format_bytes(total.value(), units);
}

}  // namespace kvscope
