#include "kvscope/calculator/gguf.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <streambuf>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/units.h"
#include "open_file.h"

namespace kvscope::gguf {
namespace {

constexpr std::uint32_t kMaxDims = 4;                // GGML_MAX_DIMS
constexpr std::uint64_t kMaxKeyBytes = 1u << 16;     // a key longer than this is corruption, not a name
constexpr int kMaxNesting = 2;                       // an array of arrays (gguf.cpp reads no deeper)
constexpr std::uint64_t kKeptText = 1u << 20;        // longer metadata texts are skipped
constexpr std::uint64_t kKeptItemsInAll = 1u << 18;  // array items kept in all (a few per-layer arrays)

// The smallest number of bytes an item of `type` takes in the file: how a count is checked against the rest
// of the file before anything is allocated.
std::uint64_t min_bytes(Type type) {
    switch (type) {
        case Type::u8:
        case Type::i8:
        case Type::boolean:
            return 1;
        case Type::u16:
        case Type::i16:
            return 2;
        case Type::u32:
        case Type::i32:
        case Type::f32:
            return 4;
        case Type::u64:
        case Type::i64:
        case Type::f64:
        case Type::string:
            return 8;  // the length
        case Type::array:
            return 12;  // item type and count
    }
    return 1;
}

// Reads through a buffer of its own: a tokenizer's 400,000 short strings are read and skipped in memory, not one
// stream call (and one seek) each.
class Reader {
public:
    Reader(std::istream& in, std::uint64_t size, const std::string& source) : in_(in), size_(size), source_(source) {}

    [[nodiscard]] std::uint64_t offset() const { return offset_; }
    [[nodiscard]] std::uint64_t left() const { return size_ - offset_; }

    FieldError error(std::uint64_t at, const std::string& what) const {
        return FieldError{"gguf", source_ + ": byte " + format_count(at) + ": " + what};
    }

    // `n` bytes described as `what` (into `out`, or skipped when it is null), or an error saying where the file
    // ends.
    std::optional<FieldError> bytes(void* out, std::uint64_t n, const std::string& what) {
        if (n > left())
            return error(offset_, "expected " + what + " (" + format_count(n) + " bytes), but the file ends at byte " +
                                      format_count(size_));
        auto* to = static_cast<char*>(out);
        while (n > 0) {
            if (pos_ == len_) {
                if (!out && n > buffer_.size()) {  // a long skip: move the stream, not the bytes
                    if (!in_.seekg(static_cast<std::streamoff>(offset_ + n)))
                        return error(offset_, "the file could not be read here (" + what + ")");
                    offset_ += n;
                    return std::nullopt;
                }
                in_.read(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
                len_ = static_cast<std::size_t>(in_.gcount()), pos_ = 0;
                in_.clear();
                if (len_ == 0) return error(offset_, "the file could not be read here (" + what + ")");
            }
            const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, len_ - pos_));
            if (to) {
                std::memcpy(to, buffer_.data() + pos_, take);
                to += take;
            }
            pos_ += take, offset_ += take, n -= take;
        }
        return std::nullopt;
    }
    std::optional<FieldError> skip(std::uint64_t n, const std::string& what) { return bytes(nullptr, n, what); }

    // Whether `items` more array items may be kept (kKeptItemsInAll for the whole file).
    bool keep(std::uint64_t items) {
        if (items > kept_left_) return false;
        kept_left_ -= items;
        return true;
    }

    template <class T>
    std::optional<FieldError> number(T& out, const std::string& what) {
        std::array<unsigned char, sizeof(T)> raw{};
        if (auto e = bytes(raw.data(), sizeof(T), what)) return e;
        std::uint64_t bits = 0;
        for (std::size_t k = 0; k < sizeof(T); ++k) bits |= static_cast<std::uint64_t>(raw[k]) << (8 * k);
        if constexpr (sizeof(T) == 8) {
            out = std::bit_cast<T>(bits);
        } else if constexpr (sizeof(T) == 4) {
            out = std::bit_cast<T>(static_cast<std::uint32_t>(bits));
        } else if constexpr (sizeof(T) == 2) {
            out = std::bit_cast<T>(static_cast<std::uint16_t>(bits));
        } else {
            out = std::bit_cast<T>(static_cast<std::uint8_t>(bits));
        }
        return std::nullopt;
    }

