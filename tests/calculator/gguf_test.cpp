// GGUF headers: the reader (every value type, versions, corrupt and hostile files) and the model llama.cpp would
// load from one, checked against the same model's published config.json in the catalog.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <sys/stat.h>
#include <unistd.h>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/safetensors.h"
#include "kvscope/calculator/text_file.h"
#include "kvscope/calculator/units.h"
#include "testing.h"

namespace kvscope {
namespace {

using GgufWriter = gguf::Writer;

// The keys convert_hf_to_gguf.py writes for a model, from its published GGUF conversions.
GgufWriter base(const std::string& arch, std::uint32_t layers, std::uint32_t ctx, std::uint32_t embd, std::uint32_t ff,
                std::uint32_t heads) {
    GgufWriter w;
    w.str("general.architecture", arch).str("general.name", "test " + arch);
    w.u32(arch + ".block_count", layers).u32(arch + ".context_length", ctx).u32(arch + ".embedding_length", embd);
    if (ff > 0) w.u32(arch + ".feed_forward_length", ff);
    if (heads > 0) w.u32(arch + ".attention.head_count", heads);
    return w;
}

ImportedModel imported(const GgufWriter& w) {
    // The header alone, standing for a whole file whose size is not known: the check of a file that lacks its
    // tensors' data has its own tests (Gguf.AFileWithoutItsTensorsDataIsSaidNotToLoad).
    auto file = gguf::read(w.bytes(), "model.gguf");
    if (file) file.value().file_bytes = 0;
    auto m = gguf::import(*file, "model.gguf");
    EXPECT_TRUE(m.ok()) << m.error_text();
    return m.ok() ? *m : ImportedModel{};
}

using testing::catalog_arch;

// The KV bytes of both at several contexts and batches; the recurrent state too, in llama.cpp's f32.
void expect_same_cache(const Architecture& gguf_arch, Architecture config_arch) {
    if (config_arch.recurrent) config_arch.recurrent->conv_dtype = config_arch.recurrent->ssm_dtype = KvDtype::fp32;
    for (const std::uint64_t context : {1ull, 4096ull, 8193ull, 32768ull, 131072ull})
        for (const std::uint64_t batch : {1ull, 3ull}) {
            Workload w;
            w.context_tokens = context, w.batch = batch;
            const auto a = kv_cache_report(gguf_arch, KvDtype::fp16, w, Parallelism{});
            const auto b = kv_cache_report(config_arch, KvDtype::fp16, w, Parallelism{});
            ASSERT_TRUE(a.ok()) << a.error_text();
            ASSERT_TRUE(b.ok()) << b.error_text();
            EXPECT_EQ(a->total_bytes, b->total_bytes) << config_arch.name << " at " << context << " x " << batch;
            EXPECT_EQ(a->state_bytes, b->state_bytes) << config_arch.name << " at " << context << " x " << batch;
        }
}

TEST(Gguf, ReadsEveryValueTypeInVersions2And3) {
    for (const std::uint32_t version : {2u, 3u}) {
        GgufWriter w;
        w.u8("a.u8", 200).i32("a.i32", -5).u32("a.u32", 4096).u64("a.u64", 1ull << 40).f32("a.f32", 0.5f);
        w.flag("a.bool", true).str("a.text", "llama").u32s("a.list", {8, 0, 8}).strings("tokenizer.ggml.tokens", 1000);
        w.tensor("token_embd.weight", {4096, 32000}, 12);
        const auto f = gguf::read(w.bytes(version), "m.gguf");
        ASSERT_TRUE(f.ok()) << f.error_text();
        EXPECT_EQ(f->version, version);
        EXPECT_EQ(f->find("a.u8")->as_u64(), 200u);
        EXPECT_EQ(f->find("a.i32")->as_u64(), std::nullopt);  // negative: no count
        EXPECT_EQ(f->find("a.u64")->as_u64(), 1ull << 40);
        EXPECT_EQ(f->find("a.f32")->as_double(), 0.5);
        EXPECT_EQ(f->find("a.bool")->as_u64(), 1u);
        EXPECT_EQ(f->find("a.text")->s, "llama");
        ASSERT_EQ(f->find("a.list")->items.size(), 3u);
        EXPECT_EQ(f->find("a.list")->items[1].as_u64(), 0u);
        EXPECT_EQ(f->find("tokenizer.ggml.tokens")->count, 1000u);  // counted, not kept
        EXPECT_TRUE(f->find("tokenizer.ggml.tokens")->items.empty());
        ASSERT_EQ(f->tensors.size(), 1u);
        EXPECT_EQ(f->tensors[0].dims, (std::vector<std::uint64_t>{4096, 32000}));
        EXPECT_EQ(gguf::tensor_bytes(f->tensors[0]).value(), 4096ull / 256 * 144 * 32000);
    }
}

TEST(Gguf, EveryGgmlTypeHasItsBlockArithmetic) {
    // (type, values per block, bytes per block) from ggml-common.h's block structs.
    const std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>> types{
        {0, 1, 4},      {1, 1, 2},     {2, 32, 18},    {3, 32, 20},    {6, 32, 22},    {7, 32, 24},    {8, 32, 34},
        {9, 32, 36},    {10, 256, 84}, {11, 256, 110}, {12, 256, 144}, {13, 256, 176}, {14, 256, 210}, {15, 256, 292},
        {16, 256, 66},  {17, 256, 74}, {18, 256, 98},  {19, 256, 50},  {20, 32, 18},   {21, 256, 110}, {22, 256, 82},
        {23, 256, 136}, {24, 1, 1},    {25, 1, 2},     {26, 1, 4},     {27, 1, 8},     {28, 1, 8},     {29, 256, 56},
        {30, 1, 2},     {34, 256, 54}, {35, 256, 66},  {39, 32, 17},   {40, 64, 36},   {41, 128, 18},  {42, 64, 18}};
    for (const auto& [type, block, bytes] : types) {
        gguf::TensorInfo t{"blk.0.ffn_up.weight", {4096, 14336}, type, 0};
        const auto b = gguf::tensor_bytes(t);
        ASSERT_TRUE(b.ok()) << type << ": " << b.error_text();
        EXPECT_EQ(*b, 4096 / block * bytes * 14336) << gguf::type_info(type)->name;
    }
    for (const std::uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u})
        EXPECT_FALSE(gguf::tensor_bytes({"x", {256}, removed, 0}).ok()) << removed;
    // A row that is not whole blocks, and a size past 64 bits.
    EXPECT_FIELD_ERROR(gguf::tensor_bytes({"x", {100}, 12, 0}), "gguf", "not a whole number of q4_K blocks");
    EXPECT_FIELD_ERROR(gguf::tensor_bytes({"x", {1ull << 40, 1ull << 40}, 0, 0}), "gguf", "overflows");
}

TEST(Gguf, CorruptAndHostileHeadersNameTheByteAndWhatWasExpected) {
    const std::string good = base("llama", 32, 8192, 4096, 14336, 32).tensor("output.weight", {4096, 32000}, 1).bytes();
    EXPECT_FIELD_ERROR(gguf::read(std::string("GGUX") + good.substr(4), "m.gguf"), "gguf",
                       "m.gguf: byte 0: expected the magic \"GGUF\"");
    EXPECT_FIELD_ERROR(gguf::read(good.substr(0, 2), "m.gguf"), "gguf", "the file ends at byte 2");
    EXPECT_FIELD_ERROR(gguf::read(GgufWriter().bytes(1), "m.gguf"), "gguf", "version 1");
    // Every truncation is an error naming a byte, never a crash.
    for (std::size_t n = 0; n < good.size(); n += 7) {
        const auto f = gguf::read(good.substr(0, n), "m.gguf");
        ASSERT_FALSE(f.ok()) << n;
        EXPECT_NE(f.error_text().find("byte "), std::string::npos) << f.error_text();
    }
    // A string said to be 2^63 bytes long, and an array said to hold 2^40 items: refused before allocating.
    std::string huge;
    GgufWriter::put(huge, 1ull << 63, 8);
    EXPECT_FIELD_ERROR(gguf::read(GgufWriter().raw("a.text", 8, huge + "abc").bytes(), "m.gguf"), "gguf",
                       "a.text's text is said to be 9,223,372,036,854,775,808 bytes long");
    std::string items;
    GgufWriter::put(items, 4, 4);
    GgufWriter::put(items, 1ull << 40, 8);
    EXPECT_FIELD_ERROR(gguf::read(GgufWriter().raw("a.list", 9, items + "abcd").bytes(), "m.gguf"), "gguf",
                       "a.list is said to hold 1,099,511,627,776 items");
    EXPECT_FIELD_ERROR(gguf::read(GgufWriter().raw("a.x", 77, "").bytes(), "m.gguf"), "gguf", "no GGUF type");
    EXPECT_FIELD_ERROR(gguf::read(GgufWriter().raw("a.b", 7, std::string(1, '\x05')).bytes(), "m.gguf"), "gguf",
                       "a.b is a bool but holds 5");
    std::string counts = "GGUF";
    GgufWriter::put(counts, 3, 4);
    GgufWriter::put(counts, 1ull << 62, 8);
    GgufWriter::put(counts, 0, 8);
    EXPECT_FIELD_ERROR(gguf::read(counts, "m.gguf"), "gguf", "tensors, more than its");
    EXPECT_FIELD_ERROR(gguf::read(GgufWriter().tensor("t", {1, 2, 3, 4, 5}, 0).bytes(), "m.gguf"), "gguf",
                       "t has 5 dimensions");
    // A key or a tensor twice: which one a model has is no one's guess, and llama.cpp refuses the file.
    GgufWriter twice = base("llama", 32, 8192, 4096, 14336, 32);
    twice.u32("llama.attention.head_count_kv", 8).u32("llama.attention.head_count_kv", 32);
    EXPECT_FIELD_ERROR(gguf::read(twice.bytes(), "m.gguf"), "gguf",
                       "llama.attention.head_count_kv is in the file twice; llama.cpp refuses such a file");
    GgufWriter tensors_twice = base("llama", 32, 8192, 4096, 14336, 32);
    tensors_twice.tensor("token_embd.weight", {4096, 32000}, 1).tensor("token_embd.weight", {4096, 32000}, 1);
    EXPECT_FIELD_ERROR(gguf::read(tensors_twice.bytes(), "m.gguf"), "gguf",
                       "the tensor token_embd.weight is in the file twice");
    // Keys are compared as ggml compares them, byte for byte: two that differ only in stray bytes are two keys.
    GgufWriter stray = base("llama", 32, 8192, 4096, 14336, 32);
    stray.u32("x.a\xff", 1).u32("x.a\xfe", 2);
    EXPECT_TRUE(gguf::read(stray.bytes(), "m.gguf").ok());
}

TEST(Gguf, AFolderOrADeviceIsSaidAsWhatItIs) {
    // Its own folder in each process: ctest runs the locales' copies of this test at once.
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope gguf Modèle " + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    EXPECT_FIELD_ERROR(gguf::read_file(folder.string()), "gguf", "is a folder, not a GGUF file (--model-dir");
    EXPECT_FIELD_ERROR(gguf::read_file("/dev/zero"), "gguf", "/dev/zero: is not a regular file");
    EXPECT_FIELD_ERROR(read_text_file("/dev/zero"), "file", "/dev/zero: is not a regular file");
    // A safetensors "file" that is a folder or a pipe: said, where the pipe waited for a writer that never came.
    EXPECT_FIELD_ERROR(safetensors::read_header_file(folder.string()), "safetensors",
                       "is a folder, not a safetensors file (--model-dir");
    const auto pipe = folder / "model.safetensors";
    ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
    EXPECT_FIELD_ERROR(safetensors::read_header_file(pipe.string()), "safetensors", "is not a regular file (a pipe");
    std::filesystem::remove_all(folder);
}

TEST(Gguf, ANameOfStrayBytesIsReadAsValidUtf8) {
    // GGUF does not check its strings; the name is shown, and written in JSON, with U+FFFD for each stray byte.
    GgufWriter w;
    w.str("general.architecture", "llama").str("general.name", "caf\xe9 \xff\xfe Modèle \xed\xa0\x80 \xc0\xaf");
    auto f = gguf::read(w.bytes(), "m.gguf");
    ASSERT_TRUE(f.ok()) << f.error_text();
    const std::string r = "\xEF\xBF\xBD";
    const gguf::Value* name = f->find("general.name");
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(name->s, "caf" + r + " " + r + r + " Modèle " + r + r + r + " " + r + r);
    EXPECT_EQ(json::quote("a\xf4\x90\x80\x80"
                          "b\xf0\x9f\x98\x80"),
              "\"a" + r + r + r + r + "b\xf0\x9f\x98\x80\"");
}

TEST(Gguf, MissingAndMalformedKeysAreNamed) {
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(GgufWriter().u32("x", 1).bytes(), "m.gguf"), "m.gguf"),
                       "general.architecture", "m.gguf: general.architecture is missing");
    GgufWriter w;
    w.str("general.architecture", "llama").u32("llama.context_length", 8192).u32("llama.embedding_length", 4096);
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(w.bytes(), "m.gguf"), "m.gguf"), "llama.block_count", "is missing");
    GgufWriter short_array = base("llama", 4, 8192, 4096, 14336, 32);
    short_array.u32s("llama.attention.head_count_kv", {8, 8, 8});
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(short_array.bytes(), "m.gguf"), "m.gguf"),
                       "llama.attention.head_count_kv", "holds 3 values but the model has 4 layers");
    GgufWriter text = base("llama", 4, 8192, 4096, 14336, 32);
    text.str("llama.attention.head_count_kv", "eight");
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(text.bytes(), "m.gguf"), "m.gguf"), "llama.attention.head_count_kv",
                       "must be a whole number, not the text 'eight'");
    // The calculator's checks name the file's keys, and a missing head count is one problem, not three.
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(base("llama", 0, 8192, 4096, 14336, 32).bytes(), "m.gguf"), "m.gguf"),
                       "layers", "m.gguf: llama.block_count is 0; a model has at least one layer");
    const auto no_heads = gguf::import(*gguf::read(base("llama", 4, 8192, 4096, 14336, 0).bytes(), "m.gguf"), "m.gguf");
    EXPECT_FIELD_ERROR(no_heads, "query_heads", "m.gguf: llama.attention.head_count is missing: the number of query");
    EXPECT_EQ(no_heads.errors().size(), 1u) << no_heads.error_text();
    GgufWriter zero_key = base("llama", 4, 8192, 4096, 14336, 32);
    zero_key.u32("llama.attention.key_length", 0).u32("llama.attention.value_length", 128);
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(zero_key.bytes(), "m.gguf"), "m.gguf"), "head_dim",
                       "m.gguf: llama.attention.key_length is u32 0: the key head dimension must be at least 1");
    // KV heads that do not divide the query heads: the calculator's own check, with the file's name.
    GgufWriter odd = base("llama", 4, 8192, 4096, 14336, 32);
    odd.u32("llama.attention.head_count_kv", 5);
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(odd.bytes(), "m.gguf"), "m.gguf"), "kv_heads", "m.gguf:");
    // No KV head on any layer of a llama: nothing attends, which is refused, not shown as a cache of 0 bytes that fits.
    GgufWriter none = base("llama", 4, 8192, 4096, 14336, 32);
    none.u32("llama.attention.head_count_kv", 0);
    EXPECT_FIELD_ERROR(gguf::import(*gguf::read(none.bytes(), "m.gguf"), "m.gguf"), "llama.attention.head_count_kv",
                       "m.gguf: llama.attention.head_count_kv is 0 on every layer, so no layer of this llama would "
                       "attend");
}

