#pragma once
// "How many GPUs do I need?": every tensor × pipeline parallel layout of one GPU type that the
// model's heads allow, each with its fit, and the replicas (data parallel) that serve the
// workload's sequences. GPUs = TP × PP × replicas.

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/result.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

struct PlanLimits {
    // Tensor parallel stays within a node (NVLink); 8 GPUs is an HGX/DGX node.
    std::uint64_t gpus_per_node = 8;
    // Pipeline stages span nodes: at most this many.
    std::uint64_t max_pp = 8;
};

struct PlanOption {
    std::uint64_t tp = 1, pp = 1;
    std::uint64_t replicas = 1;  // copies of the TP × PP group, each serving its share of the sequences
    std::uint64_t gpus = 1;      // tp × pp × replicas
    bool fits = false;           // one replica holds the weights and at least one sequence at the context
    std::uint64_t sequences_per_replica = 0;
    std::int64_t headroom_bytes_per_gpu = 0;    // at sequences_per_replica; negative = short by
    std::uint64_t max_batch = 0;                // sequences one replica holds at the context
    std::uint64_t max_context = 0;              // tokens per sequence one replica holds at sequences_per_replica
    bool max_context_limited_by_model = false;  // memory allows more than the model's max positions
    bool max_context_unbounded = false;         // no KV cache and no max positions: no limit
    double decode_tokens_per_s_per_sequence = 0;
    double decode_tokens_per_s = 0;  // every sequence of every replica
    std::string why_not;             // when it does not fit: the fit's reason, in words
    // It fits, but takes more GPUs than a fitting layout listed before it and decodes no faster in all: no choice.
    // The tables leave it out (and a note counts them), unless it is the layout in use; the JSON keeps it, flagged.
    bool dominated = false;
};

struct Plan {
    std::uint64_t sequences = 0;  // concurrent sequences to serve (the workload's batch)
    std::vector<PlanOption> options;
    std::vector<std::string> notes;
    // Two of the notes on their own, for the window's caption: the limits the layouts were sought within, and how
    // many layouts are left out as no choice (empty when none is).
    std::string scope_note, dominated_note;
    // The warnings every layout's fit gives (a context past the model's max positions, what is not exact); one
    // layout's own (its KV heads copied) stay with that layout's fit.
    std::vector<std::string> warnings;
};

// "TP 4 × PP 2 × 3 replicas" (replicas only when more than one): how the window and the CLI name a layout.
std::string plan_layout_text(const PlanOption& option);

// The workload's batch is the number of concurrent sequences to serve in all; `deployment` gives
// the GPU, engine, memory fraction, weight format and reserves (its GPU count is ignored). Options
// come smallest GPU count first; layouts the heads cannot split are left out, and for each TP the
// pipeline depth grows only until one replica holds every sequence. A layout the calculator cannot
// evaluate is listed as not fitting, with the reason.
Result<Plan> plan_deployments(const Architecture& arch, KvDtype kv_dtype, const Workload& workload,
                              const Deployment& deployment, const PlanLimits& limits = {});

}  // namespace kvscope
