// probe --step on the CPU: a whole decode step of small models, checked against float64, with the bytes it
// reads compared with the calculator's, MoE routing, scaling when only some layers fit, and refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu_formats.h"
#include "cpu_kernels.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"
#include "step_common.h"
#include "step_reference.h"

namespace kvscope::probe {
namespace {

Architecture small_dense() {
    Architecture a;
    a.name = "small dense";
    a.layers = 3;
    a.query_heads = 8;
    a.kv_heads = 2;
    a.head_dim_k = a.head_dim_v = 16;
    a.hidden_size = 128;
    a.intermediate_size = 256;
    a.vocab_size = 512;
    a.gated_mlp = true;
    a.tied_embeddings = false;
    return a;
}

StepRequest request(const Architecture& a, std::uint64_t context, std::uint64_t batch, KvDtype weights = KvDtype::bf16,
                    KvDtype cache = KvDtype::fp16) {
    StepRequest r;
    r.arch = a;
    r.kv_dtype = cache;
    r.weight_dtype = weights;
    r.workload = {context, batch, 1, false};
    r.timing_runs = 1;
    r.ceiling_bytes = 32ull << 20;  // the tests check behaviour, not bandwidth
    return r;
}

StepReport run(const StepRequest& r, std::uint64_t memory_limit = 0) {
    Control c;
    c.memory_limit_bytes = memory_limit;
    return make_backend("cpu").value()->step(r, c);
}

TEST(Step, ADenseModelMatchesFloat64AndReadsWhatTheCalculatorCounts) {
    const Architecture a = small_dense();
    // fp8_e4m3 weights as vLLM's fp8 checkpoints store them: one byte a weight (the per-tensor scale is 1 here).
    for (const KvDtype w : {KvDtype::fp32, KvDtype::bf16, KvDtype::fp16, KvDtype::fp8_e4m3}) {
        const StepReport r = run(request(a, 40, 3, w));
        ASSERT_EQ(r.status, Status::ok) << r.message;
        EXPECT_EQ(r.layers_run, 3u);
        EXPECT_FALSE(r.scaled);
        EXPECT_GT(r.step_ms, 0.0);
        EXPECT_GE(r.max_rel_error, 0.0) << "a model this small is checked";
        EXPECT_LT(r.max_rel_error, 1e-4) << to_string(w);
        // Every matrix once per step: QKV, O, gate+up, down per layer; the head; one embedding row a sequence.
        const std::uint64_t eb = w == KvDtype::fp32 ? 4 : w == KvDtype::fp8_e4m3 ? 1 : 2;
        const std::uint64_t per_layer = (8 * 16 + 2 * 2 * 16) * 128 + 128 * 8 * 16 + 2 * 256 * 128 + 128 * 256;
        EXPECT_EQ(r.weights_bytes_read, (3 * per_layer + 512 * 128 + 3 * 128) * eb);
        // The calculator's floor counts the same matrices (and the norms' few weights, not the embedding rows).
        const std::uint64_t kv = kv_cache_report(a, KvDtype::fp16, {40, 3, 1, false})->total_bytes;
        EXPECT_EQ(r.kv_bytes_read, kv);
        EXPECT_NEAR(static_cast<double>(r.predicted_bytes_read - kv), static_cast<double>(r.weights_bytes_read),
                    0.01 * static_cast<double>(r.weights_bytes_read));
        EXPECT_GT(r.predicted_step_ms, 0.0);
        EXPECT_NEAR(r.weights_ms + r.attention_ms + r.other_ms, r.step_ms, 1e-6 * r.step_ms + 1e-9);
    }
}

TEST(Step, Fp8Int8AndLlamaCppCachesAreWrittenAndReadInTheirFormat) {
    Architecture a = small_dense();
    a.head_dim_k = a.head_dim_v = 32;  // a whole block of 32 per head
    for (const KvDtype cache : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2, KvDtype::int8, KvDtype::q8_0, KvDtype::q4_0}) {
        const StepReport r = run(request(a, 40, 2, KvDtype::bf16, cache));
        ASSERT_EQ(r.status, Status::ok) << to_string(cache) << ": " << r.message;
        // The new token's K and V are quantised into the cache; the float64 check reads them back from it.
        EXPECT_LT(r.max_rel_error, 1e-4) << to_string(cache);
        EXPECT_EQ(r.kv_bytes_read, kv_cache_report(a, cache, {40, 2, 1, false})->total_bytes) << to_string(cache);
    }
}

TEST(Step, SlidingLayersAttendTheirWindowOnly) {
    Architecture a = small_dense();
    a.layer_specs = {LayerSpec{LayerKind::sliding, 16}, LayerSpec{}, LayerSpec{LayerKind::sliding, 16}};
    const StepReport r = run(request(a, 100, 2, KvDtype::bf16, KvDtype::bf16));
    ASSERT_EQ(r.status, Status::ok) << r.message;
    EXPECT_LT(r.max_rel_error, 1e-4);
    // Two sequences: 16 + 100 + 16 tokens of K and V, 2 heads of 16, bf16.
    EXPECT_EQ(r.kv_bytes_read, 2u * (16 + 100 + 16) * 2 * 2 * 16 * 2);
}

// The float64 check does not take a step's expert choice on trust: a choice that is not the router's top k
// (within the step's rounding) is replaced by the float64 top k, so the logits then differ; the weights are
// always the float64 softmax over the chosen.
TEST(Step, TheFloat64CheckRoutesByTheRoutersOwnLogits) {
    const std::vector<double> logits{1.0, 5.0, 3.0, 4.99999, -2.0};
    const step::Route wrong{{1, 2}, {0.5f, 0.5f}};
    step::Route r = step::route_checked(logits, wrong, 2, 1e-4);
    // Experts 1 and 2 are not the top two (1 and 3 are), and 3.0 is far below 4.99999: replaced.
    EXPECT_EQ(r.experts, (std::vector<std::uint64_t>{1, 3}));
    // Within rounding of the k-th: kept, with float64 weights e^(l − top) over the chosen.
    const step::Route near{{3, 1}, {0.9f, 0.1f}};
    r = step::route_checked(logits, near, 2, 1e-4);
    EXPECT_EQ(r.experts, (std::vector<std::uint64_t>{3, 1}));
    ASSERT_EQ(r.weights.size(), 2u);
    EXPECT_NEAR(r.weights[0], std::exp(4.99999 - 5.0) / (1 + std::exp(4.99999 - 5.0)), 1e-6);
    EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0, 1e-6);
    // A repeated expert or a wrong count is never kept.
    EXPECT_EQ(step::route_checked(logits, {{1, 1}, {0.5f, 0.5f}}, 2, 1e-4).experts, (std::vector<std::uint64_t>{1, 3}));
    EXPECT_EQ(step::route_checked(logits, {{1}, {1.0f}}, 2, 1e-4).experts, (std::vector<std::uint64_t>{1, 3}));
}

