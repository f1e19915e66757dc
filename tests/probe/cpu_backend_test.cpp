// The CPU backend, everywhere: sizes equal predictions, attention matches float64,
// runs can be cancelled, and too-large caches are refused with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cpu_formats.h"
#include "cpu_kernels.h"
#include "host_memory.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"

// Whether AddressSanitizer is on: gcc says so with __SANITIZE_ADDRESS__, clang (the asan preset's compiler) with
// __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define KVSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVSCOPE_ASAN 1
#endif
#endif
#ifndef KVSCOPE_ASAN
#define KVSCOPE_ASAN 0
#endif

namespace kvscope::probe {
namespace {

ProbeRequest request_for(const std::string& model, std::uint64_t context, KvDtype dtype, std::uint64_t batch = 1,
                         std::uint64_t block = 1) {
    ProbeRequest r;
    r.arch = Catalog::builtin().find_model(model)->model.arch;
    r.dtype = dtype;
    r.workload = {context, batch, block, false};
    r.timing_runs = 2;
    r.ceiling_bytes = 32ull << 20;  // the tests check behaviour, not bandwidth
    return r;
}

std::unique_ptr<Backend> cpu() { return std::move(make_backend("cpu").value()); }

TEST(KvTensors, SumToTheCalculatorsPredictionForEveryCatalogModel) {
    for (const auto& m : Catalog::builtin().models()) {
        ProbeRequest r = request_for(m.id, 4096, KvDtype::bf16, 2, 16);
        // The attention timing uses one head layout for every layer: a model whose layers have heads of their own
        // (MiMo-V2-Flash's sliding layers) is refused, with that reason, before anything is allocated.
        const auto& specs = m.model.arch.layer_specs;
        if (std::any_of(specs.begin(), specs.end(), [](const LayerSpec& l) {
                return l.caches_kv() && (l.kv_heads > 0 || l.head_dim_k > 0 || l.head_dim_v > 0);
            })) {
            EXPECT_NE(
                kv_tensors(r).error_text().find("this model's layers have KV heads or head dimensions of their own"),
                std::string::npos)
                << m.id;
            continue;
        }
        auto tensors = kv_tensors(r);
        ASSERT_TRUE(tensors.ok()) << m.id << ": " << tensors.error_text();
        std::uint64_t kv = 0, state = 0;
        for (const KvTensor& t : *tensors) (t.is_state ? state : kv) += t.bytes;
        const auto report = kv_cache_report(r.arch, r.dtype, r.workload, {});
        EXPECT_EQ(kv, report->total_bytes) << m.id;
        EXPECT_EQ(state, report->state_bytes) << m.id;
        // K and V per caching layer per sequence (one latent for MLA, and DeepSeek-V3.2's indexer keys beside
        // it); a conv and an SSM state (where the kind has them) per recurrent layer per sequence.
        const Architecture& a = m.model.arch;
        // (GLM-5.2: no indexer key on the layers that skip it).
        std::uint64_t kv_tensors_per_sequence = 0;
        for (std::uint64_t l = 0; l < a.layers; ++l)
            if (a.layer(l).caches_kv())
                kv_tensors_per_sequence +=
                    a.mla ? 1 + (a.mla->indexer_head_dim > 0 && !a.layer(l).no_indexer ? 1 : 0) : 2;
        const std::uint64_t state_tensors = a.recurrent ? (a.recurrent->conv_kernel > 1) + (a.recurrent->heads > 0) : 0;
        EXPECT_EQ(tensors->size(), 2 * (kv_tensors_per_sequence + a.state_layers() * state_tensors)) << m.id;
    }
}

TEST(CpuBackend, AllocatesDeepSeekV32sIndexerKeysBesideTheLatentAndTimesTheLatent) {
    // 61 layers x 1,024 tokens x 2 sequences: bf16 latents of 576 x 2 bytes and indexer keys of 128 fp8 values
    // and one fp32 scale (vLLM deepseek_v2.py Indexer), 132 bytes, a token a layer.
    ProbeRequest r = request_for("deepseek-v3.2", 1024, KvDtype::bf16, 2);
    const ProbeReport p = cpu()->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_EQ(p.allocation.predicted_bytes, 61ull * 1024 * 2 * (576 * 2 + 132));
    EXPECT_EQ(p.allocation.requested_bytes, p.allocation.predicted_bytes);
    // Attention reads the latents only: the indexer keys are allocated, not attended.
    EXPECT_EQ(p.attention.kv_bytes_read, 61ull * 1024 * 2 * 576 * 2);
}

TEST(KvTensors, AnIndexerOnSomeLayersIsAllocatedOnThoseAlone) {
    // GLM-5.2's rule (vLLM deepseek_v2.py: no Indexer where the layer skips top-k) on DeepSeek-V3.2's shape: every
    // fourth layer from the third keeps a key; the tensors still sum to the calculator's bytes.
    ProbeRequest r = request_for("deepseek-v3.2", 256, KvDtype::bf16, 1);
    std::uint64_t keyed = 0;
    r.arch.layer_specs.assign(r.arch.layers, LayerSpec{});
    for (std::uint64_t l = 0; l < r.arch.layers; ++l) {
        r.arch.layer_specs[l].no_indexer = (l + 1 > 3 ? l - 2 : 0) % 4 != 0;
        keyed += r.arch.layer_specs[l].no_indexer ? 0 : 1;
    }
    EXPECT_EQ(keyed, 3u + 14u);  // 0, 1, 2, then 6, 10, ..., 58
    auto tensors = kv_tensors(r);
    ASSERT_TRUE(tensors.ok()) << tensors.error_text();
    EXPECT_EQ(tensors->size(), 61u + keyed);
    std::uint64_t bytes = 0;
    for (const KvTensor& t : *tensors) bytes += t.bytes;
    EXPECT_EQ(bytes, 256ull * (61 * 576 * 2 + keyed * 132));
    EXPECT_EQ(bytes, kv_cache_report(r.arch, r.dtype, r.workload, {})->total_bytes);
}

TEST(CpuBackend, AllocatesTheRecurrentStateBesideTheCache) {
    // Qwen3-Next at 2048 tokens, 2 sequences, bf16: 12 attention layers keep K and V, 36 gated-DeltaNet
    // layers keep 1,097,728 bytes of state each per sequence (vLLM gated_delta_net_state_shape).
    ProbeRequest r = request_for("qwen3-next-80b-a3b", 2048, KvDtype::bf16, 2);
    const ProbeReport p = cpu()->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    const std::uint64_t kv = 2ull * 12 * 2 * 256 * 2 * 2048 * 2;  // K+V x layers x heads x dim x bytes x tokens x seqs
    const std::uint64_t state = 36ull * 1'097'728 * 2;
    EXPECT_EQ(p.allocation.predicted_state_bytes, state);
    EXPECT_EQ(p.allocation.predicted_bytes, kv + state);
    EXPECT_EQ(p.allocation.requested_bytes, kv + state);
    EXPECT_GT(p.attention.runs, 0);

    // A pure Mamba-2 model: the state is allocated and measured, and there is no attention to time.
    const ProbeReport mamba = cpu()->probe(request_for("mamba-codestral-7b", 4096, KvDtype::bf16), {});
    ASSERT_EQ(mamba.status, Status::ok) << mamba.message;
    EXPECT_EQ(mamba.allocation.predicted_bytes, 138'149'888u);  // 64 x 2,158,592 (see hybrid_test.cpp)
    EXPECT_EQ(mamba.allocation.requested_bytes, mamba.allocation.predicted_bytes);
    EXPECT_EQ(mamba.attention.runs, 0);
    EXPECT_NE(mamba.message.find("no layer attends"), std::string::npos) << mamba.message;
}

TEST(KvTensors, OnlyFormatsTheProbeStoresAreAccepted) {
    for (const KvDtype d : {KvDtype::int4, KvDtype::mxfp4}) {
        const auto r = kv_tensors(request_for("llama-3-8b", 1024, d));
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.errors().front().input, Field::kv_dtype);
        EXPECT_NE(r.errors().front().message.find("fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, q8_0 or q4_0"),
                  std::string::npos);
    }
    // llama.cpp's blocks of 32 values never straddle two heads.
    ProbeRequest odd = request_for("llama-3-8b", 1024, KvDtype::q4_0);
    odd.arch.head_dim_k = odd.arch.head_dim_v = 48;
    const auto r = kv_tensors(odd);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.errors().front().input, Field::kv_dtype);  // the calculator's check, as llama.cpp words it
    EXPECT_NE(r.errors().front().message.find("blocks of 32"), std::string::npos) << r.error_text();
}

