// safetensors headers (exact weight bytes, shards, corrupt files) and the scan of the models on this machine
// (a fake Hugging Face cache, Ollama store and LM Studio folder built by the test).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "kvscope/calculator/analysis.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/gguf_writer.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/safetensors.h"
#include "testing.h"

namespace kvscope {
namespace {
namespace fs = std::filesystem;

struct Tensor {
    std::string name, dtype;
    std::vector<std::uint64_t> shape;
};

// A safetensors file as the format specifies: u64 header length, the JSON header, then the tensors' bytes (zeros).
std::string safetensors_bytes(const std::vector<Tensor>& tensors) {
    json::Value header = json::Value::object();
    std::uint64_t offset = 0;
    for (const Tensor& t : tensors) {
        std::uint64_t values = 1;
        json::Value shape = json::Value::array();
        for (const auto d : t.shape) values *= d, shape.push(json::Value::number(d));
        const std::uint64_t bytes = values * *safetensors::dtype_bits(t.dtype) / 8;
        json::Value entry = json::Value::object();
        entry.set("dtype", json::Value::string(t.dtype));
        entry.set("shape", shape);
        json::Value offsets = json::Value::array();
        offsets.push(json::Value::number(offset));
        offsets.push(json::Value::number(offset + bytes));
        entry.set("data_offsets", offsets);
        header.set(t.name, entry);
        offset += bytes;
    }
    json::Value meta = json::Value::object();
    meta.set("format", json::Value::string("pt"));
    header.set("__metadata__", meta);
    const std::string text = header.dump(0);
    std::string out;
    gguf::Writer::put(out, text.size(), 8);
    return out + text + std::string(offset, '\0');
}

void write(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
}

class TempDir {
public:
    TempDir() : path_(fs::temp_directory_path() / ("kvscope model files ü " + std::to_string(::getpid()))) {
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    [[nodiscard]] const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

TEST(Safetensors, SumsTheExactBytesOfEveryDtypeIncludingPackedAndSubByteOnes) {
    const std::string bytes = safetensors_bytes({{"a", "BF16", {4096, 4096}},
                                                 {"b", "F8_E4M3", {1024, 4096}},
                                                 {"s", "F32", {1024}},
                                                 {"q", "U8", {512, 2048}},
                                                 {"f4", "F4", {3, 6}},
                                                 {"i", "I64", {2}}});
    const auto h = safetensors::read_header(bytes, bytes.size(), "model.safetensors");
    ASSERT_TRUE(h.ok()) << h.error_text();
    EXPECT_EQ(h->tensors, 6u);
    EXPECT_EQ(h->bytes, 4096u * 4096 * 2 + 1024 * 4096 + 4096 + 512 * 2048 + 9 + 16);
    EXPECT_EQ(h->by_dtype.at("F8_E4M3"), 1024u * 4096);
    EXPECT_EQ(h->by_dtype.at("F4"), 9u);
}

TEST(Safetensors, CorruptHeadersNameTheFileTheByteAndWhatWasExpected) {
    const std::string good = safetensors_bytes({{"w", "F16", {8, 8}}});
    EXPECT_FIELD_ERROR(safetensors::read_header(good.substr(0, 5), 5, "m.safetensors"), "safetensors",
                       "m.safetensors: byte 0: expected the header's length (8 bytes), but the file ends at byte 5");
    std::string huge;
    gguf::Writer::put(huge, 1ull << 63, 8);
    EXPECT_FIELD_ERROR(safetensors::read_header(huge, 1ull << 40, "m.safetensors"), "safetensors",
                       "more than the 67,108,864 a safetensors header may be");
    std::string longer;
    gguf::Writer::put(longer, 1000, 8);
    EXPECT_FIELD_ERROR(safetensors::read_header(longer + "{}", 10, "m.safetensors"), "safetensors",
                       "the header is said to be 1,000 bytes long, but the file has 2 bytes after the length");
    // A tensor whose offsets do not hold its shape, a gap, an overlap, a bad dtype, trailing bytes, bad JSON.
    const auto with_header = [](const std::string& json_text, std::uint64_t data) {
        std::string out;
        gguf::Writer::put(out, json_text.size(), 8);
        return out + json_text + std::string(data, '\0');
    };
    const std::string wrong = with_header(R"({"w":{"dtype":"F16","shape":[8,8],"data_offsets":[0,100]}})", 100);
    EXPECT_FIELD_ERROR(safetensors::read_header(wrong, wrong.size(), "m.safetensors"), "safetensors",
                       "tensor 'w' (header line 1): data_offsets [0, 100] do not hold its 128 bytes (F16)");
    const std::string gap = with_header(
        R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
        12);
    EXPECT_FIELD_ERROR(safetensors::read_header(gap, gap.size(), "m.safetensors"), "safetensors", "a gap");
    const std::string overlap = with_header(
        R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
        6);
    EXPECT_FIELD_ERROR(safetensors::read_header(overlap, overlap.size(), "m.safetensors"), "safetensors", "overlap");
    const std::string dtype = with_header(R"({"w":{"dtype":"Q4","shape":[8],"data_offsets":[0,4]}})", 4);
    EXPECT_FIELD_ERROR(safetensors::read_header(dtype, dtype.size(), "m.safetensors"), "safetensors",
                       "dtype 'Q4' is not a safetensors dtype");
    const std::string trailing = with_header(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 9);
    EXPECT_FIELD_ERROR(safetensors::read_header(trailing, trailing.size(), "m.safetensors"), "safetensors",
                       "goes on for 5 more bytes");
    const std::string broken = with_header(R"({"w":{"dtype":)", 0);
    EXPECT_FIELD_ERROR(safetensors::read_header(broken, broken.size(), "m.safetensors"), "safetensors",
                       "m.safetensors: the header (JSON from byte 8) line 1:");
    // What the safetensors library refuses is not counted: a name given twice (both spans tile the data, so each
    // was counted), offsets or a shape written as fractions, a byte order mark or a space before the header.
    const std::string twice = with_header(
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},\n"
        "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
        8);
    EXPECT_FIELD_ERROR(safetensors::read_header(twice, twice.size(), "m.safetensors"), "safetensors",
                       "m.safetensors: tensor 'a' (header line 2): is named twice in the header (also on line 1)");
    const std::string u8_4 = R"("dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
    for (const auto& [header, expected] : std::vector<std::pair<std::string, std::string>>{
             {R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4.0]}})",
              "expected data_offsets [begin, end] of whole numbers written as such (8, not 8.0)"},
             {R"({"w":{"dtype":"U8","shape":[4e0],"data_offsets":[0,4]}})",
              "the shape holds '4e0', not a whole number"},
             {"\xEF\xBB\xBF{\"w\":{" + u8_4, "m.safetensors: byte 8: the header must start with '{'"},
             {" {\"w\":{" + u8_4, "m.safetensors: byte 8: the header must start with '{'"},
             {"{\"w\xff\":{" + u8_4, "m.safetensors: byte 8: the header is not valid UTF-8"},
         }) {
        const std::string file = with_header(header, 4);
        EXPECT_FIELD_ERROR(safetensors::read_header(file, file.size(), "m.safetensors"), "safetensors", expected);
    }
    // Spaces after the header are the writer's padding to 8 bytes, and are read.
    const std::string padded = with_header(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}   )", 4);
    EXPECT_TRUE(safetensors::read_header(padded, padded.size(), "m.safetensors").ok());
    const std::string overflow =
        with_header(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8);
    EXPECT_FIELD_ERROR(safetensors::read_header(overflow, overflow.size(), "m.safetensors"), "safetensors",
                       "overflows 64 bits");
}

