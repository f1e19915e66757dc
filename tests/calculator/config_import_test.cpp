#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/weights.h"

#include "kvscope/resources/embedded.h"

#include "testing.h"

namespace kvscope {
namespace {

Result<ImportedModel> import(const std::string& text) { return import_config(text, "config.json"); }

bool mentions(const std::vector<std::string>& list, const std::string& fragment) {
    return std::any_of(list.begin(), list.end(),
                       [&](const std::string& s) { return s.find(fragment) != std::string::npos; });
}

TEST(ConfigImport, LlamaSpelling) {
    auto m = import(R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "max_position_embeddings": 8192,
        "vocab_size": 128256, "intermediate_size": 14336, "torch_dtype": "bfloat16"})");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.layers, 32u);
    EXPECT_EQ(m->arch.query_heads, 32u);
    EXPECT_EQ(m->arch.kv_heads, 8u);
    EXPECT_EQ(m->arch.head_dim_k, 128u);
    EXPECT_EQ(m->kv_dtype, KvDtype::bf16);
    EXPECT_EQ(m->kv_dtype_source, "torch_dtype bfloat16");
    EXPECT_TRUE(m->assumed.empty());
}

TEST(ConfigImport, Gpt2Spelling) {
    auto m = import(R"({"model_type": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024,
                        "n_ctx": 1024, "vocab_size": 50257})");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.layers, 12u);
    EXPECT_EQ(m->arch.kv_heads, 12u);
    EXPECT_EQ(m->arch.head_dim_k, 64u);
    EXPECT_EQ(m->arch.max_positions, 1024u);
    EXPECT_FALSE(m->arch.gated_mlp);
    // No dtype: fp16, and the output says so.
    EXPECT_EQ(m->kv_dtype, KvDtype::fp16);
    EXPECT_NE(m->kv_dtype_source.find("no torch_dtype"), std::string::npos);
    // n_inner absent: 4 x n_embd (GPT-2's rule); given, it is kept (nemotron_h's two-matrix MLP too).
    EXPECT_EQ(m->arch.intermediate_size, 4u * 768);
    auto given = import(R"({"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 256, "n_inner": 512})");
    ASSERT_TRUE(given) << given.error_text();
    EXPECT_EQ(given->arch.intermediate_size, 512u);
    auto nemotron = import(R"({"model_type": "nemotron_h", "num_hidden_layers": 2, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 21504, "hybrid_override_pattern": "*-"})");
    ASSERT_TRUE(nemotron) << nemotron.error_text();
    EXPECT_EQ(nemotron->arch.intermediate_size, 21504u);
    EXPECT_FALSE(nemotron->arch.gated_mlp);
}

TEST(ConfigImport, KvHeadSpellings) {
    const char* base = R"("num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 1024)";
    auto kv = [&](const std::string& extra) {
        auto m = import("{" + std::string(base) + ", " + extra + "}");
        EXPECT_TRUE(m.ok()) << extra << ": " << m.error_text();
        return m.ok() ? m->arch.kv_heads : 0;
    };
    EXPECT_EQ(kv(R"("num_key_value_heads": 4)"), 4u);
    EXPECT_EQ(kv(R"("n_head_kv": 2)"), 2u);
    EXPECT_EQ(kv(R"("num_kv_heads": 8)"), 8u);
    EXPECT_EQ(kv(R"("multi_query": true)"), 1u);
    EXPECT_EQ(kv(R"("multi_query_attention": true, "multi_query_group_num": 2)"), 2u);
    EXPECT_EQ(kv(R"("multi_query": false)"), 16u);
    // Falcon-40B style: the new decoder architecture uses num_kv_heads even with multi_query.
    EXPECT_EQ(kv(R"("multi_query": true, "new_decoder_architecture": true, "num_kv_heads": 8)"), 8u);
}

TEST(ConfigImport, NoKvHeadCountMeansMultiHeadAndIsListedAsAssumed) {
    auto m = import(R"({"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 1024})");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->arch.kv_heads, 16u);
    EXPECT_TRUE(mentions(m->assumed, "num_key_value_heads = num_attention_heads"));
}

TEST(ConfigImport, ExplicitHeadDimWinsOverHiddenOverHeads) {
    auto m = import(R"({"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4,
                        "hidden_size": 3584, "head_dim": 256})");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.head_dim_k, 256u);  // 3584 / 8 would be 448
}

TEST(ConfigImport, MlaFields) {
    auto m = import(R"({"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_attention_heads": 128,
        "num_key_value_heads": 128, "hidden_size": 7168, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536})");
    ASSERT_TRUE(m.ok()) << m.error_text();
    ASSERT_TRUE(m->arch.mla.has_value());
    EXPECT_EQ(m->arch.mla->kv_lora_rank, 512u);
    EXPECT_EQ(m->arch.mla->qk_rope_head_dim, 64u);
    EXPECT_EQ(m->arch.head_dim_k, 192u);
    EXPECT_EQ(m->arch.head_dim_v, 128u);
}