TEST(CpuKernels, Fp8Int8AndBlockFormatsDecodeAsTheirSpecificationsSay) {
    // fp8 e4m3 (bias 7): 0x38 = 1.0, 0xB8 = -1.0, 0x7E = 448 (the largest), 0x01 = 2^-9 (the smallest subnormal).
    const std::uint8_t e4m3[] = {0x38, 0xB8, 0x7E, 0x01};
    float f[32];
    cpu::to_float(KvDtype::fp8_e4m3, e4m3, f, 4);
    EXPECT_EQ(f[0], 1.0f);
    EXPECT_EQ(f[1], -1.0f);
    EXPECT_EQ(f[2], 448.0f);
    EXPECT_EQ(f[3], std::ldexp(1.0f, -9));
    // fp8 e5m2 is fp16's top byte: 0x3C = 1.0, 0xC0 = -2.0, 0x7B = 57344.
    const std::uint8_t e5m2[] = {0x3C, 0xC0, 0x7B};
    cpu::to_float(KvDtype::fp8_e5m2, e5m2, f, 3);
    EXPECT_EQ(f[0], 1.0f);
    EXPECT_EQ(f[1], -2.0f);
    EXPECT_EQ(f[2], 57344.0f);
    // int8: the per-tensor scale (1/127) times the signed byte, eleven values so the vector path reads eight.
    const std::uint8_t i8[] = {0x7F, 0x81, 0x01, 0xFF, 0x40, 0, 0, 0, 0, 0, 0x7F};
    cpu::to_float(KvDtype::int8, i8, f, 11);
    EXPECT_FLOAT_EQ(f[0], 1.0f);
    EXPECT_FLOAT_EQ(f[1], -1.0f);
    EXPECT_FLOAT_EQ(f[2], 1.0f / 127);
    EXPECT_FLOAT_EQ(f[3], -1.0f / 127);
    EXPECT_FLOAT_EQ(f[4], 64.0f / 127);
    EXPECT_EQ(f[5], 0.0f);
    EXPECT_FLOAT_EQ(f[10], 1.0f);
    // q8_0: an fp16 scale (0.5 = 0x3800), then 32 int8: value = scale × q.
    std::uint8_t q8[34] = {0x00, 0x38};
    q8[2] = static_cast<std::uint8_t>(-3);
    q8[33] = 127;
    cpu::to_float(KvDtype::q8_0, q8, f, 32);
    EXPECT_EQ(f[0], -1.5f);
    EXPECT_EQ(f[31], 63.5f);
    EXPECT_EQ(f[1], 0.0f);
    // q4_0: scale 2 (0x4000), 16 bytes: low nibbles are values 0…15, high nibbles 16…31, each scale × (q − 8).
    std::uint8_t q4[18] = {0x00, 0x40};
    q4[2] = 0x1F;
    cpu::to_float(KvDtype::q4_0, q4, f, 32);
    EXPECT_EQ(f[0], 14.0f);    // 0xF − 8 = 7
    EXPECT_EQ(f[16], -14.0f);  // 0x1 − 8 = −7
    EXPECT_EQ(f[1], -16.0f);   // 0x0 − 8
    // Every fp8 byte, eight at a time as the vector path reads them, against the formats' definitions.
    std::uint8_t all[256];
    float g[256];
    for (int i = 0; i < 256; ++i) all[i] = static_cast<std::uint8_t>(i);
    for (const KvDtype d : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2}) {
        cpu::to_float(d, all, g, 256);
        const bool e4 = d == KvDtype::fp8_e4m3;
        for (int i = 0; i < 256; ++i) {
            const int mant_bits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
            const int exp = (i & 0x7f) >> mant_bits, mant = i & ((1 << mant_bits) - 1);
            const float sign = (i & 0x80) ? -1.0f : 1.0f;
            if (e4 && exp == 15 && mant == 7) {  // e4m3's only NaN, either sign (it has no infinities)
                EXPECT_TRUE(std::isnan(g[i])) << "byte " << i;
                continue;
            }
            if (!e4 && exp == 31) continue;  // e5m2's NaN and infinities, as fp16's
            const float want =
                exp == 0 ? sign * std::ldexp(static_cast<float>(mant), 1 - bias - mant_bits)
                         : sign * std::ldexp(1.0f + std::ldexp(static_cast<float>(mant), -mant_bits), exp - bias);
            EXPECT_EQ(g[i], want) << to_string(d) << " byte " << i;
        }
    }
    // Whole blocks: each value where the block layout puts it.
    std::uint8_t block8[34] = {0x00, 0x3C};  // scale 1
    std::uint8_t block4[18] = {0x00, 0x3C};
    for (int j = 0; j < 32; ++j) block8[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(j - 16));
    for (int j = 0; j < 16; ++j) block4[2 + j] = static_cast<std::uint8_t>((j & 0xf) | ((15 - j) << 4));
    cpu::to_float(KvDtype::q8_0, block8, g, 32);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(g[j], static_cast<float>(j - 16)) << j;
    cpu::to_float(KvDtype::q4_0, block4, g, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(g[j], static_cast<float>(j - 8)) << j;
        EXPECT_EQ(g[j + 16], static_cast<float>(7 - j)) << j + 16;
    }
    // The half conversion rounds to nearest even: 1 + 2^-11 is a tie between 1 and 1 + 2^-10.
    EXPECT_EQ(cpu::float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(cpu::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
    EXPECT_EQ(cpu::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
    EXPECT_EQ(cpu::float_to_half(-65504.0f), 0xFBFF);
}

TEST(CpuKernels, WritingAFormatRoundsAsItsEngineDoes) {
    std::uint8_t b[34];
    float f[32];
    // fp8 e4m3: exact values stay, others go to the nearest, beyond 448 saturates.
    const float in[] = {1.0f, -0.3125f, 500.0f, 0.3f};
    cpu::from_float(KvDtype::fp8_e4m3, in, b, 4);
    EXPECT_EQ(b[0], 0x38);
    cpu::to_float(KvDtype::fp8_e4m3, b, f, 4);
    EXPECT_EQ(f[1], -0.3125f);
    EXPECT_EQ(f[2], 448.0f);
    EXPECT_EQ(f[3], 0.3125f);  // 0.3 lies between 0.28125 and 0.3125, nearer the second
    // Ties go to the even code, as the CUDA conversion vLLM writes with (and the CUDA step) rounds them:
    // 1.0625 lies halfway between 1.0 (0x38) and 1.125 (0x39), 1.1875 between 0x39 and 1.25 (0x3A), 2^-10 between
    // 0 and the smallest subnormal, 3 · 2^-10 between it and 0x02.
    const float ties[] = {1.0625f, 1.1875f, std::ldexp(1.0f, -10), 3 * std::ldexp(1.0f, -10), -1.0625f};
    cpu::from_float(KvDtype::fp8_e4m3, ties, b, 5);
    const std::vector<int> even = {0x38, 0x3A, 0x00, 0x02, 0xB8};
    for (std::size_t i = 0; i < even.size(); ++i) EXPECT_EQ(b[i], even[i]) << "e4m3 tie " << i;
    // fp8 e5m2, rounded from the float once: 1.125 + 2^-20 is past the tie between 1.0 (0x3C) and 1.25 (0x3D),
    // though fp16 first would round it onto the tie and then to 1.0; 1.125 itself goes to the even 0x3C; beyond
    // 57344 saturates (0x7B), not infinity (0x7C).
    const float e5[] = {1.125f + std::ldexp(1.0f, -20), 1.125f, 1e6f, -1e6f};
    cpu::from_float(KvDtype::fp8_e5m2, e5, b, 4);
    const std::vector<int> e5_want = {0x3D, 0x3C, 0x7B, 0xFB};
    for (std::size_t i = 0; i < e5_want.size(); ++i) EXPECT_EQ(b[i], e5_want[i]) << "e5m2 " << i;
    // int8 (TensorRT-LLM's cast): the nearest step of 1/127, ties to even, saturating at −128 and 127; NaN is 0.
    const float wide[] = {0.503f, -0.25f, 1.0f,        -1.0f,        2.0f,          -3.0f,
                          0.003f, 0.0f,   63.5f / 127, -62.5f / 127, std::nanf(""), 1e30f};
    cpu::from_float(KvDtype::int8, wide, b, 12);
    const std::vector<int> want = {64, -32, 127, -127, 127, -128, 0, 0, 64, -62, 0, 127};  // 63.881, -31.75, …
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(static_cast<std::int8_t>(b[i]), want[i]) << i;
    cpu::to_float(KvDtype::int8, b, f, 12);
    EXPECT_FLOAT_EQ(f[0], 64.0f / 127);
    EXPECT_FLOAT_EQ(f[5], -128.0f / 127);
    // q8_0 (llama.cpp's quantize_row_q8_0_ref): scale max|x|/127, each value within half a step of its input.
    float row[32];
    for (int i = 0; i < 32; ++i) row[i] = std::sin(static_cast<float>(i)) * 3.0f;
    cpu::from_float(KvDtype::q8_0, row, b, 32);
    cpu::to_float(KvDtype::q8_0, b, f, 32);
    float amax = 0;
    for (const float x : row) amax = std::max(amax, std::fabs(x));
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(f[i], row[i], amax / 127 * 0.51 + 1e-3) << i;
    // q4_0 (quantize_row_q4_0_ref): the largest magnitude is −8 steps, so the other sign reaches only +7 and its
    // largest values are clipped there: every value within one step of its input.
    cpu::from_float(KvDtype::q4_0, row, b, 32);
    cpu::to_float(KvDtype::q4_0, b, f, 32);
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(f[i], row[i], amax / 8 + 1e-2) << i;
    // A NaN stays a NaN in bf16 (rounding its low bits away would make it infinity), and is the value 0 in
    // llama.cpp's blocks (which ggml leaves undefined; the GPU step writes the same), beside its block's others.
    const float nan_low = std::bit_cast<float>(0x7F800001u);
    std::uint16_t h[2];
    const float nans[] = {nan_low, -std::nanf("")};
    cpu::to_bf16(nans, h, 2);
    cpu::to_float(KvDtype::bf16, h, f, 2);
    EXPECT_TRUE(std::isnan(f[0]) && std::isnan(f[1])) << std::hex << h[0] << " " << h[1];
    row[5] = std::nanf("");
    for (const KvDtype d : {KvDtype::q8_0, KvDtype::q4_0}) {
        cpu::from_float(d, row, b, 32);
        cpu::to_float(d, b, f, 32);
        EXPECT_EQ(f[5], 0.0f) << to_string(d);
        EXPECT_NEAR(f[6], row[6], amax / 8 + 1e-2) << to_string(d);
    }
}

TEST(CpuBackend, Fp8Int8AndLlamaCppBlocksAreAllocatedExactlyAndAttendedAsFloat64Says) {
    for (const KvDtype d : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2, KvDtype::int8, KvDtype::q8_0, KvDtype::q4_0}) {
        const ProbeRequest r = request_for("llama-3-8b", 1000, d, 2);
        const ProbeReport p = cpu()->probe(r, {});
        ASSERT_EQ(p.status, Status::ok) << to_string(d) << ": " << p.message;
        EXPECT_EQ(p.allocation.requested_bytes, p.allocation.predicted_bytes) << to_string(d);
        EXPECT_EQ(p.allocation.predicted_bytes, kv_cache_report(r.arch, d, r.workload, {})->total_bytes);
        // The converted tile is exact, so only float32 arithmetic separates the step from float64.
        EXPECT_LT(p.attention.max_rel_error, 1e-5) << to_string(d);
        EXPECT_GT(p.attention.kv_read_gbps, 0.0);
    }
}

TEST(CpuBackend, AllocatesExactlyThePredictionAndMeasuresIt) {
    // Llama 3 8B's shape with Gemma-style alternating sliding windows of 1024, blocks of 16,
    // two sequences at 3000 tokens: every rule of the formula, 304 MiB.
    ProbeRequest r = request_for("llama-3-8b", 3000, KvDtype::fp16, 2, 16);
    r.arch.layer_specs.assign(r.arch.layers, LayerSpec{});
    for (std::size_t l = 0; l < r.arch.layer_specs.size(); l += 2) r.arch.layer_specs[l] = {LayerKind::sliding, 1024};
    const ProbeReport p = cpu()->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    const AllocationCheck& a = p.allocation;
    EXPECT_EQ(a.requested_bytes, a.predicted_bytes);
    EXPECT_EQ(a.predicted_bytes, kv_cache_report(r.arch, r.dtype, r.workload, {})->total_bytes);
    EXPECT_EQ(a.granularity_bytes, host::page_bytes());
    // Resident growth: the cache, rounded to pages per allocation, give or take the allocator's own pages.
    EXPECT_GE(a.measured_bytes + (4ull << 20), a.requested_bytes);
    std::uint64_t slack = 16ull << 20;
#if KVSCOPE_ASAN
    // Under AddressSanitizer (scripts/test's asan run) the process also grows by the shadow of the
    // buffers it tracks, one byte per eight; the product itself carries no such shadow.
    slack += a.requested_bytes / 8;
#endif
    EXPECT_LE(a.measured_bytes, a.requested_bytes + a.allocations * a.granularity_bytes + slack);
}

// The float64 reference keeps the queries in fp32. Where a bf16 cache is read with the CPU's BF16
// dot instruction the queries are rounded to bf16 first (as GPU bf16 kernels keep them), which
// moves the output by a few parts in 10^4; every other path agrees to better than 1e-4.
double tolerance(KvDtype dtype) { return dtype == KvDtype::bf16 && cpu::has_bf16_dot() ? 2e-3 : 1e-4; }

TEST(CpuBackend, AttentionMatchesTheFloat64ReferenceInEveryFormat) {
    for (KvDtype dtype : {KvDtype::fp32, KvDtype::fp16, KvDtype::bf16}) {
        const ProbeReport p = cpu()->probe(request_for("llama-3-8b", 2048, dtype), {});
        ASSERT_EQ(p.status, Status::ok) << p.message;
        EXPECT_LT(p.attention.max_rel_error, tolerance(dtype)) << to_string(dtype);
        EXPECT_GT(p.attention.max_rel_error, 0.0) << "exactly zero error means nothing was compared";
        EXPECT_GT(p.attention.median_ms, 0.0);
        EXPECT_GT(p.attention.ceiling_gbps, 0.0);
        // Every stored K and V byte is read once per step (no block padding here).
        EXPECT_EQ(p.attention.kv_bytes_read, p.allocation.requested_bytes);
    }
}

TEST(CpuBackend, AttentionIsRightAtTheEdgesOfItsTilesAndPairs) {
    // Attention runs over tiles of 128 tokens, two tokens at a time, with a running softmax that
    // rescales the earlier tiles' output when a later tile holds a larger score: one token, an odd
    // count, one either side of a tile, and several tiles with a short odd tail.
    for (std::uint64_t context : {1, 2, 127, 128, 129, 333}) {
        for (KvDtype dtype : {KvDtype::fp32, KvDtype::bf16}) {
            const ProbeReport p = cpu()->probe(request_for("llama-3-8b", context, dtype), {});
            ASSERT_EQ(p.status, Status::ok) << p.message;
            EXPECT_LT(p.attention.max_rel_error, tolerance(dtype)) << context << " tokens, " << to_string(dtype);
            // One token's weight is exactly 1, so its output is its V row, exactly.
            if (context > 1) EXPECT_GT(p.attention.max_rel_error, 0.0) << context << " tokens, " << to_string(dtype);
        }
    }
}

TEST(CpuBackend, GroupedAndLatentLayoutsAreChecked) {
    for (const char* model : {"kvscope-teaching-32l", "deepseek-v3", "gemma-3-27b"}) {
        const ProbeReport p = cpu()->probe(request_for(model, 256, KvDtype::bf16), {});
        ASSERT_EQ(p.status, Status::ok) << model << ": " << p.message;
        EXPECT_LT(p.attention.max_rel_error, tolerance(KvDtype::bf16)) << model;
    }
}

TEST(CpuKernels, Bf16DotMatchesTheSameRoundedQueriesExactly) {
    if (!cpu::has_bf16_dot()) GTEST_SKIP() << "this CPU has no AVX-512 BF16 dot instruction; the fp32 path is used";
    // Eight queries (two groups of four) against two rows of 32 values: the kernel's sums must equal
    // float64 sums of the same bf16 values (the rounding of q is the only approximation it makes).
    constexpr std::size_t n = 32, groups = 8;
    std::vector<float> q(groups * n), k0f(n), k1f(n);
    std::vector<std::uint16_t> k0(n), k1(n), qb(groups * n);
    cpu::fill_random(KvDtype::fp32, q.data(), q.size(), 7);
    cpu::fill_random(KvDtype::bf16, k0.data(), n, 8);
    cpu::fill_random(KvDtype::bf16, k1.data(), n, 9);
    cpu::to_bf16(q.data(), qb.data(), qb.size());
    std::vector<float> qr(groups * n);
    cpu::to_float(KvDtype::bf16, qb.data(), qr.data(), qr.size());
    cpu::to_float(KvDtype::bf16, k0.data(), k0f.data(), n);
    cpu::to_float(KvDtype::bf16, k1.data(), k1f.data(), n);
    float out0[groups], out1[groups];
    cpu::dot_group_bf16x2(qb.data(), groups, k0.data(), k1.data(), n, out0, out1);
    for (std::size_t g = 0; g < groups; ++g) {
        double e0 = 0, e1 = 0;
        for (std::size_t i = 0; i < n; ++i) {
            e0 += static_cast<double>(qr[g * n + i]) * k0f[i];
            e1 += static_cast<double>(qr[g * n + i]) * k1f[i];
        }
        EXPECT_NEAR(out0[g], e0, 1e-5 * (1 + std::abs(e0))) << "query " << g;
        EXPECT_NEAR(out1[g], e1, 1e-5 * (1 + std::abs(e1))) << "query " << g;
        EXPECT_NE(out0[g], out1[g]);
    }
}

TEST(CpuKernels, Fp8WeightRowsAreReadInPlaceAsTheirValues) {
    // The decode step's fp8 e4m3 weights go straight into the grouped dot products (converted in registers):
    // rows of 136 values (the 8-value path) and of 20 (a tail of 4), 4 and 3 queries (both group paths); every
    // sum equal to float64's of the decoded bytes, which include subnormals.
    for (const std::size_t n : {std::size_t{136}, std::size_t{20}})
        for (const std::size_t groups : {std::size_t{4}, std::size_t{3}}) {
            std::vector<float> q(groups * n), k0f(n), k1f(n);
            std::vector<std::uint8_t> k0(n), k1(n);
            cpu::fill_random(KvDtype::fp32, q.data(), q.size(), 11);
            for (std::size_t i = 0; i < n; ++i) {  // every byte but NaN's, the two rows in different orders
                k0[i] = static_cast<std::uint8_t>((i * 37 + 5) % 256);
                k1[i] = static_cast<std::uint8_t>((i * 101 + 3) % 256);
                if ((k0[i] & 0x7F) == 0x7F) k0[i] = 0x01;
                if ((k1[i] & 0x7F) == 0x7F) k1[i] = 0x81;
            }
            cpu::to_float(KvDtype::fp8_e4m3, k0.data(), k0f.data(), n);
            cpu::to_float(KvDtype::fp8_e4m3, k1.data(), k1f.data(), n);
            std::vector<float> out0(groups), out1(groups), single(groups);
            cpu::dot_group_raw2(KvDtype::fp8_e4m3, q.data(), groups, k0.data(), k1.data(), n, out0.data(), out1.data());
            cpu::dot_group_raw(KvDtype::fp8_e4m3, q.data(), groups, k1.data(), n, single.data());
            for (std::size_t g = 0; g < groups; ++g) {
                double e0 = 0, e1 = 0, size0 = 0, size1 = 0;  // the sums of the terms' magnitudes
                for (std::size_t i = 0; i < n; ++i) {
                    e0 += static_cast<double>(q[g * n + i]) * k0f[i];
                    e1 += static_cast<double>(q[g * n + i]) * k1f[i];
                    size0 += std::abs(static_cast<double>(q[g * n + i]) * k0f[i]);
                    size1 += std::abs(static_cast<double>(q[g * n + i]) * k1f[i]);
                }
                SCOPED_TRACE("n " + std::to_string(n) + ", query " + std::to_string(g));
                EXPECT_NEAR(out0[g], e0, 1e-6 * size0);
                EXPECT_NEAR(out1[g], e1, 1e-6 * size1);
                EXPECT_NEAR(single[g], e1, 1e-6 * size1);
            }
        }
}

TEST(CpuBackend, TooLargeForTheLimitIsRefusedBeforeAllocating) {
    Control c;
    c.memory_limit_bytes = 64ull << 20;
    // The catalog and the backend are made before the measure: reading the built-in configs (more under the
    // sanitizers' red zones) is not the cache.
    const ProbeRequest request = request_for("llama-3-8b", 8192, KvDtype::bf16);
    const auto backend = cpu();
    const std::uint64_t before = host::resident_bytes();
    const ProbeReport p = backend->probe(request, c);
    EXPECT_EQ(p.status, Status::out_of_memory);
    EXPECT_NE(p.message.find("1.00 GiB"), std::string::npos) << p.message;
    EXPECT_NE(p.message.find("memory limit"), std::string::npos) << p.message;
    EXPECT_LT(host::resident_bytes(), before + (8ull << 20));
}

TEST(CpuBackend, AContainersMemoryLimitIsTheMemoryAvailable) {
    // A container's memory cgroup, v1 and v2, in a folder of its own: the free memory the probe weighs a cache
    // against is what the group's limit leaves (less the file cache it would reclaim), not the machine's.
    const std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("kvscope-cgroup-" + std::to_string(::getpid()));
    auto write = [&](const std::filesystem::path& rel, const std::string& text) {
        std::filesystem::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << text;
    };
    write("self-v2", "0::/docker/abc\n");
    write("fs/docker/abc/memory.max", "8589934592\n");  // 8 GiB for the container
    write("fs/docker/abc/memory.current", "3221225472\n");
    write("fs/docker/abc/memory.stat", "anon 2147483648\ninactive_file 1073741824\n");
    write("fs/docker/memory.max", "max\n");  // no limit above it
    // 8 GiB - (3 GiB used - 1 GiB of reclaimable file cache) = 6 GiB.
    EXPECT_EQ(host::cgroup_headroom((root / "self-v2").string(), (root / "fs").string()), 6ull << 30);
    // v1: the tighter of the group and its parent (4 GiB, 1 GiB in use).
    write("self-v1", "12:pids:/x\n4:memory:/job/step\n0::/\n");
    write("fs/memory/job/step/memory.limit_in_bytes", "17179869184\n");
    write("fs/memory/job/step/memory.usage_in_bytes", "1073741824\n");
    write("fs/memory/job/memory.limit_in_bytes", "4294967296\n");
    write("fs/memory/job/memory.usage_in_bytes", "1073741824\n");
    EXPECT_EQ(host::cgroup_headroom((root / "self-v1").string(), (root / "fs").string()), 3ull << 30);
    // No limit (v1's "unlimited" is 2^63 rounded to a page): none, and the machine's MemAvailable stands.
    write("self-none", "4:memory:/\n");
    write("fs2/memory/memory.limit_in_bytes", "9223372036854771712\n");
    write("fs2/memory/memory.usage_in_bytes", "1073741824\n");
    EXPECT_FALSE(host::cgroup_headroom((root / "self-none").string(), (root / "fs2").string()).has_value());
    EXPECT_FALSE(host::cgroup_headroom((root / "missing").string(), (root / "fs").string()).has_value());
    // A path without its leading slash ends the walk up, as the root does.
    write("self-odd", "4:memory:job\n");
    EXPECT_FALSE(host::cgroup_headroom((root / "self-odd").string(), (root / "fs2").string()).has_value());
    std::filesystem::remove_all(root);
    // --memory-limit lowers the budget, never raises it above what is available (the OOM killer's territory).
    EXPECT_EQ(host::budget(1ull << 20).bytes, 1ull << 20);
    EXPECT_TRUE(host::budget(1ull << 20).by_limit);
    EXPECT_LE(host::budget(1ull << 60).bytes, host::total_bytes());  // the free memory, which moves between calls
    EXPECT_FALSE(host::budget(1ull << 60).by_limit);
    EXPECT_EQ(host::budget(1ull << 60).why, "of memory available (less than --memory-limit)");
    EXPECT_EQ(host::budget(0).why, "of memory available");
}

TEST(CpuBackend, CancellingStopsTheRunAndFreesTheCache) {
    std::atomic<bool> cancel{false};
    Control c;
    c.cancel = &cancel;
    int reports = 0;
    c.progress = [&](double, const std::string&) {
        if (++reports == 3) cancel = true;  // after the cache is allocated
    };
    const ProbeRequest request = request_for("llama-3-8b", 4096, KvDtype::bf16);  // the catalog read before the measure
    const std::uint64_t before = host::resident_bytes();
    const ProbeReport p = cpu()->probe(request, c);
    EXPECT_EQ(p.status, Status::cancelled);
    EXPECT_NE(p.message.find("freed"), std::string::npos);
#if !KVSCOPE_ASAN
    EXPECT_LT(host::resident_bytes(), before + (64ull << 20));  // the 512 MiB cache is gone
#else
    (void)before;  // AddressSanitizer keeps freed memory in quarantine; its leak check at exit covers this instead
#endif
}

TEST(CpuBackend, InvalidScenariosAreResultsNotCrashes) {
    ProbeRequest r = request_for("llama-3-8b", 1024, KvDtype::bf16);
    r.arch.kv_heads = 5;
    const ProbeReport p = cpu()->probe(r, {});
    EXPECT_EQ(p.status, Status::invalid_input);
    EXPECT_NE(p.message.find("kv_heads"), std::string::npos) << p.message;
}

TEST(CpuBackend, ALatentReadByEveryHeadIsSaidToBeBoundByArithmeticExceptOnTensorCores) {
    // The figure's limit is said where scalar arithmetic bounds the step (16 or more heads a row), not for groups
    // of 8, and not for the GPU's tensor-core kernel, which is built for such groups.
    AttentionTiming at;
    at.heads_per_row = 128;
    EXPECT_NE(arithmetic_bound_note(at).find("read by 128 query heads, so this step is bound by arithmetic"),
              std::string::npos);
    at.tensor_cores = true;
    EXPECT_EQ(arithmetic_bound_note(at), "");
    at = AttentionTiming{};
    at.heads_per_row = 8;
    EXPECT_EQ(arithmetic_bound_note(at), "");
}

TEST(Backends, CpuIsAlwaysListedAndAutoFallsBackToIt) {
    const auto devices = list_devices();
    ASSERT_GE(devices.size(), 2u);
    EXPECT_EQ(devices[0].backend, "cpu");
    EXPECT_GT(devices[0].total_bytes, 0u);
    EXPECT_GT(devices[0].compute_units, 0u);
    EXPECT_EQ(devices[1].backend, "cuda");
    auto chosen = make_backend("auto");
    ASSERT_TRUE(chosen.ok());
    const std::string backend = (*chosen)->device().backend;
    EXPECT_TRUE(backend == "cpu" || backend == "cuda");
    EXPECT_FALSE(make_backend("tpu").ok());
}

TEST(Backends, AnUnavailableBackendIsAStatusWithItsReason) {
    const BackendChoice tpu = choose_backend("tpu");
    EXPECT_EQ(tpu.backend, nullptr);
    EXPECT_EQ(tpu.status, Status::invalid_input);
    EXPECT_NE(tpu.message.find("'tpu' is not a backend"), std::string::npos) << tpu.message;
    const BackendChoice cpu_choice = choose_backend("cpu");
    ASSERT_NE(cpu_choice.backend, nullptr);
    EXPECT_EQ(cpu_choice.status, Status::ok);
    const BackendChoice cuda = choose_backend("cuda");
    if (cuda.backend) GTEST_SKIP() << "a CUDA device answers here, so there is no missing device to report";
    // No driver, no device or a build without CUDA is no_device; a driver older than the
    // runtime is driver_mismatch. Either way the message says which.
    EXPECT_TRUE(cuda.status == Status::no_device || cuda.status == Status::driver_mismatch) << to_string(cuda.status);
    EXPECT_FALSE(cuda.message.empty());
    EXPECT_EQ(list_devices()[1].note, cuda.message);  // the devices list says the same
}

}  // namespace
}  // namespace kvscope::probe

namespace kvscope::probe {
namespace {

TEST(CpuBackend, RepeatedRunsGiveBackTheirMemory) {
    // Under the sanitizer build LeakSanitizer checks this at exit; here resident memory must not creep.
    ProbeRequest r;
    r.arch = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    r.dtype = KvDtype::bf16;
    r.workload = {1024, 1, 1, false};
    r.timing_runs = 1;
    r.ceiling_bytes = 16ull << 20;
    auto backend = std::move(make_backend("cpu").value());
    ASSERT_EQ(backend->probe(r, {}).status, Status::ok);  // warm the allocator
    const std::uint64_t before = host::resident_bytes();
    for (int i = 0; i < 3; ++i) ASSERT_EQ(backend->probe(r, {}).status, Status::ok);
#if !KVSCOPE_ASAN
    EXPECT_LT(host::resident_bytes(), before + (32ull << 20));  // each run holds a 128 MiB cache
#else
    (void)before;
#endif
}

}  // namespace
}  // namespace kvscope::probe
