#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/offload.h"

#include <algorithm>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/fit.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
namespace {

// Why a replica of this layout holds no sequence at the context, in words.
std::string why_not_text(const FitReport& f, std::uint64_t context, UnitSystem units) {
    if (f.kv_budget_bytes_per_gpu < 0)
        return "the weights (" + format_bytes(f.weights_bytes_per_gpu, units) +
               " per GPU) and reserves exceed what the engine may use";
    if (f.short_at_startup)
        return "vLLM's start check of one request of " + format_count(context) +
               " tokens (a prefill chunk in each "
               "sliding group) needs " +
               format_bytes(f.startup_bytes_per_gpu, units) + ", more than the " +
               format_bytes(static_cast<std::uint64_t>(f.kv_budget_bytes_per_gpu), units) +
               " KV budget per GPU (a smaller --max-num-batched-tokens lowers it)";
    return "one sequence of " + format_count(context) + " tokens needs more than the " +
           format_bytes(static_cast<std::uint64_t>(f.kv_budget_bytes_per_gpu), units) + " KV budget per GPU";
}

// A fitting layout that takes more GPUs than one listed before it and decodes no faster in all is no choice:
// flagged (the tables leave it out), and counted for a note. "No faster" within a part in 10^9, so that two rows
// that print the same figure are the same speed. `options`: smallest GPU count first.
std::size_t mark_dominated(std::vector<PlanOption>& options) {
    std::size_t dominated = 0;
    double best_fewer = -1;  // the most tokens/s in all of the fitting layouts with fewer GPUs
    for (std::size_t i = 0; i < options.size();) {
        const std::uint64_t gpus = options[i].gpus;
        double best_here = best_fewer;
        for (; i < options.size() && options[i].gpus == gpus; ++i) {
            PlanOption& o = options[i];
            if (!o.fits) continue;
            o.dominated = best_fewer >= 0 && o.decode_tokens_per_s <= best_fewer * (1 + 1e-9);
            dominated += o.dominated ? 1 : 0;
            if (!o.dominated) best_here = std::max(best_here, o.decode_tokens_per_s);
        }
        best_fewer = best_here;
    }
    return dominated;
}

}  // namespace

std::string plan_layout_text(const PlanOption& o) {
    return "TP " + std::to_string(o.tp) + " × PP " + std::to_string(o.pp) +
           (o.replicas > 1 ? " × " + std::to_string(o.replicas) + " replicas" : "");
}

