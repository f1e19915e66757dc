#pragma once
// Words and tables made from calculator results, shared by the app and the CLI:
// the formula with a scenario's numbers put in, and the curves as CSV.

#include <cstdint>
#include <optional>
#include <string>

#include "kvscope/calculator/curves.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

// "2 (K and V) × 32 layers × 8 KV heads × 128 head dim × 2 bytes (fp16) × 8,192 tokens
//  × 1 sequence = 1,073,741,824 bytes = 1.00 GiB". Sliding-window layers, MLA latents,
// tensor-parallel replicas and block rounding each appear as their own factor.
// The total printed is the report's, so the text can never disagree with the numbers.
Result<std::string> kv_formula_text(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                    const Parallelism& parallel, UnitSystem units = UnitSystem::binary);
// (derive_kv_bytes in derivation.h gives the same factor by factor.)

// "tokens,MHA bytes,GQA-8 bytes,MQA bytes" then one row per token count: each layout's exact bytes, KV cache and
// recurrent state of every sequence on every GPU (the JSON's memory_bytes), under the JSON's series names.
std::string curves_csv(const Curves& curves);

}  // namespace kvscope
