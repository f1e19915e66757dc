#pragma once
// Inside the config.json importer (config_import.cpp: the shape, attention, experts and formats;
// config_layouts.cpp: what each layer keeps and the recurrent state): the reader of typed fields that
// both use. Not a public header.

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/numbers.h"

namespace kvscope::importer {

using json::Value;

// Defaults of transformers' configuration classes, for the fields KVScope reads.
const std::map<std::string, std::map<std::string, std::uint64_t>>& type_defaults();

struct Found {
    std::uint64_t value = 0;
    std::string key;
    int line = 0;
    bool assumed = false;
};

class Reader {
public:
    Reader(const Value& root, const Value& cfg, std::string source, ImportedModel& out)
        : root_(root), cfg_(cfg), source_(std::move(source)), out_(out) {}

    Errors errors;
    std::map<Field, int> lines;            // Architecture field -> line it came from
    std::map<Field, std::string> keys;     // Architecture field -> the config key that gave it
    std::vector<std::string> layout_keys;  // layout fields the importer read (never reported as unknown)
    // Every key a rule looked for, given or not: a per-layer list none of them asked for is named as not read.
    mutable std::set<std::string, std::less<>> asked;

    std::string at(int line) const { return source_ + ":" + std::to_string(line) + ": "; }

    // Messages name the config key themselves ("num_attention_heads must be …"); join_errors then
    // leaves out the field in front, so the key is said once.
    void error(const std::string& key, int line, const std::string& message) {
        FieldError e{key, at(line) + message};
        // A key read twice (its spelling in two rules) is wrong once.
        if (std::find(errors.begin(), errors.end(), e) == errors.end()) errors.push_back(std::move(e));
    }
    // A value the file does not give and the importer could not derive: named by the input it is.
    void error(Field input, int line, const std::string& message) { errors.push_back({input, at(line) + message}); }

    const Value* get(const char* key) const {
        asked.insert(key);
        const Value* v = cfg_.find(key);
        return v && !v->is_null() ? v : nullptr;
    }

    // Whether a list of one value per layer is read (as its largest value): only where the caller reads an MLP width
    // or an expert count, which weigh the weights. A cache's heads, a state's dimensions stay one number.
    enum class PerLayer { no, largest };

    // A whole number under any of `spellings`; spellings that disagree are an error.
    std::optional<Found> number(std::initializer_list<const char*> spellings, PerLayer lists = PerLayer::no) {
        std::optional<Found> found;
        for (const char* key : spellings) {
            const Value* v = get(key);
            if (!v) continue;
            const bool listed = v->is_array() && lists == PerLayer::largest;
            const auto n = listed ? per_layer(key, *v) : v->as_u64();
            if (!n) {
                if (!listed) error(key, v->line(), std::string(key) + " must be a whole number, found " + describe(*v));
                return std::nullopt;
            }
            if (found && found->value != *n) {
                error(key, v->line(),
                      std::string(key) + " (" + std::to_string(*n) + ") contradicts " + found->key + " (" +
                          std::to_string(found->value) + ") on line " + std::to_string(found->line));
                return std::nullopt;
            }
            if (!found) found = Found{*n, key, v->line()};
        }
        return found;
    }

    // A list of one value per layer (vLLM hunyuan_v1.py indexes moe_topk and moe_intermediate_size by layer;
    // Gemma 3n lists intermediate_size): one value when they agree, else the largest, said as assumed.
    std::optional<std::uint64_t> per_layer(const char* key, const Value& list) {
        const std::size_t layers = list.items().size();
        if (layers == 0 || (out_.arch.layers > 0 && layers != out_.arch.layers)) {
            error(key, list.line(),
                  std::string(key) + " lists " + std::to_string(layers) + " values for " +
                      std::to_string(out_.arch.layers) + " layers; give a whole number or one per layer");
            return std::nullopt;
        }
        std::optional<std::uint64_t> lo;
        std::uint64_t hi = 0;
        for (const Value& item : list.items()) {
            const auto n = item.as_u64();
            if (!n) {
                error(key, item.line(),
                      std::string(key) + " must list whole numbers, one per layer, found " + describe(item));
                return std::nullopt;
            }
            lo = std::min(lo.value_or(*n), *n);
            hi = std::max(hi, *n);
        }
        const std::string said = std::string(key) + " lists " + std::to_string(*lo) + " to " + std::to_string(hi) +
                                 " across the layers; " + std::to_string(hi) + " is taken for every layer";
        if (*lo != hi && std::find(out_.assumed.begin(), out_.assumed.end(), said) == out_.assumed.end())
            out_.assumed.push_back(said);
        return hi;
    }

