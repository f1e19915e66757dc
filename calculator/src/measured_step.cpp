#include "kvscope/calculator/measured_step.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <system_error>
#include <tuple>

#include "kvscope/calculator/json_members.h"
#include "kvscope/calculator/numbers.h"
#include "kvscope/calculator/scenario_file.h"
#include "kvscope/calculator/tables.h"
#include "kvscope/calculator/units.h"

namespace kvscope {
namespace {

using json::Value;
namespace fs = std::filesystem;

// FNV-1a, 64 bits: a stable hash of text (std::hash is not stable across builds).
std::uint64_t fnv1a(std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : text) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    std::string w;
    for (const char c : ascii_lower(text)) {
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            w += c;
        } else if (!w.empty()) {
            out.push_back(std::move(w));
            w.clear();
        }
    }
    if (!w.empty()) out.push_back(std::move(w));
    return out;
}

bool is_memory_word(std::string_view w) {  // "80gb"
    const auto digits = w.find_first_not_of("0123456789");
    return digits != 0 && digits != std::string_view::npos && w.substr(digits) == "gb";
}

bool is_form_factor(std::string_view w) { return w == "sxm" || w == "sxm4" || w == "sxm5" || w == "pcie"; }

bool contains(const std::vector<std::string>& ws, std::string_view w) {
    return std::find(ws.begin(), ws.end(), w) != ws.end();
}

const Value* member(const Value& o, std::string_view key, json::Type type) {
    const Value* v = o.find(key);
    return v != nullptr && v->type() == type ? v : nullptr;
}

std::string text_of(const Value& o, std::string_view key) {
    const Value* v = member(o, key, json::Type::string);
    return v != nullptr ? v->as_string() : std::string();
}

std::uint64_t count_of(const Value& o, std::string_view key) {
    const Value* v = member(o, key, json::Type::number);
    return v != nullptr ? v->as_u64().value_or(0) : 0;
}

double number_of(const Value& o, std::string_view key) {
    const Value* v = member(o, key, json::Type::number);
    return v != nullptr && std::isfinite(v->as_double()) ? v->as_double() : 0;
}

std::optional<std::pair<std::int64_t, std::uint64_t>> stamp(const std::string& path) {
    std::error_code ec;
    const auto time = fs::last_write_time(path, ec);
    if (ec) return std::nullopt;
    const auto size = fs::file_size(path, ec);
    if (ec) return std::nullopt;
    return std::pair{static_cast<std::int64_t>(time.time_since_epoch().count()), static_cast<std::uint64_t>(size)};
}

}  // namespace

std::string step_key(const Scenario& s, KvDtype weight_dtype) {
    std::string text = architecture_json(s.arch).dump();
    text += '|';
    text += to_string(s.kv_dtype);
    text += '|';
    text += to_string(weight_dtype);
    for (const std::uint64_t n : {s.workload.context_tokens, s.workload.batch, s.workload.block_size})
        text += '|' + std::to_string(n);
    text += s.workload.full_window ? "|full" : "|window";
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
    return hex;
}

std::optional<std::string> gpu_for_device(const std::vector<GpuSpec>& gpus, std::string_view device_name,
                                          std::uint64_t total_bytes) {
    const std::vector<std::string> name = words(device_name);
    const bool pcie = contains(name, "pcie");
    const GpuSpec* best = nullptr;
    // Lower is better: the form factor, then the more words of the name the id matches ("h200-nvl" over
    // "h200" for "NVIDIA H200 NVL"), then the memory's distance.
    auto rank = [&](const GpuSpec& g) {
        const std::vector<std::string> id = words(g.id);
        const bool g_pcie = contains(id, "pcie");
        const auto matched =
            std::count_if(id.begin(), id.end(), [&](const std::string& w) { return contains(name, w); });
        const std::uint64_t distance =
            g.memory_bytes > total_bytes ? g.memory_bytes - total_bytes : total_bytes - g.memory_bytes;
        return std::tuple{g_pcie != pcie, -matched, distance};
    };
    for (const auto& g : gpus) {
        const std::vector<std::string> id = words(g.id);
        const bool named = !id.empty() && std::all_of(id.begin(), id.end(), [&](const std::string& w) {
            return is_memory_word(w) || is_form_factor(w) || contains(name, w);
        });
        // A word of the id that names the chip must be there: "l4" is not "l40s".
        const bool has_chip = std::any_of(id.begin(), id.end(), [&](const std::string& w) {
            return !is_memory_word(w) && !is_form_factor(w) && contains(name, w);
        });
        if (named && has_chip && (best == nullptr || rank(g) < rank(*best))) best = &g;
    }
    if (best == nullptr) return std::nullopt;
    return best->id;
}

