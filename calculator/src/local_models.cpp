#include "kvscope/calculator/local_models.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/gguf.h"
#include "kvscope/calculator/gguf_import.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/safetensors.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/text_file.h"

namespace kvscope {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// The first line of a small text file (a ref, a pointer to a folder), without its line end; empty when unreadable.
std::string first_line(const std::string& path) {
    const auto text = read_text_file(path, 4096);
    if (!text) return {};
    std::string line = text->substr(0, text->find_first_of("\r\n"));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
}

bool is_gguf(const fs::path& p) { return ascii_lower(p.extension().string()) == ".gguf"; }

// A vision projector ships beside a model's GGUF (mmproj-*.gguf): it is no language model.
bool is_projector(const fs::path& p) { return ascii_lower(p.filename().string()).starts_with("mmproj"); }

// A model listed once: by its file, or by the first piece of a split one (gguf-split's -00001-of-N).
bool is_model_file(const fs::path& p) {
    if (!is_gguf(p) || is_projector(p)) return false;
    const auto split = gguf::split_name(p.filename().string());
    return !split || split->no == 1;
}

std::vector<fs::path> entries(const fs::path& folder, bool directories) {
    std::vector<fs::path> out;
    std::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
        std::error_code e;
        if (directories ? it->is_directory(e) : it->is_regular_file(e)) out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Why a cache repo folder has no snapshot to read (cache_snapshot gave none): no snapshot, or several and a refs/main
// that names none of them (or no refs/main).
std::string no_snapshot_problem(const fs::path& repo) {
    const auto snapshots = entries(repo / "snapshots", true);
    if (snapshots.empty()) return "has no snapshot (the download did not finish?); download it again";
    std::string names;
    for (const auto& s : snapshots) names += (names.empty() ? "" : ", ") + s.filename().string();
    std::error_code error;
    return std::string(fs::exists(repo / "refs" / "main", error) ? "refs/main names none of its "
                                                                 : "has no refs/main to choose one of its ") +
           std::to_string(snapshots.size()) + " snapshots (" + names +
           "); give the snapshot folder itself (--model-dir " + (repo / "snapshots").string() + "/<one of them>)";
}

// huggingface_hub (file_download.py): hub/models--ORG--NAME/{refs/main, snapshots/REVISION/…}; the snapshot refs/main
// names, else the only one (a cache filled with a pinned revision has no refs/main). In a snapshot each file is a
// link to blobs/…, which an interrupted download leaves missing.
void scan_huggingface(const fs::path& hub, std::vector<LocalModel>& out) {
    for (const fs::path& repo : entries(hub, true)) {
        const std::string folder = repo.filename().string();
        if (!folder.starts_with("models--")) continue;
        std::string id = folder.substr(8);
        if (const auto sep = id.find("--"); sep != std::string::npos) id = id.substr(0, sep) + "/" + id.substr(sep + 2);
        const auto found = cache_snapshot(repo.string());
        if (!found) {
            // Listed, so that the model does not seem missing, with what to do.
            out.push_back({id, LocalStore::huggingface, repo.string(), false, no_snapshot_problem(repo)});
            continue;
        }
        const fs::path snapshot(*found);
        const std::size_t before = out.size();
        std::error_code error;
        const fs::path config = snapshot / "config.json";
        if (fs::exists(config, error))
            out.push_back({id, LocalStore::huggingface, snapshot.string(), false, {}});
        else if (fs::is_symlink(config, error))
            out.push_back({id, LocalStore::huggingface, snapshot.string(), false,
                           "its config.json links to a blob that is missing (the download did not finish?); "
                           "download it again"});
        // Each GGUF file is a model too (a GGUF repo, with or without a config.json beside), also one folder down:
        // repos of split quantizations keep each in a folder of its own (unsloth's Q4_K_M/…-00001-of-00002.gguf).
        for (const fs::path& f : entries(snapshot, false))
            if (is_model_file(f))
                out.push_back({id + "/" + f.filename().string(), LocalStore::huggingface, f.string(), true, {}});
        for (const fs::path& sub : entries(snapshot, true))
            for (const fs::path& f : entries(sub, false))
                if (is_model_file(f))
                    out.push_back({id + "/" + sub.filename().string() + "/" + f.filename().string(),
                                   LocalStore::huggingface,
                                   f.string(),
                                   true,
                                   {}});
        // A snapshot of weights without their config.json, or of nothing at all, is a download that did not finish;
        // a repo of an adapter (adapter_config.json), a diffusers pipeline (model_index.json) or a tokenizer alone is
        // no language model, and is not listed.
        const auto files = entries(snapshot, false);
        const bool weights = std::any_of(files.begin(), files.end(), [](const fs::path& f) {
            return f.extension() == ".safetensors" || f.filename() == "model.safetensors.index.json";
        });
        if (out.size() == before &&
            (files.empty() || (weights && !fs::exists(snapshot / "adapter_config.json", error))))
            out.push_back({id, LocalStore::huggingface, snapshot.string(), false,
                           "its snapshot " + snapshot.filename().string() +
                               (files.empty() ? std::string(" is empty") : " holds weights but no config.json") +
                               " (the download did not finish?); download it again"});
    }
}

// Ollama (server/modelpath.go, server/manifest.go): manifests/HOST/NAMESPACE/MODEL/TAG is a JSON manifest whose layer
// of mediaType application/vnd.ollama.image.model is the GGUF, at blobs/sha256-HEX for its digest "sha256:HEX".
void scan_ollama(const fs::path& root, std::vector<LocalModel>& out) {
    for (const fs::path& host : entries(root / "manifests", true))
        for (const fs::path& space : entries(host, true))
            for (const fs::path& model : entries(space, true))
                for (const fs::path& tag : entries(model, false)) {
                    if (tag.filename().string().starts_with('.')) continue;  // .DS_Store, an editor's backup
                    // "ollama list" names library models "MODEL:TAG", others "NAMESPACE/MODEL:TAG", and models of
                    // another registry with its host in front.
                    const std::string h = host.filename().string(), s = space.filename().string();
                    std::string id = model.filename().string() + ":" + tag.filename().string();
                    if (h != "registry.ollama.ai")
                        id = h + "/" + s + "/" + id;
                    else if (s != "library")
                        id = s + "/" + id;
                    LocalModel found{id, LocalStore::ollama, tag.string(), true,
                                     "its manifest " + tag.string() + " names no model layer (" +
                                         "application/vnd.ollama.image.model); run ollama pull " + id};
                    const auto text = read_text_file(tag.string(), 1 << 20);
                    const auto parsed = text ? json::parse(*text) : json::ParseResult{};
                    if (!text)  // no permission to read (a service's store): pulling again would not help
                        found.problem = "its manifest " + text.errors().front().message;
                    else if (!parsed)
                        found.problem = "its manifest " + tag.string() + " is not JSON (" + parsed.error.message +
                                        "); run ollama pull " + id;
                    const json::Value* layers = parsed ? parsed.value->find("layers") : nullptr;
                    for (const json::Value& layer :
                         layers && layers->is_array() ? layers->items() : std::vector<json::Value>{}) {
                        const json::Value* type = layer.find("mediaType");
                        const json::Value* digest = layer.find("digest");
                        if (!type || !type->is_string() || type->as_string() != "application/vnd.ollama.image.model" ||
                            !digest || !digest->is_string())
                            continue;
                        std::string blob = digest->as_string();
                        std::replace(blob.begin(), blob.end(), ':', '-');
                        if (blob.find('/') != std::string::npos) {
                            found.problem = "its manifest's model digest '" + digest->as_string() +
                                            "' names no blob; run ollama pull " + id;
                            break;
                        }
                        const fs::path file = root / "blobs" / blob;
                        std::error_code error;
                        found.path = file.string();
                        if (!fs::is_regular_file(file, error))
                            found.problem = "its weights file " + file.string() +
                                            " is missing (the pull did not finish?); run ollama pull " + id;
                        else if (fs::file_size(file, error) == 0)
                            found.problem = "its weights file " + file.string() +
                                            " is empty (the pull did not finish?); run ollama pull " + id;
                        else
                            found.problem.clear();
                        break;
                    }
                    out.push_back(std::move(found));
                }
}

// LM Studio: MODELS/PUBLISHER/REPO/FILE.gguf.
void scan_lm_studio(const fs::path& root, std::vector<LocalModel>& out) {
    for (const fs::path& publisher : entries(root, true))
        for (const fs::path& repo : entries(publisher, true))
            for (const fs::path& f : entries(repo, false))
                if (is_model_file(f))
                    out.push_back(
                        {publisher.filename().string() + "/" + repo.filename().string() + "/" + f.filename().string(),
                         LocalStore::lm_studio,
                         f.string(),
                         true,
                         {}});
}

}  // namespace

std::optional<std::string> cache_snapshot(const std::string& repo_folder) {
    const fs::path repo(repo_folder);
    std::error_code error;
    const std::string revision = first_line((repo / "refs" / "main").string());
    if (!revision.empty() && revision.find('/') == std::string::npos &&
        fs::is_directory(repo / "snapshots" / revision, error))
        return (repo / "snapshots" / revision).string();
    const auto snapshots = entries(repo / "snapshots", true);
    if (snapshots.size() != 1) return std::nullopt;
    return snapshots.front().string();
}

std::string_view to_string(LocalStore store) {
    switch (store) {
        case LocalStore::huggingface:
            return "Hugging Face cache";
        case LocalStore::ollama:
            return "Ollama";
        case LocalStore::lm_studio:
            return "LM Studio";
    }
    return "";
}

LocalRoots local_roots_from_environment() {
    LocalRoots r;
    const std::string home = env("HOME");
    if (const std::string hub = env("HF_HUB_CACHE"); !hub.empty())
        r.huggingface = hub;
    else if (const std::string legacy = env("HUGGINGFACE_HUB_CACHE"); !legacy.empty())
        r.huggingface = legacy;
    else if (const std::string hf = env("HF_HOME"); !hf.empty())
        r.huggingface = hf + "/hub";
    else if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
        r.huggingface = xdg + "/huggingface/hub";
    else if (!home.empty())
        r.huggingface = home + "/.cache/huggingface/hub";
    if (const std::string o = env("OLLAMA_MODELS"); !o.empty()) {
        r.ollama = o;
    } else {
        // The Linux installer's service keeps its models in the ollama user's home (scripts/install.sh), where a
        // user who never ran `ollama serve` themselves has theirs.
        std::error_code error;
        r.ollama = home.empty() ? std::string() : home + "/.ollama/models";
        if ((r.ollama.empty() || !fs::is_directory(r.ollama, error)) &&
            fs::is_directory("/usr/share/ollama/.ollama/models", error))
            r.ollama = "/usr/share/ollama/.ollama/models";
    }
    if (!home.empty()) {
        // lmstudio-js / lms (resolveModelsFolderPath): the home named in ~/.lmstudio-home-pointer, else
        // ~/.cache/lm-studio when it exists, else ~/.lmstudio; its models/ folder unless settings.json names a
        // downloadsFolder.
        std::error_code error;
        std::string lm_home = home + "/.lmstudio";
        const std::string pointer_file = home + "/.lmstudio-home-pointer";
        if (fs::exists(pointer_file, error)) {
            if (const std::string pointer = first_line(pointer_file); !pointer.empty()) lm_home = pointer;
        } else if (fs::is_directory(home + "/.cache/lm-studio", error)) {
            lm_home = home + "/.cache/lm-studio";
        }
        r.lm_studio = lm_home + "/models";
        if (const auto settings = read_text_file(lm_home + "/settings.json", 1 << 20)) {
            const auto parsed = json::parse(*settings);
            const json::Value* folder =
                parsed && parsed.value->is_object() ? parsed.value->find("downloadsFolder") : nullptr;
            if (folder && folder->is_string() && !folder->as_string().empty()) r.lm_studio = folder->as_string();
        }
    }
    return r;
}

std::vector<LocalModel> scan_local_models(const LocalRoots& roots) {
    std::vector<LocalModel> out;
    if (!roots.huggingface.empty()) scan_huggingface(roots.huggingface, out);
    if (!roots.ollama.empty()) scan_ollama(roots.ollama, out);
    if (!roots.lm_studio.empty()) scan_lm_studio(roots.lm_studio, out);
    return out;
}

Result<ImportedModel> import_model_path(const std::string& path) {
    std::error_code error;
    const fs::path p(path);
    if (!fs::exists(p, error)) return FieldError{"file", path + ": no such file or folder"};
    if (!fs::is_directory(p, error)) {
        if (is_gguf(p)) return gguf::import_file(path);
        // Not named .gguf: the magic decides (an Ollama blob has no extension).
        std::array<char, 4> magic{};
        if (std::ifstream in(path, std::ios::binary);
            in.read(magic.data(), 4) && std::string_view(magic.data(), 4) == "GGUF")
            return gguf::import_file(path);
        return import_config_file(path);
    }
    if (fs::is_directory(p / "snapshots", error)) {  // a Hugging Face cache repo folder: its snapshot
        const auto snapshot = cache_snapshot(path);
        if (!snapshot)
            return FieldError{"file", path +
                                          ": has no snapshot that refs/main names, and not exactly one; give the "
                                          "snapshot folder itself"};
        return import_model_path(*snapshot);
    }
    const fs::path config = p / "config.json";
    if (!fs::exists(config, error)) {
        std::vector<fs::path> ggufs;
        for (const fs::path& f : entries(p, false))
            if (is_model_file(f)) ggufs.push_back(f);
        if (ggufs.size() == 1) return gguf::import_file(ggufs.front().string());
        return FieldError{"file", path + ": holds no config.json" +
                                      (ggufs.empty() ? std::string(" and no .gguf file")
                                                     : " and " + std::to_string(ggufs.size()) +
                                                           " .gguf files; name the one to read")};
    }
    auto imported = import_config_file(config.string());
    if (!imported) return imported;
    bool has_weights = fs::exists(p / "model.safetensors.index.json", error);
    for (const fs::path& f : entries(p, false)) has_weights = has_weights || f.extension() == ".safetensors";
    if (!has_weights) {
        imported.value().notes.push_back("no safetensors weights in " + path +
                                         ": the weights are estimated from the parameter count");
        return imported;
    }
    const auto files = safetensors::read_weights(path);
    if (!files) return files.errors();
    // A config whose format the float files cannot be served in as they load: counted as stored, and said.
    const auto served = files->served_in(imported.value().weight_dtype);
    if (!served)
        imported.value().notes.push_back("the config's weight format " +
                                         std::string(to_string(imported.value().weight_dtype)) +
                                         " is not one the float files become as an engine loads them; counted as the "
                                         "files store them");
    const safetensors::Weights& weights = served ? *served : *files;
    imported.value().weights_bytes = weights.bytes;
    imported.value().weights_source = weights.source_text();
    return imported;
}

Result<ImportedModel> import_local_model(const LocalModel& model) {
    if (!model.problem.empty())
        return FieldError{"model", model.id + " (" + std::string(to_string(model.store)) + "): " + model.problem};
    // An Ollama blob is a GGUF by what Ollama says of it, whatever its bytes (an interrupted pull): read as one, so
    // that its problems are a GGUF's, never a config.json's.
    auto imported = model.store == LocalStore::ollama ? gguf::import_file(model.path) : import_model_path(model.path);
    if (imported) {
        imported.value().notes.push_back("found on this machine (" + std::string(to_string(model.store)) +
                                         "): " + model.path);
        // An Ollama blob is named by its digest: the model's name is what Ollama calls it.
        std::string& name = imported.value().arch.name;
        if (name.empty() || name.starts_with("sha256-")) name = model.id;
        // A model of Ollama's store is run by Ollama: its rules, not llama-server's defaults (ollama.h).
        if (model.store == LocalStore::ollama) imported.value().engine = Engine::ollama;
    }
    return imported;
}

Result<std::optional<FoundModel>> find_model(const std::string& spec, const Catalog& catalog, NamesPaths paths) {
    using Found = std::optional<FoundModel>;
    const auto from_path = [&spec]() -> Result<Found> {
        auto imported = import_model_path(spec);
        if (!imported) return imported.errors();
        return Found(FoundModel{std::move(imported.value()), spec});
    };
    if (const CatalogModel* m = catalog.find_model(spec)) return Found(FoundModel{m->model, m->id, m});
    std::error_code error;
    if (paths == NamesPaths::yes && std::filesystem::exists(std::filesystem::path(spec), error)) return from_path();
    const std::vector<LocalModel> local = scan_local_models(local_roots_from_environment());
    if (const LocalModel* found = find_local_model(local, spec)) {
        auto imported = import_local_model(*found);
        if (!imported) return imported.errors();
        return Found(FoundModel{std::move(imported.value()), found->id});
    }
    const bool path_like = spec.starts_with('/') || spec.starts_with('.') || spec.ends_with(".json") ||
                           spec.ends_with(".gguf") || spec.find('\\') != std::string::npos;
    if (paths == NamesPaths::yes && path_like) return from_path();
    return Found();
}

const LocalModel* find_local_model(const std::vector<LocalModel>& models, std::string_view key) {
    // Cache folders may differ only in case (models--Qwen--Qwen3-8B, models--Qwen--qwen3-8b): the exact spelling
    // first, then any case; among matches, one that can be read before one that cannot.
    const std::string k = ascii_lower(key);
    const LocalModel* best = nullptr;
    const auto rank = [&](const LocalModel& m) { return (m.id == key ? 0 : 2) + (m.problem.empty() ? 0 : 1); };
    for (const LocalModel& m : models)
        if (ascii_lower(m.id) == k && (best == nullptr || rank(m) < rank(*best))) best = &m;
    if (best) return best;
    // Ollama reads a name without a tag as NAME:latest (types/model/name.go).
    if (k.find(':') == std::string::npos)
        for (const LocalModel& m : models)
            if (m.store == LocalStore::ollama && ascii_lower(m.id) == k + ":latest") return &m;
    return nullptr;
}

}  // namespace kvscope
