// The CUDA backend, where a device answers; skipped with the reason elsewhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>

#include "kvscope/calculator/catalog.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"

namespace kvscope::probe {
namespace {

std::unique_ptr<Backend> cuda_or_skip(std::string& why) {
    auto b = make_backend("cuda");
    if (!b.ok()) {
        why = b.error_text();
        return nullptr;
    }
    return std::move(b.value());
}

// A short probe for the kernel checks: one timed run, a 64 MiB read ceiling.
ProbeRequest quick_request(const Architecture& arch, KvDtype dtype, std::uint64_t context, std::uint64_t batch) {
    ProbeRequest r;
    r.arch = arch;
    r.dtype = dtype;
    r.workload = {context, batch, 1, false};
    r.timing_runs = 1;
    r.ceiling_bytes = 64ull << 20;
    return r;
}

Architecture catalog_arch(const std::string& model) { return Catalog::builtin().find_model(model)->model.arch; }

StepRequest step_request(const Architecture& arch, KvDtype cache, KvDtype weights, std::uint64_t context,
                         std::uint64_t batch, int runs) {
    StepRequest r;
    r.arch = arch;
    r.kv_dtype = cache;
    r.weight_dtype = weights;
    r.workload = {.context_tokens = context, .batch = batch};
    r.timing_runs = runs;
    return r;
}

// KVSCOPE_ATTENTION_KERNEL (or another variable) set for one scope, and as it was again after it.
class KernelWishFor {
public:
    explicit KernelWishFor(const char* value, const char* name = "KVSCOPE_ATTENTION_KERNEL") : name_(name) {
        if (const char* was = std::getenv(name)) was_ = was;  // NOLINT(concurrency-mt-unsafe)
        setenv(name, value, 1);
    }
    ~KernelWishFor() {
        if (was_)
            setenv(name_, was_->c_str(), 1);
        else
            unsetenv(name_);
    }
    KernelWishFor(const KernelWishFor&) = delete;
    KernelWishFor& operator=(const KernelWishFor&) = delete;

private:
    const char* name_;
    std::optional<std::string> was_;
};

TEST(CudaBackend, AllocationDropMatchesThePredictionAndAttentionIsChecked) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    ProbeRequest r;
    r.arch = Catalog::builtin().find_model("llama-3-8b")->model.arch;
    r.dtype = KvDtype::bf16;
    r.workload = {8192, 1, 1, false};
    const ProbeReport p = cuda->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_EQ(p.allocation.requested_bytes, p.allocation.predicted_bytes);
    // Within ±2 MiB per allocation of the prediction rounded to the granularity.
    const double slack = 2.0 * (1 << 20) * static_cast<double>(p.allocation.allocations);
    EXPECT_NEAR(static_cast<double>(p.allocation.measured_bytes), static_cast<double>(p.allocation.requested_bytes),
                slack);
    EXPECT_LT(p.attention.max_rel_error, 1e-3);
    EXPECT_GT(p.attention.fraction_of_ceiling, 0.0);
    // The granularity is the driver's (2 MiB on current GPUs), not an assumption.
    const std::uint64_t g = p.allocation.granularity_bytes;
    EXPECT_TRUE(g >= 4096 && (g & (g - 1)) == 0) << g;
    EXPECT_NE(p.allocation.granularity_source.find("cuMemGetAllocationGranularity"), std::string::npos)
        << p.allocation.granularity_source;
}

TEST(CudaBackend, AllocatesTheRecurrentStateAndTimesOnlyTheAttentionLayers) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    // Qwen3-Next: 12 attention layers are timed, 36 gated-DeltaNet layers' states are allocated beside them.
    ProbeRequest r;
    r.arch = Catalog::builtin().find_model("qwen3-next-80b-a3b")->model.arch;
    r.dtype = KvDtype::bf16;
    r.workload = {8192, 2, 1, false};
    const ProbeReport p = cuda->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_EQ(p.allocation.predicted_state_bytes, 2ull * 36 * 1'097'728);
    EXPECT_EQ(p.allocation.requested_bytes, p.allocation.predicted_bytes);
    EXPECT_NEAR(static_cast<double>(p.allocation.measured_bytes), static_cast<double>(p.allocation.requested_bytes),
                2.0 * (1 << 20) * static_cast<double>(p.allocation.allocations));
    EXPECT_LT(p.attention.max_rel_error, 1e-3);
    // A pure Mamba-2 model: the state is allocated and measured, nothing is timed, nothing divides by 0 heads.
    r.arch = Catalog::builtin().find_model("mamba-codestral-7b")->model.arch;
    const ProbeReport m = cuda->probe(r, {});
    ASSERT_EQ(m.status, Status::ok) << m.message;
    EXPECT_EQ(m.allocation.requested_bytes, 2ull * 138'149'888);
    EXPECT_EQ(m.attention.runs, 0);
}

