#pragma once
// How each engine keeps the layers and splits them into pipeline stages (engine_layers.cpp).

#include <cstdint>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

// The workload as the engine stores it: llama.cpp keeps one contiguous cache (block size 1); vLLM without its
// hybrid KV cache manager keeps the whole context on sliding or chunked layers that sit beside full ones, and SGLang
// on every sliding or chunked layer.
// `cache_arch`: the layers whose cache is counted.
Workload engine_workload(const Workload& workload, const Deployment& d, const Architecture& cache_arch);
// The parallel layout as the engine splits the layers into pipeline stages (StageSplit): vLLM gives a layer more to
// the stages before the last, SGLang to the last ones, TensorRT-LLM and llama.cpp to the first.
Parallelism engine_parallelism(const Parallelism& parallel, Engine engine);
// Whether SGLang keeps the whole context on the model's sliding and chunked layers: one token pool for every layer,
// as it does for every family but those whose hybrid SWA memory it turns on (not modelled: a warning says so).
bool sglang_keeps_full_context(const Deployment& d, const Architecture& cache_arch);
// Whether that vLLM rule applies: sliding layers beside full ones before 0.10, or chunked-local layers beside full
// ones before kVllmChunkedHybridMinor.
bool vllm_keeps_full_context(const Deployment& d, const Architecture& cache_arch);
// The layers as the engine keeps them: llama.cpp's sliding and chunked layers hold their window plus one
// micro-batch (n_ubatch, kLlamaCppUbatch unless set) tokens, padded to 256; every other engine keeps the window.
// llama.cpp also keeps the recurrent state in f32.
constexpr std::uint64_t kLlamaCppUbatch = 512;
Architecture engine_architecture(const Architecture& arch, Engine engine, std::uint64_t ubatch = kLlamaCppUbatch);

}  // namespace kvscope
