// The CUDA backend, where a device answers; skipped with the reason elsewhere.
#include <gtest/gtest.h>

#include "kvscope/calculator/catalog.h"
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
