// Ollama as an engine (ollama.h): the llama.cpp it starts, with the context, batch and layers Ollama chooses
// (server/routes.go, server/sched.go, llm/llama_server.go at v0.33), and the fit it gives.
#include <cstdio>
#include <tuple>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/gguf_mix.h"
#include "kvscope/calculator/ollama.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "testing.h"

namespace kvscope {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

Deployment q4_k_m_on(const std::string& gpu, Engine engine) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu(gpu);
    d.engine = engine;
    d.fraction = 1.0;
    d.gguf_mix = GgufMix::q4_k_m;
    return d;
}

TEST(Ollama, DefaultContextFollowsTheGpusMemory) {
    // server/routes.go: 4,096 below 23 GiB, 32,768 below 47 GiB, 262,144 from 47 GiB of GPU memory in all.
    EXPECT_EQ(ollama_default_context(16 * kGiB), 4096u);
    EXPECT_EQ(ollama_default_context(23 * kGiB - 1), 4096u);
    EXPECT_EQ(ollama_default_context(23 * kGiB), 32768u);
    EXPECT_EQ(ollama_default_context(47 * kGiB - 1), 32768u);
    EXPECT_EQ(ollama_default_context(47 * kGiB), 262144u);
    // No longer than the model's own (server/sched.go effectiveModelContext).
    EXPECT_EQ(ollama_model_context(262144, testing::catalog_arch("llama-3-8b")), 8192u);
    EXPECT_EQ(ollama_model_context(262144, testing::catalog_arch("llama-3.1-8b")), 131072u);
    EXPECT_EQ(ollama_model_context(4096, testing::catalog_arch("llama-3.1-8b")), 4096u);
}