// Every kernel the backend can pick, and that it picks the one it should — the stream kernel for
// 16-bit GQA and MQA caches (heads of 64, 128 and 256; 2, 4 and 8 query heads per block; groups of
// 7 and 71, whose last chunk has idle heads, and of 16 and 128 over several blocks), the tile
// kernel for fp32, MHA, a head of 96 and MLA's shared latent; sliding windows, several sequences,
// tile and split edges — and the three-kernel path for a head shape that is not 16-byte aligned,
// each against float64 on fresh random data.
TEST(CudaBackend, EveryKernelShapeMatchesTheFloat64Reference) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    const std::string stream = "a warp per stream of tokens", tile = "-token tiles", three = "three kernels";
    // The CUDA-core kernels, whatever the shell exported (auto runs tensor cores on some of these shapes: the test
    // below checks that).
    const KernelWishFor cuda_cores("cuda-cores");
    struct Case {
        std::string model;
        KvDtype dtype;
        std::uint64_t context, batch;
        std::string kernel;  // what the kernel line must say
    };
    std::vector<Case> cases;
    for (KvDtype d : {KvDtype::bf16, KvDtype::fp16, KvDtype::fp32})
        for (std::uint64_t ctx : {1, 63, 64, 65, 777, 3000})
            cases.push_back({"llama-3-8b", d, ctx, 1, d == KvDtype::fp32 ? tile : stream});
    cases.push_back({"llama-3-8b", KvDtype::bf16, 1000, 3, stream});
    cases.push_back({"kvscope-teaching-32l", KvDtype::fp16, 777, 1, tile});  // MHA: one head per block
    cases.push_back({"gemma-2-9b", KvDtype::fp32, 5000, 1, tile});           // groups of 2, head 256, windows
    cases.push_back({"gemma-2-9b", KvDtype::bf16, 5000, 1, stream});
    cases.push_back({"gemma-3-27b", KvDtype::bf16, 777, 1, stream});     // groups of 2, head 128
    cases.push_back({"qwen2.5-7b", KvDtype::bf16, 777, 1, stream});      // groups of 7
    cases.push_back({"falcon-7b", KvDtype::bf16, 777, 1, stream});       // MQA, 71 heads, head 64
    cases.push_back({"gpt-oss-20b", KvDtype::fp16, 1000, 1, stream});    // groups of 8, head 64, windows
    cases.push_back({"llama-3.1-405b", KvDtype::bf16, 300, 1, stream});  // groups of 16
    cases.push_back({"phi-3-mini", KvDtype::fp16, 777, 1, tile});        // head 96
    cases.push_back({"deepseek-v3", KvDtype::bf16, 500, 1, tile});       // MLA: 576-wide latent, 128 heads
    cases.push_back({"deepseek-v3", KvDtype::fp32, 200, 1, tile});
    cases.push_back({"unaligned", KvDtype::bf16, 300, 2, three});
    for (const Case& c : cases) {
        SCOPED_TRACE(c.model + " " + std::string(to_string(c.dtype)) + " context " + std::to_string(c.context) +
                     " batch " + std::to_string(c.batch));
        Architecture arch;
        if (c.model == "unaligned") {
            arch = teaching_model();
            arch.layers = 4;
            arch.query_heads = arch.kv_heads = 6;
            arch.head_dim_k = arch.head_dim_v = 20;  // 40-byte rows: no 16-byte loads
        } else {
            arch = catalog_arch(c.model);
        }
        const ProbeReport p = cuda->probe(quick_request(arch, c.dtype, c.context, c.batch), {});
        ASSERT_EQ(p.status, Status::ok) << p.message;
        EXPECT_LT(p.attention.max_rel_error, 1e-4) << p.attention.kernel;
        EXPECT_GT(p.attention.median_ms, 0.0);
        EXPECT_NE(p.attention.kernel.find(c.kernel), std::string::npos) << p.attention.kernel;
    }
}

