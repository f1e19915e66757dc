#pragma once
// The KV formula for one scenario, factor by factor: what the Learn tab shows and
// kv_formula_text prints. Every factor names the input it comes from, and the product
// of the factors is the report's byte count (checked exactly, or an error).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/units.h"

namespace kvscope {

struct Factor {
    std::uint64_t value = 1;    // the factor is value / divisor
    std::uint64_t divisor = 1;  // > 1 only for bytes per element of sub-byte and block formats
    std::string text;           // "32 layers", "2 bytes (fp16)"
    Field field = Field::none;  // the input it comes from; none for a constant
    std::string note;           // why it has this value, one sentence
};

// Layers that store the same number of tokens (sliding-window layers store fewer).
struct LayerGroup {
    Factor layers;
    Factor tokens;
    std::uint64_t window = 0;  // the honoured window; 0 = the full context
};

struct KvDerivation {
    std::string form;                // "GQA-8", "MLA", "Gemma-style sliding window + GQA-8", …
    std::optional<Factor> kv_pair;   // "2 (K and V)" when K and V rows have the same size
    std::vector<LayerGroup> groups;  // Σ layers × tokens
    std::vector<Factor> row;         // one token of one layer, every GPU: heads, head dim, bytes per element
    std::vector<Factor> tail;        // sequences, tensor-parallel copies
    std::uint64_t row_bytes = 0;     // product of kv_pair and row: bytes per token per layer, all GPUs
    std::uint64_t total_bytes = 0;   // the product of everything; equals kv_cache_report's total
};

Result<KvDerivation> derive_kv_bytes(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                     const Parallelism& parallel);
// The same from a layout and report already made of these inputs.
Result<KvDerivation> derive_kv_bytes(const KvLayout& layout, const Architecture& arch, KvDtype dtype,
                                     const Workload& workload, const KvCacheReport& report);

// The derivation's product, recomputed from its factors alone (what a reader multiplying
// the shown numbers gets); none when it does not fit 64 bits or is not a whole number.
std::optional<std::uint64_t> product_of_factors(const KvDerivation& d);

// The derivation as one line: "2 (K and V) × 32 layers × 8 KV heads × 128 head dim × 2 bytes (fp16)
// × 8,192 tokens × 1 sequence = 1,073,741,824 bytes = 1.00 GiB".
std::string derivation_text(const KvDerivation& d, UnitSystem units = UnitSystem::binary);

// The recurrent state as one line: "36 layers × (conv 3 × 8,192 values × 2 bytes (bf16) + SSM 32 × 128 × 128
// values × 2 bytes (bf16)) × 8 sequences = 316,162,048 bytes = 302 MiB"; empty for a model without one.
std::string state_derivation_text(const Architecture& arch, const Parallelism& parallel, std::uint64_t sequences,
                                  UnitSystem units = UnitSystem::binary);

// "2 bytes (fp16)" or "1.0625 bytes (q8_0, 34 bytes per 32 values)".
std::string element_size_text(KvDtype dtype);

}  // namespace kvscope