TEST(ConfigImport, SlidingWindowRules) {
    // layer_types
    auto lt = import(R"({"num_hidden_layers": 3, "num_attention_heads": 4, "hidden_size": 256, "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]})");
    ASSERT_TRUE(lt.ok()) << lt.error_text();
    EXPECT_EQ(layer_windows(lt->arch), (std::vector<std::uint64_t>{128, 0, 128}));
    // sliding_window_pattern: every 3rd layer global
    auto pat = import(R"({"num_hidden_layers": 6, "num_attention_heads": 4, "hidden_size": 256, "sliding_window": 512,
        "sliding_window_pattern": 3})");
    ASSERT_TRUE(pat.ok()) << pat.error_text();
    EXPECT_EQ(layer_windows(pat->arch), (std::vector<std::uint64_t>{512, 512, 0, 512, 512, 0}));
    // Qwen2: use_sliding_window from max_window_layers on
    auto qwen = import(R"({"model_type": "qwen2", "num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 256,
        "num_key_value_heads": 2, "use_sliding_window": true, "sliding_window": 1000, "max_window_layers": 2})");
    ASSERT_TRUE(qwen.ok()) << qwen.error_text();
    EXPECT_EQ(layer_windows(qwen->arch), (std::vector<std::uint64_t>{0, 0, 1000, 1000}));
    auto qwen_off =
        import(R"({"model_type": "qwen2", "num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 256,
        "num_key_value_heads": 2, "use_sliding_window": false, "sliding_window": 1000})");
    EXPECT_FALSE(qwen_off->arch.has_sliding_layers());
    // Gemma 2 alternation
    auto g2 =
        import(R"({"model_type": "gemma2", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
        "hidden_size": 2304, "head_dim": 256, "sliding_window": 4096})");
    ASSERT_TRUE(g2.ok()) << g2.error_text();
    EXPECT_EQ(layer_windows(g2->arch), (std::vector<std::uint64_t>{4096, 0, 4096, 0}));
    // Mistral: sliding_window alone applies to every layer
    auto mistral =
        import(R"({"model_type": "mistral", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256,
        "num_key_value_heads": 2, "sliding_window": 4096})");
    EXPECT_EQ(layer_windows(mistral->arch), (std::vector<std::uint64_t>{4096, 4096}));
}

TEST(ConfigImport, NestedTextConfigOfMultimodalModelsWithDefaultsListed) {
    auto m = import(R"({"model_type": "gemma3", "torch_dtype": "bfloat16", "text_config": {
        "model_type": "gemma3_text", "num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 4,
        "hidden_size": 2560, "head_dim": 256, "sliding_window": 1024}, "vision_config": {"num_hidden_layers": 27}})");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.layers, 12u);  // not the vision tower's 27
    EXPECT_EQ(m->kv_dtype, KvDtype::bf16);
    EXPECT_EQ(m->arch.window_of(5), 0u);
    EXPECT_EQ(m->arch.window_of(4), 1024u);
    EXPECT_TRUE(mentions(m->assumed, "sliding_window_pattern = 6"));
    EXPECT_TRUE(mentions(m->assumed, "max_position_embeddings = 131072"));
    EXPECT_EQ(m->arch.max_positions, 131072u);
}

TEST(ConfigImport, MissingRequiredFieldNamesTheFieldAndTheLine) {
    auto m = import("{\n  \"num_attention_heads\": 8,\n  \"hidden_size\": 512\n}");
    EXPECT_FIELD_ERROR(m, "num_hidden_layers", "config.json:1: num_hidden_layers is missing");
}

TEST(ConfigImport, WrongTypeNamesTheFieldAndItsLine) {
    auto m = import("{\n  \"num_hidden_layers\": \"32\",\n  \"num_attention_heads\": 8,\n  \"hidden_size\": 512\n}");
    EXPECT_FIELD_ERROR(m, "num_hidden_layers", "config.json:2: num_hidden_layers must be a whole number");
    // Negative, too large, Infinity and NaN are each said as what they are, not as "a fraction".
    for (const auto& [value, said] : {std::pair{"-1", "a negative number"},
                                      {"1e30", "found 1e+30, more than 2^64"},
                                      {"Infinity", "found Infinity"},
                                      {"NaN", "found NaN"}}) {
        auto bad = import(std::string(R"({"num_attention_heads": 8, "hidden_size": 512, "num_hidden_layers": )") +
                          value + "}");
        EXPECT_FIELD_ERROR(bad, "num_hidden_layers", said);
    }
}

TEST(ConfigImport, ContradictingSpellingsAreAnError) {
    auto m = import(
        "{\n  \"n_layer\": 12,\n  \"num_hidden_layers\": 24,\n  \"num_attention_heads\": 8,\n  \"hidden_size\": "
        "512\n}");
    EXPECT_FIELD_ERROR(m, "n_layer", "contradicts num_hidden_layers (24) on line 3");
}

TEST(ConfigImport, KvHeadsThatDoNotDivideAreReportedAtTheirLine) {
    auto m = import(
        "{\n  \"num_hidden_layers\": 2,\n  \"num_attention_heads\": 32,\n  \"num_key_value_heads\": 5,\n"
        "  \"hidden_size\": 4096\n}");
    EXPECT_FIELD_ERROR(m, "num_key_value_heads", "config.json:4: KV heads (5) must divide the query heads (32)");
}

TEST(ConfigImport, MalformedJsonGivesLineAndColumn) {
    auto m = import("{\n  \"num_hidden_layers\": 32,\n  \"hidden_size\": 4096,,\n}");
    EXPECT_FIELD_ERROR(m, "config.json", "config.json:3:23:");
    auto truncated = import("{\"num_hidden_layers\": 3");
    EXPECT_FIELD_ERROR(truncated, "config.json", "unexpected end of file");
    auto not_object = import("[1, 2]");
    EXPECT_FIELD_ERROR(not_object, "config.json", "must be a JSON object");
}

TEST(ConfigImport, HiddenSizeNotAMultipleOfHeadsWithoutHeadDim) {
    auto m = import(R"({"num_hidden_layers": 2, "num_attention_heads": 7, "hidden_size": 100})");
    EXPECT_FIELD_ERROR(m, "head_dim", "not a multiple");
}

