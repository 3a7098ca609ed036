// The smallest possible device code: proves nvcc builds for our architectures and
// that a launch works on the machine's GPU.
#include <cuda_runtime.h>

namespace tapestry::cuda {

namespace {
__global__ void writeAnswer(int* out) {
  *out = 42;
}
} // namespace

cudaError_t runSmokeKernel(int* hostResult) {
  int* device = nullptr;
  cudaError_t status = cudaMalloc(&device, sizeof(int));
  if (status != cudaSuccess) {
    return status;
  }
  writeAnswer<<<1, 1>>>(device);
  status = cudaGetLastError();
  if (status == cudaSuccess) {
    status = cudaMemcpy(hostResult, device, sizeof(int), cudaMemcpyDeviceToHost);
  }
  cudaFree(device);
  return status;
}

} // namespace tapestry::cuda