TEST(Ollama, BatchFollowsTheContextUnlessItsPredictionLeavesTooLittle) {
    const Architecture& a = testing::catalog_arch("llama-3.1-8b");
    constexpr std::uint64_t weights = 4'920'000'000;
    // Its prediction: the file and an f16 cache of 2 x 32 blocks x 8 KV heads x (4,096 / 32) x tokens x 2 bytes.
    EXPECT_EQ(ollama_predicted_bytes(a, weights, 50'000), weights + 2ull * 32 * 8 * 128 * 50'000 * 2);
    const std::uint64_t big = 80 * kGiB, card = 16 * kGiB;
    EXPECT_EQ(ollama_batch(a, weights, 4096, big, false).batch, 512u);
    EXPECT_EQ(ollama_batch(a, weights, 4097, big, false).batch, 1024u);
    EXPECT_EQ(ollama_batch(a, weights, 32768, big, false).batch, 1024u);
    EXPECT_EQ(ollama_batch(a, weights, 32769, big, false).batch, 2048u);
    // 16 GiB at 50,000 tokens: the prediction (11.5 GB) is past 60% of the card (10.3 GB) but within 75% (12.9 GB),
    // with 768 MiB beside it under 80%: 1,024, not 2,048. At 65,536 (13.5 GB) past 75%: 512.
    const OllamaBatch lowered = ollama_batch(a, weights, 50'000, card, false);
    EXPECT_EQ(lowered.batch, 1024u);
    EXPECT_NE(lowered.why.find("lowered from 2,048"), std::string::npos) << lowered.why;
    EXPECT_EQ(ollama_batch(a, weights, 65'536, card, false).batch, 512u);
    // Without flash attention: 512, and 256 on 8 GiB or less above 4,096 tokens.
    EXPECT_EQ(ollama_batch(a, weights, 65'536, big, true).batch, 512u);
    EXPECT_EQ(ollama_batch(a, weights, 8192, 8 * kGiB, true).batch, 256u);
    EXPECT_EQ(ollama_batch(a, weights, 4096, 8 * kGiB, true).batch, 512u);
}

TEST(Ollama, RunsLlamaCppWithTheBatchAndLayersItChooses) {
    // Ollama's fit is llama.cpp's with -b/-ub by the context and the layers by --fit: the same figures, said so.
    // At 32,768 tokens its batch is 1,024 unless its prediction of the model (the file and a full f16 cache on every
    // layer, whatever the layers keep) is past 75% of the card: Gemma 3 12B's (18.0 GiB: the hidden size over the
    // heads, 240, for its head) and Qwen2.5 72B's (the file alone, 44 GiB) are, and get 512.
    const std::vector<std::pair<std::string, std::uint64_t>> models{
        {"llama-3.1-8b", 1024}, {"gemma-3-12b", 512}, {"qwen2.5-72b", 512}};
    for (const auto& [id, batch] : models) {
        SCOPED_TRACE(id);
        const Architecture& a = testing::catalog_arch(id);
        const Workload w{.context_tokens = 32768};
        const auto ollama = fit(a, KvDtype::fp16, w, {}, q4_k_m_on("rtx-4090", Engine::ollama));
        ASSERT_TRUE(ollama) << ollama.error_text();
        Deployment same = q4_k_m_on("rtx-4090", Engine::llama_cpp);
        same.llama_cpp.ubatch = batch;
        same.llama_cpp.gpu_layers_auto = true;
        const auto llama = fit(a, KvDtype::fp16, w, {}, same);
        ASSERT_TRUE(llama) << llama.error_text();
        EXPECT_EQ(ollama->ubatch, batch);
        EXPECT_EQ(llama->ubatch, batch);
        ASSERT_EQ(ollama->reserve_items.size(), llama->reserve_items.size());
        for (std::size_t i = 0; i < llama->reserve_items.size(); ++i)
            EXPECT_EQ(ollama->reserve_items[i].bytes, llama->reserve_items[i].bytes) << llama->reserve_items[i].name;
        EXPECT_EQ(ollama->kv_bytes_per_gpu, llama->kv_bytes_per_gpu);
        EXPECT_EQ(ollama->max_context, llama->max_context);
        EXPECT_EQ(ollama->fits, llama->fits);
        ASSERT_TRUE(ollama->offload && llama->offload);
        EXPECT_TRUE(ollama->offload->gpu_layers_auto);
        EXPECT_EQ(ollama->offload->gpu_layers, llama->offload->gpu_layers);
        EXPECT_EQ(ollama->offload->gpu_bytes, llama->offload->gpu_bytes);
        EXPECT_EQ(ollama->offload->host_bytes, llama->offload->host_bytes);
        EXPECT_TRUE(testing::contains_line(
            ollama->notes, "-b/-ub " + format_count(batch) + ", Ollama's batch for a context of 32,768"))
            << testing::join(ollama->notes);
        EXPECT_EQ(testing::contains_line(ollama->notes, "lowered from 1,024: its prediction of the model"),
                  batch < 1024)
            << testing::join(ollama->notes);
        // 32,768 is Ollama's own num_ctx on 24 GiB: nothing to say of it.
        EXPECT_FALSE(testing::contains_line(ollama->notes, "Ollama's default num_ctx")) << testing::join(ollama->notes);
    }
    // The 72B does not fit a 24 GB card whole: --fit's layers, the rest in host memory.
    const auto big = fit(testing::catalog_arch("qwen2.5-72b"), KvDtype::fp16, {.context_tokens = 32768}, {},
                         q4_k_m_on("rtx-4090", Engine::ollama));
    ASSERT_TRUE(big && big->offload);
    EXPECT_TRUE(big->offload->partial());
    EXPECT_GT(big->offload->gpu_layers, 0u);
}

TEST(Ollama, SomeArchitecturesServeOneRequestAtATime) {
    // server/sched.go: Qwen3-Next, Qwen3.5, LFM2, Nemotron-H (…) are loaded with OLLAMA_NUM_PARALLEL 1 whatever it
    // is set to: several sequences are said not to be what Ollama runs, in the warnings; one is, as is any number
    // for a model it runs in parallel.
    const auto said = [](const std::string& id, std::uint64_t batch) {
        const auto f = fit(testing::catalog_arch(id), KvDtype::fp16, {.context_tokens = 8192, .batch = batch}, {},
                           q4_k_m_on("rtx-4090", Engine::ollama));
        EXPECT_TRUE(f.ok()) << f.error_text();
        return f.ok() && testing::contains_line(f->notes, "one request at a time");
    };
    EXPECT_TRUE(said("qwen3-next-80b-a3b", 4));
    EXPECT_TRUE(said("qwen3.5-35b-a3b", 2));
    EXPECT_TRUE(said("nemotron-3-nano-30b-a3b", 4));
    EXPECT_TRUE(said("lfm2-700m", 4));
    EXPECT_FALSE(said("qwen3-next-80b-a3b", 1));
    EXPECT_FALSE(said("llama-3.1-8b", 4));
    EXPECT_EQ(testing::catalog_arch("qwen3.5-35b-a3b").gguf_arch, "qwen35moe");
    EXPECT_EQ(testing::catalog_arch("nemotron-3-nano-30b-a3b").gguf_arch, "nemotron_h_moe");
}

TEST(Ollama, ASlidingLayerKeepsItsWindowAndOllamasBatch) {
    // llama.cpp keeps a sliding layer's window and one micro-batch more (src/llama-kv-cache-iswa.cpp): Ollama's
    // 2,048 above 32,768 tokens on a card with room (an H100) keeps 1,024 + 2,048 of Gemma 3's window, llama.cpp's
    // own 512 keeps 1,024 + 512 (each padded to 256).
    const Architecture& a = testing::catalog_arch("gemma-3-12b");
    const Workload w{.context_tokens = 65536};
    const auto ollama = fit(a, KvDtype::fp16, w, {}, q4_k_m_on("h100-sxm", Engine::ollama));
    const auto llama = fit(a, KvDtype::fp16, w, {}, q4_k_m_on("h100-sxm", Engine::llama_cpp));
    ASSERT_TRUE(ollama && llama);
    EXPECT_EQ(ollama->ubatch, 2048u);
    EXPECT_EQ(llama->ubatch, 512u);
    const std::uint64_t sliding = a.count_layers(LayerKind::sliding);
    const std::uint64_t per_token = 2ull * a.kv_heads * a.head_dim_k * 2;  // K and V, f16
    EXPECT_EQ(ollama->kv_bytes_per_gpu - llama->kv_bytes_per_gpu, sliding * (2048 - 512) * per_token);
    EXPECT_TRUE(testing::contains_line(ollama->notes, "n_ubatch 2,048")) << testing::join(ollama->notes);
}

TEST(Ollama, ItsRuleWithoutFlashAttentionIsForCudaGpusAndItsMemoryEveryGpus) {
    // Without flash attention Ollama keeps the batch at 512 on a CUDA GPU (hasCUDADevice); on Apple's GPU the batch
    // follows the context as with it.
    const Architecture& a = testing::catalog_arch("llama-3.1-8b");
    const Workload w{.context_tokens = 32768};
    Deployment cuda = q4_k_m_on("h100-sxm", Engine::ollama);
    cuda.llama_cpp.flash_attn_off = true;
    Deployment apple = q4_k_m_on("m4-max-128gb", Engine::ollama);
    apple.llama_cpp.flash_attn_off = true;
    const auto on_cuda = fit(a, KvDtype::fp16, w, {}, cuda);
    const auto on_apple = fit(a, KvDtype::fp16, w, {}, apple);
    ASSERT_TRUE(on_cuda && on_apple);
    EXPECT_EQ(on_cuda->ubatch, 512u);
    EXPECT_EQ(on_apple->ubatch, 1024u);
    // On two GPUs it weighs the batch against both's memory: Gemma 3 12B's prediction at 32,768 tokens (18.0 GiB) is
    // past 75% of one 24 GB card but not of two.
    const Architecture& g = testing::catalog_arch("gemma-3-12b");
    const auto one = fit(g, KvDtype::fp16, w, {}, q4_k_m_on("rtx-4090", Engine::ollama));
    Deployment two_cards = q4_k_m_on("rtx-4090", Engine::ollama);
    two_cards.gpu_count = 2;
    const auto two = fit(g, KvDtype::fp16, w, {.tp = 1, .pp = 2}, two_cards);
    ASSERT_TRUE(one && two) << two.error_text();
    EXPECT_EQ(one->ubatch, 512u);
    EXPECT_EQ(two->ubatch, 1024u);
}

TEST(Ollama, NumGpuAndNumBatchGivenAreKept) {
    const Architecture& a = testing::catalog_arch("llama-3.1-8b");
    Deployment d = q4_k_m_on("rtx-4060-ti-16gb", Engine::ollama);
    d.llama_cpp.gpu_layers = 20;
    d.llama_cpp.ubatch = 256;
    const auto r = fit(a, KvDtype::fp16, {.context_tokens = 8192}, {}, d);
    ASSERT_TRUE(r && r->offload) << r.error_text();
    EXPECT_EQ(r->ubatch, 256u);
    EXPECT_FALSE(r->offload->gpu_layers_auto);
    EXPECT_EQ(r->offload->gpu_layers, 20u);
    EXPECT_TRUE(testing::contains_line(r->notes, "-b/-ub 256: num_batch as given")) << testing::join(r->notes);
    EXPECT_TRUE(testing::contains_line(r->notes, "-ngl as num_gpu")) << testing::join(r->notes);
    EXPECT_TRUE(testing::contains_line(r->notes, "Ollama's default num_ctx on 16.0 GiB of GPU memory is 4,096"))
        << testing::join(r->notes);
    // Its decode floor reads the split as the fit placed it.
    const auto dec = decode_estimate(a, KvDtype::fp16, {.context_tokens = 8192}, {}, d, *r);
    ASSERT_TRUE(dec) << dec.error_text();
    EXPECT_DOUBLE_EQ(dec->step_time_floor_s, r->offload->step_time_s);
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

// A published Ollama `msg=offload` line (llm/memory.go, v0.4 - v0.12.10), its model and what Ollama was given; the
// figures as the log prints them (format/bytes.go HumanBytes2), empty where the line lacks one or it is not
// comparable. Collected with their sources in docs/vllm-logs.md ("Ollama's offload lines").
struct OffloadLog {
    std::string source;
    std::string config;          // the model's config.json, or a catalog id
    std::string family;          // general.architecture
    std::optional<GgufMix> mix;  // none: F16
    std::uint64_t num_ctx, parallel;
    bool before_0_6_1;     // its weights held the cache
    double available_gib;  // "memory.available", as printed
    std::string offload, full, partial, kv, total, repeating, nonrepeating, graph_full, graph_partial;
    // The weights are printed, not held to the log: Phi-4's log prints weights above its file's size (9.3 GiB of
    // a 8.43 GiB file), which its required memory, held, does not carry.
    bool fused = false;
};

Architecture architecture_of(const std::string& config) {
    if (!config.starts_with("{")) return testing::catalog_arch(config);
    auto m = import_config(config, "config.json");
    EXPECT_TRUE(m.ok()) << m.error_text();
    return m ? m->arch : Architecture{};
}

// A GGUF in F16 (convert_hf_to_gguf's default for Qwen2: f16 matrices, f32 norms and biases), by layer.
LayerWeights f16_layers(const Architecture& a) {
    LayerWeights w;
    for (std::uint64_t l = 0; l < a.layers; ++l) w.blocks.push_back({layer_parameters(a, l).total.value() * 2, 0});
    w.input_bytes = a.vocab_size * a.hidden_size * 2;
    w.output_bytes = (a.tied_embeddings ? 0 : a.vocab_size * a.hidden_size * 2) + a.hidden_size * 4;
    return w;
}

constexpr const char* kQwen25_14B = R"({"model_type": "qwen2", "hidden_size": 5120, "num_hidden_layers": 48,
    "num_attention_heads": 40, "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 152064,
    "max_position_embeddings": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
constexpr const char* kR1Qwen15B = R"({"model_type": "qwen2", "hidden_size": 1536, "num_hidden_layers": 28,
    "num_attention_heads": 12, "num_key_value_heads": 2, "intermediate_size": 8960, "vocab_size": 151936,
    "max_position_embeddings": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
constexpr const char* kLlama32_3B = R"({"model_type": "llama", "hidden_size": 3072, "num_hidden_layers": 28,
    "num_attention_heads": 24, "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})";
constexpr const char* kPhi4 = R"({"model_type": "phi3", "hidden_size": 5120, "num_hidden_layers": 40,
    "num_attention_heads": 40, "num_key_value_heads": 10, "intermediate_size": 17920, "vocab_size": 100352,
    "max_position_embeddings": 16384, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

TEST(Ollama, ItsOldEstimateMatchesPublishedOffloadLines) {
    const std::vector<OffloadLog> logs{
        {"ollama#9362 deepseek-r1:1.5b Q4_K_M, v0.5.12", kR1Qwen15B, "qwen2", GgufMix::q4_k_m, 2048, 4, true, 15.7,
         "29", "1.9 GiB", "1.9 GiB", "224.0 MiB", "976.1 MiB", "793.5 MiB", "182.6 MiB", "299.8 MiB", ""},
        {"ollama#9245 deepseek-r1:14b Q4_K_M, v0.5.x", kQwen25_14B, "qwen2", GgufMix::q4_k_m, 2048, 1, true, 15.4, "49",
         "9.2 GiB", "9.2 GiB", "384.0 MiB", "7.7 GiB", "7.1 GiB", "609.1 MiB", "307.0 MiB", "916.1 MiB"},
        {"ollama#9245 a 14B qwen2 in F16, v0.5.11", kQwen25_14B, "qwen2", std::nullopt, 2048, 1, true, 14.4, "24",
         "28.3 GiB", "14.4 GiB", "384.0 MiB", "25.0 GiB", "23.5 GiB", "1.5 GiB", "307.0 MiB", "916.1 MiB"},
        {"ollama#8098 llama3.2:3b Q4_K_M, v0.5.x", kLlama32_3B, "llama", GgufMix::q4_k_m, 2048, 4, true, 78.6, "29",
         "3.7 GiB", "3.7 GiB", "896.0 MiB", "2.4 GiB", "2.1 GiB", "308.2 MiB", "424.0 MiB", "570.7 MiB"},
        {"ollama#9415 gemma2:9b Q4_0, v0.5.13", "gemma-2-9b", "gemma2", GgufMix::q4_0, 2048, 4, true, 30.9, "43",
         "8.8 GiB", "8.8 GiB", "2.6 GiB", "7.0 GiB", "6.3 GiB", "717.8 MiB", "507.0 MiB", "1.2 GiB"},
        // Phi-4: no graph formula for phi3 (the fallback), and the weights as v0.6.1 on prints them.
        {"ollama#9782 phi4:14b Q4_K_M, v0.6.x", kPhi4, "phi3", GgufMix::q4_k_m, 2048, 4, false, 47.3, "41", "11.5 GiB",
         "11.5 GiB", "1.6 GiB", "9.3 GiB", "8.9 GiB", "402.0 MiB", "1.0 GiB", "1.0 GiB", true},
        // A model split: 31 of 33 layers on a 24 GB card at 80,000 tokens.
        {"ollama#5821 Llama 3.1 8B Q8_0 at 80,000, v0.2.8", "llama-3.1-8b", "llama", GgufMix::q8_0, 80000, 1, true,
         22.7, "31", "23.5 GiB", "22.5 GiB", "9.8 GiB", "16.7 GiB", "16.2 GiB", "532.3 MiB", "5.1 GiB", "5.4 GiB"},
        // The file's type is not in the log: Q4_0 (Ollama's library default then) by its weights.
        {"ollama#7622 Llama 3.1 8B Q4_0, v0.4", "llama-3.1-8b", "llama", GgufMix::q4_0, 2048, 4, true, 20.0, "33",
         "6.2 GiB", "6.2 GiB", "1.0 GiB", "4.7 GiB", "4.3 GiB", "411.0 MiB", "560.0 MiB", "677.5 MiB"},
    };
    int mismatches = 0;
    for (const OffloadLog& log : logs) {
        SCOPED_TRACE(log.source);
        const Architecture a = architecture_of(log.config);
        LayerWeights w;
        if (log.mix) {
            auto mixed = gguf_mix_weights(a, *log.mix);
            ASSERT_TRUE(mixed) << mixed.error_text();
            w = *mixed;
        } else {
            w = f16_layers(a);
        }
        OllamaEstimateInputs in;
        in.gguf_architecture = log.family;
        in.num_ctx = log.num_ctx;
        in.parallel = log.parallel;
        in.weights_hold_cache = log.before_0_6_1;
        // "memory.available" to a tenth of a GiB: the middle of what prints so.
        in.gpu_free_bytes = static_cast<std::uint64_t>(log.available_gib * static_cast<double>(kGiB));
        const auto e = ollama_estimate(a, w, in);
        ASSERT_TRUE(e) << e.error_text();
        const std::vector<std::tuple<std::string, std::string, std::string>> fields{
            {"layers.offload", log.offload, std::to_string(e->layers_offload)},
            {"required.full", log.full, ollama_bytes_text(e->required_full)},
            {"required.partial", log.partial, ollama_bytes_text(e->required_partial)},
            {"required.kv", log.kv, ollama_bytes_text(e->required_kv)},
            {"weights.total", log.total, ollama_bytes_text(e->weights_total)},
            {"weights.repeating", log.repeating, ollama_bytes_text(e->weights_repeating)},
            {"weights.nonrepeating", log.nonrepeating, ollama_bytes_text(e->weights_nonrepeating)},
            {"graph.full", log.graph_full, ollama_bytes_text(e->graph_full)},
            {"graph.partial", log.graph_partial, ollama_bytes_text(e->graph_partial)},
        };
        std::printf("%s\n", log.source.c_str());
        for (const auto& [name, logged, ours] : fields) {
            if (logged.empty()) continue;
            std::printf("  %-22s logged %-11s estimated %-11s%s\n", name.c_str(), logged.c_str(), ours.c_str(),
                        logged == ours ? "" : "  <- differs");
            const bool by_weights = name == "weights.total" || name == "weights.repeating";
            if (log.fused && by_weights) continue;
            if (logged != ours) ++mismatches;
            EXPECT_EQ(ours, logged) << name;
        }
    }
    std::printf("%d of the logged figures held to the log differ (phi4's weights are printed only)\n", mismatches);
}

TEST(Ollama, ItsOldEstimateSaysWhatItDoesNotModel) {
    OllamaEstimateInputs in;
    in.gpu_free_bytes = 24 * kGiB;
    const Architecture& a = testing::catalog_arch("llama-3.1-8b");
    auto w = gguf_mix_weights(a, GgufMix::q4_k_m);
    ASSERT_TRUE(w);
    // An architecture whose graph formula Ollama has and KVScope does not: refused, never the fallback.
    in.gguf_architecture = "chatglm";
    const auto glm = ollama_estimate(a, *w, in);
    ASSERT_FALSE(glm);
    EXPECT_NE(glm.error_text().find("Ollama's graph for 'chatglm' is not modelled"), std::string::npos);
    // num_gpu 0: nothing on the GPU; the full figure is everything, and (as memory.go sums it) the 457 MiB and the
    // one layer it keeps free on a GPU with room.
    in.gguf_architecture = "llama";
    in.num_gpu = 0;
    const auto cpu = ollama_estimate(a, *w, in);
    ASSERT_TRUE(cpu) << cpu.error_text();
    EXPECT_EQ(cpu->layers_offload, 0u);
    EXPECT_EQ(cpu->required_partial, 0u);
    const std::uint64_t kept = (457ull << 20) + w->blocks[0].bytes + cpu->required_kv / 32;
    EXPECT_EQ(cpu->required_full, kept + cpu->weights_repeating + cpu->weights_nonrepeating + cpu->required_kv);
    // A context past what it takes is an error, not an overflow.
    in.num_gpu.reset();
    in.num_ctx = 1ull << 40;
    EXPECT_FALSE(ollama_estimate(a, *w, in));
}

}  // namespace
}  // namespace kvscope
