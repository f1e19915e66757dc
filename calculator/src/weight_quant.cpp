// Quantized checkpoints' weights: the spellings of quantization_config and the bytes each scheme stores. Each
// rule names the vLLM file it follows (vllm/model_executor/layers/quantization/…).
#include "kvscope/calculator/weight_quant.h"

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/decode.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/kv_cache.h"

namespace kvscope {
namespace {

using json::Value;

std::string text_of(const Value& o, const char* key) {
    const Value* v = o.find(key);
    return v && v->is_string() ? v->as_string() : std::string();
}

std::optional<std::uint64_t> number_of(const Value& o, const char* key) {
    const Value* v = o.find(key);
    if (!v || !v->is_number() || v->as_double() < 0 || v->as_double() > 1e9) return std::nullopt;
    return static_cast<std::uint64_t>(v->as_double());
}

std::optional<std::int64_t> signed_of(const Value& o, const char* key) {
    const Value* v = o.find(key);
    if (!v || !v->is_number() || v->as_double() < -1e9 || v->as_double() > 1e9) return std::nullopt;
    return static_cast<std::int64_t>(v->as_double());
}

bool flag_of(const Value& o, const char* key, bool fallback) {
    const Value* v = o.find(key);
    return v && v->is_bool() ? v->as_bool() : fallback;
}

// "a scale and zero point per 128 weights", "a scale per output row", …
std::string groups_text(const WeightQuant& q) {
    const std::string what = q.zero_bits ? "a scale and zero point" : "a scale";
    if (q.per_row) return what + " per output row";
    if (q.group == 0) return "a scale per tensor";
    return what + " per " + std::to_string(q.group) + " weights";
}

// Integer weights in groups with 16-bit scales (AWQ, GPTQ, compressed-tensors' pack-quantized): group -1 or 0 is
// one group per output row (GPTQ's "group_size": -1).
WeightQuant int_groups(std::string method, std::uint64_t bits, std::int64_t group, bool zeros) {
    WeightQuant q;
    q.method = std::move(method);
    q.bits = bits;
    q.per_row = group <= 0;
    q.group = group > 0 ? static_cast<std::uint64_t>(group) : 0;
    q.scale_bits = 16;
    q.zero_bits = zeros ? bits : 0;
    q.scheme = std::to_string(bits) + "-bit int, " + groups_text(q);
    return q;
}

WeightQuant fp8(std::string method, const Value* block) {
    // fp8.py Fp8LinearMethod: one byte a weight; with weight_block_size, a float32 weight_scale_inv per block
    // (DeepSeek-V3's 128 x 128), else one float32 scale per tensor.
    WeightQuant q;
    q.method = std::move(method);
    q.bits = 8;
    q.scale_bits = 32;
    std::string per = "a scale per tensor";
    if (block && block->is_array() && block->items().size() == 2 && block->items()[0].is_number() &&
        block->items()[1].is_number()) {
        const double a = block->items()[0].as_double(), b = block->items()[1].as_double();
        if (a >= 1 && b >= 1 && a <= 65536 && b <= 65536) {
            const auto rows = static_cast<std::uint64_t>(a), cols = static_cast<std::uint64_t>(b);
            q.group = rows * cols;
            per = "a float32 scale per " + std::to_string(rows) + " x " + std::to_string(cols) + " block";
        }
    }
    q.scheme = "8-bit float, " + per;
    return q;
}

WeightQuant fp4(std::string method, std::uint64_t group, const std::string& name) {
    // NVFP4 (modelopt.py ModelOptNvFp4Config, compressed-tensors' nvfp4-pack-quantized): 4-bit e2m1 with an fp8
    // e4m3 scale per 16 weights (and a float32 scale per tensor). MXFP4 (mxfp4.py): e2m1 with an e8m0 scale per 32.
    WeightQuant q;
    q.method = std::move(method);
    q.bits = 4;
    q.group = group;
    q.scale_bits = 8;
    q.scheme = name + ", 4-bit float with an 8-bit scale per " + std::to_string(group) + " weights";
    return q;
}

std::optional<WeightQuant> compressed_tensors(const Value& config, std::vector<std::string>& notes) {
    // compressed_tensors/compressed_tensors.py: config_groups name the weights' num_bits, type (int/float),
    // strategy (tensor, channel, group, block, tensor_group) and group_size; `ignore` lists unquantized modules.
    const Value* groups = config.find("config_groups");
    const Value* weights = nullptr;
    std::size_t count = 0;
    if (groups && groups->is_object())
        for (const auto& [name, group] : groups->members())
            if (const Value* w = group.find("weights"); w && w->is_object()) {
                if (!weights) weights = w;
                ++count;
            }
    if (!weights) {
        notes.push_back(
            "quantization_config 'compressed-tensors' names no weights scheme in config_groups; weights "
            "taken as the model's dtype");
        return std::nullopt;
    }
    if (count > 1)
        notes.push_back("quantization_config 'compressed-tensors' has " + std::to_string(count) +
                        " weight schemes in config_groups; the first is taken for every quantized layer");
    const std::uint64_t bits = number_of(*weights, "num_bits").value_or(8);
    const std::string type = text_of(*weights, "type"), strategy = text_of(*weights, "strategy");
    const std::int64_t group = signed_of(*weights, "group_size").value_or(0);
    WeightQuant q;
    if (type == "float" && bits == 4) {
        q = fp4("compressed-tensors", group > 0 ? static_cast<std::uint64_t>(group) : 16, "NVFP4");
    } else if (type == "float") {
        q = fp8("compressed-tensors", weights->find("block_structure"));
        q.per_row = strategy == "channel";
        if (q.per_row) q.scale_bits = 16, q.scheme = "8-bit float, a scale per output row";
    } else {
        const bool zeros = !flag_of(*weights, "symmetric", true);
        q = int_groups("compressed-tensors", bits, strategy == "group" ? group : (strategy == "tensor" ? 0 : -1),
                       zeros);
        if (strategy == "tensor") q.per_row = false, q.scheme = std::to_string(bits) + "-bit int, a scale per tensor";
    }
    if (const Value* ignore = config.find("ignore"); ignore && ignore->is_array())
        for (const Value& m : ignore->items())
            if (m.is_string() && m.as_string().find("lm_head") == std::string::npos &&
                m.as_string().find("gate") == std::string::npos)
                notes.push_back("quantization_config ignores '" + m.as_string() +
                                "'; it is counted as quantized (an estimate)");
    return q;
}

std::optional<WeightQuant> modelopt(const Value& config, std::vector<std::string>& notes) {
    // modelopt.py: quant_algo FP8 (per-tensor fp8) or NVFP4 (group_size 16), at the top or under "quantization".
    const Value* inner = config.find("quantization");
    const Value& c = inner && inner->is_object() ? *inner : config;
    const std::string algo = text_of(c, "quant_algo");
    if (algo == "FP8") return fp8("modelopt", nullptr);
    if (algo == "NVFP4") return fp4("modelopt", number_of(c, "group_size").value_or(16), "NVFP4");
    notes.push_back("quantization_config 'modelopt' quant_algo '" + algo +
                    "' is not modelled; weights taken as the model's dtype");
    return std::nullopt;
}

}  // namespace

std::string weight_quant_label(const WeightQuant& q) {
    std::string m = q.method;
    if (m == "awq" || m == "gptq" || m == "fp8" || m == "mxfp4") {
        for (char& c : m) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    }
    // "MXFP4, 4-bit float …" says the method already.
    const bool named = q.scheme.compare(0, m.size(), m) == 0;
    return (named ? std::string() : m + ": ") + q.scheme + (q.experts_only ? ", the experts only" : "") +
           (q.lm_head ? ", the LM head too" : "");
}

std::optional<WeightQuant> weight_quant_from_config(const json::Value& config, std::vector<std::string>& notes) {
    std::string method = text_of(config, "quant_method");
    // vLLM's kernels' names for the same checkpoints (awq_marlin.py, gptq_marlin.py).
    if (method == "awq_marlin") method = "awq";
    if (method == "gptq_marlin") method = "gptq";
    if (method == "awq") {
        // awq.py AWQConfig: w_bit/bits, q_group_size/group_size, zero_point (true: a packed 4-bit zero per group);
        // qweight packs eight 4-bit weights an int32, scales are fp16, one per group and output column.
        const std::uint64_t bits = number_of(config, "bits").value_or(number_of(config, "w_bit").value_or(4));
        const std::int64_t group =
            signed_of(config, "group_size").value_or(signed_of(config, "q_group_size").value_or(128));
        return int_groups("awq", bits, group, flag_of(config, "zero_point", true));
    }
    if (method == "gptq") {
        // gptq.py / gptq_marlin.py GPTQConfig: bits, group_size (-1: per output row), sym, lm_head. vLLM serves
        // symmetric 4- and 8-bit checkpoints with Marlin, which keeps no zero points; the g_idx of desc_act is 4
        // bytes an input row, not counted.
        const std::uint64_t bits = number_of(config, "bits").value_or(4);
        WeightQuant q =
            int_groups("gptq", bits, signed_of(config, "group_size").value_or(128), !flag_of(config, "sym", true));
        q.lm_head = flag_of(config, "lm_head", false);
        return q;
    }
    if (method == "fp8" || method == "fbgemm_fp8") return fp8(method, config.find("weight_block_size"));
    if (method == "mxfp4") {
        // mxfp4.py Mxfp4Config quantizes the fused experts only (gpt-oss's modules_to_not_convert: attention,
        // router, embeddings, LM head). The Marlin backend (oracle/mxfp4.py, used on A100 and H100) pads the
        // experts' hidden size to a multiple of 256 and their intermediate size to 128 (2,880 -> 3,072 x 2,944).
        WeightQuant q = fp4("mxfp4", 32, "MXFP4");
        q.experts_only = true;
        q.pad_hidden = 256;
        q.pad_intermediate = 128;
        return q;
    }
    if (method == "compressed-tensors") return compressed_tensors(config, notes);
    if (method == "modelopt" || method == "modelopt_fp4") return modelopt(config, notes);
    if (method == "bitsandbytes") {
        // bitsandbytes.py: 4-bit (nf4/fp4) stores a float32 absmax per 64 weights, or with double quantization an
        // 8-bit absmax per 64 and a float32 per 256 of those: 8 + 32/256 bits per 64 weights (written per 16,384).
        // 8-bit (LLM.int8) keeps a float32 scale per row.
        if (flag_of(config, "load_in_8bit", false)) {
            WeightQuant q = int_groups("bitsandbytes", 8, -1, false);
            q.scale_bits = 32;
            return q;
        }
        WeightQuant q;
        q.method = "bitsandbytes";
        q.bits = 4;
        const bool nested = flag_of(config, "bnb_4bit_use_double_quant", false);
        q.group = nested ? 64 * 256 : 64;
        q.scale_bits = nested ? 256 * 8 + 32 : 32;
        const std::string type = text_of(config, "bnb_4bit_quant_type");
        q.scheme = (type.empty() ? std::string("fp4") : type) + ", an absmax per 64 weights" +
                   (nested ? " (double-quantized)" : "");
        return q;
    }
    notes.push_back("quantization_config '" + method + "' is not modelled; weights taken as the model's dtype");
    return std::nullopt;
}

Result<QuantizedWeights> quantized_weights(const Architecture& arch, const WeightQuant& q, KvDtype rest_dtype,
                                           bool per_token) {
    const ParameterCount p = parameters(arch);
    const std::uint64_t all = per_token ? matmul_parameters(arch) : p.total;
    std::uint64_t quantized =
        q.experts_only ? (per_token ? p.experts_active : p.experts) : (per_token ? p.linear_active : p.linear);
    if (q.lm_head) quantized += p.head;
    quantized = std::min(quantized, all);
    // Rounds up a division; an overflowed count stays overflowed.
    const auto div_up = [](Checked a, std::uint64_t d) {
        return a.overflow() ? a : Checked(a.value() / d + (a.value() % d != 0 ? 1 : 0));
    };
    Checked stored(quantized);  // the quantized parameters as laid out, padding included
    if (q.experts_only && arch.moe && arch.moe->expert_intermediate_size > 0 && arch.hidden_size > 0) {
        const auto up = [](std::uint64_t n, std::uint64_t m) { return m > 1 ? (n + m - 1) / m * m : n; };
        const std::uint64_t h = arch.hidden_size, i = arch.moe->expert_intermediate_size;
        stored = Checked(quantized / h / i) * up(h, q.pad_hidden) * up(i, q.pad_intermediate);
    }
    const std::uint64_t group = q.per_row ? arch.hidden_size : q.group;
    Checked bits = stored * q.bits;
    if (group > 0) bits += div_up(stored, group) * (q.scale_bits + q.zero_bits);
    const std::uint64_t rest = all - quantized;
    const Checked bytes = div_up(bits, 8) + row_bytes(rest_dtype, rest);
    if (bytes.overflow()) return overflow_error(Field::weight_dtype, "the weights");
    return QuantizedWeights{bytes.value(), quantized, rest};
}

}  // namespace kvscope
