#include "kvscope/calculator/config_import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <utility>

#include "config_blocks.h"
#include "config_layouts.h"
#include "config_reader.h"
#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/text_file.h"
#include "kvscope/calculator/units.h"
#include "names.h"
#include "open_file.h"

namespace kvscope {
namespace {

using namespace importer;

void read_dtypes(const Value& root, const Value& cfg, ImportedModel& out) {
    const Value* dtype = nullptr;
    std::string key;
    for (const Value* obj : {&cfg, &root})
        for (const char* k : {"torch_dtype", "dtype"})
            if (!dtype)
                if (const Value* v = obj->find(k); v && v->is_string()) dtype = v, key = k;
    if (dtype) {
        if (const auto d = dtype_from_torch(dtype->as_string()); d == KvDtype::fp32) {
            // Engines do not serve a float32 checkpoint in float32: vLLM's dtype="auto" downcasts it to
            // the platform's preferred dtype, bfloat16 on GPUs that have it (compute capability 8.0+)
            // (vllm/config/model.py, _resolve_auto_dtype: "Downcast for float32 models"), and the KV
            // cache follows the model dtype (cache_dtype "auto").
            out.kv_dtype = KvDtype::bf16;
            out.kv_dtype_source =
                key + " " + dtype->as_string() +
                ", served as bf16 (vLLM dtype=auto downcasts float32; --kv-dtype fp32 for the file's own)";
        } else if (d) {
            out.kv_dtype = *d;
            out.kv_dtype_source = key + " " + dtype->as_string();
        } else {
            out.kv_dtype = KvDtype::fp16;
            out.kv_dtype_source = key + " '" + dtype->as_string() + "' is not a cache format; fp16 used";
        }
    } else {
        // A torch_dtype that is not a string (16, null) is named as found, not as missing.
        const Value* other = nullptr;
        for (const Value* obj : {&cfg, &root})
            for (const char* k : {"torch_dtype", "dtype"})
                if (const Value* v = obj->find(k); v && !other) other = v, key = k;
        out.kv_dtype = KvDtype::fp16;
        out.kv_dtype_source = other != nullptr ? key + " is not a name of a format (\"bfloat16\"); fp16 used"
                                               : "no torch_dtype in the file; fp16 used";
        // An MXFP4 checkpoint (gpt-oss) runs in bf16 only: vLLM quantization/mxfp4.py get_supported_act_dtypes is
        // [bfloat16] (and its dtype=auto reads the tensors' bf16), so its cache is bf16 (cache_dtype "auto").
        const Value* quant = root.find("quantization_config");
        const Value* method = quant && quant->is_object() ? quant->find("quant_method") : nullptr;
        if (other == nullptr && method && method->is_string() && method->as_string() == "mxfp4") {
            out.kv_dtype = KvDtype::bf16;
            out.kv_dtype_source = "no torch_dtype in the file; bf16, the only format vLLM runs MXFP4 checkpoints in";
        }
    }
    out.weight_dtype = out.kv_dtype;
    out.weight_dtype_source = out.kv_dtype_source;
    // A quantized checkpoint: its layers' matrices stored as quantization_config says, the rest in the dtype
    // above (weight_quant.cpp names each method's vLLM source).
    if (const Value* quant = root.find("quantization_config"); quant && quant->is_object()) {
        out.weight_quant = weight_quant_from_config(*quant, out.notes);
        if (out.weight_quant)
            out.weight_dtype_source = "quantization_config " + weight_quant_label(*out.weight_quant) +
                                      "; the rest in " + std::string(to_string(out.weight_dtype));
    }
}

// The layer count from a list of one layer kind per layer, where the list is what gives it. transformers
// configuration_nemotron_h.py derives num_hidden_layers from layers_block_type (a num_hidden_layers beside it is
// dropped), and newer nemotron_h configs give only the list; for other model types a list gives the count only when
// the file has no layer-count field (read_layouts then reads each entry as that layer's kind).
std::optional<Found> layers_from_kinds(Reader& r, ImportedModel& out) {
    const bool list_decides = out.model_type == "nemotron_h";
    const Value* given = nullptr;
    const char* given_key = nullptr;
    for (const char* k : {"num_hidden_layers", "n_layer", "num_layers", "n_layers"})
        if (const Value* v = r.get(k); v && !given) given = v, given_key = k;
    if (given && !list_decides) return std::nullopt;
    for (const char* key : {"layers_block_type", "layer_types"}) {
        if (list_decides && std::string_view(key) != "layers_block_type") continue;
        const Value* list = r.get(key);
        if (!list || !list->is_array() || list->items().empty()) continue;
        const std::uint64_t n = list->items().size();
        if (given) {
            if (given->as_u64() == n) return std::nullopt;  // they agree: the field gives it
            out.notes.push_back(std::string(given_key) + " (" + Reader::describe(*given) +
                                ") is not read: transformers configuration_nemotron_h.py counts the " +
                                std::to_string(n) + " entries of layers_block_type");
        } else {
            out.notes.push_back("the layer count is the " + std::to_string(n) + " entries of " + key +
                                " (the file has no num_hidden_layers" +
                                (list_decides ? "; transformers configuration_nemotron_h.py derives it so)" : ")"));
        }
        return Found{n, key, list->line()};
    }
    return std::nullopt;
}

// The object that describes the language model of a multimodal config, with its path; nullptr for a config whose own
// keys describe it. text_config (transformers' composite configs); without a layer count at the top, llm_config
// (InternVL: vLLM internvl.py reads config.llm_config), language_config (DeepSeek-VL2: vLLM deepseek_vl2.py) and
// thinker_config.text_config (Qwen-Omni: the thinker generates the text; vLLM qwen3_omni_moe_thinker.py).
std::pair<const Value*, std::string> language_model(const Value& root) {
    const auto object = [](const Value* v) { return v && v->is_object() ? v : nullptr; };
    if (const Value* t = object(root.find("text_config"))) return {t, "text_config"};
    for (const char* k : {"num_hidden_layers", "n_layer", "num_layers", "n_layers"})
        if (root.find(k)) return {nullptr, {}};
    for (const char* k : {"llm_config", "language_config"})
        if (const Value* t = object(root.find(k))) return {t, k};
    if (const Value* thinker = object(root.find("thinker_config")))
        if (const Value* t = object(thinker->find("text_config"))) return {t, "thinker_config.text_config"};
    return {nullptr, {}};
}

// The first class of "architectures", else "".
std::string first_architecture(const Value& root) {
    const Value* archs = root.find("architectures");
    if (archs && archs->is_array() && !archs->items().empty() && archs->items().front().is_string())
        return archs->items().front().as_string();
    return {};
}

// LongCat-Flash: each of its num_layers decoder layers holds two MLA attention blocks, each with a cache of its own,
// one MoE block and two dense MLPs (vLLM longcat_flash.py FlashDecoderLayer: self_attn is a list of two
// DeepseekV2MLAAttention; transformers configuration_longcat_flash.py: num_hidden_layers 56 for num_layers 28). The
// cache has 2 x num_layers layers; the weights estimated from the shape count one MLP block per attention block.
// LongCat-Flash-Lite (LongcatFlashNgramForCausalLM) has the same layers. False where the config has no num_layers (its
// num_hidden_layers then counts the caches, as transformers saves it).
bool read_longcat_layers(Reader& r, ImportedModel& out) {
    Architecture& a = out.arch;
    const auto blocks = r.number({"num_layers"});
    if (!blocks || blocks->value == 0) return false;
    const Checked attention = Checked(2) * blocks->value;
    if (attention.overflow()) return false;
    // transformers saves num_hidden_layers (twice num_layers) beside it: not read, so no contradiction.
    out.notes.push_back("LongCat-Flash's " + std::to_string(blocks->value) + " layers (num_layers, line " +
                        std::to_string(blocks->line) + ") hold two attention blocks each, each with its own cache: " +
                        std::to_string(attention.value()) + " cache layers (vLLM longcat_flash.py)");
    a.layers = attention.value(), r.lines[Field::layers] = blocks->line, r.keys[Field::layers] = blocks->key;
    a.not_exact.emplace_back(
        "LongCat-Flash's layers hold two attention blocks, one MoE block and two dense MLPs (vLLM longcat_flash.py); "
        "the KV cache counts both attention blocks, but the weights estimated from the config count one MLP block "
        "per attention block (import the checkpoint's safetensors index for its weights)");
    return true;
}

void read_attention(Reader& r, ImportedModel& out) {
    Architecture& a = out.arch;
    const auto q = r.required({"num_attention_heads", "n_head", "n_heads", "num_heads"});
    if (q) a.query_heads = q->value, r.lines[Field::query_heads] = q->line, r.keys[Field::query_heads] = q->key;

    // KV heads: explicit counts, then the multi-query switches, then "same as query heads".
    // num_attention_groups: Step-3.5-Flash's (vLLM step3p5.py: num_kv_heads = config.num_attention_groups).
    auto kv = r.number({"num_key_value_heads", "n_head_kv", "num_kv_heads", "n_kv_heads", "num_attention_groups"});
    const auto new_arch = r.flag("new_decoder_architecture");
    const auto multi_query = r.flag("multi_query");
    const auto mqa_group = r.flag("multi_query_attention");
    if (!kv && mqa_group.value_or(false)) kv = r.number({"multi_query_group_num"});
    if (kv && multi_query.value_or(false) && !new_arch.value_or(false) && kv->value != 1) {
        // Falcon's modeling code decides by the switches, not by the saved count: without
        // new_decoder_architecture, multi_query means one KV head whatever num_kv_heads says
        // (transformers modeling_falcon.py FalconAttention.__init__; vLLM model_executor/models/falcon.py).
        const Value* v = r.get("multi_query");
        out.assumed.push_back("1 KV head: multi_query is true" +
                              (v ? " (line " + std::to_string(v->line()) + ")" : std::string()) + " and " + kv->key +
                              " = " + std::to_string(kv->value) +
                              " is not used without new_decoder_architecture (as transformers and vLLM run it)");
        kv = Found{1, "multi_query", v ? v->line() : 0};
    }
    if (!kv && multi_query.value_or(false) && !new_arch.value_or(false)) kv = Found{1, "multi_query", 0};
    if (!kv) kv = r.number_or_default({"num_key_value_heads"});
    if (!kv && q) {
        kv = Found{q->value, "num_attention_heads", q->line};
        // Llama-Nemotron gives its KV heads per layer in block_configs (config_layouts.cpp read_block_configs).
        if (!r.get("block_configs"))
            out.assumed.push_back("num_key_value_heads = num_attention_heads = " + std::to_string(q->value) +
                                  " (no KV head count in the file: multi-head attention)");
    }
    if (kv) a.kv_heads = kv->value, r.lines[Field::kv_heads] = kv->line, r.keys[Field::kv_heads] = kv->key;

    const auto hidden = r.required({"hidden_size", "n_embd", "d_model", "dim"});
    if (hidden) a.hidden_size = hidden->value;

    if (r.get("kv_lora_rank")) {
        MlaDims m;
        const auto rank = r.required({"kv_lora_rank"});
        const auto rope = r.required({"qk_rope_head_dim"});
        const auto nope = r.required({"qk_nope_head_dim"});
        const auto v = r.required({"v_head_dim"});
        const auto qr = r.number({"q_lora_rank"});
        if (!rank || !rope || !nope || !v) return;
        m = {rank->value, rope->value, nope->value, v->value, qr ? qr->value : 0, 0};
        // DeepSeek-V3.2 (configuration_deepseek_v32.py): the indexer's own key cache of index_head_dim
        // values; index_topk and index_n_heads change what it reads, not what it keeps.
        if (const auto idx = r.number({"index_head_dim"})) {
            m.indexer_head_dim = idx->value;
            for (const char* k : {"index_head_dim", "index_topk", "index_n_heads"}) r.layout_keys.emplace_back(k);
        }
        a.mla = m;
        a.head_dim_k = m.qk_nope_head_dim + m.qk_rope_head_dim;
        a.head_dim_v = m.v_head_dim;
        return;
    }

    if (out.model_type == "zamba2") {
        // transformers configuration_zamba2.py: the attention runs on [hidden, embedding] concatenated, so
        // attention_head_dim = 2 x hidden / heads; kv_channels (hidden / heads, Megatron's name) is not what it uses.
        // vLLM zamba2.py sizes the cache with config.attention_head_dim.
        r.layout_keys.emplace_back("kv_channels");
        // vLLM zamba2.py Zamba2Attention builds QKVParallelLinear and Attention with num_attention_heads alone: keys
        // and values have as many heads as the queries, whatever num_key_value_heads says.
        if (q && a.kv_heads != q->value) {
            out.assumed.push_back("KV heads = num_attention_heads = " + std::to_string(q->value) + ": vLLM zamba2.py " +
                                  "runs Zamba2's attention with as many KV heads as query heads, so " +
                                  r.keys[Field::kv_heads] + " = " + std::to_string(a.kv_heads) + " is not used");
            a.kv_heads = q->value;
            r.lines[Field::kv_heads] = q->line, r.keys[Field::kv_heads] = q->key;
        }
        if (auto hd = r.number({"attention_head_dim"})) {
            a.head_dim_k = a.head_dim_v = hd->value;
            r.lines[Field::head_dim] = r.lines[Field::head_dim_v] = hd->line;
        } else if (hidden && q && q->value > 0) {
            a.head_dim_k = a.head_dim_v = 2 * hidden->value / q->value;
            out.assumed.push_back("attention_head_dim = 2 x " + hidden->key + " / " + q->key + " = " +
                                  std::to_string(a.head_dim_k) + " (configuration_zamba2.py; not in the file)");
        }
        return;
    }
    // PLaMo's hidden_size_per_head is its head size (vLLM plamo2.py sets config.head_dim from it).
    if (auto hd = r.number({"head_dim", "kv_channels", "attention_head_dim", "hidden_size_per_head"})) {
        a.head_dim_k = a.head_dim_v = hd->value;
        r.lines[Field::head_dim] = r.lines[Field::head_dim_v] = hd->line;
    } else if (auto d = r.type_default("head_dim")) {
        a.head_dim_k = a.head_dim_v = *d;
        out.assumed.push_back("head_dim = " + std::to_string(*d) + " (" + out.model_type +
                              " default; not in the file)");
    } else if (hidden && q && q->value > 0) {
        if (hidden->value % q->value != 0) {
            r.error(Field::head_dim, hidden->line,
                    hidden->key + " (" + std::to_string(hidden->value) + ") is not a multiple of " + q->key + " (" +
                        std::to_string(q->value) + ") and no head_dim is given");
            return;
        }
        a.head_dim_k = a.head_dim_v = hidden->value / q->value;
    }
}

// Gemma 3n (transformers modeling_gemma3n.py Gemma3nTextModel, Gemma3nTextDecoderLayer; vLLM gemma3n.py loads them
// all on the GPU): beside its blocks, an embedding table per layer of hidden_size_per_layer_input values for each of
// vocab_size_per_layer_input tokens (embed_tokens_per_layer), the projection of the hidden state to those inputs
// and its norm, AltUp's altup_num_inputs - 1 projections in and out; in every layer AltUp's router, coefficients
// and norms, the Laurel block (two matrices of laurel_rank and a norm), the per-layer input's gate and projection
// and its norm, and the two feed-forward norms and q/k norms the estimate's two norms do not count.
void read_gemma3n_parameters(Reader& r, ImportedModel& out) {
    if (out.model_type != "gemma3n_text" && out.model_type != "gemma3n") return;
    Architecture& a = out.arch;
    const auto per_layer = r.number({"hidden_size_per_layer_input"});
    const auto per_layer_vocab = r.number({"vocab_size_per_layer_input"});
    const auto altup = r.number({"altup_num_inputs"});
    const auto laurel = r.number({"laurel_rank"});
    if (!per_layer || !per_layer_vocab || !altup || !laurel) {
        out.assumed.emplace_back(
            "Gemma 3n's per-layer embeddings, AltUp and Laurel (hidden_size_per_layer_input, "
            "vocab_size_per_layer_input, altup_num_inputs, laurel_rank) are not all in the "
            "file: the weights count its blocks alone");
        return;
    }
    const std::uint64_t H = a.hidden_size, L = a.layers, P = per_layer->value, n = altup->value;
    const Checked tables = Checked(per_layer_vocab->value) * L * P;
    const Checked model = Checked(H) * L * P + P + Checked(2) * (n > 0 ? n - 1 : 0) * H * H;
    const Checked altup_layer = Checked(H) + Checked(n) * n + Checked(n) * n * n + Checked(H) * n + H;
    const Checked laurel_layer = Checked(2) * H * laurel->value + H;
    const Checked input_layer = Checked(2) * H * P + H;
    const Checked norms_layer = Checked(2) * H + Checked(2) * a.head_dim_k;
    const Checked layers = (altup_layer + laurel_layer + input_layer + norms_layer) * L;
    if (tables.overflow() || (model + layers).overflow()) return;  // a shape validate() refuses
    a.extra_embedding_params = tables.value();
    a.extra_layer_params = (model + layers).value();
}

// ERNIE-4.5-VL's experts come in a pair, the text's and the vision's (vLLM ernie45_vl_moe.py Ernie4_5_VLMoeMoE:
// moe_num_experts[0] and [1], moe_intermediate_size[0] and [1]; transformers' configuration_ernie4_5_vl_moe.py keeps
// the pair of sizes in text_config and the text experts' count alone): the text's, which a generated token takes, and
// a not-exact reason for the vision experts' weights, left out. nullopt for other models.
std::optional<std::pair<Found, std::optional<std::uint64_t>>> ernie_vl_text_experts(Reader& r, ImportedModel& out) {
    if (!one_of(out.model_type, {"ernie4_5_moe_vl", "ernie4_5_vl_moe", "ernie4_5_vl_moe_text"})) return std::nullopt;
    const auto first_of_pair = [](const Value* v) -> std::optional<std::uint64_t> {
        if (v && v->is_array() && v->items().size() == 2) return v->items()[0].as_u64();
        return std::nullopt;
    };
    const Value* count = r.get("moe_num_experts");
    const Value* sizes = r.get("moe_intermediate_size");
    const auto experts = count && count->is_number() ? count->as_u64() : first_of_pair(count);
    if (!experts) return std::nullopt;
    out.arch.not_exact.push_back("moe_num_experts (line " + std::to_string(count->line()) +
                                 ") is ERNIE-4.5-VL's text experts, beside its vision experts (vLLM "
                                 "ernie45_vl_moe.py); the cache does not change, but the weights count the text "
                                 "experts alone");
    return std::pair{Found{*experts, "moe_num_experts", count->line()}, first_of_pair(sizes)};
}

void read_moe(Reader& r, ImportedModel& out) {
    const auto pair = ernie_vl_text_experts(r, out);
    const auto experts = pair ? std::optional<Found>(pair->first)
                              : r.number({"num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"});
    if (!experts || experts->value == 0) return;
    MoeDims m;
    m.experts = experts->value;
    const auto per_token =
        // moe_k: ERNIE 4.5 (transformers configuration_ernie4_5_moe.py maps num_experts_per_tok to it); moe_top_k:
        // Step-3.5-Flash (vLLM step3p5.py).
        r.number({"num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk", "moe_top_k",
                  "top_k_experts", "moe_k"},
                 Reader::PerLayer::largest);
    if (!per_token) {
        r.error("num_experts_per_tok", r.cfg_.line(), "the model has experts but num_experts_per_tok is missing");
        return;
    }
    m.experts_per_token = per_token->value;
    const auto size = pair && pair->second
                          ? std::optional<Found>(Found{*pair->second, "moe_intermediate_size", 0})
                          : r.number({"moe_intermediate_size", "expert_intermediate_size"}, Reader::PerLayer::largest);
    m.expert_intermediate_size = size ? size->value : out.arch.intermediate_size;
    if (const auto shared = r.number({"n_shared_experts", "num_shared_experts"})) m.shared_experts = shared->value;
    // A shared expert of its own width (Nemotron-H: moe_shared_expert_intermediate_size, configuration_nemotron_h.py;
    // Qwen2-MoE and Qwen3-Next: shared_expert_intermediate_size, one shared expert where it is above 0; Granite 4.0:
    // shared_intermediate_size, configuration_granitemoehybrid.py; Step-3.5/3.7: share_expert_dim, vLLM step3p5.py).
    if (const auto width = r.number({"moe_shared_expert_intermediate_size", "shared_expert_intermediate_size",
                                     "shared_intermediate_size", "share_expert_dim"});
        width && width->value > 0) {
        m.shared_intermediate_size = width->value;
        if (!r.number({"n_shared_experts", "num_shared_experts"})) m.shared_experts = 1;
    }
    // Nemotron 3 Super's latent experts (configuration_nemotron_h.py moe_latent_size).
    if (const auto latent = r.number({"moe_latent_size"}); latent && latent->value > 0) m.latent_size = latent->value;
    if (const auto dense = r.number({"first_k_dense_replace"})) m.dense_layers = dense->value;
    // Which layers' MLPs have experts, listed per layer: MiMo-V2's moe_layer_freq (SGLang models/mimo_v2_flash.py: 1
    // for experts, 0 dense) and GLM-5's mlp_layer_types (transformers configuration_glm_moe_dsa.py: "sparse" or
    // "dense"); the dense layers lead. (DeepSeek's moe_layer_freq is one number, a period KVScope's weights ignore.)
    for (const char* key : {"moe_layer_freq", "mlp_layer_types"}) {
        const Value* list = r.get(key);
        if (!list || !list->is_array() || list->items().empty()) continue;
        const auto has_experts = [](const Value& v) {
            return v.is_string() ? v.as_string() == "sparse" || v.as_string() == "moe" : v.as_u64().value_or(0) != 0;
        };
        const auto& items = list->items();
        if (items.size() != out.arch.layers)
            out.assumed.push_back(std::string(key) + " lists " + std::to_string(items.size()) + " layers of " +
                                  std::to_string(out.arch.layers) + "; its leading dense layers are taken as given");
        const auto first = std::find_if(items.begin(), items.end(), has_experts);
        const std::uint64_t dense = static_cast<std::uint64_t>(first - items.begin());
        if (!std::all_of(first, items.end(), has_experts))
            out.assumed.push_back(std::string(key) + " mixes dense and expert layers after layer " +
                                  std::to_string(dense) + "; the weights count experts on every later layer");
        if (m.dense_layers != 0 && m.dense_layers != dense)
            out.assumed.push_back(std::string(key) + " gives " + std::to_string(dense) +
                                  " leading dense layers where first_k_dense_replace gives " +
                                  std::to_string(m.dense_layers) + "; the list is taken");
        m.dense_layers = dense;
        break;
    }
    const bool jamba = out.model_type == "jamba";
    const auto period = r.number({"expert_layer_period"});
    if (const std::uint64_t p = period ? period->value : (jamba ? 2 : 0); p > 1) {
        // configuration_jamba.py: layer i has experts when i % expert_layer_period == expert_layer_offset
        // (defaults 2 and 1).
        const auto offset = r.number({"expert_layer_offset"});
        m.period = p, m.offset = (offset ? offset->value : (jamba ? 1 : 0)) % p;
    } else if (const auto step = r.number({"interleave_moe_layer_step"}); step && step->value > 1) {
        // configuration_llama4.py: moe_layers = range(step - 1, layers, step).
        m.period = step->value, m.offset = step->value - 1;
    }
    // transformers modeling_llama4.py: every expert layer (Llama4TextMoe) has one shared expert of intermediate_size
    // beside the routed ones, with no key saying so, and the dense layers' MLP (Llama4TextDecoderLayer) is
    // intermediate_size_mlp wide.
    if (out.model_type == "llama4" || out.model_type == "llama4_text") {
        if (!r.number({"n_shared_experts", "num_shared_experts"})) m.shared_experts = 1;
        if (const auto mlp = r.number({"intermediate_size_mlp"})) out.arch.intermediate_size = mlp->value;
    }
    out.arch.moe = m;
}

}  // namespace

Result<ImportedModel> import_config(std::string_view text, const std::string& source) {
    const auto parsed = json::parse_python_json(text);
    if (!parsed)
        return FieldError{"config.json", source + ":" + std::to_string(parsed.error.line) + ":" +
                                             std::to_string(parsed.error.column) + ": " + parsed.error.message};
    const Value& root = *parsed.value;
    if (!root.is_object()) return FieldError{"config.json", source + ":1: a config.json must be a JSON object"};

    ImportedModel out;
    const auto [text_config, text_path] = language_model(root);
    const Value& cfg = text_config ? *text_config : root;
    for (const Value* obj : {&cfg, &root}) {
        if (!out.model_type.empty()) break;
        if (const Value* t = obj->find("model_type"); t && t->is_string()) out.model_type = t->as_string();
    }
    if (out.model_type == "gemma3") out.model_type = "gemma3_text";
    if (text_config) out.notes.push_back("read the language model from " + text_path);
    // A key given twice: the last is read, as Python's json module (and so transformers) reads it; said, since the
    // first may be the one meant.
    std::vector<const Value*> objects{&root};
    if (&cfg != &root) objects.push_back(&cfg);  // text_config's own keys too
    for (const Value* obj : objects) {
        std::map<std::string_view, const Value*> first;
        for (const auto& [key, value] : obj->members()) {
            const auto [at, fresh] = first.emplace(key, &value);
            if (!fresh)
                out.notes.push_back(key + " is given twice (lines " + std::to_string(at->second->line()) + " and " +
                                    std::to_string(value.line()) + "): the last is read, as Python's json reads it");
        }
    }
    if (const Value* n = root.find("_name_or_path"); n && n->is_string() &&
                                                     n->as_string().find('/') != std::string::npos &&
                                                     n->as_string().front() != '/' && n->as_string().front() != '.')
        out.hf_repo = n->as_string();

    Reader r(root, cfg, source, out);
    Architecture& a = out.arch;
    a.name = out.hf_repo;
    // LongCat's configs may give no model_type (the hub's modeling code is named in auto_map): the class says it too.
    const bool longcat = out.model_type.starts_with("longcat_flash") || first_architecture(root).starts_with("Longcat");
    if (longcat && read_longcat_layers(r, out)) {
        // its layers are read
    } else if (const auto listed = layers_from_kinds(r, out)) {
        a.layers = listed->value, r.lines[Field::layers] = listed->line, r.keys[Field::layers] = listed->key;
    } else if (const auto layers = r.required({"num_hidden_layers", "n_layer", "num_layers", "n_layers"})) {
        a.layers = layers->value, r.lines[Field::layers] = layers->line, r.keys[Field::layers] = layers->key;
    }
    if (state_space_type(out.model_type)) {
        // modeling_mamba.py / modeling_mamba2.py: a block is a norm and the mixer, with no MLP.
        a.mlp_beside_mixer = false;
        // No attention: only the width matters (for the state and the parameter estimate).
        if (const auto hidden = r.required({"hidden_size", "d_model"})) a.hidden_size = hidden->value;
    } else {
        read_attention(r, out);
    }
    if (const auto vocab = r.number_or_default({"vocab_size", "padded_vocab_size"})) a.vocab_size = vocab->value;
    if (const auto inter = r.number_or_default({"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"},
                                               Reader::PerLayer::largest))
        a.intermediate_size = inter->value;
    else if (ungated_mlp(out.model_type) && a.hidden_size > 0)
        a.intermediate_size = 4 * a.hidden_size;  // GPT-2 / Falcon: n_inner None means 4 x hidden
    // modeling_recurrent_gemma.py RecurrentGemmaMlp: gate and up project to intermediate_size // 2.
    if (out.model_type == "recurrent_gemma") a.intermediate_size /= 2;
    if (const auto pos = r.number_or_default(
            {"max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_sequence_length"}))
        a.max_positions = pos->value;
    a.gated_mlp = !ungated_mlp(out.model_type);
    if (const auto tie = r.flag("tie_word_embeddings"))
        a.tied_embeddings = *tie;
    else if (const auto d = r.type_default("tie_word_embeddings"))
        a.tied_embeddings = *d != 0;
    if (const auto bias = r.flag("attention_bias"))
        a.attention_bias = *bias;
    else
        a.attention_bias = out.model_type == "qwen2" || out.model_type == "gpt2" || r.flag("bias").value_or(false);
    // The checkpoint's multi-token-prediction layers (DeepSeek-V3, GLM-4.5: configuration_deepseek_v3.py
    // num_nextn_predict_layers; Qwen3.5: mtp_num_hidden_layers; Qwen3-Next: 1), used when a deployment serves them.
    if (const auto mtp = r.number({"num_nextn_predict_layers", "mtp_num_hidden_layers"}))
        a.mtp_layers = mtp->value, r.lines[Field::mtp_layers] = mtp->line, r.keys[Field::mtp_layers] = mtp->key;
    else if (out.model_type == "qwen3_next")
        a.mtp_layers = 1;  // Qwen3-Next's config names none; vLLM's qwen3_next_mtp.py takes 1 (getattr default)
    else if (const auto modules = r.number({"num_mtp_modules"});
             modules && modules->value > 0 && out.model_type == "minimax_m2")
        // MiniMax-M2's MTP modules: vLLM has no MTP model for minimax_m2 (vllm/model_executor/models has no
        // minimax_m2_mtp.py), so none serves as a draft.
        out.notes.push_back("num_mtp_modules: " + format_count(modules->value) +
                            " MTP modules, which vLLM serves no draft for (no MTP model for minimax_m2 among its "
                            "models); --mtp counts none");
    // A speculative-decoding head (draft.h): its class, and an EAGLE-3 head's vocabulary and the target's width
    // (vllm/model_executor/models/llama_eagle3.py reads draft_vocab_size and target_hidden_size).
    out.architecture = first_architecture(root);
    if (const auto v = r.number({"draft_vocab_size"})) out.draft_vocab_size = v->value;
    if (const auto v = r.number({"target_hidden_size"})) out.target_hidden_size = v->value;
    read_moe(r, out);
    read_gemma3n_parameters(r, out);
    read_dtypes(root, cfg, out);
    read_layouts(r, cfg, root, out);  // config_layouts.cpp: what each layer keeps, after the model dtype
    if (!r.errors.empty()) return r.errors;
    a.gguf_arch = gguf_arch_of(out.model_type);
    // Nemotron-H with experts (Nemotron 3 Nano) is llama.cpp's nemotron_h_moe (convert_hf_to_gguf.py).
    if (a.gguf_arch == "nemotron_h" && a.moe) a.gguf_arch = "nemotron_h_moe";

    // Structural checks (kv heads dividing the query heads, …) carry the file's name too.
    Errors problems = validate(a);
    // Without query heads no head dimension is derived (model dim / heads): when the file gives none, the heads
    // are the one problem, not two keys the file does not have.
    if (a.query_heads == 0 && !r.keys.contains(Field::head_dim))
        std::erase_if(problems,
                      [](const FieldError& p) { return p.input == Field::head_dim || p.input == Field::head_dim_v; });
    // "num_hidden_layers: config.json:3: the number of layers must be at least 1": the key that gave
    // the value (what the user edits in the file), the place, and what is wrong, each once.
    for (auto& p : problems) {
        const auto line = r.lines.find(p.input);
        if (const auto key = r.keys.find(p.input); key != r.keys.end()) p.field = key->second;
        p.message = r.at(line != r.lines.end() ? line->second : cfg.line()) + p.message;
    }
    if (!problems.empty()) return problems;
    return out;
}

std::string model_name_from_path(const std::string& path) {
    // Folders of the path, innermost last; both separators, so a Windows path names its folder too.
    std::vector<std::string> parts;
    std::string part;
    for (const char c : path) {
        if (c == '/' || c == '\\') {
            if (!part.empty()) parts.push_back(part);
            part.clear();
        } else {
            part += c;
        }
    }
    if (!part.empty()) parts.push_back(part);
    // A Hugging Face hub cache keeps a repo's files under models--ORG--NAME/snapshots/REVISION/
    // (huggingface_hub file_download.py, repo_folder_name: "/" becomes "--").
    for (std::size_t i = 0; i + 2 < parts.size(); ++i) {
        const std::string& folder = parts[i];
        if (!folder.starts_with("models--") || parts[i + 1] != "snapshots") continue;
        const std::string repo = folder.substr(8);
        const auto sep = repo.find("--");
        return sep == std::string::npos ? repo : repo.substr(0, sep) + "/" + repo.substr(sep + 2);
    }
    // Otherwise the folder that holds the file (a model's own folder), or the file's name.
    if (parts.size() >= 2 && parts[parts.size() - 2] != "." && parts[parts.size() - 2] != "..")
        return parts[parts.size() - 2];
    return parts.empty() ? path : parts.back();
}

Result<ImportedModel> import_config_file(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.errors();
    auto imported = import_config(*text, path);
    if (imported && imported.value().arch.name.empty()) {
        // The absolute path, so that "config.json" given in the model's folder names that folder too.
        std::error_code error;
        const auto absolute = std::filesystem::absolute(std::filesystem::path(path), error).lexically_normal();
        imported.value().arch.name = model_name_from_path(error ? path : absolute.string());
    }
    return imported;
}

}  // namespace kvscope
