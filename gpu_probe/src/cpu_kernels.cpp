#include "cpu_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kvscope::probe::cpu {

namespace {

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                --exp;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// fp8 e4m3 (OCP FP8, as vLLM and TensorRT-LLM store it): bias 7, no infinities, S.1111.111 is NaN.
float fp8_e4m3_to_float(std::uint8_t b) {
    const float sign = (b & 0x80u) ? -1.0f : 1.0f;
    const int exp = (b >> 3) & 0xf, mant = b & 0x7;
    if (exp == 0xf && mant == 7) return std::numeric_limits<float>::quiet_NaN();
    if (exp == 0) return sign * std::ldexp(static_cast<float>(mant) / 8.0f, -6);
    return sign * std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, exp - 7);
}

// fp8 e5m2 is the top byte of an fp16.
float fp8_e5m2_to_float(std::uint8_t b) { return half_to_float(static_cast<std::uint16_t>(b << 8)); }

// Every fp8 byte's value, one table per format.
const float* fp8_table(KvDtype dtype) {
    static const auto table = [] {
        std::array<std::array<float, 256>, 2> t{};
        for (int i = 0; i < 256; ++i) {
            t[0][i] = fp8_e4m3_to_float(static_cast<std::uint8_t>(i));
            t[1][i] = fp8_e5m2_to_float(static_cast<std::uint8_t>(i));
        }
        return t;
    }();
    return table[dtype == KvDtype::fp8_e4m3 ? 0 : 1].data();
}

// int8: kInt8Scale·q. llama.cpp's blocks (ggml-common.h block_q8_0, block_q4_0): 32 values behind one fp16
// scale d; q8_0 holds 32 int8 (value d·q), q4_0 16 bytes whose low nibbles are values 0…15 and high nibbles
// values 16…31 (value d·(q − 8)). `n` is a multiple of 32 for the blocks.
void to_float_converted(KvDtype dtype, const void* src, float* dst, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(src);
    if (dtype == KvDtype::int8) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = kInt8Scale * static_cast<float>(static_cast<std::int8_t>(b[i]));
        return;
    }
    if (dtype == KvDtype::fp8_e4m3 || dtype == KvDtype::fp8_e5m2) {
        const float* t = fp8_table(dtype);
        for (std::size_t i = 0; i < n; ++i) dst[i] = t[b[i]];
        return;
    }
    const std::size_t block = dtype == KvDtype::q8_0 ? 34 : 18;
    for (std::size_t i = 0; i < n; i += 32, b += block) {
        std::uint16_t dh;
        std::memcpy(&dh, b, 2);
        const float d = half_to_float(dh);
        if (dtype == KvDtype::q8_0) {
            for (std::size_t j = 0; j < 32; ++j)
                dst[i + j] = d * static_cast<float>(static_cast<std::int8_t>(b[2 + j]));
        } else {
            for (std::size_t j = 0; j < 16; ++j) {
                dst[i + j] = d * static_cast<float>((b[2 + j] & 0x0f) - 8);
                dst[i + j + 16] = d * static_cast<float>((b[2 + j] >> 4) - 8);
            }
        }
    }
}

void to_float_plain(KvDtype dtype, const void* src, float* dst, std::size_t n) {
    if (dtype == KvDtype::fp32) {
        std::memcpy(dst, src, n * sizeof(float));
    } else if (dtype == KvDtype::bf16) {
        const auto* s = static_cast<const std::uint16_t*>(src);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t bits = static_cast<std::uint32_t>(s[i]) << 16;
            std::memcpy(&dst[i], &bits, sizeof(float));
        }
    } else {
        const auto* s = static_cast<const std::uint16_t*>(src);
        for (std::size_t i = 0; i < n; ++i) dst[i] = half_to_float(s[i]);
    }
}

std::uint64_t read_pass_plain(const std::uint64_t* data, std::size_t words) {
    std::uint64_t a = 0, b = 0, c = 0, d = 0;
    std::size_t i = 0;
    for (; i + 4 <= words; i += 4) {
        a += data[i];
        b += data[i + 1];
        c += data[i + 2];
        d += data[i + 3];
    }
    for (; i < words; ++i) a += data[i];
    return a + b + c + d;
}