TEST(Gguf, LlamaGivesTheConfigJsonCacheExactWeightsAndLlamaCppDefaults) {
    GgufWriter w = base("llama", 32, 8192, 4096, 14336, 32);
    w.u32("llama.attention.head_count_kv", 8).u32("llama.rope.dimension_count", 128).u32("llama.vocab_size", 128256);
    w.tensor("token_embd.weight", {4096, 128256}, 12).tensor("output.weight", {4096, 128256}, 14);
    for (int l = 0; l < 32; ++l) w.llama_block(l, 4096, 1024, 14336);
    w.tensor("output_norm.weight", {4096}, 0);
    const ImportedModel m = imported(w);
    expect_same_cache(m.arch, catalog_arch("llama-3-8b"));
    EXPECT_EQ(m.arch.name, "test llama");
    EXPECT_EQ(m.kv_dtype, KvDtype::fp16);
    EXPECT_EQ(m.engine, Engine::llama_cpp);
    EXPECT_TRUE(m.arch.gated_mlp);
    EXPECT_FALSE(m.arch.tied_embeddings);
    EXPECT_TRUE(m.arch.not_exact.empty()) << testing::join(m.arch.not_exact);
    // Q4_K_M's mix: 144 bytes per 256 q4_K values, 210 per 256 q6_K, 4 per f32.
    const std::uint64_t q4 = 144, q6 = 210;
    const std::uint64_t per_layer = (4096 * 4096 * 2 + 4096 * 1024 + 4096 * 14336 * 2) / 256 * q4 +
                                    (4096 * 1024 + 14336 * 4096) / 256 * q6 + 2 * 4096 * 4;
    const std::uint64_t expected = 4096ull * 128256 / 256 * (q4 + q6) + 32 * per_layer + 4096 * 4;
    EXPECT_EQ(m.weights_bytes, expected);
    EXPECT_NE(m.weights_source.find(format_count(expected) + " bytes, exact from the GGUF's 291 tensors"),
              std::string::npos)
        << m.weights_source;
    EXPECT_EQ(m.arch.params_total, 8030261248u);  // Llama 3 8B's published count, from the tensors' shapes
    EXPECT_NE(m.weight_dtype_source.find("q4_K"), std::string::npos) << m.weight_dtype_source;
    // The format an estimate falls back on (once the shape changes) is llama.cpp's plain one nearest the file's
    // bits a weight (here 5.15), not bf16's 16.
    EXPECT_EQ(m.weight_dtype, KvDtype::q4_0);
    EXPECT_NE(m.weight_dtype_source.find("5.15 bits a weight in all, nearest q4_0 (4.5)"), std::string::npos)
        << m.weight_dtype_source;
}

