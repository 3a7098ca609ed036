#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

#include <malloc.h>

#include <cblas.h>

#include "backends/cpu/gemm_engine.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "core/diag/error.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry::backend {

namespace {

const cpu::CpuRegistry& registry() {
  static const cpu::CpuRegistry kernels = [] {
    cpu::CpuRegistry r;
    cpu::registerElementwiseKernels(r);
    cpu::registerMatmulKernels(r);
    cpu::registerConvKernels(r);
    cpu::registerReduceKernels(r);
    cpu::registerNormalizationKernels(r);
    cpu::registerAttentionKernels(r);
    cpu::registerRopeKernel(r);
    cpu::registerBatchnormKernels(r);
    cpu::registerShapeKernels(r);
    cpu::registerEmbeddingKernels(r);
    cpu::registerPoolKernels(r);
    return r;
  }();
  return kernels;
}

template <class T> typename cpu::Num<T>::C identityOf(Combine kind) {
  // Integers use their own type's range (int32's lowest, not int64's).
  using C = typename cpu::Num<T>::C;
  using L = std::conditional_t<cpu::kIsInt<T>, T, C>;
  switch (kind) {
  case Combine::Sum:
    return C(0);
  case Combine::Prod:
    return C(1);
  case Combine::Max:
    return std::numeric_limits<L>::has_infinity ? -std::numeric_limits<L>::infinity()
                                                : std::numeric_limits<L>::lowest();
  case Combine::Min:
    break;
  }
  return std::numeric_limits<L>::has_infinity ? std::numeric_limits<L>::infinity()
                                              : std::numeric_limits<L>::max();
}

template <class T>
void combineTyped(Combine kind, const TensorView& dst, const TensorView& src,
                  const ZRange& region) {
  using C = typename cpu::Num<T>::C;
  const cpu::Walk d = cpu::walkRegion(dst, region);
  const cpu::Walk s = cpu::walkRegion(src, region);
  auto apply = [kind](C a, C b) -> C {
    switch (kind) {
    case Combine::Sum:
      if constexpr (std::is_integral_v<C>) {
        return cpu::wrapAdd(a, b);
      } else {
        return a + b;
      }
    case Combine::Prod:
      if constexpr (std::is_integral_v<C>) {
        return cpu::wrapMul(a, b);
      } else {
        return a * b;
      }
    case Combine::Max:
      if constexpr (!std::is_integral_v<C>) {
        if (std::isnan(a) || std::isnan(b)) {
          return std::isnan(a) ? a : b;
        }
      }
      return a < b ? b : a;
    case Combine::Min:
      break;
    }
    if constexpr (!std::is_integral_v<C>) {
      if (std::isnan(a) || std::isnan(b)) {
        return std::isnan(a) ? a : b;
      }
    }
    return b < a ? b : a;
  };
  cpu::forEachRun<2>(
      region, {&d, &s},
      [&](const std::array<std::int64_t, 2>& off, std::int64_t n,
          const std::array<std::int64_t, 2>& st) {
        T* y = d.ptr<T>() + off[0];
        const T* x = s.ptr<T>() + off[1];
        for (std::int64_t j = 0; j < n; ++j) {
          T& slot = y[j * st[0]];
          slot =
              cpu::Num<T>::store(apply(cpu::Num<T>::load(slot), cpu::Num<T>::load(x[j * st[1]])));
        }
      },
      true); // each point on its own: memory order
}

} // namespace

