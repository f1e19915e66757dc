#include <algorithm>
#include <cmath>
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/engine_reserve.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/parameters.h"
#include "testing.h"

namespace kvscope {
namespace {

Deployment h100s(std::uint64_t count) {
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = count;
    d.engine = Engine::vllm;
    d.fraction = 0.90;
    d.weight_dtype = KvDtype::bf16;
    d.fixed_reserve = true;  // the worked examples below subtract the fixed 1 GiB + 512 MiB (--reserve/--overhead)
    return d;
}

// vLLM does not start with fewer tokens a step than sequences (vllm/config/scheduler.py): the fit says so, naming the
// setting given and the default beside it, rather than a budget for a server that never runs.
TEST(Fit, VllmRefusesFewerTokensAStepThanSequences) {
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const Workload w{.context_tokens = 8192, .batch = 4};
    Deployment d = h100s(1);
    d.vllm.max_num_batched_tokens = 512;  // an H100's default is 1,024 sequences
    auto f = fit(a, KvDtype::bf16, w, {}, d);
    ASSERT_FALSE(f.ok());
    EXPECT_TRUE(testing::has_error(f.errors(), "max_num_batched_tokens",
                                   "a step's tokens (max_num_batched_tokens 512) are fewer than its sequences "
                                   "(max_num_seqs 1,024, vLLM's default here)"))
        << f.error_text();
    d.vllm.max_num_seqs = 512;  // equal is allowed
    EXPECT_TRUE(fit(a, KvDtype::bf16, w, {}, d).ok());
    // More sequences than the default 8,192 tokens: the sequences are the setting named.
    d.vllm = {.max_num_seqs = 10000};
    f = fit(a, KvDtype::bf16, w, {}, d);
    ASSERT_FALSE(f.ok());
    EXPECT_TRUE(testing::has_error(f.errors(), "max_num_seqs", "(max_num_batched_tokens 8,192, vLLM's default here)"))
        << f.error_text();
    // Another engine does not read vLLM's settings.
    d.engine = Engine::sglang;
    EXPECT_TRUE(fit(a, KvDtype::bf16, w, {}, d).ok());
}

// vLLM's own reserve, derived from its profile run's inputs (deployment.cpp vllm_reserve), worked by hand.
TEST(Fit, VllmsReserveIsItsProfileRunsPeakNamedPartByPart) {
    const auto& a = Catalog::builtin().find_model("llama-3-70b")->model.arch;
    const Workload w{.context_tokens = 32768, .batch = 16};
    Deployment d = h100s(2);
    d.fixed_reserve = false;
    auto f = fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    // An H100 (80 GB, not an A100) under vLLM 0.20: 8,192 tokens and 1,024 sequences a step. The forward pass:
    // 8,192 x (3 x 8,192 + 3 x 28,672 / 2) x 2 bytes = 1,107,296,256; the sampler: 1,024 x 128,256 x 20 bytes =
    // 2,626,682,880, the larger; non-torch 150 MiB; no CUDA graphs before 0.21.
    ASSERT_EQ(f->reserve_items.size(), 2u);
    EXPECT_EQ(f->reserve_items[0].name, "profile peak");
    EXPECT_EQ(f->reserve_items[0].bytes, 2'626'682'880u);
    EXPECT_NE(f->reserve_items[0].how.find(
                  "8,192 tokens (max_num_batched_tokens, vLLM 0.20's default for this GPU), 1,024 sequences "
                  "sampled"),
              std::string::npos)
        << f->reserve_items[0].how;
    EXPECT_EQ(f->reserve_items[1].bytes, 157'286'400u);
    EXPECT_EQ(f->reserve_bytes_per_gpu, 2'626'682'880u + 157'286'400u);
    EXPECT_EQ(f->kv_budget_bytes_per_gpu, 76'968'728'985ll - 70'553'706'496ll - 2'783'969'280ll);
    EXPECT_EQ(reserve_text(*f), "profile peak 2.45 GiB, non-torch memory 150 MiB");
    EXPECT_TRUE(f->reserve_estimated);

    // Fewer sequences a step: the sampler shrinks and the forward pass is the peak.
    d.vllm.max_num_seqs = 256;
    f = fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, d);
    EXPECT_EQ(f->reserve_items[0].bytes, 1'107'296'256u);
    // 0.21 subtracts CUDA graphs (512 MiB over TP 2) unless eager; an A100 gets 2,048 tokens and 256 sequences.
    d.vllm = {.version_minor = 21};
    f = fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, d);
    ASSERT_EQ(f->reserve_items.size(), 3u);
    EXPECT_EQ(f->reserve_items[2].name, "CUDA graphs");
    EXPECT_EQ(f->reserve_items[2].bytes, 256u << 20);
    d.vllm.enforce_eager = true;
    EXPECT_EQ(fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, d)->reserve_items.size(), 2u);
    d.gpu = *Catalog::builtin().find_gpu("a100-80gb");
    const VllmBatch b = vllm_batch(w, d);
    EXPECT_EQ(b.max_num_batched_tokens, 2048u);
    EXPECT_EQ(b.max_num_seqs, 256u);
    EXPECT_TRUE(b.tokens_default && b.seqs_default);
    // The V0 engine (0.7 and before) takes a whole prompt a step up to 32,768 tokens of context, 2,048 above.
    d.vllm.version_minor = 7;
    EXPECT_EQ(vllm_batch({.context_tokens = 20000}, d).max_num_batched_tokens, 20000u);
    EXPECT_EQ(vllm_batch({.context_tokens = 40000}, d).max_num_batched_tokens, 2048u);
    // --reserve fixes it instead, as for the other engines.
    d.fixed_reserve = true;
    f = fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, d);
    EXPECT_EQ(f->reserve_bytes_per_gpu, (1ull << 30) + (1ull << 29));
    EXPECT_EQ(reserve_text(*f), "activation reserve 1.00 GiB, runtime overhead 512 MiB");
    EXPECT_FALSE(f->reserve_estimated);
    // A version outside the rules (a scenario file's) is named.
    d.vllm.version_minor = 3;
    const auto old = fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, d);
    ASSERT_FALSE(old.ok());
    EXPECT_EQ(old.errors().front().input, Field::vllm_version);
}

// Llama-3-70B, bf16 weights, fp8 cache, 32k context, 16 sequences, vLLM on 2 x H100 SXM (TP 2).
TEST(Fit, TheModelsOwnMtpLayersCountWhenTheyServeAsADraft) {
    // DeepSeek-V3 carries one MTP layer (num_nextn_predict_layers: 1): a full decoder layer with experts and an MLA
    // cache of its own, plus eh_proj (2 x 7,168 -> 7,168) and two norms.
    const Architecture a = Catalog::builtin().find_model("deepseek-v3")->model.arch;
    ASSERT_EQ(a.mtp_layers, 1u);
    const Architecture served = with_mtp_layers(a);
    EXPECT_EQ(served.layers, a.layers + 1);
    Architecture shape = a;
    shape.params_total = shape.params_active = 0;
    Architecture shape_served = with_mtp_layers(shape);
    const std::uint64_t layer = estimate_parameters(shape_served).total - estimate_parameters(shape).total;
    EXPECT_EQ(parameters(served).total, parameters(a).total + layer + 2ull * 7168 * 7168 + 2 * 7168);
    EXPECT_GT(layer, 11'000'000'000u);  // 256 experts of 3 x 7,168 x 2,048 and the attention
    EXPECT_LT(layer, 12'000'000'000u);
    const Workload w{.context_tokens = 32768, .batch = 8, .block_size = 16};
    Deployment d = h100s(8);
    d.gpu.memory_bytes = 141ull << 30;
    d.weight_dtype = KvDtype::fp8_e4m3;
    const auto plain = fit(a, KvDtype::bf16, w, {.tp = 8}, d);
    ASSERT_TRUE(plain.ok()) << plain.error_text();
    d.mtp = true;
    const auto mtp = fit(a, KvDtype::bf16, w, {.tp = 8}, d);
    ASSERT_TRUE(mtp.ok()) << mtp.error_text();
    // One latent cache more of 62 layers against 61; the layer's weights in fp8, a byte each.
    EXPECT_EQ(mtp->kv_bytes_per_gpu * 61, plain->kv_bytes_per_gpu * 62);
    EXPECT_EQ(mtp->weights_bytes - plain->weights_bytes, parameters(served).total - parameters(a).total);
    EXPECT_LT(mtp->max_batch, plain->max_batch);
    // A model without MTP layers has none to serve: said in a note, nothing counted (the rest of the fit stands).
    const Architecture llama = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const auto none = fit(llama, KvDtype::bf16, w, {.tp = 8}, d);
    ASSERT_TRUE(none.ok()) << none.error_text();
    d.mtp = false;
    EXPECT_EQ(none->kv_bytes_per_gpu, fit(llama, KvDtype::bf16, w, {.tp = 8}, d)->kv_bytes_per_gpu);
    EXPECT_TRUE(std::any_of(none->notes.begin(), none->notes.end(), [](const std::string& n) {
        return n.starts_with("--mtp: the model has no multi-token-prediction layers");
    }));
}

TEST(Fit, WorkedExampleLlama3_70bOnTwoH100) {
    const auto& a = Catalog::builtin().find_model("llama-3-70b")->model.arch;
    const Workload w{.context_tokens = 32768, .batch = 16};
    auto f = fit(a, KvDtype::fp8_e4m3, w, {.tp = 2}, h100s(2));
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->weights_bytes, 70'553'706'496ull * 2);
    EXPECT_EQ(f->weights_bytes_per_gpu, 70'553'706'496ull);
    // 85,520,809,984 x 0.9 = 76,968,728,985 (rounded down) - weights - 1 GiB - 512 MiB
    EXPECT_EQ(f->kv_budget_bytes_per_gpu, 76'968'728'985ll - 70'553'706'496ll - 1'073'741'824ll - 536'870'912ll);
    EXPECT_EQ(f->kv_budget_bytes_per_gpu, 4'804'409'753ll);
    // 4 KV heads per GPU x 128 x 2 (K,V) x 1 byte x 80 layers = 81,920 bytes per token per GPU
    EXPECT_EQ(f->kv_bytes_per_gpu, 81'920ull * 32768 * 16);
    EXPECT_FALSE(f->fits);
    EXPECT_EQ(f->headroom_bytes_per_gpu, 4'804'409'753ll - 42'949'672'960ll);
    EXPECT_EQ(f->max_batch, 1u);             // 4,804,409,753 / (81,920 x 32,768)
    EXPECT_EQ(f->max_context, 3665u);        // 4,804,409,753 / (81,920 x 16)
    EXPECT_EQ(f->tokens_capacity, 58'647u);  // 4,804,409,753 / 81,920
    EXPECT_FALSE(f->max_context_limited_by_model);

    auto d = decode_estimate(a, KvDtype::fp8_e4m3, w, {.tp = 2}, h100s(2));
    ASSERT_TRUE(d.ok()) << d.error_text();
    // Active weights minus the input embedding table (128,256 x 8,192), bf16, split over 2 GPUs.
    EXPECT_EQ(d->weight_bytes_read_per_gpu, (70'553'706'496ull - 1'050'673'152ull) * 2 / 2);
    EXPECT_EQ(d->kv_bytes_read_per_gpu, 42'949'672'960ull);
    EXPECT_NEAR(d->step_time_floor_s, (69'503'033'344.0 + 42'949'672'960.0) / 3.35e12, 1e-12);
    EXPECT_NEAR(d->tokens_per_s_total, 16.0 / d->step_time_floor_s, 1e-9);
}

TEST(Fit, FitsWhenTheBudgetCoversTheCache) {
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    auto f = fit(a, KvDtype::bf16, {.context_tokens = 8192, .batch = 8}, {}, h100s(1));
    ASSERT_TRUE(f.ok());
    EXPECT_TRUE(f->fits);
    EXPECT_GT(f->headroom_bytes_per_gpu, 0);
    EXPECT_GE(f->max_batch, 8u);
    // Max context at batch 8 reaches the model's 8192 limit: memory would allow more.
    EXPECT_EQ(f->max_context, 8192u);
    EXPECT_TRUE(f->max_context_limited_by_model);
}

TEST(Fit, EngineRules) {
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const std::int64_t mem = 85'520'809'984, w = 16'060'522'496, act = 1ll << 30, oh = 1ll << 29;
    auto budget = [&](Engine e, double fraction) {
        Deployment d = h100s(1);
        d.engine = e;
        d.fraction = fraction;
        d.fraction_given = true;
        return fit(a, KvDtype::bf16, {}, {}, d)->kv_budget_bytes_per_gpu;
    };
    // SGLang's fraction applies to what is free before the weights load (the GPU less 1 GiB in use); the fixed
    // reserve is kept back beside it.
    EXPECT_EQ(budget(Engine::sglang, 0.88), (mem - (1ll << 30)) * 88 / 100 - w - act);
    // TensorRT-LLM's fraction applies to what is free once the weights and the reserve (fixed here) are in.
    EXPECT_EQ(budget(Engine::tensorrt_llm, 0.9), (mem - w - act - oh) * 9 / 10);
    EXPECT_EQ(budget(Engine::plain, 1.0), mem - w - act - oh);
    // llama.cpp keeps the token embedding (128,256 x 4,096 bf16) in host memory (src/llama-model.cpp: the input
    // layer stays on the CPU): the GPU holds the rest of the weights.
    EXPECT_EQ(budget(Engine::llama_cpp, 1.0), mem - (w - 128'256ll * 4096 * 2) - act - oh);
}

TEST(Fit, SglangTakesAnOverheadAndAReserveGivenAsAsked) {
    // --overhead is what is in use before the weights load; --reserve is kept back beside SGLang's own fraction.
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    const std::int64_t mem = 85'520'809'984, w = 16'060'522'496;
    Deployment d = h100s(1);
    d.engine = Engine::sglang;
    d.fraction = 0.88;
    d.fraction_given = true;
    d.fixed_reserve = false;
    EXPECT_EQ(fit(a, KvDtype::bf16, {}, {}, d)->kv_budget_bytes_per_gpu, (mem - (1ll << 30)) * 88 / 100 - w);
    d.runtime_overhead_bytes = 2ull << 30;
    d.overhead_given = true;
    auto f = fit(a, KvDtype::bf16, {}, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->kv_budget_bytes_per_gpu, (mem - (2ll << 30)) * 88 / 100 - w);
    EXPECT_EQ(f->reserve_items.front().how, "as given (--overhead)");
    d.activation_reserve_bytes = 1ull << 30;
    d.fixed_reserve = true;
    f = fit(a, KvDtype::bf16, {}, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_EQ(f->kv_budget_bytes_per_gpu, (mem - (2ll << 30)) * 88 / 100 - w - (1ll << 30));
    EXPECT_EQ(f->reserve_bytes_per_gpu, 3ull << 30);
}

TEST(Fit, SglangsDefaultFractionIsItsOwnForTheGpuAndLayout) {
    // server_args.py _handle_gpu_memory_settings (v0.5.3 on), worked by hand: an H100 (81,559 MiB) keeps back
    // 512 + 1.5 x 8,192 + 2 x 256 + 1/8 x 1,024 = 13,440 MiB -> 0.835; an H200 (143,771 MiB) the same -> 0.907; an RTX
    // 4090 (24,564 MiB) 512 + 1.5 x 2,048 + 2 x 24 + 128 = 3,760 -> 0.847; eight H100s 512 + 12,288 + 1,024 + 1,024 ->
    // 0.818. The 0.835 and 0.907 are the values SGLang's own documentation builds print for these GPUs.
    const Catalog& c = Catalog::builtin();
    const auto fraction = [&](const char* gpu, std::uint64_t tp, bool mtp = false) {
        Deployment d;
        d.gpu = *c.find_gpu(gpu);
        d.engine = Engine::sglang;
        d.mtp = mtp;
        return sglang_default_fraction(d, {.tp = tp}).fraction;
    };
    EXPECT_DOUBLE_EQ(fraction("h100-sxm", 1), 0.835);
    EXPECT_DOUBLE_EQ(fraction("h200", 1), 0.907);
    EXPECT_DOUBLE_EQ(fraction("rtx-4090", 1), 0.847);
    EXPECT_DOUBLE_EQ(fraction("h100-sxm", 8), 0.818);
    EXPECT_DOUBLE_EQ(fraction("h100-sxm", 1, true), 0.810);  // 2 GiB more for a speculative draft
    // An exact half rounds as Python's round() does, to even: an A100 80GB at TP 4 x PP 3 keeps 15,360 of 81,920 MiB,
    // 0.8125 -> 0.812.
    const auto layout = [&](std::uint64_t tp, std::uint64_t pp) {
        Deployment d;
        d.gpu = *c.find_gpu("a100-80gb");
        d.engine = Engine::sglang;
        return sglang_default_fraction(d, {.tp = tp, .pp = pp}).fraction;
    };
    EXPECT_DOUBLE_EQ(layout(4, 3), 0.812);
    // A chunked prefill given (--chunked-prefill-size, KVScope's --max-num-batched-tokens) takes the place of the
    // GPU's: an H100 at 32,768 keeps back 512 + 49,152 + 512 + 128 = 50,304 of 81,559 MiB -> 0.383, and the scheduler
    // chunks prompts by it. Where what it keeps back is the whole GPU (an RTX 4090 at 32,768: 49,840 of 24,564 MiB)
    // SGLang does not start, and the deployment is refused, naming the setting.
    Deployment chunked;
    chunked.gpu = *c.find_gpu("h100-sxm");
    chunked.engine = Engine::sglang;
    chunked.vllm.max_num_batched_tokens = 32768;
    const SglangDefault given = sglang_default_fraction(chunked, {});
    EXPECT_TRUE(given.chunked_prefill_given);
    EXPECT_EQ(given.reserved_mib, 50'304u);
    EXPECT_DOUBLE_EQ(given.fraction, 0.383);
    EXPECT_TRUE(validate(chunked, {}).empty());
    chunked.gpu = *c.find_gpu("rtx-4090");
    const Errors refused = validate(chunked, {});
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(refused.front().input, Field::max_num_batched_tokens);
    EXPECT_NE(refused.front().message.find("SGLang does not start"), std::string::npos) << refused.front().message;
    chunked.fraction_given = true;  // a fraction given: SGLang's own is not computed
    EXPECT_TRUE(validate(chunked, {}).empty());
    // With no chunk given, what keeps it back is the layout and the draft: a T4 (15,360 MiB) at TP 8 x PP 8 keeps
    // 512 + 3,072 + 160 + 8,192 + 6,144 for a draft model. The reason names the memory fraction, and the advice what
    // would lower it, not a chunk already at SGLang's floor.
    Deployment wide;
    wide.gpu = *c.find_gpu("t4");
    wide.engine = Engine::sglang;
    wide.gpu_count = 64;
    wide.draft = DraftModel{.name = "llama-3.2-1b", .arch = c.find_model("llama-3.2-1b")->model.arch};
    const Errors layout_refused = validate(wide, {.tp = 8, .pp = 8});
    ASSERT_EQ(layout_refused.size(), 1u);
    EXPECT_EQ(layout_refused.front().input, Field::utilization);
    const std::string& why = layout_refused.front().message;
    EXPECT_NE(why.find("fewer GPUs a replica (TP x PP), no speculative draft or a memory fraction of your own"),
              std::string::npos)
        << why;
    EXPECT_EQ(why.find("chunked prefill (--max-num-batched-tokens)"), std::string::npos) << why;
    // A chunk given under SGLang's 2,048 floor is counted at the floor, and the terms say so.
    chunked.fraction_given = false;
    chunked.vllm.max_num_batched_tokens = 512;
    EXPECT_NE(sglang_reserved_terms(sglang_default_fraction(chunked, {}))
                  .find("1.5 x max(chunked prefill 512 (given), 2,048)"),
              std::string::npos);
    // The fit applies it until a fraction is given, and says so.
    const auto& a = c.find_model("llama-3-8b")->model.arch;
    Deployment d;
    d.gpu = *c.find_gpu("h100-sxm");
    d.engine = Engine::sglang;
    d.fraction = default_fraction(Engine::sglang);
    const auto f = fit(a, KvDtype::bf16, {}, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    EXPECT_DOUBLE_EQ(f->fraction, 0.835);
    const std::int64_t before = 85'520'809'984 - (1ll << 30);
    EXPECT_EQ(f->kv_budget_bytes_per_gpu, before * 835 / 1000 - 16'060'522'496);
    d.fraction_given = true;
    EXPECT_DOUBLE_EQ(fit(a, KvDtype::bf16, {}, {}, d)->fraction, 0.88);
}

// SGLang's KV pool against its published startup logs: the pool is what was free after loading less the free memory
// before loading times (1 - mem_fraction_static) (model_runner profile_max_num_token), each figure logged.
TEST(Fit, SglangsPoolMatchesItsPublishedLogs) {
    struct SglangLog {
        const char* source;
        double weights_gib;  // "mem usage" at "Load weight end"
        double fraction;
        double pool_gib;  // K size + V size of "KV Cache is allocated"
    };
    // Llama 3.1 8B on an 80 GB GPU (an H100's 81,559 MiB: what was free before loading, 78.81 and 78.59 GiB, is that
    // less 0.84 and 1.06 GiB).
    const SglangLog logs[] = {
        {"docs.sglang.ai send_request (2025-01-23)", 78.81 - 63.72, 0.88, 2 * 27.13},
        {"sglang PR#4760 (2025-03-25)", 15.11, 0.88, 2 * 27.02},
    };
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    for (const SglangLog& log : logs) {
        Deployment d;
        d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
        d.engine = Engine::sglang;
        d.fraction = log.fraction;
        d.fraction_given = true;
        d.weights_bytes_exact = static_cast<std::uint64_t>(std::llround(log.weights_gib * (1ull << 30)));
        const auto f = fit(a, KvDtype::bf16, {}, {}, d);
        ASSERT_TRUE(f.ok()) << f.error_text();
        const double pool = static_cast<double>(f->kv_budget_bytes_per_gpu) / (1ull << 30);
        EXPECT_NEAR(pool, log.pool_gib, 0.01 * log.pool_gib) << log.source;
    }
}

TEST(Fit, WeightsAloneTooBigGiveANegativeBudgetAndANote) {
    const auto& a = Catalog::builtin().find_model("llama-3.1-405b")->model.arch;
    auto f = fit(a, KvDtype::bf16, {}, {}, h100s(1));
    ASSERT_TRUE(f.ok());
    EXPECT_FALSE(f->fits);
    EXPECT_LT(f->kv_budget_bytes_per_gpu, 0);
    EXPECT_EQ(f->max_batch, 0u);
    EXPECT_EQ(f->max_context, 0u);
    EXPECT_FALSE(f->notes.empty());
}

TEST(Fit, GpuCountMustMatchTheParallelLayout) {
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    EXPECT_FIELD_ERROR(fit(a, KvDtype::bf16, {}, {.tp = 2}, h100s(4)), "gpus", "tensor parallel 2");
    Deployment bad = h100s(1);
    bad.fraction = 1.5;
    EXPECT_FIELD_ERROR(fit(a, KvDtype::bf16, {}, {}, bad), "utilization", "at most 1");
}

TEST(Decode, CacheOutgrowsWeightsAtTheRightContext) {
    // Llama 3 8B bf16: weights 16,060,522,496 bytes, 131,072 KV bytes per token.
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    auto d = decode_estimate(a, KvDtype::bf16, {.context_tokens = 1024}, {}, h100s(1));
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d->kv_exceeds_weights_at_tokens.has_value());
    EXPECT_EQ(*d->kv_exceeds_weights_at_tokens, 122'533u);  // 122,533 x 131,072 > 16,060,522,496 > 122,532 x 131,072
    // Mistral's windows cap the cache far below its weights: never.
    const auto& m = Catalog::builtin().find_model("mistral-7b-v0.1")->model.arch;
    auto dm = decode_estimate(m, KvDtype::bf16, {.context_tokens = 1024}, {}, h100s(1));
    EXPECT_FALSE(dm->kv_exceeds_weights_at_tokens.has_value());
}

TEST(Decode, FlopsWithAndWithoutTheCacheMatchTheSumsTheyStandFor) {
    // A sliding-window model, so the closed forms are checked on both sides of the window.
    Architecture a = testing::make_arch(4, 8, 2, 16);
    a.layer_specs = sliding_layers({50, 0, 50, 0});
    a.params_total = 100'000'000;
    Deployment d = h100s(1);
    const std::uint64_t n = 120;
    auto est = decode_estimate(a, KvDtype::fp16, {.context_tokens = n}, {}, d);
    ASSERT_TRUE(est.ok());
    const double two_p = 2.0 * (100'000'000.0 - static_cast<double>(estimate_parameters(a).embedding));
    double cached_sum = 0, uncached_at_n = 0, uncached_sum = 0;
    for (std::uint64_t t = 1; t <= n; ++t) {
        const double cached_t = two_p + attention_flops(a, {}, t);
        cached_sum += cached_t;
        double prefix = 0;
        for (std::uint64_t i = 1; i <= t; ++i) prefix += attention_flops(a, {}, i);
        const double uncached_t = two_p * static_cast<double>(t) + prefix;
        uncached_sum += uncached_t;
        if (t == n) uncached_at_n = uncached_t;
    }
    EXPECT_NEAR(est->flops_per_token_cached, two_p + attention_flops(a, {}, n), 1e-6);
    EXPECT_NEAR(est->flops_per_token_uncached, uncached_at_n, 1e-3);
    EXPECT_NEAR(est->cumulative_flops_cached, cached_sum, 1e-3);
    EXPECT_NEAR(est->cumulative_flops_uncached, uncached_sum, 1e-1);
    // Recomputing grows with n(n+1)/2: far more work than with the cache.
    EXPECT_GT(est->cumulative_flops_uncached, 50 * est->cumulative_flops_cached);
}

TEST(Curves, LogSpacedSeriesForEveryVariantUpToMaxPositions) {
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    auto c = kv_curves(a, KvDtype::bf16, {.context_tokens = 8192}, {}, {.points = 512});
    ASSERT_TRUE(c.ok()) << c.error_text();
    EXPECT_EQ(c->tokens.front(), 1u);
    EXPECT_EQ(c->tokens.back(), 8192u);
    EXPECT_GT(c->tokens.size(), 300u);  // 512 log steps from 1: repeats at the low end are dropped
    ASSERT_EQ(c->series.size(), 3u);    // MHA, GQA-8 (its own), MQA
    EXPECT_TRUE(c->series[1].is_model);
    EXPECT_EQ(c->series[1].bytes.back(), 131072ull * 8192);
    EXPECT_EQ(c->series[0].bytes.back(), 4 * c->series[1].bytes.back());
    for (std::size_t i = 1; i < c->tokens.size(); ++i) EXPECT_LT(c->tokens[i - 1], c->tokens[i]);

    auto huge = kv_curves(a, KvDtype::bf16, {}, {}, {.max_tokens = 100'000'000'000'000'000ull});
    EXPECT_FIELD_ERROR(huge, "max_tokens", "the curve's end at 100,000,000,000,000,000 tokens");
    // An end of the caller's own choosing is lowered instead: to the last count whose GQA-8 cache (128 KiB a token)
    // fits in 64 bits, 2^64 / 2^17 - 1 tokens, and the end asked for is kept to be said.
    auto lowered =
        kv_curves(a, KvDtype::bf16, {}, {}, {.max_tokens = 100'000'000'000'000'000ull, .lower_end_to_fit = true});
    ASSERT_TRUE(lowered) << lowered.error_text();
    EXPECT_EQ(lowered->tokens.back(), (1ull << 47) - 1);
    EXPECT_EQ(lowered->lowered_from, 100'000'000'000'000'000ull);
    ASSERT_EQ(lowered->series.size(), 2u);  // MHA passes 2^64 bytes before that end: left out
    EXPECT_EQ(lowered->series[0].name, "GQA-8");
    EXPECT_EQ(lowered->series[0].bytes.back(), ((1ull << 47) - 1) << 17);
    auto within = kv_curves(a, KvDtype::bf16, {}, {}, {.max_tokens = 8192, .lower_end_to_fit = true});
    ASSERT_TRUE(within);
    EXPECT_EQ(within->lowered_from, 0u);
    EXPECT_EQ(within->tokens.back(), 8192u);

    auto lin = spaced_tokens({.points = 5, .min_tokens = 0, .max_tokens = 1000, .spacing = Spacing::linear});
    EXPECT_EQ(lin, (std::vector<std::uint64_t>{1, 251, 501, 750, 1000}));
}

TEST(Variants, MlaModelsShowAllFourAndTheirOwnIsMla) {
    const auto& a = Catalog::builtin().find_model("deepseek-v3")->model.arch;
    auto v = compare_variants(a, KvDtype::bf16, {.context_tokens = 1000});
    ASSERT_TRUE(v.ok());
    ASSERT_EQ(v->size(), 4u);
    EXPECT_EQ((*v)[3].name, "MLA");
    EXPECT_TRUE((*v)[3].is_model);
    // MHA of the same model: 128 heads x (192 + 128) dims x 2 bytes x 61 layers per token.
    EXPECT_EQ((*v)[0].bytes_per_token, 128ull * 320 * 2 * 61);
    // Falcon's 71 heads have no GQA grouping: MHA and MQA only.
    auto f = compare_variants(Catalog::builtin().find_model("falcon-7b")->model.arch, KvDtype::bf16, {});
    ASSERT_EQ(f->size(), 2u);
    EXPECT_TRUE((*f)[1].is_model);
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

// llama.cpp keeps one contiguous cache: every figure, the decode estimate's included, ignores
// a paged block size.
TEST(Decode, LlamaCppIgnoresTheBlockSizeEverywhere) {
    const auto& a = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.engine = Engine::llama_cpp;
    d.fraction = 1.0;
    auto paged = decode_estimate(a, KvDtype::bf16, {.context_tokens = 1024, .block_size = 100'000}, {}, d);
    auto contiguous = decode_estimate(a, KvDtype::bf16, {.context_tokens = 1024, .block_size = 1}, {}, d);
    ASSERT_TRUE(paged.ok() && contiguous.ok());
    EXPECT_EQ(paged->kv_bytes_read_per_gpu, contiguous->kv_bytes_read_per_gpu);
    EXPECT_EQ(paged->kv_exceeds_weights_at_tokens, contiguous->kv_exceeds_weights_at_tokens);
    // The GPU's weights (the token embedding stays in host memory) over 131,072 bytes a token.
    EXPECT_EQ(*contiguous->kv_exceeds_weights_at_tokens, (16'060'522'496u - 128'256u * 4096 * 2) / 131'072 + 1);
}

}  // namespace
}  // namespace kvscope

namespace kvscope {
namespace {

TEST(FitLlamaCpp, SlidingLayersKeepTheirWindowAndAMicroBatchPaddedTo256) {
    // gpt-oss-20b: 12 sliding layers of 128 tokens, 12 full; 8 KV heads of 64, fp16.
    const Architecture& a = Catalog::builtin().find_model("gpt-oss-20b")->model.arch;
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("rtx-4090");
    d.engine = Engine::llama_cpp;
    d.fraction = 1.0;
    Workload w;
    w.context_tokens = 32768;
    const auto f = fit(a, KvDtype::fp16, w, {}, d);
    ASSERT_TRUE(f.ok()) << f.error_text();
    const std::uint64_t per_token_layer = 2ull * 8 * 64 * 2;
    // llama.cpp: min(n_ctx, PAD(128 + 512, 256)) = 768 tokens on each sliding layer.
    EXPECT_EQ(f->kv_bytes_per_gpu, 12 * per_token_layer * 32768 + 12 * per_token_layer * 768);
    EXPECT_NE(testing::join(f->notes).find("768 for a window of 128"), std::string::npos) << testing::join(f->notes);
    // vLLM keeps the window.
    d.engine = Engine::vllm;
    d.fraction = 0.9;
    EXPECT_EQ(fit(a, KvDtype::fp16, w, {}, d)->kv_bytes_per_gpu,
              12 * per_token_layer * 32768 + 12 * per_token_layer * 128);
    // A context shorter than the padded window keeps the context.
    d.engine = Engine::llama_cpp;
    w.context_tokens = 600;
    EXPECT_EQ(fit(a, KvDtype::fp16, w, {}, d)->kv_bytes_per_gpu, 24 * per_token_layer * 600);
}

}  // namespace
}  // namespace kvscope
