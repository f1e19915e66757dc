#include "kvscope/calculator/catalog.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/text_file.h"
#include "kvscope/calculator/units.h"
#include "kvscope/resources/embedded.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;
using json::Value;

std::string string_field(const Value& obj, const char* key) {
    const Value* v = obj.find(key);
    return v && v->is_string() ? v->as_string() : std::string();
}

std::vector<std::string> string_list(const Value& obj, const char* key) {
    std::vector<std::string> out;
    if (const Value* v = obj.find(key); v && v->is_array())
        for (const auto& item : v->items())
            if (item.is_string()) out.push_back(item.as_string());
    return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::vector<std::string> suggest(std::string_view key, const std::vector<std::vector<std::string>>& names) {
    const std::string k = ascii_lower(key);
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& group : names) {
        std::size_t best = std::string::npos;
        for (const auto& n : group) {
            if (n.empty()) continue;
            const std::string l = ascii_lower(n);
            const std::size_t d = l.find(k) != std::string::npos || (k.size() >= 3 && k.find(l) != std::string::npos)
                                      ? 0
                                      : edit_distance(k, l);
            best = std::min(best, d);
        }
        if (best <= std::max<std::size_t>(2, k.size() / 3)) scored.emplace_back(best, group.front());
    }
    std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scored.size() && i < 5; ++i) out.push_back(scored[i].second);
    return out;
}

// Every name an entry answers to, its id first.
std::vector<std::string> names_of(const CatalogModel& m) { return model_names(m); }
std::vector<std::string> names_of(const GpuSpec& g) {
    std::vector<std::string> n{g.id, g.name};
    n.insert(n.end(), g.aliases.begin(), g.aliases.end());
    return n;
}

template <class Entry>
const Entry* find_by_name(const std::vector<Entry>& entries, std::string_view key) {
    const std::string k = ascii_lower(key);
    for (const auto& e : entries)
        for (const auto& n : names_of(e))
            if (ascii_lower(n) == k) return &e;
    return nullptr;
}

template <class Entry>
std::vector<std::string> suggest_by_name(const std::vector<Entry>& entries, std::string_view key) {
    std::vector<std::vector<std::string>> names;
    names.reserve(entries.size());
    for (const auto& e : entries) names.push_back(names_of(e));
    return suggest(key, names);
}

// Reads a catalog index (models/catalog.json) whose files come from `read`.
void load_models(const std::string& index_text, const std::string& index_source,
                 const std::function<Result<std::string>(const std::string&)>& read, const std::string& origin,
                 const std::function<void(CatalogModel)>& add, std::vector<std::string>& problems) {
    const auto parsed = json::parse(index_text);
    if (!parsed) {
        problems.push_back(index_source + ":" + std::to_string(parsed.error.line) + ":" +
                           std::to_string(parsed.error.column) + ": " + parsed.error.message);
        return;
    }
    const Value* list = parsed.value->find("models");
    if (!list || !list->is_array()) {
        problems.push_back(index_source + ": needs a \"models\" array");
        return;
    }
    for (const auto& entry : list->items()) {
        const std::string id = ascii_lower(string_field(entry, "id"));
        const std::string file = string_field(entry, "file");
        if (id.empty() || file.empty()) {
            problems.push_back(index_source + ":" + std::to_string(entry.line()) +
                               ": an entry needs \"id\" and \"file\"");
            continue;
        }
        auto text = read(file);
        if (!text) {
            problems.push_back(text.error_text());
            continue;
        }
        auto imported = import_config(*text, origin.empty() ? file : origin + "/" + file);
        if (!imported) {
            problems.push_back(imported.error_text());
            continue;
        }
        CatalogModel m;
        m.id = id;
        m.name = string_field(entry, "name");
        if (m.name.empty()) m.name = id;
        m.hf_repo = string_field(entry, "hf_repo");
        if (m.hf_repo.empty()) m.hf_repo = imported->hf_repo;
        m.source = string_field(entry, "source");
        m.aliases = string_list(entry, "aliases");
        m.model = std::move(imported).value();
        if (const Value* p = entry.find("parameters"))
            if (auto n = p->as_u64()) m.model.arch.params_total = *n;
        if (const Value* p = entry.find("active_parameters"))
            if (auto n = p->as_u64()) {
                m.model.arch.params_active = *n;
                // OpenAI's active counts (the gpt-oss model card: 3.6 B of gpt-oss-20b = its layers' active weights
                // and the unembedding) leave out the input embedding, which every other count here includes and the
                // decode estimate takes out again (decode.cpp matmul_parameters): it is added back, so that the LM
                // head a step reads is not taken out with it.
                if (const Value* x = entry.find("active_parameters_exclude_embedding");
                    x != nullptr && x->is_bool() && x->as_bool()) {
                    const Checked with = Checked(*n) + Checked(m.model.arch.vocab_size) * m.model.arch.hidden_size;
                    if (!with.overflow()) m.model.arch.params_active = with.value();
                }
            }
        m.model.arch.name = m.name;
        m.origin = origin.empty() ? "built-in" : origin + "/" + file;
        add(std::move(m));
    }
}

}  // namespace

