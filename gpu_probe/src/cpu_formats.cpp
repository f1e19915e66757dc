// Writing values in the formats the CPU probe stores: fp16, bf16 and fp8 to the nearest value (ties to even),
// llama.cpp's q8_0 and q4_0 with its reference rounding; and filling a buffer in any of them at random.
// (Reading them is cpu_kernels.cpp's to_float.)
#include "cpu_formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu_kernels.h"

namespace kvscope::probe::cpu {

std::uint16_t float_to_half(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffffu;
    if (exp == 0xff) return sign | 0x7c00u | (mant ? 0x200u : 0u);  // inf, nan
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 31) return sign | 0x7c00u;  // too large: inf
    if (e <= 0) {                        // subnormal or zero, rounded to nearest even
        if (e < -10) return sign;
        const std::uint32_t m = mant | 0x800000u;
        const int shift = 14 - e;
        std::uint32_t h = m >> shift;
        const std::uint32_t rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (h & 1u))) ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right too
    return static_cast<std::uint16_t>(sign | h);
}

namespace {

// The nearest fp8 value with `mant` mantissa bits and exponent bias `bias`, ties to even, saturating at the
// largest finite value `max` (NaN to the format's NaN, 0x7F): what vLLM's CUDA writers do
// (__nv_cvt_float_to_fp8(x, __NV_SATFINITE, …) in csrc/quantization/fp8/nvidia/quant_utils.cuh), and so what the
// CUDA step writes. Rounded from the float directly: e5m2 through fp16 would round twice.
std::uint8_t float_to_fp8(float x, int mant, int bias, float max) {
    const std::uint8_t sign = std::signbit(x) ? 0x80 : 0;
    if (std::isnan(x)) return 0x7F;  // the canonical NaN, whatever the sign (as cuda_fp8.hpp writes it)
    const float a = std::min(std::fabs(x), max);
    const int steps = 1 << mant;
    if (a < std::ldexp(1.0f, 1 - bias)) {  // subnormal (and 0): multiples of 2^(1 − bias − mant); the largest
        // rounds up into the smallest normal, whose code is `steps`
        const auto m = static_cast<int>(std::nearbyint(std::ldexp(a, bias - 1 + mant)));
        return static_cast<std::uint8_t>(sign | m);
    }
    int e = 0;
    const float f = std::frexp(a, &e);  // a = f · 2^e, f in [0.5, 1); (2f − 1) · steps is exact
    auto m = static_cast<int>(std::nearbyint((f * 2.0f - 1.0f) * static_cast<float>(steps)));
    int exp = e - 1 + bias;
    if (m == steps) {
        m = 0;
        ++exp;
    }
    return static_cast<std::uint8_t>(sign | (exp << mant) | m);  // a ≤ max: never past the largest finite code
}

std::uint64_t next(std::uint64_t& s) {  // xorshift64*
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
}

}  // namespace

void to_bf16(const float* src, std::uint16_t* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, src + i, sizeof bits);
        if (std::isnan(src[i])) {  // a quiet NaN: rounding a NaN's low bits away would make it inf
            dst[i] = static_cast<std::uint16_t>((bits >> 16) | 0x40u);
            continue;
        }
        bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
        dst[i] = static_cast<std::uint16_t>(bits >> 16);
    }
}

void from_float(KvDtype dtype, const float* src, void* dst, std::size_t n) {
    auto* b = static_cast<std::uint8_t*>(dst);
    switch (dtype) {
        case KvDtype::fp32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case KvDtype::bf16:
            to_bf16(src, static_cast<std::uint16_t*>(dst), n);
            return;
        case KvDtype::fp16:
            for (std::size_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(dst)[i] = float_to_half(src[i]);
            return;
        case KvDtype::fp8_e4m3:
            for (std::size_t i = 0; i < n; ++i) b[i] = float_to_fp8(src[i], 3, 7, 448.0f);
            return;
        case KvDtype::fp8_e5m2:
            for (std::size_t i = 0; i < n; ++i) b[i] = float_to_fp8(src[i], 2, 15, 57344.0f);
            return;
        case KvDtype::int8:
            // The nearest step of kInt8Scale, ties to even, saturating at −128 and 127, NaN to 0: TensorRT-LLM's
            // float-to-int8 cast (cuda_cast<int8_t, float> in tensorrt_llm/common/cudaTypeUtils.cuh,
            // cvt.rni.sat.s8.f32). Clamped as a float first, so that no value overflows the conversion.
            for (std::size_t i = 0; i < n; ++i) {
                const float steps = src[i] / kInt8Scale;
                const float q = std::isnan(steps) ? 0.0f : std::nearbyint(std::clamp(steps, -128.0f, 127.0f));
                b[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
            }
            return;
        case KvDtype::q8_0:  // ggml-quants.c quantize_row_q8_0_ref
            for (std::size_t i = 0; i < n; i += 32, b += 34) {
                float amax = 0;
                for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[i + j]));
                const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
                const std::uint16_t dh = float_to_half(d);
                std::memcpy(b, &dh, 2);
                for (std::size_t j = 0; j < 32; ++j) {  // NaN (which ggml leaves undefined) to 0, as the GPU writes it
                    const float x = src[i + j] * id;
                    b[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::isnan(x) ? 0 : std::lround(x)));
                }
            }
            return;
        case KvDtype::q4_0:  // ggml-quants.c quantize_row_q4_0_ref
            for (std::size_t i = 0; i < n; i += 32, b += 18) {
                float amax = 0, max = 0;
                for (std::size_t j = 0; j < 32; ++j)
                    if (std::fabs(src[i + j]) > amax) {
                        amax = std::fabs(src[i + j]);
                        max = src[i + j];
                    }
                const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
                const std::uint16_t dh = float_to_half(d);
                std::memcpy(b, &dh, 2);
                // NaN (which ggml leaves undefined) to the value 0, code 8, as the GPU writes it.
                const auto nibble = [id](float v) {
                    const float x = v * id + 8.5f;
                    return std::isnan(x) ? 8 : std::min(15, static_cast<int>(x));
                };
                for (std::size_t j = 0; j < 16; ++j) {
                    const int q0 = nibble(src[i + j]), q1 = nibble(src[i + j + 16]);
                    b[2 + j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
                }
            }
            return;
        case KvDtype::int4:
        case KvDtype::mxfp4:
            return;  // not a stored format: stores() says so first
    }
}

