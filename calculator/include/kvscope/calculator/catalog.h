#pragma once
// The models and GPUs KVScope knows by name: compiled in, and extended or
// overridden by the user's own folder (models/*.json and gpus.json).

#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope {

struct CatalogModel {
    std::string id;       // "llama-3-8b"
    std::string name;     // "Llama 3 8B"
    std::string hf_repo;  // "meta-llama/Meta-Llama-3-8B"
    std::string source;   // where the config was published
    std::vector<std::string> aliases;
    ImportedModel model;              // architecture with published parameter counts
    std::string origin = "built-in";  // or the user file it came from
};

class Catalog {
public:
    // The compiled-in catalog.
    static const Catalog& builtin();

    // A copy of the built-in catalog plus the user's folder, when it exists.
    // Files that cannot be read are skipped and reported in `problems`.
    static Catalog with_user_folder(const std::string& folder, std::vector<std::string>& problems);
    // That folder (also where measured decode steps are kept); empty for the built-in catalog alone.
    [[nodiscard]] const std::string& user_folder() const { return user_folder_; }

    // Adds a user folder: models/*.json (Hugging Face config.json files; the id is the
    // file name, or from models/catalog.json), gpus.json (same shape as the built-in one).
    // Same ids replace built-in entries.
    void add_folder(const std::string& folder, std::vector<std::string>& problems);

    [[nodiscard]] const std::vector<CatalogModel>& models() const { return models_; }
    [[nodiscard]] const std::vector<GpuSpec>& gpus() const { return gpus_; }

    // Matches id, Hugging Face repo id, name and aliases, case-insensitively.
    [[nodiscard]] const CatalogModel* find_model(std::string_view key) const;
    // The model `text` names exactly (as find_model), else every model with a name containing it,
    // in any case: what a search box offers for what was typed.
    [[nodiscard]] std::vector<const CatalogModel*> matching_models(std::string_view text) const;
    [[nodiscard]] const GpuSpec* find_gpu(std::string_view key) const;

    // Close matches for an unknown name ("did you mean …").
    [[nodiscard]] std::vector<std::string> suggest_models(std::string_view key) const;
    [[nodiscard]] std::vector<std::string> suggest_gpus(std::string_view key) const;

private:
    void upsert(CatalogModel m);
    void upsert(GpuSpec g);
    std::vector<CatalogModel> models_;
    std::vector<GpuSpec> gpus_;
    std::string user_folder_;
};

// Every name a model answers to: id, Hugging Face repo id, display name, aliases.
std::vector<std::string> model_names(const CatalogModel& m);

// $KVSCOPE_DATA_DIR, else $XDG_CONFIG_HOME/kvscope, else ~/.config/kvscope.
std::string default_user_folder();

// Parses a catalog index and its configs; `read` returns a config's text by file name.
Result<std::vector<GpuSpec>> parse_gpu_list(std::string_view text, const std::string& source);

// The name of a GPU given `memory_bytes` of its own: the catalog entry's (`base`, when it is one) as it is at the
// entry's memory, else with the memory said ("NVIDIA H100 SXM 80GB with 40.0 GiB"); without an entry, `name` with it.
std::string name_with_memory(const GpuSpec* base, const std::string& name, std::uint64_t memory_bytes);

// The model's own weights for a scenario: its own when it has them, else the catalog model's it names, else the
// deployment's format, else bf16: what a new deployment starts with, in the CLI and the window alike.
ModelWeights model_weights_of(const Scenario& s, const Catalog& catalog);

}  // namespace kvscope