// The tensor-core kernel (KVSCOPE_ATTENTION_KERNEL=tensor-cores) on every head shape it takes, against
// float64 with the check the other kernels meet: groups of 8 (Llama 3 70B, heads of 128; gpt-oss-20b,
// heads of 64, with windows), 16 (Llama 3.1 405B), 7 (Qwen2.5 7B, rows idle), 4 (Llama 3 8B, several
// sequences), 71 over five blocks (Falcon 7B) and 1 (MHA); fp8 caches of both kinds; contexts at the
// 16-token tile's and the 64-token split's edges. An fp32 cache and a head of 256 keep their kernels
// and say why; a value that is not a choice is refused in words.
TEST(CudaBackend, TheTensorCoreKernelMatchesTheFloat64Reference) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    struct Case {
        std::string model;
        KvDtype dtype;
        std::uint64_t context, batch;
    };
    std::vector<Case> cases;
    for (std::uint64_t ctx : {1, 15, 16, 17, 63, 64, 65, 777, 3000})
        cases.push_back({"llama-3-70b", KvDtype::bf16, ctx, 1});
    cases.push_back({"llama-3-70b", KvDtype::fp16, 777, 2});
    // Heads of 64 take three stages a warp: fewer tiles than the copies ahead, one per warp, a partial last round.
    // At 1000 tokens the context is split (three splits of 384 on an H200), and gpt-oss-20b's sliding-window layers
    // hold 128 tokens, so their later splits are empty and leave at once (fp16 here, fp8 below).
    for (std::uint64_t ctx : {1, 17, 65, 129, 300}) cases.push_back({"gpt-oss-20b", KvDtype::fp16, ctx, 1});
    cases.push_back({"gpt-oss-20b", KvDtype::fp16, 1000, 1});
    cases.push_back({"gpt-oss-20b", KvDtype::bf16, 200, 1});
    cases.push_back({"llama-3.1-405b", KvDtype::bf16, 300, 1});
    cases.push_back({"qwen2.5-7b", KvDtype::bf16, 777, 1});
    cases.push_back({"llama-3-8b", KvDtype::bf16, 1000, 3});
    cases.push_back({"falcon-7b", KvDtype::bf16, 777, 1});
    cases.push_back({"kvscope-teaching-32l", KvDtype::fp16, 300, 1});
    for (const KvDtype fp8 : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2}) {  // widened to fp16 in shared memory
        cases.push_back({"llama-3-70b", fp8, 777, 1});
        cases.push_back({"llama-3-8b", fp8, 65, 2});
        cases.push_back({"gpt-oss-20b", fp8, 1000, 1});
    }
    // MLA's latent (cuda_decode_mla.cu): 128 and 64 query heads (8 and 4 blocks per split), tile and stage edges.
    for (std::uint64_t ctx : {1, 16, 17, 32, 33, 48, 49, 777, 3000})
        cases.push_back({"deepseek-v3", KvDtype::bf16, ctx, 1});
    cases.push_back({"deepseek-v3", KvDtype::fp16, 500, 2});
    cases.push_back({"kimi-k2", KvDtype::bf16, 1000, 1});
    for (const KvDtype fp8 : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2})
        for (std::uint64_t ctx : {1, 17, 33, 777}) cases.push_back({"deepseek-v3", fp8, ctx, 1});
    // A latent read by 20 query heads: a full block of 16 and one of 4.
    cases.push_back({"deepseek-v3/20", KvDtype::bf16, 300, 1});
    cases.push_back({"deepseek-v3/20", KvDtype::fp8_e5m2, 300, 1});
    const KernelWishFor tensor_cores("tensor-cores");
    for (const Case& c : cases) {
        SCOPED_TRACE(c.model + " " + std::string(to_string(c.dtype)) + " context " + std::to_string(c.context) +
                     " batch " + std::to_string(c.batch));
        Architecture arch = catalog_arch(c.model.substr(0, c.model.find('/')));
        if (c.model == "deepseek-v3/20") arch.query_heads = 20;
        const ProbeReport p = cuda->probe(quick_request(arch, c.dtype, c.context, c.batch), {});
        ASSERT_EQ(p.status, Status::ok) << p.message;
        EXPECT_LT(p.attention.max_rel_error, 1e-4) << p.attention.kernel;
        // GPUs that grant a block less shared memory than the kernel needs (the MLA kernel's 102.75 KiB is more
        // than the 99 KiB of sm_86 and sm_89) keep the CUDA-core kernels and say so.
        if (p.attention.kernel.find("tensor cores not used: the kernel needs") != std::string::npos) continue;
        EXPECT_NE(p.attention.kernel.find("on tensor cores"), std::string::npos) << p.attention.kernel;
        EXPECT_EQ(p.attention.kernel.find("latent read once") != std::string::npos,
                  c.model.rfind("deepseek", 0) == 0 || c.model == "kimi-k2")
            << p.attention.kernel;
    }
    {  // What auto runs (decode_choice.h's prefers_tensor_cores): tensor cores for groups of 5 or more, fp8 and MLA.
        const KernelWishFor automatic("auto");
        for (const auto& [model, dtype, on_tensor_cores] :
             {std::tuple{"llama-3-70b", KvDtype::bf16, true}, std::tuple{"deepseek-v3", KvDtype::bf16, true},
              std::tuple{"llama-3-8b", KvDtype::fp8_e4m3, true}, std::tuple{"llama-3-8b", KvDtype::bf16, false}}) {
            const ProbeReport p = cuda->probe(quick_request(catalog_arch(model), dtype, 300, 1), {});
            ASSERT_EQ(p.status, Status::ok) << p.message;
            EXPECT_LT(p.attention.max_rel_error, 1e-4) << p.attention.kernel;
            if (p.attention.kernel.find("tensor cores not used: the kernel needs") != std::string::npos) continue;
            EXPECT_EQ(p.attention.kernel.find("on tensor cores") != std::string::npos, on_tensor_cores)
                << model << ": " << p.attention.kernel;
        }
    }
    ProbeRequest r = quick_request(catalog_arch("gemma-2-9b"), KvDtype::bf16, 500, 1);
    ProbeReport p = cuda->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_LT(p.attention.max_rel_error, 1e-4);
    EXPECT_NE(p.attention.kernel.find("tensor cores not used: the tensor-core kernel takes heads of 64 or 128"),
              std::string::npos)
        << p.attention.kernel;
    r.arch = catalog_arch("llama-3-70b");
    r.dtype = KvDtype::fp32;
    p = cuda->probe(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_NE(p.attention.kernel.find("tensor cores not used"), std::string::npos) << p.attention.kernel;
    {  // KVSCOPE_DECODE_SPLITS sets the split count for measuring it (scripts/gpu-check's split sweep), and says so.
        const KernelWishFor three("3", "KVSCOPE_DECODE_SPLITS");
        const ProbeReport split = cuda->probe(quick_request(catalog_arch("llama-3-70b"), KvDtype::bf16, 3000, 1), {});
        ASSERT_EQ(split.status, Status::ok) << split.message;
        EXPECT_LT(split.attention.max_rel_error, 1e-4) << split.attention.kernel;
        EXPECT_NE(split.attention.kernel.find("3 splits of 1024 tokens"), std::string::npos) << split.attention.kernel;
        EXPECT_NE(split.attention.kernel.find("the splits set by KVSCOPE_DECODE_SPLITS"), std::string::npos)
            << split.attention.kernel;
    }
    const KernelWishFor odd("mma");
    p = cuda->probe(r, {});
    EXPECT_EQ(p.status, Status::invalid_input);
    EXPECT_NE(p.message.find("KVSCOPE_ATTENTION_KERNEL"), std::string::npos) << p.message;
}

