// Builds without the CUDA toolkit: the CUDA backend reports why it is missing.
#include "backends.h"

namespace kvscope::probe {

std::unique_ptr<Backend> make_cuda_backend(std::string& why, Status& status) {
    status = Status::no_device;
    why = "this build has no CUDA backend (the CUDA toolkit was not found, or KVSCOPE_CUDA=OFF)";
    return nullptr;
}

}  // namespace kvscope::probe
