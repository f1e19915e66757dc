// Which decode kernel the CUDA backend may run (decode_choice.h): the part of its plan that needs no
// device, so it is checked on every machine. The kernels themselves are checked against float64 in
// cuda_backend_test.cpp where a device answers.
#include "decode_choice.h"

#include <gtest/gtest.h>

#include "backends.h"
#include "kvscope/calculator/catalog.h"

namespace kvscope::probe {
namespace {

AttentionShape shape_of(const std::string& model) {
    return attention_shape(Catalog::builtin().find_model(model)->model.arch);
}

TEST(DecodeChoice, TheEnvironmentChoosesBetweenTensorCoresAndTheMeasuredKernels) {
    EXPECT_EQ(attention_kernel_wish(nullptr).wish, KernelWish::automatic);
    EXPECT_EQ(attention_kernel_wish("").wish, KernelWish::automatic);
    EXPECT_EQ(attention_kernel_wish("auto").wish, KernelWish::automatic);
    EXPECT_EQ(attention_kernel_wish("tensor-cores").wish, KernelWish::tensor_cores);
    EXPECT_EQ(attention_kernel_wish("cuda-cores").wish, KernelWish::cuda_cores);
    for (const char* odd : {"tensor_cores", "TENSOR-CORES", "mma", " auto"}) {
        const KernelWishRead r = attention_kernel_wish(odd);
        EXPECT_NE(r.error.find("KVSCOPE_ATTENTION_KERNEL"), std::string::npos) << odd;
        EXPECT_NE(r.error.find("auto, tensor-cores or cuda-cores"), std::string::npos) << r.error;
        EXPECT_NE(r.error.find(odd), std::string::npos) << r.error;
    }
    EXPECT_TRUE(attention_kernel_wish("tensor-cores").error.empty());
}

// KVSCOPE_DECODE_SPLITS, for measuring the split policy: a whole number from 1, or unset for the probe's own count;
// anything else is refused in words that name the variable and the value.
TEST(DecodeChoice, TheSplitCountIsAWholeNumberOrRefusedInWords) {
    EXPECT_EQ(decode_splits_wish(nullptr).splits, 0u);
    EXPECT_EQ(decode_splits_wish("").splits, 0u);
    EXPECT_TRUE(decode_splits_wish("").error.empty());
    EXPECT_EQ(decode_splits_wish("8").splits, 8u);
    EXPECT_TRUE(decode_splits_wish("8").error.empty());
    for (const char* odd : {"0", "-3", "eight", "8x", " 8", "1.5", "99999999999999999999999"}) {
        const KernelWishRead r = decode_splits_wish(odd);
        EXPECT_EQ(r.splits, 0u) << odd;
        EXPECT_NE(r.error.find("KVSCOPE_DECODE_SPLITS: \"" + std::string(odd) + "\" is not a number of splits"),
                  std::string::npos)
            << r.error;
    }
}

// The shapes the issue names for tensor cores (8, 16, 7 and 8 query heads per KV head; heads of 128 and
// 64) and the stream kernel's own (Llama 3 8B, 4 per KV head) are taken; what the kernel does not read is
// refused in words.
TEST(DecodeChoice, TheTensorCoreKernelsTakeSixteenBitAndFp8CachesWithHeadsOf64Or128AndMlaLatents) {
    for (const char* model : {"llama-3-70b", "llama-3.1-405b", "qwen2.5-7b", "gpt-oss-20b", "llama-3-8b", "falcon-7b",
                              "qwen3-235b-a22b", "kvscope-teaching-32l"})
        for (const KvDtype d : {KvDtype::bf16, KvDtype::fp16}) {
            EXPECT_EQ(tensor_core_refusal(shape_of(model), d), "") << model;
            EXPECT_TRUE(use_tensor_cores(KernelWish::tensor_cores, shape_of(model), d)) << model;
            EXPECT_FALSE(use_tensor_cores(KernelWish::cuda_cores, shape_of(model), d)) << model;
        }
    // fp8 is widened to fp16 on its way to the tensor cores.
    for (const KvDtype d : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2}) {
        EXPECT_EQ(tensor_core_refusal(shape_of("llama-3-70b"), d), "");
        EXPECT_EQ(tensor_core_refusal(shape_of("gpt-oss-20b"), d), "");
    }
    EXPECT_EQ(tensor_core_refusal(shape_of("llama-3-70b"), KvDtype::fp32),
              "the tensor-core kernel reads fp16, bf16 and fp8 caches, not fp32");
    EXPECT_EQ(tensor_core_refusal(shape_of("llama-3-70b"), KvDtype::q8_0),
              "the tensor-core kernel reads fp16, bf16 and fp8 caches, not q8_0");
    // MLA: one 576-wide latent read as K, its first 512 values as V (cuda_decode_mla.cu), in every format the
    // grouped-query kernel reads.
    for (const char* model : {"deepseek-v3", "kimi-k2", "deepseek-v3.2"}) {
        ASSERT_TRUE(is_mla_latent(shape_of(model))) << model;
        for (const KvDtype d : {KvDtype::bf16, KvDtype::fp16, KvDtype::fp8_e4m3, KvDtype::fp8_e5m2})
            EXPECT_EQ(tensor_core_refusal(shape_of(model), d), "") << model << " " << to_string(d);
    }
    EXPECT_EQ(tensor_core_refusal(shape_of("deepseek-v3"), KvDtype::fp32),
              "the tensor-core kernel reads fp16, bf16 and fp8 caches, not fp32");
    // Another latent (MiniCPM3's: kv_lora_rank 256, qk_rope_head_dim 32) is refused in its own words, and K and
    // V heads of two widths that are not a latent in theirs.
    const AttentionShape minicpm3{40, 1, 288, 256, 288, 288};
    EXPECT_FALSE(is_mla_latent(minicpm3));
    EXPECT_EQ(tensor_core_refusal(minicpm3, KvDtype::bf16),
              "the tensor-core kernel takes MLA latents of 512 + 64 values, not 256 + 32");
    const AttentionShape two_widths{32, 8, 192, 128, 8 * 192, 8 * 128};
    EXPECT_FALSE(is_mla_latent(two_widths));
    EXPECT_EQ(tensor_core_refusal(two_widths, KvDtype::bf16),
              "the tensor-core kernel takes K and V heads of one width, not 192 and 128");
    EXPECT_EQ(tensor_core_refusal(shape_of("gemma-2-9b"), KvDtype::bf16),
              "the tensor-core kernel takes heads of 64 or 128 values, not 256");
    EXPECT_EQ(tensor_core_refusal(shape_of("phi-3-mini"), KvDtype::fp16),
              "the tensor-core kernel takes heads of 64 or 128 values, not 96");
    // A V head stride that breaks the rows into pieces of other than 16 bytes.
    AttentionShape odd = shape_of("llama-3-8b");
    odd.v_head_stride = 132;
    EXPECT_NE(tensor_core_refusal(odd, KvDtype::bf16).find("16-byte"), std::string::npos);
    EXPECT_FALSE(use_tensor_cores(KernelWish::tensor_cores, odd, KvDtype::bf16));
    // 136 values: 17 pieces of 16 bytes in bf16, but 8½ in fp8.
    odd.v_head_stride = 136;
    EXPECT_EQ(tensor_core_refusal(odd, KvDtype::bf16), "");
    for (const KvDtype d : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2})
        EXPECT_NE(tensor_core_refusal(odd, d).find("16-byte"), std::string::npos) << to_string(d);
}