TEST(Gguf, SlidingChunkedMlaAndHybridModelsMatchTheirConfigJson) {
    struct Case {
        std::string catalog;
        std::function<GgufWriter()> make;
    };
    const std::vector<Case> cases{
        {"qwen2.5-7b",
         [] {
             GgufWriter w = base("qwen2", 28, 131072, 3584, 18944, 28);
             w.u32("qwen2.attention.head_count_kv", 4);
             return w;
         }},
        {"gemma-2-9b",
         [] {  // gemma2: every other layer slides (the first of each pair), window 4096
             GgufWriter w = base("gemma2", 42, 8192, 3584, 14336, 16);
             w.u32("gemma2.attention.head_count_kv", 8).u32("gemma2.attention.key_length", 256);
             w.u32("gemma2.attention.value_length", 256).u32("gemma2.attention.sliding_window", 4096);
             return w;
         }},
        {"gemma-3-27b",
         [] {  // gemma3: five sliding layers then one global, window 1024
             GgufWriter w = base("gemma3", 62, 131072, 5376, 21504, 32);
             w.u32("gemma3.attention.head_count_kv", 16).u32("gemma3.attention.key_length", 128);
             w.u32("gemma3.attention.value_length", 128).u32("gemma3.attention.sliding_window", 1024);
             return w;
         }},
        {"gpt-oss-20b",
         [] {
             GgufWriter w = base("gpt-oss", 24, 131072, 2880, 2880, 64);
             w.u32("gpt-oss.attention.head_count_kv", 8).u32("gpt-oss.attention.key_length", 64);
             w.u32("gpt-oss.attention.value_length", 64).u32("gpt-oss.attention.sliding_window", 128);
             w.u32("gpt-oss.expert_count", 32).u32("gpt-oss.expert_used_count", 4);
             w.u32("gpt-oss.expert_feed_forward_length", 2880);
             return w;
         }},
        {"deepseek-v3",
         [] {  // MLA as converted since llama.cpp caches the latent: head_count_kv 1, key_length 576
             GgufWriter w = base("deepseek2", 61, 163840, 7168, 18432, 128);
             w.u32("deepseek2.attention.head_count_kv", 1).u32("deepseek2.attention.key_length", 576);
             w.u32("deepseek2.attention.value_length", 512).u32("deepseek2.attention.key_length_mla", 192);
             w.u32("deepseek2.attention.value_length_mla", 128).u32("deepseek2.rope.dimension_count", 64);
             w.u32("deepseek2.attention.kv_lora_rank", 512).u32("deepseek2.attention.q_lora_rank", 1536);
             w.u32("deepseek2.expert_count", 256).u32("deepseek2.expert_used_count", 8);
             w.u32("deepseek2.expert_feed_forward_length", 2048).u32("deepseek2.expert_shared_count", 1);
             w.u32("deepseek2.leading_dense_block_count", 3);
             return w;
         }},
        {"qwen3-30b-a3b",
         [] {
             GgufWriter w = base("qwen3moe", 48, 40960, 2048, 6144, 32);
             w.u32("qwen3moe.attention.head_count_kv", 4).u32("qwen3moe.attention.key_length", 128);
             w.u32("qwen3moe.attention.value_length", 128).u32("qwen3moe.expert_count", 128);
             w.u32("qwen3moe.expert_used_count", 8).u32("qwen3moe.expert_feed_forward_length", 768);
             return w;
         }},
        {"llama-4-scout",
         [] {  // three chunked layers of every four, chunks of 8192 (no key: llama.cpp fixes it)
             GgufWriter w = base("llama4", 48, 10485760, 5120, 16384, 40);
             w.u32("llama4.attention.head_count_kv", 8).u32("llama4.attention.key_length", 128);
             w.u32("llama4.attention.value_length", 128).u32("llama4.expert_count", 16);
             w.u32("llama4.expert_used_count", 1).u32("llama4.expert_feed_forward_length", 8192);
             w.u32("llama4.interleave_moe_layer_step", 1);
             return w;
         }},
        {"jamba-v0.1",
         [] {  // attention where head_count_kv is not 0: layers 4, 12, 20, 28
             GgufWriter w = base("jamba", 32, 262144, 4096, 14336, 32);
             std::vector<std::uint32_t> kv(32, 0);
             for (int l = 4; l < 32; l += 8) kv[l] = 8;
             w.u32s("jamba.attention.head_count_kv", kv).u32("jamba.ssm.conv_kernel", 4);
             w.u32("jamba.ssm.inner_size", 8192).u32("jamba.ssm.state_size", 16).u32("jamba.ssm.time_step_rank", 256);
             w.u32("jamba.expert_count", 16).u32("jamba.expert_used_count", 2);
             return w;
         }},
        {"mamba-codestral-7b",
         [] {
             GgufWriter w = base("mamba2", 64, 1048576, 4096, 0, 0);
             w.u32("mamba2.ssm.conv_kernel", 4).u32("mamba2.ssm.inner_size", 8192).u32("mamba2.ssm.state_size", 128);
             w.u32("mamba2.ssm.time_step_rank", 128).u32("mamba2.ssm.group_count", 8);
             return w;
         }},
        {"lfm2-700m",
         [] {  // attention on layers 2, 5, 8, 10, 12, 14; short convolutions elsewhere
             GgufWriter w = base("lfm2", 16, 128000, 1536, 6656, 24);
             std::vector<std::uint32_t> kv(16, 0);
             for (const int l : {2, 5, 8, 10, 12, 14}) kv[static_cast<std::size_t>(l)] = 8;
             w.u32s("lfm2.attention.head_count_kv", kv).u32("lfm2.shortconv.l_cache", 3);
             return w;
         }},
        {"qwen3-next-80b-a3b",
         [] {
             GgufWriter w = base("qwen3next", 48, 262144, 2048, 5120, 16);
             w.u32("qwen3next.attention.head_count_kv", 2).u32("qwen3next.attention.key_length", 256);
             w.u32("qwen3next.attention.value_length", 256).u32("qwen3next.ssm.conv_kernel", 4);
             w.u32("qwen3next.ssm.state_size", 128).u32("qwen3next.ssm.group_count", 16);
             w.u32("qwen3next.ssm.time_step_rank", 32).u32("qwen3next.ssm.inner_size", 4096);
             w.u32("qwen3next.full_attention_interval", 4).u32("qwen3next.expert_count", 512);
             w.u32("qwen3next.expert_used_count", 10).u32("qwen3next.expert_feed_forward_length", 512);
             return w;
         }},
        {"qwen3-8b",
         [] {
             GgufWriter w = base("qwen3", 36, 40960, 4096, 12288, 32);
             w.u32("qwen3.attention.head_count_kv", 8).u32("qwen3.attention.key_length", 128);
             w.u32("qwen3.attention.value_length", 128);
             return w;
         }},
        {"mixtral-8x7b",
         [] {  // converted as "llama" with experts
             GgufWriter w = base("llama", 32, 32768, 4096, 14336, 32);
             w.u32("llama.attention.head_count_kv", 8).u32("llama.expert_count", 8).u32("llama.expert_used_count", 2);
             return w;
         }},
        {"mistral-small-3.1-24b",
         [] {
             GgufWriter w = base("mistral3", 40, 131072, 5120, 32768, 32);
             w.u32("mistral3.attention.head_count_kv", 8).u32("mistral3.attention.key_length", 128);
             w.u32("mistral3.attention.value_length", 128);
             return w;
         }},
        {"llama-2-7b", [] { return base("llama", 32, 4096, 4096, 11008, 32); }},
        {"falcon-7b",
         [] {
             GgufWriter w = base("falcon", 32, 2048, 4544, 18176, 71);
             w.u32("falcon.attention.head_count_kv", 1);
             return w;
         }},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.catalog);
        const ImportedModel m = imported(c.make());
        EXPECT_TRUE(m.arch.not_exact.empty()) << testing::join(m.arch.not_exact);
        expect_same_cache(m.arch, catalog_arch(c.catalog));
        EXPECT_EQ(m.arch.attention_layers(), catalog_arch(c.catalog).attention_layers());
    }
}

