#include "kvscope/calculator/draft_import.h"

#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/tables.h"

namespace kvscope {

DraftModel draft_from_model(const ImportedModel& model, std::string name, std::optional<DraftMethod> method) {
    DraftModel d;
    d.name = std::move(name);
    d.arch = model.arch;
    d.draft_vocab = model.draft_vocab_size;
    d.target_hidden = model.target_hidden_size;
    if (model.engine && runs_llama_cpp(*model.engine)) d.weights_bytes_exact = model.weights_bytes;  // a GGUF's tensors
    d.quant = model.weight_quant;
    if (method) {
        d.method = *method;
    } else {
        // The classes vLLM registers for the heads (vllm/model_executor/models/registry.py _SPECULATIVE_DECODING_
        // MODELS: LlamaForCausalLMEagle3, Eagle3LlamaForCausalLM, EagleLlamaForCausalLM, …).
        const std::string cls = ascii_lower(model.architecture);
        if (cls.find("eagle3") != std::string::npos)
            d.method = DraftMethod::eagle3;
        else if (cls.find("eagle") != std::string::npos)
            d.method = DraftMethod::eagle;
    }
    return d;
}

Result<DraftModel> find_draft(const std::string& spec, std::optional<DraftMethod> method, const Catalog& catalog,
                              const std::string& option) {
    const auto named = [&option](const Errors& errors) {
        Errors out;
        for (const FieldError& e : errors) out.push_back({option, (e.field.empty() ? "" : e.field + ": ") + e.message});
        return out;
    };
    auto found = find_model(spec, catalog, NamesPaths::yes);
    if (!found) return named(found.errors());
    if (*found) return draft_from_model((*found)->model, (*found)->id, method);
    return FieldError{option, "unknown draft model '" + spec +
                                  "': a catalog id (kvscope-cli models), a config.json or model folder, or a model "
                                  "on this machine (models --local)"};
}

}  // namespace kvscope