float dot_plain(const float* a, const float* b, std::size_t n) {
    float acc[8] = {};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (std::size_t j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
    float sum = 0;
    for (; i < n; ++i) sum += a[i] * b[i];
    for (float x : acc) sum += x;
    return sum;
}

void axpy_plain(float p, const float* x, float* y, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] += p * x[i];
}

#if defined(__x86_64__)
// exp(x) for 8 lanes: 2^n · p(r) with r = x − n·ln2, |r| ≤ ln2/2 (Cephes' polynomial).
__attribute__((target("avx2,fma"))) __m256 exp8(__m256 x) {
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)), _mm256_set1_ps(-87.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) void exp_sub_accumulate_avx2(float* x, const float* m, float* sum, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(m + i)));
        _mm256_storeu_ps(x + i, e);
        _mm256_storeu_ps(sum + i, _mm256_add_ps(_mm256_loadu_ps(sum + i), e));
    }
    for (; i < n; ++i) sum[i] += (x[i] = std::exp(x[i] - m[i]));
}

// 8 fp8 e4m3 values (the low 8 bytes) as floats, through fp16: a byte's bits moved to fp16's places
// (s eeee mmm → s 0eeee mmm0000000) times 2^8 (the biases' difference, 15 − 7) is exact for every value,
// subnormals too; 0x7F and 0xFF, e4m3's NaN, are blended in. No table gather (slow on many x86 cores).
__attribute__((target("avx2,f16c"))) inline __m256 e4m3_to_floats(__m128i bytes) {
    const __m128i w = _mm_cvtepu8_epi16(bytes);
    const __m128i magnitude = _mm_and_si128(w, _mm_set1_epi16(0x7F));
    const __m128i h =
        _mm_or_si128(_mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8), _mm_slli_epi16(magnitude, 7));
    const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    const __m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpeq_epi16(magnitude, _mm_set1_epi16(0x7F))));
    return _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
}

// 8 stored values at element i, as floats (fp32, fp16, bf16, fp8 e4m3).
__attribute__((target("avx2,f16c"))) inline __m256 load8(KvDtype dtype, const void* base, std::size_t i) {
    if (dtype == KvDtype::fp32) return _mm256_loadu_ps(static_cast<const float*>(base) + i);
    if (dtype == KvDtype::fp8_e4m3)
        return e4m3_to_floats(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const std::uint8_t*>(base) + i)));
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(base) + i));
    if (dtype == KvDtype::fp16) return _mm256_cvtph_ps(raw);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

__attribute__((target("avx2,fma,f16c"))) inline float hsum(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}

__attribute__((target("avx2,fma,f16c"))) void dot_group_raw_avx2(KvDtype dtype, const float* q, std::size_t groups,
                                                                 const void* k, std::size_t n, float* out) {
    for (std::size_t g0 = 0; g0 < groups; g0 += 8) {
        const std::size_t gn = std::min<std::size_t>(8, groups - g0);
        __m256 acc[8];
        for (std::size_t g = 0; g < gn; ++g) acc[g] = _mm256_setzero_ps();
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            const __m256 kv = load8(dtype, k, i);
            for (std::size_t g = 0; g < gn; ++g)
                acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (g0 + g) * n + i), kv, acc[g]);
        }
        float tail[8] = {};
        if (i < n) to_float(dtype, static_cast<const std::byte*>(k) + i * element_bytes(dtype), tail, n - i);
        for (std::size_t g = 0; g < gn; ++g) {
            float sum = hsum(acc[g]);
            for (std::size_t j = i; j < n; ++j) sum += q[(g0 + g) * n + j] * tail[j - i];
            out[g0 + g] = sum;
        }
    }
}

// out[0..3] = the sums of v0..v3's lanes, by one hadd tree (lanes 0-3 of u hold the low-half sums,
// lanes 4-7 the high-half sums).
__attribute__((target("avx2"))) inline void store_sums(__m256 v0, __m256 v1, __m256 v2, __m256 v3, float* out) {
    const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
}

