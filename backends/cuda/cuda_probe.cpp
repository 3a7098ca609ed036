#include "backends/cuda/cuda_probe.hpp"

#include <cuda_runtime.h>

namespace tapestry::cuda {

// Defined in smoke_kernel.cu: launches one tiny kernel, returns its result.
cudaError_t runSmokeKernel(int* hostResult);

Probe probe() {
  Probe result;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    result.reason = "no CUDA GPU found";
    if (status != cudaSuccess) {
      result.reason += std::string(" (") + cudaGetErrorString(status) + ")";
    }
    cudaGetLastError(); // clear the sticky error state for later callers
    return result;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, i) != cudaSuccess) {
      continue;
    }
    result.devices.push_back(
        DeviceInfo{i, props.name, props.major, props.minor, props.totalGlobalMem});
  }
  int smoke = 0;
  status = runSmokeKernel(&smoke);
  if (status != cudaSuccess || smoke != 42) {
    result.reason =
        std::string("CUDA GPU present but a test kernel failed: ") + cudaGetErrorString(status);
    return result;
  }
  result.available = true;
  return result;
}

} // namespace tapestry::cuda