    // A string: its u64 length, checked against the rest of the file and `max`, then its bytes.
    // Keys and tensor names: their raw bytes are compared for duplicates (as ggml compares them), then repaired.
    std::optional<FieldError> string(std::string& out, const std::string& what, std::uint64_t max) {
        const std::uint64_t at = offset_;
        std::uint64_t length = 0;
        if (auto e = number(length, "the length of " + what)) return e;
        if (length > left() || length > max)
            return error(at, what + " is said to be " + format_count(length) + " bytes long, more than " +
                                 (length > max ? "any " + what + " may be (" + format_count(max) + ")"
                                               : "the " + format_count(left()) + " bytes left in the file"));
        out.resize(length);
        return bytes(out.data(), length, what);
    }

private:
    std::istream& in_;
    std::uint64_t size_;
    const std::string& source_;
    std::uint64_t offset_ = 0;
    std::vector<char> buffer_ = std::vector<char>(1u << 16);
    std::size_t pos_ = 0, len_ = 0;  // the unread part of the buffer: [pos_, len_)
    std::uint64_t kept_left_ = kKeptItemsInAll;
};

// A value stored as T in the file, widened into `to`.
template <class T, class To>
std::optional<FieldError> read_as(Reader& r, const std::string& what, To& to) {
    T v{};
    if (auto e = r.number(v, what)) return e;
    to = static_cast<To>(v);
    return std::nullopt;
}

// `what` describes the value in messages ("llama.block_count's value"): built once by the caller, not per item.
std::optional<FieldError> read_value(Reader& r, Type type, Value& out, const std::string& key, const std::string& what,
                                     int depth) {
    out.type = type;
    switch (type) {
        case Type::u8:
            return read_as<std::uint8_t>(r, what, out.u);
        case Type::i8: {
            std::uint8_t v = 0;  // two's complement, read as its byte
            if (auto e = r.number(v, what)) return e;
            out.i = v < 128 ? static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v) - 256;
            return std::nullopt;
        }
        case Type::u16:
            return read_as<std::uint16_t>(r, what, out.u);
        case Type::i16:
            return read_as<std::int16_t>(r, what, out.i);
        case Type::u32:
            return read_as<std::uint32_t>(r, what, out.u);
        case Type::i32:
            return read_as<std::int32_t>(r, what, out.i);
        case Type::u64:
            return r.number(out.u, what);
        case Type::i64:
            return r.number(out.i, what);
        case Type::f32:
            return read_as<float>(r, what, out.f);
        case Type::f64:
            return r.number(out.f, what);
        case Type::boolean: {
            std::uint8_t v = 0;
            const std::uint64_t at = r.offset();
            if (auto e = r.number(v, what)) return e;
            if (v > 1) return r.error(at, key + " is a bool but holds " + std::to_string(v) + " (0 or 1 expected)");
            out.u = v;
            return std::nullopt;
        }
        case Type::string: {
            // A text longer than kKeptText (an embedded tokenizer.json) is skipped, not kept: only short texts
            // (names, the architecture) are ever read, and nothing is allocated for what the file merely claims.
            const std::uint64_t at = r.offset();
            std::uint64_t length = 0;
            if (auto e = r.number(length, what)) return e;
            if (length > r.left())
                return r.error(at, key + "'s text is said to be " + format_count(length) +
                                       " bytes long, more than the " + format_count(r.left()) +
                                       " bytes left in the file");
            if (length > kKeptText) {
                out.count = length;
                return r.skip(length, what);
            }
            out.s.resize(length);
            if (auto e = r.bytes(out.s.data(), length, what)) return e;
            // GGUF promises UTF-8 but does not check it: a name of stray bytes is shown, and written in JSON,
            // with U+FFFD for each.
            out.s = json::valid_utf8(out.s);
            return std::nullopt;
        }
        case Type::array: {
            if (depth >= kMaxNesting) return r.error(r.offset(), key + " nests arrays deeper than GGUF files do");
            const std::uint64_t at = r.offset();
            std::uint32_t item = 0;
            if (auto e = r.number(item, key + "'s item type")) return e;
            if (item > static_cast<std::uint32_t>(Type::f64))
                return r.error(at,
                               key + " is an array of type " + std::to_string(item) + ", which is no GGUF type (0-12)");
            out.item_type = static_cast<Type>(item);
            if (auto e = r.number(out.count, key + "'s item count")) return e;
            if (out.count > r.left() / min_bytes(out.item_type))
                return r.error(at + 4, key + " is said to hold " + format_count(out.count) + " items, more than the " +
                                           format_count(r.left()) + " bytes left in the file can hold");
            // Kept: short arrays of numbers (per-layer settings), within a budget for the whole file, so that a
            // crafted file cannot make the reader hold many times its own size. The tokenizer's arrays (one number
            // per token; gguf-py's gguf/constants.py Keys.Tokenizer) are only ever counted: kept, a vocabulary
            // written before the model's keys would spend the budget its per-layer arrays need.
            const bool keep = out.count <= kKeptItems && out.item_type != Type::string &&
                              out.item_type != Type::array && !key.starts_with("tokenizer.") && r.keep(out.count);
            if (keep) out.items.resize(out.count);
            Value scratch;
            const std::string items = key + "'s items";
            for (std::uint64_t k = 0; k < out.count; ++k) {
                if (!keep && out.item_type == Type::string) {  // the tokenizer's vocabulary: lengths only
                    const std::uint64_t s = r.offset();
                    std::uint64_t length = 0;
                    if (auto e = r.number(length, items)) return e;
                    if (length > r.left())
                        return r.error(s, key + "[" + std::to_string(k) + "] is said to be " + format_count(length) +
                                              " bytes long, more than the " + format_count(r.left()) +
                                              " bytes left in the file");
                    if (auto e = r.skip(length, items)) return e;
                    continue;
                }
                if (auto e = read_value(r, out.item_type, keep ? out.items[k] : scratch, key, items, depth + 1))
                    return e;
            }
            return std::nullopt;
        }
    }
    return r.error(r.offset(), "unknown type");
}