// Four queries × two K rows, format fixed at compile time: eight accumulators that stay in
// registers, summed in one pass (hadd tree) into out0[0..3] and out1[0..3].
template <KvDtype D>
__attribute__((target("avx2,fma,f16c"))) void dot4x2(const float* q, const void* k0, const void* k1, std::size_t n,
                                                     float* out0, float* out1) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (std::size_t i = 0; i < n; i += 8) {
        const __m256 x0 = load8(D, k0, i), x1 = load8(D, k1, i);
        __m256 qv = _mm256_loadu_ps(q + i);
        a0 = _mm256_fmadd_ps(qv, x0, a0);
        b0 = _mm256_fmadd_ps(qv, x1, b0);
        qv = _mm256_loadu_ps(q + n + i);
        a1 = _mm256_fmadd_ps(qv, x0, a1);
        b1 = _mm256_fmadd_ps(qv, x1, b1);
        qv = _mm256_loadu_ps(q + 2 * n + i);
        a2 = _mm256_fmadd_ps(qv, x0, a2);
        b2 = _mm256_fmadd_ps(qv, x1, b2);
        qv = _mm256_loadu_ps(q + 3 * n + i);
        a3 = _mm256_fmadd_ps(qv, x0, a3);
        b3 = _mm256_fmadd_ps(qv, x1, b3);
    }
    store_sums(a0, a1, a2, a3, out0);
    store_sums(b0, b1, b2, b3, out1);
}

__attribute__((target("avx2,fma,f16c"))) void dot_group_raw2_avx2(KvDtype dtype, const float* q, std::size_t groups,
                                                                  const void* k0, const void* k1, std::size_t n,
                                                                  float* out0, float* out1) {
    if (n % 8 != 0) {  // unusual head sizes: one row at a time
        dot_group_raw_avx2(dtype, q, groups, k0, n, out0);
        dot_group_raw_avx2(dtype, q, groups, k1, n, out1);
        return;
    }
    std::size_t g0 = 0;
    for (; g0 + 4 <= groups; g0 += 4) {  // GQA groups of 4 and 8 (most models) take this path only
        const float* qg = q + g0 * n;
        if (dtype == KvDtype::bf16)
            dot4x2<KvDtype::bf16>(qg, k0, k1, n, out0 + g0, out1 + g0);
        else if (dtype == KvDtype::fp16)
            dot4x2<KvDtype::fp16>(qg, k0, k1, n, out0 + g0, out1 + g0);
        else if (dtype == KvDtype::fp8_e4m3)
            dot4x2<KvDtype::fp8_e4m3>(qg, k0, k1, n, out0 + g0, out1 + g0);
        else
            dot4x2<KvDtype::fp32>(qg, k0, k1, n, out0 + g0, out1 + g0);
    }
    for (; g0 < groups; g0 += 4) {
        const std::size_t gn = std::min<std::size_t>(4, groups - g0);
        __m256 a0[4], a1[4];
        for (std::size_t g = 0; g < 4; ++g) a0[g] = a1[g] = _mm256_setzero_ps();
        for (std::size_t i = 0; i < n; i += 8) {
            const __m256 x0 = load8(dtype, k0, i), x1 = load8(dtype, k1, i);
            for (std::size_t g = 0; g < gn; ++g) {
                const __m256 qv = _mm256_loadu_ps(q + (g0 + g) * n + i);
                a0[g] = _mm256_fmadd_ps(qv, x0, a0[g]);
                a1[g] = _mm256_fmadd_ps(qv, x1, a1[g]);
            }
        }
        for (std::size_t g = 0; g < gn; ++g) {
            out0[g0 + g] = hsum(a0[g]);
            out1[g0 + g] = hsum(a1[g]);
        }
    }
}

