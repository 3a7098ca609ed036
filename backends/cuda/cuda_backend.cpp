#include "backends/cuda/cuda_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>

#include <cuda_runtime.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cuda/cublaslt.hpp"
#include "backends/cuda/cuda_body.hpp"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/cuda_probe.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

using cuda::checkCuda;

namespace {

// One logical plan device: its GPU, its stream and its cuBLASLt workspace.
// Shared with the buffers allocated on it, so that the stream outlives them.
struct DeviceContext {
  int device = 0; // the plan device
  int gpu = 0;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspaceBytes = 0;

  DeviceContext() = default;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  ~DeviceContext() {
    // Errors here have nowhere to go (and the process may be exiting).
    cudaSetDevice(gpu);
    if (stream != nullptr) {
      cudaStreamSynchronize(stream);
    }
    if (workspace != nullptr) {
      cudaFree(workspace);
    }
    if (stream != nullptr) {
      cudaStreamDestroy(stream);
    }
  }

  void select() const {
    const cudaError_t status = cudaSetDevice(gpu);
    if (status != cudaSuccess) {
      checkCuda(status, "selecting GPU " + std::to_string(gpu));
    }
  }
  // The message is built only when the stream failed (this runs after every call).
  void wait(std::string_view what) const {
    const cudaError_t status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess) {
      checkCuda(status, std::string(what) + " on plan device " + std::to_string(device) + " (GPU " +
                            std::to_string(gpu) + ")");
    }
  }
};

CpuBackend& hostBackend() {
  static CpuBackend cpu(1);
  return cpu;
}

void checkViews(const TensorView& src, const TensorView& dst, const ZRange& region,
                const char* what) {
  if (src.dtype != dst.dtype || !src.region.contains(region) || !dst.region.contains(region)) {
    throw InternalError(std::string(what) + " of " + region.toString() + " from " + src.toString() +
                        " to " + dst.toString() + ": views do not match");
  }
}

} // namespace

struct CudaBackend::Impl {
  CudaOptions options;
  std::vector<cuda::DevicePlacement> placements;
  std::vector<std::shared_ptr<DeviceContext>> contexts; // per plan device
  std::map<int, std::unique_ptr<cuda::LtMatmul>> blas;  // per GPU
  std::vector<std::string> gpuNames;

  DeviceContext& context(int device) const {
    if (device < 0 || static_cast<std::size_t>(device) >= contexts.size()) {
      throw InternalError("backend cuda: plan device " + std::to_string(device) +
                          " is not one of its " + std::to_string(contexts.size()) + " devices");
    }
    return *contexts[static_cast<std::size_t>(device)];
  }
  int gpuOf(int device) const { return context(device).gpu; }
  cuda::KernelContext kernelContext(const DeviceContext& ctx) const {
    cuda::KernelContext k;
    k.gpu = ctx.gpu;
    k.stream = ctx.stream;
    k.lt = blas.at(ctx.gpu).get();
    k.tf32 = options.tf32;
    k.workspace = ctx.workspace;
    k.workspaceBytes = ctx.workspaceBytes;
    return k;
  }
};

