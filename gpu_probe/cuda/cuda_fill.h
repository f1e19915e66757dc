#pragma once
// Random device data and read passes, shared by the probe (cuda_backend.cu) and the decode step
// (cuda_step.cu). Host interface; the kernels live in cuda_fill.cu. Launches are checked.

#include <cstddef>
#include <cstdint>

namespace kvscope::probe::cuda {

// `n` values of `dtype` (kFp32, kFp16, kBf16, kFp8E4m3, kFp8E5m2) of magnitude 1/8 … 1 with random signs: never zeros.
// For int8 and llama.cpp's blocks (kQ8_0, kQ4_0; n a multiple of 32), values within ±1, none of them 0.
void fill_random(void* data, std::size_t n, int dtype, std::uint64_t seed);
// One read-only pass over `bytes` (a multiple of 16) with `sms` × 8 blocks of 256 threads.
void read_pass(const void* data, std::size_t bytes, unsigned sms, unsigned* sink);
// The device's read bandwidth in GB/s: the median of five timed passes over `bytes` after one untimed.
double read_ceiling_gbps(const void* data, std::size_t bytes, unsigned sms, unsigned* sink);

}  // namespace kvscope::probe::cuda
