#include "kvscope/calculator/traffic_answer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
namespace {

// A run meets the target when it refused no request (a refused request is no latency met) and its latencies at the
// target's percentile are within it: the single run's search and each layout of the plan ask the same.
bool meets_slo(const SloTarget& target, std::uint64_t refused, double ttft_ms, double tpot_ms) {
    return refused == 0 && (!target.ttft_ms || ttft_ms <= *target.ttft_ms) &&
           (!target.tpot_ms || tpot_ms <= *target.tpot_ms);
}

}  // namespace

Result<std::optional<double>> max_rate_meeting_slo(const TrafficSpec& spec, const ServingSettings& settings,
                                                   const StepCost& cost, const SloTarget& target,
                                                   const SimulationProgress& progress) {
    if (!target.ttft_ms && !target.tpot_ms) return FieldError{"--ttft-ms", "a target needs --ttft-ms or --tpot-ms"};
    const auto pick = [&](const Percentiles& p) { return at_percentile(p, target.percentile); };
    // At most 52 simulations (30 doublings or 10 halvings, then 12 bisections): the progress counts them.
    int runs = 0;
    const auto meets = [&](std::optional<double> rate) -> Result<bool> {
        if (progress && !progress(std::min(1.0, runs++ / 52.0))) return FieldError{"simulate", "cancelled"};
        TrafficSpec at = spec;
        at.rate = rate;
        auto requests = make_traffic(at);
        if (!requests) return requests.errors();
        auto r = simulate_serving(*requests, settings, cost);
        if (!r) return r.errors();
        return meets_slo(target, r->refused, pick(r->ttft_ms), pick(r->tpot_ms));
    };
    // Met with every request at once: at any rate.
    auto at_once = meets(std::nullopt);
    if (!at_once) return at_once.errors();
    if (*at_once) return std::optional<double>(std::numeric_limits<double>::infinity());
    // From 1 request a second: up by doubling while it meets the target, down by halving while it does not.
    double lo = 0, hi = 0, rate = 1;
    auto ok = meets(rate);
    if (!ok) return ok.errors();
    if (*ok) {
        lo = rate;
        for (int i = 0; i < 30; ++i) {
            rate *= 2;
            ok = meets(rate);
            if (!ok) return ok.errors();
            if (!*ok) break;
            lo = rate;
        }
        hi = rate;
        if (*ok) return std::optional<double>(lo);  // met up to 2^30 a second (all at once, the check above, not)
    } else {
        hi = rate;
        for (int i = 0; i < 10 && !*ok; ++i) {
            rate /= 2;
            ok = meets(rate);
            if (!ok) return ok.errors();
            if (*ok)
                lo = rate;
            else
                hi = rate;
        }
        if (!*ok) return std::optional<double>();
    }
    for (int i = 0; i < 12; ++i) {  // to within 0.03% of the answer
        const double mid = (lo + hi) / 2;
        ok = meets(mid);
        if (!ok) return ok.errors();
        (*ok ? lo : hi) = mid;
    }
    return std::optional<double>(lo);
}

Result<std::vector<ServingPoint>> serving_curve(const TrafficSpec& spec, const ServingSettings& settings,
                                                const StepCost& cost, std::size_t points,
                                                const SimulationProgress& progress) {
    if (points < 2) return FieldError{"points", "a curve needs 2 points at least"};
    const double runs = static_cast<double>(points + 1);
    const auto part = [&](std::size_t run) -> SimulationProgress {
        if (!progress) return {};
        return [&progress, run, runs](double f) { return progress((static_cast<double>(run) + f) / runs); };
    };
    // The throughput all at once: the most the deployment serves of this traffic.
    TrafficSpec all = spec;
    all.rate.reset();
    auto at_once = make_traffic(all);
    if (!at_once) return at_once.errors();
    auto most = simulate_serving(*at_once, settings, cost, part(0));
    if (!most) return most.errors();
    if (most->request_throughput <= 0) return FieldError{"simulate", "no request was served"};
    std::vector<ServingPoint> curve;
    for (std::size_t i = 0; i < points; ++i) {
        // From 0.1 to 1.1 of that throughput, evenly.
        const double rate = most->request_throughput * (0.1 + static_cast<double>(i) / static_cast<double>(points - 1));
        TrafficSpec at = spec;
        at.rate = rate;
        auto requests = make_traffic(at);
        if (!requests) return requests.errors();
        auto r = simulate_serving(*requests, settings, cost, part(i + 1));
        if (!r) return r.errors();
        curve.push_back({rate, r->request_throughput, r->ttft_ms, r->tpot_ms});
    }
    return curve;
}

