// Finds out whether CUDA GPUs can be used here, without ever crashing or hanging
// when there is no driver or no device (the CUDA backend then exits 4).
#pragma once

#include <string>
#include <vector>

namespace tapestry::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  std::size_t memoryBytes = 0;
};

struct Probe {
  bool available = false;
  std::vector<DeviceInfo> devices;
  std::string reason; // why not available, e.g. "no CUDA GPU found (CUDA driver not found)"
};

// Queries the CUDA runtime once; when a device is present, also launches a tiny
// kernel so that "available" means usable. Links only the static CUDA runtime
// (which loads the driver on demand), so every tapestry command can probe without
// loading cuBLASLt.
Probe probe();

} // namespace tapestry::cuda
