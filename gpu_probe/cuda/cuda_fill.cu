#include "cuda_fill.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <utility>
#include <vector>

#include "cuda_attention.h"
#include "cuda_check.h"
#include "cuda_memory.h"
#include "step_common.h"

namespace kvscope::probe::cuda {
namespace {

__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

// Random values of magnitude 1/8 … 1 with random signs: never zeros.
__global__ void fill_kernel(void* data, std::size_t n, int dtype, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const std::uint64_t h = mix(i * 0x9E3779B97F4A7C15ull + seed);
        const float magnitude = 0.125f + 0.875f * static_cast<float>(h >> 40) / 16777216.0f;
        const float v = (h & 1) ? -magnitude : magnitude;
        if (dtype == kFp32)
            static_cast<float*>(data)[i] = v;
        else if (dtype == kFp16)
            static_cast<__half*>(data)[i] = __float2half(v);
        else if (dtype == kFp8E4m3)
            static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(v);
        else if (dtype == kFp8E5m2)
            static_cast<__nv_fp8_e5m2*>(data)[i] = __nv_fp8_e5m2(v);
        else if (dtype == kInt8)  // ±1 … 127 steps of cpu::kInt8Scale: within ±1, never 0
            static_cast<signed char*>(data)[i] =
                static_cast<signed char>((h & 1 ? -1 : 1) * static_cast<int>(1 + (h >> 40) % 127));
        else
            static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
    }
}

// llama.cpp's blocks of 32 values, n / 32 of them, as the CPU probe fills them (cpu_kernels.cpp): the scale puts
// the values within ±1 (1/127 for q8_0, 1/8 for q4_0), and no quantised value is 0 (q8_0: ±1…127; q4_0: nibbles
// 0…15 but 8).
__global__ void fill_blocks_kernel(unsigned char* data, std::size_t n, int dtype, std::uint64_t seed) {
    const bool q8 = dtype == kQ8_0;
    const std::size_t block_bytes = q8 ? 34 : 18;
    const unsigned short d = __half_as_ushort(__float2half(q8 ? 1.0f / 127.0f : 1.0f / 8.0f));
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n / 32;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        unsigned char* b = data + i * block_bytes;
        *reinterpret_cast<unsigned short*>(b) = d;  // one 16-bit store: see store_block in cuda_step_kernels.cu
        for (unsigned j = 0; j < (q8 ? 32u : 16u); ++j) {
            const std::uint64_t h = mix((i * 32 + j) * 0x9E3779B97F4A7C15ull + seed);
            if (q8) {
                const auto q = static_cast<int>(1 + h % 127);
                b[2 + j] = static_cast<unsigned char>(static_cast<signed char>((h >> 40) & 1 ? -q : q));
            } else {
                const auto nibble = [](std::uint64_t x) {
                    return static_cast<unsigned>(x % 15 >= 8 ? x % 15 + 1 : x % 15);
                };
                b[2 + j] = static_cast<unsigned char>(nibble(h) | (nibble(h >> 20) << 4));
            }
        }
    }
}

// A read-only pass, four independent 16-byte loads in flight per thread; the sum is written only
// when it equals an unlikely value, so the reads stay.
__global__ void read_kernel(const uint4* data, std::size_t n, unsigned int* sink) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    unsigned int acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldg(data + i), b = __ldg(data + i + stride), c = __ldg(data + i + 2 * stride),
                    d = __ldg(data + i + 3 * stride);
        acc ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^ (d.x ^ d.y ^ d.z ^ d.w);
    }
    for (; i < n; i += stride) {
        const uint4 v = __ldg(data + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

}  // namespace

void fill_random(void* data, std::size_t n, int dtype, std::uint64_t seed) {
    if (is_block(dtype))
        fill_blocks_kernel<<<1024, 256>>>(static_cast<unsigned char*>(data), n, dtype, seed);
    else
        fill_kernel<<<1024, 256>>>(data, n, dtype, seed);
    KVSCOPE_CUDA(cudaGetLastError());
}

void read_pass(const void* data, std::size_t bytes, unsigned sms, unsigned* sink) {
    read_kernel<<<sms * 8, 256>>>(static_cast<const uint4*>(data), bytes / 16, sink);
    KVSCOPE_CUDA(cudaGetLastError());
}

double read_ceiling_gbps(const void* data, std::size_t bytes, unsigned sms, unsigned* sink) {
    EventTimer timer;
    std::vector<double> runs;
    for (int run = 0; run < 6; ++run) {
        timer.start();
        read_pass(data, bytes, sms, sink);
        const double ms = timer.stop_ms();
        if (run > 0) runs.push_back(static_cast<double>(bytes) / (ms * 1e6));
    }
    return step::median_of(std::move(runs));
}

}  // namespace kvscope::probe::cuda
