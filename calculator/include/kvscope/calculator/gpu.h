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
    std::string source;
    std::vector<std::string> aliases;
    friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

}  // namespace kvscope