// A quantized checkpoint keeps its unquantized parts in the config's dtype and names its scheme: each method's
// spelling as published checkpoints write it, with vLLM's defaults where a key is absent.
std::optional<WeightQuant> quant_of(const std::string& quantization_config, std::vector<std::string>* notes = nullptr) {
    auto m = import(R"({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, "torch_dtype": "bfloat16",
        "quantization_config": )" +
                    quantization_config + "}");
    EXPECT_TRUE(m.ok());
    if (!m.ok()) return std::nullopt;
    EXPECT_EQ(m->weight_dtype, KvDtype::bf16);  // the embeddings, norms and head stay in the model's dtype
    EXPECT_EQ(m->kv_dtype, KvDtype::bf16);
    if (notes) *notes = m->notes;
    return m->weight_quant;
}

TEST(ConfigImport, QuantizationConfigNamesTheSchemeOfEachMethod) {
    // DeepSeek-V3 / Qwen3-FP8: fp8 with a float32 scale per 128 x 128 block.
    auto q = quant_of(R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->bits, 8u);
    EXPECT_EQ(q->group, 16384u);
    EXPECT_EQ(q->scale_bits, 32u);
    EXPECT_EQ(weight_quant_label(*q), "FP8: 8-bit float, a float32 scale per 128 x 128 block");
    // Per-tensor fp8 (AutoFP8): one scale a tensor, not counted.
    q = quant_of(R"({"quant_method": "fp8", "activation_scheme": "static"})");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->group, 0u);
    // AWQ: w_bit / q_group_size as AutoAWQ writes them; zero points even with zero_point false (vLLM's awq.py
    // allocates them whatever the flag).
    q = quant_of(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": false})");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->bits, 4u);
    EXPECT_EQ(q->group, 64u);
    EXPECT_EQ(q->zero_bits, 4u);
    // GPTQ: group_size -1 is a scale per output row; asymmetric keeps zero points; lm_head quantized when it says.
    q = quant_of(R"({"quant_method": "gptq", "bits": 8, "group_size": -1, "sym": false, "lm_head": true})");
    ASSERT_TRUE(q);
    EXPECT_TRUE(q->per_row);
    EXPECT_EQ(q->zero_bits, 8u);
    EXPECT_TRUE(q->lm_head);
    // gpt-oss: MXFP4 on the experts only, padded as vLLM's Marlin backend lays them out.
    q = quant_of(R"({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]})");
    ASSERT_TRUE(q);
    EXPECT_TRUE(q->experts_only);
    EXPECT_EQ(q->group, 32u);
    EXPECT_EQ(q->pad_hidden, 256u);
    // modelopt NVFP4, nested as hf_quant_config.json writes it.
    q = quant_of(R"({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "group_size": 16}})");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->bits, 4u);
    EXPECT_EQ(q->group, 16u);
    EXPECT_EQ(q->scale_bits, 8u);
    // compressed-tensors W4A16: int4 in groups of 128 with 16-bit scales.
    q = quant_of(R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
        "symmetric": true, "strategy": "group", "group_size": 128}}}})");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->bits, 4u);
    EXPECT_EQ(q->group, 128u);
    EXPECT_EQ(q->scale_bits, 16u);
    // bitsandbytes nf4 with double quantization: 8 + 32/256 bits of absmax per 64 weights.
    q = quant_of(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": true})");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->group, 16384u);
    EXPECT_EQ(q->scale_bits, 2080u);
}

TEST(ConfigImport, AnUnknownOrMalformedQuantizationIsSaidNotGuessed) {
    std::vector<std::string> notes;
    auto q = quant_of(R"({"quant_method": "hqq", "nbits": 3})", &notes);
    EXPECT_FALSE(q);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0], "quantization_config 'hqq' is not modelled; weights taken as the model's dtype");
    // A count that is not a whole number of the right sign is not read as the default it might have meant.
    for (const char* bits : {R"("8")", "-8", "4.9"}) {
        q = quant_of(std::string(R"({"quant_method": "gptq", "group_size": 128, "bits": )") + bits + "}", &notes);
        EXPECT_FALSE(q) << bits;
        ASSERT_EQ(notes.size(), 1u) << bits;
        EXPECT_EQ(notes[0],
                  "quantization_config 'gptq': bits is not a whole number of the right sign; weights taken "
                  "as the model's dtype");
    }
    // Out of any format's range: named, and the weights taken in the model's dtype.
    q = quant_of(R"({"quant_method": "gptq", "bits": 300})", &notes);
    EXPECT_FALSE(q);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0],
              "quantization_config 'gptq' must have 1 to 16 bits a weight, not 300; weights taken as the "
              "model's dtype");
    q = quant_of(R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 0})", &notes);
    EXPECT_FALSE(q);
}

TEST(ConfigImport, AQuantizedCheckpointWeighsWhatItsSchemeStores) {
    // Llama 3 8B's shape: 6.98 G parameters in the layers' matrices, 1.05 G in the embedding and head.
    const Architecture a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    Deployment d;
    d.weight_dtype = KvDtype::bf16;
    const std::uint64_t plain = *stored_weights_bytes(a, d);
    d.weight_quant = quant_of(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true})");
    ASSERT_TRUE(d.weight_quant);
    const ParameterCount p = parameters(a);
    // 4 bits a weight and 16 + 4 bits a group of 128, the rest 2 bytes: exactly, in whole bytes.
    const std::uint64_t quantized = p.linear, rest = p.total - p.linear;
    const std::uint64_t expected = (quantized * 4 + (quantized + 127) / 128 * 20 + 7) / 8 + rest * 2;
    EXPECT_EQ(*stored_weights_bytes(a, d), expected);
    EXPECT_LT(*stored_weights_bytes(a, d), plain * 37 / 100);
    // The step reads the same scheme: every matrix, no embedding table.
    EXPECT_LT(*read_weights_bytes(a, d), *stored_weights_bytes(a, d));
    // Choosing a plain format (--weight-dtype) drops the scheme: the plain figure again.
    d.weight_quant.reset();
    EXPECT_EQ(*stored_weights_bytes(a, d), plain);
}

