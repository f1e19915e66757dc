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

}  // namespace kvscope::probe::host