TEST(Gguf, WhatLlamaCppDoesOtherwiseIsSaid) {
    // Mistral 7B v0.1 converts as "llama" with its window: llama.cpp attends over the whole context.
    GgufWriter mistral = base("llama", 32, 32768, 4096, 14336, 32);
    mistral.u32("llama.attention.head_count_kv", 8).u32("llama.attention.sliding_window", 4096);
    const ImportedModel m = imported(mistral);
    EXPECT_FALSE(m.arch.has_sliding_layers());
    EXPECT_NE(testing::join(m.notes).find("not used by llama.cpp"), std::string::npos) << testing::join(m.notes);
    // Phi-3's window: llama.cpp turns it off (vLLM keeps it, as the config.json path does).
    GgufWriter phi = base("phi3", 32, 4096, 3072, 8192, 32);
    phi.u32("phi3.attention.head_count_kv", 32).u32("phi3.attention.sliding_window", 2047);
    const ImportedModel p = imported(phi);
    EXPECT_FALSE(p.arch.has_sliding_layers());
    EXPECT_NE(testing::join(p.notes).find("llama.cpp runs every phi3 layer over the whole context"), std::string::npos);
    // A sliding pattern given per layer as booleans.
    GgufWriter pattern = base("gemma3", 6, 131072, 2560, 10240, 8);
    pattern.u32("gemma3.attention.head_count_kv", 4).u32("gemma3.attention.key_length", 256);
    pattern.u32("gemma3.attention.sliding_window", 512);
    pattern.bools("gemma3.attention.sliding_window_pattern", {true, false, true, true, false, false});
    const ImportedModel g = imported(pattern);
    EXPECT_EQ(layer_windows(g.arch), (std::vector<std::uint64_t>{512, 0, 512, 512, 0, 0}));
    // An architecture without a rule, and a key that could change the cache: said, never silent.
    GgufWriter unknown = base("newarch", 4, 4096, 2048, 8192, 16);
    unknown.u32("newarch.attention.head_count_kv", 4).u32("newarch.attention.shared_kv_layers", 2);
    const ImportedModel u = imported(unknown);
    const std::string reasons = testing::join(u.arch.not_exact);
    EXPECT_NE(reasons.find("general.architecture 'newarch' has no rule here"), std::string::npos) << reasons;
    EXPECT_NE(reasons.find("newarch.attention.shared_kv_layers (u32 2) may change"), std::string::npos) << reasons;
    // An old DeepSeek conversion without the MLA keys: llama.cpp caches every head in full.
    GgufWriter old = base("deepseek2", 27, 163840, 2048, 10944, 16);
    old.u32("deepseek2.attention.key_length", 192).u32("deepseek2.attention.value_length", 128);
    old.u32("deepseek2.attention.kv_lora_rank", 512).u32("deepseek2.rope.dimension_count", 64);
    const ImportedModel d = imported(old);
    EXPECT_FALSE(d.arch.mla.has_value());
    EXPECT_NE(testing::join(d.notes).find("predates llama.cpp's MLA cache"), std::string::npos);
    // The key there but no larger than the rotary part: said as what it is, and not exact.
    GgufWriter small = old;
    small.u32("deepseek2.attention.key_length_mla", 64).u32("deepseek2.attention.value_length_mla", 128);
    const ImportedModel s = imported(small);
    EXPECT_FALSE(s.arch.mla.has_value());
    EXPECT_NE(testing::join(s.arch.not_exact).find("key_length_mla is 64, not more than the rotary dimension 64"),
              std::string::npos)
        << testing::join(s.arch.not_exact);
}

