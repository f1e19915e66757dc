// llama.cpp's split of a model between the GPU and the host (offload.h): which layers go where by its rule
// (src/llama-model.cpp load_tensors), a published load log to the byte, --n-cpu-moe and --no-kv-offload, the most
// layers that fit, the decode floor of a split, and what the fit and a saved scenario make of it.
#include <cstdio>
#include <numeric>
#include <optional>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/gguf_mix.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/offload.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/weights.h"
#include "testing.h"

namespace kvscope {
namespace {

// Meta-Llama-3-8B-Instruct as a Q4_K_M GGUF holds it: llama.cpp's quantize (src/llama-quant.cpp
// llama_tensor_get_type) gives attn_v and ffn_down q6_K on the layers use_more_bits picks (the first and last
// eighth, and every third between) and q4_K elsewhere; token_embd q4_K, output q6_K, norms f32.
ImportedModel llama3_8b_q4_k_m() {
    constexpr std::uint32_t kF32 = 0, kQ4K = 12, kQ6K = 14;
    constexpr std::uint64_t embd = 4096, kv = 1024, ff = 14336, vocab = 128256;
    constexpr int n = 32;
    gguf::Writer w;
    w.str("general.architecture", "llama").str("general.name", "Llama 3 8B Q4_K_M");
    w.u32("llama.block_count", n).u32("llama.context_length", 8192).u32("llama.embedding_length", embd);
    w.u32("llama.feed_forward_length", ff).u32("llama.attention.head_count", 32);
    w.u32("llama.attention.head_count_kv", 8).u32("llama.rope.dimension_count", 128).u32("llama.vocab_size", vocab);
    w.tensor("token_embd.weight", {embd, vocab}, kQ4K);
    const auto more_bits = [](int i) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; };
    for (int l = 0; l < n; ++l) {
        const std::string b = "blk." + std::to_string(l);
        const std::uint32_t wide = more_bits(l) ? kQ6K : kQ4K;
        w.tensor(b + ".attn_q.weight", {embd, embd}, kQ4K).tensor(b + ".attn_k.weight", {embd, kv}, kQ4K);
        w.tensor(b + ".attn_v.weight", {embd, kv}, wide).tensor(b + ".attn_output.weight", {embd, embd}, kQ4K);
        w.tensor(b + ".ffn_gate.weight", {embd, ff}, kQ4K).tensor(b + ".ffn_up.weight", {embd, ff}, kQ4K);
        w.tensor(b + ".ffn_down.weight", {ff, embd}, wide).tensor(b + ".attn_norm.weight", {embd}, kF32);
        w.tensor(b + ".ffn_norm.weight", {embd}, kF32);
    }
    w.tensor("output_norm.weight", {embd}, kF32).tensor("output.weight", {embd, vocab}, kQ6K);
    auto file = gguf::read(w.bytes(), "llama3.gguf");
    EXPECT_TRUE(file.ok()) << file.error_text();
    file.value().file_bytes = 0;  // the header alone stands for the file
    auto m = gguf::import(*file, "llama3.gguf");
    EXPECT_TRUE(m.ok()) << m.error_text();
    return *m;
}

Deployment llama_cpp_on(const std::string& gpu, const ImportedModel& m) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu(gpu);
    adopt_model_weights(d, m.model_weights());
    EXPECT_EQ(d.engine, Engine::llama_cpp);
    return d;
}

// llama.cpp on a catalog GPU, taking all its memory (its fraction 1).
Deployment llama_cpp_gpu(const std::string& gpu) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu(gpu);
    d.engine = Engine::llama_cpp;
    d.fraction = 1.0;
    return d;
}

Offload split_of(const Architecture& a, const Workload& w, const Deployment& d) {
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    EXPECT_TRUE(f.ok()) << f.error_text();
    EXPECT_TRUE(f.ok() && f->offload.has_value());
    return f.ok() && f->offload ? *f->offload : Offload{};
}

