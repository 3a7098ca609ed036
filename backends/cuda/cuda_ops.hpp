// Internals of the CUDA backend shared by cuda_backend.cpp (buffers, copies,
// the Backend interface) and cuda_ops.cpp (the kernels by name). Not a public
// header.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "backends/backend.hpp"
#include "backends/cuda/cublaslt.hpp"
#include "backends/cuda/cuda_plan.hpp"

namespace tapestry::cuda {

// What a kernel needs besides its call: the stream (and GPU) of the device it
// runs on, the GPU's cuBLASLt handle and the device's workspace.
struct KernelContext {
  int gpu = 0;
  cudaStream_t stream = nullptr;
  LtMatmul* lt = nullptr;
  bool tf32 = false;
  void* workspace = nullptr;
  std::size_t workspaceBytes = 0;
};

// Enqueues the kernel's work on ctx.stream (the caller waits for it).
using CudaKernel = void (*)(const backend::KernelCall&, const KernelContext&);
const backend::KernelRegistry<CudaKernel>& cudaKernels();

// Error "backend cuda: WHAT: <CUDA's message> (<error name>)" unless success.
void checkCuda(cudaError_t status, const std::string& what);

// Device memory for the duration of some enqueued work: allocated on the
// stream, freed on it (after everything enqueued before the free).
class Scratch {
public:
  Scratch() = default;
  Scratch(std::size_t bytes, int gpu, cudaStream_t stream);
  ~Scratch();
  Scratch(Scratch&& other) noexcept;
  Scratch& operator=(Scratch&& other) noexcept;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::byte* get() const { return data_; }

private:
  std::byte* data_ = nullptr;
  int gpu_ = 0;
  cudaStream_t stream_ = nullptr;
};

// A dense row-major view of `region` at `data`.
backend::TensorView denseView(std::byte* data, backend::DType dtype, const ZRange& region,
                              int device);

// dst[p] = src[p] over `region` for two views on one GPU: one memcpy when both
// are contiguous there, else the gather kernel.
void copyOnDevice(const backend::TensorView& src, const backend::TensorView& dst,
                  const ZRange& region, cudaStream_t stream);

} // namespace tapestry::cuda