TEST(Gguf, ASplitModelIsReadFromItsFirstPieceWithEveryPiecesTensors) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("kvscope split ü " + std::to_string(::getpid()));
    fs::create_directories(dir);
    GgufWriter first = base("llama", 32, 8192, 4096, 14336, 32);
    first.u32("llama.attention.head_count_kv", 8).u32("split.count", 2).u32("split.no", 0);
    first.tensor("token_embd.weight", {4096, 128256}, 12);
    GgufWriter second;
    second.u32("split.count", 2).u32("split.no", 1).tensor("output.weight", {4096, 128256}, 14);
    const auto put = [&](const std::string& name, const GgufWriter& w) { w.write_file((dir / name).string()); };
    put("Llama-3-8B-Q4_K_M-00001-of-00002.gguf", first);
    put("Llama-3-8B-Q4_K_M-00002-of-00002.gguf", second);
    const auto m = gguf::import_file((dir / "Llama-3-8B-Q4_K_M-00001-of-00002.gguf").string());
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->weights_bytes, 4096ull * 128256 / 256 * (144 + 210));
    EXPECT_NE(m->weights_source.find("exact from the GGUF's 2 tensors in 2 files"), std::string::npos)
        << m->weights_source;
    EXPECT_FIELD_ERROR(gguf::import_file((dir / "Llama-3-8B-Q4_K_M-00002-of-00002.gguf").string()), "gguf",
                       "is piece 2 of 2 of a split model; open the first, Llama-3-8B-Q4_K_M-00001-of-00002.gguf");
    fs::remove(dir / "Llama-3-8B-Q4_K_M-00002-of-00002.gguf");
    EXPECT_FIELD_ERROR(gguf::import_file((dir / "Llama-3-8B-Q4_K_M-00001-of-00002.gguf").string()), "gguf",
                       "Llama-3-8B-Q4_K_M-00002-of-00002.gguf: cannot be opened");
    EXPECT_FALSE(gguf::split_name("model.gguf"));
    EXPECT_FALSE(gguf::split_name("a-00003-of-00002.gguf"));
    EXPECT_EQ(gguf::split_name("a-b-00002-of-00005.gguf")->prefix, "a-b");
    fs::remove_all(dir);
}