Result<std::vector<GpuSpec>> parse_gpu_list(std::string_view text, const std::string& source) {
    const auto parsed = json::parse(text);
    if (!parsed)
        return FieldError{"gpus.json", source + ":" + std::to_string(parsed.error.line) + ":" +
                                           std::to_string(parsed.error.column) + ": " + parsed.error.message};
    const Value* list = parsed.value->find("gpus");
    if (!list || !list->is_array()) return FieldError{"gpus.json", source + ": needs a \"gpus\" array"};
    std::vector<GpuSpec> out;
    Errors errors;
    for (const auto& entry : list->items()) {
        const std::string at = source + ":" + std::to_string(entry.line()) + ": ";
        GpuSpec g;
        g.id = ascii_lower(string_field(entry, "id"));
        g.name = string_field(entry, "name");
        g.source = string_field(entry, "source");
        g.aliases = string_list(entry, "aliases");
        const Value* mem = entry.find("memory_bytes");
        const Value* bw = entry.find("bandwidth_bytes_per_s");
        const Value* tf = entry.find("bf16_tflops");
        std::uint64_t mem_v = mem ? mem->as_u64().value_or(0) : 0;
        // Unified memory: the machine's memory and the share its GPU may use (memory_bytes is that share).
        if (const Value* unified = entry.find("unified_memory_bytes")) {
            const Value* share = entry.find("gpu_share");
            const std::uint64_t total = unified->as_u64().value_or(0);
            const double f = share && share->is_number() ? share->as_double() : 0;
            if (total == 0 || !(f > 0 && f <= 1)) {
                errors.push_back({"gpu_share", at + g.id +
                                                   ": a unified-memory entry needs unified_memory_bytes above 0 and a "
                                                   "gpu_share above 0 and at most 1"});
                continue;
            }
            g.unified_memory_bytes = total;
            g.gpu_share = f;
            g.share_rule = string_field(entry, "share_rule");
            // memory_bytes given (a raised limit in the user's own file): that share, within the machine.
            if (mem_v > total) {
                errors.push_back({"memory_bytes", at + g.id + ": memory_bytes is more than unified_memory_bytes"});
                continue;
            }
            if (mem_v == 0) mem_v = static_cast<std::uint64_t>(static_cast<double>(total) * f);
        }
        const std::uint64_t bw_v = bw ? bw->as_u64().value_or(0) : 0;
        if (g.id.empty())
            errors.push_back({"id", at + "a GPU entry needs an \"id\""});
        else if (mem_v == 0)
            errors.push_back({"memory_bytes", at + g.id + ": memory_bytes must be a whole number above 0"});
        else if (bw_v == 0)
            errors.push_back(
                {"bandwidth_bytes_per_s", at + g.id + ": bandwidth_bytes_per_s must be a whole number above 0"});
        else {
            g.memory_bytes = mem_v;
            g.bandwidth_bytes_per_s = bw_v;
            g.bf16_tflops = tf && tf->is_number() ? tf->as_double() : 0.0;
            if (g.name.empty()) g.name = g.id;
            out.push_back(std::move(g));
        }
    }
    if (!errors.empty()) return errors;
    return out;
}

std::string name_with_memory(const GpuSpec* base, const std::string& name, std::uint64_t memory_bytes) {
    if (base == nullptr) return name + " with " + format_bytes(memory_bytes);
    return base->name + (memory_bytes == base->memory_bytes ? "" : " with " + format_bytes(memory_bytes));
}

const Catalog& Catalog::builtin() {
    static const Catalog catalog = [] {
        Catalog c;
        auto find = [](const std::string& path) -> Result<std::string> {
            for (const auto& f : resources::files())
                if (f.path == path) return std::string(f.content);
            return FieldError{"file", path + ": not compiled in"};
        };
        std::vector<std::string> problems;
        auto index = find("models/catalog.json");
        if (!index) throw std::logic_error(index.error_text());
        load_models(
            *index, "models/catalog.json", [&](const std::string& file) { return find("models/" + file); }, "",
            [&](CatalogModel m) { c.upsert(std::move(m)); }, problems);
        auto gpus = find("gpus.json");
        if (!gpus) throw std::logic_error(gpus.error_text());
        auto list = parse_gpu_list(*gpus, "gpus.json");
        if (!list)
            problems.push_back(list.error_text());
        else
            for (auto& g : list.value()) c.upsert(std::move(g));
        // The compiled-in data is tested; a broken entry is a build defect, not user input.
        if (!problems.empty()) throw std::logic_error("built-in catalog: " + problems.front());
        return c;
    }();
    return catalog;
}