Result<Plan> plan_deployments(const Architecture& arch, KvDtype kv_dtype, const Workload& workload,
                              const Deployment& deployment, const PlanLimits& limits) {
    Errors errors = validate(arch);
    for (auto& e : validate(workload)) errors.push_back(std::move(e));
    Deployment one_gpu = deployment;
    one_gpu.gpu_count = 1;
    for (auto& e : validate(one_gpu, Parallelism{})) errors.push_back(std::move(e));  // the GPU and engine
    // The same bounds as --tp and --pp (workload.h): beyond them a plan would only count for ever.
    if (limits.gpus_per_node == 0 || limits.gpus_per_node > kMaxTpOrPp)
        errors.push_back({Field::gpus_per_node, "GPUs per node must be between 1 and " + std::to_string(kMaxTpOrPp)});
    if (limits.max_pp == 0 || limits.max_pp > kMaxTpOrPp)
        errors.push_back({Field::max_pp, "pipeline stages must be between 1 and " + std::to_string(kMaxTpOrPp)});
    if (!errors.empty()) return errors;

    Plan plan;
    std::vector<std::string> not_exact;              // the fits' "not exact:" notes, each once
    std::optional<std::vector<std::string>> common;  // the warnings of every fit so far
    bool pipelined = false;                          // a layout with pipeline stages was evaluated
    std::string split_note;                          // llama.cpp's split on one GPU, said once
    plan.sequences = workload.batch;
    // A unified-memory computer is one GPU a machine: no tensor parallel within it; machines in pipeline stages.
    const bool unified = deployment.gpu.unified_memory_bytes > 0;
    const std::uint64_t per_node = unified ? 1 : limits.gpus_per_node;
    for (std::uint64_t tp = 1; tp <= per_node; ++tp) {
        // Engines split the query and KV heads evenly (or replicate KV heads): validate(Parallelism) says which.
        if (!validate(Parallelism{tp, 1}, arch).empty()) continue;
        for (std::uint64_t pp = 1; pp <= limits.max_pp && pp <= arch.layers; ++pp) {
            const Parallelism parallel{tp, pp};
            Deployment d = deployment;
            d.gpu_count = tp * pp;
            Workload one = workload;
            one.batch = 1;
            PlanOption o;
            o.tp = tp;
            o.pp = pp;
            o.sequences_per_replica = workload.batch;
            o.gpus = tp * pp;  // both at most kMaxTpOrPp
            // A layout the calculator cannot evaluate (its replicated cache beyond 2^64 bytes, …) is a
            // row that does not fit, with the reason; it never hides the other layouts.
            auto not_fitting = [&](const std::string& why) {
                o.fits = false;
                o.why_not = why;
                plan.options.push_back(o);
            };
            auto single = fit(arch, kv_dtype, one, parallel, d);
            if (!single) {
                not_fitting(join_errors(single.errors()));
                continue;
            }
            o.max_batch = single->max_batch;
            o.fits = single->max_batch > 0;
            if (o.fits) {
                o.replicas = ceil_div(workload.batch, o.max_batch);
                o.sequences_per_replica = ceil_div(workload.batch, o.replicas);
                const Checked gpus = Checked(tp) * pp * o.replicas;
                if (gpus.overflow()) {
                    not_fitting("more than 2^64 GPUs would be needed");
                    continue;
                }
                o.gpus = gpus.value();
            } else {
                o.why_not = why_not_text(*single, workload.context_tokens, UnitSystem::binary);
            }

            Workload served = workload;
            served.batch = o.sequences_per_replica;
            auto f = fit(arch, kv_dtype, served, parallel, d);
            auto decode = f && o.fits ? decode_estimate(arch, kv_dtype, served, parallel, d, *f)
                                      : Result<DecodeEstimate>(DecodeEstimate{});
            if (!f || !decode) {
                not_fitting(join_errors(!f ? f.errors() : decode.errors()));
                continue;
            }
            // llama.cpp's split is the fit's on one GPU alone (offload.h): that row says where its layers are.
            if (f->offload && f->offload->splits() && f->gpus == 1 && split_note.empty())
                split_note = "the 1-GPU row is llama.cpp's split, " + offload_text(*f->offload) +
                             "; rows of more GPUs keep every layer on the GPUs (a split over several is not modelled)";
            // What makes a layout's figures not exact (an engine's estimated reserve) is said once for the plan.
            for (const std::string& n : f->notes) {
                if (n.starts_with(kEvenPipelineNote)) {  // one line for every pipelined layout, below
                    pipelined = true;
                    continue;
                }
                if (n.starts_with("not exact:") && std::find(not_exact.begin(), not_exact.end(), n) == not_exact.end())
                    not_exact.push_back(n);
            }
            if (!common) {
                common = f->warnings;
            } else {
                std::erase_if(*common, [&](const std::string& w) {
                    return std::find(f->warnings.begin(), f->warnings.end(), w) == f->warnings.end();
                });
            }
            o.headroom_bytes_per_gpu = f->headroom_bytes_per_gpu;
            o.max_context = f->max_context;
            o.max_context_limited_by_model = f->max_context_limited_by_model;
            o.max_context_unbounded = f->max_context_unbounded;
            if (o.fits) {
                o.decode_tokens_per_s_per_sequence = decode->tokens_per_s_per_sequence;
                o.decode_tokens_per_s = decode->tokens_per_s_per_sequence * static_cast<double>(workload.batch);
            }
            plan.options.push_back(std::move(o));
            // Deeper pipelines only add GPUs once one replica serves every sequence.
            if (plan.options.back().fits && plan.options.back().replicas == 1) break;
        }
    }
    std::stable_sort(plan.options.begin(), plan.options.end(), [](const PlanOption& a, const PlanOption& b) {
        if (a.gpus != b.gpus) return a.gpus < b.gpus;
        if (a.fits != b.fits) return a.fits;
        return a.decode_tokens_per_s > b.decode_tokens_per_s;
    });
    const std::size_t dominated = mark_dominated(plan.options);
    plan.scope_note = (unified ? std::string("one GPU a machine (its memory unified: no tensor parallel)")
                               : "tensor parallel within a node of " + std::to_string(limits.gpus_per_node) + " GPUs") +
                      ", pipeline parallel up to " + std::to_string(limits.max_pp) +
                      " stages, replicas (data parallel) for the rest of the " + format_count(workload.batch) +
                      (workload.batch == 1 ? " sequence" : " sequences");
    plan.notes.push_back(plan.scope_note);
    if (!split_note.empty()) plan.notes.push_back(split_note);
    if (dominated > 0) {
        plan.dominated_note = format_count_of(dominated, "layout", "layouts") +
                              " left out: each takes more GPUs than one above it and decodes no faster in all";
        plan.notes.push_back(plan.dominated_note);
    }
    if (std::none_of(plan.options.begin(), plan.options.end(), [](const PlanOption& o) { return o.fits; }))
        plan.notes.emplace_back(
            "no layout within these limits holds one sequence at this context: shorten the "
            "context, choose a smaller KV or weight format, or a GPU with more memory");
    if (pipelined)
        not_exact.push_back(std::string(kEvenPipelineNote) +
                            " over a layout's pipeline stages; engines keep the embedding on the first stage and the "
                            "LM head on the last, so their GPUs hold more than shown (fit names how much)");
    plan.notes.insert(plan.notes.end(), not_exact.begin(), not_exact.end());
    if (common) {
        plan.warnings = std::move(*common);
    } else if (auto kv = kv_cache_report(arch, kv_dtype, workload, Parallelism{}); kv) {
        plan.warnings = kv->warnings;  // no layout could be evaluated: the cache's own, as kv gives them
    }
    return plan;
}

}  // namespace kvscope
