#pragma once
// Domain helpers for the calculator tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/result.h"

namespace kvscope::testing {

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

}  // namespace kvscope::testing

// The result is an error on `field` whose message contains `fragment`.
#define EXPECT_FIELD_ERROR(result, field, fragment)                                                                    \
    do {                                                                                                               \
        const auto& r_ = (result);                                                                                     \
        ASSERT_FALSE(r_.ok()) << "expected an error on " << (field);                                                   \
        EXPECT_TRUE(::kvscope::testing::has_error(r_.errors(), (field), (fragment))) << "errors: " << r_.error_text(); \
    } while (0)
