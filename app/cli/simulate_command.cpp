#include "simulate_command.h"

#include <algorithm>
#include <cmath>

#include "kvscope/calculator/measured_step.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/plan.h"
#include "kvscope/calculator/report_json.h"
#include "kvscope/calculator/traffic.h"
#include "kvscope/calculator/traffic_answer.h"
#include "kvscope/calculator/units.h"
#include "table.h"

namespace kvscope::cli {
namespace {

using json::Value;

// The traffic the options describe (traffic.h's defaults where an option is not given).
TrafficSpec traffic_spec(const Options& o) {
    TrafficSpec t;
    t.requests = o.requests.value_or(t.requests);
    if (o.rate && std::isfinite(*o.rate)) t.rate = *o.rate;
    t.input = {o.input_tokens.value_or(t.input.tokens), o.input_range.value_or(0)};
    t.output = {o.output_tokens.value_or(t.output.tokens), o.output_range.value_or(0)};
    t.shared_prefix = o.shared_prefix.value_or(0);
    t.prefix_groups = o.prefix_groups.value_or(1);
    t.turns = o.turns.value_or(1);
    t.seed = o.seed.value_or(0);
    t.lengths_from = o.lengths_from.value_or("");
    return t;
}

// The options a trace's own requests replace: an error naming each one given beside --trace.
Errors refused_beside_trace(const Options& o) {
    Errors errors;
    const std::pair<bool, const char*> given[] = {
        {o.rate.has_value(), "--rate"},
        {o.input_tokens.has_value(), "--input-tokens"},
        {o.output_tokens.has_value(), "--output-tokens"},
        {o.input_range.has_value(), "--input-range"},
        {o.output_range.has_value(), "--output-range"},
        {o.shared_prefix.has_value(), "--shared-prefix"},
        {o.prefix_groups.has_value(), "--prefix-groups"},
        {o.turns.has_value(), "--turns"},
        {o.ttft_ms.has_value(), "--ttft-ms"},
        {o.tpot_ms.has_value(), "--tpot-ms"},
    };
    for (const auto& [is, name] : given)
        if (is)
            errors.emplace_back(name,
                                "the trace gives the requests, their lengths and times (this option describes a "
                                "traffic instead; a target is sought over described traffic)");
    return errors;
}

// The target as the JSON gives it ("slo"): each limit, null when not given, and the percentile.
Value slo_json(const SloTarget& target) {
    Value t = Value::object();
    t.set("ttft_ms", target.ttft_ms ? Value::number(*target.ttft_ms) : Value());
    t.set("tpot_ms", target.tpot_ms ? Value::number(*target.tpot_ms) : Value());
    t.set("percentile", Value::number(target.percentile));
    return t;
}

}  // namespace

// Beside --lengths-from, the options its lengths replace; beside --trace, --lengths-from itself.
Errors refused_beside_lengths(const Options& o) {
    Errors errors;
    if (!o.lengths_from) return errors;
    if (o.trace) errors.emplace_back("--lengths-from", "--trace gives the requests themselves: one or the other");
    const std::pair<bool, const char*> given[] = {
        {o.input_tokens.has_value(), "--input-tokens"},
        {o.output_tokens.has_value(), "--output-tokens"},
        {o.input_range.has_value(), "--input-range"},
        {o.output_range.has_value(), "--output-range"},
    };
    for (const auto& [is, name] : given)
        if (is) errors.emplace_back(name, "the lengths come from " + *o.lengths_from + " (--lengths-from)");
    return errors;
}

json::Value traffic_json(const Options& o, const TrafficSpec& t, std::uint64_t requests) {
    Value v = Value::object();
    v.set("trace", o.trace ? Value::string(*o.trace) : Value());
    v.set("requests", Value::number(requests));
    if (!o.trace) {
        v.set("rate", t.rate ? Value::number(*t.rate) : Value());  // null: all at once
        v.set("input_tokens", Value::number(t.input.tokens));
        v.set("input_range", Value::number(t.input.range));
        v.set("output_tokens", Value::number(t.output.tokens));
        v.set("output_range", Value::number(t.output.range));
        v.set("shared_prefix", Value::number(t.shared_prefix));
        v.set("prefix_groups", Value::number(t.prefix_groups));
        v.set("turns", Value::number(t.turns));
        v.set("lengths_from", t.lengths_from.empty() ? Value() : Value::string(t.lengths_from));
        v.set("seed", Value::number(t.seed));
    }
    v.set("concurrency", o.concurrency ? Value::number(*o.concurrency) : Value());
    return v;
}

TrafficQuestion traffic_question(const Options& o) {
    TrafficQuestion q;
    q.spec = traffic_spec(o);
    q.trace = o.trace.value_or("");
    q.limit_trace = o.requests.has_value();
    q.concurrency = o.concurrency.value_or(0);
    q.prefix_caching = o.prefix_caching.value_or(true);
    q.router = o.prefix_router.value_or(false) ? Router::prefix : Router::round_robin;
    q.target = {o.ttft_ms, o.tpot_ms, o.slo_percentile.value_or(99)};
    return q;
}

Output cmd_simulate(const Options& o, const Scenario& s, const ScenarioSource& src, const Catalog& catalog) {
    if (!s.deployment) return {"", usage_error({{"--gpu", "simulate needs a deployment"}}, o.command), kExitUsage};
    if (o.trace)
        if (Errors e = refused_beside_trace(o); !e.empty()) return {"", usage_error(e, o.command), kExitUsage};
    if (Errors e = refused_beside_lengths(o); !e.empty()) return {"", usage_error(e, o.command), kExitUsage};
    TrafficQuestion q = traffic_question(o);
    // A decode step probe --step kept for this scenario on its GPU times the steps.
    q.measured = find_measured_step(read_measured_steps(measured_steps_path(catalog.user_folder())), s);
    auto answer = answer_traffic(s, q);
    if (!answer) return {"", usage_error(answer.errors(), o.command), kExitUsage};
    TrafficAnswer& a = answer.value();
    if (a.max_rate && std::isinf(*a.max_rate))
        a.warnings.emplace_back("the target is met even with every request at once: any rate meets it");
    const ServingSettings& st = a.setup.settings;
    const bool target = o.ttft_ms || o.tpot_ms;
    const Deployment& d = *s.deployment;
    Output r;
    if (o.format == Format::json) {
        Value v = Value::object();
        v.set("model", Value::string(s.model_id));
        v.set("gpu", Value::string(d.gpu.id));
        v.set("gpu_name", Value::string(d.gpu.name));
        v.set("gpus", Value::number(s.parallel.gpus()));
        v.set("tp", Value::number(s.parallel.tp));
        v.set("pp", Value::number(s.parallel.pp));
        v.set("engine", Value::string(std::string(to_string(d.engine))));
        v.set("max_model_len", Value::number(st.max_model_len));
        v.set("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
        Value e = Value::object();
        e.set("block_size", Value::number(st.block_size));
        e.set("kv_blocks", Value::number(st.kv_blocks));
        e.set("max_num_batched_tokens", Value::number(st.max_num_batched_tokens));
        e.set("max_num_seqs", Value::number(st.max_num_seqs));
        e.set("prefix_caching", Value::boolean(st.prefix_caching));
        v.set("engine_settings", std::move(e));
        v.set("traffic", traffic_json(o, q.spec, a.requests));
        Value sim = simulation_json(a.report);
        std::vector<std::string> notes = a.setup.notes;
        notes.insert(notes.end(), a.report.notes.begin(), a.report.notes.end());
        sim.set("notes", Value::strings(notes));
        sim.set("warnings", Value::strings(a.warnings));
        v.set("simulation", std::move(sim));
        if (target) {
            v.set("slo", slo_json(q.target));
            // Infinity (met even all at once) has no JSON number: null, and a warning says which null it is.
            v.set("max_rate_meeting_slo",
                  a.max_rate && !std::isinf(*a.max_rate) ? Value::number(*a.max_rate) : Value());
        }
        v.set("warnings", Value::strings(a.warnings));
        r.out = with_warnings(std::move(v), src.notes).dump() + "\n";
        return r;
    }
    if (o.format == Format::csv) {
        // The timeline, one row a point.
        // The JSON timeline's fields (timeline_fields), a column each.
        std::vector<std::string> header{"t_s"};
        for (const auto& [key, count] : timeline_fields(TimelinePoint{}).counts) header.emplace_back(key);
        Table t(std::move(header));
        for (const TimelinePoint& p : a.report.timeline) {
            const TimelineFields f = timeline_fields(p);
            std::vector<std::string> row{number_text(f.t_s)};
            for (const auto& [key, count] : f.counts) row.push_back(std::to_string(count));
            t.add(std::move(row));
        }
        r.out = t.csv();
        return r;
    }
    std::vector<std::pair<std::string, std::string>> rows{
        {"traffic", traffic_text(q.spec, q.trace, a.requests, q.concurrency)}};
    for (auto& row : simulation_rows(a.report, st, o.units)) rows.push_back(std::move(row));
    r.out = header(s, src) + key_values(rows);
    for (const std::string& n : a.setup.notes) r.out += "note: " + n + "\n";
    for (const std::string& n : a.report.notes) r.out += "note: " + n + "\n";
    if (target) r.out += key_values(slo_rows(q.target, a.max_rate));
    for (const std::string& w : a.warnings) r.out += "warning: " + w + "\n";
    return r;
}

void add_service_json(Value& v, const Options& o, const PlanService& p) {
    v.set("traffic", traffic_json(o, p.question.spec, p.question.spec.requests));
    v.set("slo", slo_json(p.question.target));
    v.set("router", Value::string(p.question.router == Router::prefix ? "prefix" : "round-robin"));
    Value list = Value::array();
    Value smallest;
    for (const LayoutService& l : p.layouts) {
        Value x = Value::object();
        x.set("tp", Value::number(l.tp));
        x.set("pp", Value::number(l.pp));
        x.set("replicas", Value::number(l.replicas));
        x.set("gpus", Value::number(l.gpus));
        x.set("meets_slo", Value::boolean(l.meets));
        // null where the layout served no request (its latencies are no figure).
        x.set("ttft_ms", l.served > 0 ? Value::number(l.ttft_ms) : Value());
        x.set("tpot_ms", l.served > 0 ? Value::number(l.tpot_ms) : Value());
        x.set("request_throughput", Value::number(l.request_throughput));
        x.set("prefix_hit_tokens", Value::number(l.prefix_hit_tokens));
        if (l.meets && smallest.is_null()) smallest = x;
        list.push(std::move(x));
    }
    v.set("layouts_serving", std::move(list));
    v.set("smallest_meeting_slo", std::move(smallest));  // the layouts come smallest GPU count first
    v = with_warnings(std::move(v), service_warnings(p));
}

std::vector<std::string> service_warnings(const PlanService& p) {
    std::vector<std::string> out;
    for (const LayoutService& l : p.layouts)
        for (const std::string& w : l.warnings)
            if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
    return out;
}

std::string service_text(const PlanService& p) {
    const TrafficQuestion& q = p.question;
    const std::string at = "P" + number_text(q.target.percentile);
    std::string out =
        "\nserving " + traffic_text(q.spec, "", q.spec.requests, q.concurrency) + ", " +
        slo_rows(q.target, std::nullopt).front().second + ", each layout in the fewest replicas that meet it (" +
        (q.router == Router::prefix ? "the conversations of one system prompt together" : "conversations in turn") +
        "):\n";
    Table t({"GPUs", "TP × PP × replicas", "TTFT " + at + " ms", "TPOT " + at + " ms", "requests/s", "meets target"});
    const auto name = [](const LayoutService& l) {
        PlanOption layout;
        layout.tp = l.tp;
        layout.pp = l.pp;
        layout.replicas = l.replicas;
        return plan_layout_text(layout);
    };
    const LayoutService* smallest = nullptr;
    for (const LayoutService& l : p.layouts) {
        t.add({std::to_string(l.gpus), name(l), service_ms_text(l, l.ttft_ms, 1), service_ms_text(l, l.tpot_ms, 2),
               fixed(l.request_throughput, 2), l.meets ? "yes" : "no"});
        if (l.meets && !smallest) smallest = &l;
    }
    out += t.text();
    out += smallest ? "smallest layout meeting the target: " + name(*smallest) + " (" + std::to_string(smallest->gpus) +
                          " GPUs)\n"
                    : "no layout meets the target at this rate with 64 replicas or fewer\n";
    for (const std::string& w : service_warnings(p)) out += "warning: " + w + "\n";
    return out;
}

}  // namespace kvscope::cli