namespace {

// The executor allocates every region a task makes and frees it after its
// last use, run after run. glibc serves blocks from 128 KiB up with fresh
// mmap()ed pages (a page fault per 4 KiB on first touch, every time) and gives
// freed heap tops back to the system; for a plan that is most of the time of
// small memory-bound kernels. Keeping freed memory in the heap makes a warm
// run reuse it, as a GPU's caching allocator does (docs/cost-model.md).
// Regions of 1 MiB and more go through the backend's BlockCache instead: the
// threshold stops at 32 MiB, and each worker thread's malloc arena keeps its
// own free lists (a 64 MiB transfer took 39 ms in fresh pages, 7 ms reused).
void keepFreedMemory() {
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's largest (64-bit)
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
}

// OpenBLAS's pool threads spin for 2^28 cycles (about 0.1 s) after each
// multi-threaded product before they sleep. The executor runs one worker per
// device and gives each worker's products 1/N of the cores; spinning pool
// threads from an earlier product then take those cores from the workers, and
// a 2-device plan on 2 cores ran as slowly as its tasks one after another
// (mlp_256: 2.9 ms against 1.7 ms; docs/cost-model.md). OpenBLAS reads
// OPENBLAS_THREAD_TIMEOUT when it loads, before main(); where it exports its
// environment reader and pool shutdown (the pthreads build does), the pool is
// restarted with a timeout of 2^4 cycles, unless the user chose one.
extern "C" void openblas_read_env(void) __attribute__((weak));
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

void stopBlasSpinning() {
  static const bool done = [] {
    if (std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr || openblas_read_env == nullptr ||
        blas_thread_shutdown_ == nullptr) {
      return false;
    }
    ::setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    openblas_read_env();
    blas_thread_shutdown_(); // the next threaded product starts the pool anew
    return true;
  }();
  (void)done;
}

// Regions from 1 MiB go through the block cache, which keeps up to 2 GiB of
// released blocks for the next run; smaller ones too, in power-of-two sizes,
// up to 16 MiB of each size (bench_op_overhead: an aligned heap allocation
// and its release were a third of a small operation's fixed cost).
constexpr std::size_t kCachedFrom = std::size_t{1} << 20;
constexpr std::size_t kCacheKeeps = std::size_t{2} << 30;
constexpr std::size_t kCacheKeepsSmall = std::size_t{16} << 20;

} // namespace

CpuBackend::CpuBackend(int devices, CpuKernels kernels)
    : devices_(devices > 0 ? devices
                           : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
      kernels_(kernels),
      blocks_(std::make_shared<BlockCache>(kCachedFrom, kCacheKeeps, kCacheKeepsSmall)) {
  keepFreedMemory();
  stopBlasSpinning();
}

Buffer CpuBackend::allocate(DType dtype, const ZRange& region, int device) {
  const std::int64_t bytes = checkedMul(region.size(), static_cast<std::int64_t>(dtypeSize(dtype)));
  return Buffer(dtype, region, device,
                blocks_->take(static_cast<std::size_t>(bytes), true, device));
}

Buffer CpuBackend::allocateUninitialized(DType dtype, const ZRange& region, int device) {
  const std::int64_t bytes = checkedMul(region.size(), static_cast<std::int64_t>(dtypeSize(dtype)));
  return Buffer(dtype, region, device,
                blocks_->take(static_cast<std::size_t>(bytes), false, device));
}

void CpuBackend::copyRegion(const TensorView& src, const TensorView& dst, const ZRange& region) {
  cpu::copyViews(src, dst, region);
}

void CpuBackend::combine(Combine kind, const TensorView& dst, const TensorView& src,
                         const ZRange& region) {
  if (region.isEmpty()) {
    return;
  }
  if (src.dtype != dst.dtype || !src.region.contains(region) || !dst.region.contains(region)) {
    throw InternalError("combine of " + region.toString() + " from " + src.toString() + " into " +
                        dst.toString() + ": views do not match");
  }
  dispatch(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    combineTyped<T>(kind, dst, src, region);
  });
}

void CpuBackend::fillIdentity(Combine kind, const TensorView& dst) {
  if (dst.region.isEmpty()) {
    return;
  }
  dispatch(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = cpu::Num<T>::store(identityOf<T>(kind));
    const cpu::Walk d = cpu::walkRegion(dst, dst.region);
    cpu::forEachRun<1>(
        dst.region, {&d},
        [&](const std::array<std::int64_t, 1>& off, std::int64_t n,
            const std::array<std::int64_t, 1>& st) {
          T* y = d.ptr<T>() + off[0];
          for (std::int64_t j = 0; j < n; ++j) {
            y[j * st[0]] = value;
          }
        },
        true);
  });
}