Result<TrafficAnswer> answer_traffic(const Scenario& s, const TrafficQuestion& asked,
                                     const SimulationProgress& progress) {
    TrafficQuestion q = asked;
    if (auto spec = fill_lengths(q.spec))
        q.spec = std::move(spec.value());
    else
        return spec.errors();
    const bool target = q.target.ttft_ms || q.target.tpot_ms;
    if (target && !q.trace.empty())
        return FieldError{"--ttft-ms",
                          "a target is sought over a described traffic's rates, not over a trace's own times"};
    std::vector<std::string> trace_warnings = q.spec.lengths_warnings;
    auto requests = q.trace.empty() ? make_traffic(q.spec) : read_trace_file(q.trace, &trace_warnings);
    if (!requests) return requests.errors();
    if (!q.trace.empty() && q.limit_trace && q.spec.requests < requests->size())
        requests.value().resize(static_cast<std::size_t>(q.spec.requests));
    auto setup = serving_setup(s, q.prefix_caching, q.concurrency, q.measured);
    if (!setup) return setup.errors();
    TrafficAnswer a;
    a.setup = *setup;
    a.requests = requests->size();
    // The share of the work each part takes, for one progress from 0 to 1: the simulation, the curve, the search.
    const double parts = 1.0 + (q.curve ? 1.0 : 0.0) + (target ? 1.0 : 0.0);
    double done = 0;
    const auto part = [&]() -> SimulationProgress {
        if (!progress) return {};
        return [&progress, &done, parts](double f) { return progress((done + f) / parts); };
    };
    auto report = simulate_serving(*requests, a.setup.settings, a.setup.cost, part());
    if (!report) return report.errors();
    a.report = *report;
    a.report.step_time_source = a.setup.step_time_source;
    done += 1;
    if (q.curve && q.trace.empty()) {
        auto curve = serving_curve(q.spec, a.setup.settings, a.setup.cost, 10, part());
        if (!curve) return curve.errors();
        a.curve = *curve;
        done += 1;
    }
    if (target) {
        auto best = max_rate_meeting_slo(q.spec, a.setup.settings, a.setup.cost, q.target, part());
        if (!best) return best.errors();
        a.max_rate = *best;
    }
    a.warnings = trace_warnings;
    a.warnings.insert(a.warnings.end(), a.setup.warnings.begin(), a.setup.warnings.end());
    a.warnings.insert(a.warnings.end(), a.report.warnings.begin(), a.report.warnings.end());
    return a;
}

std::vector<std::uint64_t> route_conversations(const std::vector<std::uint64_t>& first_span, std::uint64_t replicas,
                                               Router router) {
    const std::size_t n = first_span.size();
    std::vector<std::uint64_t> out(n);
    replicas = std::max<std::uint64_t>(1, replicas);
    if (router == Router::round_robin) {
        for (std::size_t k = 0; k < n; ++k) out[k] = k % replicas;
        return out;
    }
    // The groups, in the order of their ids, with their conversations in order.
    std::map<std::uint64_t, std::vector<std::size_t>> groups;
    for (std::size_t k = 0; k < n; ++k) groups[first_span[k]].push_back(k);
    std::vector<const std::vector<std::size_t>*> order;
    order.reserve(groups.size());
    for (const auto& [id, members] : groups) order.push_back(&members);
    if (order.size() >= replicas) {
        // A group a replica: the largest first, to the replica with the fewest conversations so far when the whole
        // group fits its even share (n / R, rounded up); a group that would overload it is dealt in turn to the
        // replicas below their share, as a prefix-aware router spills a prompt's requests past a busy replica (in
        // time, not a block of them to each).
        std::stable_sort(order.begin(), order.end(),
                         [](const auto* a, const auto* b) { return a->size() > b->size(); });
        const std::uint64_t share = (n + replicas - 1) / replicas;
        std::vector<std::uint64_t> load(replicas, 0);
        std::uint64_t next = 0;  // where dealing goes on
        for (const auto* members : order) {
            const auto least = static_cast<std::uint64_t>(std::min_element(load.begin(), load.end()) - load.begin());
            if (load[least] + members->size() <= share) {
                for (const std::size_t k : *members) out[k] = least;
                load[least] += members->size();
                continue;
            }
            for (const std::size_t k : *members) {
                while (load[next % replicas] >= share) ++next;  // some replica is below its share: n ≤ R × share
                out[k] = next % replicas;
                ++load[next++ % replicas];
            }
        }
        return out;
    }
    // Fewer groups than replicas: group g has the replicas r with r mod G = g, its conversations among them in turn.
    const std::uint64_t g_count = order.size();
    for (std::uint64_t g = 0; g < g_count; ++g) {
        const std::uint64_t own = (replicas - g + g_count - 1) / g_count;  // the r < replicas with r mod G = g
        std::uint64_t i = 0;
        for (const std::size_t k : *order[g]) out[k] = g + (i++ % own) * g_count;
    }
    return out;
}