TEST(Gguf, PerLayerKvHeadsAreEachLayersOwn) {
    // head_count_kv as an array (OpenELM, Nemotron-NAS conversions): each layer caches its own heads.
    GgufWriter w = base("llama", 4, 8192, 2048, 8192, 16);
    w.u32s("llama.attention.head_count_kv", {8, 4, 2, 4});
    const ImportedModel m = imported(w);
    ASSERT_EQ(m.arch.layer_specs.size(), 4u);
    Workload one;
    one.context_tokens = 1000;
    const auto kv = kv_cache_report(m.arch, KvDtype::fp16, one, Parallelism{});
    ASSERT_TRUE(kv.ok()) << kv.error_text();
    EXPECT_EQ(kv->total_bytes, (8u + 4 + 2 + 4) * 2 * 128 * 2 * 1000);  // K and V of 128 values in fp16
}

TEST(Gguf, LargeTokenizerArraysBeforeTheModelsKeysLeaveItsPerLayerArraysReadable) {
    // The tokenizer's numeric arrays (token types, scores, one per token) are counted, never kept: a file that holds
    // them before the model's keys had spent the reader's budget on them, and its per-layer KV heads "were not kept".
    GgufWriter w;
    // Four arrays of a 65,536-token vocabulary: kept, they would spend the reader's whole budget (2^18 items).
    const std::vector<std::uint32_t> per_token(65536, 1);
    for (const char* key :
         {"tokenizer.ggml.token_type", "tokenizer.ggml.scores", "tokenizer.ggml.merges_n", "tokenizer.ggml.extra"})
        w.u32s(key, per_token);
    w.str("general.architecture", "llama").u32("llama.block_count", 4).u32("llama.context_length", 8192);
    w.u32("llama.embedding_length", 2048).u32("llama.feed_forward_length", 8192).u32("llama.attention.head_count", 16);
    w.u32s("llama.attention.head_count_kv", {8, 4, 2, 4});
    const auto file = gguf::read(w.bytes(), "model.gguf");
    ASSERT_TRUE(file.ok()) << file.error_text();
    EXPECT_EQ(file->find("tokenizer.ggml.scores")->count, 65536u);
    const auto m = gguf::import(*file, "model.gguf");
    ASSERT_TRUE(m.ok()) << m.error_text();
    ASSERT_EQ(m->arch.layer_specs.size(), 4u);
    EXPECT_EQ(m->arch.layer_specs[2].kv_heads, 2u);
}

