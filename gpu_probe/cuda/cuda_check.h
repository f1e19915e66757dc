#pragma once
// Every CUDA and cuBLAS call is checked: a failure throws CudaError with file:line, the
// call's text and the error's name and description, after clearing CUDA's sticky error.
// The backend converts it to a ProbeReport status at its boundary, so no exception leaves
// the library. KVSCOPE_CUDA_NOTHROW is for destructors: it only logs.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace kvscope::probe::cuda {

class CudaError : public std::runtime_error {
public:
    CudaError(const std::string& what, cudaError_t code) : std::runtime_error(what), code_(code) {}
    [[nodiscard]] cudaError_t code() const { return code_; }

private:
    cudaError_t code_;
};

inline void check(cudaError_t e, const char* call, const char* file, int line) {
    if (e == cudaSuccess) return;
    cudaGetLastError();  // clear the sticky error so the next call is not blamed for this one
    throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + cudaGetErrorName(e) +
                        " (" + cudaGetErrorString(e) + ")",
                    e);
}

inline void check(cublasStatus_t s, const char* call, const char* file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    // cuBLAS out of memory (its handle or workspace) is the device's out of memory to the report.
    throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call +
                        " failed: " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")",
                    s == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown);
}

inline void check_nothrow(cudaError_t e, const char* call, const char* file, int line) {
    if (e == cudaSuccess) return;
    cudaGetLastError();
    std::fprintf(stderr, "kvscope probe: %s:%d: %s failed: %s\n", file, line, call, cudaGetErrorName(e));
}

}  // namespace kvscope::probe::cuda

#define KVSCOPE_CUDA(call) ::kvscope::probe::cuda::check((call), #call, __FILE__, __LINE__)
#define KVSCOPE_CUDA_NOTHROW(call) ::kvscope::probe::cuda::check_nothrow((call), #call, __FILE__, __LINE__)