// The float64 check reads the new token's K and V from the cache as the step wrote them, so it also checks that
// they are float64's: a step that rotated K wrong or wrote another head's values would agree in its logits. Every
// format: a value a little off float64's (the step's rounding) passes; a row left unrotated, or another head's, not.
TEST(Step, TheFloat64CheckFindsANewKOrVRowThatIsNotFloat64s) {
    constexpr std::size_t heads = 2, dim = 64, n = heads * dim;
    std::vector<double> want(n);
    std::uint64_t s = 12345;
    for (double& v : want) {  // about ±1.7, as a projection of a normalised row gives
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v = (static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5) * 3.4;
    }
    const auto stored = [&](KvDtype kv, const std::vector<double>& values, double scale) {
        std::vector<float> f(values.size());
        for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(values[i] * scale);
        std::vector<std::byte> bytes(cpu::row_size(kv, f.size()));
        cpu::from_float(kv, f.data(), bytes.data(), f.size());
        return bytes;
    };
    std::vector<double> unrotated = want, other_head = want;
    for (std::size_t h = 0; h < heads; ++h)  // the pairs (i, i + d/2) a quarter turn back
        for (std::size_t i = 0; i < dim / 2; ++i) {
            unrotated[h * dim + i] = want[h * dim + i + dim / 2];
            unrotated[h * dim + i + dim / 2] = -want[h * dim + i];
        }
    std::rotate(other_head.begin(), other_head.begin() + dim, other_head.end());
    for (const KvDtype kv : {KvDtype::fp32, KvDtype::fp16, KvDtype::bf16, KvDtype::fp8_e4m3, KvDtype::fp8_e5m2,
                             KvDtype::int8, KvDtype::q8_0, KvDtype::q4_0}) {
        SCOPED_TRACE(to_string(kv));
        EXPECT_EQ(step::new_row_problem(kv, stored(kv, want, 1.0).data(), want.data(), n, 1e-4), "");
        // A GPU step's 16-bit GEMM inputs take its values about 1e-3 off; its slack is 1e-2.
        EXPECT_EQ(step::new_row_problem(kv, stored(kv, want, 1.002).data(), want.data(), n, 1e-2), "");
        const std::string wrong = step::new_row_problem(kv, stored(kv, unrotated, 1.0).data(), want.data(), n, 1e-2);
        EXPECT_NE(wrong.find("where float64 gives"), std::string::npos) << wrong;
        EXPECT_NE(step::new_row_problem(kv, stored(kv, other_head, 1.0).data(), want.data(), n, 1e-2), "");
    }
    // What the message says: the element, its value, float64's and float64's in the format.
    std::vector<double> one_off = want;
    one_off[70] += 0.5;
    EXPECT_EQ(step::new_row_problem(KvDtype::fp32, stored(KvDtype::fp32, one_off, 1.0).data(), want.data(), n, 1e-4)
                  .rfind("element 70 is ", 0),
              0u);
}

