#pragma once
// The CPU backend's writers of the stored formats (cpu_formats.cpp): rounding floats into each format, and the
// random values the probes fill caches and weights with. Their readers are cpu_kernels.h's to_float.

#include <cstddef>
#include <cstdint>

#include "kvscope/calculator/kv_dtype.h"

namespace kvscope::probe::cpu {

// The nearest fp16, ties to even.
std::uint16_t float_to_half(float f);

// src written in a stored format: the nearest value (fp8 and int8 saturating at their largest), llama.cpp's
// rounding for q8_0 and q4_0 (n a multiple of 32).
void from_float(KvDtype dtype, const float* src, void* dst, std::size_t n);

// Random finite values of magnitude 1/8 … 1 with random signs (int8 and block formats: within ±1, never 0), written
// in place (touches every page). `elements` counts values.
void fill_random(KvDtype dtype, void* data, std::size_t elements, std::uint64_t seed);

}  // namespace kvscope::probe::cpu