// What auto runs, from the H200's figures (docs/gpu-results.md, 2026-12-04): tensor cores for groups of 5 or more
// query heads per KV head (Qwen2.5 7B's 7, Llama 3 70B's and gpt-oss-20b's 8, Llama 3.1 405B's 16, Falcon 7B's
// 71), fp8 caches and MLA's latent; the stream kernel for groups of 4 or fewer (Llama 3 8B, Gemma 3) and MHA;
// never a shape the tensor-core kernel refuses; and cuda-cores always keeps the CUDA cores.
TEST(DecodeChoice, AutoRunsTensorCoresWhereTheH200sFiguresFavourThem) {
    for (const char* model :
         {"qwen2.5-7b", "llama-3-70b", "gpt-oss-20b", "llama-3.1-405b", "falcon-7b", "deepseek-v3", "kimi-k2"})
        for (const KvDtype d : {KvDtype::bf16, KvDtype::fp16}) {
            EXPECT_TRUE(use_tensor_cores(KernelWish::automatic, shape_of(model), d)) << model;
            EXPECT_FALSE(use_tensor_cores(KernelWish::cuda_cores, shape_of(model), d)) << model;
        }
    for (const char* model : {"llama-3-8b", "gemma-3-27b", "kvscope-teaching-32l"}) {
        EXPECT_FALSE(use_tensor_cores(KernelWish::automatic, shape_of(model), KvDtype::bf16)) << model;
        EXPECT_TRUE(use_tensor_cores(KernelWish::tensor_cores, shape_of(model), KvDtype::bf16)) << model;
        for (const KvDtype d : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2})  // no CUDA-core fused kernel reads fp8
            EXPECT_TRUE(use_tensor_cores(KernelWish::automatic, shape_of(model), d)) << model;
    }
    // The edge: 5 query heads per KV head take tensor cores, 4 do not.
    EXPECT_TRUE(use_tensor_cores(KernelWish::automatic, {20, 4, 128, 128, 4 * 128, 4 * 128}, KvDtype::bf16));
    EXPECT_FALSE(use_tensor_cores(KernelWish::automatic, {16, 4, 128, 128, 4 * 128, 4 * 128}, KvDtype::bf16));
    // Refused shapes stay on the CUDA cores whatever the group: fp32, llama.cpp's blocks, heads of 256.
    EXPECT_FALSE(use_tensor_cores(KernelWish::automatic, shape_of("llama-3-70b"), KvDtype::fp32));
    EXPECT_FALSE(use_tensor_cores(KernelWish::automatic, shape_of("llama-3-70b"), KvDtype::q8_0));
    EXPECT_FALSE(use_tensor_cores(KernelWish::automatic, {32, 4, 256, 256, 4 * 256, 4 * 256}, KvDtype::bf16));
}

// The kernel line says why tensor cores were not used where they were asked for, and nothing otherwise (under
// auto the kernel line names the kernel that ran).
TEST(DecodeChoice, TheKernelLineSaysWhyTensorCoresWereNotUsedWhereAskedFor) {
    for (const char* model : {"llama-3-70b", "llama-3-8b", "deepseek-v3"})
        for (const KernelWish w : {KernelWish::automatic, KernelWish::cuda_cores, KernelWish::tensor_cores})
            EXPECT_EQ(tensor_core_note(w, shape_of(model), KvDtype::bf16), "") << model;
    EXPECT_EQ(tensor_core_note(KernelWish::automatic, shape_of("llama-3-70b"), KvDtype::fp32), "");
    EXPECT_EQ(tensor_core_note(KernelWish::tensor_cores, shape_of("gemma-2-9b"), KvDtype::bf16),
              "; tensor cores not used: the tensor-core kernel takes heads of 64 or 128 values, not 256");
    EXPECT_EQ(tensor_core_note(KernelWish::tensor_cores, shape_of("llama-3-70b"), KvDtype::q8_0),
              "; tensor cores not used: the tensor-core kernel reads fp16, bf16 and fp8 caches, not q8_0");
}

}  // namespace
}  // namespace kvscope::probe