// The reference runs that check itself: one layer built by hand, whose cache ends in a row that is not the new
// token's K and V, is named; the same layer with float64's K (normed, projected, scaled, rotated) and V written in
// that row gives the logits.
TEST(Step, TheReferenceChecksTheRowTheStepWroteLast) {
    const step::Dims d{.hidden = 64, .q_heads = 2, .kv_heads = 1, .dk = 32, .dv = 32, .intermediate = 64, .vocab = 16};
    const KvDtype bf16 = KvDtype::bf16;
    auto weights = [&](std::uint64_t rows, std::uint64_t cols, std::uint64_t seed) {
        std::vector<std::uint16_t> w(rows * cols);
        cpu::fill_random(bf16, w.data(), w.size(), seed);
        return w;
    };
    const auto embedding = weights(d.vocab, d.hidden, 1), head = weights(d.vocab, d.hidden, 2),
               qkv = weights(d.qkv_rows(), d.hidden, 3), o = weights(d.hidden, d.q_heads * d.dv, 4),
               up = weights(2 * d.intermediate, d.hidden, 5), down = weights(d.hidden, d.intermediate, 6);
    constexpr std::uint64_t tokens = 5, token = 3;
    std::vector<std::uint16_t> k = weights(tokens, d.dk, 7), v = weights(tokens, d.dv, 8);
    step::ReferenceStep s;
    s.dims = d;
    s.embedding = embedding.data();
    s.head = head.data();
    s.layers.push_back({.qkv = qkv.data(), .o = o.data(), .up = up.data(), .down = down.data()});
    s.slots.push_back({k.data(), v.data(), tokens});
    s.tokens = {token};
    const std::string wrong = step::reference_step(s).wrong_row;
    EXPECT_NE(wrong.find("the new token's K row of layer 0, sequence 0 is not float64's: element "), std::string::npos)
        << wrong;

    // float64's new K and V: RMSNorm of the embedding row, the K and V rows of QKV over √hidden, K rotated at the
    // last position.
    std::vector<float> x(d.hidden), row(d.hidden);
    cpu::to_float(bf16, embedding.data() + token * d.hidden, x.data(), d.hidden);
    double ss = 0;
    for (const float e : x) ss += static_cast<double>(e) * e;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d.hidden) + 1e-6);
    std::vector<double> kv(d.dk + d.dv);
    for (std::uint64_t r = 0; r < kv.size(); ++r) {
        cpu::to_float(bf16, qkv.data() + (d.q_heads * d.dk + r) * d.hidden, row.data(), d.hidden);
        for (std::uint64_t i = 0; i < d.hidden; ++i) kv[r] += static_cast<double>(row[i]) * x[i] * inv;
        kv[r] /= std::sqrt(static_cast<double>(d.hidden));
    }
    for (std::uint64_t i = 0; i < d.dk / 2; ++i) {
        const double a = static_cast<double>(tokens - 1) * std::pow(10000.0, -2.0 * static_cast<double>(i) / 32.0);
        const double p = kv[i], q = kv[i + d.dk / 2];
        kv[i] = p * std::cos(a) - q * std::sin(a);
        kv[i + d.dk / 2] = p * std::sin(a) + q * std::cos(a);
    }
    const std::vector<float> kf(kv.begin(), kv.begin() + 32), vf(kv.begin() + 32, kv.end());
    cpu::from_float(bf16, kf.data(), k.data() + (tokens - 1) * d.dk, d.dk);
    cpu::from_float(bf16, vf.data(), v.data() + (tokens - 1) * d.dv, d.dv);
    const step::ReferenceResult right = step::reference_step(s);
    EXPECT_EQ(right.wrong_row, "");
    EXPECT_EQ(right.logits.size(), d.vocab);
    // V written where K belongs is not float64's either.
    cpu::from_float(bf16, vf.data(), k.data() + (tokens - 1) * d.dk, d.dk);
    EXPECT_NE(step::reference_step(s).wrong_row, "");
}

