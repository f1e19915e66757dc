// A separate draft model for speculative decoding: what vLLM loads for it and what its layers cache. Each rule
// names the vLLM file it follows.
#include "kvscope/calculator/draft.h"

#include <array>
#include <limits>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/tables.h"

namespace kvscope {

namespace {

struct DraftMethodInfo {
    DraftMethod method;
    std::string_view id;
};
constexpr std::array<DraftMethodInfo, kDraftMethodCount> kMethods{{
    {DraftMethod::draft_model, "draft_model"},
    {DraftMethod::eagle, "eagle"},
    {DraftMethod::eagle3, "eagle3"},
}};
static_assert(lists_in_order(kMethods, [](const DraftMethodInfo& m) { return m.method; }),
              "kMethods: one entry per DraftMethod, in order");

// Bounds far above any published head (EAGLE-3's draft vocabularies are 32,000 - 64,000 entries; widths a few
// thousand) that keep a typo from reading as an exabyte of weights.
constexpr std::uint64_t kMaxDraftVocab = 1ull << 24;
constexpr std::uint64_t kMaxTargetHidden = 1ull << 20;

std::uint64_t minus(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

std::uint64_t value_of(const Checked& c) { return c.saturated(); }

FieldError draft_error(const DraftModel& d, const std::string& message) {
    return {Field::draft, "the draft '" + d.name + "' " + message};
}

}  // namespace

std::string_view to_string(DraftMethod method) { return kMethods.at(static_cast<std::size_t>(method)).id; }

std::optional<DraftMethod> parse_draft_method(std::string_view text) {
    const std::string t = ascii_lower(text);
    for (const auto& m : kMethods)
        if (t == m.id) return m.method;
    if (t == "draft-model" || t == "draft" || t == "model") return DraftMethod::draft_model;
    if (t == "eagle-3") return DraftMethod::eagle3;
    return std::nullopt;
}

std::string draft_method_list() {
    std::string out;
    for (const auto& m : kMethods) out += (out.empty() ? "" : ", ") + std::string(m.id);
    return out;
}

DraftParameters draft_parameters(const DraftModel& d) {
    const ParameterCount p = parameters(d.arch);
    DraftParameters out;
    if (d.method == DraftMethod::draft_model) {
        out.own = p.total;
        out.estimated = p.estimated;
        return out;
    }
    const Architecture& a = d.arch;
    const std::uint64_t H = a.hidden_size;
    // The head's decoder layers and final norm: the shape's count less its embedding and LM head, which the
    // target's replace (llm_base_proposer.py: shared when the checkpoint has none or an identical copy).
    const ParameterCount shape = estimate_parameters(a);
    const std::uint64_t layers = minus(shape.total, shape.embedding + shape.head);
    if (d.method == DraftMethod::eagle) {
        // llama_eagle.py: the first layer has no input norm (nn.Identity) and the model no final norm; fc is a
        // ReplicatedLinear(2H -> H, no bias) over [embedding; the target's hidden state], whole on every GPU.
        const Checked fc = Checked(2) * H * H;
        out.own = value_of(Checked(minus(layers, 2 * H)) + fc);
        out.replicated = value_of(fc);
        return out;
    }
    // llama_eagle3.py: every layer has a hidden norm, the first layer's qkv_proj reads 2H, fc (a ReplicatedLinear)
    // reads three of the target's hidden states (3 x target_hidden_size -> H), and the head has its own LM head
    // over draft_vocab_size (its draft-to-target token map, 8 bytes an entry, is left out: 0.2 MiB at 32,000).
    const std::uint64_t target_h = d.target_hidden > 0 ? d.target_hidden : H;
    const std::uint64_t vocab = d.draft_vocab > 0 ? d.draft_vocab : a.vocab_size;
    const Checked qkv_out = Checked(a.query_heads) * a.head_dim_k_of(0) +
                            Checked(a.kv_heads_of(0)) * (a.head_dim_k_of(0) + a.head_dim_v_of(0));
    const Checked fc = Checked(3) * target_h * H;
    out.own = value_of(Checked(layers) + Checked(H) * qkv_out + Checked(a.layers) * H + fc + Checked(vocab) * H);
    out.replicated = value_of(fc);
    return out;
}

Errors validate(const DraftModel& d) {
    Errors errors;
    for (const FieldError& e : validate(d.arch)) errors.push_back(draft_error(d, e.field + ": " + e.message));
    if (d.draft_vocab > kMaxDraftVocab)
        errors.push_back(draft_error(d, "draft_vocab_size must be at most " + std::to_string(kMaxDraftVocab)));
    if (d.target_hidden > kMaxTargetHidden)
        errors.push_back(draft_error(d, "target_hidden_size must be at most " + std::to_string(kMaxTargetHidden)));
    if (d.name.empty()) errors.push_back({Field::draft, "the draft model needs a name (its id or path)"});
    if (d.quant)
        if (const auto problem = weight_quant_problem(*d.quant))
            errors.push_back(draft_error(d, "weights' quantization (" + d.quant->method + ") " + *problem));
    if (d.arch.layers == 0 || d.arch.attention_layers() == 0)
        errors.push_back(draft_error(d, "has no attention layer: a draft decodes with attention"));
    return errors;
}

Result<Architecture> with_draft_layers(const Architecture& target, const DraftModel& d) {
    // The model's own problems first: its layer table is copied below (a file's 10^15 layers must not be).
    if (Errors own = validate(target); !own.empty()) return own;
    Errors errors = validate(d);
    if (!errors.empty()) return errors;
    const Architecture& a = d.arch;
    // A draft's recurrent state would be a state group of its own in vLLM's hybrid allocator: not modelled.
    if (a.state_layers() > 0) return draft_error(d, "has recurrent layers: a draft's recurrent state is not modelled");
    // One cache layout per model: the latent of an MLA draft is the target's only when their dims agree.
    if (a.mla != target.mla)
        return draft_error(
            d, std::string(a.mla ? "caches an MLA latent" : "caches plain keys and values") +
                   (target.mla ? ", the model an MLA latent of other dims" : ", the model plain keys and values") +
                   ": one cache of both layouts is not modelled");
    Architecture out = target;
    if (out.layer_specs.empty()) out.layer_specs.assign(target.layers, LayerSpec{});
    for (std::uint64_t l = 0; l < a.layers; ++l) {
        LayerSpec s = a.layer(l);
        s.kv_heads = a.kv_heads_of(l);
        s.head_dim_k = a.head_dim_k_of(l);
        s.head_dim_v = a.head_dim_v_of(l);
        s.draft = true;
        out.layer_specs.push_back(s);
    }
    out.layers += a.layers;
    if (out.layers > kMaxLayers)
        return draft_error(
            d, "brings the layers to " + std::to_string(out.layers) + ", more than " + std::to_string(kMaxLayers));
    for (const std::string& reason : a.not_exact) out.not_exact.push_back("the draft: " + reason);
    return out;
}

}  // namespace kvscope
