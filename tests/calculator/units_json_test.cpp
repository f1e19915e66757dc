#include <set>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/variants.h"
#include "testing.h"

namespace kvscope {
namespace {

TEST(Units, TokenCountsTheWayPeopleWriteThem) {
    EXPECT_EQ(*parse_token_count("8192", "--context"), 8192u);
    EXPECT_EQ(*parse_token_count("8k", "--context"), 8192u);
    EXPECT_EQ(*parse_token_count("128K", "--context"), 131072u);
    EXPECT_EQ(*parse_token_count("1M", "--context"), 1048576u);
    EXPECT_EQ(*parse_token_count("1.5k", "--context"), 1536u);
    EXPECT_EQ(*parse_token_count("131_072", "--context"), 131072u);
    EXPECT_EQ(*parse_token_count("1000000000000000", "--context"), 1'000'000'000'000'000u);
    EXPECT_FIELD_ERROR(parse_token_count("12q", "--context"), "--context", "'12q' is not a whole number");
    EXPECT_FIELD_ERROR(parse_token_count("-5", "--context"), "--context", "negative");
    EXPECT_FIELD_ERROR(parse_token_count("", "--context"), "--context", "a value is needed");
    EXPECT_FIELD_ERROR(parse_token_count("1.0001k", "--context"), "--context", "not a whole number");
    EXPECT_FIELD_ERROR(parse_token_count("99999999999999999999", "--context"), "--context", "too large");
    // Powers of ten, read exactly.
    EXPECT_EQ(*parse_token_count("1e15", "--context"), 1'000'000'000'000'000u);
    EXPECT_EQ(*parse_token_count("1.5E3", "--context"), 1500u);
    EXPECT_FIELD_ERROR(parse_token_count("1.25e1", "--context"), "--context", "'1.25e1' is not a whole number");
    // German thousands with a lone point: refused as a decimal, and the message says how to write the number meant.
    EXPECT_FIELD_ERROR(parse_token_count("131.072", "--context"), "--context",
                       "'131.072' has a lone point, which is a decimal point here: for 131072 write 131072 or 131,072");
    // "128.000" would read as 128: refused too, with both numbers it could mean.
    EXPECT_FIELD_ERROR(parse_count("128.000", "--batch"), "--batch",
                       "'128.000' has a lone point, which is a decimal point here: for 128000 write 128000 or "
                       "128,000, for 128 write 128");
    // Not that shape: a decimal ("1.5", "0.125"), grouped thousands ("1,234.567" is no count either way).
    EXPECT_FALSE(lone_point_thousands("1.5").has_value());
    EXPECT_FALSE(lone_point_thousands("0.125").has_value());
    EXPECT_FALSE(lone_point_thousands("1234.567").has_value());
    EXPECT_FALSE(lone_point_thousands("1.536k").has_value());
    EXPECT_FIELD_ERROR(parse_token_count("1.5", "--context"), "--context", "'1.5' is not a whole number");
    EXPECT_FIELD_ERROR(parse_token_count("1e30", "--context"), "--context", "more than 2^64");
    // Echoed as people read it: 8k and 1M, but 10^15 in digits, not 976562500000k.
    EXPECT_EQ(format_tokens(8192), "8k");
    EXPECT_EQ(format_tokens(1u << 20), "1M");
    EXPECT_EQ(format_tokens(1'000'000'000'000'000u), "1,000,000,000,000,000");
    EXPECT_EQ(format_tokens(99999ull << 20), "99999M");
    // k only below 1M: MiniMax-M1's 10,240,000 tokens beside Llama 4 Scout's 10M, never "10000k".
    EXPECT_EQ(format_tokens(10'240'000), "10,240,000");
    EXPECT_EQ(format_tokens(10ull << 20), "10M");
    EXPECT_EQ(format_tokens(1023ull << 10), "1023k");
    EXPECT_EQ(format_tokens(1536ull << 10), "1,572,864");
}

TEST(Units, ByteSizes) {
    EXPECT_EQ(*parse_bytes("80GiB", "--gpu-memory"), 80ull << 30);
    EXPECT_EQ(*parse_bytes("80 GB", "--gpu-memory"), 80'000'000'000ull);
    EXPECT_EQ(*parse_bytes("24g", "--gpu-memory"), 24ull << 30);
    EXPECT_EQ(*parse_bytes("3350GB", "--gpu-bandwidth"), 3'350'000'000'000ull);
    EXPECT_EQ(*parse_bytes("1024", "--gpu-memory"), 1024u);
    EXPECT_FIELD_ERROR(parse_bytes("lots", "--gpu-memory"), "--gpu-memory", "not a size");
    // Sizes as engines and nvidia-smi print them: the nearest whole byte (half up).
    EXPECT_EQ(*parse_bytes("23.58GiB", "--gpu-memory"), 25'318'832'210ull);  // 23.58 x 2^30 = 25,318,832,209.92
    EXPECT_EQ(*parse_bytes("23.58 GiB", "--gpu-memory"), 25'318'832'210ull);
    EXPECT_EQ(*parse_bytes("81559MiB", "--gpu-memory"), 81559ull << 20);
    EXPECT_EQ(*parse_bytes("0.0000000005GiB", "f"), 1u);  // 0.537 bytes
    EXPECT_EQ(*parse_bytes("0.0000000004GiB", "f"), 0u);
    EXPECT_EQ(*parse_bytes("1.5 KiB", "f"), 1536u);
    // A count of bytes is whole, and a size beyond 2^64 is refused.
    EXPECT_FIELD_ERROR(parse_bytes("1024.5", "--gpu-memory"), "--gpu-memory", "not a whole number");
    EXPECT_FIELD_ERROR(parse_bytes("1.5B", "--gpu-memory"), "--gpu-memory", "not a whole number");
    EXPECT_FIELD_ERROR(parse_bytes("17179869184.5GiB", "f"), "f", "too large");
}

TEST(Units, FormatsAreLabelledWithThreeSignificantDigits) {
    EXPECT_EQ(format_bytes(4ull << 30), "4.00 GiB");
    EXPECT_EQ(format_bytes(4ull << 30, UnitSystem::decimal), "4.29 GB");
    EXPECT_EQ(format_bytes(128ull << 20), "128 MiB");
    EXPECT_EQ(format_bytes(512), "512 B");
    EXPECT_EQ(format_bytes((1ull << 30) - 1), "1.00 GiB");  // never "1024 MiB"
    EXPECT_EQ(format_signed_bytes(-(3ll << 30)), "-3.00 GiB");
    EXPECT_EQ(format_count(1234567), "1,234,567");
    EXPECT_EQ(format_tokens(131072), "128k");
    EXPECT_EQ(format_tokens(1048576), "1M");
    EXPECT_EQ(format_tokens(1000), "1,000");
    // An engine's fraction: two decimals, three where it has them, and a tiny one with its own digits, never 0.00.
    EXPECT_EQ(fraction_text(0.9), "0.90");
    EXPECT_EQ(fraction_text(0.835), "0.835");
    EXPECT_EQ(fraction_text(1e-300), "1e-300");
    EXPECT_EQ(fraction_text(0.0001234), "0.000123");
}

TEST(Json, KeepsLinesColumnsAndExactIntegers) {
    auto r = json::parse("{\n  \"a\": 18446744073709551615,\n  \"b\": [1, 2.5, \"x\\u00e9\"]\n}");
    ASSERT_TRUE(r) << r.error.message;
    const auto* a = r.value->find("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->line(), 2);
    EXPECT_EQ(a->column(), 8);
    EXPECT_EQ(a->as_u64(), 18446744073709551615ull);
    const auto& b = r.value->find("b")->items();
    EXPECT_EQ(b[1].as_u64(), std::nullopt);  // 2.5 is not a whole number
    EXPECT_EQ(b[2].as_string(), "x\xC3\xA9");
    EXPECT_EQ(json::parse("4096.0").value->as_u64(), 4096u);
}

TEST(Json, ErrorsSayWhereAndWhat) {
    auto r = json::parse("{\"a\": 1,\n \"b\": }");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error.line, 2);
    EXPECT_EQ(r.error.column, 7);
    EXPECT_NE(r.error.message.find("unexpected character"), std::string::npos);
    EXPECT_FALSE(json::parse("[1, 2,]"));
    EXPECT_FALSE(json::parse("NaN"));
    EXPECT_FALSE(json::parse("{\"a\": 1} trailing"));
    // Deep nesting is refused, not a stack overflow.
    const std::string deep(100000, '[');
    auto d = json::parse(deep);
    ASSERT_FALSE(d);
    EXPECT_NE(d.error.message.find("nesting deeper"), std::string::npos);
}

TEST(Json, DumpRoundTrips) {
    json::Value v = json::Value::object();
    v.set("bytes", json::Value::number(std::uint64_t{4294967296}));
    v.set("pct", json::Value::number(25.0));
    v.set("neg", json::Value::number_signed(-3));
    v.set("name", json::Value::string("a \"q\""));
    auto back = json::parse(v.dump());
    ASSERT_TRUE(back);
    EXPECT_EQ(back.value->find("bytes")->as_u64(), 4294967296u);
    EXPECT_DOUBLE_EQ(back.value->find("pct")->as_double(), 25.0);
    EXPECT_EQ(back.value->find("neg")->as_i64(), -3);
    EXPECT_EQ(back.value->find("name")->as_string(), "a \"q\"");
}

TEST(Json, KeysKeepTheirOrderAndTheLastDuplicateWins) {
    // Setting a key again replaces it where it stands (the files KVScope writes keep their order).
    json::Value v = json::Value::object();
    for (const char* k : {"b", "a", "c"}) v.set(k, json::Value::number(std::uint64_t{1}));
    v.set("a", json::Value::number(std::uint64_t{2}));
    ASSERT_EQ(v.members().size(), 3u);
    EXPECT_EQ(v.members()[1].first, "a");
    EXPECT_EQ(v.find("a")->as_u64(), 2u);
    EXPECT_EQ(v.find("d"), nullptr);
    // A parsed object with a key twice: the last one, as Python's json module reads it.
    auto parsed = json::parse(R"({"x": 1, "y": 2, "x": 3})");
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed.value->find("x")->as_u64(), 3u);
    // Many keys: each found where it was put.
    json::Value big = json::Value::object();
    for (std::uint64_t i = 0; i < 20000; ++i) big.set("k" + std::to_string(i), json::Value::number(i));
    EXPECT_EQ(big.find("k12345")->as_u64(), 12345u);
    EXPECT_EQ(big.members().size(), 20000u);
}

// Llama 3.1 70B on two H100s at 8k × 4 (its weights estimated), and Gemma 3 27B's sliding layers for the layers'.
Scenario two_gpu_scenario(const char* model_id) {
    Scenario s;
    const CatalogModel* model = Catalog::builtin().find_model(model_id);
    EXPECT_NE(model, nullptr) << model_id;
    if (model) s.arch = model->model.arch;
    s.model_id = model_id;
    s.workload = {.context_tokens = 8192, .batch = 4};
    s.parallel = {.tp = 2};
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = 2;
    s.deployment = d;
    return s;
}

TEST(ReportJson, EveryFitReportMemberIsDeclaredOnce) {
    const Scenario s = two_gpu_scenario("llama-3.1-70b");
    auto fitted = fit(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment);
    ASSERT_TRUE(fitted) << fitted.error_text();
    auto decode = decode_estimate(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment, *fitted);
    ASSERT_TRUE(decode);
    const json::Value j = fit_report_json(s, *fitted, *decode);
    testing::expect_declared_once(*fitted, j, "FitReport");
    EXPECT_EQ(j.find("kv_cache_bytes_per_gpu")->as_u64(), fitted->kv_bytes_per_gpu);
}

TEST(ReportJson, EveryKvReportAndVariantMemberIsDeclaredOnce) {
    const Scenario s = two_gpu_scenario("gemma-3-27b");
    auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
    ASSERT_TRUE(kv) << kv.error_text();
    auto variants = compare_variants(s.arch, s.kv_dtype, s.workload, s.parallel);
    ASSERT_TRUE(variants) << variants.error_text();
    ASSERT_FALSE(kv->layers.empty());
    ASSERT_FALSE(variants->empty());
    const json::Value j = kv_report_json(s, *kv, *variants);
    testing::expect_declared_once(*kv, j, "KvCacheReport");
    testing::expect_declared_once(kv->layers.front(), j.find("layers")->items().front(), "LayerKv");
    testing::expect_declared_once(variants->front(), j.find("variants")->items().front(), "Variant");
    EXPECT_EQ(j.find("kv_cache_bytes")->as_u64(), kv->total_bytes);
    EXPECT_EQ(j.find("layers")->items().size(), kv->layers.size());
    // A sliding layer's window, a full layer's null.
    EXPECT_EQ(j.find("layers")->items().front().find("window")->as_u64(), kv->layers.front().window);
    EXPECT_EQ(j.find("variants")->items().front().find("name")->as_string(), variants->front().name);
}

TEST(ReportJson, EveryCurvesMemberIsDeclaredOnce) {
    const Scenario s = two_gpu_scenario("llama-3.1-70b");
    auto curves = kv_curves(s.arch, s.kv_dtype, s.workload, s.parallel);
    ASSERT_TRUE(curves) << curves.error_text();
    ASSERT_FALSE(curves->series.empty());
    const json::Value j = curves_json(s, *curves);
    testing::expect_declared_once(*curves, j, "Curves");
    testing::expect_declared_once(curves->series.front(), j.find("series")->items().front(), "Curve");
    EXPECT_EQ(j.find("tokens")->items().size(), curves->tokens.size());
    EXPECT_EQ(j.find("series")->items().front().find("kv_cache_bytes")->items().back().as_u64(),
              curves->series.front().bytes.back() - curves->series.front().state_bytes);
}

TEST(ReportJson, EveryPlanAndPlanOptionMemberIsDeclaredOnce) {
    Plan plan;
    plan.sequences = 4;
    plan.notes = {"a note"};
    PlanOption two;
    two.tp = 2;
    two.gpus = 2;
    two.fits = true;
    two.max_batch = 9;
    plan.options.push_back(two);
    const Scenario s = two_gpu_scenario("llama-3.1-70b");
    const json::Value j = plan_json(s, plan, {});
    testing::expect_declared_once(plan, j, "Plan");
    const json::Value& entry = j.find("options")->items().at(0);
    testing::expect_declared_once(plan.options.front(), entry, "PlanOption");
    EXPECT_EQ(entry.find("tp")->as_u64(), 2u);
    EXPECT_EQ(entry.find("max_batch")->as_u64(), 9u);
    EXPECT_TRUE(entry.find("why_not")->is_null());  // it fits
    EXPECT_EQ(j.find("sequences")->as_u64(), 4u);
}

}  // namespace
}  // namespace kvscope
