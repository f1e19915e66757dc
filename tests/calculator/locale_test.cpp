// Numbers in files, exports and typed fields mean the same in every locale. Each test runs with
// the C library switched to C, de_DE.UTF-8 and fr_FR.UTF-8 in turn (decimal comma in the last
// two), whatever locale the suite itself was started in (ctest starts it in all three).
#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <string>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/explain.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/quiz.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/units.h"
#include "kvscope/calculator/variants.h"
#include "sample_scenarios.h"

namespace kvscope {
namespace {

// Switches the C library's locale for one test and puts the previous one back.
class CLocale {
public:
    explicit CLocale(const char* name) {
        const char* now = std::setlocale(LC_ALL, nullptr);
        previous_ = now ? now : "C";
        ok_ = std::setlocale(LC_ALL, name) != nullptr;
    }
    ~CLocale() { std::setlocale(LC_ALL, previous_.c_str()); }
    CLocale(const CLocale&) = delete;
    CLocale& operator=(const CLocale&) = delete;
    [[nodiscard]] bool ok() const { return ok_; }

private:
    std::string previous_;
    bool ok_ = false;
};

class InEveryLocale : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        locale_ = std::make_unique<CLocale>(GetParam());
        ASSERT_TRUE(locale_->ok()) << GetParam() << " is not installed here; scripts/setup generates it";
    }
    void TearDown() override { locale_.reset(); }
    std::unique_ptr<CLocale> locale_;
};

INSTANTIATE_TEST_SUITE_P(Locales, InEveryLocale, ::testing::Values("C", "de_DE.UTF-8", "fr_FR.UTF-8"),
                         [](const auto& info) {
                             const std::string name = info.param;
                             return name.starts_with("de_DE") ? "German" : name.starts_with("fr_FR") ? "French" : "C";
                         });

using testing::fractional_deployment;

TEST_P(InEveryLocale, TheCLibraryIsTheOneAskedFor) {
    // Without this the other tests could pass only because the locale never changed.
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2f", 0.85);
    EXPECT_EQ(std::string(buf), std::string(GetParam()) == "C" ? "0.85" : "0,85");
}

TEST_P(InEveryLocale, NumbersAreWrittenAndReadWithAPoint) {
    EXPECT_EQ(number_text(0.85), "0.85");
    EXPECT_EQ(number_text(0.85, Notation::fixed, 3), "0.850");
    EXPECT_EQ(number_text(1234567.0, Notation::general, 3), "1.23e+06");
    EXPECT_EQ(number_text(1.5e-5, Notation::scientific, 2), "1.50e-05");
    EXPECT_EQ(number_from_text("0.85"), 0.85);
    EXPECT_EQ(number_from_text("1e-3"), 1e-3);
    EXPECT_FALSE(number_from_text("0,85").has_value());  // a file's number never has a comma
    EXPECT_FALSE(number_from_text(" 1").has_value());
    EXPECT_FALSE(number_from_text("inf").has_value());
    EXPECT_EQ(u64_from_text("18446744073709551615"), UINT64_MAX);
    EXPECT_FALSE(u64_from_text("18446744073709551616").has_value());
    EXPECT_EQ(format_bytes(3ull << 29), "1.50 GiB");
    EXPECT_EQ(format_si(1.234e12), "1.23 T");
    // Recomputing a long prefix passes 10^18 FLOPs: the prefixes go on (zetta, yotta) before a bare exponent.
    EXPECT_EQ(format_si(2.62e25), "26.2 Y");
    EXPECT_EQ(format_si(4.5e21), "4.50 Z");
}