TEST(Safetensors, ShardsFarFromTheModelsParametersAreQuestionedNotTrustedInSilence) {
    // Llama 3 70B's config beside Llama 3 8B's shards (--weights pointing at the wrong folder): the fit counts the
    // files' bytes, and every report asks whether they are this model's.
    const auto& catalog = Catalog::builtin();
    Scenario s;
    s.arch = catalog.find_model("llama-3-70b")->model.arch;
    s.workload = {.context_tokens = 8192, .batch = 1};
    Deployment d;
    d.gpu = *catalog.find_gpu("h200");
    d.weight_dtype = KvDtype::bf16;
    d.weights_bytes_exact = 16'060'522'496;
    d.weights_source = "16,060,522,496 bytes, exact from 4 safetensors headers (BF16)";
    s.deployment = d;
    const auto questioned = [](const Scenario& x) {
        const auto a = analyze(x);
        EXPECT_TRUE(a.ok()) << a.error_text();
        std::string found;
        for (const auto& w : a->fit->warnings)
            if (w.find("are the files this model's?") != std::string::npos) found = w;
        return found;
    };
    EXPECT_EQ(questioned(s).rfind("the weights' exact 15.0 GiB (16,060,522,496 bytes, exact from 4 safetensors "
                                  "headers (BF16)) are 0.11× the 131 GiB this model's parameters take (in bf16)",
                                  0),
              0u)
        << questioned(s);
    // Its own shards, in float32 (2.2× with buffers) or a 4-bit scheme the config does not describe (0.3×), a GGUF's
    // bytes, no exact bytes: nothing.
    for (const std::uint64_t own : {141'107'412'992ull, 310'000'000'000ull, 42'000'000'000ull}) {
        s.deployment->weights_bytes_exact = own;
        EXPECT_EQ(questioned(s), "") << own;
    }
    // Llama 3 70B's files for Llama 3 8B: 8.79×.
    Scenario small = s;
    small.arch = catalog.find_model("llama-3-8b")->model.arch;
    small.deployment->weights_bytes_exact = 141'107'412'992;
    small.deployment->weights_source = "141,107,412,992 bytes, exact from 30 safetensors headers (BF16)";
    EXPECT_NE(questioned(small).find(" are 8.79× the 15.0 GiB"), std::string::npos) << questioned(small);
    s.deployment->weights_bytes_exact = 16'060'522'496;
    s.deployment->weights_source = "16,060,522,496 bytes, exact from the GGUF's 724 tensors in 2 files";
    EXPECT_EQ(questioned(s), "");
    s.deployment->weights_bytes_exact = 0;
    EXPECT_EQ(questioned(s), "");
}

TEST(Safetensors, AFloat32CheckpointIsCountedInTheFormatItIsServedIn) {
    // vLLM serves a float32 checkpoint in bf16 (dtype=auto): 2 bytes a value are loaded, not the files' 4.
    TempDir dir;
    write(dir.path() / "f32.safetensors", safetensors_bytes({{"w", "F32", {1024, 1024}}, {"n", "F32", {1024}}}));
    const auto files = safetensors::read_weights((dir.path() / "f32.safetensors").string());
    ASSERT_TRUE(files.ok()) << files.error_text();
    const auto served = files->served_in(KvDtype::bf16);
    ASSERT_TRUE(served.ok()) << served.error_text();
    EXPECT_EQ(served->bytes, (1024u * 1024 + 1024) * 2);
    EXPECT_EQ(served->source_text(),
              "2,099,200 bytes, exact from 1 safetensors header: their 4,198,400 bytes of F32 loaded as BF16");
    EXPECT_EQ(files->served_in(KvDtype::fp32)->bytes, files->bytes);  // served as stored
    // Mixed formats (bf16 weights beside float32 norms; a quantized checkpoint's integers and scales) stand as stored.
    write(dir.path() / "mixed.safetensors", safetensors_bytes({{"w", "BF16", {1024, 1024}}, {"n", "F32", {1024}}}));
    const auto mixed = safetensors::read_weights((dir.path() / "mixed.safetensors").string());
    ASSERT_TRUE(mixed.ok()) << mixed.error_text();
    EXPECT_EQ(mixed->served_in(KvDtype::bf16)->bytes, mixed->bytes);
    EXPECT_EQ(mixed->served_in(KvDtype::bf16)->source_text(), mixed->source_text());
    // Integer buffers beside float32 weights (position ids) stay as stored; the weights are recast.
    write(dir.path() / "ids.safetensors",
          safetensors_bytes({{"w", "F32", {1024, 1024}}, {"position_ids", "I64", {512}}}));
    const auto ids = safetensors::read_weights((dir.path() / "ids.safetensors").string());
    ASSERT_TRUE(ids.ok()) << ids.error_text();
    EXPECT_EQ(ids->served_in(KvDtype::bf16)->bytes, 1024u * 1024 * 2 + 512 * 8);
    // Half-precision files served in the other half precision: the same bytes, and nothing said of a cast.
    write(dir.path() / "f16.safetensors", safetensors_bytes({{"w", "F16", {1024}}}));
    const auto f16 = safetensors::read_weights((dir.path() / "f16.safetensors").string());
    ASSERT_TRUE(f16.ok()) << f16.error_text();
    EXPECT_EQ(f16->served_in(KvDtype::bf16)->source_text(), f16->source_text());
}

TEST(Safetensors, FloatFilesServedInFp8HaveTheirLinearLayersQuantizedAtLoadAndOtherFormatsAreRefused) {
    // vLLM's --quantization fp8 on a bf16 checkpoint: every linear layer's weight becomes one byte a value; the
    // embedding, the LM head, the norms and the MoE router stay in bf16 (quantization/fp8.py Fp8Config).
    TempDir dir;
    const std::vector<Tensor> layer{{"model.embed_tokens.weight", "BF16", {1000, 64}},
                                    {"model.layers.0.self_attn.q_proj.weight", "BF16", {64, 64}},
                                    {"model.layers.0.self_attn.k_proj.weight", "BF16", {16, 64}},
                                    {"model.layers.0.input_layernorm.weight", "BF16", {64}},
                                    {"model.layers.0.mlp.gate.weight", "BF16", {8, 64}},
                                    {"model.layers.0.mlp.experts.0.gate_proj.weight", "BF16", {128, 64}},
                                    {"model.norm.weight", "BF16", {64}},
                                    {"lm_head.weight", "BF16", {1000, 64}}};
    write(dir.path() / "bf16.safetensors", safetensors_bytes(layer));
    const auto files = safetensors::read_weights((dir.path() / "bf16.safetensors").string());
    ASSERT_TRUE(files.ok()) << files.error_text();
    const std::uint64_t linear = 64 * 64 + 16 * 64 + 128 * 64, rest = 1000 * 64 * 2 + 64 + 8 * 64 + 64;
    EXPECT_EQ(files->bytes, (linear + rest) * 2);
    const auto fp8 = files->served_in(KvDtype::fp8_e4m3);
    ASSERT_TRUE(fp8.ok()) << fp8.error_text();
    EXPECT_EQ(fp8->bytes, linear + rest * 2);
    EXPECT_EQ(fp8->source_text(),
              "270,592 bytes, from 1 safetensors header of 283,904 bytes of BF16: the linear layers' 13,312 values "
              "quantized to fp8_e4m3 at load (vLLM --quantization fp8; their float32 scales, 4 bytes a layer, not "
              "counted), the rest in BF16");
    // Float32 files: the linear layers in fp8, the rest in bf16 as dtype=auto serves them.
    std::vector<Tensor> f32 = layer;
    for (Tensor& t : f32) t.dtype = "F32";
    write(dir.path() / "f32.safetensors", safetensors_bytes(f32));
    const auto wide = safetensors::read_weights((dir.path() / "f32.safetensors").string());
    ASSERT_TRUE(wide.ok()) << wide.error_text();
    EXPECT_EQ(wide->served_in(KvDtype::fp8_e4m3)->bytes, linear + rest * 2);
    // A checkpoint already quantized (fp8 weights and their scales) is loaded as stored.
    write(dir.path() / "q.safetensors", safetensors_bytes({{"model.layers.0.mlp.down_proj.weight", "F8_E4M3", {64, 64}},
                                                           {"model.layers.0.mlp.down_proj.weight_scale", "F32", {1}}}));
    const auto quantized = safetensors::read_weights((dir.path() / "q.safetensors").string());
    ASSERT_TRUE(quantized.ok()) << quantized.error_text();
    EXPECT_EQ(quantized->served_in(KvDtype::fp8_e4m3)->bytes, quantized->bytes);
    EXPECT_EQ(quantized->served_in(KvDtype::q4_0)->bytes, quantized->bytes);
    // A format KVScope knows no engine to make of float files at load: refused, never the files' bf16 bytes under its
    // name.
    for (const KvDtype d : {KvDtype::q4_0, KvDtype::int8, KvDtype::fp8_e5m2}) {
        const auto refused = files->served_in(d);
        ASSERT_FALSE(refused.ok()) << to_string(d);
        EXPECT_NE(
            refused.error_text().find("the weights' files hold BF16 values, and KVScope knows no engine that makes " +
                                      std::string(to_string(d))),
            std::string::npos)
            << refused.error_text();
    }
    EXPECT_TRUE(safetensors::quantized_at_load("model.layers.3.mlp.down_proj.weight", 2));
    EXPECT_FALSE(safetensors::quantized_at_load("model.layers.3.mlp.down_proj.bias", 1));
    EXPECT_FALSE(safetensors::quantized_at_load("transformer.wte.weight", 2));
    EXPECT_FALSE(safetensors::quantized_at_load("model.layers.3.mlp.shared_expert_gate.weight", 2));
}

TEST(Safetensors, TheMaskAndRotaryBuffersOfOldCheckpointsAreNotCountedAsWeights) {
    // openai-community/gpt2's model.safetensors holds a float32 1024x1024 causal mask per layer (h.N.attn.bias),
    // 50 MB of its 548 MB, which vLLM's gpt2.py skips at load; an old Llama checkpoint's rotary_emb.inv_freq likewise.
    // The attention's own bias (c_attn.bias) is a weight and stays.
    TempDir dir;
    write(dir.path() / "gpt2.safetensors",
          safetensors_bytes({{"h.0.attn.c_attn.weight", "F32", {768, 2304}},
                             {"h.0.attn.c_attn.bias", "F32", {2304}},
                             {"h.0.attn.bias", "F32", {1, 1, 1024, 1024}},
                             {"h.0.attn.masked_bias", "F32", {}},
                             {"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {64}}}));
    const auto files = safetensors::read_weights((dir.path() / "gpt2.safetensors").string());
    ASSERT_TRUE(files.ok()) << files.error_text();
    EXPECT_EQ(files->bytes, (768u * 2304 + 2304) * 4);
    EXPECT_EQ(files->tensors, 2u);
    EXPECT_EQ(files->skipped_tensors, 3u);
    EXPECT_EQ(files->skipped_bytes, (1024u * 1024 + 1 + 64) * 4);
    EXPECT_EQ(files->source_text(),
              "7,087,104 bytes, exact from 1 safetensors header (F32); not counted: 3 buffers of the files (attention "
              "masks, rotary tables; 4,194,564 bytes) that engines skip at load");
    // Served in bf16, only the weights are recast, and the buffers are still named.
    const auto served = files->served_in(KvDtype::bf16);
    ASSERT_TRUE(served.ok()) << served.error_text();
    EXPECT_EQ(served->bytes, (768u * 2304 + 2304) * 2);
    EXPECT_NE(served->source_text().find("loaded as BF16; not counted: 3 buffers"), std::string::npos)
        << served->source_text();
    EXPECT_TRUE(safetensors::engine_skips("transformer.h.11.attn.bias"));
    EXPECT_FALSE(safetensors::engine_skips("transformer.h.11.attn.c_attn.bias"));
    EXPECT_FALSE(safetensors::engine_skips("model.layers.0.self_attn.o_proj.bias"));
}

TEST(Safetensors, ShardsOfAnIndexASnapshotAndACacheRepoFolderCountEachTensorOnce) {
    TempDir dir;
    const fs::path repo = dir.path() / "hub" / "models--org--Model-8B";
    const fs::path snap = repo / "snapshots" / "abc123";
    write(snap / "model-00001-of-00002.safetensors", safetensors_bytes({{"a", "BF16", {1024, 1024}}}));
    write(snap / "model-00002-of-00002.safetensors",
          safetensors_bytes({{"b", "BF16", {1024, 512}}, {"c", "F32", {1024}}}));
    write(snap / "model.safetensors.index.json",
          R"({"metadata":{"total_size":3149824},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
          R"("b":"model-00002-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
    write(snap / "consolidated.safetensors", safetensors_bytes({{"x", "BF16", {4096, 4096}}}));  // not in the index
    write(repo / "refs" / "main", "abc123\n");
    const std::uint64_t expected = 1024 * 1024 * 2 + 1024 * 512 * 2 + 4096;
    for (const fs::path& p : {snap, repo}) {
        const auto w = safetensors::read_weights(p.string());
        ASSERT_TRUE(w.ok()) << w.error_text();
        EXPECT_EQ(w->bytes, expected);
        EXPECT_EQ(w->files.size(), 2u);
        EXPECT_EQ(w->source_text(), "3,149,824 bytes, exact from 2 safetensors headers (BF16, F32)");
    }
    const auto one = safetensors::read_weights((snap / "consolidated.safetensors").string());
    ASSERT_TRUE(one.ok()) << one.error_text();
    EXPECT_EQ(one->bytes, 4096u * 4096 * 2);
    // Without an index, every .safetensors file in the folder.
    fs::remove(snap / "model.safetensors.index.json");
    EXPECT_EQ(safetensors::read_weights(snap.string())->files.size(), 3u);
    // Two copies of the weights in one folder, with no index to choose: refused, never counted twice.
    write(snap / "model-copy.safetensors", safetensors_bytes({{"a", "BF16", {1024, 1024}}}));
    EXPECT_FIELD_ERROR(safetensors::read_weights(snap.string()), "--weights",
                       "the tensor 'a' is in both model-00001-of-00002.safetensors and model-copy.safetensors (two "
                       "copies of the weights?)");
    fs::remove(snap / "model-copy.safetensors");
    // A named pipe or a device given as the weights: said as what it is (it was "no such file or folder").
    ASSERT_EQ(::mkfifo((dir.path() / "pipe.safetensors").c_str(), 0600), 0);
    EXPECT_FIELD_ERROR(safetensors::read_weights((dir.path() / "pipe.safetensors").string()), "--weights",
                       "pipe.safetensors: is not a regular file (a pipe or a device)");
    EXPECT_FIELD_ERROR(safetensors::read_weights("/dev/null"), "--weights",
                       "/dev/null: is not a regular file (a pipe or a device)");
    // A shard the index names that is missing, an empty folder, a path that is not there.
    write(snap / "model.safetensors.index.json", R"({"weight_map":{"a":"model-00003-of-00003.safetensors"}})");
    EXPECT_FIELD_ERROR(safetensors::read_weights(snap.string()), "safetensors",
                       "model-00003-of-00003.safetensors: cannot be opened");
    // An index that is not JSON says where; a shard named ".." or with a path is refused with its line.
    write(snap / "model.safetensors.index.json", "{\"weight_map\": {\"a\": \"x.safetensors\",}}");
    EXPECT_FIELD_ERROR(safetensors::read_weights(snap.string()), "--weights",
                       "model.safetensors.index.json:1: not valid JSON");
    write(snap / "model.safetensors.index.json", "{\"weight_map\": {\n\"a\": \"..\"}}");
    EXPECT_FIELD_ERROR(safetensors::read_weights(snap.string()), "--weights",
                       "model.safetensors.index.json:2: weight_map['a'] is \"..\"; it must name a file in the folder");
    fs::create_directories(dir.path() / "empty");
    EXPECT_FIELD_ERROR(safetensors::read_weights((dir.path() / "empty").string()), "--weights",
                       "holds no .safetensors");
    EXPECT_FIELD_ERROR(safetensors::read_weights((dir.path() / "nope").string()), "--weights",
                       "no such file or folder");
}

TEST(LocalModels, FindsTheHuggingFaceCacheOllamaAndLmStudioWithoutReadingWeights) {
    TempDir dir;
    const fs::path hub = dir.path() / "hub";
    // A config.json repo (refs/main names the snapshot), a GGUF repo, a repo with two snapshots and no ref (listed,
    // with what to do), a repo whose download never made a snapshot.
    write(hub / "models--meta-llama--Llama-3.1-8B" / "refs" / "main", "r2\n");
    write(hub / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "r1" / "config.json", "{}");
    write(hub / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "r2" / "config.json", "{}");
    write(hub / "models--bartowski--Qwen3-8B-GGUF" / "snapshots" / "r" / "Qwen3-8B-Q4_K_M.gguf", "GGUF");
    write(hub / "models--bartowski--Qwen3-8B-GGUF" / "snapshots" / "r" / "mmproj-f16.gguf", "GGUF");
    // A split quantization in a folder of its own, as unsloth's repos keep them: listed by its first piece.
    const fs::path q4 = hub / "models--bartowski--Qwen3-8B-GGUF" / "snapshots" / "r" / "Q4_K_M";
    write(q4 / "Qwen3-8B-Q4_K_M-00001-of-00002.gguf", "GGUF");
    write(q4 / "Qwen3-8B-Q4_K_M-00002-of-00002.gguf", "GGUF");
    write(hub / "models--x--y" / "snapshots" / "a" / "config.json", "{}");
    write(hub / "models--x--y" / "snapshots" / "b" / "config.json", "{}");
    write(hub / "datasets--x--y" / "snapshots" / "a" / "config.json", "{}");
    fs::create_directories(hub / "models--x--z" / "blobs");
    // refs/main left naming a snapshot since removed, beside two others; a snapshot of a README alone; a config.json
    // linked to a blob an interrupted download never wrote.
    write(hub / "models--x--stale" / "refs" / "main", "gone");
    write(hub / "models--x--stale" / "snapshots" / "c" / "config.json", "{}");
    write(hub / "models--x--stale" / "snapshots" / "d" / "config.json", "{}");
    write(hub / "models--x--noconfig" / "snapshots" / "e" / "model.safetensors", "");
    write(hub / "models--x--tokenizer" / "snapshots" / "g" / "tokenizer.json", "{}");  // no model: not listed
    fs::create_directories(hub / "models--x--dangling" / "snapshots" / "f");
    fs::create_symlink("../../blobs/0123", hub / "models--x--dangling" / "snapshots" / "f" / "config.json");
    // Ollama: a library model and one from another registry, each a manifest naming its GGUF blob.
    const fs::path ollama = dir.path() / "ollama";
    const std::string manifest =
        R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:t"},)"
        R"({"mediaType":"application/vnd.ollama.image.model","digest":"sha256:0123abcd","size":4}]})";
    write(ollama / "manifests" / "registry.ollama.ai" / "library" / "llama3.1" / "8b", manifest);
    write(ollama / "manifests" / "hf.co" / "bartowski" / "Phi-4-GGUF" / "Q4_K_M", manifest);
    write(ollama / "manifests" / "registry.ollama.ai" / "library" / "broken" / "latest", "{not json");
    write(ollama / "blobs" / "sha256-0123abcd", "GGUF");
    // A pull that did not finish: the manifest is there, its blob is not.
    write(ollama / "manifests" / "registry.ollama.ai" / "library" / "qwen3" / "8b",
          R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:feedbeef"}]})");
    // An empty blob (cut off at its start), a manifest of no model layer.
    write(ollama / "manifests" / "registry.ollama.ai" / "library" / "empty" / "1b",
          R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:00"}]})");
    write(ollama / "blobs" / "sha256-00", "");
    write(ollama / "manifests" / "registry.ollama.ai" / "library" / "nomodel" / "1b",
          R"({"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:t"}]})");
    // LM Studio: publisher/repo/file.gguf.
    const fs::path lms = dir.path() / "lm studio";
    write(lms / "lmstudio-community" / "gemma-3-4b-it-GGUF" / "gemma-3-4b-it-Q4_K_M.gguf", "GGUF");
    write(lms / "lmstudio-community" / "gemma-3-4b-it-GGUF" / "README.md", "");

    const auto models = scan_local_models({hub.string(), ollama.string(), lms.string()});
    std::vector<std::string> ids;
    for (const auto& m : models) ids.push_back(std::string(to_string(m.store)) + ": " + m.id);
    EXPECT_EQ(ids, (std::vector<std::string>{
                       "Hugging Face cache: bartowski/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf",
                       "Hugging Face cache: bartowski/Qwen3-8B-GGUF/Q4_K_M/Qwen3-8B-Q4_K_M-00001-of-00002.gguf",
                       "Hugging Face cache: meta-llama/Llama-3.1-8B",
                       "Hugging Face cache: x/dangling",
                       "Hugging Face cache: x/noconfig",
                       "Hugging Face cache: x/stale",
                       "Hugging Face cache: x/y",
                       "Hugging Face cache: x/z",
                       "Ollama: hf.co/bartowski/Phi-4-GGUF:Q4_K_M",
                       "Ollama: broken:latest",
                       "Ollama: empty:1b",
                       "Ollama: llama3.1:8b",
                       "Ollama: nomodel:1b",
                       "Ollama: qwen3:8b",
                       "LM Studio: lmstudio-community/gemma-3-4b-it-GGUF/gemma-3-4b-it-Q4_K_M.gguf",
                   }));
    const LocalModel* llama = find_local_model(models, "META-LLAMA/llama-3.1-8b");
    ASSERT_NE(llama, nullptr);
    EXPECT_EQ(fs::path(llama->path), hub / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "r2");
    EXPECT_FALSE(llama->gguf);
    const LocalModel* o = find_local_model(models, "llama3.1:8b");
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(fs::path(o->path), ollama / "blobs" / "sha256-0123abcd");
    EXPECT_TRUE(o->gguf);
    EXPECT_EQ(o->problem, "");
    EXPECT_EQ(find_local_model(models, "nothing/here"), nullptr);
    // Found but not readable as found: listed with why, and importing says so.
    const LocalModel* several = find_local_model(models, "x/y");
    ASSERT_NE(several, nullptr);
    EXPECT_EQ(
        several->problem,
        "has no refs/main to choose one of its 2 snapshots (a, b); give the snapshot folder itself (--model-dir " +
            (hub / "models--x--y" / "snapshots").string() + "/<one of them>)");
    EXPECT_EQ(find_local_model(models, "x/stale")->problem,
              "refs/main names none of its 2 snapshots (c, d); give the snapshot folder itself (--model-dir " +
                  (hub / "models--x--stale" / "snapshots").string() + "/<one of them>)");
    EXPECT_EQ(find_local_model(models, "x/noconfig")->problem,
              "its snapshot e holds weights but no config.json (the download did not finish?); download it again");
    EXPECT_EQ(find_local_model(models, "x/dangling")->problem,
              "its config.json links to a blob that is missing (the download did not finish?); download it again");
    EXPECT_EQ(find_local_model(models, "broken")
                  ->problem.rfind(
                      "its manifest " +
                          (ollama / "manifests" / "registry.ollama.ai" / "library" / "broken" / "latest").string() +
                          " is not JSON (",
                      0),
              0u)
        << find_local_model(models, "broken")->problem;
    EXPECT_NE(find_local_model(models, "nomodel:1b")->problem.find("names no model layer"), std::string::npos);
    EXPECT_EQ(find_local_model(models, "empty:1b")->problem,
              "its weights file " + (ollama / "blobs" / "sha256-00").string() +
                  " is empty (the pull did not finish?); run ollama pull empty:1b");
    // A blob that is no GGUF is said as a GGUF's problem, never a config.json's.
    LocalModel not_gguf = *o;
    write(ollama / "blobs" / "sha256-text", "hello");
    not_gguf.path = (ollama / "blobs" / "sha256-text").string();
    EXPECT_FIELD_ERROR(import_local_model(not_gguf), "gguf", "this is not a GGUF file");
    EXPECT_EQ(find_local_model(models, "x/z")->problem,
              "has no snapshot (the download did not finish?); download it again");
    const LocalModel* partial = find_local_model(models, "qwen3:8b");
    ASSERT_NE(partial, nullptr);
    EXPECT_EQ(partial->problem, "its weights file " + (ollama / "blobs" / "sha256-feedbeef").string() +
                                    " is missing (the pull did not finish?); run ollama pull qwen3:8b");
    EXPECT_FIELD_ERROR(import_local_model(*partial), "model", "qwen3:8b (Ollama): its weights file");
    // Cache folders that differ only in case: the exact spelling first, then one that can be read.
    const std::vector<LocalModel> cased{{"Qwen/Qwen3-8B", LocalStore::huggingface, "/a", false, "has no snapshot"},
                                        {"Qwen/qwen3-8b", LocalStore::huggingface, "/b", false, {}}};
    EXPECT_EQ(find_local_model(cased, "Qwen/Qwen3-8B")->path, "/a");
    EXPECT_EQ(find_local_model(cased, "Qwen/qwen3-8b")->path, "/b");
    EXPECT_EQ(find_local_model(cased, "qwen/QWEN3-8B")->path, "/b");
    // Missing folders are no error: nothing is found there.
    EXPECT_TRUE(scan_local_models({(dir.path() / "a").string(), (dir.path() / "b").string(), ""}).empty());
}

TEST(LocalModels, RootsFollowEachToolsEnvironment) {
    // Whatever the test does, the environment is put back.
    struct Restore {
        std::vector<std::pair<std::string, std::optional<std::string>>> saved;
        Restore() {
            for (const char* v :
                 {"HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS"}) {
                const char* value = std::getenv(v);
                saved.emplace_back(v, value ? std::optional<std::string>(value) : std::nullopt);
            }
        }
        ~Restore() {
            for (const auto& [name, value] : saved)
                if (value)
                    ::setenv(name.c_str(), value->c_str(), 1);
                else
                    ::unsetenv(name.c_str());
        }
    } restore;
    const auto with = [](std::initializer_list<std::pair<const char*, const char*>> vars) {
        for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS"})
            ::unsetenv(v);
        for (const auto& [k, v] : vars) ::setenv(k, v, 1);
        return local_roots_from_environment();
    };
    ::setenv("HOME", "/home/ü user", 1);
    EXPECT_EQ(with({}).huggingface, "/home/ü user/.cache/huggingface/hub");
    // No ~/.ollama/models there: the Linux service's folder when this machine has one.
    const std::string service = "/usr/share/ollama/.ollama/models";
    EXPECT_EQ(with({}).ollama, fs::is_directory(service) ? service : "/home/ü user/.ollama/models");
    EXPECT_EQ(with({}).lm_studio, "/home/ü user/.lmstudio/models");
    EXPECT_EQ(with({{"XDG_CACHE_HOME", "/x"}}).huggingface, "/x/huggingface/hub");
    EXPECT_EQ(with({{"HF_HOME", "/hf"}, {"XDG_CACHE_HOME", "/x"}}).huggingface, "/hf/hub");
    EXPECT_EQ(with({{"HF_HUB_CACHE", "/c"}, {"HF_HOME", "/hf"}}).huggingface, "/c");
    EXPECT_EQ(with({{"OLLAMA_MODELS", "/o"}}).ollama, "/o");
}

}  // namespace
}  // namespace kvscope
