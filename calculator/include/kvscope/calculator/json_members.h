#pragma once
// A report's JSON written from one declaration of its struct's members, as the scenario file is: a function template
// `members(report, v)` names each member once, in the order the JSON writes them, with its key (`v.field`, or
// `v.value` with the member's JSON made otherwise) or where it is given instead and why (`v.elsewhere`). JsonWriter
// writes the keys; MemberList lists the declaration, and the tests (ReportJson.Every…MemberIsDeclaredOnce) check
// that it names every member of the struct exactly once, so a member added and left out of the JSON fails them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kvscope/calculator/json.h"

namespace kvscope {

// A member of a report as its JSON declares it: where it is (its address and size in the report given), its key,
// or, for one written elsewhere or not at all, where and why.
struct DeclaredMember {
    const void* address = nullptr;
    std::size_t size = 0;
    std::string key;
    std::string elsewhere;
};

// A member written as it is: its JSON follows from its type (a count, a signed byte difference, a ratio, a flag, a
// name).
inline json::Value plain_json(std::uint64_t n) { return json::Value::number(n); }
inline json::Value plain_json(std::int64_t n) { return json::Value::number_signed(n); }
inline json::Value plain_json(double d) { return json::Value::number(d); }
inline json::Value plain_json(bool b) { return json::Value::boolean(b); }
inline json::Value plain_json(const std::string& text) { return json::Value::string(text); }
inline json::Value plain_json(const std::vector<std::string>& texts) { return json::Value::strings(texts); }

// Writes the members a declaration gives a key into a report's object.
struct JsonWriter {
    json::Value& out;
    template <class M>
    void field(const M& member, const char* key) {
        out.set(key, plain_json(member));
    }
    template <class M>
    void value(const M&, const char* key, json::Value v) {
        out.set(key, std::move(v));
    }
    template <class M>
    void elsewhere(const M&, const char*) {}
    // A key that is no member of the struct: a figure derived from its members, or the inputs the report is of
    // (written here, listed by no one).
    void also(const char* key, json::Value v) { out.set(key, std::move(v)); }
};

// Lists a declaration's members, with their keys or where they are given instead.
struct MemberList {
    std::vector<DeclaredMember> members;
    template <class M>
    void field(const M& member, const char* key) {
        members.push_back({&member, sizeof(M), key, ""});
    }
    template <class M>
    void value(const M& member, const char* key, const json::Value&) {
        members.push_back({&member, sizeof(M), key, ""});
    }
    template <class M>
    void elsewhere(const M& member, const char* where) {
        members.push_back({&member, sizeof(M), "", where});
    }
    void also(const char*, const json::Value&) {}
};

// `report`'s members as `declare(report, visitor)` declares them, listed.
template <class T, class Declare>
std::vector<DeclaredMember> list_members(const T& report, Declare declare) {
    MemberList list;
    declare(report, list);
    return std::move(list.members);
}

// `report` as a JSON object, from the same declaration.
template <class T, class Declare>
json::Value members_json(const T& report, Declare declare) {
    json::Value o = json::Value::object();
    JsonWriter writer{o};
    declare(report, writer);
    return o;
}

}  // namespace kvscope
