#pragma once
// One decode step's attention on the GPU over the probe's cache, grouped-query aware: q·Kᵀ,
// softmax, ·V for every layer of every sequence. plan_decode chooses how (a fused split-K kernel —
// tensor-core tiles when asked for, one warp per stream of tokens for 16-bit GQA caches, 64-token
// tiles otherwise — or three simple
// kernels for head shapes that are not 16-byte aligned) and sizes the workspace; launch_decode
// enqueues one step. Host interface only: the kernels live in cuda_attention.cu (the three simple
// ones and the one that joins the splits), cuda_decode_tile.cu, cuda_decode_stream.cu,
// cuda_decode_mma.cu and cuda_decode_mla.cu (MLA's latent).

#include <cstddef>
#include <cstdint>
#include <string>

#include "decode_choice.h"
#include "kvscope/calculator/kv_dtype.h"
#include "reference.h"

namespace kvscope::probe::cuda {

// The cache formats, as the kernels take them. fp8 is OCP E4M3 (vLLM's "fp8"/"fp8_e4m3") or E5M2, read with
// a per-tensor scale of 1: vLLM keeps the scale beside the layer, not in the cache, so the bytes read are
// the same. q8_0 and q4_0 are llama.cpp's blocks of 32 values behind one fp16 scale (ggml-common.h block_q8_0,
// block_q4_0: 34 and 18 bytes), which a head never straddles (probe.cpp's kv_tensors checks). int8 is
// TensorRT-LLM's INT8 KV cache: one byte a value, its per-tensor scale (cpu::kInt8Scale) beside the layer.
enum : int { kFp32 = 0, kFp16 = 1, kBf16 = 2, kFp8E4m3 = 3, kFp8E5m2 = 4, kQ8_0 = 5, kQ4_0 = 6, kInt8 = 7 };
inline int code_of(KvDtype d) {
    switch (d) {
        case KvDtype::fp32:
            return kFp32;
        case KvDtype::fp16:
            return kFp16;
        case KvDtype::fp8_e4m3:
            return kFp8E4m3;
        case KvDtype::fp8_e5m2:
            return kFp8E5m2;
        case KvDtype::q8_0:
            return kQ8_0;
        case KvDtype::q4_0:
            return kQ4_0;
        case KvDtype::int8:
            return kInt8;
        case KvDtype::bf16:
        // Not stored by the probe (cpu::stores refuses them before a kernel is chosen): no code of their own.
        case KvDtype::int4:
        case KvDtype::mxfp4:
            return kBf16;
    }
    return kBf16;  // not reached: every member is a case above
}
// The CUDA backend's probe and step store every format the CPU backend stores (cpu::stores); a value's bytes
// in them are cpu::element_bytes'.
constexpr bool is_block(int code) { return code == kQ8_0 || code == kQ4_0; }

// One layer of one sequence: its K and V rows (token-major; MLA: v == k) and how many are read.
struct SlotDev {
    const void* k;
    const void* v;
    std::uint64_t tokens;
    std::uint32_t layer;
};

struct ShapeDev {
    std::uint32_t q_heads, kv_heads, dk, dv, row_k, row_v, v_stride, group;
};

// How the fused kernel splits the tokens: split_tokens per block, head_chunks blocks per KV head.
struct SplitDev {
    std::uint64_t split_tokens;
    std::uint32_t splits, head_chunks;
};

using DecodeFn = void (*)(const SlotDev*, const float*, ShapeDev, SplitDev, float*, float*);

struct DecodePlan {
    ShapeDev shape{};
    int dtype = kFp16;
    std::uint64_t slots = 0, max_tokens = 0;
    bool fused = false;
    bool tensor_cores = false;  // the MMA kernel: the query heads of a group are the rows of its tiles
    // The fused kernel.
    DecodeFn kernel = nullptr;
    SplitDev split{};
    std::uint64_t blocks = 0;
    unsigned threads = 0;
    std::size_t shared_bytes = 0;
    // The three kernels.
    unsigned token_blocks = 1, chunks = 1;
    std::uint64_t chunk = 0;
    // Device memory the step writes: the scores (three kernels), the splits' partial outputs and
    // their running max and sum (fused), and the output, slots × query heads × dv floats.
    std::uint64_t scores_bytes = 0, part_out_bytes = 0, part_ml_bytes = 0, out_bytes = 0;
    std::string description;  // for the report's kernel line
};

// `slots` = layers × sequences, `max_tokens` the longest slot, `sms` the device's multiprocessors, `wish`
// KVSCOPE_ATTENTION_KERNEL's choice between the tensor-core kernel and the others (decode_choice.h), `forced_splits`
// KVSCOPE_DECODE_SPLITS's count (0: the policy's).
DecodePlan plan_decode(const AttentionShape& sh, KvDtype dtype, std::uint64_t slots, std::uint64_t max_tokens,
                       unsigned sms, KernelWish wish, std::uint64_t forced_splits = 0);

struct DecodeBuffers {
    const SlotDev* slots;  // plan.slots of them
    const float* q;        // layers × query heads × dk
    float* scores;         // plan.scores_bytes
    float* part_out;       // plan.part_out_bytes
    float* part_ml;        // plan.part_ml_bytes
    float* out;            // plan.out_bytes: [slot][query head][dv]
};

// One step on the default stream; the launches are checked.
void launch_decode(const DecodePlan& plan, const DecodeBuffers& buffers);

}  // namespace kvscope::probe::cuda
