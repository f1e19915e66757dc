#include "catalog_commands.h"

#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/report_json.h"
#include "table.h"

namespace kvscope::cli {

using json::Value;

namespace {

// One more token of one sequence in the model's own KV format; none when its shape is invalid.
std::optional<std::uint64_t> bytes_per_token(const CatalogModel& m) {
    const auto kv = kv_cache_report(m.model.arch, m.model.kv_dtype, Workload{.context_tokens = 1});
    return kv ? std::optional<std::uint64_t>(kv->bytes_per_token) : std::nullopt;
}

// models --local: what the Hugging Face cache, Ollama and LM Studio hold here, and where each was looked for.
Output cmd_local_models(const Options& o) {
    Output r;
    const LocalRoots roots = local_roots_from_environment();
    const std::vector<LocalModel> models = scan_local_models(roots);
    const std::vector<std::pair<LocalStore, std::string>> searched{{LocalStore::huggingface, roots.huggingface},
                                                                   {LocalStore::ollama, roots.ollama},
                                                                   {LocalStore::lm_studio, roots.lm_studio}};
    if (o.format == Format::json) {
        Value list = Value::array();
        for (const auto& m : models) {
            Value x = Value::object();
            x.set("id", Value::string(m.id));
            x.set("store", Value::string(std::string(to_string(m.store))));
            x.set("format", Value::string(m.gguf ? "gguf" : "config.json"));
            x.set("path", Value::string(m.path));
            x.set("ready", Value::boolean(m.problem.empty()));  // false: found, but not a model that loads as it is
            if (!m.problem.empty()) x.set("problem", Value::string(m.problem));
            list.push(std::move(x));
        }
        Value where = Value::object();
        for (const auto& [store, path] : searched) where.set(std::string(to_string(store)), Value::string(path));
        Value root = Value::object();
        root.set("models", std::move(list));
        root.set("searched", std::move(where));
        r.out = root.dump() + "\n";
        return r;
    }
    if (o.format == Format::csv) {
        Table t({"id", "found in", "format", "path", "problem"});
        for (const auto& m : models)
            t.add({m.id, std::string(to_string(m.store)), m.gguf ? "GGUF" : "config.json", m.path, m.problem});
        r.out = t.csv();
        return r;
    }
    // The table holds the models that load; a download that did not finish (or another that cannot be read as it
    // is) is listed apart, with why, never among them.
    Table t({"id", "found in", "format", "path"});
    std::string problems;
    std::size_t ready = 0;
    for (const auto& m : models) {
        if (!m.problem.empty()) {
            problems += "  " + m.id + ": " + m.problem + "\n";
            continue;
        }
        t.add({m.id, std::string(to_string(m.store)), m.gguf ? "GGUF" : "config.json", m.path});
        ++ready;
    }
    if (!problems.empty()) problems = "Found, but not readable as found:\n" + problems;
    std::string where;
    for (const auto& [store, path] : searched)
        where += "  " + std::string(to_string(store)) + ": " + (path.empty() ? "(no home folder)" : path) + "\n";
    r.out = (models.empty()
                 ? "No models found. Searched:\n"
                 : (ready > 0 ? t.text() : std::string("No model here loads as it is.\n")) + problems + "Searched:\n") +
            where + "Use one with --model ID (as listed), or --gguf FILE / --model-dir DIR.\n";
    return r;
}

}  // namespace

Output cmd_models(const Options& o, const Catalog& catalog) {
    if (o.local) return cmd_local_models(o);
    Output r;
    if (o.format == Format::json) {
        Value list = Value::array();
        for (const auto& m : catalog.models()) {
            Value x = architecture_report_json(m.model.arch);
            x.set("id", Value::string(m.id));
            x.set("hf_repo", Value::string(m.hf_repo));
            x.set("kv_dtype", Value::string(std::string(to_string(m.model.kv_dtype))));
            x.set("bytes_per_token", Value::number(bytes_per_token(m).value_or(0)));
            x.set("source", Value::string(m.source));
            x.set("origin", Value::string(m.origin));
            list.push(std::move(x));
        }
        Value root = Value::object();
        root.set("models", std::move(list));
        r.out = root.dump() + "\n";
        return r;
    }
    // CSV: exact figures under the JSON's names, for a spreadsheet; the table below is for reading.
    if (o.format == Format::csv) {
        Table c({"id", "name", "layers", "query_heads", "kv_heads", "head_dim", "attention", "max_positions",
                 "parameters", "parameters_estimated", "kv_dtype", "bytes_per_token"});
        for (const auto& m : catalog.models()) {
            const auto& a = m.model.arch;
            const auto p = parameters(a);
            const auto per_token = bytes_per_token(m);
            c.add({m.id, m.name, std::to_string(a.layers), std::to_string(a.query_heads), std::to_string(a.kv_heads),
                   std::to_string(a.head_dim_k),
                   a.attention_layers() == 0 ? std::string("none") : std::string(to_string(attention_kind(a))),
                   a.max_positions ? std::to_string(a.max_positions) : std::string(), std::to_string(p.total),
                   p.estimated ? "true" : "false", std::string(to_string(m.model.kv_dtype)),
                   per_token ? std::to_string(*per_token) : std::string()});
        }
        r.out = c.csv();
        return r;
    }
    Table t(
        {"id", "name", "layers", "heads q/kv", "head dim", "attention", "max ctx", "params", "KV dtype", "KV/token"});
    for (const auto& m : catalog.models()) {
        const auto& a = m.model.arch;
        const auto per_token = bytes_per_token(m);
        const auto p = parameters(a);
        t.add({m.id, m.name, std::to_string(a.layers),
               std::to_string(a.query_heads) + "/" + (a.mla ? std::string("latent") : std::to_string(a.kv_heads)),
               std::to_string(a.head_dim_k),
               attention_label(a) + (a.has_sliding_layers() ? "+SWA" : "") +
                   (a.count_layers(LayerKind::chunked) ? "+chunked" : "") + (a.state_layers() ? "+state" : ""),
               a.max_positions ? format_tokens(a.max_positions) : "—",
               format_si(static_cast<double>(p.total)) + (p.estimated ? "~" : ""),
               std::string(to_string(m.model.kv_dtype)), per_token ? format_bytes(*per_token, o.units) : "?"});
    }
    r.out = t.text() + "(params ending in ~ are estimated from the architecture)\n";
    return r;
}

Output cmd_gpus(const Options& o, const Catalog& catalog) {
    Output r;
    if (o.format == Format::json) {
        Value list = Value::array();
        for (const auto& g : catalog.gpus()) {
            Value x = Value::object();
            x.set("id", Value::string(g.id));
            x.set("name", Value::string(g.name));
            x.set("memory_bytes", Value::number(g.memory_bytes));
            x.set("bandwidth_bytes_per_s", Value::number(g.bandwidth_bytes_per_s));
            // 0 is no vendor figure: null, never a number that looks like one.
            x.set("bf16_tflops", g.bf16_tflops > 0 ? Value::number(g.bf16_tflops) : Value());
            // A unified-memory computer: the machine's memory (memory_bytes is its GPU's share) and the rule.
            x.set("unified_memory_bytes", g.unified_memory_bytes > 0 ? Value::number(g.unified_memory_bytes) : Value());
            x.set("share_rule", g.share_rule.empty() ? Value() : Value::string(g.share_rule));
            x.set("source", Value::string(g.source));
            list.push(std::move(x));
        }
        Value root = Value::object();
        root.set("gpus", std::move(list));
        r.out = root.dump() + "\n";
        return r;
    }
    // CSV: exact figures under the JSON's names; the table is for reading.
    if (o.format == Format::csv) {
        Table c({"id", "name", "memory_bytes", "bandwidth_bytes_per_s", "bf16_tflops", "unified_memory_bytes"});
        for (const auto& g : catalog.gpus())
            c.add({g.id, g.name, std::to_string(g.memory_bytes), std::to_string(g.bandwidth_bytes_per_s),
                   g.bf16_tflops > 0 ? number_text(g.bf16_tflops) : std::string(),
                   g.unified_memory_bytes > 0 ? std::to_string(g.unified_memory_bytes) : std::string()});
        r.out = c.csv();
        return r;
    }
    Table t({"id", "name", "memory", "bandwidth", "bf16 dense"});
    for (const auto& g : catalog.gpus())
        t.add({g.id, g.name,
               format_bytes_both(g.memory_bytes, o.units) +
                   (g.unified_memory_bytes > 0 ? " of " + format_bytes(g.unified_memory_bytes, o.units) + " unified"
                                               : std::string()),
               fixed(static_cast<double>(g.bandwidth_bytes_per_s) / 1e12, 2) + " TB/s",
               g.bf16_tflops > 0 ? fixed(g.bf16_tflops, 0) + " TFLOP/s" : std::string("—")});
    r.out = t.text();
    if (std::ranges::any_of(catalog.gpus(), [](const GpuSpec& g) { return g.bf16_tflops <= 0; }))
        r.out += "(— no dense bf16 figure in a vendor document; memory and bandwidth decide the decode floor)\n";
    return r;
}

}  // namespace kvscope::cli