// Four queries' outputs over 16 values at a time, format fixed at compile time: the eight
// accumulators stay in registers across every token (independent chains hide the FMA latency),
// and each token's four weights are loaded once for both 8-value halves.
template <KvDtype D>
__attribute__((target("avx2,fma,f16c"))) void axpy4x16(const float* p, std::size_t p_stride, const std::byte* base,
                                                       std::size_t row_bytes, std::size_t tokens, float* y,
                                                       std::size_t n, Ahead* ahead) {
    const std::byte* a = ahead ? ahead->next : nullptr;
    const std::byte* const a_end = ahead ? ahead->end : nullptr;
    for (std::size_t i = 0; i + 16 <= n; i += 16) {
        __m256 y0 = _mm256_loadu_ps(y + i), y1 = _mm256_loadu_ps(y + n + i);
        __m256 y2 = _mm256_loadu_ps(y + 2 * n + i), y3 = _mm256_loadu_ps(y + 3 * n + i);
        __m256 z0 = _mm256_loadu_ps(y + i + 8), z1 = _mm256_loadu_ps(y + n + i + 8);
        __m256 z2 = _mm256_loadu_ps(y + 2 * n + i + 8), z3 = _mm256_loadu_ps(y + 3 * n + i + 8);
        for (std::size_t t = 0; t < tokens; ++t) {
            if (a < a_end && (t & 1)) {  // a line per two tokens: a 128-token tile of K over the V pass
                _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T1);
                a += 64;
            }
            const std::byte* row = base + t * row_bytes;
            const __m256 xa = load8(D, row, i), xb = load8(D, row, i + 8);
            const float* pt = p + t * p_stride;
            __m256 w = _mm256_broadcast_ss(pt);
            y0 = _mm256_fmadd_ps(w, xa, y0);
            z0 = _mm256_fmadd_ps(w, xb, z0);
            w = _mm256_broadcast_ss(pt + 1);
            y1 = _mm256_fmadd_ps(w, xa, y1);
            z1 = _mm256_fmadd_ps(w, xb, z1);
            w = _mm256_broadcast_ss(pt + 2);
            y2 = _mm256_fmadd_ps(w, xa, y2);
            z2 = _mm256_fmadd_ps(w, xb, z2);
            w = _mm256_broadcast_ss(pt + 3);
            y3 = _mm256_fmadd_ps(w, xa, y3);
            z3 = _mm256_fmadd_ps(w, xb, z3);
        }
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + n + i, y1);
        _mm256_storeu_ps(y + 2 * n + i, y2);
        _mm256_storeu_ps(y + 3 * n + i, y3);
        _mm256_storeu_ps(y + i + 8, z0);
        _mm256_storeu_ps(y + n + i + 8, z1);
        _mm256_storeu_ps(y + 2 * n + i + 8, z2);
        _mm256_storeu_ps(y + 3 * n + i + 8, z3);
    }
    if (ahead) ahead->next = a;
}

__attribute__((target("avx2,fma,f16c"))) void axpy_tokens_raw_avx2(KvDtype dtype, const float* p, std::size_t p_stride,
                                                                   std::size_t groups, const void* x,
                                                                   std::size_t stride, std::size_t tokens, float* y,
                                                                   std::size_t n, Ahead* ahead) {
    const std::size_t eb = element_bytes(dtype);
    const auto* base = static_cast<const std::byte*>(x);
    if (groups % 4 == 0 && n % 16 == 0) {  // GQA groups of 4 and 8 with the usual head sizes
        for (std::size_t g0 = 0; g0 < groups; g0 += 4) {
            float* yg = y + g0 * n;
            if (dtype == KvDtype::bf16)
                axpy4x16<KvDtype::bf16>(p + g0, p_stride, base, stride * eb, tokens, yg, n, ahead);
            else if (dtype == KvDtype::fp16)
                axpy4x16<KvDtype::fp16>(p + g0, p_stride, base, stride * eb, tokens, yg, n, ahead);
            else
                axpy4x16<KvDtype::fp32>(p + g0, p_stride, base, stride * eb, tokens, yg, n, ahead);
        }
        return;
    }
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::size_t t = 0;
        for (; t + 4 <= tokens; t += 4) {  // four tokens per load/store of the outputs
            const __m256 x0 = load8(dtype, base + (t + 0) * stride * eb, i),
                         x1 = load8(dtype, base + (t + 1) * stride * eb, i);
            const __m256 x2 = load8(dtype, base + (t + 2) * stride * eb, i),
                         x3 = load8(dtype, base + (t + 3) * stride * eb, i);
            for (std::size_t g = 0; g < groups; ++g) {
                float* yg = y + g * n + i;
                __m256 acc = _mm256_loadu_ps(yg);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(p[(t + 0) * p_stride + g]), x0, acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(p[(t + 1) * p_stride + g]), x1, acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(p[(t + 2) * p_stride + g]), x2, acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(p[(t + 3) * p_stride + g]), x3, acc);
                _mm256_storeu_ps(yg, acc);
            }
        }
        for (; t < tokens; ++t) {
            const __m256 xv = load8(dtype, base + t * stride * eb, i);
            for (std::size_t g = 0; g < groups; ++g) {
                float* yg = y + g * n + i;
                _mm256_storeu_ps(yg, _mm256_fmadd_ps(_mm256_set1_ps(p[t * p_stride + g]), xv, _mm256_loadu_ps(yg)));
            }
        }
    }
    if (i < n) {
        float tail[8];
        for (std::size_t t = 0; t < tokens; ++t) {
            to_float_plain(dtype, base + (t * stride + i) * eb, tail, n - i);
            for (std::size_t g = 0; g < groups; ++g)
                for (std::size_t j = i; j < n; ++j) y[g * n + j] += p[t * p_stride + g] * tail[j - i];
        }
    }
}

