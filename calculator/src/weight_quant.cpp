// Quantized checkpoints' weights: the spellings of quantization_config and the bytes each scheme stores. Each
// rule names the vLLM file it follows (vllm/model_executor/layers/quantization/…).
#include "kvscope/calculator/weight_quant.h"

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/parameters.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
namespace {

using json::Value;

// Reads one quantization_config object. A key that is present but not a whole number in range (a string, 4.9,
// -8 bits) is remembered in `bad`: the scheme is then unknown, said in the notes, never a guess at what was meant.
class QuantReader {
public:
    explicit QuantReader(const Value& o) : o_(o) {}
    std::vector<std::string> bad;

    [[nodiscard]] std::string text(const char* key) const {
        const Value* v = o_.find(key);
        return v && v->is_string() ? v->as_string() : std::string();
    }
    [[nodiscard]] bool flag(const char* key, bool fallback) const {
        const Value* v = o_.find(key);
        return v && v->is_bool() ? v->as_bool() : fallback;
    }
    std::optional<std::int64_t> whole(const char* key) {
        const Value* v = o_.find(key);
        if (!v || v->is_null()) return std::nullopt;
        const double x = v->is_number() ? v->as_double() : 0.5;
        if (!v->is_number() || x < -1e9 || x > 1e9 || x != static_cast<double>(static_cast<std::int64_t>(x))) {
            bad.emplace_back(key);
            return std::nullopt;
        }
        return static_cast<std::int64_t>(x);
    }
    std::optional<std::uint64_t> count(const char* key) {
        const auto n = whole(key);
        if (n && *n < 0) {
            bad.emplace_back(key);
            return std::nullopt;
        }
        return n ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*n)) : std::nullopt;
    }
    [[nodiscard]] const Value* find(const char* key) const { return o_.find(key); }

private:
    const Value& o_;
};

// "a scale and zero point per 128 weights", "a scale per output row", …
std::string groups_text(const WeightQuant& q) {
    const std::string what = q.zero_bits ? "a scale and zero point" : "a scale";
    if (q.per_row) return what + " per output row";
    if (q.group == 0) return "a scale per tensor";
    return what + " per " + std::to_string(q.group) + " weights";
}

// Integer weights in groups (AWQ, GPTQ, compressed-tensors' pack-quantized): group -1 or 0 is one group per output
// row (GPTQ's "group_size": -1).
WeightQuant int_groups(std::string method, std::uint64_t bits, std::int64_t group, bool zeros,
                       std::uint64_t scale_bits = 16) {
    WeightQuant q;
    q.method = std::move(method);
    q.bits = bits;
    q.per_row = group <= 0;
    q.group = group > 0 ? static_cast<std::uint64_t>(group) : 0;
    q.scale_bits = scale_bits;
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

// fp8 with a float32 scale per output row: compressed-tensors' channel strategy (fp8_utils.py
// create_fp8_scale_parameter) and fbgemm_fp8.py.
WeightQuant fp8_rows(std::string method) {
    WeightQuant q = fp8(std::move(method), nullptr);
    q.per_row = true;
    q.scheme = "8-bit float, a float32 scale per output row";
    return q;
}

WeightQuant fp4(std::string method, std::uint64_t group) {
    // NVFP4 (modelopt.py ModelOptNvFp4Config, compressed-tensors' nvfp4-pack-quantized): 4-bit e2m1 with an fp8
    // e4m3 scale per 16 weights (and a float32 scale per tensor). MXFP4 (mxfp4.py): e2m1 with an e8m0 scale per 32.
    WeightQuant q;
    q.method = std::move(method);
    q.bits = 4;
    q.group = group;
    q.scale_bits = 8;
    q.scheme = std::string(group == 32 ? "MXFP4" : "NVFP4") + ", 4-bit float with an 8-bit scale per " +
               std::to_string(group) + " weights";
    return q;
}

std::optional<WeightQuant> compressed_tensors(const Value& config, std::vector<std::string>& notes,
                                              std::vector<std::string>& bad) {
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
        notes.emplace_back(
            "quantization_config 'compressed-tensors' names no weights scheme in config_groups; weights "
            "taken as the model's dtype");
        return std::nullopt;
    }
    if (count > 1)
        notes.push_back("quantization_config 'compressed-tensors' has " + std::to_string(count) +
                        " weight schemes in config_groups; the first is taken for every quantized layer");
    QuantReader w(*weights);
    const std::uint64_t bits = w.count("num_bits").value_or(8);
    const std::string type = w.text("type"), strategy = w.text("strategy");
    const std::int64_t group = w.whole("group_size").value_or(0);
    bad.insert(bad.end(), w.bad.begin(), w.bad.end());
    WeightQuant q;
    if (type == "float" && bits == 4) {
        q = fp4("compressed-tensors", group > 0 ? static_cast<std::uint64_t>(group) : 16);
    } else if (type == "float") {
        q = strategy == "channel" ? fp8_rows("compressed-tensors")
                                  : fp8("compressed-tensors", w.find("block_structure"));
    } else if (strategy == "tensor") {
        q = int_groups("compressed-tensors", bits, 0, false);
        q.per_row = false;
        q.scheme = std::to_string(bits) + "-bit int, a scale per tensor";
    } else {
        // Per-channel int scales are float32 as the fp8 ones; group scales are the model's 16-bit dtype.
        const bool zeros = !w.flag("symmetric", true);
        q = strategy == "group" ? int_groups("compressed-tensors", bits, group, zeros)
                                : int_groups("compressed-tensors", bits, -1, zeros, 32);
    }
    // The routers and the LM head are left in the model's dtype anyway; any other module left out is counted as
    // quantized, and said.
    if (const Value* ignore = config.find("ignore"); ignore && ignore->is_array())
        for (const Value& m : ignore->items()) {
            if (!m.is_string()) continue;
            const std::string& name = m.as_string();
            const bool router = name.size() >= 4 && (name.compare(name.size() - 4, 4, "gate") == 0 ||
                                                     name.find("router") != std::string::npos);
            if (name.find("lm_head") == std::string::npos && !router)
                notes.push_back("quantization_config ignores '" + name + "'; it is counted as quantized (an estimate)");
        }
    return q;
}