void fill_random(KvDtype dtype, void* data, std::size_t elements, std::uint64_t seed) {
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    auto* bytes = static_cast<std::uint8_t*>(data);
    if (dtype == KvDtype::fp8_e4m3 || dtype == KvDtype::fp8_e5m2) {
        // sign, the exponent of 1/8 … <1, random mantissa bits: never zero, never NaN
        for (std::size_t i = 0; i < elements; ++i) {
            const std::uint64_t r = next(s);
            bytes[i] = dtype == KvDtype::fp8_e4m3
                           ? static_cast<std::uint8_t>(((r >> 63) << 7) | ((4 + r % 3) << 3) | ((r >> 8) & 0x7))
                           : static_cast<std::uint8_t>(((r >> 63) << 7) | ((12 + r % 3) << 2) | ((r >> 8) & 0x3));
        }
        return;
    }
    if (dtype == KvDtype::int8) {  // ±1 … 127 steps of kInt8Scale: within ±1, never 0
        for (std::size_t i = 0; i < elements; ++i) {
            const std::uint64_t r = next(s);
            const auto q = static_cast<int>(1 + r % 127);
            bytes[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>((r >> 40) & 1 ? -q : q));
        }
        return;
    }
    if (dtype == KvDtype::q8_0 || dtype == KvDtype::q4_0) {
        // A block's scale puts its values within ±1; no quantised value is 0.
        const bool q8 = dtype == KvDtype::q8_0;
        const std::uint16_t d = float_to_half(q8 ? 1.0f / 127.0f : 1.0f / 8.0f);
        for (std::size_t i = 0; i < elements; i += 32, bytes += q8 ? 34 : 18) {
            std::memcpy(bytes, &d, 2);
            for (std::size_t j = 0; j < (q8 ? 32u : 16u); ++j) {
                const std::uint64_t r = next(s);
                if (q8) {
                    const auto q = static_cast<int>(1 + r % 127);
                    bytes[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>((r >> 40) & 1 ? -q : q));
                } else {
                    auto nibble = [](std::uint64_t x) {
                        return static_cast<std::uint8_t>(x % 15 >= 8 ? x % 15 + 1 : x % 15);
                    };
                    bytes[2 + j] = static_cast<std::uint8_t>(nibble(r) | (nibble(r >> 20) << 4));
                }
            }
        }
        return;
    }
    if (dtype == KvDtype::fp32) {
        auto* f = static_cast<float*>(data);
        for (std::size_t i = 0; i < elements; ++i) {
            const std::uint64_t r = next(s);
            // sign, exponent 124…126 (1/8 … <1), 23 random mantissa bits
            const std::uint32_t bits =
                static_cast<std::uint32_t>(((r >> 63) << 31) | ((124 + r % 3) << 23) | ((r >> 8) & 0x7fffff));
            std::memcpy(&f[i], &bits, sizeof(float));
        }
        return;
    }
    auto* h = static_cast<std::uint16_t*>(data);
    for (std::size_t i = 0; i < elements; i += 4) {
        const std::uint64_t r = next(s);
        for (std::size_t j = 0; j < 4 && i + j < elements; ++j) {
            const std::uint64_t part = r >> (16 * j);
            const auto sign = static_cast<std::uint16_t>((part & 1) << 15);
            const std::uint16_t value =
                dtype == KvDtype::bf16
                    ? static_cast<std::uint16_t>(((124 + (part >> 1) % 3) << 7) | ((part >> 3) & 0x7f))
                    : static_cast<std::uint16_t>(((12 + (part >> 1) % 3) << 10) | ((part >> 3) & 0x3ff));
            h[i + j] = sign | value;
        }
    }
}

}  // namespace kvscope::probe::cpu