CudaBackend::CudaBackend(const CudaOptions& options) : impl_(std::make_unique<Impl>()) {
  const cuda::Probe probe = cuda::probe();
  if (!probe.available) {
    throw BackendUnavailable(probe.reason);
  }
  cuda::requireCublasLt();
  Impl& m = *impl_;
  m.options = options;
  m.options.planDevices = std::max(1, options.planDevices);
  const int gpus = static_cast<int>(probe.devices.size());
  for (const cuda::DeviceInfo& info : probe.devices) {
    m.gpuNames.push_back(info.name + " (sm_" + std::to_string(info.computeMajor) +
                         std::to_string(info.computeMinor) + ")");
  }
  m.placements = cuda::placeDevices(m.options.planDevices, gpus);

  std::vector<int> used;
  for (const cuda::DevicePlacement& p : m.placements) {
    used.push_back(p.gpu);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (int gpu : used) {
    checkCuda(cudaSetDevice(gpu), "selecting GPU " + std::to_string(gpu));
    // Keep freed memory in the pool: the executor frees and reallocates
    // buffers of the same sizes every run.
    cudaMemPool_t pool = nullptr;
    checkCuda(cudaDeviceGetDefaultMemPool(&pool, gpu),
              "the memory pool of GPU " + std::to_string(gpu));
    std::uint64_t threshold = UINT64_MAX;
    checkCuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
              "configuring the memory pool of GPU " + std::to_string(gpu));
    for (int peer : used) {
      int can = 0;
      if (peer != gpu && cudaDeviceCanAccessPeer(&can, gpu, peer) == cudaSuccess && can != 0) {
        const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError(); // not an error for us; clear it
        } else {
          checkCuda(status, "enabling peer access from GPU " + std::to_string(gpu) + " to GPU " +
                                std::to_string(peer));
        }
      }
    }
    m.blas.emplace(gpu, std::make_unique<cuda::LtMatmul>());
  }
  for (int d = 0; d < m.options.planDevices; ++d) {
    auto ctx = std::make_shared<DeviceContext>();
    ctx->device = d;
    ctx->gpu = m.placements[static_cast<std::size_t>(d)].gpu;
    ctx->select();
    checkCuda(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking),
              "creating a stream for plan device " + std::to_string(d));
    ctx->workspaceBytes = m.options.workspaceBytes;
    if (ctx->workspaceBytes > 0) {
      checkCuda(cudaMalloc(&ctx->workspace, ctx->workspaceBytes),
                "allocating the cuBLASLt workspace of plan device " + std::to_string(d));
    }
    m.contexts.push_back(std::move(ctx));
  }
}

CudaBackend::~CudaBackend() = default;

int CudaBackend::deviceCount() const {
  return impl_->options.planDevices;
}

const CudaOptions& CudaBackend::options() const {
  return impl_->options;
}

const std::vector<cuda::DevicePlacement>& CudaBackend::placements() const {
  return impl_->placements;
}

std::string CudaBackend::deviceDescription(int device) const {
  return impl_->gpuNames.at(static_cast<std::size_t>(impl_->gpuOf(device)));
}

Buffer CudaBackend::allocate(DType dtype, const ZRange& region, int device) {
  return allocateOn(dtype, region, device, true);
}

Buffer CudaBackend::allocateUninitialized(DType dtype, const ZRange& region, int device) {
  return allocateOn(dtype, region, device, false);
}

Buffer CudaBackend::allocateOn(DType dtype, const ZRange& region, int device, bool zeroed) {
  if (device == kHostDevice) {
    return zeroed ? Buffer::host(dtype, region, kHostDevice)
                  : Buffer::hostUninitialized(dtype, region, kHostDevice);
  }
  impl_->context(device); // an InternalError for a device the backend does not have
  const std::shared_ptr<DeviceContext> ctx = impl_->contexts[static_cast<std::size_t>(device)];
  ctx->select();
  const std::int64_t bytes = region.size() * static_cast<std::int64_t>(dtypeSize(dtype));
  const std::size_t rounded = (static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)) + 255) /
                              256 * 256; // keeps every buffer 256-byte aligned
  void* raw = nullptr;
  // The message is built only when a call fails (allocation is on every task's path).
  auto check = [&](cudaError_t status, bool onDevice) {
    if (status != cudaSuccess) {
      std::string what = "allocating " + std::to_string(bytes) + " bytes for " + dtypeName(dtype) +
                         " " + region.toString();
      checkCuda(status, onDevice ? what + " on plan device " + std::to_string(device) : what);
    }
  };
  check(cudaMallocAsync(&raw, rounded, ctx->stream), true);
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(raw), [ctx](std::byte* p) {
    // Every call waits for its work, so nothing pending uses p.
    cudaSetDevice(ctx->gpu);
    cudaFreeAsync(p, ctx->stream);
  });
  if (zeroed) {
    check(cudaMemsetAsync(raw, 0, rounded, ctx->stream), false);
  }
  // The allocation is ordered on this stream: other streams may use it only after.
  ctx->wait("allocating a buffer");
  return Buffer(dtype, region, device, std::move(storage));
}

