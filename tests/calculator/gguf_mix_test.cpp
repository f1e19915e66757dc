// llama.cpp's quantization mixes from a model's shape (gguf_mix.h): the bytes llama-quantize's rules give, held
// against published files and load logs, and the split they make with --gpu-layers. The table of logs is printed.
#include <cmath>
#include <cstdio>

#include "kvscope/calculator/catalog.h"
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
