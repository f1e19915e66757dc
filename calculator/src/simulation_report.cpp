#include "kvscope/calculator/simulation_report.h"

#include <cmath>

#include "kvscope/calculator/numbers.h"

namespace kvscope {

using json::Value;

TimelineFields timeline_fields(const TimelinePoint& p) {
    return {p.t_s,
            {{{"running", p.running},
              {"waiting", p.waiting},
              {"kv_used_bytes", p.kv_used_bytes},
              {"kv_unshared_bytes", p.kv_unshared_bytes}}}};
}

double at_percentile(const Percentiles& p, double percentile) {
    return percentile >= 99 ? p.p99 : percentile >= 90 ? p.p90 : p.median;
}

namespace {

std::string ms_text(double v) { return number_text(v, Notation::fixed, v < 10 ? 2 : 1); }
// A run that served no request has no latencies: "—", never a 0 that reads as measured.
std::string percentiles_text(const SimulationReport& r, const Percentiles& p) {
    if (r.requests == 0) return "— (no request was served)";
    return "mean " + ms_text(p.mean) + "   median " + ms_text(p.median) + "   P90 " + ms_text(p.p90) + "   P99 " +
           ms_text(p.p99);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> simulation_rows(const SimulationReport& r, const ServingSettings& st,
                                                                 UnitSystem units) {
    const double used = r.kv_budget_blocks > 0
                            ? 100.0 * static_cast<double>(r.kv_peak_blocks) / static_cast<double>(r.kv_budget_blocks)
                            : 0;
    const auto per_s = [](double v) { return format_count(static_cast<std::uint64_t>(std::llround(v))); };
    return {
        {"served", format_count(r.requests) + " requests in " + number_text(r.duration_s, Notation::fixed, 1) + " s" +
                       (r.refused > 0 ? ", " + format_count(r.refused) + " refused" : "")},
        {"throughput", number_text(r.request_throughput, Notation::fixed, 2) + " requests/s, " +
                           per_s(r.output_throughput) + " output tokens/s, " + per_s(r.input_throughput) +
                           " input tokens/s"},
        {"TTFT (ms)", percentiles_text(r, r.ttft_ms)},
        {"TPOT (ms)", percentiles_text(r, r.tpot_ms)},
        {"ITL (ms)", percentiles_text(r, r.itl_ms)},
        {"E2E (ms)", percentiles_text(r, r.e2e_ms)},
        {"KV blocks", "peak " + format_count(r.kv_peak_blocks) + " of " + format_count(r.kv_budget_blocks) + " (" +
                          number_text(used, Notation::fixed, 1) + "%), " +
                          format_bytes(r.kv_peak_bytes_per_gpu, units) + " per GPU; " +
                          number_text(100 * r.kv_mean_used_fraction, Notation::fixed, 1) +
                          "% in use on average; blocks of " + std::to_string(st.block_size) +
                          (st.block_size == 1 ? " token" : " tokens")},
        {"worst case", "the " + format_count(r.max_running) + " sequences that ran at once, each at the full " +
                           format_tokens(st.max_model_len) + " tokens, would hold " +
                           format_bytes(r.kv_worst_case_bytes_per_gpu, units) + " per GPU"},
        {"prefix cache", st.prefix_caching
                             ? number_text(100 * r.prefix_hit_rate, Notation::fixed, 1) +
                                   "% of prompt tokens found cached (" + format_count(r.prefix_hit_tokens) +
                                   " tokens, " + number_text(r.prefix_saved_prefill_s, Notation::fixed, 1) +
                                   " s of prefill work skipped)"
                             : "off"},
        {"prefix saved", st.prefix_caching
                             ? "shared blocks held up to " + format_bytes(r.prefix_saved_peak_bytes_per_gpu, units) +
                                   " per GPU less, " + format_bytes(r.prefix_saved_mean_bytes_per_gpu, units) +
                                   " on average, than each request's own copy would"
                             : "off"},
        {"preemptions", format_count(r.preemptions)},
        {"running", "at most " + format_count(r.max_running) + ", " + number_text(r.mean_running, Notation::fixed, 1) +
                        " on average; " + number_text(r.mean_waiting, Notation::fixed, 1) + " waiting on average"},
        {"steps", format_count(r.steps) + ", timed by the " + r.step_time_source},
    };
}

namespace {

// null where no request was served (as the text's "—").
Value percentiles_json(const SimulationReport& r, const Percentiles& p) {
    if (r.requests == 0) return {};
    Value o = Value::object();
    o.set("mean", Value::number(p.mean));
    o.set("median", Value::number(p.median));
    o.set("p90", Value::number(p.p90));
    o.set("p99", Value::number(p.p99));
    return o;
}

Value timeline_json(const std::vector<TimelinePoint>& points) {
    Value list = Value::array();
    for (const TimelinePoint& p : points) {
        const TimelineFields f = timeline_fields(p);
        Value o = Value::object();
        o.set("t_s", Value::number(f.t_s));
        for (const auto& [key, count] : f.counts) o.set(key, Value::number(count));
        list.push(std::move(o));
    }
    return list;
}

// Every member of SimulationReport once, in the order the `simulation` object writes them.
template <class V>
void simulation_members(const SimulationReport& r, V& v) {
    v.field(r.requests, "requests");
    v.field(r.refused, "refused");
    v.field(r.duration_s, "duration_s");
    v.field(r.request_throughput, "request_throughput");
    v.field(r.output_throughput, "output_throughput");
    v.field(r.input_throughput, "input_throughput");
    v.value(r.ttft_ms, "ttft_ms", percentiles_json(r, r.ttft_ms));
    v.value(r.tpot_ms, "tpot_ms", percentiles_json(r, r.tpot_ms));
    v.value(r.itl_ms, "itl_ms", percentiles_json(r, r.itl_ms));
    v.value(r.e2e_ms, "e2e_ms", percentiles_json(r, r.e2e_ms));
    v.field(r.kv_budget_blocks, "kv_budget_blocks");
    v.field(r.kv_budget_bytes_per_gpu, "kv_budget_bytes_per_gpu");
    v.field(r.kv_peak_blocks, "kv_peak_blocks");
    v.field(r.kv_peak_bytes_per_gpu, "kv_peak_bytes_per_gpu");
    v.field(r.kv_worst_case_bytes_per_gpu, "kv_worst_case_bytes_per_gpu");
    v.field(r.kv_mean_used_fraction, "kv_mean_used_fraction");
    v.field(r.prefix_hit_rate, "prefix_hit_rate");
    v.field(r.prefix_hit_tokens, "prefix_hit_tokens");
    v.field(r.prefix_saved_peak_bytes_per_gpu, "prefix_saved_peak_bytes_per_gpu");
    v.field(r.prefix_saved_mean_bytes_per_gpu, "prefix_saved_mean_bytes_per_gpu");
    v.field(r.prefix_saved_prefill_s, "prefix_saved_prefill_s");
    v.field(r.preemptions, "preemptions");
    v.field(r.max_running, "max_running");
    v.field(r.mean_running, "mean_running");
    v.field(r.mean_waiting, "mean_waiting");
    v.field(r.mean_in_system, "mean_in_system");
    v.field(r.steps, "steps");
    v.field(r.step_time_source, "step_time_source");
    v.value(r.timeline, "timeline", timeline_json(r.timeline));
    v.field(r.notes, "notes");
    v.field(r.warnings, "warnings");
}

}  // namespace

json::Value simulation_json(const SimulationReport& r) {
    return members_json(r, [](const SimulationReport& x, auto& v) { simulation_members(x, v); });
}

std::vector<DeclaredMember> declared_members(const SimulationReport& r) {
    return list_members(r, [](const SimulationReport& x, auto& v) { simulation_members(x, v); });
}

}  // namespace kvscope
