#pragma once
// Scenarios that more than one suite checks: here once, so the suites agree on what they test.

#include "kvscope/calculator/catalog.h"
#include "kvscope/calculator/scenario.h"

namespace kvscope::testing {

// Llama 3 70B at 32k × 4 with TP 2 on 2 × H100 under vLLM, with fractional inputs where a
// comma locale would show (memory fraction 0.85, 989.5 bf16 TFLOP/s): what a file saved on a
// German desktop must bring back.
inline Scenario fractional_deployment() {
    const Catalog& c = Catalog::builtin();
    Scenario s;
    s.model_id = "llama-3-70b";
    s.arch = c.find_model("llama-3-70b")->model.arch;
    s.workload = {32768, 4, 16, false};
    s.parallel = {2, 1};
    Deployment d;
    d.gpu = *c.find_gpu("h100-sxm");
    d.gpu.bf16_tflops = 989.5;
    d.gpu_count = 2;
    d.engine = Engine::vllm;
    d.fraction = 0.85;
    s.deployment = d;
    return s;
}

// The README's question on a picked model: 128k tokens × 8 in fp8, TP 2 on 2 × H100 SXM (vLLM).
inline void readme_example(Scenario& s) {
    s.kv_dtype = KvDtype::fp8_e4m3;
    s.workload.context_tokens = 131072;
    s.workload.batch = 8;
    s.parallel.tp = 2;
    Deployment d;
    d.gpu = *Catalog::builtin().find_gpu("h100-sxm");
    d.gpu_count = 2;
    s.deployment = d;
}

}  // namespace kvscope::testing