std::optional<MeasuredStep> find_measured_step(const std::vector<MeasuredStep>& steps, const Scenario& s) {
    if (!s.deployment || s.parallel.gpus() != 1 || s.deployment->gpu_count != 1) return std::nullopt;
    // The step multiplies weights in one plain format: never a quantized checkpoint's measurement.
    if (s.deployment->weight_quant && s.deployment->weights_bytes_exact == 0) return std::nullopt;
    const std::string key = step_key(s, s.deployment->weight_dtype);
    const MeasuredStep* found = nullptr;
    for (const auto& m : steps)  // the newest, when a GPU was measured more than once (two cards of a kind)
        if (m.key == key && !m.gpu_id.empty() && m.gpu_id == s.deployment->gpu.id &&
            (found == nullptr || m.measured_on >= found->measured_on))
            found = &m;
    if (found == nullptr) return std::nullopt;
    return *found;
}

std::string measured_step_text(const MeasuredStep& m, const DecodeEstimate& estimate) {
    const double floor_ms = estimate.step_time_floor_s * 1e3;
    std::string t = number_text(m.step_ms, Notation::fixed, m.step_ms < 10 ? ms_decimals(m.step_ms) : 1) +
                    " ms per step → " + number_text(m.tokens_per_s(), Notation::fixed, 1) + " tokens/s per sequence";
    if (floor_ms > 0) t += ", " + ratio_text(m.step_ms / floor_ms) + " the floor";
    t += " (probe --step on " + m.device + ", " + m.measured_on;
    if (m.scaled)
        t += "; " + std::to_string(m.layers_run) + " of " + std::to_string(m.layers_total) +
             " layers run, their time scaled";
    return t + ")";
}

namespace {

// Every member of MeasuredStep once, in the order an entry of the store (and a fit's `measured_step`) writes them;
// measured_steps_from_json reads the same keys back.
template <class V>
void measured_step_members(const MeasuredStep& m, V& v) {
    v.field(m.key, "key");
    v.field(m.model_id, "model");
    v.field(m.context_tokens, "context_tokens");
    v.field(m.batch, "batch");
    v.value(m.kv_dtype, "kv_dtype", Value::string(std::string(to_string(m.kv_dtype))));
    v.value(m.weight_dtype, "weight_dtype", Value::string(std::string(to_string(m.weight_dtype))));
    v.field(m.backend, "backend");
    v.field(m.device, "device");
    v.value(m.gpu_id, "gpu", m.gpu_id.empty() ? Value() : Value::string(m.gpu_id));
    v.field(m.measured_on, "measured_on");
    v.field(m.step_ms, "step_ms");
    v.also("tokens_per_s", Value::number(m.tokens_per_s()));
    v.field(m.predicted_step_ms, "predicted_step_ms");
    v.field(m.ceiling_gbps, "ceiling_gbps");
    v.field(m.layers_run, "layers_run");
    v.field(m.layers_total, "layers_total");
    v.field(m.scaled, "scaled");
}

}  // namespace

Value measured_step_json(const MeasuredStep& m) {
    return members_json(m, [](const MeasuredStep& r, auto& v) { measured_step_members(r, v); });
}

std::vector<DeclaredMember> declared_members(const MeasuredStep& m) {
    return list_members(m, [](const MeasuredStep& r, auto& v) { measured_step_members(r, v); });
}

std::vector<MeasuredStep> measured_steps_from_json(std::string_view text) {
    std::vector<MeasuredStep> out;
    const auto parsed = json::parse(text);
    if (!parsed) return out;
    const Value* list = member(*parsed.value, "steps", json::Type::array);
    if (list == nullptr) return out;
    for (const Value& e : list->items()) {
        if (!e.is_object()) continue;
        MeasuredStep m;
        m.key = text_of(e, "key");
        m.model_id = text_of(e, "model");
        m.context_tokens = count_of(e, "context_tokens");
        m.batch = count_of(e, "batch");
        const auto kv = parse_kv_dtype(text_of(e, "kv_dtype"));
        const auto weights = parse_kv_dtype(text_of(e, "weight_dtype"));
        m.backend = text_of(e, "backend");
        m.device = text_of(e, "device");
        m.gpu_id = text_of(e, "gpu");
        m.measured_on = text_of(e, "measured_on");
        m.step_ms = number_of(e, "step_ms");
        m.predicted_step_ms = number_of(e, "predicted_step_ms");
        m.ceiling_gbps = number_of(e, "ceiling_gbps");
        m.layers_run = count_of(e, "layers_run");
        m.layers_total = count_of(e, "layers_total");
        const Value* scaled = member(e, "scaled", json::Type::boolean);
        m.scaled = scaled != nullptr && scaled->as_bool();
        if (m.key.empty() || !kv || !weights || m.step_ms <= 0) continue;
        m.kv_dtype = *kv;
        m.weight_dtype = *weights;
        out.push_back(std::move(m));
    }
    return out;
}

