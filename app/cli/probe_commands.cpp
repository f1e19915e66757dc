#include "probe_commands.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "kvscope/calculator/json.h"
#include "kvscope/probe/plugins.h"
#include "kvscope/probe/probe.h"
#include "table.h"

namespace kvscope::cli {
namespace {

using json::Value;
using probe::Status;

constexpr int kExitFailed = 1;
constexpr int kExitCancelled = 130;
constexpr std::uint64_t kMaxRuns = 1000;  // timed decode steps (--runs)

std::atomic<bool> g_cancel{false};
extern "C" void on_interrupt(int) { g_cancel = true; }

// Ctrl+C cancels the run (it ends with status "cancelled" and frees everything); progress goes to
// stderr only when it is a terminal, so pipes and JSON stay clean.
probe::Control make_control(const Options& o) {
    g_cancel = false;
    std::signal(SIGINT, on_interrupt);
    probe::Control c;
    c.cancel = &g_cancel;
    if (o.memory_limit) c.memory_limit_bytes = *o.memory_limit;
    if (::isatty(STDERR_FILENO)) {
        c.progress = [](double f, const std::string& what) {
            std::fprintf(stderr, "\r[%3d%%] %-60s", static_cast<int>(f * 100), what.c_str());
            if (f >= 1.0) std::fputc('\n', stderr);
            std::fflush(stderr);
        };
    }
    return c;
}

int exit_status(Status s) {
    switch (s) {
        case Status::ok:
            return kExitOk;
        case Status::cancelled:
            return kExitCancelled;
        case Status::invalid_input:
            return kExitUsage;
        case Status::out_of_memory:
        case Status::no_device:
        case Status::driver_mismatch:
        case Status::failed:
            return kExitFailed;
    }
    return kExitFailed;  // not reached: every member is a case above
}

Value device_json(const probe::DeviceInfo& d) {
    Value o = Value::object();
    o.set("backend", Value::string(d.backend));
    o.set("name", Value::string(d.name));
    o.set("total_bytes", Value::number(d.total_bytes));
    o.set("free_bytes", Value::number(d.free_bytes));
    o.set("compute_units", Value::number(std::uint64_t{d.compute_units}));
    o.set("cache_bytes", Value::number(d.cache_bytes));
    o.set("bus_width_bits", Value::number(std::uint64_t{d.bus_width_bits}));
    o.set("memory_clock_mhz", Value::number(d.memory_clock_mhz));
    o.set("theoretical_gbps", Value::number(d.theoretical_gbps));
    o.set("measured_gbps", Value::number(d.measured_gbps));
    o.set("note", Value::string(d.note));
    return o;
}

// The limits of the attention's figures, as the text gives them under its table and the JSON in "notes".
// `host`: the cache is in host memory (the CPU backend); a GPU flushes its L2 where the cache would fit in it.
std::vector<std::string> attention_notes(const probe::AttentionTiming& at, bool host) {
    std::vector<std::string> notes;
    if (at.runs == 0) return notes;
    if (at.cache_resident && host)
        notes.emplace_back("the cache fits in the CPU caches, so the bandwidth is optimistic");
    if (std::string bound = probe::arithmetic_bound_note(at); !bound.empty()) notes.push_back(std::move(bound));
    return notes;
}

// What every probe run's JSON opens with: how it ended, where it ran, and the scenario it ran.
Value run_json(Status status, const std::string& message, const probe::DeviceInfo& device, const Scenario& s) {
    Value v = Value::object();
    v.set("status", Value::string(std::string(to_string(status))));
    v.set("message", Value::string(message));
    v.set("backend", Value::string(device.backend));
    v.set("device", device_json(device));
    v.set("model", Value::string(s.model_id));
    v.set("context_tokens", Value::number(s.workload.context_tokens));
    v.set("batch", Value::number(s.workload.batch));
    v.set("kv_dtype", Value::string(std::string(to_string(s.kv_dtype))));
    return v;
}

probe::BackendChoice backend_of(const Options& o) { return probe::choose_backend(o.backend.value_or("auto")); }

// When the chosen backend cannot run here: a name that is not a backend is a usage error; a
// missing device or an old driver is a result (JSON with its status under --json), exit 1.
Output unavailable(const std::string& command, const Options& o, const probe::BackendChoice& c) {
    const std::string name = o.backend.value_or("auto");
    Output r;
    r.status = exit_status(c.status);
    if (c.status != Status::invalid_input && o.format == Format::json) {
        Value v = Value::object();
        v.set("status", Value::string(std::string(to_string(c.status))));
        v.set("message", Value::string("--backend " + name + ": " + c.message));
        v.set("backend", Value::string(name));
        r.out = v.dump() + "\n";
        return r;
    }
    r.err = "kvscope-cli " + command + ": " +
            (c.status == Status::invalid_input ? "" : std::string(to_string(c.status)) + ": ") + "--backend " + name +
            ": " + c.message + "\n";
    return r;
}

// A quantized checkpoint's step multiplies plain weights of the same shapes: said beside the format (empty for a
// plain checkpoint).
std::string quantized_as_plain(const Scenario& s, KvDtype plain) {
    // The deployment's quantization, else (probe --step without --gpu) the model's own checkpoint's.
    const std::optional<WeightQuant>& quant =
        s.deployment ? s.deployment->weight_quant : s.model_weights.value_or(ModelWeights{}).quant;
    if (!quant || (s.deployment && s.deployment->weights_bytes_exact > 0)) return {};
    return "the checkpoint's " + weight_quant_label(*quant) + " is multiplied as " + std::string(to_string(plain)) +
           " here";
}

// " (text)" after a figure, nothing for no text.
std::string parenthesised(const std::string& text) { return text.empty() ? text : " (" + text + ")"; }

// probe --step: one decode step of the whole model, beside the calculator's floor on the same bandwidth.
Output cmd_step(const Options& o, const Scenario& s, const ScenarioSource& src, probe::Backend& backend,
                const Catalog& catalog) {
    probe::StepRequest request;
    request.arch = s.arch;
    request.kv_dtype = s.kv_dtype;
    request.weight_dtype = s.deployment ? s.deployment->weight_dtype : s.model_weights.value_or(ModelWeights{}).dtype;
    // The model's own format (a GGUF's q4_0 or q8_0) that the step does not multiply: run in bf16 and say so, as the
    // Probe tab does; a --weight-dtype the user gave is refused with the formats it takes.
    std::string ran_as_bf16;
    if (!o.weight_dtype && !probe::can_multiply(request.weight_dtype)) {
        ran_as_bf16 = "the step multiplies fp32, fp16, bf16 or fp8_e4m3 weights; this run uses bf16 instead of " +
                      std::string(to_string(request.weight_dtype));
        request.weight_dtype = KvDtype::bf16;
    }
    request.workload = s.workload;
    if (o.runs) request.timing_runs = static_cast<int>(*o.runs);  // 1 … kMaxRuns (cmd_probe)
    if (o.ceiling_size) request.ceiling_bytes = *o.ceiling_size;
    const probe::StepReport p = backend.step(request, make_control(o));
    const double ratio = p.step_ms > 0 ? p.predicted_step_ms / p.step_ms : 0;  // predicted ÷ measured
    const auto batch = static_cast<double>(s.workload.batch);
    // The cache's own warnings, as kv and probe give them (a context past the model's positions, …), and a
    // quantized checkpoint run in a plain format.
    const auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, {});
    std::vector<std::string> warnings = kv ? kv->warnings : std::vector<std::string>{};
    if (std::string plain = quantized_as_plain(s, request.weight_dtype); !plain.empty())
        warnings.push_back(std::move(plain));
    if (!ran_as_bf16.empty()) warnings.push_back(ran_as_bf16);
    Output r;
    r.status = exit_status(p.status);
    // Kept for `fit` and the Deployment tab, which show it beside the estimate for this scenario on this GPU.
    std::string kept_in;
    if (p.status == Status::ok) {
        const std::string path = measured_steps_path(catalog.user_folder());
        const MeasuredStep m = probe::measured_step_of(request, p, s.model_id, catalog.gpus());
        if (auto kept = remember_measured_step(path, m); !kept)
            r.err = "kvscope-cli probe --step: the result was not kept for fit: " + kept.error_text() + "\n";
        else
            kept_in = path + (m.gpu_id.empty() ? " (fit shows steps measured on a catalog GPU; this device is not one)"
                                               : " (fit --gpu " + m.gpu_id + " shows it beside its estimate)");
    }
    if (o.format == Format::json) {
        Value v = run_json(p.status, p.message, p.device, s);
        v.set("weight_dtype", Value::string(std::string(to_string(request.weight_dtype))));
        v.set("warnings", Value::strings(warnings));
        // No step ran: no figures that a script could read as measured.
        if (p.status != Status::ok) {
            v.set("step", Value());
            r.out = v.dump() + "\n";
            return r;
        }
        Value st = Value::object();
        st.set("step_ms", Value::number(p.step_ms));
        st.set("min_step_ms", Value::number(p.min_step_ms));
        st.set("runs", Value::number(std::uint64_t(std::max(0, p.runs))));
        st.set("predicted_step_ms", Value::number(p.predicted_step_ms));
        st.set("fraction_of_prediction", Value::number(ratio));
        st.set("tokens_per_s", Value::number(p.tokens_per_s()));
        st.set("tokens_per_s_total", Value::number(p.tokens_per_s() * batch));
        st.set("predicted_tokens_per_s", Value::number(p.predicted_tokens_per_s()));
        st.set("predicted_tokens_per_s_total", Value::number(p.predicted_tokens_per_s() * batch));
        st.set("layers_run", Value::number(p.layers_run));
        st.set("layers_total", Value::number(p.layers_total));
        st.set("scaled", Value::boolean(p.scaled));
        st.set("weights_bytes_read", Value::number(p.weights_bytes_read));
        st.set("kv_bytes_read", Value::number(p.kv_bytes_read));
        st.set("predicted_bytes_read", Value::number(p.predicted_bytes_read));
        st.set("experts_read", Value::number(p.experts_read));
        Value b = Value::object();
        b.set("weights_ms", Value::number(p.weights_ms));
        b.set("attention_ms", Value::number(p.attention_ms));
        b.set("other_ms", Value::number(p.other_ms));
        st.set("breakdown", std::move(b));
        st.set("ceiling_gbps", Value::number(p.ceiling_gbps));
        st.set("max_rel_error", p.max_rel_error < 0 ? Value() : Value::number(p.max_rel_error));
        st.set("kernel", Value::string(p.kernel));
        v.set("step", std::move(st));
        r.out = v.dump() + "\n";
        return r;
    }
    if (p.status != Status::ok) {
        r.err = "kvscope-cli probe --step: " + std::string(to_string(p.status)) + ": " + p.message + "\n";
        return r;
    }
    auto ms = [](double x) { return fixed(x, x < 10 ? 2 : 1) + " ms"; };
    r.out = key_values({
        {"model", src.description},
        {"workload", format_tokens(s.workload.context_tokens) + " tokens × " + std::to_string(s.workload.batch) +
                         ", cache " + std::string(to_string(s.kv_dtype)) + ", weights " +
                         std::string(to_string(request.weight_dtype)) +
                         parenthesised(quantized_as_plain(s, request.weight_dtype))},
        {"backend", p.device.backend + " — " + p.device.name},
        {"layers",
         std::to_string(p.layers_run) + " of " + std::to_string(p.layers_total) +
             (p.scaled ? " run (the rest did not fit in memory); their time scaled to the whole model" : " run")},
        {"step", ms(p.step_ms) +
                     (p.runs > 1 ? " (median of " + std::to_string(p.runs) + " runs, min " + ms(p.min_step_ms) + ")"
                                 : std::string(" (1 run)")) +
                     " → " + fixed(p.tokens_per_s(), 1) + " tokens/s per sequence, " +
                     fixed(p.tokens_per_s() * batch, 1) + " in all"},
        {"predicted", ms(p.predicted_step_ms) + " → " + fixed(p.predicted_tokens_per_s(), 1) +
                          " tokens/s per sequence (the calculator's floor: " + format_bytes(p.predicted_bytes_read) +
                          " over the " + fixed(p.ceiling_gbps, 1) + " GB/s measured in this run)"},
        {"measured/predicted",
         ratio_text(p.predicted_step_ms > 0 ? p.step_ms / p.predicted_step_ms : 0) + " the floor"},
        {"breakdown", "weights " + ms(p.weights_ms) + " (" + format_bytes(p.weights_bytes_read) + " read" +
                          (p.experts_read ? ", " + format_count(p.experts_read) + " experts" : std::string()) +
                          "), attention " + ms(p.attention_ms) + " (" + format_bytes(p.kv_bytes_read) +
                          " of cache), the rest " + ms(p.other_ms)},
        {"accuracy", p.max_rel_error >= 0
                         ? "max relative error of the logits " + scientific(p.max_rel_error) + " against float64"
                         : std::string("not checked (the float64 check runs on models of 64 MiB of weights or "
                                       "less; the logits are checked to be finite numbers)")},
        {"kernel", p.kernel},
        {"kept in", kept_in.empty() ? std::string("not kept") : kept_in},
    });
    for (const auto& w : warnings) r.out += "warning: " + w + "\n";
    return r;
}

}  // namespace