std::string service_ms_text(const LayoutService& l, double ms, int decimals) {
    return l.served == 0 ? "—" : number_text(ms, Notation::fixed, decimals);
}

Result<std::vector<LayoutService>> serve_plan(const Scenario& s, const Plan& plan, const TrafficQuestion& asked,
                                              std::uint64_t max_replicas, const SimulationProgress& progress) {
    TrafficQuestion q = asked;
    if (auto spec = fill_lengths(q.spec))
        q.spec = std::move(spec.value());
    else
        return spec.errors();
    if (!q.spec.rate)
        return FieldError{"--rate",
                          "a plan is weighed at a rate of requests a second (for example 10), not all at once"};
    if (q.concurrency > 0) return FieldError{"--concurrency", "a plan's replicas share the traffic: not with a limit"};
    if (!q.target.ttft_ms && !q.target.tpot_ms)
        return FieldError{"--ttft-ms", "a plan's layouts are weighed against a target: give --ttft-ms or --tpot-ms"};
    if (!s.deployment) return FieldError{"--gpu", "a plan needs a GPU"};
    auto requests = make_traffic(q.spec);
    if (!requests) return requests.errors();
    // The conversation each request belongs to: its first turn's; and each conversation's first prompt span, which
    // the prefix router groups by (the shared system prompt, where the traffic has one).
    std::vector<std::size_t> conversation(requests->size());
    std::vector<std::uint64_t> first_span;
    for (std::size_t i = 0; i < requests->size(); ++i) {
        const TrafficRequest& r = (*requests)[i];
        if (r.follows == kNoRequest) {
            conversation[i] = first_span.size();
            first_span.push_back(q.spec.shared_prefix > 0 && !r.spans.empty() ? r.spans.front().id : kNoRequest);
        } else {
            conversation[i] = conversation[r.follows];
        }
    }
    std::vector<LayoutService> out;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> tried;
    const auto layouts = static_cast<double>(
        std::count_if(plan.options.begin(), plan.options.end(), [](const PlanOption& o) { return o.fits; }));
    // Each simulation asks whether to go on; the share done is the layouts finished (the one being served is in
    // `tried`).
    const SimulationProgress going_on = [&](double) {
        return !progress || progress(static_cast<double>(tried.size() - 1) / layouts);
    };
    for (const PlanOption& o : plan.options) {
        if (!o.fits || std::find(tried.begin(), tried.end(), std::pair{o.tp, o.pp}) != tried.end()) continue;
        tried.emplace_back(o.tp, o.pp);
        Scenario layout = s;
        layout.parallel.tp = o.tp;
        layout.parallel.pp = o.pp;
        layout.deployment->gpu_count = o.tp * o.pp;
        auto setup = serving_setup(layout, q.prefix_caching, q.concurrency);
        if (!setup) return setup.errors();  // an engine the simulation does not follow, say
        // `replicas` copies of the layout, each serving the share the router gives it.
        const auto serve = [&](std::uint64_t replicas) -> Result<LayoutService> {
            LayoutService service;
            service.tp = o.tp;
            service.pp = o.pp;
            service.replicas = replicas;
            service.gpus = o.tp * o.pp * replicas;
            service.warnings = setup->warnings;
            if (q.router == Router::prefix && replicas > 1)
                service.warnings.emplace_back(
                    "not exact: the prefix router routes by the prompts alone; sgl-router's cache_aware and vLLM's "
                    "production stack also weigh each replica's load as it changes");
            const std::vector<std::uint64_t> replica_of = route_conversations(first_span, replicas, q.router);
            for (std::uint64_t replica = 0; replica < replicas; ++replica) {
                std::vector<TrafficRequest> share;
                std::vector<std::size_t> index(requests->size(), kNoRequest);
                for (std::size_t i = 0; i < requests->size(); ++i) {
                    if (replica_of[conversation[i]] != replica) continue;
                    index[i] = share.size();
                    share.push_back((*requests)[i]);
                    if (share.back().follows != kNoRequest) share.back().follows = index[share.back().follows];
                }
                if (share.empty()) continue;
                auto r = simulate_serving(share, setup->settings, setup->cost, going_on);
                if (!r) return r.errors();
                service.ttft_ms = std::max(service.ttft_ms, at_percentile(r->ttft_ms, q.target.percentile));
                service.tpot_ms = std::max(service.tpot_ms, at_percentile(r->tpot_ms, q.target.percentile));
                service.request_throughput += r->request_throughput;
                service.prefix_hit_tokens += r->prefix_hit_tokens;
                service.served += r->requests;
                service.refused += r->refused;
            }
            if (service.refused > 0)
                service.warnings.push_back("a layout that refuses requests (" + format_count(service.refused) +
                                           " here: a prompt and its output longer than the context served) meets "
                                           "no target");
            service.meets = meets_slo(q.target, service.refused, service.ttft_ms, service.tpot_ms);
            return service;
        };
        // The fewest replicas that meet the target: doubling, then halving the gap.
        auto best = serve(1);
        if (!best) return best.errors();
        std::uint64_t missed = 0;
        // A refused request is refused by every replica (its prompt and output pass the context served): more
        // replicas do not help.
        while (!best->meets && best->refused == 0 && best->replicas < max_replicas) {
            missed = best->replicas;
            auto more = serve(std::min(max_replicas, best->replicas * 2));
            if (!more) return more.errors();
            best = std::move(more);
        }
        while (best->meets && best->replicas - missed > 1) {
            auto fewer = serve(missed + (best->replicas - missed) / 2);
            if (!fewer) return fewer.errors();
            if (fewer->meets)
                best = std::move(fewer);
            else
                missed = fewer->replicas;
        }
        out.push_back(*best);
    }
    // Fewest GPUs first (then the narrower tensor parallel); those that meet the target before those that do not.
    std::stable_sort(out.begin(), out.end(), [](const LayoutService& a, const LayoutService& b) {
        return std::tuple(!a.meets, a.gpus, a.tp) < std::tuple(!b.meets, b.gpus, b.tp);
    });
    return out;
}

