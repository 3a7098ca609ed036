#include "backends/machine_probe.hpp"

#include "core/cost/target.hpp"

#if defined(TAPESTRY_HAVE_CUDA)
#include "backends/cuda/cuda_probe.hpp"
#endif

namespace tapestry::backend {

void installGpuProbe() {
#if defined(TAPESTRY_HAVE_CUDA)
  cost::setGpuProbe([](cost::MachineInfo& machine) {
    const cuda::Probe probe = cuda::probe();
    if (!probe.available) {
      machine.gpuNote = probe.reason;
      return;
    }
    for (const cuda::DeviceInfo& d : probe.devices) {
      machine.gpus.push_back(
          cost::MachineInfo::Gpu{d.name, static_cast<std::int64_t>(d.memoryBytes)});
    }
  });
#endif
}

} // namespace tapestry::backend