Output cmd_devices(const Options& o) {
    const auto devices = probe::list_devices();
    Output r;
    if (o.format == Format::json) {
        Value list = Value::array();
        for (const auto& d : devices) list.push(device_json(d));
        r.out = list.dump() + "\n";
        return r;
    }
    Table t({"backend", "device", "memory", "free", "units", "cache", "peak GB/s", "read GB/s", "note"});
    for (const auto& d : devices)
        t.add({d.backend, d.name, d.total_bytes ? format_bytes(d.total_bytes) : "-",
               d.total_bytes ? format_bytes(d.free_bytes) : "-",
               d.compute_units ? std::to_string(d.compute_units) : "-",
               d.cache_bytes ? format_bytes(d.cache_bytes) : "-",
               d.theoretical_gbps > 0 ? fixed(d.theoretical_gbps, 0) : "-",
               d.measured_gbps > 0 ? fixed(d.measured_gbps, 1) : "-", d.note});
    r.out = o.format == Format::csv ? t.csv() : t.text();
    return r;
}

Output cmd_probe(const Options& o, const Scenario& s, const ScenarioSource& src, const Catalog& catalog) {
    auto backend = backend_of(o);
    if (!backend.backend) return unavailable("probe", o, backend);
    if (o.ceiling_size && *o.ceiling_size < (1ull << 20))
        return {"",
                "kvscope-cli probe: --ceiling-size: " + format_bytes(*o.ceiling_size) +
                    " is too small to time; give at least 1 MiB (default: several times the last-level cache)\n",
                kExitUsage};
    // Out of range is said, never run as the nearest value.
    if (o.runs && (*o.runs == 0 || *o.runs > kMaxRuns))
        return {
            "",
            "kvscope-cli probe: --runs: " + format_count(*o.runs) + " is outside 1 … " + format_count(kMaxRuns) + "\n",
            kExitUsage};
    if (o.memory_limit && *o.memory_limit == 0)
        return {"", "kvscope-cli probe: --memory-limit: must be more than 0 bytes (leave it out for the free memory)\n",
                kExitUsage};
    if (o.step) return cmd_step(o, s, src, *backend.backend, catalog);
    probe::ProbeRequest request;
    request.arch = s.arch;
    request.dtype = s.kv_dtype;
    request.workload = s.workload;
    if (o.runs) request.timing_runs = static_cast<int>(*o.runs);  // 1 … kMaxRuns (cmd_probe)
    if (o.ceiling_size) request.ceiling_bytes = *o.ceiling_size;
    const probe::ProbeReport p = backend.backend->probe(request, make_control(o));
    const auto& a = p.allocation;
    const auto& at = p.attention;
    // The cache's own warnings, as kv gives them for the same inputs (a context past the model's positions, …).
    const auto kv = kv_cache_report(s.arch, s.kv_dtype, s.workload, {});
    const std::vector<std::string> warnings = kv ? kv->warnings : std::vector<std::string>{};
    Output r;
    r.status = exit_status(p.status);
    if (o.format == Format::json) {
        Value v = run_json(p.status, p.message, p.device, s);
        v.set("warnings", Value::strings(warnings));
        v.set("predicted_bytes", Value::number(a.predicted_bytes));
        v.set("predicted_state_bytes", Value::number(a.predicted_state_bytes));
        v.set("requested_bytes", Value::number(a.requested_bytes));
        v.set("measured_bytes", Value::number(a.measured_bytes));
        v.set("granularity_bytes", Value::number(a.granularity_bytes));
        v.set("granularity_source", Value::string(a.granularity_source));
        v.set("allocations", Value::number(a.allocations));
        v.set("context_bytes", Value::number(a.context_bytes));
        v.set("workspace_bytes", Value::number(a.workspace_bytes));
        v.set("decode_attention_ms", Value::number(at.median_ms));
        v.set("decode_attention_min_ms", Value::number(at.min_ms));
        v.set("runs", Value::number(std::uint64_t(std::max(0, at.runs))));
        v.set("threads", Value::number(std::uint64_t{at.threads}));
        v.set("kv_bytes_read", Value::number(at.kv_bytes_read));
        v.set("kv_read_gbps", Value::number(at.kv_read_gbps));
        v.set("ceiling_gbps", Value::number(at.ceiling_gbps));
        v.set("fraction_of_ceiling", Value::number(at.fraction_of_ceiling));
        v.set("single_thread_gbps", Value::number(at.single_thread_gbps));
        // null where nothing attended, so nothing was checked against float64.
        v.set("max_rel_error", at.runs > 0 ? Value::number(at.max_rel_error) : Value());
        v.set("cache_resident", Value::boolean(at.cache_resident));
        v.set("heads_per_row", Value::number(at.heads_per_row));
        v.set("notes", Value::strings(attention_notes(at, p.device.host_memory)));
        v.set("kernel", Value::string(at.kernel));
        r.out = v.dump() + "\n";
        return r;
    }
    if (p.status != Status::ok) {
        r.err = "kvscope-cli probe: " + std::string(to_string(p.status)) + ": " + p.message + "\n";
        return r;
    }
    const auto diff = static_cast<std::int64_t>(a.measured_bytes) - static_cast<std::int64_t>(a.requested_bytes);
    r.out = key_values({
        {"model", src.description},
        {"workload", format_tokens(s.workload.context_tokens) + " tokens × " + std::to_string(s.workload.batch) + ", " +
                         std::string(to_string(s.kv_dtype))},
        {"backend", p.device.backend + " — " + p.device.name +
                        (at.threads > 0 ? " (" + std::to_string(at.threads) + " threads)" : std::string()) +
                        (p.device.note.empty() ? "" : "; " + p.device.note)},
        {"predicted",
         format_bytes(a.predicted_bytes) + " (" + format_count(a.predicted_bytes) + " bytes" +
             (a.predicted_state_bytes > 0 ? ", of which " + format_bytes(a.predicted_state_bytes) + " recurrent state"
                                          : std::string()) +
             ")"},
        {"requested", format_bytes(a.requested_bytes) + " (" + format_count(a.requested_bytes) + " bytes, " +
                          format_count(a.allocations) + " allocations)" +
                          (a.requested_bytes == a.predicted_bytes ? " = predicted" : " ≠ predicted")},
        {"measured", format_bytes(a.measured_bytes) + " (" + format_count(a.measured_bytes) + " bytes; " +
                         (diff >= 0 ? "+" : "") + format_signed_bytes(diff) + " against requested; granularity " +
                         format_bytes(a.granularity_bytes) + ", from " + a.granularity_source + ")"},
        {"workspace",
         format_bytes(a.workspace_bytes) + " (the attention's scratch: scores and outputs; not part of the cache)"},
        {"context", a.context_bytes ? format_bytes(a.context_bytes) +
                                          " in use on the device before the cache (CUDA context and other processes)"
                                    : "none (host memory)"},
        {"attention", fixed(at.median_ms, 2) + " ms per decode step (median of " + std::to_string(at.runs) + ", min " +
                          fixed(at.min_ms, 2) + " ms)"},
        {"KV read", format_bytes(at.kv_bytes_read) + " per step at " + fixed(at.kv_read_gbps, 1) + " GB/s"},
        {"ceiling", fixed(at.ceiling_gbps, 1) + " GB/s read-only pass, same run → " +
                        fixed(at.fraction_of_ceiling * 100, 0) + "% of it" +
                        (at.threads > 1 ? " (one thread: " + fixed(at.single_thread_gbps, 1) + " GB/s)" : "")},
        {"accuracy", "max relative error " + scientific(at.max_rel_error) + " against float64"},
        {"kernel", at.kernel},
    });
    if (at.runs == 0) {  // nothing attends (a pure state-space model): the allocation rows only
        r.out = r.out.substr(0, r.out.find("attention:"));
        r.out += "attention:  none — no layer keeps a KV cache; the recurrent state was allocated and measured\n";
    }
    for (const auto& n : attention_notes(at, p.device.host_memory)) r.out += "note: " + n + "\n";
    for (const auto& w : warnings) r.out += "warning: " + w + "\n";
    return r;
}