TEST_P(InEveryLocale, ASavedScenarioIsJsonAndReadsBackTheSame) {
    const Scenario s = fractional_deployment();
    const std::string text = scenario_to_json(s);
    EXPECT_NE(text.find("\"fraction\": 0.85,"), std::string::npos) << text;
    EXPECT_NE(text.find("\"bf16_tflops\": 989.5,"), std::string::npos) << text;
    ASSERT_TRUE(json::parse(text)) << text;
    auto back = scenario_from_json(text, "plan.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario, s);
    EXPECT_EQ(back->scenario.deployment->fraction, 0.85);
    EXPECT_TRUE(back->repaired.empty()) << back->repaired;
}

TEST_P(InEveryLocale, TheJsonContractAndTheCsvParse) {
    const Scenario s = fractional_deployment();
    auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
    ASSERT_TRUE(kv.ok()) << kv.error_text();
    auto variants = compare_variants(s.arch, s.kv_dtype, s.workload, s.parallel);
    ASSERT_TRUE(variants.ok()) << variants.error_text();
    auto fitted = fit(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment);
    ASSERT_TRUE(fitted.ok()) << fitted.error_text();
    auto decode = decode_estimate(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment, *fitted);
    ASSERT_TRUE(decode.ok()) << decode.error_text();
    auto curves = kv_curves(s.arch, s.kv_dtype, s.workload, s.parallel);
    ASSERT_TRUE(curves.ok()) << curves.error_text();

    json::Value o = json::Value::object();
    o.set("kv", kv_report_json(s, *kv, *variants));
    o.set("fit", fit_report_json(s, *fitted, *decode));
    o.set("curves", curves_json(s, *curves));
    const std::string text = o.dump();
    auto parsed = json::parse(text);
    ASSERT_TRUE(parsed) << parsed.error.message << " at line " << parsed.error.line;
    // The fractional figures read back as the values computed, not as their whole part.
    const json::Value* f = parsed.value->find("fit");
    ASSERT_NE(f, nullptr);
    const json::Value* tps = f->find("decode_tokens_per_s_per_sequence");
    ASSERT_NE(tps, nullptr) << f->dump();
    EXPECT_DOUBLE_EQ(tps->as_double(), decode->tokens_per_s_per_sequence);

    // Every cell of the CSV after the header is a plain integer.
    const std::string csv = curves_csv(*curves);
    std::size_t line_start = csv.find('\n') + 1, rows = 0;
    while (line_start < csv.size()) {
        const std::size_t end = csv.find('\n', line_start);
        std::string line = csv.substr(line_start, end - line_start);
        for (std::size_t b = 0; b <= line.size();) {
            const std::size_t e = std::min(line.find(',', b), line.size());
            EXPECT_TRUE(u64_from_text(line.substr(b, e - b)).has_value()) << line;
            b = e + 1;
        }
        ++rows;
        line_start = end + 1;
    }
    EXPECT_EQ(rows, curves->tokens.size());
}

TEST_P(InEveryLocale, AConfigWithFractionalFieldsImports) {
    // Real configs carry fractions (rms_norm_eps, rope_theta) and whole numbers written as reals.
    const std::string config = R"({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": 32, "num_attention_heads": 3.2e1, "num_key_value_heads": 8.0,
        "hidden_size": 4096.0, "intermediate_size": 14336, "vocab_size": 128256,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "torch_dtype": "bfloat16"})";
    auto m = import_config(config, "config.json");
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->arch.query_heads, 32u);
    EXPECT_EQ(m->arch.kv_heads, 8u);
    EXPECT_EQ(m->arch.head_dim_k, 128u);
}

TEST_P(InEveryLocale, TypedNumbersAcceptEitherHabit) {
    EXPECT_EQ(*parse_bytes("1.5GiB", "f"), 3ull << 29);
    EXPECT_EQ(*parse_bytes("1,5 GiB", "f"), 3ull << 29);
    EXPECT_EQ(*parse_count("131,072", "f"), 131072u);  // the way the window writes counts
    EXPECT_EQ(*parse_count("131 072", "f"), 131072u);
    EXPECT_EQ(*parse_count("1,5k", "f"), 1536u);
    EXPECT_EQ(parse_answer("1,5 GiB", AnswerUnit::bytes), 1.5 * (1ull << 30));
    EXPECT_EQ(parse_answer("90,533 tokens", AnswerUnit::tokens), 90533.0);
    EXPECT_EQ(parse_answer("12,5 %", AnswerUnit::percent), 12.5);
    EXPECT_EQ(parse_answer("1.6e9", AnswerUnit::bytes), 1.6e9);
}

TEST(LocaleRoundTrip, ASavedScenarioOpensInEveryOtherLocaleWithTheSameResults) {
    const char* locales[] = {"C", "de_DE.UTF-8", "fr_FR.UTF-8"};
    const Scenario s = fractional_deployment();
    for (const char* saved_in : locales) {
        std::string text;
        {
            const CLocale here(saved_in);
            ASSERT_TRUE(here.ok()) << saved_in;
            text = scenario_to_json(s);
        }
        for (const char* opened_in : locales) {
            const CLocale there(opened_in);
            ASSERT_TRUE(there.ok()) << opened_in;
            auto back = scenario_from_json(text, "plan.kvscope.json");
            ASSERT_TRUE(back.ok()) << saved_in << " -> " << opened_in << ": " << back.error_text();
            EXPECT_EQ(back->scenario, s) << saved_in << " -> " << opened_in;
            const Scenario& r = back->scenario;
            auto f = fit(r.arch, r.kv_dtype, r.workload, r.parallel, *r.deployment);
            auto expected = fit(s.arch, s.kv_dtype, s.workload, s.parallel, *s.deployment);
            ASSERT_TRUE(f.ok() && expected.ok());
            EXPECT_EQ(f->kv_budget_bytes, expected->kv_budget_bytes) << saved_in << " -> " << opened_in;
            EXPECT_EQ(f->max_context, expected->max_context) << saved_in << " -> " << opened_in;
        }
    }
}

