// The CUDA backend (SPEC §9, docs/cuda.md): buffers in stream-ordered device
// memory pools, region copies (contiguous blocks as one memcpy, anything else
// through a gather kernel or host staging), matrix products through cuBLASLt
// native kernels for every other standard-library kernel, and kernel bodies
// evaluated on device blocks (cuda_body.hpp).
//
// Each logical plan device gets its own CUDA stream: on a GPU of its own when
// there are at least as many GPUs as plan devices, else on GPU 0
// (cuda::placeDevices). The executor's worker threads drive the streams
// concurrently. Every call enqueues its work on the stream of the device it
// runs on and waits for that stream before returning, so when a task of the
// executor ends its results are complete: the executor's task order is the
// only ordering needed, across streams, GPUs and the host. Temporary memory
// is freed stream-ordered. Copies between GPUs are peer copies.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/cuda_plan.hpp"

namespace tapestry::backend {

struct CudaOptions {
  int planDevices = 1;                     // logical devices the plans use
  bool tf32 = false;                       // float32 products may use TF32 tensor cores
  std::size_t workspaceBytes = 32u << 20u; // cuBLASLt workspace per plan device
};

class CudaBackend final : public Backend {
public:
  // BackendUnavailable (exit 4) without a usable GPU or without cuBLASLt.
  explicit CudaBackend(const CudaOptions& options = {});
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  int deviceCount() const override;
  Buffer allocate(DType dtype, const ZRange& region, int device) override;
  Buffer allocateUninitialized(DType dtype, const ZRange& region, int device) override;
  void copyRegion(const TensorView& src, const TensorView& dst, const ZRange& region) override;
  void combine(Combine kind, const TensorView& dst, const TensorView& src,
               const ZRange& region) override;
  void fillIdentity(Combine kind, const TensorView& dst) override;
  // Shares a contiguous region of a buffer already in the memory of the GPU
  // that `device` runs on (e.g. bench's inputs, for plan devices that are
  // streams of one GPU).
  Buffer shareRegion(const Buffer& source, const ZRange& region, int device) override;
  bool hasKernel(std::string_view kernel) const override;
  std::vector<std::string> kernelNames() const override;
  void synchronize() override;

  const CudaOptions& options() const;
  // Where each plan device runs.
  const std::vector<cuda::DevicePlacement>& placements() const;
  // "NVIDIA H100 80GB HBM3 (sm_90)" for the GPU of plan device `device`.
  std::string deviceDescription(int device) const;

  // Times one kernel call on `device` with CUDA events around the enqueued
  // work (no host synchronization inside the timed span): seconds per timed
  // run, after `warmup` untimed runs. What bench's single-call baseline uses.
  std::vector<double> timeKernel(const graph::Operation& op, const ZRange& index,
                                 std::span<const PortViews> inputs,
                                 std::span<const PortViews> outputs, int device, int warmup,
                                 int repeat);

protected:
  void launch(const KernelCall& call) override;
  // The views' devices checked and the kernel looked up once per call.
  std::unique_ptr<PreparedKernel> prepareNative(const KernelCall& call) override;
  // A kernel with a body and no native CUDA kernel: the body evaluator with
  // its blocks on the GPU (backends/cuda/cuda_body.hpp), float32 or float64.
  void launchBody(const KernelCall& call) override;

private:
  Buffer allocateOn(DType dtype, const ZRange& region, int device, bool zeroed);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tapestry::backend
