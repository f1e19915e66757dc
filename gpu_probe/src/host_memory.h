#pragma once
// Facts about this process and machine read from /proc and sysconf (Linux).

#include <cstdint>
#include <optional>
#include <string>

namespace kvscope::probe::host {

std::uint64_t resident_bytes();  // this process, now
// What the memory cgroup of this process still lets it use, where one limits it (a container's --memory, a
// systemd unit's MemoryMax): the tightest of its limits less its use, over its group and the groups above it, in
// cgroup v2 (memory.max, memory.current under `root`) and v1 (memory.limit_in_bytes, memory.usage_in_bytes under
// `root`/memory); none where no group limits it.
std::optional<std::uint64_t> cgroup_headroom(const std::string& cgroup_file = "/proc/self/cgroup",
                                             const std::string& root = "/sys/fs/cgroup");
std::uint64_t available_bytes();  // MemAvailable, or less where a memory cgroup (a container) allows less
// What a run may allocate: --memory-limit, but never more than is available (a limit above the free memory would
// let the kernel's OOM killer end the run, and more than the run). `why` completes "… more than the X": "the memory
// limit allows" or "of memory available".
struct Budget {
    std::uint64_t bytes = 0;
    std::string why;
    bool by_limit = false;  // the limit, not the free memory, is the smaller
};
Budget budget(std::uint64_t memory_limit_bytes);
std::uint64_t total_bytes();  // MemTotal
std::uint64_t page_bytes();
std::uint64_t last_level_cache_bytes();
// The read ceiling's buffer when --ceiling-size gives none: four times the last-level cache (so the reads come from
// memory, not the cache), at least 256 MiB and at most 1 GiB.
std::uint64_t ceiling_buffer_bytes();
std::string cpu_name();
unsigned threads();
// Asks for transparent huge pages over the whole 2 MiB pages inside [p, p + bytes), as inference
// engines' large allocations get them: fewer TLB misses while attention streams the cache. Only a
// request (Linux madvise; nothing elsewhere, or where the system turned huge pages off).
void advise_huge_pages(void* p, std::uint64_t bytes);

}  // namespace kvscope::probe::host
