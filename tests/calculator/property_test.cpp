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

}  // namespace
}  // namespace kvscope