Catalog Catalog::with_user_folder(const std::string& folder, std::vector<std::string>& problems) {
    Catalog c = builtin();
    if (!folder.empty()) c.add_folder(folder, problems);
    c.user_folder_ = folder;
    return c;
}

void Catalog::add_folder(const std::string& folder, std::vector<std::string>& problems) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) return;
    const fs::path models = fs::path(folder) / "models";
    if (fs::is_directory(models, ec)) {
        std::vector<std::string> listed;
        auto read = [&](const std::string& file) { return read_text_file((models / file).string(), 16ull << 20); };
        const fs::path index = models / "catalog.json";
        if (fs::exists(index, ec)) {
            if (auto text = read_text_file(index.string()); text)
                load_models(
                    *text, index.string(),
                    [&](const std::string& f) {
                        listed.push_back(f);
                        return read(f);
                    },
                    models.string(), [&](CatalogModel m) { upsert(std::move(m)); }, problems);
            else
                problems.push_back(text.error_text());
        }
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(models, ec))
            if (entry.path().extension() == ".json" && entry.path().filename() != "catalog.json")
                files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        for (const auto& path : files) {
            if (std::find(listed.begin(), listed.end(), path.filename().string()) != listed.end()) continue;
            auto imported = import_config_file(path.string());
            if (!imported) {
                problems.push_back(imported.error_text());
                continue;
            }
            CatalogModel m;
            m.id = ascii_lower(path.stem().string());
            m.name = path.stem().string();
            m.hf_repo = imported->hf_repo;
            m.model = std::move(imported).value();
            m.model.arch.name = m.name;
            m.origin = path.string();
            m.source = path.string();
            upsert(std::move(m));
        }
    }
    const fs::path gpus = fs::path(folder) / "gpus.json";
    if (fs::exists(gpus, ec)) {
        auto text = read_text_file(gpus.string());
        auto list = text ? parse_gpu_list(*text, gpus.string()) : Result<std::vector<GpuSpec>>(text.errors());
        if (!list)
            problems.push_back(list.error_text());
        else
            for (auto& g : list.value()) upsert(std::move(g));
    }
}

void Catalog::upsert(CatalogModel m) {
    auto it = std::find_if(models_.begin(), models_.end(), [&](const CatalogModel& x) { return x.id == m.id; });
    if (it != models_.end())
        *it = std::move(m);
    else
        models_.push_back(std::move(m));
}

void Catalog::upsert(GpuSpec g) {
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const GpuSpec& x) { return x.id == g.id; });
    if (it != gpus_.end())
        *it = std::move(g);
    else
        gpus_.push_back(std::move(g));
}

const CatalogModel* Catalog::find_model(std::string_view key) const { return find_by_name(models_, key); }
const GpuSpec* Catalog::find_gpu(std::string_view key) const { return find_by_name(gpus_, key); }
std::vector<std::string> Catalog::suggest_models(std::string_view key) const { return suggest_by_name(models_, key); }
std::vector<std::string> Catalog::suggest_gpus(std::string_view key) const { return suggest_by_name(gpus_, key); }

std::string default_user_folder() {
    if (const char* d = std::getenv("KVSCOPE_DATA_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/kvscope";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/kvscope";
    return {};
}

std::vector<std::string> model_names(const CatalogModel& m) {
    std::vector<std::string> n{m.id, m.hf_repo, m.name};
    n.insert(n.end(), m.aliases.begin(), m.aliases.end());
    return n;
}

std::vector<const CatalogModel*> Catalog::matching_models(std::string_view text) const {
    if (const CatalogModel* exact = find_model(text)) return {exact};
    std::vector<const CatalogModel*> out;
    const std::string k = ascii_lower(text);
    if (k.empty()) return out;
    for (const auto& m : models_)
        for (const auto& n : model_names(m))
            if (ascii_lower(n).find(k) != std::string::npos) {
                out.push_back(&m);
                break;
            }
    return out;
}

ModelWeights model_weights_of(const Scenario& s, const Catalog& catalog) {
    if (s.model_weights) return *s.model_weights;
    if (const CatalogModel* m = catalog.find_model(s.model_id)) return m->model.model_weights();
    ModelWeights w;
    if (s.deployment) w.dtype = s.deployment->weight_dtype;
    return w;
}

}  // namespace kvscope