std::optional<WeightQuant> modelopt(const Value& config, std::vector<std::string>& notes,
                                    std::vector<std::string>& bad) {
    // modelopt.py: quant_algo FP8 (per-tensor fp8) or NVFP4 (group_size 16), at the top or under "quantization".
    const Value* inner = config.find("quantization");
    QuantReader c(inner && inner->is_object() ? *inner : config);
    const std::string algo = c.text("quant_algo");
    if (algo == "FP8") return fp8("modelopt", nullptr);
    if (algo == "NVFP4") {
        const std::uint64_t group = c.count("group_size").value_or(16);
        bad.insert(bad.end(), c.bad.begin(), c.bad.end());
        if (group == 0) bad.emplace_back("group_size");
        return fp4("modelopt", group);
    }
    notes.push_back("quantization_config 'modelopt' quant_algo '" + algo +
                    "' is not modelled; weights taken as the model's dtype");
    return std::nullopt;
}

std::optional<WeightQuant> scheme_of(const Value& config, std::vector<std::string>& notes,
                                     std::vector<std::string>& bad) {
    QuantReader c(config);
    std::string method = c.text("quant_method");
    // vLLM's kernels' names for the same checkpoints (awq_marlin.py, gptq_marlin.py).
    if (method == "awq_marlin") method = "awq";
    if (method == "gptq_marlin") method = "gptq";
    std::optional<WeightQuant> q;
    if (method == "awq") {
        // awq.py AWQConfig: w_bit/bits, q_group_size/group_size, lm_head; qweight packs eight 4-bit weights an int32,
        // scales are fp16 and qzeros a packed 4-bit zero, one each per group and output column. Marlin has no 4-bit
        // type without zero points, so zero_point: false falls back to awq.py, which allocates the zeros anyway.
        const auto bits = c.count("bits"), w_bit = c.count("w_bit");
        const auto group = c.whole("group_size"), q_group = c.whole("q_group_size");
        q = int_groups("awq", bits.value_or(w_bit.value_or(4)), group.value_or(q_group.value_or(128)), true);
        q->lm_head = c.flag("lm_head", false);
    } else if (method == "gptq") {
        // gptq.py / gptq_marlin.py GPTQConfig: bits, group_size (-1: per output row), sym, lm_head. vLLM serves
        // symmetric 4- and 8-bit checkpoints with Marlin, which keeps no zero points; the g_idx of desc_act is 4
        // bytes an input row, not counted.
        q = int_groups("gptq", c.count("bits").value_or(4), c.whole("group_size").value_or(128), !c.flag("sym", true));
        q->lm_head = c.flag("lm_head", false);
    } else if (method == "fp8") {
        q = fp8(method, c.find("weight_block_size"));
    } else if (method == "fbgemm_fp8") {
        q = fp8_rows(method);
    } else if (method == "mxfp4") {
        // mxfp4.py Mxfp4Config quantizes the fused experts only (gpt-oss's modules_to_not_convert: attention,
        // router, embeddings, LM head). Padded as the Marlin backend lays them out (fused_moe/oracle/mxfp4.py
        // mxfp4_round_up_hidden_size_and_intermediate_size: hidden to 256, intermediate to 128, 2,880 -> 3,072 x
        // 2,944), the backend of both published logs (A100 at 0.19, H100 at 0.10.1); the fit's note gives the range
        // of the other backends.
        q = fp4("mxfp4", 32);
        q->experts_only = true;
        q->pad_hidden = 256;
        q->pad_intermediate = 128;
    } else if (method == "compressed-tensors") {
        q = compressed_tensors(config, notes, bad);
    } else if (method == "modelopt" || method == "modelopt_fp4") {
        q = modelopt(config, notes, bad);
    } else if (method == "bitsandbytes") {
        // bitsandbytes.py: 4-bit (nf4/fp4) stores a float32 absmax per 64 weights, or with double quantization an
        // 8-bit absmax per 64 and a float32 per 256 of those: 8 + 32/256 bits per 64 weights (written per 16,384;
        // as_loaded says how vLLM keeps them). 8-bit (LLM.int8) keeps a float32 scale per row.
        if (c.flag("load_in_8bit", false)) {
            q = int_groups("bitsandbytes", 8, -1, false, 32);
        } else {
            q = WeightQuant{};
            q->method = "bitsandbytes";
            q->bits = 4;
            const bool nested = c.flag("bnb_4bit_use_double_quant", false);
            q->group = nested ? 64 * 256 : 64;
            q->scale_bits = nested ? 256 * 8 + 32 : 32;
            const std::string type = c.text("bnb_4bit_quant_type");
            q->scheme = (type.empty() ? std::string("fp4") : type) + ", an absmax per 64 weights" +
                        (nested ? " (double-quantized)" : "");
        }
    } else {
        notes.push_back("quantization_config '" + method + "' is not modelled; weights taken as the model's dtype");
        return std::nullopt;
    }
    bad.insert(bad.end(), c.bad.begin(), c.bad.end());
    return q;
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

std::optional<std::string> weight_quant_problem(const WeightQuant& q) {
    if (q.bits == 0 || q.bits > 16) return "must have 1 to 16 bits a weight, not " + format_count(q.bits);
    if (q.scale_bits > 4096 || q.zero_bits > 64) return "must have scales of at most 4,096 bits a group";
    if (q.group > (1ull << 32)) return "must have groups of at most 4,294,967,296 weights";
    if (q.pad_hidden == 0 || q.pad_hidden > 4096 || q.pad_intermediate == 0 || q.pad_intermediate > 4096)
        return "must have paddings of 1 to 4,096";
    return std::nullopt;
}

std::optional<WeightQuant> weight_quant_from_config(const json::Value& config, std::vector<std::string>& notes) {
    std::vector<std::string> bad;
    auto q = scheme_of(config, notes, bad);
    if (!q) return q;
    const std::string method = "quantization_config '" + q->method + "'";
    if (!bad.empty()) {
        std::string keys;
        for (const auto& k : bad) keys += (keys.empty() ? "" : ", ") + k;
        notes.push_back(method + ": " + keys +
                        " is not a whole number of the right sign; weights taken as the "
                        "model's dtype");
        return std::nullopt;
    }
    if (const auto problem = weight_quant_problem(*q)) {
        notes.push_back(method + " " + *problem + "; weights taken as the model's dtype");
        return std::nullopt;
    }
    return q;
}

Result<QuantizedWeights> quantized_weights(const Architecture& arch, const WeightQuant& q, KvDtype rest_dtype,
                                           bool per_token) {
    // The stored weights split the total (published where known) into the quantized matrices and the rest. A step
    // reads every matrix once and one embedding row: taken from the shape alone, since published active counts
    // differ in whether they hold the embedding (gpt-oss's leave it out).
    Architecture shape = arch;
    shape.params_total = shape.params_active = 0;
    const ParameterCount p = per_token ? estimate_parameters(shape) : parameters(arch);
    const std::uint64_t all =
        per_token ? p.active - std::min(p.active, arch.tied_embeddings ? std::uint64_t{0} : p.embedding) : p.total;
    const std::uint64_t experts = per_token ? p.experts_active : p.experts;
    // Rounds up a division; an overflowed count stays overflowed.
    const auto div_up = [](Checked a, std::uint64_t d) {
        return a.overflow() ? a : Checked(a.value() / d + (a.value() % d != 0 ? 1 : 0));
    };
    Checked stored(q.experts_only ? experts : (per_token ? p.linear_active : p.linear));
    if (q.experts_only && arch.moe && arch.moe->expert_intermediate_size > 0 && arch.hidden_size > 0) {
        // The experts as the engine pads them: whole expert matrices of hidden x intermediate, each rounded up.
        const auto up = [](std::uint64_t n, std::uint64_t m) {
            return m > 1 ? Checked(n / m + (n % m != 0)) * m : Checked(n);
        };
        const std::uint64_t h = arch.hidden_size, i = arch.moe->expert_intermediate_size;
        stored = Checked(experts / h / i) * up(h, q.pad_hidden) * up(i, q.pad_intermediate);
    }
    std::uint64_t quantized = q.experts_only ? experts : (per_token ? p.linear_active : p.linear);
    if (q.lm_head) {
        quantized += p.head;
        stored += Checked(p.head);
    }
    if (quantized > all) {  // a published count below the shape's: all of it quantized
        stored = Checked(all);
        quantized = all;
    }
    const std::uint64_t group = q.per_row ? arch.hidden_size : q.group;
    Checked bits = stored * q.bits;
    if (group > 0) bits += div_up(stored, group) * (Checked(q.scale_bits) + q.zero_bits);
    const std::uint64_t rest = all - quantized;
    const Checked bytes = div_up(bits, 8) + row_bytes(rest_dtype, rest);
    if (bytes.overflow()) return overflow_error(Field::weight_dtype, "the weights");
    return QuantizedWeights{bytes.value(), quantized, rest};
}

}  // namespace kvscope
