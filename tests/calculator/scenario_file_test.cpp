// Saved scenarios and the explanations shown beside the numbers.
#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/explain.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/weights.h"
#include "testing.h"

namespace kvscope {
namespace {

using testing::make_arch;

Scenario llama70b_on_two_h100() {
    const Catalog& c = Catalog::builtin();
    Scenario s;
    s.model_id = "llama-3-70b";
    s.arch = c.find_model("llama-3-70b")->model.arch;
    s.kv_dtype = KvDtype::fp8_e4m3;
    s.workload = {131072, 8, 16, false};
    s.parallel = {2, 1};
    Deployment d;
    d.gpu = *c.find_gpu("h100-sxm");
    d.gpu_count = 2;
    d.engine = Engine::sglang;
    d.fraction = 0.88;
    d.weight_dtype = KvDtype::fp8_e4m3;
    s.deployment = d;
    return s;
}

TEST(ScenarioFile, EveryCatalogModelRoundTripsExactly) {
    for (const auto& m : Catalog::builtin().models()) {
        Scenario s = llama70b_on_two_h100();
        s.model_id = m.id;
        s.arch = m.model.arch;  // windows, MLA, MoE and published counts included
        auto back = scenario_from_json(scenario_to_json(s), "x.kvscope.json");
        ASSERT_TRUE(back.ok()) << m.id << ": " << back.error_text();
        EXPECT_EQ(back->scenario.arch, s.arch) << m.id;
        EXPECT_EQ(back->scenario.model_id, m.id);
        EXPECT_EQ(back->scenario.kv_dtype, KvDtype::fp8_e4m3);
        EXPECT_EQ(back->scenario.workload, s.workload);
        EXPECT_EQ(back->scenario.parallel, s.parallel);
        ASSERT_TRUE(back->scenario.deployment.has_value());
        EXPECT_EQ(*back->scenario.deployment, *s.deployment);  // the GPU's aliases and source too
        EXPECT_EQ(back->scenario.deployment->engine, Engine::sglang);
        EXPECT_DOUBLE_EQ(back->scenario.deployment->fraction, 0.88);
        EXPECT_EQ(back->unread, "") << m.id;  // every member written is read back
    }
}

TEST(ScenarioFile, AFileWrittenBeforeGgufArchTakesTheCatalogModelsOwn) {
    // Files written before the architecture kept llama.cpp's name for it: a catalog model unchanged takes the
    // catalog's (it is not shown as edited, and its GGUF mix keeps its fused attn_qkv); an edited one stays unnamed.
    const CatalogModel& phi = *Catalog::builtin().find_model("phi-3-mini");
    ASSERT_EQ(phi.model.arch.gguf_arch, "phi3");
    Scenario s = llama70b_on_two_h100();
    s.model_id = phi.id;
    s.arch = phi.model.arch;
    s.arch.gguf_arch.clear();  // as such a file holds it
    const std::string old_file = scenario_to_json(s);
    ASSERT_EQ(old_file.find("gguf_arch"), std::string::npos);
    auto back = scenario_from_json(old_file, "old.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.arch, phi.model.arch);
    s.arch.layers = 30;  // edited
    s.arch.layer_specs.clear();
    back = scenario_from_json(scenario_to_json(s), "old.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.arch.gguf_arch, "");
}

TEST(ScenarioFile, TheExactWeightsOfAModelsFilesAreKept) {
    Scenario s = llama70b_on_two_h100();
    s.deployment->weights_bytes_exact = 40'123'456'789;
    s.deployment->weights_source = "40,123,456,789 bytes, exact from the GGUF's 724 tensors in 2 files";
    // The model's own, for a deployment started later: a GGUF's, with its engine.
    s.model_weights = ModelWeights{KvDtype::q4_0, 40'123'456'789, s.deployment->weights_source, Engine::llama_cpp};
    const std::string text = scenario_to_json(s);
    EXPECT_NE(text.find("\"weights_bytes_exact\": 40123456789"), std::string::npos) << text;
    EXPECT_NE(text.find("\"engine\": \"llama.cpp\""), std::string::npos) << text;
    auto back = scenario_from_json(text, "x.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(*back->scenario.deployment, *s.deployment);
    EXPECT_EQ(back->scenario, s);
    // Without an engine (a safetensors folder's weights): none read back.
    s.model_weights->engine.reset();
    EXPECT_EQ(scenario_from_json(scenario_to_json(s), "z.kvscope.json")->scenario.model_weights, s.model_weights);
    // Files without them (every file before) read as estimated weights, and write nothing for them.
    const std::string plain = scenario_to_json(llama70b_on_two_h100());
    EXPECT_EQ(plain.find("weights_bytes_exact"), std::string::npos);
    EXPECT_EQ(scenario_from_json(plain, "y.kvscope.json")->scenario.deployment->weights_bytes_exact, 0u);
}

TEST(ScenarioFile, AQuantizedCheckpointsSchemeIsKeptAndBounded) {
    Scenario s = llama70b_on_two_h100();
    std::vector<std::string> notes;
    const auto config = json::parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": true})");
    ASSERT_TRUE(config);
    s.deployment->weight_quant = weight_quant_from_config(*config.value, notes);
    ASSERT_TRUE(s.deployment->weight_quant);
    s.deployment->mtp = true;  // with the model's MTP layer as a draft
    s.arch.mtp_layers = 1;
    s.model_weights = ModelWeights{KvDtype::fp16, 0, "", std::nullopt, s.deployment->weight_quant};
    const std::string text = scenario_to_json(s);
    EXPECT_NE(text.find("\"method\": \"gptq\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"mtp\": true"), std::string::npos) << text;
    EXPECT_NE(text.find("\"mtp_layers\": 1"), std::string::npos) << text;
    auto back = scenario_from_json(text, "x.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario, s);
    const auto weights = [](const Scenario& x) { return *stored_weights_bytes(x.arch, *x.deployment); };
    EXPECT_EQ(weights(back->scenario), weights(s));
    // A file's scheme out of any format's range is named when the fit runs, never a wrapped total.
    std::string bad = text;
    bad.replace(bad.find("\"bits\": 4"), 9, "\"bits\": 400");
    back = scenario_from_json(bad, "y.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    const auto f = fit(back->scenario.arch, back->scenario.kv_dtype, back->scenario.workload, back->scenario.parallel,
                       *back->scenario.deployment);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error_text().find("the weights' quantization (gptq) must have 1 to 16 bits a weight"),
              std::string::npos)
        << f.error_text();
}

TEST(ScenarioFile, SglangsFractionIsKeptWhenGivenAndDerivedWhenNot) {
    Scenario s = llama70b_on_two_h100();
    s.deployment->engine = Engine::sglang;
    s.deployment->fraction = 0.88;
    auto back = scenario_from_json(scenario_to_json(s), "x.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_FALSE(back->scenario.deployment->fraction_given);  // 0.88 was SGLang's old default: derived now
    s.deployment->fraction = 0.88;
    s.deployment->fraction_given = true;  // given as 0.88: kept as given
    back = scenario_from_json(scenario_to_json(s), "y.kvscope.json");
    EXPECT_TRUE(back->scenario.deployment->fraction_given);
    // A file from before, with SGLang at another fraction: that was set by hand, and stays.
    s.deployment->fraction = 0.8;
    s.deployment->fraction_given = false;
    back = scenario_from_json(scenario_to_json(s), "z.kvscope.json");
    EXPECT_TRUE(back->scenario.deployment->fraction_given);
    EXPECT_DOUBLE_EQ(back->scenario.deployment->fraction, 0.8);
}

TEST(ScenarioFile, AUnifiedMemoryComputerKeepsItsMachineAndShare) {
    Scenario s = llama70b_on_two_h100();
    s.deployment->gpu = *Catalog::builtin().find_gpu("m4-max-128gb");
    s.deployment->gpu.memory_bytes = 110ull << 30;  // the wired limit raised
    auto back = scenario_from_json(scenario_to_json(s), "mac ü.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.deployment->gpu, s.deployment->gpu);
    EXPECT_EQ(back->scenario.deployment->gpu.unified_memory_bytes, 128ull << 30);
}

TEST(ScenarioFile, VllmsStartupSettingsAndAFixedReserveAreKept) {
    Scenario s = llama70b_on_two_h100();
    s.deployment->engine = Engine::vllm;
    s.deployment->vllm = {.max_num_batched_tokens = 16384,
                          .max_num_seqs = 64,
                          .enforce_eager = true,
                          .version_minor = 21,
                          .version_patch = 0};  // 0.21.0: a patch of 0 is a patch given, kept apart from none
    s.deployment->fixed_reserve = true;
    s.deployment->activation_reserve_bytes = 3ull << 30;
    const std::string text = scenario_to_json(s);
    EXPECT_NE(text.find("\"max_num_batched_tokens\": 16384"), std::string::npos) << text;
    EXPECT_NE(text.find("\"version_patch\": 0"), std::string::npos) << text;
    auto back = scenario_from_json(text, "x.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(*back->scenario.deployment, *s.deployment);
    // A file saved before (1 GiB and 512 MiB written out, no fixed_reserve): vLLM derives its own reserve, so the
    // old defaults do not pin it; and the settings are vLLM's defaults.
    Scenario old = llama70b_on_two_h100();
    old.deployment->engine = Engine::vllm;
    const std::string plain = scenario_to_json(old);
    EXPECT_EQ(plain.find("fixed_reserve"), std::string::npos) << plain;
    EXPECT_EQ(plain.find("\"vllm\": {"), std::string::npos) << plain;
    EXPECT_NE(plain.find("\"activation_reserve_bytes\": 1073741824"), std::string::npos) << plain;
    const auto read = scenario_from_json(plain, "y.kvscope.json");
    ASSERT_TRUE(read.ok()) << read.error_text();
    EXPECT_FALSE(read->scenario.deployment->fixed_reserve);
    EXPECT_EQ(read->scenario.deployment->vllm, VllmSettings{});
    // A reserve set by hand in such a file (not the old defaults) stays fixed.
    std::string by_hand = plain;
    by_hand.replace(by_hand.find("1073741824"), 10, "2147483648");
    EXPECT_TRUE(scenario_from_json(by_hand, "z.kvscope.json")->scenario.deployment->fixed_reserve);
}

TEST(ScenarioFile, TheReportsArchitectureIsTheFilesAndReadsBack) {
    // `kv --json` writes the architecture with the file's own writer, then what follows from it: a
    // report's architecture opens as a scenario's and gives the same model, member for member.
    for (const auto& m : Catalog::builtin().models()) {
        Scenario s = llama70b_on_two_h100();
        s.arch = m.model.arch;
        s.arch.not_exact = {"a reason"};
        s.parallel = {};  // one GPU: every catalog model has a valid report there
        const auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, s.parallel);
        ASSERT_TRUE(kv.ok()) << m.id << ": " << kv.error_text();
        json::Value doc = scenario_json(s);
        doc.set("architecture", *kv_report_json(s, *kv, {}).find("architecture"));
        auto back = scenario_from_json(doc.dump(), "report.json");
        ASSERT_TRUE(back.ok()) << m.id << ": " << back.error_text();
        EXPECT_EQ(back->scenario.arch, s.arch) << m.id;
    }
}

TEST(ScenarioFile, KeepsInputsTheCalculatorWouldReject) {
    // A half-edited scenario (5 KV heads for 32 query heads) comes back as it was left.
    Scenario s;
    s.arch = make_arch(32, 32, 5, 128);
    auto back = scenario_from_json(scenario_to_json(s), "draft.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.arch.kv_heads, 5u);
    EXPECT_FALSE(back->scenario.deployment.has_value());
}

TEST(ScenarioFile, NewerVersionIsRefusedWithAnUpdateHint) {
    EXPECT_FIELD_ERROR(scenario_from_json(R"({"kvscope_scenario": 7})", "new.kvscope.json"),
                       "new.kvscope.json:1 kvscope_scenario", "newer KVScope (format 7");
}

TEST(ScenarioFile, ConfigJsonIsPointedAtImport) {
    EXPECT_FIELD_ERROR(scenario_from_json(R"({"num_hidden_layers": 32})", "config.json"), "config.json",
                       "Import model");
}

TEST(ScenarioFile, WrongTypesNameTheFieldAndLine) {
    std::string text = scenario_to_json(llama70b_on_two_h100());
    const auto at = text.find("\"batch\": 8");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 10, "\"batch\": \"eight\"");
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    EXPECT_FIELD_ERROR(scenario_from_json(text, "s.kvscope.json"), "s.kvscope.json:" + std::to_string(line) + " batch",
                       "whole number");
    EXPECT_FIELD_ERROR(scenario_from_json("{\"kvscope_scenario\": 1,", "cut.kvscope.json"), "cut.kvscope.json:1",
                       "not valid JSON");
}

TEST(ScenarioFile, ANumberOutOfRangeSaysWhich) {
    // 1e300 bytes is too large, not "not a whole number"; -1 and 1.5 say what they lack.
    const std::string text = scenario_to_json(llama70b_on_two_h100());
    const auto at = text.find("\"batch\": 8");
    ASSERT_NE(at, std::string::npos);
    const auto with = [&](const std::string& batch) {
        std::string t = text;
        t.replace(at, 10, "\"batch\": " + batch);
        return scenario_from_json(t, "s");
    };
    const std::string batch =
        "s:" + std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')) +
        " batch";
    EXPECT_FIELD_ERROR(with("1e300"), batch, "is too large (at most 18446744073709551615)");
    EXPECT_FIELD_ERROR(with("18446744073709551616"), batch, "is too large");
    EXPECT_FIELD_ERROR(with("-1"), batch, "must be 0 or more");
    EXPECT_FIELD_ERROR(with("1.5"), batch, "must be a whole number");
    EXPECT_FIELD_ERROR(with("\"8\""), batch, "must be a whole number of 0 or more");
}

TEST(ScenarioFile, TheImportsWarningsAreKeptAndChecked) {
    const Scenario s = llama70b_on_two_h100();
    const std::vector<std::string> warnings{"quantization 'weirdq' is not modelled", "state in fp32"};
    auto back = scenario_from_json(scenario_to_json(s, warnings), "w.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->warnings, warnings);
    EXPECT_EQ(back->scenario, s);
    EXPECT_EQ(scenario_to_json(s).find("\"warnings\""), std::string::npos);
    // A list that is not of strings is refused with its line, as every member is.
    std::string text = scenario_to_json(s);
    text.erase(text.rfind('}'));
    text += ",\n\"warnings\": [1]}";
    const auto line = std::count(text.begin(), text.end(), '\n') + 1;
    EXPECT_FIELD_ERROR(scenario_from_json(text, "w"), "w:" + std::to_string(line) + " warnings", "must hold strings");
}

TEST(ScenarioFile, AStringOfStrayBytesReadsAndWritesBackTheSame) {
    // A name with a byte that is no UTF-8 and a lone surrogate: read as U+FFFD, as the writer writes it, so saving
    // the scenario again and reading it gives the same scenario (the fuzzer's round trip).
    std::string text = scenario_to_json(llama70b_on_two_h100());
    const auto at = text.find("\"name\": \"");
    ASSERT_NE(at, std::string::npos);
    text.insert(at + 9, "caf\xe9 \\ud800 ");
    auto s = scenario_from_json(text, "s");
    ASSERT_TRUE(s.ok()) << s.error_text();
    EXPECT_EQ(s->scenario.arch.name.rfind("caf\xEF\xBF\xBD \xEF\xBF\xBD", 0), 0u) << s->scenario.arch.name;
    auto again = scenario_from_json(scenario_to_json(s->scenario), "again");
    ASSERT_TRUE(again.ok()) << again.error_text();
    EXPECT_EQ(again->scenario, s->scenario);
}

TEST(ScenarioFile, FieldsThisVersionDoesNotReadAreSaidWithTheirLines) {
    // A newer version's input (or a key misspelt by hand) is not silently left out of the numbers and the next save.
    Scenario s = llama70b_on_two_h100();
    s.arch.layer_specs = sliding_layers({4096, 0});
    std::string text = scenario_to_json(s);
    const auto line_of = [&](std::string_view needle) {
        const auto at = text.find(needle);
        EXPECT_NE(at, std::string::npos) << needle;
        return std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    };
    text.insert(text.find("\"kind\": \"full\""), "\"sink_tokens\": 4, ");
    text.insert(text.find("\"layers\":"), "\"kv_lora\": 512, ");
    text.insert(text.find("\"kv_dtype\":"), "\"prefix_cache_share\": 0.5, ");
    auto back = scenario_from_json(text, "new.kvscope.json");
    ASSERT_TRUE(back.ok()) << back.error_text();
    EXPECT_EQ(back->scenario.arch, s.arch);
    EXPECT_EQ(back->unread,
              "new.kvscope.json holds 3 fields this version of KVScope does not read: architecture.kv_lora (line " +
                  line_of("\"kv_lora\"") + "), architecture.layer_specs[1].sink_tokens (line " +
                  line_of("\"sink_tokens\"") + "), prefix_cache_share (line " + line_of("\"prefix_cache_share\"") +
                  "). The numbers leave them out (a newer KVScope or a hand edit may have written them), and saving "
                  "writes the file without them.");
    // A required key misspelt: missing under its name, and the spelling the file holds is named beside it.
    std::string misspelt = scenario_to_json(s);
    misspelt.replace(misspelt.find("\"context_tokens\""), 16, "\"contxt_tokens\"");
    const auto refused = scenario_from_json(misspelt, "m.kvscope.json");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error_text().find("context_tokens: is missing"), std::string::npos) << refused.error_text();
    EXPECT_NE(refused.error_text().find("also holds fields this version of KVScope does not read: "
                                        "workload.contxt_tokens (line"),
              std::string::npos)
        << refused.error_text();
    // A key given twice by hand: the last is read, and both lines are named (with any unread field beside them).
    std::string twice = scenario_to_json(s);
    const std::string batch = "\"batch\": " + std::to_string(s.workload.batch);
    twice.insert(twice.find(batch), "\"batch\": 3,\n");
    twice.insert(twice.find("\"kv_dtype\":"), "\"prefix_cache_share\": 0.5, ");
    text = twice;  // line_of reads `text`
    const std::string first = line_of("\"batch\": 3"), prefix = line_of("\"prefix_cache_share\"");
    const auto at = twice.find(batch);
    const std::string last =
        std::to_string(1 + std::count(twice.begin(), twice.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    auto doubled = scenario_from_json(twice, "t.kvscope.json");
    ASSERT_TRUE(doubled.ok()) << doubled.error_text();
    EXPECT_EQ(doubled->scenario.workload.batch, s.workload.batch);  // the last, as Python's json reads it
    EXPECT_EQ(doubled->unread,
              "t.kvscope.json holds a field this version of KVScope does not read: "
              "prefix_cache_share (line " +
                  prefix +
                  "). The numbers leave it out (a newer KVScope or a hand edit may have written it), "
                  "and saving writes the file without it. t.kvscope.json gives a field more than once: "
                  "workload.batch (lines " +
                  first + " and " + last + "). The numbers read the last of each, and saving writes only it.");
    // Given three times, one entry with every line; an unknown key given twice is named once, as unread.
    std::string thrice = scenario_to_json(s);
    thrice.insert(thrice.find(batch), "\"batch\": 3,\n\"batch\": 4,\n\"prefix_share\": 1,\n\"prefix_share\": 2,\n");
    auto three = scenario_from_json(thrice, "3.kvscope.json");
    ASSERT_TRUE(three.ok()) << three.error_text();
    const std::string b1 = [&] {
        const auto at = thrice.find("\"batch\": 3");
        return std::to_string(1 + std::count(thrice.begin(), thrice.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    }();
    const std::string b2 = std::to_string(std::stoi(b1) + 1), b3 = std::to_string(std::stoi(b1) + 4);
    EXPECT_NE(three->unread.find("gives a field more than once: workload.batch (lines " + b1 + ", " + b2 + " and " +
                                 b3 + ")"),
              std::string::npos)
        << three->unread;
    EXPECT_NE(three->unread.find("holds a field this version of KVScope does not read: workload.prefix_share (lines " +
                                 std::to_string(std::stoi(b1) + 2) + " and " + std::to_string(std::stoi(b1) + 3) + ")"),
              std::string::npos)
        << three->unread;
    const auto first_prefix = three->unread.find("prefix_share");
    EXPECT_EQ(three->unread.find("prefix_share", first_prefix + 1), std::string::npos) << three->unread;  // said once
    // The keys every version reads, a legacy one included, are not listed.
    text = scenario_to_json(s, {"a warning"});
    text.insert(text.find("\"layers\":"), "\"layer_windows\": [4096, 0], ");
    auto plain = scenario_from_json(text, "old.kvscope.json");
    ASSERT_TRUE(plain.ok()) << plain.error_text();
    EXPECT_EQ(plain->unread, "");
}

TEST(ScenarioFile, UnknownFormatsAreNamed) {
    std::string text = scenario_to_json(llama70b_on_two_h100());
    const auto at = text.find("\"kv_dtype\": \"fp8_e4m3\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 22, "\"kv_dtype\": \"fp7\"");
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    EXPECT_FIELD_ERROR(scenario_from_json(text, "s"), "s:" + std::to_string(line) + " kv_dtype", "'fp7' is not one of");
}

TEST(KvFormula, TheLessonModelReadsLikeTheLesson) {
    const Architecture a = teaching_model();
    auto mha = kv_formula_text(a, KvDtype::fp16, {8192, 1, 1, false}, {});
    ASSERT_TRUE(mha.ok());
    EXPECT_EQ(*mha,
              "2 (K and V) × 32 layers × 32 KV heads × 128 head dim × 2 bytes (fp16) × 8,192 tokens × 1 sequence"
              " = 4,294,967,296 bytes = 4.00 GiB");
    auto gqa = kv_formula_text(make_arch(32, 32, 8, 128), KvDtype::fp16, {8192, 1, 1, false}, {}, UnitSystem::decimal);
    ASSERT_TRUE(gqa.ok());
    EXPECT_NE(gqa->find("8 KV heads"), std::string::npos);
    EXPECT_TRUE(gqa->ends_with("= 1,073,741,824 bytes = 1.07 GB")) << *gqa;
}

TEST(KvFormula, TotalIsTheReportsForEveryCatalogModel) {
    const Workload w{32768, 4, 16, false};
    for (const auto& m : Catalog::builtin().models()) {
        auto text = kv_formula_text(m.model.arch, KvDtype::q8_0, w, {});
        auto report = kv_cache_report(m.model.arch, KvDtype::q8_0, w, {});
        ASSERT_TRUE(text.ok() && report.ok()) << m.id;
        EXPECT_NE(text->find("= " + format_count(report->total_bytes) + " bytes"), std::string::npos) << *text;
    }
    // Sliding layers are summed by what they store.
    auto gemma = kv_formula_text(Catalog::builtin().find_model("gemma-2-9b")->model.arch, KvDtype::bf16,
                                 {32768, 1, 1, false}, {});
    ASSERT_TRUE(gemma.ok());
    EXPECT_NE(gemma->find("(21 layers × 32,768 tokens + 21 layers × 4,096 tokens (sliding window))"), std::string::npos)
        << *gemma;
}

TEST(KvFormula, InvalidInputsGiveTheCalculatorsErrors) {
    EXPECT_FIELD_ERROR(kv_formula_text(make_arch(32, 32, 5, 128), KvDtype::fp16, {}, {}), "kv_heads", "divide");
}

TEST(ContextWhereKvExceeds, FindsTheFirstTokenOverTheLimit) {
    const Architecture a = teaching_model();  // 512 KiB per token in fp16
    const Workload w{8192, 2, 1, false};
    auto layout = KvLayout::make(a, KvDtype::fp16, w, {});
    ASSERT_TRUE(layout.ok());
    // Two sequences: 1 MiB per token; 1 GiB is exceeded at token 1025.
    EXPECT_EQ(context_where_kv_exceeds(*layout, w, 1ull << 30), 1025u);
    const Architecture windowed = [] {
        auto s = make_arch(2, 8, 8, 64);
        s.layer_specs = sliding_layers({128, 128});
        return s;
    }();
    auto capped = KvLayout::make(windowed, KvDtype::fp16, w, {});
    ASSERT_TRUE(capped.ok());
    EXPECT_FALSE(context_where_kv_exceeds(*capped, w, 1ull << 30).has_value());
}

TEST(CurvesCsv, HeaderNamesEverySeriesAndRowsAreExact) {
    auto curves = kv_curves(teaching_model(), KvDtype::fp16, {8192, 1, 1, false}, {},
                            {.points = 2, .min_tokens = 1, .max_tokens = 8192, .spacing = Spacing::linear});
    ASSERT_TRUE(curves.ok());
    EXPECT_EQ(curves_csv(*curves),
              "tokens,MHA bytes,GQA-8 bytes,MQA bytes\n1,524288,131072,16384\n8192,4294967296,1073741824,134217728\n");
}

}  // namespace
}  // namespace kvscope