__attribute__((target("avx2,f16c"))) void to_float_avx2(KvDtype dtype, const void* src, float* dst, std::size_t n) {
    std::size_t i = 0;
    if (dtype == KvDtype::fp16) {
        const auto* s = static_cast<const std::uint16_t*>(src);
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
        for (; i < n; ++i) dst[i] = half_to_float(s[i]);
    } else if (dtype == KvDtype::bf16) {
        const auto* s = static_cast<const std::uint16_t*>(src);
        for (; i + 8 <= n; i += 8) {
            const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
        }
        to_float_plain(dtype, s + i, dst + i, n - i);
    } else {
        to_float_plain(dtype, src, dst, n);
    }
}

// to_float_converted, eight values at a time: fp8 e5m2 widened to fp16, e4m3 gathered from its table, int8
// and the blocks' integers widened and scaled.
__attribute__((target("avx2,f16c"))) void to_float_converted_avx2(KvDtype dtype, const void* src, float* dst,
                                                                  std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(src);
    if (dtype == KvDtype::int8) {
        const __m256 scale = _mm256_set1_ps(kInt8Scale);
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i));
            _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), scale));
        }
        for (; i < n; ++i) dst[i] = kInt8Scale * static_cast<float>(static_cast<std::int8_t>(b[i]));
        return;
    }
    if (dtype == KvDtype::fp8_e4m3 || dtype == KvDtype::fp8_e5m2) {
        const float* table = fp8_table(dtype);
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i));
            const __m256 v = dtype == KvDtype::fp8_e5m2 ? _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(bytes), 8))
                                                        : e4m3_to_floats(bytes);
            _mm256_storeu_ps(dst + i, v);
        }
        for (; i < n; ++i) dst[i] = table[b[i]];
        return;
    }
    const bool q8 = dtype == KvDtype::q8_0;
    for (std::size_t i = 0; i < n; i += 32, b += q8 ? 34 : 18) {
        std::uint16_t dh;
        std::memcpy(&dh, b, 2);
        const __m256 d = _mm256_set1_ps(half_to_float(dh));
        if (q8) {
            for (std::size_t k = 0; k < 4; ++k) {
                const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + 8 * k));
                _mm256_storeu_ps(dst + i + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
            }
        } else {
            const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
            const __m128i mask = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
            const __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, mask), eight);                     // values 0…15
            const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), eight);  // 16…31
            const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
            for (std::size_t k = 0; k < 4; ++k)
                _mm256_storeu_ps(dst + i + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[k])), d));
        }
    }
}

__attribute__((target("avx2"))) std::uint64_t read_pass_avx2(const std::uint64_t* data, std::size_t words) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    std::size_t i = 0;
    for (; i + 16 <= words; i += 16) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i)));
        b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 4)));
        c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 8)));
        d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 12)));
    }
    alignas(32) std::uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + read_pass_plain(data + i, words - i);
}