// conv2d, conv2d_grouped and their _act fusions run in nhwc on oneDNN (conv.cpp); the elementwise
// kernels walk any strides and merge the dims that are dense in memory order (run_loop.hpp), the
// pools describe their views to oneDNN as they are, and global_avgpool sums a channels-last plane a
// row of channels at a time (pool.cpp), batchnorm runs the channels innermost there
// (batchnorm.cpp), and concat and split copy between any strides (shape.cpp). Each is tested on
// channels-last views against row-major ones (the `[layout]` unit tests).
Backend::Layout CpuBackend::channelsLast(std::string_view kernel, bool output,
                                         std::size_t port) const {
  if (kernels_ == CpuKernels::Bodies) {
    return Layout::No;
  }
  static constexpr std::string_view kUnary[] = {
      "relu", "clip",  "sigmoid",   "tanh", "gelu",         "elu",       "selu", "leaky_relu",
      "neg",  "abs",   "exp",       "sqrt", "softplus",     "erf",       "celu", "floor",
      "ceil", "round", "gelu_tanh", "silu", "hard_sigmoid", "hard_swish"};
  static constexpr std::string_view kBinary[] = {"add", "sub",     "mul",     "div",
                                                 "pow", "maximum", "minimum", "prelu"};
  if (kernel == "conv2d" || kernel == "conv2d_grouped") {
    return port == 0 ? Layout::Prefers : Layout::No;
  }
  // The fusions' residual: copied or added over any strides (conv_epilogue).
  if (kernel == "conv2d_act" || kernel == "conv2d_grouped_act") {
    return port == 0 ? Layout::Prefers : !output && port == 3 ? Layout::Takes : Layout::No;
  }
  // DenseNet's concatenations and the normalizations after them; split's results are its
  // output port's list, concat's inputs its input port's.
  if (kernel == "maxpool2d" || kernel == "avgpool2d" || kernel == "global_avgpool" ||
      kernel == "batchnorm" || kernel == "concat" || kernel == "split") {
    return port == 0 ? Layout::Takes : Layout::No;
  }
  if (std::find(std::begin(kUnary), std::end(kUnary), kernel) != std::end(kUnary)) {
    return port == 0 ? Layout::Takes : Layout::No;
  }
  if (std::find(std::begin(kBinary), std::end(kBinary), kernel) != std::end(kBinary)) {
    return output ? (port == 0 ? Layout::Takes : Layout::No)
                  : (port < 2 ? Layout::Takes : Layout::No);
  }
  return Layout::No;
}

bool CpuBackend::hasKernel(std::string_view kernel) const {
  return registry().find(kernel) != nullptr;
}

std::vector<std::string> CpuBackend::kernelNames() const {
  return registry().names();
}

namespace {
std::atomic<int> kernelThreadCount{1};
} // namespace

void CpuBackend::setBlasThreads(int threads) {
  openblas_set_num_threads(std::max(1, threads));
  kernelThreadCount.store(std::max(1, threads), std::memory_order_relaxed);
}

int CpuBackend::kernelThreads() {
  return kernelThreadCount.load(std::memory_order_relaxed);
}

double CpuBackend::productThreadsFromFlops() const {
  return cpu::kParallelFlops;
}

void CpuBackend::launchExtern(const KernelCall& call) {
  cpu::runExternKernel(call);
}

void CpuBackend::launchBody(const KernelCall& call) {
  cpu::runBodyKernel(call);
}

void CpuBackend::launch(const KernelCall& call) {
  registry().find(call.op.kernel)->run(call);
}

namespace {

// A native kernel without a prepare step: its function, looked up once.
class RunEach final : public PreparedKernel {
public:
  explicit RunEach(cpu::CpuKernel kernel) : kernel_(kernel) {}
  void run(const KernelCall& call) override { kernel_(call); }

private:
  cpu::CpuKernel kernel_;
};

} // namespace

std::unique_ptr<PreparedKernel> CpuBackend::prepareNative(const KernelCall& call) {
  const cpu::CpuKernelFns& fns = *registry().find(call.op.kernel);
  if (fns.prepare != nullptr) {
    if (std::unique_ptr<PreparedKernel> prepared = fns.prepare(call)) {
      return prepared;
    }
  }
  return std::make_unique<RunEach>(fns.run);
}

} // namespace tapestry::backend
