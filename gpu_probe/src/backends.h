#pragma once
// What the backends share (probe.cpp): the attention's view of the cache and the bytes a step reads; and the CUDA
// plugin's entry, which plugins.cpp loads. The CPU backend is cpu_backend.h.

#include <memory>
#include <string>

#include "kvscope/probe/probe.h"
#include "reference.h"

namespace kvscope::probe {

// The attention's view of the cache: heads, dimensions and row lengths (MLA: one latent "head").
AttentionShape attention_shape(const Architecture& arch);
// Bytes one decode step reads: every tensor's attended tokens (the block padding is never read).
std::uint64_t kv_bytes_read(const std::vector<KvTensor>& tensors);
// nullptr with `why` and `status` (no_device or driver_mismatch) set when no device answers. Defined in the
// CUDA plugin (gpu_probe/cuda/), which plugins.cpp loads.
std::unique_ptr<Backend> make_cuda_backend(std::string& why, Status& status);

}  // namespace kvscope::probe
