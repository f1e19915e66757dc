#pragma once
// A draft model for speculative decoding read from a model's files, the catalog or this machine (draft_import.cpp).

#include <optional>
#include <string>

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/draft.h"
#include "kvscope/calculator/result.h"

namespace kvscope {

// The draft a model's files describe. Without `method` it is read from the config's class (`architectures`:
// a name with Eagle3 is eagle3, with Eagle eagle), else draft_model.
DraftModel draft_from_model(const ImportedModel& model, std::string name, std::optional<DraftMethod> method);

// The draft `spec` names: a catalog id or alias, a path (config.json, model folder, GGUF, Hugging Face cache
// folder) or a model on this machine by name (a Hugging Face repo id); errors are named `option`.
Result<DraftModel> find_draft(const std::string& spec, std::optional<DraftMethod> method, const Catalog& catalog,
                              const std::string& option);

}  // namespace kvscope
