#include "kvscope/calculator/kv_dtype.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "kvscope/calculator/tables.h"

namespace kvscope {
namespace {

constexpr std::array<KvDtypeInfo, kKvDtypeCount> kInfos{{
    {KvDtype::fp32, "fp32", "32-bit float", 32, 1},
    {KvDtype::fp16, "fp16", "16-bit IEEE half float", 16, 1},
    {KvDtype::bf16, "bf16", "16-bit bfloat", 16, 1},
    {KvDtype::fp8_e4m3, "fp8_e4m3", "8-bit float, 4 exponent / 3 mantissa bits", 8, 1},
    {KvDtype::fp8_e5m2, "fp8_e5m2", "8-bit float, 5 exponent / 2 mantissa bits", 8, 1},
    {KvDtype::int8, "int8", "8-bit integer", 8, 1},
    {KvDtype::int4, "int4", "4-bit integer, two per byte", 4, 1},
    {KvDtype::q8_0, "q8_0", "llama.cpp blocks: 32 int8 values + fp16 scale = 34 bytes", 34 * 8, 32},
    {KvDtype::q4_0, "q4_0", "llama.cpp blocks: 32 4-bit values + fp16 scale = 18 bytes", 18 * 8, 32},
    {KvDtype::mxfp4, "mxfp4", "OCP microscaling: 32 fp4 values + 8-bit scale = 17 bytes", 17 * 8, 32},
}};

static_assert(lists_in_order(kInfos, [](const KvDtypeInfo& i) { return i.dtype; }),
              "kInfos: one entry per KvDtype, in order");

}  // namespace

const KvDtypeInfo& info(KvDtype dtype) { return kInfos.at(static_cast<std::size_t>(dtype)); }
std::span<const KvDtypeInfo> all_kv_dtypes() { return kInfos; }
std::string_view to_string(KvDtype dtype) { return info(dtype).id; }

std::optional<KvDtype> parse_kv_dtype(std::string_view text) {
    const std::string t = ascii_lower(text);
    for (const auto& i : kInfos)
        if (t == i.id) return i.dtype;
    struct Alias {
        std::string_view name;
        KvDtype dtype;
    };
    static constexpr Alias kAliases[] = {
        {"float32", KvDtype::fp32},      {"float", KvDtype::fp32},    {"f32", KvDtype::fp32},
        {"float16", KvDtype::fp16},      {"half", KvDtype::fp16},     {"f16", KvDtype::fp16},
        {"bfloat16", KvDtype::bf16},     {"fp8", KvDtype::fp8_e4m3},  {"e4m3", KvDtype::fp8_e4m3},
        {"fp8-e4m3", KvDtype::fp8_e4m3}, {"e5m2", KvDtype::fp8_e5m2}, {"fp8-e5m2", KvDtype::fp8_e5m2},
        {"q8", KvDtype::q8_0},           {"q4", KvDtype::q4_0},       {"i8", KvDtype::int8},
        {"i4", KvDtype::int4},
    };
    for (const auto& a : kAliases)
        if (t == a.name) return a.dtype;
    return std::nullopt;
}

std::string kv_dtype_list() {
    std::string out;
    for (const auto& i : kInfos) {
        if (!out.empty()) out += ", ";
        out += i.id;
    }
    return out;
}

Checked row_bytes(KvDtype dtype, std::uint64_t values) {
    const auto& i = info(dtype);
    const Checked bits = Checked(ceil_div(values, i.values_per_block)) * i.bits_per_block;
    if (bits.overflow()) return bits;
    return Checked(ceil_div(bits.value(), 8));
}

double bits_per_value(KvDtype dtype) {
    const auto& i = info(dtype);
    return static_cast<double>(i.bits_per_block) / static_cast<double>(i.values_per_block);
}

}  // namespace kvscope