Output cmd_stopwatch(const Options& o) {
    auto backend = backend_of(o);
    if (!backend.backend) return unavailable("stopwatch", o, backend);
    probe::StopwatchRequest request;
    if (o.tokens && (*o.tokens == 0 || *o.tokens > static_cast<std::uint64_t>(probe::kMaxStopwatchTokens)))
        return {"",
                "kvscope-cli stopwatch: --tokens: " + format_count(*o.tokens) + " is outside 1 … " +
                    format_count(static_cast<std::uint64_t>(probe::kMaxStopwatchTokens)) +
                    " (the teaching model's positions)\n",
                kExitUsage};
    if (o.tokens) request.tokens = static_cast<int>(*o.tokens);
    if (o.prompt) request.prompt = *o.prompt;
    const probe::StopwatchReport w = backend.backend->stopwatch(request, make_control(o));
    Output r;
    r.status = exit_status(w.status);
    double cached = 0, uncached = 0;
    for (double ms : w.cached_ms) cached += ms;
    for (double ms : w.uncached_ms) uncached += ms;
    if (o.format == Format::json) {
        Value v = Value::object();
        v.set("status", Value::string(std::string(to_string(w.status))));
        v.set("message", Value::string(w.message));
        v.set("backend", Value::string(w.device.backend));
        v.set("device", device_json(w.device));
        v.set("tokens", Value::number(std::uint64_t(w.cached_ms.size())));
        Value c = Value::array(), u = Value::array();
        for (double ms : w.cached_ms) c.push(Value::number(ms));
        for (double ms : w.uncached_ms) u.push(Value::number(ms));
        v.set("cached_ms", std::move(c));
        v.set("uncached_ms", std::move(u));
        v.set("cached_total_ms", Value::number(cached));
        v.set("uncached_total_ms", Value::number(uncached));
        v.set("text_cached", Value::string(w.text_cached));
        v.set("text_uncached", Value::string(w.text_uncached));
        v.set("tokens_identical", Value::boolean(w.tokens_identical));
        v.set("max_logit_diff", Value::number(w.max_logit_diff));
        v.set("speedup", Value::number(w.speedup));
        v.set("speedup_bound", Value::number(w.speedup_bound));
        v.set("note", Value::string(probe::stopwatch_gap_note(w)));  // empty unless the ratio is far below the bound
        r.out = v.dump() + "\n";
        return r;
    }
    if (w.status != Status::ok) {
        r.err = "kvscope-cli stopwatch: " + std::string(to_string(w.status)) + ": " + w.message + "\n";
        return r;
    }
    // Cumulative time at a few points: straight with the cache, bending upwards without.
    Table t({"token", "cached ms", "recomputed ms", "cum. cached", "cum. recomputed"});
    double cum_c = 0, cum_u = 0;
    const std::size_t n = w.cached_ms.size();
    for (std::size_t i = 0; i < n; ++i) {
        cum_c += w.cached_ms[i];
        cum_u += w.uncached_ms[i];
        if ((i + 1) % std::max<std::size_t>(1, n / 8) == 0 || i + 1 == n)
            t.add({std::to_string(i + 1), fixed(w.cached_ms[i], 3), fixed(w.uncached_ms[i], 3), fixed(cum_c, 1),
                   fixed(cum_u, 1)});
    }
    r.out = "backend:  " + w.device.backend + " — " + w.device.name + "\n" + t.text() +
            "\nwith the cache:  " + w.text_cached + "\nrecomputing:     " + w.text_uncached + "\n" + w.message +
            ", largest logit difference " + scientific(w.max_logit_diff) + "\n";
    if (const std::string note = probe::stopwatch_gap_note(w); !note.empty()) r.out += "note: " + note + "\n";
    return r;
}

}  // namespace kvscope::cli
