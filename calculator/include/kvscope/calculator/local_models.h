#pragma once
// The models already on this machine: the Hugging Face hub cache, Ollama's store and LM Studio's folder.
// Only folder listings, small manifests and refs are read: never weights, nothing downloaded.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvscope/calculator/config_import.h"

namespace kvscope {

class Catalog;
struct CatalogModel;

enum class LocalStore { huggingface, ollama, lm_studio };
std::string_view to_string(LocalStore store);  // "Hugging Face cache", "Ollama", "LM Studio"

struct LocalModel {
    std::string
        id;  // "meta-llama/Llama-3.1-8B", "llama3.1:8b", "lmstudio-community/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf"
    LocalStore store = LocalStore::huggingface;
    std::string path;   // a snapshot folder holding config.json, or a .gguf file
    bool gguf = false;  // path is a GGUF file
    // Why the model, found, cannot be read as it is ("its weights file … is missing: the pull did not finish"); empty
    // when it can. Such a model is listed (a store that seems to hide it would puzzle) and importing it gives this.
    std::string problem;
};

// Where each store keeps its models, from the environment as each tool reads it:
//   Hugging Face (huggingface_hub constants.py): HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else
//     XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub;
//   Ollama (envconfig/config.go Models): OLLAMA_MODELS, else ~/.ollama/models, else the Linux service's
//     /usr/share/ollama/.ollama/models;
//   LM Studio (lmstudio-js, lms resolveModelsFolderPath): the home in ~/.lmstudio-home-pointer, else
//     ~/.cache/lm-studio when it exists, else ~/.lmstudio; its models/ folder, or settings.json's downloadsFolder.
struct LocalRoots {
    std::string huggingface;
    std::string ollama;
    std::string lm_studio;
};
LocalRoots local_roots_from_environment();

// Every model found, sorted by store and id, those that cannot be read as found with their `problem`. A folder that
// is missing or unreadable is skipped.
std::vector<LocalModel> scan_local_models(const LocalRoots& roots);

// The model `key` names (its id, case-insensitively; for the Hugging Face cache also "org/name"), or nullptr.
const LocalModel* find_local_model(const std::vector<LocalModel>& models, std::string_view key);

// The snapshot folder a Hugging Face cache repo folder (hub/models--org--name) stands for: the one refs/main names,
// else its only one; nullopt when it has none or several.
std::optional<std::string> cache_snapshot(const std::string& repo_folder);

// The model a path holds, whatever users have on disk: a .gguf file (gguf::import_file); a model folder with
// config.json, whose safetensors headers, when there, give the exact weight bytes; a folder holding one GGUF and no
// config.json; or a config.json file. Errors name the path and what was expected there.
Result<ImportedModel> import_model_path(const std::string& path);

// The same for a model found by scan_local_models, with where it was found in the notes.
Result<ImportedModel> import_local_model(const LocalModel& model);

// The model a name stands for, looked up in one order wherever a model is named (--model, --draft, the window's
// draft): the catalog (an id, repo id, name or alias); with `paths`, a config.json, model folder or GGUF that
// exists; the models on this machine (a Hugging Face repo id, an Ollama name); with `paths`, a name that looks like
// a path but is not there, so that the importer says what is missing. nullopt: nothing by that name; errors: a file
// or local model found that cannot be read.
struct FoundModel {
    ImportedModel model;
    std::string id;                         // the catalog id, the local model's id, or the path as given
    const CatalogModel* catalog = nullptr;  // its catalog entry, when it came from there
};
enum class NamesPaths : bool { no, yes };
Result<std::optional<FoundModel>> find_model(const std::string& spec, const Catalog& catalog, NamesPaths paths);

}  // namespace kvscope
