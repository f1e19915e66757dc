#pragma once
// Writes GGUF headers byte by byte as ggml's docs/gguf.md specifies them, so that the tests, the benchmarks and the
// screenshots can build the files the reader takes: metadata of every type, arrays, and tensor infos at the offsets
// their data would have (each tensor's bytes, rounded up to 32). bytes() is the header alone; write_file() writes the
// whole file, its data a hole of zeros (sparse on disk), as a complete download is.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "kvscope/calculator/gguf.h"

namespace kvscope::gguf {

class Writer {
public:
    enum class Type : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

    Writer& u32(const std::string& key, std::uint32_t v) { return scalar(key, Type::u32, v, 4); }
    Writer& i32(const std::string& key, std::int32_t v) {
        return scalar(key, Type::i32, static_cast<std::uint32_t>(v), 4);
    }
    Writer& u64(const std::string& key, std::uint64_t v) { return scalar(key, Type::u64, v, 8); }
    Writer& u8(const std::string& key, std::uint8_t v) { return scalar(key, Type::u8, v, 1); }
    Writer& flag(const std::string& key, bool v) { return scalar(key, Type::boolean, v ? 1 : 0, 1); }
    Writer& f32(const std::string& key, float v) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, 4);
        return scalar(key, Type::f32, bits, 4);
    }
    Writer& str(const std::string& key, const std::string& v) {
        begin(key, static_cast<std::uint32_t>(Type::string));
        text(meta_, v);
        return *this;
    }
    Writer& u32s(const std::string& key, const std::vector<std::uint32_t>& v) {
        begin(key, static_cast<std::uint32_t>(Type::array));
        put(meta_, static_cast<std::uint32_t>(Type::u32), 4);
        put(meta_, v.size(), 8);
        for (const auto x : v) put(meta_, x, 4);
        return *this;
    }
    Writer& i32s(const std::string& key, const std::vector<std::int32_t>& v) {
        begin(key, static_cast<std::uint32_t>(Type::array));
        put(meta_, static_cast<std::uint32_t>(Type::i32), 4);
        put(meta_, v.size(), 8);
        for (const auto x : v) put(meta_, static_cast<std::uint32_t>(x), 4);
        return *this;
    }
    Writer& bools(const std::string& key, const std::vector<bool>& v) {
        begin(key, static_cast<std::uint32_t>(Type::array));
        put(meta_, static_cast<std::uint32_t>(Type::boolean), 4);
        put(meta_, v.size(), 8);
        for (const bool x : v) put(meta_, x ? 1 : 0, 1);
        return *this;
    }
    // A vocabulary of `n` strings ("t0", "t1", …), as tokenizer.ggml.tokens holds it.
    Writer& strings(const std::string& key, std::uint64_t n) {
        begin(key, static_cast<std::uint32_t>(Type::array));
        put(meta_, static_cast<std::uint32_t>(Type::string), 4);
        put(meta_, n, 8);
        for (std::uint64_t k = 0; k < n; ++k) text(meta_, "t" + std::to_string(k));
        return *this;
    }
    // Raw bytes in place of a value (for corrupt files): the key and type, then `raw`.
    Writer& raw(const std::string& key, std::uint32_t type, const std::string& raw) {
        begin(key, type);
        meta_ += raw;
        return *this;
    }
    Writer& tensor(const std::string& name, const std::vector<std::uint64_t>& dims, std::uint32_t type) {
        text(tensors_, name);
        put(tensors_, dims.size(), 4);
        for (const auto d : dims) put(tensors_, d, 8);
        put(tensors_, type, 4);
        put(tensors_, offset_, 8);
        // The next tensor's data follows this one's, aligned to 32 bytes (an unknown type takes 32).
        const auto size = tensor_bytes(TensorInfo{name, dims, type, 0});
        offset_ += ((size ? *size : 0) + 31) / 32 * 32 + (size ? 0 : 32);
        ++tensor_count_;
        return *this;
    }
    // Where the data of the tensors ends in the whole file: the header rounded up to 32, then every tensor's data.
    [[nodiscard]] std::uint64_t data_end(std::uint32_t version = 3) const {
        return (bytes(version).size() + 31) / 32 * 32 + offset_;
    }
    // The whole file: the header, then the tensors' data as zeros (a hole: it takes no disk space where the file
    // system keeps sparse files).
    void write_file(const std::string& path, std::uint32_t version = 3) const {
        if (const auto folder = std::filesystem::path(path).parent_path(); !folder.empty())
            std::filesystem::create_directories(folder);
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << bytes(version);
        if (tensor_count_ > 0 && data_end(version) > bytes(version).size()) {
            out.seekp(static_cast<std::streamoff>(data_end(version) - 1));
            out.put('\0');
        }
    }

    // One Llama-style block's tensors as a Q4_K_M file holds them (q4_K, with attn_v and ffn_down in q6_K; f32
    // norms): `kv` is the K and V projections' width.
    Writer& llama_block(int layer, std::uint64_t embd, std::uint64_t kv, std::uint64_t ff) {
        constexpr std::uint32_t kF32 = 0, kQ4K = 12, kQ6K = 14;
        const std::string b = "blk." + std::to_string(layer);
        tensor(b + ".attn_q.weight", {embd, embd}, kQ4K).tensor(b + ".attn_k.weight", {embd, kv}, kQ4K);
        tensor(b + ".attn_v.weight", {embd, kv}, kQ6K).tensor(b + ".attn_output.weight", {embd, embd}, kQ4K);
        tensor(b + ".ffn_gate.weight", {embd, ff}, kQ4K).tensor(b + ".ffn_up.weight", {embd, ff}, kQ4K);
        tensor(b + ".ffn_down.weight", {ff, embd}, kQ6K).tensor(b + ".attn_norm.weight", {embd}, kF32);
        return tensor(b + ".ffn_norm.weight", {embd}, kF32);
    }

    [[nodiscard]] std::string bytes(std::uint32_t version = 3) const {
        std::string out = "GGUF";
        put(out, version, 4);
        put(out, tensor_count_, 8);
        put(out, entries_, 8);
        return out + meta_ + tensors_;
    }

    // `n` little-endian bytes of v (past the 8th, zeros).
    static void put(std::string& out, std::uint64_t v, int n) {
        for (int k = 0; k < n; ++k) out += static_cast<char>(k < 8 ? (v >> (8 * k)) & 0xff : 0);
    }
    static void text(std::string& out, const std::string& s) {
        put(out, s.size(), 8);
        out += s;
    }

private:
    void begin(const std::string& key, std::uint32_t type) {
        text(meta_, key);
        put(meta_, type, 4);
        ++entries_;
    }
    Writer& scalar(const std::string& key, Type type, std::uint64_t v, int n) {
        begin(key, static_cast<std::uint32_t>(type));
        put(meta_, v, n);
        return *this;
    }

    std::string meta_, tensors_;
    std::uint64_t entries_ = 0, tensor_count_ = 0, offset_ = 0;
};

}  // namespace kvscope::gguf