std::string traffic_text(const TrafficSpec& t, const std::string& trace, std::uint64_t requests,
                         std::uint64_t concurrency) {
    const std::string limit = concurrency > 0 ? ", at most " + format_count(concurrency) + " in flight" : "";
    if (!trace.empty()) return format_count(requests) + " requests of " + trace + limit;
    const auto length = [](const LengthSpec& l) {
        return format_count(l.tokens) +
               (l.range > 0 ? " ± " + number_text(100 * l.range, Notation::fixed, 0) + "%" : "");
    };
    std::string out =
        format_count(requests) + " requests, " +
        (t.rate ? number_text(*t.rate, Notation::shortest) + "/s (Poisson)" : "all at once") +
        (t.lengths_from.empty() ? ", prompts of " + length(t.input) + " tokens, answers of " + length(t.output)
                                : ", prompts and answers as long as those of " + t.lengths_from);
    if (t.shared_prefix > 0)
        out += ", a shared prefix of " + format_count(t.shared_prefix) +
               (t.prefix_groups > 1 ? " (" + std::to_string(t.prefix_groups) + " different)" : "");
    if (t.turns > 1) out += ", conversations of " + std::to_string(t.turns) + " turns";
    return out + limit;
}

std::vector<std::pair<std::string, std::string>> slo_rows(const SloTarget& target, const std::optional<double>& best) {
    const std::string what = (target.ttft_ms ? "TTFT ≤ " + number_text(*target.ttft_ms) + " ms" : std::string()) +
                             (target.ttft_ms && target.tpot_ms ? " and " : "") +
                             (target.tpot_ms ? "TPOT ≤ " + number_text(*target.tpot_ms) + " ms" : std::string());
    return {{"target", what + " at P" + number_text(target.percentile)},
            {"highest rate", !best               ? "none: even 1/1000 of a request a second misses it"
                             : std::isinf(*best) ? "any: even every request at once meets it"
                                                 : number_text(*best, Notation::fixed, 2) + " requests/s"}};
}

}  // namespace kvscope
