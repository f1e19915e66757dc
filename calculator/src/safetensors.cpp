#include "kvscope/calculator/safetensors.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kvscope/calculator/checked.h"
#include "kvscope/calculator/config_import.h"
#include "kvscope/calculator/json.h"
#include "kvscope/calculator/local_models.h"
#include "kvscope/calculator/text_file.h"
#include "kvscope/calculator/units.h"
#include "open_file.h"

namespace kvscope::safetensors {
namespace fs = std::filesystem;
namespace {

// safetensors/src/tensor.rs: a header longer than 100,000,000 bytes is refused (MAX_HEADER_SIZE); the JSON
// reader here takes at most json::kMaxInputBytes, which is smaller and far above any published model's header.
constexpr std::uint64_t kMaxHeaderBytes = std::min<std::uint64_t>(100'000'000, json::kMaxInputBytes);

FieldError fail(const std::string& source, std::uint64_t at, const std::string& what) {
    return FieldError{"safetensors", source + ": byte " + format_count(at) + ": " + what};
}

// The header's length N from the file's first 8 bytes.
Result<std::uint64_t> header_length(std::string_view bytes, std::uint64_t file_size, const std::string& source) {
    if (bytes.size() < 8)
        return fail(source, 0,
                    "expected the header's length (8 bytes), but the file ends at byte " + format_count(bytes.size()));
    std::uint64_t n = 0;
    for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(k)]);
    if (n > kMaxHeaderBytes)
        return fail(source, 0,
                    "the header is said to be " + format_count(n) + " bytes long, more than the " +
                        format_count(kMaxHeaderBytes) + " a safetensors header may be");
    if (n > file_size - 8)
        return fail(source, 0,
                    "the header is said to be " + format_count(n) + " bytes long, but the file has " +
                        format_count(file_size - 8) + " bytes after the length");
    return n;
}