std::string utc_date_today() {
    const auto days = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
    const std::chrono::year_month_day ymd{days};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                  static_cast<unsigned>(ymd.day()));
    return text;
}

std::string measured_steps_path(const std::string& folder) {
    return folder.empty() ? std::string() : (fs::path(folder) / "measured-steps.json").string();
}

std::vector<MeasuredStep> read_measured_steps(const std::string& path) {
    if (path.empty()) return {};
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return measured_steps_from_json(text);
}

namespace {

// An exclusive lock on FILE.lock while the store is read, changed and replaced: two probes finishing at once (a window
// and the CLI) would otherwise each write the file they read, and the second would drop the first's entry. flock(2)
// locks are per open file, so two threads of one program exclude each other too; the lock goes with the descriptor.
class StoreLock {
public:
    // A lock file another user left (a run under sudo) is opened to read: flock needs no write access.
    explicit StoreLock(const fs::path& store) : fd_(open_lock(store.string() + ".lock")) {
        if (fd_ >= 0)
            while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
            }
    }
    ~StoreLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    StoreLock(const StoreLock&) = delete;
    StoreLock& operator=(const StoreLock&) = delete;

private:
    static int open_lock(const std::string& path) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        return fd >= 0 ? fd : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    int fd_;
};

// The entries of the file as they are written, so that one this version cannot read (a newer version's, with a
// format it does not know) is kept rather than dropped at the next write. What is not an entry at all is dropped.
// `version`: the file's, kept when a newer version wrote it.
std::vector<Value> stored_entries(const std::string& path, std::uint64_t& version) {
    std::vector<Value> out;
    std::ifstream in(path, std::ios::binary);
    if (!in) return out;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto parsed = json::parse(text);
    if (!parsed) return out;
    if (const Value* v = member(*parsed.value, "version", json::Type::number))
        version = std::max(version, v->as_u64().value_or(0));
    // An entry of any version has a key and a time; one without is damage, not kept.
    if (const Value* list = member(*parsed.value, "steps", json::Type::array))
        for (const Value& e : list->items())
            if (e.is_object() && !text_of(e, "key").empty() && number_of(e, "step_ms") > 0) out.push_back(e);
    return out;
}

}  // namespace

Result<std::monostate> remember_measured_step(const std::string& path, const MeasuredStep& m) {
    if (path.empty()) return Errors{FieldError("measured steps", "no folder to keep them in (set KVSCOPE_DATA_DIR)")};
    std::error_code ec;
    const fs::path target(path);
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    if (ec) return Errors{FieldError(path, "cannot create its folder: " + ec.message())};
    const StoreLock lock(target);

    std::uint64_t version = 1;
    std::vector<Value> steps = stored_entries(path, version);
    std::erase_if(steps,
                  [&](const Value& e) { return text_of(e, "key") == m.key && text_of(e, "device") == m.device; });
    steps.push_back(measured_step_json(m));
    if (steps.size() > kMaxMeasuredSteps)
        steps.erase(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() - kMaxMeasuredSteps));
    Value list = Value::array();
    for (auto& e : steps) list.push(std::move(e));
    Value doc = Value::object();
    doc.set("format", Value::string("kvscope measured decode steps"));
    doc.set("version", Value::number(version));
    doc.set("steps", std::move(list));

    // Written beside the file, then renamed over it: a reader sees the old file or the new one, never half.
    const fs::path temp = target.string() + ".tmp" + std::to_string(std::random_device{}());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out << doc.dump() << '\n';
        out.flush();
        if (!out) {
            fs::remove(temp, ec);
            return Errors{FieldError(path, "cannot be written")};
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(temp, ignored);
        return Errors{FieldError(path, "cannot be replaced: " + ec.message())};
    }
    return std::monostate{};
}

void MeasuredStepStore::reload() { seen_.reset(); }

bool MeasuredStepStore::stale() const { return stamp(path_) != seen_; }

const std::vector<MeasuredStep>& MeasuredStepStore::entries() {
    const auto now = stamp(path_);
    if (now != seen_) {
        entries_ = now ? read_measured_steps(path_) : std::vector<MeasuredStep>{};
        seen_ = now;
    }
    return entries_;
}

}  // namespace kvscope
