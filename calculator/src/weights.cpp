// The deployment's weights: the bytes the engine loads (the files' exact bytes, a quantized checkpoint's scheme, or
// the parameter count in a format), a separate draft model's, and what a decode step reads of them.
#include "kvscope/calculator/weights.h"

#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"
#include "wide.h"

namespace kvscope {

Result<std::uint64_t> weights_bytes(std::uint64_t params, KvDtype dtype) {
    const Checked b = row_bytes(dtype, params);
    if (b.overflow()) return overflow_error(Field::weight_dtype, "the weights");
    return b.value();
}

void adopt_model_weights(Deployment& d, const ModelWeights& w) {
    d.weight_dtype = w.dtype;
    d.weights_bytes_exact = w.exact_bytes;
    d.weights_source = w.source;
    d.weight_quant = w.quant;
    d.weights_layers = w.layers;
    d.gguf_mix.reset();
    if (w.engine) {
        d.engine = *w.engine;
        d.fraction = default_fraction(d.engine);
        d.fraction_given = false;
    }
}

WeightQuant loaded_weight_quant(const Deployment& d) {
    WeightQuant q = d.weight_quant.value_or(WeightQuant{});
    // bitsandbytes' double quantization: vLLM 0.7 kept the nested absmax (the 0.7.3 log in docs/vllm-logs.md
    // matches it); later versions dequantize it to float32 at load (model_loader/bitsandbytes_loader.py
    // _dequantize_dq), 32 bits per 64 weights, as the other engines' bitsandbytes loaders do too.
    const bool old_vllm = d.engine == Engine::vllm && d.vllm.version_minor > 0 && d.vllm.version_minor <= 7;
    if (q.method == "bitsandbytes" && q.group == 64 * 256 && !old_vllm) {
        q.group = 64;
        q.scale_bits = 32;
        q.scheme += ", its absmax kept as float32";
    }
    return q;
}

std::string weights_text(const Deployment& d) {
    if (d.weights_bytes_exact == 0 && d.gguf_mix)
        return "as a GGUF " + gguf_mix_name(*d.gguf_mix) + " holds them (llama-quantize's types on the model's shape)";
    if (d.weights_bytes_exact == 0 && d.weight_quant)
        return weight_quant_label(loaded_weight_quant(d)) + "; the rest in " + std::string(to_string(d.weight_dtype));
    if (d.weights_bytes_exact == 0) return "in " + std::string(to_string(d.weight_dtype));
    return d.weights_source.empty() ? format_count(d.weights_bytes_exact) + " bytes, exact" : d.weights_source;
}

std::string weights_format_text(const Deployment& d) {
    if (d.weights_bytes_exact > 0) return "weights from the files";  // their sizes; weights_source says more
    if (d.gguf_mix) return gguf_mix_name(*d.gguf_mix) + " weights";
    if (d.weight_quant) return d.weight_quant->method + " weights";
    return std::string(to_string(d.weight_dtype)) + " weights";
}

Result<std::uint64_t> stored_weights_bytes(const Architecture& arch, const Deployment& d) {
    if (d.weights_bytes_exact > 0) return d.weights_bytes_exact;
    if (d.gguf_mix) return gguf_mix_bytes(arch, *d.gguf_mix);
    if (d.weight_quant) {
        auto q = quantized_weights(arch, loaded_weight_quant(d), d.weight_dtype, false);
        if (!q) return q.errors();
        return q->bytes;
    }
    return weights_bytes(parameters(arch).total, d.weight_dtype);
}

std::optional<std::string> weights_mismatch(const Architecture& arch, const Deployment& d) {
    // Only safetensors bytes given beside a model (its folder, --weights, the Deployment tab's files) can be another
    // model's; a GGUF's bytes are its own model's, and its weight format only the nearest plain one.
    // (safetensors::Weights::source_text names them: "… bytes, exact from 4 safetensors headers".)
    if (d.weights_bytes_exact == 0 || d.weights_source.find("safetensors") == std::string::npos) return std::nullopt;
    Deployment estimated = d;
    estimated.weights_bytes_exact = 0;
    const auto expected = stored_weights_bytes(arch, estimated);
    if (!expected || *expected == 0) return std::nullopt;
    const double ratio = static_cast<double>(d.weights_bytes_exact) / static_cast<double>(*expected);
    // Between a quarter and two and a half times is ordinary: a 4-bit quantization the config does not describe
    // (about 0.3×), a vision tower or per-layer embeddings the parameter estimate leaves out (Gemma 3n: above 2×),
    // float32 files of mixed formats that stand as stored (2×; safetensors::Weights::served_in recasts the rest).
    // Outside it the files are most likely another model's: Llama 3 8B's shards for Llama 3 70B are 0.11×, the other
    // way round 8.8×, Mistral 7B's for Mixtral 8x7B 0.31× (not caught: a limit of comparing bytes).
    if (ratio >= 0.25 && ratio <= 2.5) return std::nullopt;
    return "the weights' exact " + format_bytes(d.weights_bytes_exact) + " (" + d.weights_source + ") are " +
           ratio_text(ratio) + " the " + format_bytes(*expected) + " this model's parameters take (" +
           weights_text(estimated) + ")" + ": are the files this model's? The fit counts the files' bytes";
}

Result<std::uint64_t> draft_weights_bytes(const DraftModel& draft, KvDtype dtype) {
    if (draft.weights_bytes_exact > 0) return draft.weights_bytes_exact;
    // A quantized draft model is weighed as a quantized model (an EAGLE head's own parts stay in the dtype).
    if (draft.quant && draft.method == DraftMethod::draft_model) {
        auto q = quantized_weights(draft.arch, *draft.quant, dtype, false);
        if (!q) return q.errors();
        return q->bytes;
    }
    return weights_bytes(draft_parameters(draft).own, dtype);
}

std::string draft_weights_text(const DraftModel& draft, KvDtype dtype) {
    if (draft.weights_bytes_exact > 0) return "exact from its files";
    if (draft.quant && draft.method == DraftMethod::draft_model)
        return "estimated for " + weight_quant_label(*draft.quant) + ", the rest in " + std::string(to_string(dtype));
    return "in " + std::string(to_string(dtype));
}

Result<std::uint64_t> read_weights_bytes(const Architecture& arch, const Deployment& d) {
    const std::uint64_t matmul = matmul_parameters(arch);
    // A GGUF mix: each layer's matrices with only its chosen experts, and the head (never the embedding table).
    if (d.weights_bytes_exact == 0 && d.gguf_mix) {
        auto w = gguf_mix_weights(arch, *d.gguf_mix);
        if (!w) return w.errors();
        Checked read = arch.tied_embeddings ? Checked(w->input_bytes) : Checked(w->output_bytes);
        for (std::uint64_t l = 0; l < w->blocks.size(); ++l) {
            const BlockWeights& b = w->blocks[l];
            const bool routed = arch.moe && arch.moe->has_experts(l) && arch.moe->experts > 0;
            const std::uint64_t chosen =
                routed ? static_cast<std::uint64_t>(static_cast<i128>(b.expert_bytes) * arch.moe->experts_per_token /
                                                    arch.moe->experts)
                       : b.expert_bytes;
            read += Checked(b.bytes - b.expert_bytes) + chosen;
        }
        if (read.overflow()) return overflow_error(Field::weight_dtype, "the weights a step reads");
        return read.value();
    }
    if (d.weights_bytes_exact == 0 && d.weight_quant) {
        auto q = quantized_weights(arch, loaded_weight_quant(d), d.weight_dtype, true);
        if (!q) return q.errors();
        return q->bytes;
    }
    if (d.weights_bytes_exact == 0) return weights_bytes(matmul, d.weight_dtype);
    // The exact bytes hold every tensor; a step reads the same share of them as of the parameters.
    const std::uint64_t total = parameters(arch).total;
    if (total == 0 || matmul >= total) return d.weights_bytes_exact;
    const auto share = static_cast<i128>(d.weights_bytes_exact) * matmul / total;
    return static_cast<std::uint64_t>(share);
}

}  // namespace kvscope