TEST(Gguf, AFileWithoutItsTensorsDataIsSaidNotToLoad) {
    // A header-only GGUF (or a download cut short) lists its tensors but holds not all of their data: llama.cpp
    // refuses it ("tensor data is not within the file bounds"). Its weights are the sizes the list gives, never
    // "exact from the GGUF's tensors" as if it were a model that loads.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("kvscope cut ü " + std::to_string(::getpid()));
    fs::create_directories(dir);
    GgufWriter w = base("llama", 2, 8192, 512, 1024, 8);
    w.u32("llama.attention.head_count_kv", 4).u32("llama.vocab_size", 1000);
    w.tensor("token_embd.weight", {512, 1000}, 1).tensor("output.weight", {512, 1000}, 1);
    const std::uint64_t whole = w.data_end();
    ASSERT_EQ(whole % 32, 0u);
    // The whole file: exact, nothing said.
    const std::string path = (dir / "whole.gguf").string();
    w.write_file(path);
    ASSERT_EQ(fs::file_size(path), whole);
    auto m = gguf::import_file(path);
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_NE(m->weights_source.find("exact from the GGUF's 2 tensors"), std::string::npos) << m->weights_source;
    EXPECT_TRUE(std::none_of(m->notes.begin(), m->notes.end(),
                             [](const std::string& n) { return n.find("cannot load") != std::string::npos; }));
    // The header alone.
    std::ofstream(dir / "header.gguf", std::ios::binary) << w.bytes();
    m = gguf::import_file((dir / "header.gguf").string());
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_EQ(m->weights_bytes, 2u * 512 * 1000 * 2);
    EXPECT_EQ(m->weights_source.find("exact"), std::string::npos) << m->weights_source;
    EXPECT_NE(m->weights_source.find("as the GGUF's tensor list gives its 2 tensors (the file lacks their data)"),
              std::string::npos)
        << m->weights_source;
    EXPECT_TRUE(std::any_of(m->notes.begin(), m->notes.end(), [](const std::string& n) {
        return n.starts_with("the file holds none of its tensors' data (it ends at byte ") &&
               n.find("which llama.cpp cannot load") != std::string::npos;
    })) << testing::join(m->notes);
    // Cut short in the data.
    fs::resize_file(path, whole - 100);
    m = gguf::import_file(path);
    ASSERT_TRUE(m.ok()) << m.error_text();
    EXPECT_TRUE(std::any_of(m->notes.begin(), m->notes.end(), [&](const std::string& n) {
        return n.starts_with("the file ends at byte " + format_count(whole - 100) + ", before its tensors' data does");
    })) << testing::join(m->notes);
    fs::remove_all(dir);
    // A tensor said to lie near 2^64 bytes in, before one that does not: its data is missing all the same.
    gguf::File crafted;
    crafted.header_bytes = 100;
    crafted.file_bytes = 4096;
    crafted.tensors = {gguf::TensorInfo{"far", {32}, 0, ~0ull - 64}, gguf::TensorInfo{"near", {32}, 0, 0}};
    const auto far = gguf::missing_tensor_data(crafted);
    ASSERT_TRUE(far.has_value());
    EXPECT_NE(far->find("more than 2^64 bytes"), std::string::npos) << *far;
}

