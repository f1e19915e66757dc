#pragma once
// Facts about this process and machine read from /proc and sysconf (Linux).

#include <cstdint>
#include <string>

namespace kvscope::probe::host {

std::uint64_t resident_bytes();   // this process, now
std::uint64_t available_bytes();  // MemAvailable
std::uint64_t total_bytes();      // MemTotal
std::uint64_t page_bytes();
std::uint64_t last_level_cache_bytes();
std::string cpu_name();
unsigned threads();
// Asks for transparent huge pages over the whole 2 MiB pages inside [p, p + bytes), as inference
// engines' large allocations get them: fewer TLB misses while attention streams the cache. Only a
// request (Linux madvise; nothing elsewhere, or where the system turned huge pages off).
void advise_huge_pages(void* p, std::uint64_t bytes);

}  // namespace kvscope::probe::host
