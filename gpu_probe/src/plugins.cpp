// The backends the probe knows, one registration line each, and the loader of those built as plugins.
#include "kvscope/probe/plugins.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "backends.h"
#include "cpu_backend.h"
#include "kvscope/probe/plugin.h"

namespace kvscope::probe {
namespace {

struct Registered {
    const char* name;
    const char* label;                       // for people: "CUDA GPU"
    const char* words;                       // in messages: "the CUDA backend"
    std::unique_ptr<Backend> (*built_in)();  // a backend compiled into the probe, or
    const char* plugin;                      // the file of a plugin (gpu_probe/<name>/)
    bool plugin_built;                       // whether this build made that plugin
};

#ifdef KVSCOPE_CUDA_PLUGIN_BUILT
constexpr bool kCudaBuilt = true;
#else
constexpr bool kCudaBuilt = false;
#endif

// In the order "auto" tries them: the first plugin whose device answers, else the CPU.
constexpr Registered kBackends[] = {
    {"cuda", "CUDA GPU", "the CUDA backend", nullptr, "libkvscope-probe-cuda.so", kCudaBuilt},
    {"cpu", "CPU", "the CPU backend", make_cpu_backend, nullptr, true},
};

// Where plugins are looked for: $KVSCOPE_PLUGIN_DIR, the programs' own folder, ../lib/kvscope beside it
// (an installed tree), and the build folder this was built in.
std::vector<std::filesystem::path> plugin_dirs() {
    std::vector<std::filesystem::path> dirs;
    if (const char* env = std::getenv("KVSCOPE_PLUGIN_DIR"); env && *env) dirs.emplace_back(env);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        dirs.push_back(exe.parent_path());
        dirs.push_back(exe.parent_path().parent_path() / "lib" / "kvscope");
    }
#ifdef KVSCOPE_PLUGIN_BUILD_DIR
    dirs.emplace_back(KVSCOPE_PLUGIN_BUILD_DIR);
#endif
    std::vector<std::filesystem::path> unique;
    for (auto& d : dirs) {
        d = d.lexically_normal();
        if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
    }
    return unique;
}

using AbiFn = int (*)();
using CreateFn = void (*)(BackendChoice*);

// One plugin file, opened once for the process and never closed (its backends' code lives there).
struct Loaded {
    CreateFn create = nullptr;
    std::string why;  // when create is null
};

Loaded open_plugin(const Registered& r, const std::filesystem::path& path) {
    Loaded l;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* err = dlerror();
        l.why = std::string(r.words) + "'s plugin " + path.string() +
                " cannot be loaded: " + (err ? err : "unknown error") +
                " (the libraries it needs are missing or too old)";
        return l;
    }
    const auto abi = reinterpret_cast<AbiFn>(dlsym(handle, "kvscope_probe_plugin_abi"));
    const auto create = reinterpret_cast<CreateFn>(dlsym(handle, "kvscope_probe_plugin_create"));
    if (!abi || !create || abi() != kPluginAbi) {
        l.why = std::string(r.words) + "'s plugin " + path.string() +
                " is not one this build can use (from another version of KVScope?)";
        return l;
    }
    l.create = create;
    return l;
}

// The plugin's file in the first folder that has one (looked up each time, so a KVSCOPE_PLUGIN_DIR set
// later counts), opened once per file.
Loaded load(const Registered& r) {
    std::string looked;
    for (const auto& dir : plugin_dirs()) {
        const auto path = dir / r.plugin;
        looked += (looked.empty() ? "" : ", ") + dir.string();
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) continue;
        static std::mutex mutex;
        static std::map<std::filesystem::path, Loaded> opened;
        const std::lock_guard lock(mutex);
        auto it = opened.find(path);
        if (it == opened.end()) it = opened.emplace(path, open_plugin(r, path)).first;
        return it->second;
    }
    Loaded l;
    l.why = r.plugin_built ? std::string(r.words) + "'s plugin " + r.plugin + " is missing (looked in " + looked +
                                 "; set KVSCOPE_PLUGIN_DIR to its folder)"
                           : "this build has no " + std::string(r.words).substr(4) +
                                 " (the toolkit was not found when it was built, or it was turned off)";
    return l;
}

BackendChoice make(const Registered& r) {
    BackendChoice c;
    if (r.built_in) {
        c.backend = r.built_in();
        return c;
    }
    const Loaded l = load(r);
    if (!l.create) {
        c.status = Status::no_device;
        c.message = l.why;
        return c;
    }
    l.create(&c);
    return c;
}

std::string names() {
    std::string out = "auto";
    for (const Registered& r : kBackends) out += std::string(", ") + r.name;
    return out;
}

}  // namespace

BackendChoice choose_backend(const std::string& name) {
    BackendChoice c;
    if (name == "auto") {
        for (const Registered& r : kBackends) {
            c = make(r);
            if (c.backend) break;
        }
    } else {
        const auto it = std::find_if(std::begin(kBackends), std::end(kBackends),
                                     [&](const Registered& r) { return name == r.name; });
        if (it == std::end(kBackends)) {
            c.status = Status::invalid_input;
            c.message = "'" + name + "' is not a backend (" + names() + ")";
            return c;
        }
        c = make(*it);
    }
    if (c.backend) {
        c.status = Status::ok;
        c.message.clear();
    }
    return c;
}

HostReading read_this_host() {
    const std::unique_ptr<Backend> cpu = make_cpu_backend();
    if (!cpu) return {};
    return {cpu->device().total_bytes, measure_host_read_gbps(256ull << 20)};
}

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> out;
    for (auto it = std::rbegin(kBackends); it != std::rend(kBackends); ++it) {  // the CPU first
        BackendChoice c = make(*it);
        if (c.backend) {
            out.push_back(c.backend->device());
            if (it->built_in == make_cpu_backend) out.back().measured_gbps = measure_host_read_gbps(256ull << 20);
        } else {
            DeviceInfo none;
            none.backend = it->name;
            none.available = false;
            none.name = "unavailable";
            none.note = c.message;
            out.push_back(none);
        }
        out.back().label = it->label;
    }
    return out;
}

Result<std::unique_ptr<Backend>> make_backend(const std::string& name) {
    BackendChoice c = choose_backend(name);
    if (!c.backend) return FieldError{"--backend", c.message};
    return std::move(c.backend);
}

}  // namespace kvscope::probe
