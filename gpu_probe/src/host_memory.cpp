#include "host_memory.h"

#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <fstream>
#include <locale>
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

}  // namespace

std::uint64_t resident_bytes() {
    std::ifstream in = system_file("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * page_bytes();
}

std::uint64_t available_bytes() { return meminfo("MemAvailable"); }
std::uint64_t total_bytes() { return meminfo("MemTotal"); }
std::uint64_t page_bytes() { return static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)); }

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