// By layers, an expert model whose layers that fit are all dense (first_k_dense) would time no expert: refused.
TEST(Step, AnExpertModelWhoseLayersThatFitAreDenseIsRefused) {
    Architecture a = small_dense();
    a.moe = MoeDims{.experts = 8, .experts_per_token = 2, .expert_intermediate_size = 64, .dense_layers = 2};
    const StepRequest r = request(a, 32, 1);
    EXPECT_NE(step::experts_not_run(r, 2).find("the first 2 of 3 layers, and they have no experts"), std::string::npos);
    EXPECT_EQ(step::experts_not_run(r, 3), "");
    EXPECT_EQ(step::experts_not_run(request(small_dense(), 32, 1), 1), "");
    const StepReport whole = run(r);
    ASSERT_EQ(whole.status, Status::ok) << whole.message;
    EXPECT_EQ(whole.experts_read, 2u);  // the one expert layer, one token: its two experts
}

TEST(Step, ExpertLayersReadTheExpertsTheBatchChose) {
    Architecture a = small_dense();
    a.moe = MoeDims{.experts = 8, .experts_per_token = 2, .expert_intermediate_size = 64, .shared_experts = 1};
    const StepReport one = run(request(a, 32, 1));
    ASSERT_EQ(one.status, Status::ok) << one.message;
    EXPECT_LT(one.max_rel_error, 1e-4);
    EXPECT_EQ(one.experts_read, 3u * 2);  // one token: its two experts on each of the three layers
    const StepReport many = run(request(a, 32, 16));
    ASSERT_EQ(many.status, Status::ok) << many.message;
    EXPECT_LT(many.max_rel_error, 1e-4);
    // Sixteen tokens choose more of the eight experts than one does, and never more than there are.
    EXPECT_GT(many.experts_read, one.experts_read);
    EXPECT_LE(many.experts_read, 3u * 8);
    EXPECT_GT(many.weights_bytes_read, one.weights_bytes_read);
}

TEST(Step, WhatDoesNotFitIsRunInPartAndScaled) {
    const Architecture a = small_dense();
    const StepReport whole = run(request(a, 64, 1));
    ASSERT_EQ(whole.status, Status::ok);
    // Room for the embedding, the head and one layer (plus the step's 64 MiB margin), not three.
    const std::uint64_t limit = (64ull << 20) + 2 * 512 * 128 * 2 + 400'000;  // a layer: 287 KB
    const StepReport part = run(request(a, 64, 1), limit);
    ASSERT_EQ(part.status, Status::ok) << part.message;
    EXPECT_EQ(part.layers_run, 1u);
    EXPECT_EQ(part.layers_total, 3u);
    EXPECT_TRUE(part.scaled);
    EXPECT_NE(part.message.find("1 of 3 layers"), std::string::npos) << part.message;
    EXPECT_EQ(part.weights_bytes_read, whole.weights_bytes_read);  // scaled to the whole model
    const StepReport none = run(request(a, 64, 1), 1 << 20);
    EXPECT_EQ(none.status, Status::out_of_memory);
    EXPECT_NE(none.message.find("one layer"), std::string::npos) << none.message;
}

