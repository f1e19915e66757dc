#include "host_memory.h"

#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <fstream>
#include <locale>
#include <optional>
#include <string>
#include <thread>

#include "kvscope/calculator/numbers.h"

namespace kvscope::probe::host {

namespace {

// The kernel's files, read with the classic locale whatever the process's global one is.
std::ifstream system_file(const char* path) {
    std::ifstream in;
    in.imbue(std::locale::classic());
    in.open(path);
    return in;
}

// "MemAvailable:   12345 kB" → bytes; 0 when the field is missing.
std::uint64_t meminfo(const std::string& key) {
    std::ifstream in = system_file("/proc/meminfo");
    std::string name, unit;
    std::uint64_t kib = 0;
    while (in >> name >> kib >> unit)
        if (name == key + ":") return kib * 1024;
    return 0;
}

// One number from a cgroup file ("max", a limit past 2^62: none).
std::optional<std::uint64_t> cgroup_number(const std::string& path) {
    std::ifstream in = system_file(path.c_str());
    std::string text;
    if (!(in >> text)) return std::nullopt;
    const auto n = u64_from_text(text);
    return n && *n < (1ull << 62) ? n : std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> cgroup_headroom(const std::string& cgroup_file, const std::string& root) {
    std::ifstream in = system_file(cgroup_file.c_str());
    std::string line;
    std::optional<std::uint64_t> best;
    auto consider = [&best](const std::string& dir, const char* limit_file, const char* usage_file,
                            const char* inactive_key) {
        const auto limit = cgroup_number(dir + "/" + limit_file);
        if (!limit) return;
        // The use less the file cache the kernel would reclaim first (inactive_file), as `docker stats` counts it.
        std::uint64_t used = cgroup_number(dir + "/" + usage_file).value_or(0);
        std::ifstream stat = system_file((dir + "/memory.stat").c_str());
        std::string key;
        std::uint64_t value = 0;
        while (stat >> key >> value)
            if (key == inactive_key) used = used > value ? used - value : 0;
        const std::uint64_t left = *limit > used ? *limit - used : 0;
        if (!best || left < *best) best = left;
    };
    while (std::getline(in, line)) {
        // "0::/path" (v2) or "4:memory:/path" (v1); inside a container the path may not exist under the mount,
        // whose root is then the container's own group.
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        const bool v2 = controllers.empty(), v1 = controllers.find("memory") != std::string::npos;
        if (!v2 && !v1) continue;
        const std::string mount = v2 ? root : root + "/memory";
        const char* limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
        const char* usage_file = v2 ? "memory.current" : "memory.usage_in_bytes";
        const char* inactive_key = v2 ? "inactive_file" : "total_inactive_file";
        for (;;) {
            consider(mount + path, limit_file, usage_file, inactive_key);
            const auto up = path.rfind('/');
            if (path.empty() || path == "/" || up == std::string::npos) break;
            path = path.substr(0, up);
        }
    }
    return best;
}

std::uint64_t resident_bytes() {
    std::ifstream in = system_file("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * page_bytes();
}

std::uint64_t available_bytes() {
    const std::uint64_t available = meminfo("MemAvailable");
    const auto headroom = cgroup_headroom();
    return headroom && *headroom < available ? *headroom : available;
}
Budget budget(std::uint64_t memory_limit_bytes) {
    const std::uint64_t available = available_bytes();
    if (memory_limit_bytes > 0 && memory_limit_bytes <= available)
        return {memory_limit_bytes, "the memory limit allows", true};
    return {available,
            memory_limit_bytes > 0 ? "of memory available (less than --memory-limit)" : "of memory available", false};
}

std::uint64_t total_bytes() { return meminfo("MemTotal"); }
std::uint64_t page_bytes() { return static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)); }

std::uint64_t ceiling_buffer_bytes() {
    return std::min<std::uint64_t>(std::max<std::uint64_t>(4 * last_level_cache_bytes(), 256ull << 20), 1ull << 30);
}

std::uint64_t last_level_cache_bytes() {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) return static_cast<std::uint64_t>(l3);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > 0) return static_cast<std::uint64_t>(l2);
    // Some virtual machines report nothing: assume a generous 32 MiB so the checks stay safe.
    std::ifstream in = system_file("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string text;
    if (in >> text && !text.empty()) {
        const char unit = text.back();  // "32768K", "32M" or bytes
        const bool has_unit = unit == 'K' || unit == 'M';
        const std::uint64_t n = u64_from_text(std::string_view(text).substr(0, text.size() - has_unit)).value_or(0);
        if (n == 0) return 32ull << 20;
        return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
    }
    return 32ull << 20;
}

std::string cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "CPU";
}

unsigned threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void advise_huge_pages(void* p, std::uint64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t huge = 2u << 20;
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t skip = ((addr + huge - 1) & ~(huge - 1)) - addr;  // to the first 2 MiB boundary
    if (bytes <= skip) return;
    const std::uintptr_t length = (bytes - skip) & ~(huge - 1);
    if (length > 0) madvise(static_cast<char*>(p) + skip, length, MADV_HUGEPAGE);  // a hint: errors change nothing
#else
    (void)p, (void)bytes;
#endif
}

}  // namespace kvscope::probe::host