TEST(ConfigImport, MtpLayersAreReadUnderBothSpellings) {
    // DeepSeek-V3 / GLM: num_nextn_predict_layers; Qwen3-Next / Qwen3.5: mtp_num_hidden_layers; Kimi K2: 0.
    const Catalog& c = Catalog::builtin();
    EXPECT_EQ(c.find_model("deepseek-v3")->model.arch.mtp_layers, 1u);
    EXPECT_EQ(c.find_model("glm-4.7")->model.arch.mtp_layers, 1u);
    EXPECT_EQ(c.find_model("qwen3.5-35b-a3b")->model.arch.mtp_layers, 1u);
    EXPECT_EQ(c.find_model("qwen3-next-80b-a3b")->model.arch.mtp_layers, 1u);  // none named: vLLM's default, 1
    EXPECT_EQ(c.find_model("kimi-k2")->model.arch.mtp_layers, 0u);
    EXPECT_EQ(c.find_model("llama-3-8b")->model.arch.mtp_layers, 0u);
    // More than any checkpoint carries is named by its key and line.
    auto m = import(R"({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256,
        "num_nextn_predict_layers": 100000})");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error_text().find("num_nextn_predict_layers: config.json:2: the number of MTP layers (100,000) is more "
                                  "than the 64 supported"),
              std::string::npos)
        << m.error_text();
}