TEST(Step, WhatItDoesNotRunIsRefusedInWords) {
    Architecture mla = small_dense();
    mla.mla = MlaDims{.kv_lora_rank = 64, .qk_rope_head_dim = 16, .qk_nope_head_dim = 16, .v_head_dim = 16};
    EXPECT_EQ(run(request(mla, 32, 1)).status, Status::invalid_input);
    EXPECT_NE(run(request(mla, 32, 1)).message.find("MLA"), std::string::npos);
    // A hybrid model: what it has, in words, and what measures it instead.
    Architecture hybrid = small_dense();
    hybrid.layer_specs = {LayerSpec{LayerKind::recurrent}, LayerSpec{}, LayerSpec{LayerKind::recurrent}};
    hybrid.recurrent = RecurrentState{.kind = StateKind::mamba2,
                                      .conv_kernel = 4,
                                      .conv_channels = 256,
                                      .groups = 1,
                                      .heads = 8,
                                      .head_dim = 32,
                                      .state_size = 16};
    const StepReport h = run(request(hybrid, 32, 1));
    EXPECT_EQ(h.status, Status::invalid_input);
    EXPECT_NE(h.message.find("3 layers: 2 "), std::string::npos) << h.message;
    EXPECT_NE(h.message.find("the probe allocates its cache and state"), std::string::npos) << h.message;
    const StepReport q4 = run(request(small_dense(), 32, 1, KvDtype::q4_0));
    EXPECT_EQ(q4.status, Status::invalid_input);
    EXPECT_NE(q4.message.find("weight_dtype"), std::string::npos) << q4.message;
    EXPECT_NE(q4.message.find("fp8_e4m3 weights (not q4_0)"), std::string::npos) << q4.message;
    Architecture no_vocab = small_dense();
    no_vocab.vocab_size = 0;
    EXPECT_EQ(run(request(no_vocab, 32, 1)).status, Status::invalid_input);
    // Cache formats no engine's layout makes exact here: named, with the list, and int4 with its reason.
    const StepReport int4 = run(request(small_dense(), 32, 1, KvDtype::bf16, KvDtype::int4));
    EXPECT_EQ(int4.status, Status::invalid_input);
    EXPECT_NE(int4.message.find("kv_dtype"), std::string::npos) << int4.message;
    EXPECT_NE(int4.message.find("keep scales beside the values"), std::string::npos) << int4.message;
    const StepReport mx = run(request(small_dense(), 32, 1, KvDtype::bf16, KvDtype::mxfp4));
    EXPECT_EQ(mx.status, Status::invalid_input);
    EXPECT_NE(mx.message.find("q8_0 or q4_0 (not mxfp4)"), std::string::npos) << mx.message;
}

TEST(Step, AWeightFormatTheDeviceRefusesIsRunInBf16Instead) {
    // What the Probe tab runs next when a GPU cannot multiply fp8 weights: the same step in bf16; nothing for
    // any other failure, or for bf16 weights already.
    const StepRequest fp8 = request(small_dense(), 32, 1, KvDtype::fp8_e4m3);
    StepReport refused;
    refused.status = Status::invalid_input;
    refused.weight_dtype_refused = true;
    const auto again = with_bf16_weights_if_refused(fp8, refused);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->weight_dtype, KvDtype::bf16);
    EXPECT_EQ(again->kv_dtype, fp8.kv_dtype);
    EXPECT_EQ(again->workload.context_tokens, 32u);
    StepReport other = refused;
    other.weight_dtype_refused = false;
    EXPECT_FALSE(with_bf16_weights_if_refused(fp8, other).has_value());
    EXPECT_FALSE(with_bf16_weights_if_refused(request(small_dense(), 32, 1, KvDtype::bf16), refused).has_value());
    // The CPU step multiplies fp8 itself, so it never asks for this.
    const StepReport cpu = run(fp8);
    EXPECT_EQ(cpu.status, Status::ok) << cpu.message;
    EXPECT_FALSE(cpu.weight_dtype_refused);
}

}  // namespace
}  // namespace kvscope::probe