    std::optional<std::uint64_t> type_default(const std::string& canonical) const {
        const auto& table = type_defaults();
        const auto t = table.find(out_.model_type);
        if (t == table.end()) return std::nullopt;
        const auto d = t->second.find(canonical);
        if (d == t->second.end()) return std::nullopt;
        return d->second;
    }

    // The field, else the model type's default (listed as assumed), else nullopt.
    std::optional<Found> number_or_default(std::initializer_list<const char*> spellings,
                                           PerLayer lists = PerLayer::no) {
        const std::size_t before = errors.size();
        if (auto f = number(spellings, lists)) return f;
        if (errors.size() != before) return std::nullopt;
        const std::string canonical = *spellings.begin();
        if (const auto d = type_default(canonical)) {
            out_.assumed.push_back(canonical + " = " + std::to_string(*d) + " (" + out_.model_type +
                                   " default; not in the file)");
            return Found{*d, canonical, cfg_.line(), true};
        }
        return std::nullopt;
    }

    // As above, but absence is an error naming the field.
    std::optional<Found> required(std::initializer_list<const char*> spellings) {
        const std::size_t before = errors.size();
        auto f = number_or_default(spellings);
        if (!f && errors.size() == before) {
            std::string also;
            for (auto it = spellings.begin() + 1; it != spellings.end(); ++it)
                also += std::string(also.empty() ? "" : ", ") + *it;
            error(*spellings.begin(), cfg_.line(),
                  std::string(*spellings.begin()) + " is missing" +
                      (also.empty() ? "" : " (also looked for " + also + ")") +
                      (out_.model_type.empty() ? "" : "; model_type '" + out_.model_type + "' has no default for it"));
        }
        return f;
    }

    std::optional<bool> flag(const char* key) {
        const Value* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_bool()) {
            error(key, v->line(), std::string(key) + " must be true or false, found " + describe(*v));
            return std::nullopt;
        }
        return v->as_bool();
    }

    static std::string describe(const Value& v) {
        if (v.is_string()) return "\"" + v.as_string() + "\" (a string)";
        if (const auto n = v.as_u64()) return std::to_string(*n);
        if (v.is_number()) {
            const double d = v.as_double();
            if (std::isnan(d)) return "NaN";
            if (d < 0) return "a negative number";
            if (std::isinf(d)) return "Infinity";
            // A whole number too large for 64 bits (1e30, 2^64), not a fraction.
            if (d >= 18446744073709551616.0) return number_text(d) + ", more than 2^64";
            return "a fraction";
        }
        return std::string(json::to_string(v.type()));
    }

    const Value& root_;
    const Value& cfg_;
    std::string source_;
    ImportedModel& out_;
};

// "bfloat16" -> bf16 and so on; none for a name that is no torch dtype (config_types.cpp).
std::optional<KvDtype> dtype_from_torch(const std::string& name);
// Model types whose MLP has two matrices (up, down) rather than a gated three (config_types.cpp).
bool ungated_mlp(const std::string& type);
// llama.cpp's architecture for a transformers model_type, where KVScope needs it; empty otherwise (config_types.cpp).
std::string gguf_arch_of(const std::string& type);

}  // namespace kvscope::importer