TEST(ConfigImport, AStepReadsTheShapesMatricesAndAPublishedCountKeepsTheRest) {
    // gpt-oss-120b's published total (116.83 G) differs from its shape's: the difference falls in the matrices, the
    // embeddings, norms and routers stay as the shape counts them.
    const Architecture a = Catalog::builtin().find_model("gpt-oss-120b")->model.arch;
    Architecture shape_arch = a;
    shape_arch.params_total = shape_arch.params_active = 0;
    const ParameterCount p = parameters(a), shape = estimate_parameters(shape_arch);
    ASSERT_NE(p.total, shape.total);
    EXPECT_EQ(p.total - p.linear, shape.total - shape.linear);
    EXPECT_EQ(p.experts, shape.experts);
    // A decode step reads the 4 active experts of each layer (padded to 3,072 x 2,944, 4.25 bits a weight) and the
    // rest of the shape's matrices in bf16 — not the published active count less an embedding it does not hold.
    Deployment d;
    d.weight_dtype = KvDtype::bf16;
    d.weight_quant = quant_of(R"({"quant_method": "mxfp4"})");
    ASSERT_TRUE(d.weight_quant);
    const std::uint64_t padded = shape.experts_active / 2880 / 2880 * 3072 * 2944;
    const std::uint64_t rest = shape.active - shape.embedding - shape.experts_active;
    EXPECT_EQ(*read_weights_bytes(a, d), (padded * 4 + padded / 32 * 8) / 8 + rest * 2);
    EXPECT_GT(*read_weights_bytes(a, d), 5'000'000'000u);
}

TEST(ConfigImport, BitsandbytesDoubleQuantizationIsKeptAsEachVllmLoadsIt) {
    const Architecture a = Catalog::builtin().find_model("qwen2.5-7b")->model.arch;
    Deployment d;
    d.weight_dtype = KvDtype::bf16;
    d.weight_quant = quant_of(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
        "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true})");
    ASSERT_TRUE(d.weight_quant);
    const ParameterCount p = parameters(a);
    const std::uint64_t quantized = p.linear, rest = p.total - p.linear;
    // Today's vLLM dequantizes the nested absmax at load: a float32 per 64 weights.
    EXPECT_EQ(*stored_weights_bytes(a, d), (quantized * 4 + (quantized + 63) / 64 * 32 + 7) / 8 + rest * 2);
    // vLLM 0.7 kept it nested: 8 bits per 64 and a float32 per 256 of those.
    d.vllm.version_minor = 7;
    EXPECT_EQ(*stored_weights_bytes(a, d), (quantized * 4 + (quantized + 16383) / 16384 * 2080 + 7) / 8 + rest * 2);
}

TEST(ConfigImport, MissingFileNamesThePath) {
    auto m = import_config_file("/nonexistent/config.json");
    EXPECT_FIELD_ERROR(m, "file", "/nonexistent/config.json: cannot be opened");
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

// Every truncation of every published config is a clear error, never a crash or a model.
TEST(ConfigImport, EveryTruncatedCatalogConfigIsAnErrorWithAPosition) {
    std::size_t tried = 0;
    for (const auto& f : resources::files()) {
        if (!f.path.starts_with("models/") || f.path == "models/catalog.json") continue;
        const std::string text(f.content);
        const auto end = text.find_last_of('}');
        for (std::size_t n = 0; n < end; n += 7) {
            auto m = import_config(text.substr(0, n), std::string(f.path));
            ASSERT_FALSE(m.ok()) << f.path << " cut at " << n;
            EXPECT_NE(m.error_text().find(std::string(f.path) + ":"), std::string::npos) << m.error_text();
            ++tried;
        }
    }
    EXPECT_GT(tried, 1000u);
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

TEST(ConfigImport, AbsurdLayerCountWithSlidingWindowsIsAnErrorNotAnAllocation) {
    const auto imported = import_config(R"({"model_type": "mistral", "num_hidden_layers": 1000000000000,
        "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336,
        "vocab_size": 32000, "max_position_embeddings": 32768, "sliding_window": 4096})",
                                        "config.json");
    EXPECT_FIELD_ERROR(imported, "num_hidden_layers",
                       "config.json:1: the number of layers (1,000,000,000,000) is more than");
}

bool says(const ImportedModel& m, const std::string& fragment) { return mentions(m.arch.not_exact, fragment); }

TEST(ConfigImport, TodaysSpellingsOfExpertsAndPerLayerWidthsAreRead) {
    // ERNIE 4.5 MoE names its experts per token moe_k (transformers configuration_ernie4_5_moe.py).
    auto ernie = import(R"({"model_type": "ernie4_5_moe", "num_hidden_layers": 28, "num_attention_heads": 20,
        "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 2560, "moe_num_experts": 64, "moe_k": 6,
        "moe_intermediate_size": 1536, "intermediate_size": 12288, "moe_layer_interval": 1,
        "torch_dtype": "bfloat16"})");
    ASSERT_TRUE(ernie.ok()) << ernie.error_text();
    ASSERT_TRUE(ernie->arch.moe.has_value());
    EXPECT_EQ(ernie->arch.moe->experts_per_token, 6u);
    EXPECT_FALSE(says(*ernie, "moe_layer_interval")) << testing::join(ernie->arch.not_exact);  // an MLP matter
    // Hunyuan lists moe_topk and moe_intermediate_size per layer (vLLM hunyuan_v1.py indexes them by layer).
    auto hunyuan = import(R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 4, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "num_experts": 64, "moe_topk": [8, 8, 8, 8],
        "moe_intermediate_size": [3072, 3072, 2048, 3072], "torch_dtype": "bfloat16"})");
    ASSERT_TRUE(hunyuan.ok()) << hunyuan.error_text();
    EXPECT_EQ(hunyuan->arch.moe->experts_per_token, 8u);
    EXPECT_EQ(hunyuan->arch.moe->expert_intermediate_size, 3072u);
    EXPECT_TRUE(mentions(hunyuan->assumed, "moe_intermediate_size lists 2048 to 3072 across the layers"))
        << testing::join(hunyuan->assumed);
    // Zeros among them (a dense first layer) are said too; a list of another length than the layers is an error.
    auto dense_first = import(R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 4, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "num_experts": 64, "moe_topk": [0, 8, 8, 8]})");
    ASSERT_TRUE(dense_first.ok()) << dense_first.error_text();
    ASSERT_EQ(dense_first->assumed.size(), 1u) << testing::join(dense_first->assumed);  // once, though read twice
    EXPECT_EQ(dense_first->assumed.front(), "moe_topk lists 0 to 8 across the layers; 8 is taken for every layer");
    auto short_list = import(R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 4, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "num_experts": 64, "moe_topk": [8, 8]})");
    ASSERT_FALSE(short_list.ok());
    EXPECT_NE(short_list.error_text().find("moe_topk lists 2 values for 4 layers"), std::string::npos)
        << short_list.error_text();
    // A state's size listed per layer is an error, though intermediate_size may list an MLP's widths elsewhere:
    // Mamba's intermediate_size is its state's d_inner.
    auto mamba = import(R"({"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 768,
        "intermediate_size": [1536, 3072], "state_size": 16, "conv_kernel": 4, "vocab_size": 50280})");
    ASSERT_FALSE(mamba.ok());
    EXPECT_NE(mamba.error_text().find("intermediate_size must be a whole number, found an array"), std::string::npos)
        << mamba.error_text();
    // A cache's heads listed per layer stay an error: the largest would be a guess at the cache.
    auto heads = import(R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 32,
        "num_key_value_heads": [8, 4], "hidden_size": 4096})");
    ASSERT_FALSE(heads.ok());
    EXPECT_EQ(heads.error_text(), "config.json:2: num_key_value_heads must be a whole number, found an array");
    // ERNIE-4.5-VL pairs its text and vision experts (vLLM ernie45_vl_moe.py): read, not refused; the text experts
    // are a token's, and the weights say the vision ones are left out. 28 layers x 4 KV heads x 128, bf16.
    auto ernie_vl = import(R"({"architectures": ["Ernie4_5_VLMoeForConditionalGeneration"], "model_type":
        "ernie4_5_moe_vl", "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28,
        "num_attention_heads": 20, "num_key_value_heads": 4, "vocab_size": 103424, "moe_num_experts": [64, 64],
        "moe_intermediate_size": [1536, 512], "moe_k": 6, "torch_dtype": "bfloat16"})");
    ASSERT_TRUE(ernie_vl.ok()) << ernie_vl.error_text();
    ASSERT_TRUE(ernie_vl->arch.moe.has_value());
    EXPECT_EQ(ernie_vl->arch.moe->experts, 64u);
    EXPECT_EQ(ernie_vl->arch.moe->expert_intermediate_size, 1536u);
    const auto kv = kv_cache_report(ernie_vl->arch, KvDtype::bf16, {.context_tokens = 32768});
    ASSERT_TRUE(kv) << kv.error_text();
    EXPECT_EQ(kv->total_bytes, 28ull * 2 * 4 * 128 * 2 * 32768);  // 1,879,048,192
    ASSERT_EQ(ernie_vl->arch.not_exact.size(), 1u) << testing::join(ernie_vl->arch.not_exact);
    EXPECT_NE(ernie_vl->arch.not_exact.front().find("the weights count the text experts alone"), std::string::npos);
    // transformers' spelling (configuration_ernie4_5_vl_moe.py): text_config holds the text experts' count and the
    // pair of widths.
    auto ernie_hf = import(R"({"model_type": "ernie4_5_vl_moe", "text_config": {"model_type": "ernie4_5_vl_moe_text",
        "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28, "num_attention_heads": 20,
        "num_key_value_heads": 4, "moe_num_experts": 64, "moe_intermediate_size": [1536, 512], "moe_k": 6,
        "moe_layer_interval": 1, "torch_dtype": "bfloat16"}})");
    ASSERT_TRUE(ernie_hf.ok()) << ernie_hf.error_text();
    ASSERT_TRUE(ernie_hf->arch.moe.has_value());
    EXPECT_EQ(ernie_hf->arch.moe->experts, 64u);
    EXPECT_EQ(ernie_hf->arch.moe->expert_intermediate_size, 1536u);
    EXPECT_EQ(ernie_hf->arch.not_exact.size(), 1u) << testing::join(ernie_hf->arch.not_exact);
}