TEST(CudaBackend, MoreThanTheDeviceHoldsIsOutOfMemoryNotACrash) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    ProbeRequest r;
    r.arch = Catalog::builtin().find_model("llama-3-70b")->model.arch;
    r.dtype = KvDtype::fp32;
    r.workload = {1u << 20, 64, 1, false};  // far beyond any GPU
    const ProbeReport p = cuda->probe(r, {});
    EXPECT_EQ(p.status, Status::out_of_memory) << p.message;
    const ProbeReport again = cuda->probe(
        [] {
            ProbeRequest small;
            small.arch = teaching_model();
            small.dtype = KvDtype::fp16;
            small.workload = {1024, 1, 1, false};
            return small;
        }(),
        {});
    EXPECT_EQ(again.status, Status::ok) << "the device must be usable after an out-of-memory: " << again.message;
}

// fp8 and int8 (one byte a value) and llama.cpp's blocks (34 and 18 bytes per 32 values), allocated exactly and
// checked against float64 of the same bytes decoded on the host.
TEST(CudaBackend, Fp8Int8AndBlockCachesAreAllocatedExactlyAndReadInTheirFormat) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    struct Format {
        KvDtype dtype;
        std::uint64_t bytes_per_32;
        const char* kernel;  // what the kernel line says of it
    };
    for (const Format& f :
         {Format{KvDtype::fp8_e4m3, 32, "fp8"}, Format{KvDtype::fp8_e5m2, 32, "fp8"}, Format{KvDtype::int8, 32, "int8"},
          Format{KvDtype::q8_0, 34, "llama.cpp's blocks"}, Format{KvDtype::q4_0, 18, "llama.cpp's blocks"}}) {
        ProbeRequest r;
        r.arch = Catalog::builtin().find_model("llama-3-8b")->model.arch;
        r.dtype = f.dtype;
        r.workload = {.context_tokens = 4096, .batch = 2};
        const ProbeReport p = cuda->probe(r, {});
        ASSERT_EQ(p.status, Status::ok) << p.message;
        EXPECT_EQ(p.allocation.requested_bytes, p.allocation.predicted_bytes);
        EXPECT_EQ(p.allocation.requested_bytes, 2ull * 32 * 2 * 8 * 128 * 4096 / 32 * f.bytes_per_32);
        EXPECT_LT(p.attention.max_rel_error, 1e-4) << to_string(f.dtype);
        EXPECT_NE(p.attention.kernel.find(f.kernel), std::string::npos) << p.attention.kernel;
        // MLA's latent (576 values: 18 blocks) and a sliding-window model in the same format.
        for (const char* model : {"deepseek-v3", "gemma-2-9b"}) {
            r.arch = Catalog::builtin().find_model(model)->model.arch;
            r.workload = {.context_tokens = 777, .batch = 1};
            const ProbeReport other = cuda->probe(r, {});
            ASSERT_EQ(other.status, Status::ok) << model << ": " << other.message;
            EXPECT_LT(other.attention.max_rel_error, 1e-4) << model << " " << to_string(f.dtype);
        }
    }
}