void CudaBackend::copyRegion(const TensorView& src, const TensorView& dst, const ZRange& region) {
  if (region.isEmpty()) {
    return;
  }
  checkViews(src, dst, region, "copy");
  const bool srcHost = src.device == kHostDevice;
  const bool dstHost = dst.device == kHostDevice;
  if (srcHost && dstHost) {
    copyHostRegion(src, dst, region);
    return;
  }
  const Impl& m = *impl_;
  const DeviceContext& ctx = m.context(dstHost ? src.device : dst.device);
  ctx.select();
  const int srcGpu = srcHost ? -1 : m.gpuOf(src.device);
  const int dstGpu = dstHost ? -1 : m.gpuOf(dst.device);
  const std::string what =
      "copying " + region.toString() + " from " + src.toString() + " to " + dst.toString();
  if (!srcHost && !dstHost && srcGpu == dstGpu) {
    cuda::copyOnDevice(src, dst, region, ctx.stream);
    ctx.wait(what);
    return;
  }
  // A transfer between the host and a GPU, or between two GPUs: one block of
  // bytes; a side whose region is not contiguous goes through dense staging.
  const std::size_t size = dtypeSize(src.dtype);
  const std::size_t bytes = static_cast<std::size_t>(region.size()) * size;
  const std::vector<std::int64_t> start = region.start().vector();
  Buffer hostStage;
  cuda::Scratch srcStage;
  cuda::Scratch dstStage;
  const std::byte* from = src.data + src.offsetOf(start) * static_cast<std::int64_t>(size);
  if (!cuda::isContiguous(src, region)) {
    if (srcHost) {
      hostStage = Buffer::host(src.dtype, region);
      copyHostRegion(src, hostStage.view(), region);
      from = hostStage.data();
    } else {
      const DeviceContext& sctx = m.context(src.device);
      srcStage = cuda::Scratch(bytes, sctx.gpu, sctx.stream);
      cuda::copyOnDevice(src, cuda::denseView(srcStage.get(), src.dtype, region, src.device),
                         region, sctx.stream);
      sctx.wait(what);
      ctx.select();
      from = srcStage.get();
    }
  }
  std::byte* to = dst.data + dst.offsetOf(start) * static_cast<std::int64_t>(size);
  const bool dstDense = cuda::isContiguous(dst, region);
  Buffer hostLanding;
  if (!dstDense) {
    if (dstHost) {
      hostLanding = Buffer::host(dst.dtype, region);
      to = hostLanding.data();
    } else {
      dstStage = cuda::Scratch(bytes, ctx.gpu, ctx.stream);
      to = dstStage.get();
    }
  }
  if (srcHost || dstHost) {
    checkCuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, ctx.stream), what);
  } else {
    checkCuda(cudaMemcpyPeerAsync(to, dstGpu, from, srcGpu, bytes, ctx.stream), what);
  }
  ctx.wait(what);
  if (!dstDense) {
    if (dstHost) {
      copyHostRegion(hostLanding.view(), dst, region);
    } else {
      cuda::copyOnDevice(cuda::denseView(to, dst.dtype, region, dst.device), dst, region,
                         ctx.stream);
      ctx.wait(what);
    }
  }
}

void CudaBackend::combine(Combine kind, const TensorView& dst, const TensorView& src,
                          const ZRange& region) {
  if (region.isEmpty()) {
    return;
  }
  checkViews(src, dst, region, "combine");
  if (dst.device == kHostDevice) {
    Buffer local = Buffer::host(src.dtype, region);
    copyRegion(src, local.view(), region);
    hostBackend().combine(kind, dst, local.view(), region);
    return;
  }
  const Impl& m = *impl_;
  const DeviceContext& ctx = m.context(dst.device);
  ctx.select();
  TensorView from = src;
  cuda::Scratch stage;
  if (src.device == kHostDevice || m.gpuOf(src.device) != ctx.gpu) {
    stage = cuda::Scratch(static_cast<std::size_t>(region.size()) * dtypeSize(src.dtype), ctx.gpu,
                          ctx.stream);
    from = cuda::denseView(stage.get(), src.dtype, region, dst.device);
    copyRegion(src, from, region);
    ctx.select();
  }
  const cuda::ViewWalk d = cuda::walkRegion(dst, region);
  const cuda::ViewWalk s = cuda::walkRegion(from, region);
  const std::vector<std::int64_t> extent = region.shape().vector();
  const std::vector<std::int64_t> strides[2] = {d.stride, s.stride};
  const std::string what = std::string("combining (") + metakernel::combineName(kind) + ") " +
                           region.toString() + " into " + dst.toString();
  checkCuda(cuda::launchCombine(static_cast<cuda::CombineOp>(kind), cuda::elementType(dst.dtype),
                                d.base, s.base, cuda::makeWalk(extent, strides), ctx.stream),
            what);
  ctx.wait(what);
}