TEST(ConfigImport, AListThatDescribesTheLayersOneByOneIsNeverPassedOverInSilence) {
    // Made-up keys: one value per layer, one object per layer (as Llama-Nemotron's block_configs, whose attention
    // may be no_op on a layer), and one object per block of another count. Each is named with its line.
    const std::string base = R"("model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 8, "hidden_size": 512, "torch_dtype": "bfloat16")";
    const struct {
        const char* key;
        const char* value;
        const char* said;
    } lists[] = {
        {"made_up_window_per_layer", "[512, 0, 512, 0]", "(4 entries)"},
        {"made_up_blocks", R"([{"attention": {"no_op": true}}, {"attention": {"no_op": false}}, {}, {}])",
         "(4 objects)"},
        {"made_up_stages", R"([{"layers": 2}, {"layers": 2}])", "(2 objects)"},
    };
    for (const auto& l : lists) {
        auto m = import("{" + base + ",\n\"" + l.key + "\": " + l.value + "}");
        ASSERT_TRUE(m.ok()) << l.key << ": " << m.error_text();
        EXPECT_TRUE(says(*m, std::string(l.key) + " (line 3) describes the layers one by one " + l.said +
                                 " and KVScope does not read it"))
            << testing::join(m->arch.not_exact);
    }
    // Lists of another length are no description of the layers (token ids, a name list); lists a rule reads are
    // read (Hunyuan's moe_topk per layer): neither is named.
    auto other = import("{" + base + R"(, "eos_token_id": [1, 2, 3], "architectures": ["LlamaForCausalLM"],
        "suppress_tokens": [1, 2, 3, 4]})");  // token ids, even four of them for four layers
    ASSERT_TRUE(other.ok()) << other.error_text();
    EXPECT_TRUE(other->arch.not_exact.empty()) << testing::join(other->arch.not_exact);
    auto read = import(R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 4, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "num_experts": 64, "moe_topk": [8, 8, 8, 8],
        "moe_intermediate_size": [3072, 3072, 2048, 3072], "torch_dtype": "bfloat16"})");
    ASSERT_TRUE(read.ok()) << read.error_text();
    EXPECT_TRUE(read->arch.not_exact.empty()) << testing::join(read->arch.not_exact);
}

// Llama-Nemotron's block_configs, as vLLM nemotron_nas.py builds it: attention only where attention.no_op is false,
// num_attention_heads // n_heads_in_group KV heads each; FFN widths int(2 x ffn_mult x hidden / 3) rounded up to 256.
std::string nemotron_nas(const std::string& first_group = "8", std::size_t blocks = 8) {
    const auto att = [](const std::string& g) {
        return R"({"no_op": false, "replace_with_linear": false, "n_heads_in_group": )" + g +
               R"(, "window_length": null})";
    };
    const std::string noop = R"({"no_op": true, "replace_with_linear": false, "n_heads_in_group": null})";
    const auto ffn = [](const char* m) { return std::string(R"({"no_op": false, "ffn_mult": )") + m + "}"; };
    const std::string list[] = {
        R"({"attention": )" + att(first_group) + R"(, "ffn": )" + ffn("5.25") + "}",    // 28,672
        R"({"attention": )" + att("8") + R"(, "ffn": )" + ffn("5.25") + "}",            // 28,672
        R"({"attention": )" + noop + R"(, "ffn": )" + ffn("1.3125") + "}",              // 7,168
        R"({"attention": )" + att("16") + R"(, "ffn": )" + ffn("0.5") + "}",            // 2,730 -> 2,816
        R"({"attention": )" + noop + R"(, "ffn": )" + ffn("1.0") + "}",                 // 5,461 -> 5,632
        R"({"attention": )" + att("8") + R"(, "ffn": )" + ffn("2.625") + "}",           // 14,336
        R"({"attention": )" + noop + R"(, "ffn": {"no_op": true, "ffn_mult": null}})",  // 0
        R"({"attention": )" + att("8") + R"(, "ffn": )" + ffn("5.25") + "}",            // 28,672
    };
    std::string joined;
    for (std::size_t i = 0; i < blocks; ++i) joined += (i ? ",\n" : "") + list[i];
    return R"({"architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas", "num_hidden_layers": 8,
        "num_attention_heads": 64, "num_key_value_heads": null, "intermediate_size": null, "hidden_size": 8192,
        "torch_dtype": "bfloat16", "vocab_size": 128256, "max_position_embeddings": 131072,
        "block_configs": [)" +
           joined + "]}";
}

