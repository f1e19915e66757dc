#pragma once
// One question asked of the calculator: a model, its cache format, the workload,
// the parallel layout, and (optionally) the GPUs it should run on.

#include <optional>
#include <string>

#include "kvscope/calculator/architecture.h"
#include "kvscope/calculator/deployment.h"
#include "kvscope/calculator/kv_dtype.h"
#include "kvscope/calculator/workload.h"

namespace kvscope {

struct Scenario {
    std::string model_id;  // catalog id or config path; for display and files
    Architecture arch;
    KvDtype kv_dtype = KvDtype::fp16;
    Workload workload;
    Parallelism parallel;
    std::optional<Deployment> deployment;
    // The model's own weights (its published format, the exact bytes of its files, the engine they are for): what
    // a deployment starts with. Unset in files saved before KVScope kept it: then the catalog's, or bf16.
    std::optional<ModelWeights> model_weights;
    friend bool operator==(const Scenario&, const Scenario&) = default;
};

}  // namespace kvscope
