#pragma once
// Block-wide max and sum for the probe's kernels (any block size that is a multiple of 32, up to
// 1024). Every thread of the block must call them; every thread gets the result.

#include <cuda_runtime.h>

#include <cmath>

namespace kvscope::probe::cuda {

template <bool IsMax>
__device__ __forceinline__ float block_reduce(float x) {
    __shared__ float partial[32];
    for (int off = 16; off > 0; off /= 2) {
        const float y = __shfl_down_sync(0xffffffffu, x, off);
        x = IsMax ? fmaxf(x, y) : x + y;
    }
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = x;
    __syncthreads();
    if (threadIdx.x < 32) {
        x = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : (IsMax ? -INFINITY : 0.0f);
        for (int off = 16; off > 0; off /= 2) {
            const float y = __shfl_down_sync(0xffffffffu, x, off);
            x = IsMax ? fmaxf(x, y) : x + y;
        }
        if (threadIdx.x == 0) partial[0] = x;
    }
    __syncthreads();
    const float result = partial[0];
    __syncthreads();  // partial is reused by the next call
    return result;
}

__device__ __forceinline__ float block_max(float x) { return block_reduce<true>(x); }
__device__ __forceinline__ float block_sum(float x) { return block_reduce<false>(x); }

}  // namespace kvscope::probe::cuda
