#pragma once
// Device memory and event timing for the CUDA backend and the stopwatch: every allocation is
// freed on every path, exceptions included, and every call is checked.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "cuda_check.h"

namespace kvscope::probe::cuda {

// Owns one device allocation of `bytes` (at least one byte).
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) { KVSCOPE_CUDA(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 1))); }
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            if (ptr_) KVSCOPE_CUDA_NOTHROW(cudaFree(ptr_));
            ptr_ = std::exchange(o.ptr_, nullptr);
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr_) KVSCOPE_CUDA_NOTHROW(cudaFree(ptr_));
    }
    template <class T = void>
    [[nodiscard]] T* get() const {
        return static_cast<T*>(ptr_);
    }

private:
    void* ptr_ = nullptr;
};

// `n` values of T on the device, optionally copied from the host.
template <class T>
class DeviceArray {
public:
    DeviceArray() = default;
    explicit DeviceArray(std::size_t n) : buffer_(n * sizeof(T)) {}
    explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
        KVSCOPE_CUDA(cudaMemcpy(get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    [[nodiscard]] T* get() const { return buffer_.get<T>(); }

private:
    DeviceBuffer buffer_;
};

// Milliseconds between two events on the default stream.
class EventTimer {
public:
    EventTimer() {
        KVSCOPE_CUDA(cudaEventCreate(&start_));
        KVSCOPE_CUDA(cudaEventCreate(&stop_));
    }
    ~EventTimer() {
        KVSCOPE_CUDA_NOTHROW(cudaEventDestroy(start_));
        KVSCOPE_CUDA_NOTHROW(cudaEventDestroy(stop_));
    }
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;
    void start() { KVSCOPE_CUDA(cudaEventRecord(start_)); }
    float stop_ms() {
        KVSCOPE_CUDA(cudaEventRecord(stop_));
        KVSCOPE_CUDA(cudaEventSynchronize(stop_));
        float ms = 0;
        KVSCOPE_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
        return ms;
    }

private:
    cudaEvent_t start_{}, stop_{};
};

}  // namespace kvscope::probe::cuda