__attribute__((target("avx512vl,avx512bf16,avx2,fma"))) inline __m256bh row(const std::uint16_t* p) {
    return (__m256bh)_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Four bf16 queries × two bf16 K rows, sixteen values per step (vdpbf16ps: two products per lane).
__attribute__((target("avx512vl,avx512bf16,avx2,fma"))) void dot4x2_bf16(const std::uint16_t* q,
                                                                         const std::uint16_t* k0,
                                                                         const std::uint16_t* k1, std::size_t n,
                                                                         float* out0, float* out1) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (std::size_t i = 0; i < n; i += 16) {
        const __m256bh x0 = row(k0 + i), x1 = row(k1 + i);
        __m256bh qv = row(q + i);
        a0 = _mm256_dpbf16_ps(a0, qv, x0);
        b0 = _mm256_dpbf16_ps(b0, qv, x1);
        qv = row(q + n + i);
        a1 = _mm256_dpbf16_ps(a1, qv, x0);
        b1 = _mm256_dpbf16_ps(b1, qv, x1);
        qv = row(q + 2 * n + i);
        a2 = _mm256_dpbf16_ps(a2, qv, x0);
        b2 = _mm256_dpbf16_ps(b2, qv, x1);
        qv = row(q + 3 * n + i);
        a3 = _mm256_dpbf16_ps(a3, qv, x0);
        b3 = _mm256_dpbf16_ps(b3, qv, x1);
    }
    store_sums(a0, a1, a2, a3, out0);
    store_sums(b0, b1, b2, b3, out1);
}

bool has_bf16_dot_cpu() {
    static const bool yes = __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    return yes;
}

bool has_avx2_f16c() {
    // AVX2 through the compiler (it also checks that the OS saves the wide registers);
    // F16C and FMA from CPUID leaf 1 (not every compiler's builtin knows their names).
    static const bool yes = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!__builtin_cpu_supports("avx2") || !__get_cpuid(1, &a, &b, &c, &d)) return false;
        return (c & bit_F16C) != 0 && (c & bit_FMA) != 0;
    }();
    return yes;
}
#else
bool has_avx2_f16c() { return false; }
bool has_bf16_dot_cpu() { return false; }
#endif

}  // namespace

std::size_t element_bytes(KvDtype dtype) {
    // Every format named, so that a new one is a compile error here (-Werror=switch), not a silent 2 bytes. The block
    // formats are converted to fp16 a tile at a time: their elements, once converted, are 2 bytes; int4 and mxfp4 are
    // not stored by the probe (stores() refuses them first) and take the size of that conversion too.
    switch (dtype) {
        case KvDtype::fp32:
            return 4;
        case KvDtype::fp8_e4m3:
        case KvDtype::fp8_e5m2:
        case KvDtype::int8:
            return 1;
        case KvDtype::fp16:
        case KvDtype::bf16:
        case KvDtype::q8_0:
        case KvDtype::q4_0:
        case KvDtype::int4:
        case KvDtype::mxfp4:
            return 2;
    }
    return 2;  // not reached: every member is a case above
}

bool direct(KvDtype dtype) { return dtype == KvDtype::fp32 || dtype == KvDtype::fp16 || dtype == KvDtype::bf16; }
bool stores(KvDtype dtype) {
    return direct(dtype) || dtype == KvDtype::fp8_e4m3 || dtype == KvDtype::fp8_e5m2 || dtype == KvDtype::int8 ||
           dtype == KvDtype::q8_0 || dtype == KvDtype::q4_0;
}
std::uint64_t row_size(KvDtype dtype, std::uint64_t values) { return row_bytes(dtype, values).value(); }
std::uint64_t values_in(KvDtype dtype, std::uint64_t bytes) {
    const KvDtypeInfo& i = info(dtype);
    return bytes * 8 / i.bits_per_block * i.values_per_block;
}

bool vectorized() { return has_avx2_f16c(); }