Result<File> read_header(Reader& r) {
    File f;
    std::array<char, 4> magic{};
    if (auto e = r.bytes(magic.data(), 4, "the magic \"GGUF\"")) return *e;
    if (std::memcmp(magic.data(), "GGUF", 4) != 0)
        return r.error(0, "expected the magic \"GGUF\"; this is not a GGUF file");
    if (auto e = r.number(f.version, "the version")) return *e;
    if (f.version == 0x02000000 || f.version == 0x03000000)
        return r.error(4,
                       "this GGUF is big-endian (for s390x and other big-endian machines); convert the model "
                       "again for a little-endian machine");
    if (f.version != 2 && f.version != 3)
        return r.error(4, "GGUF version " + std::to_string(f.version) +
                              " is not read (2 and 3 are; version 1 files predate August 2023 — convert them again)");
    std::uint64_t tensors = 0, entries = 0;
    if (auto e = r.number(tensors, "the number of tensors")) return *e;
    if (auto e = r.number(entries, "the number of metadata entries")) return *e;
    // Each entry takes at least a key length, a type and one byte; each tensor info at least 8 + 4 + 4 + 8 bytes.
    if (entries > r.left() / 13)
        return r.error(16, "the file is said to hold " + format_count(entries) + " metadata entries, more than its " +
                               format_count(r.left()) + " remaining bytes can hold");
    if (tensors > r.left() / 24)
        return r.error(8, "the file is said to hold " + format_count(tensors) + " tensors, more than its " +
                              format_count(r.left()) + " remaining bytes can hold");
    // Nothing is reserved from the claimed counts: a corrupt count in a large file must not allocate for it.
    // A key or a tensor named twice is refused, as ggml refuses the file (ggml/src/gguf.cpp gguf_init_from_file_impl:
    // "duplicate key", "duplicate tensor name"): which of the two a model would be read with is no one's guess.
    std::set<std::string, std::less<>> seen;
    for (std::uint64_t k = 0; k < entries; ++k) {
        std::string key;
        const std::uint64_t key_at = r.offset();
        if (auto e = r.string(key, "metadata key " + std::to_string(k + 1), kMaxKeyBytes)) return *e;
        if (!seen.insert(key).second)
            return r.error(
                key_at, json::valid_utf8(key) + " is in the file twice; llama.cpp refuses such a file (duplicate key)");
        key = json::valid_utf8(key);  // shown, and written in JSON, as UTF-8 (as the values, read_value)
        const std::uint64_t at = r.offset();
        std::uint32_t type = 0;
        if (auto e = r.number(type, key + "'s type")) return *e;
        if (type > static_cast<std::uint32_t>(Type::f64))
            return r.error(at, key + " has type " + std::to_string(type) + ", which is no GGUF type (0-12)");
        Value v;
        if (auto e = read_value(r, static_cast<Type>(type), v, key, key + "'s value", 0)) return *e;
        f.metadata.emplace_back(std::move(key), std::move(v));
    }
    std::set<std::string, std::less<>> tensor_names;
    for (std::uint64_t k = 0; k < tensors; ++k) {
        TensorInfo t;
        const std::uint64_t name_at = r.offset();
        if (auto e = r.string(t.name, "tensor " + std::to_string(k + 1) + "'s name", kMaxKeyBytes)) return *e;
        if (!tensor_names.insert(t.name).second)
            return r.error(name_at, "the tensor " + json::valid_utf8(t.name) +
                                        " is in the file twice; llama.cpp refuses such a file (duplicate tensor name)");
        t.name = json::valid_utf8(t.name);
        const std::uint64_t at = r.offset();
        std::uint32_t dims = 0;
        if (auto e = r.number(dims, t.name + "'s number of dimensions")) return *e;
        if (dims == 0 || dims > kMaxDims)
            return r.error(at, t.name + " has " + std::to_string(dims) + " dimensions (1 to 4 expected)");
        t.dims.resize(dims);
        for (auto& d : t.dims)
            if (auto e = r.number(d, t.name + "'s dimensions")) return *e;
        if (auto e = r.number(t.type, t.name + "'s type")) return *e;
        if (auto e = r.number(t.offset, t.name + "'s offset")) return *e;
        f.tensors.push_back(std::move(t));
    }
    f.header_bytes = r.offset();
    return f;
}

}  // namespace

