#pragma once
// Domain helpers for the calculator tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/json_members.h"
#include "kvscope/calculator/kv_cache.h"
#include "kvscope/calculator/result.h"

namespace kvscope::testing {

// The bf16 cache of `a` at `tokens` a sequence (a failed report is a test failure, and empty).
inline KvCacheReport report(const Architecture& a, std::uint64_t tokens, std::uint64_t batch = 1,
                            std::uint64_t tp = 1) {
    auto r = kv_cache_report(a, KvDtype::bf16, {.context_tokens = tokens, .batch = batch}, {.tp = tp});
    EXPECT_TRUE(r) << a.name << ": " << r.error_text();
    return r ? *r : KvCacheReport{};
}

// A config.json of these members (the text between its braces).
inline Result<ImportedModel> import(const std::string& body) { return import_config("{" + body + "}", "config.json"); }

// A Llama-style architecture with the given shape.
inline Architecture make_arch(std::uint64_t layers, std::uint64_t q, std::uint64_t kv, std::uint64_t head_dim) {
    Architecture a;
    a.name = "test";
    a.layers = layers;
    a.query_heads = q;
    a.kv_heads = kv;
    a.head_dim_k = a.head_dim_v = head_dim;
    a.hidden_size = q * head_dim;
    a.intermediate_size = 4 * a.hidden_size;
    a.vocab_size = 32000;
    a.max_positions = 1u << 20;
    return a;
}

// A catalog model's architecture; a failure (and an empty architecture) where the catalog has no such id.
inline const Architecture& catalog_arch(const std::string& id) {
    const CatalogModel* m = Catalog::builtin().find_model(id);
    EXPECT_NE(m, nullptr) << id;
    static const Architecture none;
    return m ? m->model.arch : none;
}

// Whether one of the texts holds `fragment`.
inline bool contains_line(const std::vector<std::string>& texts, const std::string& fragment) {
    for (const auto& t : texts)
        if (t.find(fragment) != std::string::npos) return true;
    return false;
}

// The texts one to a line, for failure messages.
inline std::string join(const std::vector<std::string>& texts) {
    std::string out;
    for (const auto& t : texts) out += "\n  " + t;
    return out;
}

// An error on `field` whose message holds `fragment`. Where `field` is a scenario input's key, the error
// must name that input as its Field too: the window marks inputs by it, not by the text.
inline bool has_error(const Errors& errors, const std::string& field, const std::string& fragment = "") {
    return std::any_of(errors.begin(), errors.end(), [&](const FieldError& e) {
        const Field input = parse_field(field);
        return e.field == field && (input == Field::none || e.input == input) &&
               e.message.find(fragment) != std::string::npos;
    });
}

// The number of members of an aggregate: the most initialisers it takes, each converting to whatever its member is.
struct AnyMember {
    template <class T>
    operator T() const;  // NOLINT(google-explicit-constructor): only named in unevaluated expressions
};
template <class T, class... Taken>
constexpr std::size_t member_count() {
    if constexpr (requires { T{Taken{}..., AnyMember{}}; })
        return member_count<T, Taken..., AnyMember>();
    else
        return sizeof...(Taken);
}

// A report's declaration (json_members.h; report_json.cpp, measured_step.cpp) names every member of its struct once,
// each inside the struct, each with a key or where it is given instead; and each key it gives is in `object`, the
// report's JSON. A member added to the struct and left out of its declaration fails here.
template <class T>
void expect_declared_once(const T& report, const json::Value& object, const char* what) {
    SCOPED_TRACE(what);
    const std::vector<DeclaredMember> declared = declared_members(report);
    EXPECT_EQ(declared.size(), member_count<T>());
    std::set<const void*> seen;
    const auto* begin = reinterpret_cast<const std::byte*>(&report);
    for (const DeclaredMember& m : declared) {
        EXPECT_TRUE(seen.insert(m.address).second) << "declared twice: " << m.key << m.elsewhere;
        const auto* at = static_cast<const std::byte*>(m.address);
        EXPECT_TRUE(at >= begin && at + m.size <= begin + sizeof report) << m.key << m.elsewhere;
        EXPECT_NE(m.key.empty(), m.elsewhere.empty()) << "a key, or where it is given instead: " << m.key;
        if (!m.key.empty()) {
            EXPECT_NE(object.find(m.key), nullptr) << m.key;
        }
    }
}

}  // namespace kvscope::testing

// The result is an error on `field` whose message contains `fragment`.
#define EXPECT_FIELD_ERROR(result, field, fragment)                                                                    \
    do {                                                                                                               \
        const auto& r_ = (result);                                                                                     \
        ASSERT_FALSE(r_.ok()) << "expected an error on " << (field);                                                   \
        EXPECT_TRUE(::kvscope::testing::has_error(r_.errors(), (field), (fragment))) << "errors: " << r_.error_text(); \
    } while (0)