void CudaBackend::fillIdentity(Combine kind, const TensorView& dst) {
  if (dst.region.isEmpty()) {
    return;
  }
  if (dst.device == kHostDevice) {
    hostBackend().fillIdentity(kind, dst);
    return;
  }
  const DeviceContext& ctx = impl_->context(dst.device);
  ctx.select();
  const std::vector<std::int64_t> extent = dst.region.shape().vector();
  const std::vector<std::int64_t> strides[1] = {dst.strides};
  const std::string what = "filling " + dst.toString();
  checkCuda(cuda::launchFillIdentity(static_cast<cuda::CombineOp>(kind),
                                     cuda::elementType(dst.dtype), dst.data,
                                     cuda::makeWalk(extent, strides), ctx.stream),
            what);
  ctx.wait(what);
}

Buffer CudaBackend::shareRegion(const Buffer& source, const ZRange& region, int device) {
  if (source.device() == kHostDevice || device == kHostDevice ||
      impl_->gpuOf(source.device()) != impl_->gpuOf(device)) {
    return {};
  }
  return source.share(region, device);
}

bool CudaBackend::hasKernel(std::string_view kernel) const {
  return cuda::cudaKernels().find(kernel) != nullptr;
}

std::vector<std::string> CudaBackend::kernelNames() const {
  return cuda::cudaKernels().names();
}

void CudaBackend::synchronize() {
  for (const std::shared_ptr<DeviceContext>& ctx : impl_->contexts) {
    ctx->select();
    ctx->wait("synchronizing");
  }
}

namespace {

// Kernels read and write device memory of their own GPU only.
void checkCallViews(const KernelCall& call, int gpu, const std::function<int(int)>& gpuOf) {
  auto check = [&](std::span<const PortViews> ports, const char* side) {
    for (const PortViews& port : ports) {
      for (const TensorView& v : port) {
        if (!v.present()) {
          continue;
        }
        if (v.device == kHostDevice || gpuOf(v.device) != gpu) {
          throw InternalError("backend cuda: kernel " + call.op.kernel + " (operation " +
                              call.op.name + ") on plan device " + std::to_string(call.device) +
                              " got an " + side + " view " + v.toString() +
                              " that is not in the memory of its GPU");
        }
      }
    }
  };
  check(call.inputs, "input");
  check(call.outputs, "output");
}

} // namespace

void CudaBackend::launchBody(const KernelCall& call) {
  const Impl& m = *impl_;
  const DeviceContext& ctx = m.context(call.device);
  ctx.select();
  checkCallViews(call, ctx.gpu, [&](int device) { return m.gpuOf(device); });
  const cuda::KernelContext kernel = m.kernelContext(ctx);
  const std::string what = "body of kernel " + call.op.kernel + " (operation " + call.op.name + ")";
  try {
    cuda::runBodyOnDevice(call, kernel);
  } catch (...) {
    // What was enqueued before the error still runs; let it finish first.
    cudaStreamSynchronize(ctx.stream);
    throw;
  }
  checkCuda(cudaGetLastError(), what);
  ctx.wait(what);
}