TEST(TypedDecimal, ReadsTheCommonHabitsAndRefusesWhatCouldMeanTwoNumbers) {
    auto plain = [](const char* t) { return read_typed_decimal(t).plain; };
    EXPECT_EQ(plain("0,85"), "0.85");
    EXPECT_EQ(plain("0.85"), "0.85");
    EXPECT_EQ(plain(",85"), "0.85");
    EXPECT_EQ(plain("0,850"), "0.850");  // a zero whole part: a fraction, not a group
    EXPECT_EQ(plain("1.234,5"), "1234.5");
    EXPECT_EQ(plain("1,234.5"), "1234.5");
    EXPECT_EQ(plain("131.072.000"), "131072000");
    EXPECT_EQ(plain("1\xE2\x80\xAF"
                    "024"),
              "1024");  // French narrow no-break space
    EXPECT_EQ(plain("1\xC2\xA0"
                    "024,5"),
              "1024.5");
    EXPECT_EQ(plain("1 000,500"), "1000.500");  // French: spaces group, so the comma is decimal
    EXPECT_EQ(plain("131.072"), "131.072");     // a lone point is always a decimal point
    for (const char* bad : {"1,2,3", "12,34,567", "1.2.3,4,5", "1,234,5", "1.", "1..2", "", "0x10", "1 2"})
        EXPECT_FALSE(read_typed_decimal(bad).error.empty()) << bad << " read as " << plain(bad);
    EXPECT_NE(parse_count("12,34,567", "f").error_text().find("digit groups are three digits"), std::string::npos);
    // A character that is not a digit is quoted whole: a full-width "１" (3 bytes of UTF-8), never its first byte.
    EXPECT_EQ(read_typed_decimal("\xEF\xBC\x91GiB").error, "'\xEF\xBC\x91' is not a digit");
}

TEST(DecimalCommaRepair, RepairsExactlyWhatTheOldWriterDamaged) {
    // What KVScope 0.1 wrote in a German locale: every fraction with a comma.
    std::string text = scenario_to_json(fractional_deployment());
    for (auto [from, to] : {std::pair{"0.85", "0,85"}, std::pair{"989.5", "989,5"}}) {
        const auto at = text.find(from);
        ASSERT_NE(at, std::string::npos);
        text.replace(at, std::string(from).size(), to);
    }
    ASSERT_FALSE(json::parse(text));
    auto back = scenario_from_json(text, "Plan 1.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario, fractional_deployment());
    EXPECT_NE(back->repaired.find("fraction 0,85 -> 0.85"), std::string::npos) << back->repaired;
    EXPECT_NE(back->repaired.find("bf16_tflops 989,5 -> 989.5"), std::string::npos) << back->repaired;
    EXPECT_NE(back->repaired.find("Plan 1.kvscope.json"), std::string::npos) << back->repaired;

    // Arrays and strings are left alone; only a digit-comma-digit where a key must follow is changed.
    auto r = json::repair_decimal_commas(R"({"a": [1,5], "s": "0,5", "x": 0,5, "y": -2,25e-3})");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->text, R"({"a": [1,5], "s": "0,5", "x": 0.5, "y": -2.25e-3})");
    ASSERT_EQ(r->repairs.size(), 2u);
    EXPECT_EQ(r->repairs[1].key, "y");
    EXPECT_EQ(r->repairs[1].before, "-2,25e-3");
    EXPECT_FALSE(json::repair_decimal_commas(R"({"a": [1,5], "b": 2})").has_value());

    // Other damage is still reported as it was, with its line.
    auto broken = scenario_from_json("{\"kvscope_scenario\": 1,\n\"x\": 0,5,", "cut.kvscope.json");
    EXPECT_FALSE(broken.ok());
    EXPECT_NE(broken.error_text().find("not valid JSON"), std::string::npos) << broken.error_text();
}

}  // namespace
}  // namespace kvscope
