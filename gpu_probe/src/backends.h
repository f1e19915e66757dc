#pragma once
// The backends behind make_backend().

#include <memory>
#include <string>

#include "kvscope/probe/probe.h"
#include "reference.h"

namespace kvscope::probe {

std::unique_ptr<Backend> make_cpu_backend();

// The attention's view of the cache: heads, dimensions and row lengths (MLA: one latent "head").
AttentionShape attention_shape(const Architecture& arch);
// Bytes one decode step reads: every tensor's attended tokens (the block padding is never read).
std::uint64_t kv_bytes_read(const std::vector<KvTensor>& tensors);
// Read bandwidth of host memory over `bytes`, all threads, median of a few passes (GB/s).
double measure_host_read_gbps(std::uint64_t bytes);
// nullptr with `why` and `status` (no_device or driver_mismatch) set when no device answers. Defined in the
// CUDA plugin (gpu_probe/cuda/), which plugins.cpp loads.
std::unique_ptr<Backend> make_cuda_backend(std::string& why, Status& status);

}  // namespace kvscope::probe
