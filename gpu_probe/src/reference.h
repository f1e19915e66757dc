#pragma once
// Float64 decode attention for one layer of one sequence: the check every backend's
// result is compared with. K and V rows are token-major ([token][head][dim]).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvscope/calculator/kv_dtype.h"

namespace kvscope::probe {

struct AttentionShape {
    std::uint64_t q_heads, kv_heads, dk, dv, row_k, row_v;  // row_*: values per token (all heads)
    // Values from one KV head's V to the next; 0: row_v / kv_heads. Set when a shape covers some of a row's
    // heads (the decode step splits a sequence's heads across threads).
    std::uint64_t v_head_stride = 0;
    [[nodiscard]] std::uint64_t v_stride() const { return v_head_stride ? v_head_stride : row_v / kv_heads; }
};

// `q` holds q_heads × dk floats; the result q_heads × dv.
std::vector<double> attention_reference(const void* k, const void* v, std::uint64_t tokens, const AttentionShape& shape,
                                        KvDtype dtype, const float* q);

// max |a − r| / max |r| over the outputs.
double max_relative_error(const float* a, const std::vector<double>& reference);

}  // namespace kvscope::probe