std::string_view to_string(Type type) {
    static constexpr std::array<std::string_view, 13> kNames{"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                             "bool", "string", "array", "u64", "i64", "f64"};
    const auto k = static_cast<std::size_t>(type);
    return k < kNames.size() ? kNames.at(k) : "unknown";
}

bool Value::is_integer() const {
    switch (type) {
        case Type::u8:
        case Type::i8:
        case Type::u16:
        case Type::i16:
        case Type::u32:
        case Type::i32:
        case Type::u64:
        case Type::i64:
            return true;
        default:
            return false;
    }
}

std::optional<std::uint64_t> Value::as_u64() const {
    switch (type) {
        case Type::u8:
        case Type::u16:
        case Type::u32:
        case Type::u64:
        case Type::boolean:
            return u;
        case Type::i8:
        case Type::i16:
        case Type::i32:
        case Type::i64:
            if (i < 0) return std::nullopt;
            return static_cast<std::uint64_t>(i);
        default:
            return std::nullopt;
    }
}

std::optional<double> Value::as_double() const {
    if (type == Type::f32 || type == Type::f64) return f;
    if (type == Type::i8 || type == Type::i16 || type == Type::i32 || type == Type::i64) return static_cast<double>(i);
    if (const auto n = as_u64()) return static_cast<double>(*n);
    return std::nullopt;
}

std::string Value::describe() const {
    if (type == Type::array) return "an array of " + format_count(count) + " " + std::string(to_string(item_type));
    if (type == Type::string) return "the text '" + s + "'";
    if (type == Type::f32 || type == Type::f64) return std::string(to_string(type)) + " " + number_text(f);
    if (type == Type::i8 || type == Type::i16 || type == Type::i32 || type == Type::i64)
        return std::string(to_string(type)) + " " + std::to_string(i);
    return std::string(to_string(type)) + " " + std::to_string(u);
}

const Value* File::find(std::string_view key) const {
    for (const auto& [k, v] : metadata)
        if (k == key) return &v;
    return nullptr;
}

Result<File> read(std::istream& in, std::uint64_t size, const std::string& source) {
    Reader r(in, size, source);
    auto f = read_header(r);
    if (f) f.value().file_bytes = size;
    return f;
}

std::optional<std::string> missing_tensor_data(const File& f) {
    if (f.file_bytes == 0 || f.tensors.empty()) return std::nullopt;
    std::uint64_t alignment = 32;
    if (const Value* a = f.find("general.alignment"))
        if (const auto v = a->as_u64(); v && *v > 0 && *v <= (1u << 20)) alignment = *v;
    // header_bytes is within the file, far from 2^64: the padding cannot overflow it.
    const Checked data_start = Checked(f.header_bytes) + (alignment - f.header_bytes % alignment) % alignment;
    Checked end = data_start;
    for (const TensorInfo& t : f.tensors) {
        const auto bytes = tensor_bytes(t);
        if (!bytes) continue;  // said by the import, which needs every tensor's size
        const Checked tensor_end = data_start + t.offset + *bytes;
        if (tensor_end.overflow() || tensor_end.value() > end.value()) end = tensor_end;
        if (end.overflow()) break;  // past 2^64: no later tensor ends further
    }
    if (!end.overflow() && end.value() <= f.file_bytes) return std::nullopt;
    const std::string needed = end.overflow() ? "more than 2^64 bytes" : "byte " + format_count(end.value());
    if (!data_start.overflow() && f.file_bytes <= data_start.value())
        return "the file holds none of its tensors' data (it ends at byte " + format_count(f.file_bytes) +
               ", they would reach " + needed +
               "): a header-only or cut-short download, which llama.cpp cannot load (\"tensor data is not within the "
               "file bounds\")";
    return "the file ends at byte " + format_count(f.file_bytes) + ", before its tensors' data does (at " + needed +
           "): a download cut short, which llama.cpp cannot load (\"tensor data is not within the file bounds\")";
}

namespace {
// A stream over bytes already in memory, without copying them (the fuzzer's and the tests' input).
class MemoryBuffer : public std::streambuf {
public:
    explicit MemoryBuffer(std::string_view bytes) {
        char* begin = const_cast<char*>(bytes.data());  // NOLINT(cppcoreguidelines-pro-type-const-cast): read only
        setg(begin, begin, begin + bytes.size());
    }

protected:
    pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode /*which*/) override {
        const off_type base =
            dir == std::ios_base::beg ? 0 : (dir == std::ios_base::cur ? gptr() - eback() : egptr() - eback());
        const off_type to = base + off;
        if (to < 0 || to > egptr() - eback()) return pos_type(off_type(-1));
        setg(eback(), eback() + to, egptr());
        return pos_type(to);
    }
    pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
        return seekoff(off_type(pos), std::ios_base::beg, which);
    }
};
}  // namespace

