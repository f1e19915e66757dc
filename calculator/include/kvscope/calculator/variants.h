#pragma once
// The same model as MHA, GQA, MQA (and MLA where it has it): what the head layout costs.

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// Which line of the comparison a variant is: views keep one place per kind (a chart series, a colour), so a
// variant's place never depends on its name. `own`: the model's layout when none of the uniform ones is (a
// model whose layers have heads of their own, or whose layers do not attend).
// allocated: no layout of its own, the curves' series of what the deployment's engine allocates (allocated_curve).
// on_gpu, on_host: a model llama.cpp splits, its cache where it lives (split_curves).
enum class VariantKind : std::uint8_t {
    mha,
    gqa,
    mqa,
    mla,
    own,
    all_full,
    allocated,
    on_gpu,
    on_host,
    last_ = on_host
};
constexpr std::size_t kVariantKindCount = enum_count<VariantKind>();

struct Variant {
    std::string name;  // "MHA", "GQA-8", "MQA", "MLA"
    VariantKind series = VariantKind::mha;
    AttentionKind kind = AttentionKind::MHA;
    std::uint64_t kv_heads = 0;  // MLA: 1 (one shared latent)
    std::uint64_t kv_cache_bytes = 0;
    std::uint64_t bytes_per_token = 0;
    // The recurrent state beside the KV cache (all sequences, all GPUs): the same for every head layout of a
    // hybrid model, 0 for "all full attention". The percentages compare the KV cache alone.
    std::uint64_t state_bytes = 0;
    double percent_of_mha = 0;
    bool is_model = false;  // the model's own layout
    // GPUs that keep a copy of each KV head: tensor parallel beyond the KV heads replicates them
    // (vLLM, SGLang), and every copy counts in the bytes above.
    std::uint64_t replication = 1;
};

// "replicated on 2 GPUs" when each KV head is kept on more than one GPU, else empty: said beside
// every figure that replication changes (table, chart, report, CLI).
std::string replication_text(std::uint64_t replication);

// The architecture with `kv_heads` KV heads (MLA removed; MHA head dims taken from MLA's).
Architecture with_kv_heads(const Architecture& arch, std::uint64_t kv_heads);

// The KV head counts that are valid with `arch`'s query heads (its divisors), MHA first, MQA last;
// empty when the query heads are 0 or beyond what the calculator accepts.
std::vector<std::uint64_t> kv_head_choices(const Architecture& arch);

// The GQA group count shown for a model: its own when it is GQA, else 8 when 8
// divides the query heads, else the largest divisor below 8; 0 when none exists.
std::uint64_t comparison_gqa_heads(const Architecture& arch);

// A head layout to compare: its name, kind and the architecture that has it.
struct VariantShape {
    std::string name;
    VariantKind series = VariantKind::mha;
    AttentionKind kind = AttentionKind::MHA;
    Architecture arch;
    bool is_model = false;  // the model's own layout (arch equals the model's)
};

// A shape left out of the comparison or the chart because its cache would pass 2^64 bytes: its name, and which
// line it is (so that a report can say what follows from MHA's being left out without matching its name).
struct LeftOutVariant {
    std::string name;
    VariantKind series = VariantKind::mha;
    friend bool operator==(const LeftOutVariant&, const LeftOutVariant&) = default;
};

// MHA, GQA (see above), MQA, then MLA where the model has it, then "all full attention" for a model
// with layers of other kinds (the head variants apply to its attention layers only). A model none of
// whose layers attends has just itself ("no attention").
std::vector<VariantShape> variant_shapes(const Architecture& arch);

// Each shape's cache for this workload; shapes the parallel layout cannot express are left out, and so are those
// whose cache passes 2^64 bytes: each of these is named in `too_large` (when given), and the percentages of MHA
// still compare with MHA's size, taken in long double when it is one of them.
Result<std::vector<Variant>> compare_variants(const Architecture& arch, KvDtype dtype, const Workload& workload,
                                              const Parallelism& parallel = {},
                                              std::vector<LeftOutVariant>* too_large = nullptr);

}  // namespace kvscope
