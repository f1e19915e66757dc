// Properties that hold for every valid architecture, checked on many random ones
// (a fixed seed, so a failure is reproducible; the failing shape is printed).
#include <gtest/gtest.h>

#include <random>

#include "kvscope/calculator/derivation.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/variants.h"
#include "testing.h"

namespace kvscope {
namespace {

struct Case {
    Architecture arch;
    Workload workload;
    KvDtype dtype;
};

std::string describe(const Case& c) {
    return std::to_string(c.arch.layers) + " layers, " + std::to_string(c.arch.query_heads) + "/" +
           std::to_string(c.arch.kv_heads) + " heads, dim " + std::to_string(c.arch.head_dim_k) + ", " +
           std::to_string(c.workload.context_tokens) + " tokens × " + std::to_string(c.workload.batch) + ", block " +
           std::to_string(c.workload.block_size) + ", " + std::string(to_string(c.dtype)) +
           (c.arch.layer_specs.empty() ? "" : ", sliding");
}

// Random valid shapes: KV heads divide the query heads; some models slide half their layers.
class Shapes {
public:
    explicit Shapes(std::uint32_t seed) : rng_(seed) {}
    Case next() {
        const std::uint64_t kv = pick({1, 2, 4, 8, 16});
        const std::uint64_t group = pick({1, 2, 4, 8});
        Case c{testing::make_arch(pick({1, 2, 12, 32, 61, 80}), kv * group, kv, pick({64, 80, 128, 256})),
               {},
               KvDtype::fp16};
        if (coin()) {
            c.arch.layer_specs.assign(c.arch.layers, LayerSpec{});
            for (std::size_t l = 0; l < c.arch.layers; l += 2)
                c.arch.layer_specs[l] = {LayerKind::sliding, pick({128, 1024, 4096})};
        }
        c.workload = {pick({1, 7, 512, 4096, 32768, 131072}), pick({1, 3, 8, 64}), pick({1, 16, 256}), false};
        const auto dtypes = all_kv_dtypes();
        c.dtype = dtypes[std::uniform_int_distribution<std::size_t>(0, dtypes.size() - 1)(rng_)].dtype;
        // A format of 32-value blocks needs whole blocks a head (llama.cpp refuses other shapes): 80 becomes 64.
        if (info(c.dtype).values_per_block >= 32 && c.arch.head_dim_k % 32 != 0)
            c.arch.head_dim_k = c.arch.head_dim_v = 64;
        return c;
    }

private:
    std::uint64_t pick(std::initializer_list<std::uint64_t> options) {
        return *(options.begin() + std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng_));
    }
    bool coin() { return std::uniform_int_distribution<int>(0, 1)(rng_) == 1; }
    std::mt19937 rng_;
};

std::uint64_t total(const Case& c, const Parallelism& p = {}) {
    auto r = kv_cache_report(c.arch, c.dtype, c.workload, p);
    EXPECT_TRUE(r.ok()) << describe(c) << ": " << r.error_text();
    return r.ok() ? r->total_bytes : 0;
}

constexpr int kCases = 400;

TEST(Properties, BytesGrowWithEveryInput) {
    Shapes shapes(1);
    for (int i = 0; i < kCases; ++i) {
        const Case c = shapes.next();
        const std::uint64_t base = total(c);
        Case more = c;
        more.workload.context_tokens += 1000;
        EXPECT_GE(total(more), base) << describe(c);
        more = c;
        more.workload.batch += 1;
        EXPECT_GT(total(more), base) << describe(c);
        more = c;
        more.arch.layers += 1;
        if (!more.arch.layer_specs.empty()) more.arch.layer_specs.push_back(LayerSpec{});
        EXPECT_GT(total(more), base) << describe(c);
        more = c;
        more.arch.query_heads *= 2;
        more.arch.kv_heads *= 2;
        EXPECT_GT(total(more), base) << describe(c);
        more = c;
        more.dtype = KvDtype::fp32;
        EXPECT_GE(total(more), base) << describe(c);  // fp32 is the widest format
    }
}

TEST(Properties, MqaAtMostGqaAtMostMha) {
    Shapes shapes(2);
    for (int i = 0; i < kCases; ++i) {
        const Case c = shapes.next();
        auto v = compare_variants(c.arch, c.dtype, c.workload);
        ASSERT_TRUE(v.ok()) << describe(c);
        std::uint64_t mha = 0, gqa = 0, mqa = 0;
        for (const Variant& x : *v) {
            if (x.name == "all full attention") continue;  // the layer-mix comparison, not a head layout
            if (x.kind == AttentionKind::MHA) mha = x.kv_cache_bytes;
            if (x.kind == AttentionKind::GQA) gqa = x.kv_cache_bytes;
            if (x.kind == AttentionKind::MQA) mqa = x.kv_cache_bytes;
        }
        EXPECT_LE(mqa, mha) << describe(c);
        if (gqa) {
            EXPECT_LE(mqa, gqa) << describe(c);
            EXPECT_LE(gqa, mha) << describe(c);
        }
    }
}

TEST(Properties, PerGpuTimesGpusCoversTheTotal) {
    Shapes shapes(3);
    for (int i = 0; i < kCases; ++i) {
        const Case c = shapes.next();
        for (std::uint64_t tp : {1, 2, 4, 8, 32}) {
            if (c.arch.query_heads % tp != 0 || (c.arch.kv_heads % tp != 0 && tp % c.arch.kv_heads != 0)) continue;
            auto r = kv_cache_report(c.arch, c.dtype, c.workload, {tp, 1});
            ASSERT_TRUE(r.ok()) << describe(c) << " tp " << tp << ": " << r.error_text();
            EXPECT_GE(r->per_gpu_bytes * tp, r->total_bytes) << describe(c) << " tp " << tp;
            if (tp <= c.arch.kv_heads) EXPECT_EQ(r->per_gpu_bytes * tp, r->total_bytes) << describe(c) << " tp " << tp;
            // Replicated heads are counted on every GPU, never lost.
            EXPECT_GE(r->total_bytes, total(c)) << describe(c) << " tp " << tp;
        }
    }
}

TEST(Properties, BlocksAddLessThanOneBlockPerSequencePerLayer) {
    Shapes shapes(4);
    for (int i = 0; i < kCases; ++i) {
        Case c = shapes.next();
        Case contiguous = c;
        contiguous.workload.block_size = 1;
        const std::uint64_t rounded = total(c), exact = total(contiguous);
        auto per_token_layer = kv_cache_report(c.arch, c.dtype, {1, 1, 1, false}, {});
        ASSERT_TRUE(per_token_layer.ok());
        const std::uint64_t row = per_token_layer->bytes_per_token / c.arch.layers;  // one token, one layer
        EXPECT_GE(rounded, exact) << describe(c);
        EXPECT_LT(rounded - exact, c.workload.block_size * row * c.arch.layers * c.workload.batch + 1) << describe(c);
    }
}

TEST(Properties, SlidingLayersNeverStoreMoreThanTheirWindow) {
    Shapes shapes(5);
    for (int i = 0; i < kCases; ++i) {
        const Case c = shapes.next();
        auto r = kv_cache_report(c.arch, c.dtype, c.workload, {});
        ASSERT_TRUE(r.ok()) << describe(c);
        for (const LayerKv& l : r->layers) {
            if (l.window == 0) continue;
            const std::uint64_t block = c.workload.block_size;
            EXPECT_LE(l.stored_tokens, (l.window + block - 1) / block * block) << describe(c) << " layer " << l.layer;
        }
    }
}

TEST(Properties, ScenariosSurviveSaveAndOpen) {
    Shapes shapes(6);
    for (int i = 0; i < kCases; ++i) {
        const Case c = shapes.next();
        Scenario s;
        s.arch = c.arch;
        s.kv_dtype = c.dtype;
        s.workload = c.workload;
        auto back = scenario_from_json(scenario_to_json(s), "p.kvscope.json");
        ASSERT_TRUE(back.ok()) << describe(c) << ": " << back.error_text();
        EXPECT_EQ(back->scenario, s) << describe(c);
    }
}

TEST(Properties, TheShownDerivationMultipliesToTheCacheSize) {
    // What the Learn tab shows, factor by factor, multiplied by hand, is the report's byte count —
    // for every format (block formats round rows), windows, blocks and tensor-parallel replicas.
    Shapes shapes(7);
    for (int i = 0; i < kCases; ++i) {
        const Case c = shapes.next();
        for (std::uint64_t tp : {1, 2, 32}) {
            const Parallelism p{tp, 1};
            auto report = kv_cache_report(c.arch, c.dtype, c.workload, p);
            if (!report) continue;  // e.g. 32 GPUs that do not divide the KV heads
            auto d = derive_kv_bytes(c.arch, c.dtype, c.workload, p);
            ASSERT_TRUE(d.ok()) << describe(c) << " tp " << tp << ": " << d.error_text();
            EXPECT_EQ(product_of_factors(*d), report->total_bytes) << describe(c) << " tp " << tp;
            EXPECT_EQ(d->total_bytes, report->total_bytes);
        }
    }
}

// Random hybrid layouts: each layer full, sliding, chunked, shared, recurrent (with a Mamba-2 state) or
// nothing, and sometimes full attention beside a recurrent mixer (Falcon-H1).
Case hybrid_case(std::mt19937& rng) {
    Shapes shapes(static_cast<std::uint32_t>(rng()));
    Case c = shapes.next();
    c.arch.recurrent = RecurrentState{StateKind::mamba2, 4, 64 * c.arch.hidden_size / 64, 2, 16, 64, 128, KvDtype::bf16,
                                      KvDtype::fp32};
    c.arch.layer_specs.assign(c.arch.layers, LayerSpec{});
    std::uniform_int_distribution<int> kind(0, 6);
    for (auto& l : c.arch.layer_specs) {
        switch (kind(rng)) {
            case 0:
                l = {LayerKind::sliding, 1024};
                break;
            case 1:
                l = {LayerKind::chunked, 8192};
                break;
            case 2:
                l = {LayerKind::shared};
                break;
            case 3:
                l = {LayerKind::recurrent};
                break;
            case 4:
                l = {LayerKind::none};
                break;
            case 5:
                l = {LayerKind::full, 0, 0, 0, 0, true};
                break;
            default:
                break;
        }
    }
    return c;
}

TEST(Properties, TheStateIsFlatInTheContextAndGrowsWithSequences) {
    std::mt19937 rng(11);
    for (int i = 0; i < kCases; ++i) {
        const Case c = hybrid_case(rng);
        auto a = kv_cache_report(c.arch, c.dtype, c.workload);
        Case longer = c;
        longer.workload.context_tokens *= 2;
        auto b = kv_cache_report(longer.arch, longer.dtype, longer.workload);
        ASSERT_TRUE(a && b) << describe(c) << ": " << a.error_text() << b.error_text();
        EXPECT_EQ(a->state_bytes, b->state_bytes) << describe(c);
        EXPECT_EQ(a->state_bytes, a->state_bytes_per_sequence * c.workload.batch) << describe(c);
        EXPECT_EQ(a->state_bytes > 0, c.arch.state_layers() > 0) << describe(c);
        EXPECT_EQ(a->memory_bytes, a->total_bytes + a->state_bytes) << describe(c);
        EXPECT_GE(b->total_bytes, a->total_bytes) << describe(c);
    }
}

TEST(Properties, AHybridLayoutNeverCachesMoreThanEveryLayerFullAttention) {
    std::mt19937 rng(12);
    for (int i = 0; i < kCases; ++i) {
        const Case c = hybrid_case(rng);
        auto own = kv_cache_report(c.arch, c.dtype, c.workload);
        auto full = kv_cache_report(c.arch.all_full_attention(), c.dtype, c.workload);
        ASSERT_TRUE(own && full) << describe(c);
        EXPECT_LE(own->total_bytes, full->total_bytes) << describe(c);
        EXPECT_EQ(full->state_bytes, 0u) << describe(c);
    }
}

TEST(Properties, SharedLayersAddNothing) {
    std::mt19937 rng(13);
    for (int i = 0; i < kCases; ++i) {
        Case c = hybrid_case(rng);
        auto before = kv_cache_report(c.arch, c.dtype, c.workload);
        ASSERT_TRUE(before) << describe(c);
        // One more layer that reads another's cache: the KV cache and the state stay byte for byte.
        c.arch.layers += 1;
        c.arch.layer_specs.push_back({LayerKind::shared});
        auto after = kv_cache_report(c.arch, c.dtype, c.workload);
        ASSERT_TRUE(after) << describe(c);
        EXPECT_EQ(after->total_bytes, before->total_bytes) << describe(c);
        EXPECT_EQ(after->state_bytes, before->state_bytes) << describe(c);
        EXPECT_EQ(after->bytes_per_token, before->bytes_per_token) << describe(c);
    }
}

}  // namespace
}  // namespace kvscope