void to_float(KvDtype dtype, const void* src, float* dst, std::size_t n) {
    if (!direct(dtype)) {
#if defined(__x86_64__)
        if (has_avx2_f16c()) return to_float_converted_avx2(dtype, src, dst, n);
#endif
        return to_float_converted(dtype, src, dst, n);
    }
#if defined(__x86_64__)
    if (has_avx2_f16c()) return to_float_avx2(dtype, src, dst, n);
#endif
    to_float_plain(dtype, src, dst, n);
}

void exp_sub_accumulate(float* x, const float* m, float* sum, std::size_t n) {
#if defined(__x86_64__)
    if (has_avx2_f16c()) return exp_sub_accumulate_avx2(x, m, sum, n);
#endif
    for (std::size_t i = 0; i < n; ++i) sum[i] += (x[i] = std::exp(x[i] - m[i]));
}

void dot_group_raw(KvDtype dtype, const float* q, std::size_t groups, const void* k, std::size_t n, float* out) {
#if defined(__x86_64__)
    if (has_avx2_f16c()) return dot_group_raw_avx2(dtype, q, groups, k, n, out);
#endif
    std::vector<float> row(n);
    to_float(dtype, k, row.data(), n);
    for (std::size_t g = 0; g < groups; ++g) out[g] = dot_plain(q + g * n, row.data(), n);
}

void dot_group_raw2(KvDtype dtype, const float* q, std::size_t groups, const void* k0, const void* k1, std::size_t n,
                    float* out0, float* out1) {
#if defined(__x86_64__)
    if (has_avx2_f16c()) return dot_group_raw2_avx2(dtype, q, groups, k0, k1, n, out0, out1);
#endif
    dot_group_raw(dtype, q, groups, k0, n, out0);
    dot_group_raw(dtype, q, groups, k1, n, out1);
}

void axpy_tokens_raw(KvDtype dtype, const float* p, std::size_t p_stride, std::size_t groups, const void* x,
                     std::size_t stride, std::size_t tokens, float* y, std::size_t n, Ahead* ahead) {
#if defined(__x86_64__)
    if (has_avx2_f16c()) return axpy_tokens_raw_avx2(dtype, p, p_stride, groups, x, stride, tokens, y, n, ahead);
#endif
    (void)ahead;
    std::vector<float> row(n);
    const std::size_t eb = element_bytes(dtype);
    for (std::size_t t = 0; t < tokens; ++t) {
        to_float_plain(dtype, static_cast<const std::byte*>(x) + t * stride * eb, row.data(), n);
        for (std::size_t g = 0; g < groups; ++g) axpy_plain(p[t * p_stride + g], row.data(), y + g * n, n);
    }
}

bool has_bf16_dot() { return has_avx2_f16c() && has_bf16_dot_cpu(); }

void prefetch(const std::byte* p, std::size_t bytes, CacheLevel level) {
    // On x86-64 as asm statements: a loop of __builtin_prefetch has no effects the compiler must
    // keep, and GCC 12 deletes it at -O2.
    for (std::size_t b = 0; b < bytes; b += 64) {
#if defined(__x86_64__)
        if (level == CacheLevel::l1)
            asm volatile("prefetcht0 %0" : : "m"(*reinterpret_cast<const char*>(p + b)));
        else
            asm volatile("prefetcht1 %0" : : "m"(*reinterpret_cast<const char*>(p + b)));
#else
        if (level == CacheLevel::l1)
            __builtin_prefetch(p + b, 0, 3);
        else
            __builtin_prefetch(p + b, 0, 2);
#endif
    }
}

void dot_group_bf16x2(const std::uint16_t* q, std::size_t groups, const std::uint16_t* k0, const std::uint16_t* k1,
                      std::size_t n, float* out0, float* out1) {
#if defined(__x86_64__)
    for (std::size_t g0 = 0; g0 < groups; g0 += 4) dot4x2_bf16(q + g0 * n, k0, k1, n, out0 + g0, out1 + g0);
#else
    (void)q, (void)groups, (void)k0, (void)k1, (void)n, (void)out0, (void)out1;
#endif
}

std::uint64_t read_pass(const std::uint64_t* data, std::size_t words) {
#if defined(__x86_64__)
    if (has_avx2_f16c()) return read_pass_avx2(data, words);
#endif
    return read_pass_plain(data, words);
}

}  // namespace kvscope::probe::cpu
