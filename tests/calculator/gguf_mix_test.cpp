// llama.cpp's quantization mixes from a model's shape (gguf_mix.h): the bytes llama-quantize's rules give, held
// against published files and load logs, and the split they make with --gpu-layers. The table of logs is printed.
#include <cmath>
#include <cstdio>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/gguf_mix.h"
#include "kvscope/calculator/scenario_file.h"
#include "testing.h"

namespace kvscope {
namespace {

Deployment llama_cpp_mix(const std::string& gpu, GgufMix mix) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu(gpu);
    d.engine = Engine::llama_cpp;
    d.fraction = 1.0;
    d.gguf_mix = mix;
    return d;
}

// A published llama.cpp load of a model split at `ngl`: its "CUDA0 model buffer size" (MiB, as printed) and the
// KV its GPU holds.
struct SplitLog {
    std::uint64_t ngl;
    double cuda0_mib;
    double kv_cuda0_mib;
};

TEST(GgufMix, Qwen25SevenBInQ4KMMatchesAPublishedLayerSweep) {
    // Qwen2.5-7B-Instruct-Q4_K_M.gguf (bartowski) on an RTX 2060 6 GB, llama.cpp build 10357, -c 4096, -ngl 12 to 29
    // (github.com/Ton-Llop/Jaull validation/b001-r8-2060-context-matrix/ctx4096: llama-ngl*.log and report.json).
    // At every layer offloaded: "CPU_Mapped model buffer size = 292.36 MiB" (token_embd) and "CUDA0 model buffer
    // size = 4168.09 MiB". The file was quantized before llama.cpp ordered its tensors by layer (2026-03), so two
    // splits put more-bits tensors a layer apart: printed, and held to one layer's difference (ffn_down's and attn_v's
    // q6_K over q4_K: 17.1 MiB).
    const Architecture a = Catalog::builtin().find_model("qwen2.5-7b")->model.arch;
    Deployment d = llama_cpp_mix("rtx-4090", GgufMix::q4_k_m);
    const Workload w{.context_tokens = 4096, .batch = 1};
    const SplitLog logs[] = {{12, 1922.05, 88},  {15, 2314.38, 112}, {16, 2439.44, 120},
                             {18, 2706.70, 136}, {19, 2831.76, 144}, {20, 2957.27, 152},
                             {21, 3082.33, 160}, {22, 3224.09, 168}, {29, 4168.09, 224}};
    std::printf("  ngl  CUDA0 logged  predicted  error\n");
    for (const SplitLog& log : logs) {
        d.llama_cpp.gpu_layers = log.ngl;
        auto f = fit(a, KvDtype::fp16, w, {}, d);
        ASSERT_TRUE(f.ok() && f->offload) << f.error_text();
        const double mib = static_cast<double>(f->offload->weights_gpu_bytes) / (1 << 20);
        std::printf("  %3llu  %12.2f  %9.2f  %+.2f MiB\n", static_cast<unsigned long long>(log.ngl), log.cuda0_mib, mib,
                    mib - log.cuda0_mib);
        EXPECT_LT(std::fabs(mib - log.cuda0_mib), 17.1) << log.ngl;
        EXPECT_EQ(f->offload->kv_on_gpu_bytes, static_cast<std::uint64_t>(log.kv_cuda0_mib) << 20) << log.ngl;
        if (log.ngl == 29) {
            EXPECT_EQ(f->offload->weights_gpu_bytes, 4'370'558'976u);  // 4168.09 MiB
            EXPECT_EQ(f->offload->weights_host_bytes, 306'561'024u);   // 292.36 MiB
        }
    }
}

TEST(GgufMix, Llama3EightBInQ4KMIsThePublishedFileToTheByte) {
    // "CUDA0 buffer size = 4403.49 MiB", "CPU buffer size = 281.81 MiB" (Offload.AWholeLlama3…): the same bytes from
    // the shape alone as from the file's tensors.
    const Architecture a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    auto w = gguf_mix_weights(a, GgufMix::q4_k_m);
    ASSERT_TRUE(w.ok()) << w.error_text();
    std::uint64_t blocks = 0;
    for (const BlockWeights& b : w->blocks) blocks += b.bytes;
    EXPECT_EQ(blocks + w->output_bytes, 4'617'396'224u);
    EXPECT_EQ(w->input_bytes, 295'501'824u);
    // The first eighth of the layers takes q6_K for attn_v and ffn_down; layer 4 does not (use_more_bits).
    EXPECT_GT(w->blocks[0].bytes, w->blocks[4].bytes);
    EXPECT_EQ(w->blocks[0].bytes, w->blocks[31].bytes);
}

TEST(GgufMix, PhiFoursFusedQkvTakesAttentionVsRules) {
    // Phi-4 (phi3: attn_qkv and a fused ffn_up of 2 x 17,920 rows) in Q4_K_M, today's rule (llama.cpp PR #19770,
    // 2026-03: a fused attn_qkv takes attn_v's rules and counter). use_more_bits picks 20 of the 40 layers; those
    // take q6_K for attn_qkv and ffn_down, the rest q4_K:
    //   each layer  2 f32 norms 40,960 + attn_output q4_K 5,120 x 5,120 14,745,600 + ffn_up q4_K 35,840 x 5,120
    //               103,219,200 = 118,005,760, x 40 = 4,720,230,400;
    //   more bits   attn_qkv 7,680 rows x 20 blocks x 210 = 32,256,000, ffn_down 5,120 x 70 x 210 = 75,264,000
    //               (x 20 = 2,150,400,000); the others 22,118,400 + 51,609,600 (x 20 = 1,474,560,000);
    //   token_embd q4_K 100,352 x 20 x 144 = 289,013,760; output q6_K 421,478,400 and its norm 20,480.
    // 9,055,703,040 bytes in all (9.06 GB). The published files hold 9.05 GB (bartowski's phi-4-Q4_K_M.gguf) and
    // 9.1 GB (Ollama's phi4:14b): quantized before 2026-03, their attn_qkv is q5_K in every layer (8.43 GiB either
    // way).
    const auto m = import_config(R"({"model_type": "phi3", "hidden_size": 5120, "num_hidden_layers": 40,
        "num_attention_heads": 40, "num_key_value_heads": 10, "intermediate_size": 17920, "vocab_size": 100352,
        "max_position_embeddings": 16384, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})",
                                 "config.json");
    ASSERT_TRUE(m.ok()) << m.error_text();
    const Architecture& phi4 = m->arch;
    EXPECT_EQ(phi4.gguf_arch, "phi3");
    auto w = gguf_mix_weights(phi4, GgufMix::q4_k_m);
    ASSERT_TRUE(w.ok()) << w.error_text();
    EXPECT_EQ(w->input_bytes, 289'013'760u);
    EXPECT_EQ(w->output_bytes, 421'498'880u);
    EXPECT_EQ(w->blocks[0].bytes, 118'005'760u + 32'256'000u + 75'264'000u);  // more bits
    EXPECT_EQ(w->blocks[5].bytes, 118'005'760u + 22'118'400u + 51'609'600u);
    auto total = gguf_mix_bytes(phi4, GgufMix::q4_k_m);
    ASSERT_TRUE(total.ok());
    EXPECT_EQ(*total, 9'055'703'040u);
    // The same shape as separate attn_q, attn_k and attn_v (a model_type without a fused file) types q and k in
    // the base type: 169 MB less, the error the fused rule mends.
    Architecture separate = phi4;
    separate.gguf_arch.clear();
    auto unfused = gguf_mix_bytes(separate, GgufMix::q4_k_m);
    ASSERT_TRUE(unfused.ok());
    EXPECT_EQ(*total - *unfused, 20ull * 6'400 * 20 * (210 - 144));  // q and k: 6,400 rows in 20 layers
}

TEST(GgufMix, FalconHasRulesOfItsOwn) {
    // Falcon 7B (71 heads of 64, one KV head, width 4,544: no multiple of 256, so its attn_qkv falls back from q4_K
    // to q5_0 and from q6_K to q8_0). Q4_K_M's ffn_down for LLM_ARCH_FALCON: q6_K in the first 32/16 layers,
    // q5_K where use_more_bits, else q4_K; attn_qkv takes attn_v's rule (q6_K where use_more_bits).
    const Architecture a = Catalog::builtin().find_model("falcon-7b")->model.arch;
    ASSERT_EQ(a.gguf_arch, "falcon");
    auto w = gguf_mix_weights(a, GgufMix::q4_k_m);
    ASSERT_TRUE(w.ok()) << w.error_text();
    const std::uint64_t down_block = 4544ull * (18176 / 256);             // ffn_down: 4,544 rows of 71 blocks of 256
    const std::uint64_t qkv_upgrade = 4672ull * (4544 / 32) * (34 - 22);  // q8_0 over q5_0, 4,672 rows
    const auto more = [&](std::uint64_t l) { return w->blocks[l].bytes - w->blocks[5].bytes; };
    EXPECT_EQ(w->blocks[4].bytes, w->blocks[5].bytes);            // neither picked by use_more_bits
    EXPECT_EQ(more(1), down_block * (210 - 144) + qkv_upgrade);   // i < n/16: q6_K
    EXPECT_EQ(more(2), down_block * (176 - 144) + qkv_upgrade);   // use_more_bits: q5_K
    EXPECT_EQ(more(6), down_block * (176 - 144) + qkv_upgrade);   // every third between
    EXPECT_EQ(more(31), down_block * (176 - 144) + qkv_upgrade);  // the last eighth
    // Its tied head takes the output's type, q8_0 for Falcon whatever the width (a width of 8,192, which q6_K's
    // blocks divide, as well).
    EXPECT_EQ(w->input_bytes, 65024ull * (4544 / 32) * 34);
    Architecture wide = a;
    wide.hidden_size = 8192;
    auto w8k = gguf_mix_weights(wide, GgufMix::q4_k_m);
    ASSERT_TRUE(w8k.ok()) << w8k.error_text();
    EXPECT_EQ(w8k->input_bytes, 65024ull * (8192 / 32) * 34);
}

TEST(GgufMix, EachMixIsBetweenItsNeighbours) {
    // More bits, more bytes: Q2_K < Q3_K_M < Q4_K_S < Q4_K_M < Q5_K_M < Q6_K < Q8_0 for the same model.
    const Architecture a = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    std::uint64_t last = 0;
    for (GgufMix mix : {GgufMix::q2_k, GgufMix::q3_k_m, GgufMix::q4_k_s, GgufMix::q4_k_m, GgufMix::q5_k_m,
                        GgufMix::q6_k, GgufMix::q8_0}) {
        auto bytes = gguf_mix_bytes(a, mix);
        ASSERT_TRUE(bytes.ok()) << bytes.error_text();
        EXPECT_GT(*bytes, last) << to_string(mix);
        last = *bytes;
    }
    // The names llama-quantize takes, in any case, with its aliases.
    EXPECT_EQ(parse_gguf_mix("Q4_K_M"), GgufMix::q4_k_m);
    EXPECT_EQ(parse_gguf_mix("q5_k"), GgufMix::q5_k_m);
    EXPECT_EQ(parse_gguf_mix("iq4_xs"), GgufMix::iq4_xs);
    EXPECT_FALSE(parse_gguf_mix("q4_k_x").has_value());
    EXPECT_EQ(gguf_mix_name(GgufMix::q4_k_m), "Q4_K_M");
}

TEST(GgufMix, GptOssExpertsInMxfp4AndARowNoBlockDividesFallsBack) {
    // gpt-oss-120b (width 2,880, no multiple of 256): MXFP4_MOE keeps the experts in MXFP4 and every other matrix
    // in Q8_0; under Q4_K_M its q4_K rows fall back to q5_0 (tensor_type_fallback), more bytes than MXFP4's experts.
    const Architecture a = Catalog::builtin().find_model("gpt-oss-120b")->model.arch;
    auto mxfp4 = gguf_mix_bytes(a, GgufMix::mxfp4_moe);
    auto q4km = gguf_mix_bytes(a, GgufMix::q4_k_m);
    ASSERT_TRUE(mxfp4.ok() && q4km.ok());
    // The published gpt-oss-120b-mxfp4 GGUF holds 63.4 GB (ggml-org/gpt-oss-120b-GGUF): within 2%.
    EXPECT_NEAR(static_cast<double>(*mxfp4), 63.4e9, 63.4e9 * 0.02);
    EXPECT_GT(*q4km, *mxfp4);
}

TEST(GgufMix, APublishedCountTheShapeDoesNotReachIsCountedInTheBaseType) {
    // LFM2 700M's description leaves its MLP width out (the catalog gives its published 742 M parameters): the rest
    // is counted in the base type, so the mix's total follows the count (LFM2-700M-Q4_K_M.gguf: 469 MB), never the
    // shape's 240 M.
    const Architecture a = Catalog::builtin().find_model("lfm2-700m")->model.arch;
    auto bytes = gguf_mix_bytes(a, GgufMix::q4_k_m);
    ASSERT_TRUE(bytes.ok()) << bytes.error_text();
    EXPECT_NEAR(static_cast<double>(*bytes), 469e6, 469e6 * 0.10);
}

TEST(GgufMix, AModelWithoutAWidthIsAnErrorNamingIt) {
    Architecture a = Catalog::builtin().find_model("qwen3-next-80b-a3b")->model.arch;
    a.hidden_size = 0;
    EXPECT_FIELD_ERROR(gguf_mix_weights(a, GgufMix::q4_k_m), "hidden_size", "width");
}

TEST(GgufMix, AScenarioKeepsItsMixAndTheReportsSayItIsAnEstimate) {
    Scenario s;
    s.arch = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    s.deployment = llama_cpp_mix("rtx-4060-ti-16gb", GgufMix::q5_k_m);
    const auto back = scenario_from_json(scenario_to_json(s), "mix.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.deployment->gguf_mix, GgufMix::q5_k_m);
    auto f = fit(s.arch, KvDtype::fp16, {}, {}, *s.deployment);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_FALSE(f->weights_exact);
    EXPECT_TRUE(testing::contains_line(f->notes, "weights estimated as a GGUF Q5_K_M")) << testing::join(f->notes);
    EXPECT_EQ(f->weights_bytes, *gguf_mix_bytes(s.arch, GgufMix::q5_k_m));
}

}  // namespace
}  // namespace kvscope