TEST(CudaBackend, ADecodeStepOfADenseModelBesideTheFloor) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    const StepRequest r = step_request(catalog_arch("llama-3-8b"), KvDtype::bf16, KvDtype::bf16, 4096, 4, 2);
    const StepReport p = cuda->step(r, {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_EQ(p.layers_total, 32u);
    EXPECT_GT(p.step_ms, 0.0);
    EXPECT_GT(p.predicted_step_ms, 0.0);
    EXPECT_GT(p.ceiling_gbps, 100.0);
    // 4 sequences × 32 layers × (K + V) × 8 heads × 128 × 4096 tokens × 2 bytes.
    EXPECT_EQ(p.kv_bytes_read, 4ull * 32 * 2 * 8 * 128 * 4096 * 2);
    EXPECT_NEAR(p.weights_ms + p.attention_ms + p.other_ms, p.step_ms, 1e-6 * p.step_ms + 1e-9);
    EXPECT_NE(p.kernel.find("cuBLAS"), std::string::npos) << p.kernel;
    // A part of the model when the memory limit holds only some layers: said, and scaled.
    Control small;
    small.memory_limit_bytes = 6ull << 30;
    const StepReport part = cuda->step(r, small);
    ASSERT_EQ(part.status, Status::ok) << part.message;
    EXPECT_TRUE(part.scaled);
    EXPECT_LT(part.layers_run, 32u);
    StepRequest fp8 = r;
    fp8.kv_dtype = KvDtype::fp8_e4m3;
    EXPECT_EQ(cuda->step(fp8, {}).status, Status::ok);
    // llama.cpp's blocks too, written a block of 32 at a time; int4 is refused with its reason.
    StepRequest q8 = r;
    q8.kv_dtype = KvDtype::q8_0;
    EXPECT_EQ(cuda->step(q8, {}).status, Status::ok);
    StepRequest int4 = r;
    int4.kv_dtype = KvDtype::int4;
    const StepReport no = cuda->step(int4, {});
    EXPECT_EQ(no.status, Status::invalid_input);
    EXPECT_NE(no.message.find("keep scales beside the values"), std::string::npos) << no.message;
    // Mixtral by layers: two experts a token, chosen on the GPU and counted as read.
    StepRequest moe = r;
    moe.arch = catalog_arch("mixtral-8x7b");
    Control eight;
    eight.memory_limit_bytes = 8ull << 30;
    const StepReport experts = cuda->step(moe, eight);
    ASSERT_EQ(experts.status, Status::ok) << experts.message;
    EXPECT_TRUE(experts.scaled);
    EXPECT_GE(experts.experts_read, 32u * 2);  // at least two a layer, scaled to all 32
    EXPECT_LE(experts.experts_read, 32u * 8);
    EXPECT_NE(experts.kernel.find("experts: the router's top-k chosen on the GPU"), std::string::npos)
        << experts.kernel;
}

// A model small enough to redo in float64 on the host (step_reference.h), dense and with experts: the GPU
// step's logits against the same layers' float64 logits. fp32 weights keep fp32 arithmetic throughout; 16-bit weights
// round the GEMMs' inputs to 16 bits (as engines keep activations), about 2^-9 of relative error each.
TEST(CudaBackend, ASmallModelsStepMatchesFloat64) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    Architecture a;
    a.name = "small dense";
    a.layers = 3;
    a.query_heads = 8;
    a.kv_heads = 2;
    a.head_dim_k = a.head_dim_v = 64;  // a head the tensor-core kernel takes too
    a.hidden_size = 256;
    a.intermediate_size = 512;
    a.vocab_size = 1000;
    a.gated_mlp = true;
    a.tied_embeddings = false;
    for (const KvDtype w : {KvDtype::fp32, KvDtype::bf16, KvDtype::fp16})
        // Every format the step writes. The step also compares each new K and V row it wrote with the CPU's
        // encoding of the same values, byte for byte, and fails if one differs.
        for (const KvDtype cache : {KvDtype::fp16, KvDtype::bf16, KvDtype::fp8_e4m3, KvDtype::fp8_e5m2, KvDtype::int8,
                                    KvDtype::q8_0, KvDtype::q4_0}) {
            SCOPED_TRACE(std::string(to_string(w)) + " weights, " + std::string(to_string(cache)) + " cache");
            const StepReport p = cuda->step(step_request(a, cache, w, 300, 3, 1), {});
            ASSERT_EQ(p.status, Status::ok) << p.message;
            EXPECT_GE(p.max_rel_error, 0.0) << "a model this small is checked";
            EXPECT_LT(p.max_rel_error, w == KvDtype::fp32 ? 1e-4 : 5e-2);
            EXPECT_NE(p.kernel.find("logits checked against float64"), std::string::npos) << p.kernel;
        }
    // Experts: 8, two a token, one shared, the first layer dense; the float64 check follows the GPU's choices.
    Architecture moe = a;
    moe.moe = MoeDims{
        .experts = 8, .experts_per_token = 2, .expert_intermediate_size = 64, .shared_experts = 1, .dense_layers = 1};
    for (const KvDtype w : {KvDtype::fp32, KvDtype::bf16}) {
        const StepReport p = cuda->step(step_request(moe, KvDtype::fp16, w, 300, 5, 1), {});
        ASSERT_EQ(p.status, Status::ok) << p.message;
        EXPECT_GE(p.max_rel_error, 0.0);
        EXPECT_LT(p.max_rel_error, w == KvDtype::fp32 ? 1e-4 : 5e-2) << to_string(w);
        EXPECT_GE(p.experts_read, 2u * 2);  // two expert layers, at least two experts each
        EXPECT_LE(p.experts_read, 2u * 8);
    }
    // Experts of 60 (rows that are not whole 16-byte loads), no shared experts, a plain MLP, fp16.
    Architecture odd = moe;
    odd.gated_mlp = false;
    odd.moe->expert_intermediate_size = 60;
    odd.moe->shared_experts = 0;
    const StepReport plain = cuda->step(step_request(odd, KvDtype::bf16, KvDtype::fp16, 100, 4, 1), {});
    ASSERT_EQ(plain.status, Status::ok) << plain.message;
    EXPECT_GE(plain.max_rel_error, 0.0);
    EXPECT_LT(plain.max_rel_error, 5e-2);
    // 24 tokens, two each of 4 experts: 48 choices grouped by expert, so some expert has 12 or more tokens, read
    // in passes of 8 (cuda_moe.cu); each chosen expert counts once a layer.
    Architecture crowded = moe;
    crowded.moe->experts = 4;
    const StepReport many = cuda->step(step_request(crowded, KvDtype::fp16, KvDtype::fp32, 100, 24, 1), {});
    ASSERT_EQ(many.status, Status::ok) << many.message;
    EXPECT_GE(many.max_rel_error, 0.0);
    EXPECT_LT(many.max_rel_error, 1e-4);
    EXPECT_GE(many.experts_read, 2u * 2);
    EXPECT_LE(many.experts_read, 2u * 4);
    // fp8_e4m3 weights: cuBLASLt's FP8 GEMMs, the activations quantised to fp8 (3 mantissa bits) before each, so
    // the logits differ from float64 by a few per cent, where 16-bit weights differ by a few tenths of one; the
    // experts' GEMV reads fp8 weights beside bf16 inputs (the odd model's 60 takes its scalar path). Before
    // compute capability 8.9 it is refused in words.
    const StepReport fp8 = cuda->step(step_request(a, KvDtype::fp16, KvDtype::fp8_e4m3, 300, 3, 1), {});
    if (fp8.status == Status::invalid_input) {
        EXPECT_NE(fp8.message.find("compute capability 8.9"), std::string::npos) << fp8.message;
    } else {
        ASSERT_EQ(fp8.status, Status::ok) << fp8.message;
        EXPECT_GE(fp8.max_rel_error, 0.0);
        EXPECT_LT(fp8.max_rel_error, 0.1);
        EXPECT_NE(fp8.kernel.find("cuBLASLt FP8 GEMMs"), std::string::npos) << fp8.kernel;
        for (const Architecture& experts : {moe, odd}) {
            const StepReport e = cuda->step(step_request(experts, KvDtype::q8_0, KvDtype::fp8_e4m3, 300, 5, 1), {});
            ASSERT_EQ(e.status, Status::ok) << e.message;
            EXPECT_GE(e.max_rel_error, 0.0);
            EXPECT_LT(e.max_rel_error, 0.1);
        }
    }
    const KernelWishFor tensor_cores("tensor-cores");
    const StepReport p = cuda->step(step_request(a, KvDtype::bf16, KvDtype::fp32, 300, 3, 1), {});
    ASSERT_EQ(p.status, Status::ok) << p.message;
    EXPECT_LT(p.max_rel_error, 1e-4);
    EXPECT_NE(p.kernel.find("on tensor cores"), std::string::npos) << p.kernel;
}

TEST(CudaBackend, StopwatchTextsMatch) {
    std::string why;
    auto cuda = cuda_or_skip(why);
    if (!cuda) GTEST_SKIP() << "no CUDA device: " << why;
    StopwatchRequest s;
    s.tokens = 32;
    const StopwatchReport w = cuda->stopwatch(s, {});
    ASSERT_EQ(w.status, Status::ok) << w.message;
    EXPECT_TRUE(w.tokens_identical);
}

}  // namespace
}  // namespace kvscope::probe
