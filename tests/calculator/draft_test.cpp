// A separate draft model for speculative decoding: what vLLM loads for it, and its layers' KV in the same cache.
#include <algorithm>
#include <cmath>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/draft.h"
#include "kvscope/calculator/draft_import.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/vllm_pages.h"
#include "testing.h"

namespace kvscope {
namespace {

// The EAGLE-3 head published for Llama 3.1 8B Instruct (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, config.json):
// one Llama decoder layer, its own LM head over 32,000 draft tokens.
constexpr std::string_view kEagle3Llama31_8b = R"({
  "architectures": ["LlamaForCausalLMEagle3"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "draft_vocab_size": 32000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 2048,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 1,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "vocab_size": 128256
})";

DraftModel eagle3_head() {
    auto imported = import_config(kEagle3Llama31_8b, "eagle3.json");
    EXPECT_TRUE(imported.ok()) << imported.error_text();
    return draft_from_model(*imported, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", std::nullopt);
}

Deployment on_h100s(std::uint64_t n) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = n;
    return d;
}

bool has_note(const FitReport& f, const std::string& fragment) {
    return std::any_of(f.notes.begin(), f.notes.end(),
                       [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

TEST(Draft, TheMethodIsReadFromTheConfigsClassOrGiven) {
    EXPECT_EQ(eagle3_head().method, DraftMethod::eagle3);
    EXPECT_EQ(eagle3_head().draft_vocab, 32000u);
    ImportedModel eagle;
    eagle.architecture = "EagleLlamaForCausalLM";
    EXPECT_EQ(draft_from_model(eagle, "e", std::nullopt).method, DraftMethod::eagle);
    ImportedModel plain;
    plain.architecture = "LlamaForCausalLM";
    EXPECT_EQ(draft_from_model(plain, "p", std::nullopt).method, DraftMethod::draft_model);
    // EAGLE-1 heads often name the plain class: the method given wins.
    EXPECT_EQ(draft_from_model(plain, "p", DraftMethod::eagle).method, DraftMethod::eagle);
    EXPECT_EQ(parse_draft_method("EAGLE3"), DraftMethod::eagle3);
    EXPECT_EQ(parse_draft_method("draft-model"), DraftMethod::draft_model);
    EXPECT_FALSE(parse_draft_method("medusa"));
}

TEST(Draft, AnEagle3HeadWeighsItsLayerFcAndOwnLmHeadNotTheSharedEmbedding) {
    const DraftParameters p = draft_parameters(eagle3_head());
    // One decoder layer: q, o 4,096 x 4,096, k, v 4,096 x 1,024; the MLP 3 x 4,096 x 14,336; two norms; the final
    // norm. Then EAGLE-3's own: the first layer's qkv_proj reads 2 x 4,096 (4,096 x 6,144 more) and a hidden norm,
    // fc 3 x 4,096 -> 4,096, the LM head 32,000 x 4,096. The 128,256 x 4,096 embedding is the model's.
    const std::uint64_t layer = 4096ull * (4096 + 2048 + 4096) + 3ull * 4096 * 14336 + 2 * 4096;
    const std::uint64_t own = 4096ull * 6144 + 4096 + 3ull * 4096 * 4096 + 32000ull * 4096;
    EXPECT_EQ(p.own, layer + 4096 + own);
    EXPECT_EQ(p.own, 424'689'664u);               // 0.85 GB in bf16, as the published head's file
    EXPECT_EQ(p.replicated, 3ull * 4096 * 4096);  // fc, whole on every GPU
    // An EAGLE (1) head shares the LM head too, its first layer has no input norm and the head no final norm, and
    // its fc reads 2 x 4,096.
    DraftModel e = eagle3_head();
    e.method = DraftMethod::eagle;
    EXPECT_EQ(draft_parameters(e).own, layer - 4096 + 2ull * 4096 * 4096);
    EXPECT_EQ(draft_parameters(e).replicated, 2ull * 4096 * 4096);
    // A draft model is all of itself.
    const CatalogModel* small = Catalog::builtin().find_model("llama-3.2-1b");
    ASSERT_NE(small, nullptr);
    const DraftModel dm = draft_from_model(small->model, small->id, std::nullopt);
    EXPECT_EQ(dm.method, DraftMethod::draft_model);
    EXPECT_EQ(draft_parameters(dm).own, 1'235'814'400u);
    EXPECT_FALSE(draft_parameters(dm).estimated);
}

TEST(Draft, AnEagleLayerSharesTheCacheAsVllmsPublishedLogCountsIt) {
    // vLLM's log for Llama 3.1 8B with an EAGLE head on an H100 (issue 20's table): "Available KV cache memory:
    // 51.63 GiB", "GPU KV cache size: 410,128 tokens". The head's layer caches in the same blocks: a token costs
    // 33 layers x 8 heads x 128 x 2 (K, V) x 2 bytes = 135,168 bytes, not the model's own 131,072.
    const Architecture llama = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const auto both = with_draft_layers(llama, eagle3_head());
    ASSERT_TRUE(both.ok()) << both.error_text();
    EXPECT_EQ(both->layers, 33u);
    const Workload w{.context_tokens = 8192, .batch = 1, .block_size = 16};
    const auto with = KvLayout::make(*both, KvDtype::bf16, w, {});
    const auto without = KvLayout::make(llama, KvDtype::bf16, w, {});
    ASSERT_TRUE(with.ok() && without.ok());
    EXPECT_EQ(with->bytes_per_token_all_gpus().value(), 135'168u);
    EXPECT_EQ(without->bytes_per_token_all_gpus().value(), 131'072u);
    // The logged memory is rounded to 0.01 GiB: the token count lies within it only at 33 layers a token.
    const auto tokens_at = [](double gib, std::uint64_t per_token) {
        return static_cast<std::uint64_t>(gib * 1073741824.0 / static_cast<double>(per_token));
    };
    EXPECT_LE(tokens_at(51.625, 135'168), 410'128u);
    EXPECT_GE(tokens_at(51.635, 135'168), 410'128u);
    EXPECT_GT(tokens_at(51.625, 131'072), 410'128u + 10'000);
}

TEST(Draft, ADraftModelsWeightsAndKvCountInTheFit) {
    // Llama 3 70B on four H100s with Llama 3.2 1B as its draft (vLLM --speculative-config model=…, draft_model).
    const Architecture target = Catalog::builtin().find_model("llama-3-70b")->model.arch;
    const CatalogModel* small = Catalog::builtin().find_model("llama-3.2-1b");
    const Workload w{.context_tokens = 32768, .batch = 8, .block_size = 16};
    Deployment d = on_h100s(4);
    d.fixed_reserve = true;  // the same fixed reserve both ways: the difference is the draft's
    const auto alone = fit(target, KvDtype::bf16, w, {.tp = 4}, d);
    ASSERT_TRUE(alone.ok()) << alone.error_text();
    d.draft = draft_from_model(small->model, small->id, std::nullopt);
    const auto with = fit(target, KvDtype::bf16, w, {.tp = 4}, d);
    ASSERT_TRUE(with.ok()) << with.error_text();
    // 1,235,814,400 parameters in bf16 more, split over the four GPUs.
    EXPECT_EQ(with->draft_parameters, 1'235'814'400u);
    EXPECT_EQ(with->draft_weights_bytes, 2 * 1'235'814'400ull);
    EXPECT_EQ(with->weights_bytes - alone->weights_bytes, 2 * 1'235'814'400ull);
    // Its 16 layers of 8 KV heads x 64 x 2 x 2 bytes: 32,768 bytes a token more, two heads a GPU.
    EXPECT_EQ(with->draft_kv_bytes_per_token, 32'768u);
    EXPECT_EQ(with->kv_bytes_per_gpu - alone->kv_bytes_per_gpu, 32'768ull / 4 * 32768 * 8);
    EXPECT_LT(with->max_batch, alone->max_batch);
    EXPECT_TRUE(has_note(*with, "speculative decoding with the draft llama-3.2-1b"));
    EXPECT_FALSE(has_note(*with, "vocabulary"));  // both 128,256 tokens
    // The decode estimate is the model's own step: the same bytes read, the same crossing of KV and weights.
    Deployment without = d;
    without.draft.reset();
    const auto step = decode_estimate(target, KvDtype::bf16, w, {.tp = 4}, d, *with);
    const auto own = decode_estimate(target, KvDtype::bf16, w, {.tp = 4}, without, *alone);
    ASSERT_TRUE(step.ok() && own.ok());
    EXPECT_EQ(step->bytes_read_per_step_per_gpu, own->bytes_read_per_step_per_gpu);
    EXPECT_EQ(step->kv_exceeds_weights_at_tokens, own->kv_exceeds_weights_at_tokens);
    // SGLang keeps 6 GiB more back for a separate draft model (its STANDALONE algorithm), 2 GiB for an EAGLE head as
    // for the MTP layers (server_args.py _handle_gpu_memory_settings).
    Deployment s = d;
    s.engine = Engine::sglang;
    Deployment s_alone = s;
    s_alone.draft.reset();
    const SglangDefault alone_default = sglang_default_fraction(s_alone, {.tp = 4});
    const SglangDefault standalone = sglang_default_fraction(s, {.tp = 4});
    EXPECT_EQ(standalone.reserved_mib - alone_default.reserved_mib, 6144u);
    EXPECT_EQ(standalone.draft_mib, 6144u);
    Deployment eagle = s;
    eagle.draft->method = DraftMethod::eagle;
    EXPECT_EQ(sglang_default_fraction(eagle, {.tp = 4}).reserved_mib - alone_default.reserved_mib, 2048u);
}

TEST(Draft, AnEagleHeadsFcIsWholeOnEveryGpu) {
    // Llama 3 8B at TP 2 with the EAGLE-3 head: the head's layer and LM head split over the GPUs, its fc
    // (ReplicatedLinear, 3 x 4,096 x 4,096 in bf16) whole on each.
    const Architecture llama = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const Workload w{.context_tokens = 8192, .batch = 1, .block_size = 16};
    Deployment d = on_h100s(2);
    d.fixed_reserve = true;
    const auto alone = fit(llama, KvDtype::bf16, w, {.tp = 2}, d);
    d.draft = eagle3_head();
    const auto with = fit(llama, KvDtype::bf16, w, {.tp = 2}, d);
    ASSERT_TRUE(alone.ok() && with.ok()) << with.error_text();
    const std::uint64_t fc = 2ull * 3 * 4096 * 4096, rest = 2ull * 424'689'664 - fc;
    EXPECT_EQ(with->weights_bytes_per_gpu, (alone->weights_bytes + rest) / 2 + fc);
    EXPECT_EQ(with->draft_weights_bytes_per_gpu, with->weights_bytes_per_gpu - alone->weights_bytes_per_gpu);
    EXPECT_EQ(with->weights_bytes, alone->weights_bytes + rest + 2 * fc);  // both GPUs' copies
    // vLLM drafts without pipeline parallelism: named, not modelled.
    EXPECT_FIELD_ERROR(fit(llama, KvDtype::bf16, w, {.tp = 1, .pp = 2}, d), "draft", "pipeline parallelism");
}

TEST(Draft, AHybridModelsMtpDraftKeepsAStatePagePerDraftedToken) {
    // Qwen3-Next with its MTP layer on vLLM: each sequence keeps one more state page per layer group for the drafted
    // token (MambaSpec num_speculative_blocks = num_speculative_tokens, 1 by default for one MTP layer).
    const Architecture a = Catalog::builtin().find_model("qwen3-next-80b-a3b")->model.arch;
    ASSERT_EQ(a.mtp_layers, 1u);
    const Workload w{.context_tokens = 32768, .batch = 4, .block_size = 16};
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h200");
    d.gpu_count = 4;
    d.mtp = true;
    const auto f = fit(a, KvDtype::bf16, w, {.tp = 4}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    ASSERT_TRUE(f->engine_pages.has_value());
    const HybridPages& pages = *f->engine_pages;
    EXPECT_EQ(pages.speculative_blocks, 1u);
    HybridPages without = pages;
    without.speculative_blocks = 0;
    const HybridPages::Stage& st = pages.stages.front();
    EXPECT_EQ(pages.bytes_per_sequence(32768).value() - without.bytes_per_sequence(32768).value(),
              st.group_size * pages.page_bytes * st.state_groups);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, pages.bytes_per_sequence(32768).value() * 4);
    EXPECT_TRUE(has_note(*f, "one per drafted token"));
    EXPECT_FALSE(has_note(*f, "not exact: vLLM keeps one more recurrent-state page"));
}

TEST(Draft, ADraftBesideAHybridModelsStateIsNotExact) {
    // A separate draft on a model with a recurrent state: vLLM keeps a state page per drafted token, and a draft's
    // num_speculative_tokens has no default to count them by; the fit says so.
    const Catalog& c = Catalog::builtin();
    const Architecture a = c.find_model("qwen3-next-80b-a3b")->model.arch;
    Deployment d;
    d.gpu = *c.find_gpu("h200");
    d.gpu_count = 4;
    const CatalogModel* small = c.find_model("qwen3-8b");
    d.draft = draft_from_model(small->model, small->id, std::nullopt);
    const auto f = fit(a, KvDtype::bf16, {.context_tokens = 32768, .batch = 4, .block_size = 16}, {.tp = 4}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_TRUE(has_note(*f, "not exact: with a draft model vLLM keeps one more recurrent-state page"));
    // A model without a state has no such pages to count.
    const auto plain =
        fit(c.find_model("llama-3-70b")->model.arch, KvDtype::bf16, {.context_tokens = 8192}, {.tp = 4}, d);
    ASSERT_TRUE(plain.ok()) << plain.error_text();
    EXPECT_FALSE(has_note(*plain, "recurrent-state page"));
}

TEST(Draft, AStateSpaceModelsDraftBringsTheOnlyKvCache) {
    // Mamba-Codestral (no attention, no heads in its config) with Llama 3.2 1B as its draft. The model's missing heads
    // were once checked against the draft's attention layers: "query_heads: the number of query heads must be at
    // least 1". The draft's 16 layers carry their own heads; their cache is the fit's only KV.
    const Catalog& c = Catalog::builtin();
    const Architecture mamba = c.find_model("mamba-codestral-7b")->model.arch;
    ASSERT_EQ(mamba.attention_layers(), 0u);
    const CatalogModel* small = c.find_model("llama-3.2-1b");
    Deployment d = on_h100s(1);
    d.draft = draft_from_model(small->model, small->id, std::nullopt);
    const Workload w{.context_tokens = 32768, .batch = 4, .block_size = 16};
    const auto f = fit(mamba, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->draft_kv_bytes_per_token, 32'768u);
    EXPECT_EQ(f->kv_bytes_per_gpu, 32'768ull * 32768 * 4);  // all of it the draft's
    EXPECT_GT(f->state_bytes_per_gpu, 0u);
    // The draft's cache grows with the context: a finite max context, and tokens the budget holds.
    EXPECT_FALSE(f->max_context_unbounded);
    EXPECT_GT(f->max_context, 32768u);
    EXPECT_GT(f->tokens_capacity, 0u);
    // A draft whose layers all keep a window (Mistral 7B v0.1's 4,096) leaves the memory flat past it: no limit,
    // for the draft's reason, not "no layer keeps a KV cache".
    Deployment windowed = on_h100s(1);
    const CatalogModel* mistral = c.find_model("mistral-7b-v0.1");
    ASSERT_NE(mistral, nullptr);
    windowed.draft = draft_from_model(mistral->model, mistral->id, std::nullopt);
    const auto flat = fit(mamba, KvDtype::bf16, w, {}, windowed);
    ASSERT_TRUE(flat.ok()) << flat.error_text();
    EXPECT_TRUE(flat->max_context_unbounded);
    EXPECT_EQ(flat->unbounded_reason,
              "every attention layer keeps only its window, so a longer context does not change the memory");
    // The model's own problems are still its own: zero layers is an error of the model, not of the draft.
    Architecture none = mamba;
    none.layers = 0;
    none.layer_specs.clear();
    const auto bad = fit(none, KvDtype::bf16, w, {}, d);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.errors().front().input, Field::layers) << bad.error_text();
}

TEST(Draft, WhatNoEngineRunsIsAnErrorNamingTheDraft) {
    const Architecture llama = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const Workload w{.context_tokens = 8192, .batch = 1, .block_size = 16};
    Deployment d = on_h100s(1);
    d.draft = eagle3_head();
    // One speculative method at a time.
    d.mtp = true;
    EXPECT_FIELD_ERROR(fit(llama, KvDtype::bf16, w, {}, d), "draft", "one speculative method");
    d.mtp = false;
    // An MLA model's latent cache and a plain draft's keys and values are not one cache.
    const Architecture deepseek = Catalog::builtin().find_model("deepseek-v3")->model.arch;
    Deployment on8 = on_h100s(8);
    on8.draft = eagle3_head();
    EXPECT_FIELD_ERROR(fit(deepseek, KvDtype::bf16, w, {.tp = 8}, on8), "draft", "one cache of both layouts");
    // A draft with recurrent layers, or a broken one, is named.
    d.draft->arch = Catalog::builtin().find_model("jamba-v0.1")->model.arch;
    EXPECT_FIELD_ERROR(fit(llama, KvDtype::bf16, w, {}, d), "draft", "recurrent layers");
    d.draft = eagle3_head();
    d.draft->arch.kv_heads = 5;  // does not divide 32 query heads
    EXPECT_FIELD_ERROR(fit(llama, KvDtype::bf16, w, {}, d), "draft", "kv_heads");
    d.draft = eagle3_head();
    d.draft->draft_vocab = 1ull << 40;
    EXPECT_FIELD_ERROR(fit(llama, KvDtype::bf16, w, {}, d), "draft", "draft_vocab_size");
}

TEST(Draft, AFilesHugeLayerCountsAreErrorsNotTables) {
    // A scenario file may hold any count: the model's 10^12 layers with a draft, or 10^12 MTP layers served, are
    // named errors, never a table of that many layers.
    Architecture huge = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    huge.layers = 1'000'000'000'000ull;
    EXPECT_FIELD_ERROR(with_draft_layers(huge, eagle3_head()), "layers", "");
    Deployment d = on_h100s(1);
    d.draft = eagle3_head();
    const Workload w{.context_tokens = 8192, .batch = 1, .block_size = 16};
    EXPECT_FIELD_ERROR(fit(huge, KvDtype::bf16, w, {}, d), "layers", "");
    Architecture mtp = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    mtp.mtp_layers = 1'000'000'000'000ull;
    d.draft.reset();
    d.mtp = true;
    EXPECT_FIELD_ERROR(fit(mtp, KvDtype::bf16, w, {}, d), "mtp_layers", "");
}

TEST(Draft, AGgufDraftWeighsItsFilesAndAQuantizedDraftItsScheme) {
    const Architecture target = Catalog::builtin().find_model("llama-3-70b")->model.arch;
    const CatalogModel* small = Catalog::builtin().find_model("llama-3.2-1b");
    const Workload w{.context_tokens = 8192, .batch = 1, .block_size = 1};
    Deployment d = on_h100s(4);
    d.engine = Engine::llama_cpp;
    // llama.cpp loads a draft GGUF as stored (-md draft.gguf): a Q8_0 file's exact bytes, not 2 bytes a parameter.
    ImportedModel gguf = small->model;
    gguf.engine = Engine::llama_cpp;
    gguf.weights_bytes = 1'321'083'712;
    d.draft = draft_from_model(gguf, "Llama-3.2-1B-Q8_0.gguf", std::nullopt);
    auto f = fit(target, KvDtype::fp16, w, {.tp = 4}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->draft_weights_bytes, 1'321'083'712u);
    EXPECT_TRUE(has_note(*f, "exact from its files"));
    // A checkpoint's quantization_config: its scheme (8-bit weights, a 16-bit scale per 128, no zero point).
    ImportedModel quant = small->model;
    quant.weight_quant = WeightQuant{.method = "gptq", .bits = 8, .group = 128, .scale_bits = 16};
    d.engine = Engine::vllm;
    d.draft = draft_from_model(quant, "llama-3.2-1b-gptq", std::nullopt);
    f = fit(target, KvDtype::fp16, {.context_tokens = 8192, .batch = 1, .block_size = 16}, {.tp = 4}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_LT(f->draft_weights_bytes, 2 * 1'235'814'400ull * 3 / 4);
    EXPECT_GT(f->draft_weights_bytes, 1'235'814'400ull * 1 / 2);
    EXPECT_TRUE(has_note(*f, "estimated for"));
}

TEST(Draft, ADraftModelOfAnotherVocabularyIsNoted) {
    const Architecture qwen = Catalog::builtin().find_model("qwen3-8b")->model.arch;
    const CatalogModel* small = Catalog::builtin().find_model("llama-3.2-1b");
    Deployment d = on_h100s(1);
    d.draft = draft_from_model(small->model, small->id, std::nullopt);
    const auto f = fit(qwen, KvDtype::bf16, {.context_tokens = 8192, .batch = 1, .block_size = 16}, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_TRUE(has_note(*f, "vLLM refuses a draft model whose vocabulary differs"));
}

TEST(Draft, AScenarioKeepsItsDraft) {
    Scenario s;
    s.arch = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    s.model_id = "llama-3-8b";
    s.workload = {.context_tokens = 8192, .batch = 4, .block_size = 16};
    s.deployment = on_h100s(1);
    s.deployment->draft = eagle3_head();
    const auto back = scenario_from_json(scenario_to_json(s), "draft.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    ASSERT_TRUE(back->scenario.deployment && back->scenario.deployment->draft);
    EXPECT_EQ(*back->scenario.deployment->draft, *s.deployment->draft);
    // A method no engine has is named with its line.
    std::string text = scenario_to_json(s);
    const auto at = text.find("\"eagle3\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 8, "\"medusa\"");
    const auto bad = scenario_from_json(text, "draft.kvscope.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error_text().find("method"), std::string::npos);
    EXPECT_NE(bad.error_text().find("eagle3"), std::string::npos);  // the choices
}

}  // namespace
}  // namespace kvscope
