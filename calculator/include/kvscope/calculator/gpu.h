#pragma once
// A GPU of the catalog (resources/gpus.json) or one described on the command line.

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope {

struct GpuSpec {
    std::string id;    // "h100-sxm"
    std::string name;  // "NVIDIA H100 SXM 80GB"
    std::uint64_t memory_bytes = 0;
    std::uint64_t bandwidth_bytes_per_s = 0;
    double bf16_tflops = 0;  // dense
    // A computer whose GPU shares the system's memory (Apple silicon, DGX Spark, Strix Halo, Jetson): the machine's
    // memory, of which memory_bytes is the share its GPU may use by default, and the rule that sets that share (and
    // how to raise it). 0 and empty for a GPU with memory of its own.
    std::uint64_t unified_memory_bytes = 0;
    double gpu_share = 0;  // the catalog's: memory_bytes = unified_memory_bytes x gpu_share unless given otherwise
    std::string share_rule;
    std::string source;
    std::vector<std::string> aliases;
    friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// The computer the GPU sits in, for what a split model keeps in its memory (offload.h): its RAM and the bandwidth a
// decode step reads it at. 0: not given (the RAM is not checked; the bandwidth is a platform's of offload.h).
struct HostSpec {
    std::string id;  // a platform of offload.h's table ("ddr5-5600-2ch"), or empty for figures given
    std::uint64_t memory_bytes = 0;
    std::uint64_t bandwidth_bytes_per_s = 0;
    friend bool operator==(const HostSpec&, const HostSpec&) = default;
};

}  // namespace kvscope