TEST(Offload, AWholeLlama3MatchesThePublishedLoadLogToTheByte) {
    // An RTX 3070's log of Meta-Llama-3-8B-Instruct.Q4_K_M.gguf, every layer offloaded: "offloaded 33/33 layers to
    // GPU", "CPU buffer size = 281.81 MiB" (token_embd, which llama.cpp keeps on the CPU), "CUDA0 buffer size =
    // 4403.49 MiB" (every block, output and output_norm), "KV buffer size = 64.00 MiB" at n_ctx 512.
    const ImportedModel m = llama3_8b_q4_k_m();
    ASSERT_TRUE(m.weights_layers.has_value());
    EXPECT_EQ(m.weights_layers->blocks.size(), 32u);
    const Deployment d = llama_cpp_on("rtx-3060-12gb", m);  // the log's RTX 3070 is not in the catalog
    const Offload o = split_of(m.arch, {.context_tokens = 512, .batch = 1}, d);
    EXPECT_EQ(o.total_layers, 33u);
    EXPECT_EQ(o.gpu_layers, 33u);
    EXPECT_FALSE(o.gpu_layers_given);
    EXPECT_TRUE(o.weights_exact);
    EXPECT_EQ(o.weights_host_bytes, 295'501'824u);   // 281.81 MiB
    EXPECT_EQ(o.weights_gpu_bytes, 4'617'396'224u);  // 4403.49 MiB
    EXPECT_EQ(o.kv_on_gpu_bytes, 64ull << 20);       // 64.00 MiB
    EXPECT_EQ(o.kv_on_host_bytes, 0u);
    // The fit's GPU weights are the same: the token embedding is not on the GPU.
    auto f = fit(m.arch, KvDtype::fp16, {.context_tokens = 512, .batch = 1}, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->weights_bytes_per_gpu, 4'617'396'224u);
    EXPECT_EQ(f->weights_bytes, 4'617'396'224u + 295'501'824u);
}

TEST(Offload, TheOutputLayerGoesFirstThenTheBlocksFromTheLast) {
    // load_tensors: i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0); the output layer is layer n_layer.
    const ImportedModel m = llama3_8b_q4_k_m();
    Deployment d = llama_cpp_on("rtx-4090", m);
    const LayerWeights& l = *m.weights_layers;
    const Workload w{.context_tokens = 4096, .batch = 1};
    const Offload whole = split_of(m.arch, w, d);
    for (std::uint64_t n : {0ull, 1ull, 2ull, 28ull, 32ull, 33ull}) {
        d.llama_cpp.gpu_layers = n;
        const Offload o = split_of(m.arch, w, d);
        const std::uint64_t first = 33 - n;  // the first block on the GPU
        std::uint64_t gpu = n > 0 ? l.output_bytes : 0, host = l.input_bytes + (n > 0 ? 0 : l.output_bytes);
        for (std::uint64_t b = 0; b < 32; ++b) (b >= first ? gpu : host) += l.blocks[b].bytes;
        EXPECT_EQ(o.weights_gpu_bytes, gpu) << n << " layers";
        EXPECT_EQ(o.weights_host_bytes, host) << n << " layers";
        EXPECT_EQ(o.weights_gpu_bytes + o.weights_host_bytes, d.weights_bytes_exact);
        // The cache follows its layer: the GPU's blocks' share of it.
        const std::uint64_t gpu_blocks = n > 0 ? n - 1 : 0;
        EXPECT_EQ(o.kv_on_gpu_bytes, whole.kv_on_gpu_bytes / 32 * gpu_blocks) << n << " layers";
        EXPECT_EQ(o.kv_on_gpu_bytes + o.kv_on_host_bytes, whole.kv_on_gpu_bytes);
        // The GPU runs the reserved micro-batch whatever the split (op offload), so its runtime and compute buffer
        // are there at any -ngl, 0 included (Offload.TheComputeBuffersAreTheSameAtEverySplit).
        EXPECT_EQ(o.overhead_gpu_bytes, d.runtime_overhead_bytes);
        EXPECT_EQ(o.compute_buffer_gpu_bytes, whole.compute_buffer_gpu_bytes) << n << " layers";
        EXPECT_EQ(o.compute_buffer_host_bytes, whole.compute_buffer_host_bytes) << n << " layers";
    }
    // The decode floor falls as layers leave the GPU: each step reads them from host memory instead.
    double last = 1e30;
    for (std::uint64_t n = 0; n <= 33; ++n) {
        d.llama_cpp.gpu_layers = n;
        const Offload o = split_of(m.arch, w, d);
        EXPECT_LE(o.step_time_s, last * (1 + 1e-12)) << n;
        last = o.step_time_s;
        const double expected =
            static_cast<double>(o.read_gpu_bytes) / static_cast<double>(d.gpu.bandwidth_bytes_per_s) +
            static_cast<double>(o.read_host_bytes) / static_cast<double>(o.host_bandwidth_bytes_per_s);
        EXPECT_DOUBLE_EQ(o.step_time_s, expected);
    }
}

TEST(Offload, TheComputeBuffersAreTheSameAtEverySplit) {
    // Qwen2.5-7B-Instruct Q4_K_M on an RTX 2060, llama.cpp build 10357, -c 4096, flash attention on (auto)
    // (github.com/Ton-Llop/Jaull validation/b001-r8-2060-context-matrix/ctx4096, llama-ngl*.log): "CUDA0 compute
    // buffer size" 136.01 MiB with every layer on the GPU and 183.44 MiB at -ngl 0, 12, 15, 16 and 18 and with
    // --no-kv-offload; "CUDA_Host compute buffer size" 18.01 MiB in every one. The GPU runs the reserved micro-batch
    // whatever the split (its buffer holds the host's weights' copies too), so KVScope's GPU and host buffers are the
    // same at every -ngl, 0 included, and at least what the build logged: the rule is older builds'
    // (docs/vllm-logs.md).
    const Architecture a = Catalog::builtin().find_model("qwen2.5-7b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4060-ti-16gb");
    d.gguf_mix = GgufMix::q4_k_m;
    const Workload w{.context_tokens = 4096, .batch = 1};
    struct Logged {
        std::uint64_t ngl;
        bool kv_offload;
        double cuda0_mib, host_mib;
    };
    const Logged logs[] = {{29, true, 136.01, 18.01}, {18, true, 183.44, 18.01}, {15, true, 183.44, 18.01},
                           {12, true, 183.44, 18.01}, {0, true, 183.44, 18.01},  {15, false, 183.44, 18.01}};
    const auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
    std::printf("  ngl  kv offload  CUDA0 logged  KVScope  CUDA_Host logged  KVScope\n");
    std::optional<Offload> first;
    for (const Logged& log : logs) {
        d.llama_cpp.gpu_layers = log.ngl;
        d.llama_cpp.no_kv_offload = !log.kv_offload;
        const Offload o = split_of(a, w, d);
        std::printf("  %3llu  %10s  %12.2f  %7.2f  %16.2f  %7.2f\n", static_cast<unsigned long long>(log.ngl),
                    log.kv_offload ? "yes" : "no", log.cuda0_mib, mib(o.compute_buffer_gpu_bytes), log.host_mib,
                    mib(o.compute_buffer_host_bytes));
        EXPECT_GE(mib(o.compute_buffer_gpu_bytes), log.cuda0_mib) << log.ngl;
        EXPECT_GE(mib(o.compute_buffer_host_bytes), log.host_mib) << log.ngl;
        EXPECT_EQ(o.overhead_gpu_bytes, d.runtime_overhead_bytes) << log.ngl;
        if (!first) first = o;
        EXPECT_EQ(o.compute_buffer_gpu_bytes, first->compute_buffer_gpu_bytes) << log.ngl;
        EXPECT_EQ(o.compute_buffer_host_bytes, first->compute_buffer_host_bytes) << log.ngl;
    }
    // Without flash attention the scores (past the logits from 16k on) are the GPU's, or the host's where
    // --no-kv-offload keeps the attention there.
    d.llama_cpp.flash_attn_off = true;
    d.llama_cpp.gpu_layers = 0;
    d.llama_cpp.no_kv_offload = false;
    const Workload longer{.context_tokens = 16384, .batch = 1};
    const Offload on_gpu = split_of(a, longer, d);
    d.llama_cpp.no_kv_offload = true;
    const Offload on_host = split_of(a, longer, d);
    EXPECT_GT(on_gpu.compute_buffer_gpu_bytes, first->compute_buffer_gpu_bytes);
    EXPECT_EQ(on_gpu.compute_buffer_host_bytes, first->compute_buffer_host_bytes);
    EXPECT_EQ(on_host.compute_buffer_gpu_bytes, first->compute_buffer_gpu_bytes);
    EXPECT_GT(on_host.compute_buffer_host_bytes, first->compute_buffer_host_bytes);
}

TEST(Offload, TheMostLayersThatFitASixteenGigabyteCard) {
    // Llama 3.1 70B-sized weights do not fit a 16 GB card whole: the most layers that do, and one more does not.
    const Architecture a = Catalog::builtin().find_model("llama-3.1-70b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4080");
    d.weight_dtype = KvDtype::q4_0;
    const Workload w{.context_tokens = 8192, .batch = 1};
    const Offload whole = split_of(a, w, d);
    EXPECT_FALSE(whole.fits_gpu);
    ASSERT_GT(whole.most_gpu_layers, 0u);
    ASSERT_LT(whole.most_gpu_layers, whole.total_layers);
    d.llama_cpp.gpu_layers = whole.most_gpu_layers;
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_TRUE(f->fits);
    EXPECT_TRUE(f->offload->fits_gpu);
    EXPECT_FALSE(f->offload->weights_exact);
    EXPECT_EQ(f->weights_bytes_per_gpu, f->offload->weights_gpu_bytes);
    EXPECT_EQ(f->memory_bytes_per_gpu_needed, f->offload->kv_on_gpu_bytes);
    // The fit's budget and the split's GPU sum are the same arithmetic.
    EXPECT_EQ(
        static_cast<std::int64_t>(f->offload->gpu_usable_bytes) - static_cast<std::int64_t>(f->offload->gpu_bytes),
        f->headroom_bytes_per_gpu);
    d.llama_cpp.gpu_layers = whole.most_gpu_layers + 1;
    f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_FALSE(f->fits);
    EXPECT_FALSE(f->offload->fits_gpu);
    // The fit of the whole model names the layers that fit.
    d.llama_cpp.gpu_layers.reset();
    f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_TRUE(testing::contains_line(f->notes, "--gpu-layers " + std::to_string(whole.most_gpu_layers) + " fits"))
        << testing::join(f->notes);
}

TEST(Offload, AutoLeavesLlamaCppsFitTargetFree) {
    // --gpu-layers auto: the most layers whose GPU bytes leave --fit's 1 GiB (common/common.h fit_params_target).
    const Architecture a = Catalog::builtin().find_model("qwen3-32b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4060-ti-16gb");
    d.gguf_mix = GgufMix::q4_k_m;
    d.llama_cpp.gpu_layers_auto = true;
    const Workload w{.context_tokens = 16384, .batch = 1};
    const Offload o = split_of(a, w, d);
    EXPECT_TRUE(o.gpu_layers_auto);
    ASSERT_GT(o.gpu_layers, 0u);
    ASSERT_LT(o.gpu_layers, o.most_gpu_layers);  // the target costs layers the plain fit would take
    EXPECT_LE(o.gpu_bytes + kLlamaCppFitTargetBytes, o.gpu_usable_bytes);
    d.llama_cpp.gpu_layers_auto = false;
    d.llama_cpp.gpu_layers = o.gpu_layers + 1;
    const Offload one_more = split_of(a, w, d);
    EXPECT_GT(one_more.gpu_bytes + kLlamaCppFitTargetBytes, one_more.gpu_usable_bytes);
    // The fit with auto fits, says how it chose, and its capacity keeps those layers where they are.
    d.llama_cpp.gpu_layers.reset();
    d.llama_cpp.gpu_layers_auto = true;
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_TRUE(f->fits);
    EXPECT_TRUE(testing::contains_line(f->notes, "--gpu-layers auto: " + std::to_string(o.gpu_layers) + " of 65"))
        << testing::join(f->notes);
}

TEST(Offload, ASplitsCapacityIsTheLongestContextBothMemoriesHold) {
    const Architecture a = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4060-ti-16gb");
    d.host.memory_bytes = 32ull << 30;
    d.llama_cpp.gpu_layers = 20;
    const Workload w{.context_tokens = 32768, .batch = 1};
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    ASSERT_TRUE(f->fits);
    ASSERT_LT(f->max_context, a.max_positions);
    Workload at = w;
    at.context_tokens = f->max_context;
    auto edge = fit(a, KvDtype::fp16, at, {}, d);
    ASSERT_TRUE(edge.ok());
    EXPECT_TRUE(edge->fits);
    at.context_tokens = f->max_context + 1;
    edge = fit(a, KvDtype::fp16, at, {}, d);
    ASSERT_TRUE(edge.ok());
    EXPECT_FALSE(edge->fits);
    // A host without the RAM for the rest: the split does not fit, and says why.
    d.host.memory_bytes = 1ull << 30;
    f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_FALSE(f->fits);
    EXPECT_TRUE(f->offload->fits_gpu);
    EXPECT_FALSE(f->offload->fits_host);
    EXPECT_EQ(f->offload->host_short_bytes(), f->offload->host_bytes - (1ull << 30));
    EXPECT_GE(f->headroom_bytes_per_gpu, 0);  // the GPU's part fits: the verdict names the host's RAM
    EXPECT_TRUE(testing::contains_line(f->notes, "more than its RAM")) << testing::join(f->notes);
}

TEST(Offload, TheCacheInHostMemoryIsHeldByTheHostsRamAndAStateModelHasNoContextLimit) {
    // --no-kv-offload with every layer on the GPU: the longest context is the host's to hold.
    const Architecture a = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4090");
    d.gguf_mix = GgufMix::q4_k_m;
    d.llama_cpp.no_kv_offload = true;
    d.host.memory_bytes = 16ull << 30;
    Workload w{.context_tokens = 32768, .batch = 1};
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok() && f->offload) << f.error_text();
    EXPECT_EQ(f->offload->kv_on_gpu_bytes, 0u);
    ASSERT_LT(f->max_context, a.max_positions);
    w.context_tokens = f->max_context;
    EXPECT_TRUE(fit(a, KvDtype::fp16, w, {}, d)->fits);
    w.context_tokens = f->max_context + 1;
    auto over = fit(a, KvDtype::fp16, w, {}, d);
    EXPECT_FALSE(over->fits);
    EXPECT_GT(over->offload->host_short_bytes(), 0u);
    // A state-space model split: no context limit, never the search's bound as a figure.
    const Architecture mamba = Catalog::builtin().find_model("mamba-codestral-7b")->model.arch;
    Deployment m = llama_cpp_gpu("rtx-4060-ti-16gb");
    m.llama_cpp.gpu_layers = 10;
    auto g = fit(mamba, KvDtype::fp16, {.context_tokens = 8192, .batch = 1}, {}, m);
    ASSERT_TRUE(g.ok()) << g.error_text();
    EXPECT_TRUE(g->max_context_unbounded);
}

TEST(Offload, ExpertsOnTheCpuAndTheCacheInHostMemory) {
    const Architecture a = Catalog::builtin().find_model("qwen3-30b-a3b")->model.arch;
    ASSERT_TRUE(a.moe.has_value());
    Deployment d = llama_cpp_gpu("rtx-4090");
    d.weight_dtype = KvDtype::q8_0;
    const Workload w{.context_tokens = 16384, .batch = 1};
    const Offload whole = split_of(a, w, d);
    d.llama_cpp.cpu_moe_layers = 10;
    const Offload cpu_moe = split_of(a, w, d);
    // The experts of blocks 0 - 9 move to host memory; nothing else does.
    EXPECT_LT(cpu_moe.weights_gpu_bytes, whole.weights_gpu_bytes);
    EXPECT_EQ(whole.weights_gpu_bytes - cpu_moe.weights_gpu_bytes,
              cpu_moe.weights_host_bytes - whole.weights_host_bytes);
    EXPECT_EQ(cpu_moe.kv_on_gpu_bytes, whole.kv_on_gpu_bytes);
    EXPECT_GT(cpu_moe.read_host_bytes, 0u);
    EXPECT_GT(cpu_moe.step_time_s, whole.step_time_s);
    d.llama_cpp.cpu_moe_layers = 0;
    d.llama_cpp.no_kv_offload = true;
    const Offload kv_host = split_of(a, w, d);
    EXPECT_EQ(kv_host.kv_on_gpu_bytes, 0u);
    EXPECT_EQ(kv_host.kv_on_host_bytes, whole.kv_on_gpu_bytes);
    EXPECT_EQ(kv_host.weights_gpu_bytes, whole.weights_gpu_bytes);
}

TEST(Offload, MoreLayersThanTheModelHasAreAllOfThemAndBadSettingsNameTheirField) {
    const Architecture a = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4090");
    // -ngl 99, the common idiom: llama.cpp takes at most n_layer + 1 (act_gpu_layers), and says so here.
    d.llama_cpp.gpu_layers = 99;
    const Workload w{.context_tokens = 8192, .batch = 1};
    auto all = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(all.ok()) << all.error_text();
    EXPECT_EQ(all->offload->gpu_layers, 33u);
    EXPECT_FALSE(all->offload->partial());
    EXPECT_TRUE(testing::contains_line(all->notes, "--gpu-layers 99 takes every layer")) << testing::join(all->notes);
    // A host memory not in the table (a scenario file edited by hand).
    d.host.id = "ddr9";
    EXPECT_FIELD_ERROR(fit(a, KvDtype::fp16, w, {}, d), "host_bandwidth", "'ddr9' is not a host memory");
    d.host.id.clear();
    d.llama_cpp.gpu_layers = 33;
    d.llama_cpp.cpu_moe_layers = 2;
    EXPECT_FIELD_ERROR(fit(a, KvDtype::fp16, w, {}, d), "cpu_moe_layers", "has no experts");
    // Another engine keeps every layer on the GPU, and says the setting does nothing there.
    d.llama_cpp.cpu_moe_layers = 0;
    d.engine = Engine::vllm;
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_FALSE(f->offload.has_value());
    EXPECT_TRUE(testing::contains_line(f->notes, "are llama.cpp's")) << testing::join(f->notes);
}

TEST(Offload, TheDecodeFloorOfASplitIsTheFitsOwn) {
    const Architecture a = Catalog::builtin().find_model("llama-3.1-8b")->model.arch;
    Deployment d = llama_cpp_gpu("rtx-4060-ti-16gb");
    d.host.bandwidth_bytes_per_s = 60'000'000'000;
    const Workload w{.context_tokens = 8192, .batch = 1};
    auto whole = decode_estimate(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(whole.ok()) << whole.error_text();
    EXPECT_EQ(whole->host_bytes_read_per_step, 0u);
    d.llama_cpp.gpu_layers = 17;
    auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    auto split = decode_estimate(a, KvDtype::fp16, w, {}, d, *f);
    ASSERT_TRUE(split.ok()) << split.error_text();
    EXPECT_EQ(split->host_bytes_read_per_step, f->offload->read_host_bytes);
    EXPECT_EQ(split->host_bandwidth_bytes_per_s, 60'000'000'000u);
    EXPECT_DOUBLE_EQ(split->step_time_floor_s, f->offload->step_time_s);
    EXPECT_GT(split->step_time_floor_s, whole->step_time_floor_s);
    // The per-GPU reads are what the GPU's memory serves; with the host's they are the whole model's step, as much as
    // the model reads with every layer on the GPU (the JSON's *_read_per_step_per_gpu).
    const Offload& o = *f->offload;
    EXPECT_EQ(split->bytes_read_per_step_per_gpu, o.read_gpu_bytes);
    EXPECT_EQ(split->kv_bytes_read_per_gpu, o.kv_on_gpu_bytes);  // no recurrent state in Llama
    EXPECT_EQ(split->weight_bytes_read_per_gpu + split->kv_bytes_read_per_gpu + split->state_bytes_read_per_gpu,
              split->bytes_read_per_step_per_gpu);
    EXPECT_LT(split->weight_bytes_read_per_gpu, whole->weight_bytes_read_per_gpu);
    EXPECT_EQ(split->bytes_read_per_step_per_gpu + split->host_bytes_read_per_step, whole->bytes_read_per_step_per_gpu);
    // Every layer on the GPU: the split's floor is the plain one.
    d.llama_cpp.gpu_layers.reset();
    f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok());
    EXPECT_NEAR(f->offload->step_time_s, whole->step_time_floor_s, whole->step_time_floor_s * 1e-9);
}

TEST(Offload, AScenarioKeepsTheSplitTheHostAndTheGgufsLayers) {
    const ImportedModel m = llama3_8b_q4_k_m();
    Scenario s;
    s.arch = m.arch;
    s.deployment = llama_cpp_on("rtx-4060-ti-16gb", m);
    s.deployment->llama_cpp.gpu_layers = 12;
    s.deployment->llama_cpp.no_kv_offload = true;
    s.deployment->host = {.id = "ddr4-3200-2ch", .memory_bytes = 64ull << 30, .bandwidth_bytes_per_s = 0};
    const auto back = scenario_from_json(scenario_to_json(s), "split.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.deployment->llama_cpp, s.deployment->llama_cpp);
    EXPECT_EQ(back->scenario.deployment->host, s.deployment->host);
    EXPECT_EQ(back->scenario.deployment->weights_layers, s.deployment->weights_layers);
    // The same numbers from the reopened file.
    const Workload w{.context_tokens = 8192, .batch = 1};
    EXPECT_EQ(split_of(back->scenario.arch, w, *back->scenario.deployment).weights_gpu_bytes,
              split_of(s.arch, w, *s.deployment).weights_gpu_bytes);
    // The host's peak from the table.
    EXPECT_EQ(split_of(s.arch, w, *s.deployment).host_bandwidth_bytes_per_s, 51'200'000'000u);
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

// The README's split: Qwen3 32B as a Q4_K_M GGUF with 44 of its 65 layers on a 16 GB card.
Deployment qwen3_32b_split() {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("rtx-4060-ti-16gb");
    d.engine = Engine::llama_cpp;
    d.fraction = 1.0;
    d.gguf_mix = GgufMix::q4_k_m;
    d.llama_cpp.gpu_layers = 44;
    return d;
}

TEST(Offload, APlanSaysItsOneGpuRowIsTheSplit) {
    // The plan's 1-GPU row is llama.cpp's split (the fit's); the rows of more GPUs keep every layer on them.
    Deployment d = qwen3_32b_split();
    const auto plan = plan_deployments(testing::catalog_arch("qwen3-32b"), KvDtype::bf16, {.context_tokens = 16384}, d);
    ASSERT_TRUE(plan) << plan.error_text();
    EXPECT_TRUE(testing::contains_line(plan->notes, "the 1-GPU row is llama.cpp's split, 44 of 65 layers on the GPU"))
        << testing::join(plan->notes);
    // Every layer on the GPU: no split to speak of.
    d.llama_cpp.gpu_layers.reset();
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    const auto whole =
        plan_deployments(testing::catalog_arch("qwen3-32b"), KvDtype::bf16, {.context_tokens = 16384}, d);
    ASSERT_TRUE(whole) << whole.error_text();
    EXPECT_FALSE(testing::contains_line(whole->notes, "the 1-GPU row is")) << testing::join(whole->notes);
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

TEST(Offload, TheChartsSplitCurvesAreTheCacheWhereItLives) {
    // Qwen3 32B with 44 of its 65 layers on a 16 GB card: at every token count the GPU's layers' cache and the
    // host's add up to the model's, and the GPU's crosses the fit's KV budget where the fit stops fitting.
    const Architecture& a = testing::catalog_arch("qwen3-32b");
    Deployment d = qwen3_32b_split();
    const Workload w{.context_tokens = 16384};
    const auto f = fit(a, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(f && f->offload) << f.error_text();
    const auto curves = kv_curves(a, KvDtype::bf16, w, {}, {.points = 64, .max_tokens = 40960});
    ASSERT_TRUE(curves) << curves.error_text();
    const auto split = split_curves(a, KvDtype::bf16, w, d, *f, *curves);
    ASSERT_TRUE(split) << split.error_text();
    ASSERT_EQ(split->size(), 2u);
    const Curve& gpu = split->at(0);
    const Curve& host = split->at(1);
    EXPECT_EQ(gpu.series, VariantKind::on_gpu);
    EXPECT_EQ(gpu.name, "KV on the GPU (44 of 65 layers)");
    EXPECT_EQ(host.series, VariantKind::on_host);
    const auto model =
        std::find_if(curves->series.begin(), curves->series.end(), [](const Curve& c) { return c.is_model; });
    ASSERT_NE(model, curves->series.end());
    for (std::size_t i = 0; i < curves->tokens.size(); ++i) {
        EXPECT_EQ(gpu.bytes[i] + host.bytes[i], model->bytes[i]) << curves->tokens[i];
        // 43 of the 64 blocks' caches on the GPU (the output layer is the 44th layer).
        EXPECT_EQ(gpu.bytes[i] * 64, model->bytes[i] * 43) << curves->tokens[i];
        const bool within = static_cast<std::int64_t>(gpu.bytes[i]) <= f->kv_budget_bytes;
        EXPECT_EQ(within, curves->tokens[i] <= f->max_context) << curves->tokens[i];
    }
    // The cache in host RAM (--no-kv-offload): none of it on the GPU.
    d.llama_cpp.no_kv_offload = true;
    const auto in_ram = fit(a, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(in_ram);
    const auto all_host = split_curves(a, KvDtype::bf16, w, d, *in_ram, *curves);
    ASSERT_TRUE(all_host && all_host->size() == 2);
    EXPECT_EQ(all_host->at(0).bytes.back(), 0u);
    EXPECT_EQ(all_host->at(1).bytes, model->bytes);
    // Every layer and its cache on the GPU: nothing to split.
    d.llama_cpp = {};
    const auto whole = fit(a, KvDtype::bf16, w, {}, d);
    ASSERT_TRUE(whole);
    const auto none = split_curves(a, KvDtype::bf16, w, d, *whole, *curves);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace kvscope