Result<File> read(std::string_view bytes, const std::string& source) {
    MemoryBuffer buffer(bytes);
    std::istream in(&buffer);
    return read(in, bytes.size(), source);
}

Result<File> read_file(const std::string& path) {
    auto file = open_file(path, "gguf", "a GGUF file", "--model-dir reads a model's folder");
    if (!file) return file.errors();
    return read(file.value().in, file->size, path);
}

std::optional<TypeInfo> type_info(std::uint32_t type) {
    // ggml/include/ggml.h enum ggml_type; block sizes and bytes from ggml/src/ggml.c type_traits and the block
    // structs of ggml/src/ggml-common.h (ids 4, 5, 31-33 and 36-38 were removed and are no type;
    // GGML_TYPE_COUNT is 43 in ggml of August 2026).
    struct Row {
        std::uint32_t id;
        TypeInfo info;
    };
    static constexpr std::array<Row, 35> kTypes{{
        {0, {"f32", 1, 4}},         {1, {"f16", 1, 2}},         {2, {"q4_0", 32, 18}},      {3, {"q4_1", 32, 20}},
        {6, {"q5_0", 32, 22}},      {7, {"q5_1", 32, 24}},      {8, {"q8_0", 32, 34}},      {9, {"q8_1", 32, 36}},
        {10, {"q2_K", 256, 84}},    {11, {"q3_K", 256, 110}},   {12, {"q4_K", 256, 144}},   {13, {"q5_K", 256, 176}},
        {14, {"q6_K", 256, 210}},   {15, {"q8_K", 256, 292}},   {16, {"iq2_xxs", 256, 66}}, {17, {"iq2_xs", 256, 74}},
        {18, {"iq3_xxs", 256, 98}}, {19, {"iq1_s", 256, 50}},   {20, {"iq4_nl", 32, 18}},   {21, {"iq3_s", 256, 110}},
        {22, {"iq2_s", 256, 82}},   {23, {"iq4_xs", 256, 136}}, {24, {"i8", 1, 1}},         {25, {"i16", 1, 2}},
        {26, {"i32", 1, 4}},        {27, {"i64", 1, 8}},        {28, {"f64", 1, 8}},        {29, {"iq1_m", 256, 56}},
        {30, {"bf16", 1, 2}},       {34, {"tq1_0", 256, 54}},   {35, {"tq2_0", 256, 66}},   {39, {"mxfp4", 32, 17}},
        {40, {"nvfp4", 64, 36}},    {41, {"q1_0", 128, 18}},    {42, {"q2_0", 64, 18}},
    }};
    for (const Row& row : kTypes)
        if (row.id == type) return row.info;
    return std::nullopt;
}

Result<std::uint64_t> tensor_bytes(const TensorInfo& tensor) {
    const auto info = type_info(tensor.type);
    if (!info)
        return FieldError{"gguf",
                          tensor.name + " has ggml type " + std::to_string(tensor.type) + ", which is not known"};
    if (tensor.dims.empty() || tensor.dims[0] % info->block != 0)
        return FieldError{"gguf", tensor.name + ": a row of " +
                                      (tensor.dims.empty() ? "0" : format_count(tensor.dims[0])) +
                                      " values is not a whole number of " + std::string(info->name) + " blocks of " +
                                      std::to_string(info->block)};
    Checked bytes = Checked(tensor.dims[0] / info->block) * info->block_bytes;
    for (std::size_t d = 1; d < tensor.dims.size(); ++d) bytes = bytes * tensor.dims[d];
    if (bytes.overflow()) return FieldError{"gguf", tensor.name + ": its size overflows 64 bits"};
    return bytes.value();
}

}  // namespace kvscope::gguf
