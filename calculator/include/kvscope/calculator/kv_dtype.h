#pragma once
// Element formats of a KV cache. Sizes are exact: a format stores
// `bits_per_block` bits for every `values_per_block` values (scales included),
// so q8_0 is 34 bytes per 32 values and fp16 is 16 bits per value. No rounded floats.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/tables.h"

namespace kvscope {

enum class KvDtype { fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, q8_0, q4_0, mxfp4, last_ = mxfp4 };
constexpr std::size_t kKvDtypeCount = enum_count<KvDtype>();

struct KvDtypeInfo {
    KvDtype dtype;
    std::string_view id;           // "fp16", "q8_0", … (CLI and JSON spelling)
    std::string_view description;  // one line for help and tooltips
    std::uint64_t bits_per_block;
    std::uint64_t values_per_block;
};

const KvDtypeInfo& info(KvDtype dtype);
std::span<const KvDtypeInfo> all_kv_dtypes();
std::string_view to_string(KvDtype dtype);

// Accepts the ids plus common spellings: float16, half, bfloat16, float32, fp8 (= e4m3), q8, q4.
std::optional<KvDtype> parse_kv_dtype(std::string_view text);
// "fp16, bf16, …" for error messages.
std::string kv_dtype_list();

// Bytes to store one row of `values` elements (blocks and bits rounded up to whole bytes).
Checked row_bytes(KvDtype dtype, std::uint64_t values);

// Bits per element as an exact fraction, e.g. q8_0 -> 272/32; for display: 8.5.
double bits_per_value(KvDtype dtype);

}  // namespace kvscope