TEST(ConfigImport, LlamaNemotronsBlocksGiveEachLayerItsAttentionAndHeads) {
    auto m = import(nemotron_nas());
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.attention_layers(), 5u);
    EXPECT_EQ(m->arch.kv_heads, 8u);           // the first attending block's: 64 / 8
    EXPECT_EQ(m->arch.layer(3).kv_heads, 4u);  // 64 / 16
    EXPECT_EQ(m->arch.layer(2).kind, LayerKind::none);
    EXPECT_EQ(m->arch.head_dim_k, 128u);  // 8192 / 64
    // 2 (K and V) x 128 x 2 bytes x (4 layers x 8 heads + 1 layer x 4 heads) = 18,432 bytes per token, where the file
    // read as MHA on every layer gave 2 x 128 x 2 x 8 x 64 = 262,144 (14 times too many).
    auto r = kv_cache_report(m->arch, m->kv_dtype, {.context_tokens = 8192, .batch = 1}, {});
    ASSERT_TRUE(r) << r.error_text();
    EXPECT_EQ(r->bytes_per_token, 18'432u);
    EXPECT_EQ(r->total_bytes, 18'432ull * 8192);
    // The FFN widths 28,672 x 3 + 7,168 + 2,816 + 5,632 + 14,336 + 0 = 115,968 over 8 layers: 14,496 each.
    EXPECT_EQ(m->arch.intermediate_size, 14'496u);
    EXPECT_TRUE(mentions(m->assumed, "block_configs gives FFN widths of 0 to 28,672")) << testing::join(m->assumed);
    EXPECT_FALSE(mentions(m->assumed, "multi-head attention")) << testing::join(m->assumed);
    EXPECT_TRUE(m->arch.not_exact.empty()) << testing::join(m->arch.not_exact);
    // A group that does not divide the heads, and a list of another length: errors naming the entry.
    EXPECT_FIELD_ERROR(import(nemotron_nas("3")), "block_configs",
                       "block_configs[0].attention.n_heads_in_group must be a whole number above 0 that divides "
                       "num_attention_heads (64), found 3");
    EXPECT_FIELD_ERROR(import(nemotron_nas("8", 7)), "block_configs",
                       "block_configs must list one object per layer (8), found 7 entries");
}

TEST(ConfigImport, ZambaTwosAttentionRunsAtTwiceTheHiddenWidth) {
    // transformers configuration_zamba2.py: attention_head_dim = 2 x hidden / heads (the attention reads the hidden
    // state and the embedding side by side); kv_channels = hidden / heads is Megatron's name, not what it uses. vLLM
    // zamba2.py caches attention_head_dim on each "hybrid" layer, and the Mamba-2 state on every layer.
    const std::string body = R"("model_type": "zamba2", "hidden_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 4, "kv_channels": 64, "num_hidden_layers": 4, "torch_dtype": "bfloat16",
        "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"], "mamba_expand": 2, "mamba_ngroups": 1,
        "n_mamba_heads": 8, "mamba_headdim": 64, "mamba_d_state": 64, "mamba_d_conv": 4)";
    for (const std::string& dim : {std::string(R"("attention_head_dim": 128, )"), std::string()}) {
        auto m = import("{" + dim + body + "}");
        ASSERT_TRUE(m.ok()) << m.error_text();
        EXPECT_EQ(m->arch.head_dim_k, 128u) << dim;  // 2 x 256 / 4, given or derived
        EXPECT_EQ(m->arch.attention_layers(), 2u);
        ASSERT_TRUE(m->arch.recurrent.has_value());
        EXPECT_EQ(m->arch.state_layers(), 4u);
        EXPECT_TRUE(m->arch.not_exact.empty()) << testing::join(m->arch.not_exact);
        // 2 hybrid layers x 2 (K and V) x 4 KV heads x 128 x 2 bytes = 4,096 bytes per token.
        auto r = kv_cache_report(m->arch, m->kv_dtype, {.context_tokens = 1000, .batch = 1}, {});
        ASSERT_TRUE(r) << r.error_text();
        EXPECT_EQ(r->bytes_per_token, 4'096u);
        // Mamba-2 (vllm mamba_utils.py): conv (4 - 1) x (2 x 256 + 2 x 1 x 64) and SSM 8 x 64 x 64 per layer.
        EXPECT_EQ(m->arch.recurrent->conv_channels, 512u);
        EXPECT_EQ(m->arch.recurrent->heads * m->arch.recurrent->head_dim * m->arch.recurrent->state_size, 32'768u);
    }
    // vLLM zamba2.py gives keys and values num_attention_heads heads: a num_key_value_heads of 2 is not used, said.
    std::string gqa = body;
    gqa.replace(gqa.find(R"("num_key_value_heads": 4)"), 24, R"("num_key_value_heads": 2)");
    auto m = import("{" + gqa + "}");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.kv_heads, 4u);
    EXPECT_TRUE(mentions(m->assumed, "num_key_value_heads = 2 is not used")) << testing::join(m->assumed);
}

TEST(ConfigImport, ALayerCountGivenOnlyByTheListOfLayerKindsIsItsLength) {
    // Newer nemotron_h configs drop num_hidden_layers; transformers configuration_nemotron_h.py derives it from
    // layers_block_type (and drops a num_hidden_layers given beside it).
    const std::string body = R"("model_type": "nemotron_h", "num_attention_heads": 32, "num_key_value_heads": 2,
        "head_dim": 128, "hidden_size": 2688, "torch_dtype": "bfloat16",
        "layers_block_type": ["mamba", "moe", "attention", "moe", "mamba", "moe", "attention", "mlp"])";
    auto m = import("{" + body + "}");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.layers, 8u);
    EXPECT_EQ(m->arch.attention_layers(), 2u);
    // 2 attention layers x 2 (K and V) x 2 KV heads x 128 x 2 bytes = 2,048 bytes per token.
    auto r = kv_cache_report(m->arch, m->kv_dtype, {.context_tokens = 1000, .batch = 1}, {});
    ASSERT_TRUE(r) << r.error_text();
    EXPECT_EQ(r->bytes_per_token, 2'048u);
    EXPECT_EQ(r->total_bytes, 2'048'000u);
    EXPECT_TRUE(mentions(m->notes, "the layer count is the 8 entries of layers_block_type")) << testing::join(m->notes);
    auto both = import(R"({"num_hidden_layers": 52, )" + body + "}");
    ASSERT_TRUE(both.ok()) << both.error_text();
    EXPECT_EQ(both->arch.layers, 8u);
    EXPECT_TRUE(mentions(both->notes, "num_hidden_layers (52) is not read")) << testing::join(both->notes);
    // Another model type with a list and no count: the list gives it too, as the only count in the file.
    auto qwen = import(R"({"model_type": "qwen3_next", "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 64, "hidden_size": 512, "layer_types": ["linear_attention", "full_attention"]})");
    ASSERT_TRUE(qwen.ok()) << qwen.error_text();
    EXPECT_EQ(qwen->arch.layers, 2u);
    // Neither a count nor a list: the message names the field, as before.
    auto none = import(R"({"model_type": "nemotron_h", "num_attention_heads": 32, "hidden_size": 2688,
        "hybrid_override_pattern": "M*"})");
    EXPECT_FALSE(none.ok());
}

