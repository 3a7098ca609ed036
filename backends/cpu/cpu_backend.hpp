// The CPU backend: every standard-library kernel on host memory. A plan's
// devices are worker threads of the executor; all of them share host memory,
// so buffers are host allocations tagged with their device and a transfer is a
// region copy between two buffers. Matrix products go through OpenBLAS (cblas).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/block_cache.hpp"

namespace tapestry::backend {

// Which kernels a CPU backend runs: the native ones (bodies only for kernels
// without one), or every kernel that has a body from its body.
enum class CpuKernels { Native, Bodies };

class CpuBackend final : public Backend {
public:
  // `devices`: how many devices (worker threads) it offers; 0 means one per
  // hardware thread.
  explicit CpuBackend(int devices = 0, CpuKernels kernels = CpuKernels::Native);

  std::string name() const override { return "cpu"; }
  int deviceCount() const override { return devices_; }
  Buffer allocate(DType dtype, const ZRange& region, int device) override;
  Buffer allocateUninitialized(DType dtype, const ZRange& region, int device) override;
  void copyRegion(const TensorView& src, const TensorView& dst, const ZRange& region) override;
  void combine(Combine kind, const TensorView& dst, const TensorView& src,
               const ZRange& region) override;
  void fillIdentity(Combine kind, const TensorView& dst) override;
  bool hasKernel(std::string_view kernel) const override;
  bool readsHostInPlace() const override { return true; }
  double productThreadsFromFlops() const override;
  Layout channelsLast(std::string_view kernel, bool output, std::size_t port) const override;
  bool prefersBodies() const override { return kernels_ == CpuKernels::Bodies; }
  std::vector<std::string> kernelNames() const override;
  void synchronize() override {} // every call runs to completion on its thread

  // Threads OpenBLAS may use inside one matrix product. The executor sets 1
  // when its own workers already occupy every core.
  static void setBlasThreads(int threads);
  // Threads one kernel call may use (the last setBlasThreads; 1 before
  // any): what kernels on other thread pools (oneDNN's OpenMP) ask for.
  static int kernelThreads();

protected:
  void launch(const KernelCall& call) override;
  std::unique_ptr<PreparedKernel> prepareNative(const KernelCall& call) override;
  void launchBody(const KernelCall& call) override;
  void launchExtern(const KernelCall& call) override;

private:
  int devices_;
  CpuKernels kernels_;
  std::shared_ptr<BlockCache> blocks_; // regions of 1 MiB and more, reused
};

} // namespace tapestry::backend