namespace {

// A native kernel's call on one device, its views checked once: each run
// selects the device, enqueues the kernel and waits for it.
class PreparedCudaKernel final : public PreparedKernel {
public:
  PreparedCudaKernel(cuda::CudaKernel kernel, cuda::KernelContext context, int gpu,
                     cudaStream_t stream)
      : kernel_(kernel), context_(context), gpu_(gpu), stream_(stream) {}

  void run(const KernelCall& call) override {
    cudaError_t status = cudaSetDevice(gpu_);
    if (status != cudaSuccess) {
      checkCuda(status, "selecting GPU " + std::to_string(gpu_));
    }
    kernel_(call, context_);
    status = cudaGetLastError();
    if (status == cudaSuccess) {
      status = cudaStreamSynchronize(stream_);
    }
    if (status != cudaSuccess) {
      checkCuda(status, "kernel " + call.op.kernel + " (operation " + call.op.name +
                            ") on plan device " + std::to_string(call.device) + " (GPU " +
                            std::to_string(gpu_) + ")");
    }
  }

private:
  cuda::CudaKernel kernel_;
  cuda::KernelContext context_;
  int gpu_;
  cudaStream_t stream_;
};

} // namespace

std::unique_ptr<PreparedKernel> CudaBackend::prepareNative(const KernelCall& call) {
  const Impl& m = *impl_;
  const DeviceContext& ctx = m.context(call.device);
  checkCallViews(call, ctx.gpu, [&](int device) { return m.gpuOf(device); });
  const cuda::CudaKernel* kernel = cuda::cudaKernels().find(call.op.kernel);
  if (kernel == nullptr) {
    throw Error("kernel " + call.op.kernel + " is not implemented on the CUDA backend");
  }
  return std::make_unique<PreparedCudaKernel>(*kernel, m.kernelContext(ctx), ctx.gpu, ctx.stream);
}

void CudaBackend::launch(const KernelCall& call) {
  const Impl& m = *impl_;
  const DeviceContext& ctx = m.context(call.device);
  ctx.select();
  checkCallViews(call, ctx.gpu, [&](int device) { return m.gpuOf(device); });
  const cuda::CudaKernel* kernel = cuda::cudaKernels().find(call.op.kernel);
  if (kernel == nullptr) {
    throw Error("kernel " + call.op.kernel + " is not implemented on the CUDA backend");
  }
  (*kernel)(call, m.kernelContext(ctx));
  const std::string what = "kernel " + call.op.kernel + " (operation " + call.op.name + ")";
  checkCuda(cudaGetLastError(), what);
  ctx.wait(what);
}

std::vector<double> CudaBackend::timeKernel(const graph::Operation& op, const ZRange& index,
                                            std::span<const PortViews> inputs,
                                            std::span<const PortViews> outputs, int device,
                                            int warmup, int repeat) {
  const KernelCall call{op, index, inputs, outputs, device};
  checkKernelCall(call);
  const Impl& m = *impl_;
  const DeviceContext& ctx = m.context(device);
  ctx.select();
  checkCallViews(call, ctx.gpu, [&](int d) { return m.gpuOf(d); });
  const cuda::CudaKernel* kernel = cuda::cudaKernels().find(op.kernel);
  if (kernel == nullptr) {
    throw Error("kernel " + op.kernel + " is not implemented on the CUDA backend");
  }
  const std::string what = "timing kernel " + op.kernel + " (operation " + op.name + ")";
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  checkCuda(cudaEventCreate(&start), what);
  const cudaError_t created = cudaEventCreate(&stop);
  if (created != cudaSuccess) {
    cudaEventDestroy(start);
    checkCuda(created, what);
  }
  std::vector<double> times;
  try {
    for (int i = 0; i < warmup + repeat; ++i) {
      checkCuda(cudaEventRecord(start, ctx.stream), what);
      (*kernel)(call, m.kernelContext(ctx));
      checkCuda(cudaEventRecord(stop, ctx.stream), what);
      checkCuda(cudaEventSynchronize(stop), what);
      float ms = 0;
      checkCuda(cudaEventElapsedTime(&ms, start, stop), what);
      if (i >= warmup) {
        times.push_back(static_cast<double>(ms) / 1e3);
      }
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return times;
}

} // namespace tapestry::backend