TEST(ConfigImport, ZeroHeadsIsOneProblemNotThreeKeysTheFileDoesNotHave) {
    auto zero = import(R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 0,
        "num_key_value_heads": 8, "hidden_size": 4096})");
    ASSERT_FALSE(zero.ok());
    ASSERT_EQ(zero.errors().size(), 1u) << zero.error_text();
    EXPECT_EQ(zero.errors().front().field, "num_attention_heads");
    EXPECT_NE(zero.error_text().find("the number of query heads must be at least 1"), std::string::npos);
    // A head dimension the file gives as 0 beside heads is still its own problem.
    auto dim = import(R"({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "head_dim": 0})");
    EXPECT_FALSE(dim.ok());
}

TEST(ConfigImport, KeysThatChangeNoCacheRaiseNoNotExactAndSharedLayersDo) {
    // Gemma 3 as transformers saves it: layer_types and the period they came from (_sliding_window_pattern).
    auto gemma = import(R"({"model_type": "gemma3_text", "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": 256, "hidden_size": 640, "sliding_window": 512,
        "layer_types": ["sliding_attention", "full_attention"], "_sliding_window_pattern": 6})");
    ASSERT_TRUE(gemma.ok()) << gemma.error_text();
    EXPECT_TRUE(gemma->arch.not_exact.empty()) << testing::join(gemma->arch.not_exact);
    // SmolLM3's NoPE layers still cache their keys and values.
    auto smol = import(R"({"model_type": "smollm3", "num_hidden_layers": 4, "num_attention_heads": 16,
        "num_key_value_heads": 4, "hidden_size": 2048, "no_rope_layer_interval": 4,
        "no_rope_layers": [1, 1, 1, 0]})");
    ASSERT_TRUE(smol.ok()) << smol.error_text();
    EXPECT_TRUE(smol->arch.not_exact.empty()) << testing::join(smol->arch.not_exact);
    // Granite 4.0 Micro: granitemoehybrid with every layer attention; its mamba_* sizes describe no layer.
    auto micro = import(R"({"model_type": "granitemoehybrid", "num_hidden_layers": 2, "num_attention_heads": 40,
        "num_key_value_heads": 8, "hidden_size": 2560, "layer_types": ["attention", "attention"],
        "mamba_chunk_size": 256, "mamba_d_state": 256, "mamba_n_heads": 128, "mamba_d_head": 40})");
    ASSERT_TRUE(micro.ok()) << micro.error_text();
    EXPECT_TRUE(micro->arch.not_exact.empty()) << testing::join(micro->arch.not_exact);
    // A kind KVScope does not know may keep a state: its mamba_* sizes are still said.
    auto unknown = import(R"({"model_type": "foo_hybrid", "num_hidden_layers": 2, "num_attention_heads": 40,
        "num_key_value_heads": 8, "hidden_size": 2560, "layer_types": ["attention", "weird_recurrent"],
        "mamba_d_state": 256})");
    ASSERT_TRUE(unknown.ok()) << unknown.error_text();
    EXPECT_TRUE(says(*unknown, "'weird_recurrent'")) << testing::join(unknown->arch.not_exact);
    EXPECT_TRUE(says(*unknown, "mamba_d_state (line 3) sizes a recurrent state"))
        << testing::join(unknown->arch.not_exact);
    // The same key on another model type is still said: which layers it changes is not known there.
    auto other = import(R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "moe_layer_interval": 2})");
    ASSERT_TRUE(other.ok()) << other.error_text();
    EXPECT_TRUE(says(*other, "moe_layer_interval")) << testing::join(other->arch.not_exact);
    // Hunyuan's cross-layer attention stores fewer layers' caches: said as not exact, never silently doubled.
    auto cla = import(R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 64, "num_attention_heads": 80,
        "num_key_value_heads": 8, "hidden_size": 6400, "head_dim": 128, "use_cla": true, "cla_share_factor": 2})");
    ASSERT_TRUE(cla.ok()) << cla.error_text();
    EXPECT_TRUE(says(*cla, "use_cla (line 2): each group of 2 layers shares the first one's keys and values"))
        << testing::join(cla->arch.not_exact);
    auto no_cla = import(R"({"model_type": "hunyuan_v1_moe", "num_hidden_layers": 64, "num_attention_heads": 80,
        "num_key_value_heads": 8, "hidden_size": 6400, "head_dim": 128, "use_cla": false, "cla_share_factor": 2})");
    ASSERT_TRUE(no_cla.ok()) << no_cla.error_text();
    EXPECT_FALSE(says(*no_cla, "use_cla")) << testing::join(no_cla->arch.not_exact);
}

}  // namespace
}  // namespace kvscope