TEST(Gguf, ABigEndianFileIsNamedAsSuch) {
    std::string swapped = "GGUF";
    GgufWriter::put(swapped, 0x03000000, 4);
    GgufWriter::put(swapped, 0, 8);
    GgufWriter::put(swapped, 0, 8);
    EXPECT_FIELD_ERROR(gguf::read(swapped, "m.gguf"), "gguf", "big-endian");
}

TEST(Gguf, ExpertParametersCountOnlyTheExpertsATokenUses) {
    GgufWriter w = base("qwen3moe", 1, 4096, 256, 0, 4);
    w.u32("qwen3moe.attention.head_count_kv", 4).u32("qwen3moe.expert_count", 8).u32("qwen3moe.expert_used_count", 2);
    w.tensor("token_embd.weight", {256, 1000}, 0).tensor("blk.0.ffn_up_exps.weight", {256, 64, 8}, 0);
    w.tensor("blk.0.ffn_gate_exps.weight", {256, 64, 8}, 0).tensor("blk.0.ffn_down_exps.weight", {64, 256, 8}, 0);
    const ImportedModel m = imported(w);
    EXPECT_EQ(m.arch.params_total, 256000u + 3 * 256 * 64 * 8);
    EXPECT_EQ(m.arch.params_active, 256000u + 3 * 256 * 64 * 2);
    EXPECT_TRUE(m.arch.tied_embeddings);  // no output.weight: llama.cpp reuses token_embd
    EXPECT_EQ(m.weights_bytes, (256000u + 3 * 256 * 64 * 8) * 4);
    EXPECT_EQ(m.weight_dtype, KvDtype::fp32);
}

}  // namespace
}  // namespace kvscope
