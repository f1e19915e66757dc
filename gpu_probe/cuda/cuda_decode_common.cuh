#pragma once
// What the fused decode kernels share on the device: 16 bytes of the cache as floats, and which
// part of the work a block has.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda_attention.h"

namespace kvscope::probe::cuda {

// 16 bytes of K or V as floats: 4 fp32, 8 fp16 or 8 bf16.
template <class T>
__device__ __forceinline__ void to_floats(const uint4& raw, float* f);
template <>
__device__ __forceinline__ void to_floats<float>(const uint4& raw, float* f) {
    f[0] = __uint_as_float(raw.x);
    f[1] = __uint_as_float(raw.y);
    f[2] = __uint_as_float(raw.z);
    f[3] = __uint_as_float(raw.w);
}
template <>
__device__ __forceinline__ void to_floats<__half>(const uint4& raw, float* f) {
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 two = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
        f[2 * i] = two.x;
        f[2 * i + 1] = two.y;
    }
}
template <>
__device__ __forceinline__ void to_floats<__nv_bfloat16>(const uint4& raw, float* f) {
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // bf16 is the upper half of an fp32
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

// What one block of a fused kernel reads: blocks are numbered (slot, KV head, split, chunk of up to
// `g` query heads), the chunk innermost.
struct BlockWork {
    unsigned split, slot, h;
    unsigned head0;  // first query head of the block, within its layer
    unsigned heads;  // query heads of the chunk: g, or fewer in a group's last chunk
    SlotDev s;
    std::uint64_t t_begin, t_end;
};

__device__ __forceinline__ BlockWork block_work(const SlotDev* slots, const ShapeDev& sh, const SplitDev& sp,
                                                unsigned g) {
    BlockWork w;
    unsigned index = blockIdx.x;
    const unsigned chunk = index % sp.head_chunks;
    index /= sp.head_chunks;
    w.split = index % sp.splits;
    const unsigned pair = index / sp.splits;
    w.slot = pair / sh.kv_heads;
    w.h = pair % sh.kv_heads;
    w.s = slots[w.slot];
    w.head0 = w.h * sh.group + chunk * g;
    w.heads = min(g, sh.group - chunk * g);
    w.t_begin = static_cast<std::uint64_t>(w.split) * sp.split_tokens;
    w.t_end = min(w.s.tokens, w.t_begin + sp.split_tokens);
    return w;
}

}  // namespace kvscope::probe::cuda
