#pragma once
// The fused decode kernels behind plan_decode (cuda_attention.h), as host code sees them: their
// launch shapes, and the kernel for a cache format and a number of query heads per block. The tile
// kernel is in cuda_decode_tile.cu, the stream kernel in cuda_decode_stream.cu, the tensor-core kernels
// in cuda_decode_mma.cu and cuda_decode_mla.cu; what they share on the device is in cuda_decode_common.cuh
// and cuda_mma_common.cuh.

#include <cstddef>
#include <cstdint>

#include "cuda_attention.h"

namespace kvscope::probe::cuda {

// The tile kernel: 64-token tiles, scores and a running softmax in shared memory.
constexpr unsigned kThreads = 128;  // four warps
constexpr unsigned kTile = 64;      // tokens whose scores sit in shared memory at once; splits are whole tiles
// Blocks per resident block slot when no whole number of waves is sought: more, shorter blocks
// shrink the tail. Four instead of eight raised the tile kernel's 8k from 0.54 to 0.59 of the read
// ceiling on an H200 and cost 128k about 0.01 (docs/gpu-results.md).
constexpr unsigned kWaves = 4;
// Query heads sharing one K/V read in the tile kernel (1, 2, 4 or 8). Fewer heads per block (their
// blocks adjacent, so the second read of K and V comes from L2) allow more blocks per SM but
// measured worse: at 2, 0.54/0.60/0.61 of the ceiling at 8k/32k/128k against 0.59/0.72/0.76.
constexpr unsigned kMaxHeadsPerBlock = 8;
// The tile kernel's shared memory, in bytes, for g query heads per block.
std::size_t tile_shared_bytes(unsigned g, std::uint64_t dk, std::uint64_t dv);
// The tile kernel for a cache format (kFp32, kFp16, kBf16) and g = 1, 2, 4 or 8 query heads per block.
DecodeFn tile_kernel(int dtype, unsigned g);

// The stream kernel: one warp per stream of tokens, queries and output in registers.
constexpr unsigned kStreamWarps = 4;  // 8 measured worse: 0.67 / 0.73 / 0.75 against 0.76 / 0.85 / 0.86
// The stream kernel for a 16-bit format (kFp16, kBf16), g = 2, 4 or 8 query heads per block and
// heads of `loads` 16-byte loads (8, 16 or 32); nullptr for any other.
DecodeFn stream_kernel(int dtype, unsigned g, std::uint64_t loads);

// The tensor-core kernel (cuda_decode_mma.cu): up to kMmaHeads (decode_choice.h) query heads of one KV
// head per block, 16-token tiles per warp.
constexpr unsigned kMmaWarps = 4;
// Its dynamic shared memory for heads of d values (64 or 128; 0 for any other): 70.5 KiB and 88.5 KiB,
// more than the default 48 KiB, so plan_decode raises the kernel's limit.
std::size_t mma_shared_bytes(std::uint64_t d);
// The tensor-core kernel for a cache format (kFp16, kBf16, kFp8E4m3, kFp8E5m2) and heads of d = 64 or 128
// values; nullptr for any other.
DecodeFn mma_kernel(int dtype, std::uint64_t d);

// The tensor-core kernel for MLA's latent (cuda_decode_mla.cu): K the kMlaLatent values of a token's latent,
// V its first kMlaValue (decode_choice.h), up to kMmaHeads query heads per block, the block's four warps
// sharing each 16-token tile. Its dynamic shared memory: 102.75 KiB.
std::size_t mla_shared_bytes();
// For a cache format (kFp16, kBf16, kFp8E4m3, kFp8E5m2); nullptr for any other.
DecodeFn mla_kernel(int dtype);

}  // namespace kvscope::probe::cuda