// A whole number as the safetensors library reads one (serde into usize): digits only, so 8.0 and 8e0 are refused
// as it refuses them, not read as 8.
std::optional<std::uint64_t> whole(const json::Value& v) {
    const std::string& literal = v.as_string();
    if (!v.is_number() || literal.empty() ||
        !std::all_of(literal.begin(), literal.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return v.as_u64();
}

}  // namespace

bool engine_skips(std::string_view name) {
    // The sources are in safetensors.h beside the declaration. The masks by their ending ("c_attn.bias" is a weight).
    constexpr std::array<std::string_view, 7> kBuffers{
        ".attn.bias",          ".attn.masked_bias",     ".attn.attention.bias", ".attn.attention.masked_bias",
        "rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached"};
    return std::any_of(kBuffers.begin(), kBuffers.end(), [&](std::string_view b) { return name.ends_with(b); });
}

bool quantized_at_load(std::string_view name, std::size_t rank) {
    // The sources are in safetensors.h beside the declaration.
    if (rank < 2) return false;  // norms, biases, scalars
    const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
    if (has("embed") || has("lm_head") || has("wte.") || has("wpe.") || has("A_log") || has("expert_gate") ||
        has("router"))
        return false;
    if (has("conv") && rank >= 3) return false;  // a convolution's kernel; LFM2's conv.in_proj is a linear layer
    return !name.ends_with(".gate.weight") && name != "gate.weight";  // a MoE router
}

std::optional<std::uint32_t> dtype_bits(std::string_view dtype) {
    // safetensors/src/tensor.rs enum Dtype and Dtype::bitsize.
    static constexpr std::array<std::pair<std::string_view, std::uint32_t>, 22> kBits{{
        {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6},     {"F6_E3M2", 6},     {"U8", 8},   {"I8", 8},
        {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8},     {"I16", 16},        {"U16", 16}, {"F16", 16},
        {"BF16", 16},   {"I32", 32},    {"U32", 32},        {"F32", 32},        {"C64", 64}, {"F64", 64},
        {"I64", 64},    {"U64", 64},    {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8},  // safetensors 0.8
    }};
    for (const auto& [name, bits] : kBits)
        if (name == dtype) return bits;
    return std::nullopt;
}

Result<Header> read_header(std::string_view bytes, std::uint64_t file_size, const std::string& source) {
    const auto n = header_length(bytes, file_size, source);
    if (!n) return n.errors();
    if (bytes.size() - 8 < *n)
        return fail(source, 8,
                    "expected a header of " + format_count(*n) + " bytes, but the file ends at byte " +
                        format_count(bytes.size()));
    const std::string_view text = bytes.substr(8, *n);
    // safetensors/src/tensor.rs read_metadata: the header is UTF-8 (InvalidHeader) and starts with '{'
    // (InvalidHeaderStart: no byte order mark, no space first); what the library refuses is not counted here.
    if (text.empty() || text.front() != '{')
        return fail(source, 8, "the header must start with '{' (a byte order mark or a space before it is refused)");
    if (json::valid_utf8(text) != text) return fail(source, 8, "the header is not valid UTF-8");
    const auto parsed = json::parse(text);
    if (!parsed)
        return FieldError{"safetensors", source + ": the header (JSON from byte 8) line " +
                                             std::to_string(parsed.error.line) + ":" +
                                             std::to_string(parsed.error.column) + ": " + parsed.error.message};
    if (!parsed.value->is_object()) return fail(source, 8, "the header must be a JSON object of tensors");
    const std::uint64_t data_bytes = file_size - 8 - *n;
    Header h;
    // (begin, end) of every tensor: they must tile the data section without gaps or overlaps (tensor.rs validate).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    std::map<std::string, int> lines;  // each name and its line: a name given twice is refused
    for (const auto& member : parsed.value->members()) {
        const std::string& name = member.first;  // not a structured binding: the lambda below captures it
        const json::Value& t = member.second;
        const auto where = [&](const std::string& what) {
            return FieldError{"safetensors", source + ": tensor '" + name + "' (header line " +
                                                 std::to_string(t.line()) + "): " + what};
        };
        // The library reads the header into a map, where the second of two names replaces the first; the data the
        // first described is then a gap, and the file is refused (tensor.rs validate). Counting both would give an
        // exact-looking figure for a file no loader opens.
        if (const auto [at, added] = lines.emplace(name, t.line()); !added)
            return where("is named twice in the header (also on line " + std::to_string(at->second) +
                         "), which the safetensors library refuses");
        if (name == "__metadata__") continue;
        if (!t.is_object()) return where("expected an object with dtype, shape and data_offsets");
        const json::Value* dtype = t.find("dtype");
        const json::Value* shape = t.find("shape");
        const json::Value* offsets = t.find("data_offsets");
        if (!dtype || !dtype->is_string()) return where("expected a dtype such as \"BF16\"");
        const auto bits = dtype_bits(dtype->as_string());
        if (!bits) return where("dtype '" + dtype->as_string() + "' is not a safetensors dtype");
        if (!shape || !shape->is_array()) return where("expected a shape (a list of whole numbers)");
        Checked values(1);
        for (const auto& d : shape->items()) {
            const auto v = whole(d);
            if (!v)
                return where("the shape holds '" + (d.is_number() ? d.as_string() : d.dump(0)) +
                             "', not a whole number");
            values = values * *v;
        }
        if (!offsets || !offsets->is_array() || offsets->items().size() != 2 || !whole(offsets->items()[0]) ||
            !whole(offsets->items()[1]))
            return where("expected data_offsets [begin, end] of whole numbers written as such (8, not 8.0)");
        const std::uint64_t begin = *whole(offsets->items()[0]), end = *whole(offsets->items()[1]);
        const Checked value_bits = values * *bits;
        if (value_bits.overflow()) return where("its size overflows 64 bits");
        if (value_bits.value() % 8 != 0)
            return where(format_count(values.value()) + " values of " + std::to_string(*bits) +
                         " bits are not a whole number of bytes");
        const std::uint64_t size = value_bits.value() / 8;
        if (end < begin || end - begin != size)
            return where("data_offsets [" + format_count(begin) + ", " + format_count(end) + "] do not hold its " +
                         format_count(size) + " bytes (" + dtype->as_string() + ")");
        if (end > data_bytes)
            return where("ends at byte " + format_count(end) + " of the data, but the file holds " +
                         format_count(data_bytes) + " bytes of data");
        spans.emplace_back(begin, end);
        h.names.push_back(name);
        // Each sum is bounded by data_bytes once the spans are known not to overlap.
        if (engine_skips(name)) {
            h.skipped_bytes += size;
            ++h.skipped_tensors;
            continue;
        }
        h.bytes += size;
        h.by_dtype[dtype->as_string()] += size;
        ++h.tensors;
        if (quantized_at_load(name, shape->items().size())) {
            h.linear_by_dtype[dtype->as_string()] += size;
            ++h.linear_tensors;
        }
    }
    std::sort(spans.begin(), spans.end());
    std::uint64_t next = 0;
    for (const auto& [begin, end] : spans) {
        if (begin != next)
            return fail(source, 8 + *n + std::min(begin, next),
                        begin < next ? "two tensors overlap in the data" : "the data has a gap between two tensors");
        next = end;
    }
    if (next != data_bytes)
        return fail(source, 8 + *n + next,
                    "the tensors end here, but the file goes on for " + format_count(data_bytes - next) +
                        " more bytes (a safetensors file ends with its last tensor)");
    return h;
}

Result<Header> read_header_file(const std::string& path) {
    auto file = open_file(path, "safetensors", "a safetensors file", "--model-dir reads a model's folder");
    if (!file) return file.errors();
    std::ifstream& in = file.value().in;
    const std::uint64_t size = file->size;
    std::string start(static_cast<std::size_t>(std::min<std::uint64_t>(size, 8)), '\0');
    if (!in.read(start.data(), static_cast<std::streamsize>(start.size())))
        return FieldError{"safetensors", path + ": read failed"};
    const auto n = header_length(start, size, path);
    if (!n) return n.errors();
    start.resize(static_cast<std::size_t>(8 + *n));
    if (!in.read(start.data() + 8, static_cast<std::streamsize>(*n)))
        return FieldError{"safetensors", path + ": read failed"};
    return read_header(start, size, path);
}

std::string Weights::source_text() const {
    std::string dtypes;
    for (const auto& [dtype, b] : by_dtype) dtypes += (dtypes.empty() ? "" : ", ") + dtype;
    const std::string headers = format_count_of(files.size(), "safetensors header", "safetensors headers");
    const std::string skipped = skipped_tensors == 0
                                    ? ""
                                    : "; not counted: " + format_count_of(skipped_tensors, "buffer", "buffers") +
                                          " of the files (attention masks, rotary tables; " +
                                          format_count(skipped_bytes) + " bytes) that engines skip at load";
    if (fp8_values > 0)
        return format_count(bytes) + " bytes, from " + headers + " of " + format_count(stored_bytes) + " bytes of " +
               stored_as + ": the linear layers' " + format_count(fp8_values) +
               " values quantized to fp8_e4m3 at load (vLLM --quantization fp8; their float32 scales, 4 bytes a "
               "layer, not counted), the rest " +
               (served_as.empty() ? "as stored" : "in " + served_as) + skipped;
    if (!stored_as.empty())
        return format_count(bytes) + " bytes, exact from " + headers + ": their " + format_count(stored_bytes) +
               " bytes of " + stored_as + " loaded as " + served_as + skipped;
    return format_count(bytes) + " bytes, exact from " + headers + (dtypes.empty() ? "" : " (" + dtypes + ")") +
           skipped;
}

namespace {

// Every float format here is whole bytes a value (2, 4 or 8): values = bytes / width, exactly.
std::uint64_t width_of(const std::string& dtype) { return *dtype_bits(dtype) / 8; }

}  // namespace

namespace {

// Float formats an engine may cast or quantize as it loads them, and the integer buffers (position ids, masks)
// stored beside the weights, which stay as they are.
bool is_float_format(const std::string& d) { return d == "F16" || d == "BF16" || d == "F32" || d == "F64"; }
bool is_buffer_format(const std::string& d) { return d == "I64" || d == "BOOL"; }

}  // namespace

bool Weights::float_only() const {
    return std::all_of(by_dtype.begin(), by_dtype.end(),
                       [](const auto& entry) { return is_float_format(entry.first) || is_buffer_format(entry.first); });
}

Result<Weights> Weights::served_in(KvDtype dtype) const {
    // vLLM creates each parameter in the model's dtype and copies the checkpoint's tensor into it
    // (model_executor/model_loader/weight_utils.py default_weight_loader), casting float tensors; dtype=auto serves a
    // float32 checkpoint in bf16 (config/model.py _resolve_auto_dtype). Only a checkpoint of one float format is
    // recast here: where formats are mixed (bf16 weights beside float32 norms, or a state-space model's A_log, which
    // some models keep in float32; quantized integers and fp8 with their scales) the files' bytes stand.
    const auto is_float = is_float_format;  // any other format (packed integers, fp8) is a quantized checkpoint
    const auto is_buffer = is_buffer_format;
    std::string only;  // the one float format, or empty
    bool mixed = false;
    for (const auto& [name, b] : by_dtype) {
        if (is_buffer(name)) continue;
        if (!is_float(name)) return *this;  // a quantized checkpoint: as stored, whatever the format asked
        mixed = mixed || !only.empty();
        only = name;
    }
    if (only.empty()) return *this;
    if (mixed) only.clear();
    const std::string stored = [&] {
        std::string list;
        for (const auto& [name, b] : by_dtype)
            if (!is_buffer(name)) list += (list.empty() ? "" : " and ") + name;
        return list;
    }();
    if (dtype == KvDtype::fp8_e4m3) {
        // vLLM's online fp8 (quantization/fp8.py Fp8LinearMethod, checkpoint not fp8-serialized): each linear
        // layer's weight becomes fp8_e4m3 after loading, one value a byte with a float32 scale; the rest is the
        // model's dtype (bf16 for float32 files, as above), or as stored where the files mix float formats.
        const std::string half = only == "F32" || only == "F64" ? "BF16" : only;
        Checked total;
        Checked values;
        Weights w = *this;
        w.by_dtype.clear();
        for (const auto& [name, b] : by_dtype) {
            if (is_buffer(name)) {
                total += Checked(b);
                w.by_dtype[name] += b;
                continue;
            }
            const auto linear_at = linear_by_dtype.find(name);
            const std::uint64_t linear = linear_at == linear_by_dtype.end() ? 0 : linear_at->second;
            const std::uint64_t linear_values = linear / width_of(name);
            values += Checked(linear_values);
            const std::string rest_as = half.empty() ? name : half;
            const Checked rest = Checked((b - linear) / width_of(name)) * width_of(rest_as);
            total += Checked(linear_values) + rest;
            if (linear_values > 0) w.by_dtype["F8_E4M3"] += linear_values;
            if (rest.value() > 0) w.by_dtype[rest_as] += rest.value();
        }
        if (total.overflow() || values.overflow()) return *this;
        // No linear layer among them (a file of norms): the files as the half precision serves them.
        if (values.value() == 0 && total.value() == bytes) return *this;
        w.bytes = total.value();
        w.fp8_values = values.value();
        w.stored_bytes = bytes;
        w.stored_as = stored;
        w.served_as = half;
        return w;
    }
    const char* target = dtype == KvDtype::bf16   ? "BF16"
                         : dtype == KvDtype::fp16 ? "F16"
                         : dtype == KvDtype::fp32 ? "F32"
                                                  : nullptr;
    if (target == nullptr)
        return FieldError{"--weight-dtype",
                          "the weights' files hold " + stored + " values, and KVScope knows no engine that makes " +
                              std::string(to_string(dtype)) +
                              " of them as it loads them (vLLM's --quantization fp8 makes fp8_e4m3; its in-flight "
                              "bitsandbytes and torchao modes are not counted here): give the files of a checkpoint "
                              "quantized so, or the format without the files for an estimate in " +
                              std::string(to_string(dtype))};
    // The same width (bf16 and fp16) is the same bytes: nothing is recast, nor said to be; nor mixed formats.
    if (only.empty() || width_of(only) == width_of(target)) return *this;
    const Checked recast = Checked(by_dtype.at(only) / width_of(only)) * width_of(target);
    Checked total = recast;
    for (const auto& [name, b] : by_dtype)
        if (is_buffer(name)) total += Checked(b);
    if (total.overflow()) return *this;
    Weights w = *this;
    w.stored_bytes = by_dtype.at(only);
    w.stored_as = only;
    w.served_as = target;
    w.bytes = total.value();
    w.by_dtype.erase(only);
    w.by_dtype[target] = recast.value();
    return w;
}

Result<Weights> read_weights(const std::string& path) {
    std::error_code error;
    fs::path folder(path);
    std::vector<fs::path> files;
    bool indexed = false;  // the shards are those an index names: its weight_map, not a folder listing, chose them
    if (fs::is_regular_file(folder, error)) {
        files.push_back(folder);
    } else if (fs::is_directory(folder, error)) {
        // A Hugging Face cache repo folder (huggingface_hub file_download.py): snapshots/<revision>/, the revision
        // refs/main names.
        if (fs::is_directory(folder / "snapshots", error)) {
            const auto snapshot = cache_snapshot(path);
            if (!snapshot)
                return FieldError{"--weights", path +
                                                   ": has no snapshot that refs/main names, and not exactly one; "
                                                   "give the snapshot folder itself"};
            folder = *snapshot;
        }
        const fs::path index = folder / "model.safetensors.index.json";
        indexed = fs::exists(index, error);
        if (indexed) {
            const auto text = read_text_file(index.string());
            if (!text) return text.errors();
            const auto parsed = json::parse(*text);
            if (!parsed)
                return FieldError{"--weights", index.string() + ":" + std::to_string(parsed.error.line) +
                                                   ": not valid JSON: " + parsed.error.message};
            const json::Value* map = parsed.value->find("weight_map");
            if (!map || !map->is_object())
                return FieldError{"--weights", index.string() + ": expected an object with a weight_map"};
            std::set<std::string> shards;
            for (const auto& [tensor, file] : map->members()) {
                // A file of the folder: no path, and not "." or ".." (the folder itself or its parent).
                const bool plain = file.is_string() && !file.as_string().empty() &&
                                   file.as_string().find_first_of("/\\") == std::string::npos &&
                                   file.as_string() != "." && file.as_string() != "..";
                if (!plain)
                    return FieldError{"--weights", index.string() + ":" + std::to_string(file.line()) +
                                                       ": weight_map['" + tensor + "'] is " + file.dump(0) +
                                                       "; it must name a file in the folder"};
                shards.insert(file.as_string());
            }
            for (const auto& s : shards) files.push_back(folder / s);
        } else {
            for (const auto& e : fs::directory_iterator(folder, error))
                if (e.path().extension() == ".safetensors") files.push_back(e.path());
            std::sort(files.begin(), files.end());
        }
        if (files.empty())
            return FieldError{"--weights", path + ": holds no .safetensors file (nor model.safetensors.index.json)"};
    } else if (fs::exists(folder, error)) {
        return FieldError{"--weights", path + ": is not a regular file (a pipe or a device)"};
    } else {
        return FieldError{"--weights", path + ": no such file or folder"};
    }
    Weights w;
    std::map<std::string, std::string> file_of;  // each tensor and the file it came from
    for (const auto& f : files) {
        auto h = read_header_file(f.string());
        if (!h) return h.errors();
        // Only a folder listing can take two copies of the weights; an index's shards are the model's, as it names
        // them.
        for (const std::string& name : indexed ? std::vector<std::string>{} : h->names)
            if (const auto [at, added] = file_of.emplace(name, f.filename().string()); !added)
                return FieldError{"--weights", path + ": the tensor '" + name + "' is in both " + at->second + " and " +
                                                   f.filename().string() +
                                                   " (two copies of the weights?): give one file, or a folder with "
                                                   "model.safetensors.index.json to say which"};
        const Checked total = Checked(w.bytes) + h->bytes;
        if (total.overflow()) return FieldError{"--weights", path + ": the weights' size overflows 64 bits"};
        w.bytes = total.value();
        w.tensors += h->tensors;
        const Checked skipped = Checked(w.skipped_bytes) + h->skipped_bytes;
        if (skipped.overflow()) return FieldError{"--weights", path + ": the weights' size overflows 64 bits"};
        w.skipped_bytes = skipped.value();
        w.skipped_tensors += h->skipped_tensors;
        w.linear_tensors += h->linear_tensors;
        for (const auto& [dtype, b] : h->linear_by_dtype) w.linear_by_dtype[dtype] += b;  // within w.bytes
        for (const auto& [dtype, b] : h->by_dtype) w.by_dtype[dtype] += b;
        w.files.push_back(f.string());
    }
    return w;
}

}  // namespace kvscope::safetensors
