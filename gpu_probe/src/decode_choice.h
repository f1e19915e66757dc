#pragma once
// Which decode attention kernel the CUDA backend may run for a head shape and cache format: the part of
// plan_decode (gpu_probe/cuda/cuda_attention.h) that needs no device, so that it is tested everywhere.
//
// KVSCOPE_ATTENTION_KERNEL chooses between the tensor-core kernel (cuda_decode_mma.cu: the query heads
// of a group are the rows of an MMA tile, as TensorRT-LLM's XQA and FlashInfer's tensor-core decode do)
// and the CUDA-core kernels measured in docs/gpu-results.md (the stream, tile and three-kernel paths):
//   auto          the default: the tensor-core kernel where it takes the shape and the measurements favour it
//                 (prefers_tensor_cores), else the CUDA-core kernels
//   tensor-cores  the tensor-core kernel wherever it takes the shape (tensor_core_refusal), else auto
//   cuda-cores    the CUDA-core kernels

#include <cstdint>
#include <string>

#include "kvscope/calculator/kv_dtype.h"
#include "reference.h"

namespace kvscope::probe {

enum class KernelWish { automatic, tensor_cores, cuda_cores };

struct KernelWishRead {
    KernelWish wish = KernelWish::automatic;
    std::uint64_t splits =
        0;              // KVSCOPE_DECODE_SPLITS: the fused kernels' split count, for measuring it; 0: the policy's
    std::string error;  // set when a value is not one the variable takes; names the variable and what it takes
};

// KVSCOPE_ATTENTION_KERNEL's value (nullptr or empty: auto).
KernelWishRead attention_kernel_wish(const char* value);
// KVSCOPE_DECODE_SPLITS's value (nullptr or empty: the policy's count, 0): a whole number from 1, else an error that
// names the variable. plan_decode takes at most one split per four 64-token tiles and says when it took fewer.
KernelWishRead decode_splits_wish(const char* value);
// Both, read from the environment (the kernel's error first).
KernelWishRead attention_kernel_wish_from_environment();

// Query heads in one MMA tile: a group of more heads takes several blocks, a smaller one leaves rows idle.
constexpr unsigned kMmaHeads = 16;

// MLA's latent as the probe attends over it (probe.cpp's attention_shape): one "KV head" whose K is the whole
// latent, kv_lora_rank + qk_rope_head_dim values, and whose V is its first kv_lora_rank values, read from the
// same row. DeepSeek-V2, V3, V3.2 and Kimi K2 all have 512 + 64 (their config.json files); the MLA tensor-core
// kernel (gpu_probe/cuda/cuda_decode_mla.cu) takes that latent, and reads V from the K row it has in shared
// memory: a caller whose V is not the K row's first kMlaValue values (the decode step, were it to run MLA with
// buffers of its own) must not plan it.
constexpr unsigned kMlaLatent = 576, kMlaValue = 512;
bool is_mla_latent(const AttentionShape& shape);

// Empty when a tensor-core kernel takes this shape and format, else why not, in words for the report: they
// read fp16, bf16 and fp8 (E4M3, E5M2) caches whose K and V heads are both 64 or 128 values wide, or MLA
// latents of 512 + 64 values.
std::string tensor_core_refusal(const AttentionShape& shape, KvDtype dtype);

// Query heads per KV head from which `auto` runs the tensor-core kernel. Measured on an H200 (2026-12-04,
// docs/gpu-results.md, scripts/gpu-check): with groups of 7, 8 and 16 the stream kernel reached 0.26–0.51 of the
// same-run read ceiling, limited by CUDA-core arithmetic, and the tensor-core kernel 0.73–0.92; with Llama 3 8B's
// groups of 4 both reached 0.88, and the stream kernel, measured longer, stays.
constexpr unsigned kAutoGroup = 5;

// Whether `auto` runs the tensor-core kernel on a shape it takes: groups of kAutoGroup or more query heads, fp8
// caches (which no CUDA-core fused kernel reads: 0.46 of the ceiling against 0.04 for the three-kernel path on the
// H200) and MLA's latent (128 query heads on one latent: 0.05–0.10 against 0.02–0.04; arithmetic-bound either
// way, see docs/gpu-results.md).
bool prefers_tensor_cores(const AttentionShape& shape, KvDtype dtype);

// Whether plan_decode runs the tensor-core kernel: asked for, or `auto` on a shape it prefers, and the shape
// allows it; never under cuda-cores.
bool use_tensor_cores(KernelWish wish, const AttentionShape& shape, KvDtype dtype);

// What the report's kernel line adds when the tensor-core kernel was asked for and could not run: why not, in
// words; empty otherwise.
std::string tensor_core_note(KernelWish wish, const AttentionShape& shape, KvDtype dtype);

}  // namespace kvscope::probe
