// The Backend interface (SPEC §9): what `run` and `bench` need from a machine
// to execute a plan — buffers on devices, region copies between them, kernels
// looked up by name and run on one shard's tensor views, combination of partial
// outputs, synchronization and a clock. The CPU backend (backends/cpu) and the
// CUDA backend (backends/cuda) implement it; the executor drives it.
//
// The shard contract every kernel follows (docs/metakernels-design.md):
// - A kernel call gets one shard: an index range of the operation (a sub-range
//   of application.index) and, per port and per tensor of the port, a view.
// - The *selection* of a tensor is the IPF projection of the shard's range
//   intersected with the tensor's bounds (selection() below). An input view
//   must cover its selection (it may cover more, e.g. the whole tensor); an
//   empty selection (a list-port element the shard does not touch) needs no
//   view. Parts of a projection outside the tensor (conv2d padding) read zeros.
// - The kernel overwrites exactly the output selection. For an output with a
//   combine monoid, what it writes is the shard's *partial*: the combination
//   over the shard's index points only. Partials of shards that split a
//   reduction dim are joined with combine(); an unsplit op writes final values.
// - Kernels read everything else (axis, eps, full extents such as mean's $n)
//   from the operation's application: resolved params and bindings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.hpp"
#include "core/graph/graph.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/layout.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::backend {

// The device of host memory (graph inputs as read from files, outputs to write).
inline constexpr int kHostDevice = -1;

using metakernel::Combine;

// ---------------------------------------------------------------- views

// Part of a tensor held in some buffer. The element at tensor coordinates p
// (p in `region`) sits at data + Σ_d (p_d - region.start_d) · strides_d
// elements. A view never owns memory; a region view of a larger buffer is a
// pointer offset, never a copy. A view with no data is *absent*.
struct TensorView {
  std::byte* data = nullptr; // the element at region.start()
  DType dtype = DType::Float32;
  ZRange region;                     // in tensor coordinates
  std::vector<std::int64_t> strides; // in elements, one per dim
  int device = kHostDevice;
  // The view reads a constant graph input (SPEC §5.1: the same data every
  // run), so a prepared kernel may keep a packed copy of it between runs.
  bool constant = false;

  bool present() const { return data != nullptr; }
  std::size_t rank() const { return region.rank(); }
  // The element offset (from data) of tensor point p, which must be in region.
  std::int64_t offsetOf(std::span<const std::int64_t> point) const;
  // The view of a sub-region (InternalError unless region contains it).
  TensorView sub(const ZRange& part) const;
  // Typed pointer to the element at p (p in region).
  template <class T> T* at(std::span<const std::int64_t> point) const {
    return reinterpret_cast<T*>(data) + offsetOf(point);
  }
  // "float32 zr[0:4, 2:6] strides [8, 1] on device 0"
  std::string toString() const;
};

// ---------------------------------------------------------------- buffers

// A dense block holding `region` of one tensor on one device: row-major, or
// in another dense layout given by strides (withStrides). Copies share the
// memory (a handle); the memory lives while any copy does.
class Buffer {
public:
  Buffer() = default;
  Buffer(DType dtype, ZRange region, int device, std::shared_ptr<std::byte> storage);
  // Zero-filled host memory (64-byte aligned) for `region`, tagged as on
  // `device` (the CPU backend's devices are worker threads sharing the host).
  static Buffer host(DType dtype, const ZRange& region, int device = kHostDevice);
  static Buffer host(DType dtype, const std::vector<std::int64_t>& shape) {
    return host(dtype, ZRange::fromShape(ZPoint(shape)));
  }
  // The same without the zero fill: the contents are unspecified.
  static Buffer hostUninitialized(DType dtype, const ZRange& region, int device = kHostDevice);

  DType dtype() const { return dtype_; }
  const ZRange& region() const { return region_; }
  int device() const { return device_; }
  std::byte* data() const { return storage_.get(); }
  std::int64_t elementCount() const { return region_.size(); }
  std::int64_t byteSize() const;

  // The same memory laid out by `strides` (elements, one per dim): a
  // permutation of a dense layout of the region, which the caller chooses
  // (channelsLastStrides); views then carry them. InternalError for strides
  // of another rank.
  Buffer withStrides(std::vector<std::int64_t> strides) const;
  bool rowMajor() const { return strides_.empty(); }

  TensorView view() const;
  TensorView view(const ZRange& part) const { return view().sub(part); }
  // `part` as a buffer on `device` sharing this buffer's memory (no copy),
  // when it is one contiguous row-major block of it (leading-dim rows); an
  // empty Buffer otherwise (always, for a buffer in another layout).
  Buffer share(const ZRange& part, int device) const {
    if (storage_ == nullptr || part.isEmpty() || part.rank() != region_.rank() ||
        !region_.contains(part) || !rowMajor()) {
      return {};
    }
    // Contiguous: unit extents, then one partial dim, then whole dims.
    std::size_t d = 0;
    while (d < part.rank() && part.extent(d) == 1) {
      ++d;
    }
    for (std::size_t e = d + 1; e < part.rank(); ++e) {
      if (part.extent(e) != region_.extent(e)) {
        return {};
      }
    }
    std::byte* at = storage_.get() + view().offsetOf(part.start().coords()) *
                                         static_cast<std::int64_t>(dtypeSize(dtype_));
    return Buffer(dtype_, part, device, std::shared_ptr<std::byte>(storage_, at));
  }
  // Host buffers: the elements in row-major order (T must match the dtype;
  // a buffer in another layout is an InternalError).
  template <class T> std::span<T> elements() const {
    requireRowMajor();
    return {reinterpret_cast<T*>(storage_.get()), static_cast<std::size_t>(elementCount())};
  }

private:
  void requireRowMajor() const;

  DType dtype_ = DType::Float32;
  ZRange region_;
  int device_ = kHostDevice;
  std::shared_ptr<std::byte> storage_;
  std::vector<std::int64_t> strides_; // empty: row-major
};

// ---------------------------------------------------------------- matrix operands

// How a rows x cols matrix operand with (row, column) element strides is read
// in place by a BLAS (cblas on the CPU, cuBLASLt on the GPU): row-major with
// leading dimension ld (transpose false) or column-major (transpose true);
// nullopt when neither works and the operand is gathered into a dense block.
struct MatrixLayout {
  bool transpose = false;
  std::int64_t ld = 0;
  friend bool operator==(const MatrixLayout&, const MatrixLayout&) = default;
};
std::optional<MatrixLayout> matrixLayout(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                         std::int64_t cs);

// dst[p] = src[p] for p in `region` between two host-accessible views of one
// dtype (what npy I/O and tests use; backends have their own copyRegion).
void copyHostRegion(const TensorView& src, const TensorView& dst, const ZRange& region);

// Tensors by name (graph inputs, outputs, or every tensor of an evaluation).
using TensorBuffers = std::map<std::string, Buffer, std::less<>>;

// ---------------------------------------------------------------- shards

// A tensor's selection for a shard: ipf(index) ∩ [0, shape). Empty for a
// list-port element the shard does not touch; ZRange::empty for an empty index.
ZRange selection(const IndexProjection& ipf, const ZRange& index,
                 const std::vector<std::int64_t>& shape);

// Every selection of one shard, parallel to op.inputs / op.outputs.
struct ShardSelections {
  std::vector<std::vector<ZRange>> inputs;
  std::vector<std::vector<ZRange>> outputs;
};
ShardSelections shardSelections(const graph::Operation& op, const ZRange& index);

using PortViews = std::vector<TensorView>; // one view per tensor of a port

// One kernel invocation: a shard of `op` and the views of its tensors.
struct KernelCall {
  const graph::Operation& op;
  const ZRange& index;                // the shard's index range (non-empty)
  std::span<const PortViews> inputs;  // parallel to op.inputs
  std::span<const PortViews> outputs; // parallel to op.outputs
  int device = 0;

  // Whether optional input port `port` (a `?` port: a bias, a residual) is
  // bound in this call: the port exists and its first view holds a tensor.
  bool hasInput(std::size_t port) const {
    return port < inputs.size() && !inputs[port].empty() && inputs[port][0].present();
  }
};

// A kernel call checked and made ready once, then run any number of times
// (the executor prepares every shard's calls when it loads a plan, and a
// bench repetition only runs them). Between runs only the views' data
// pointers change: the operation, the index range and the views' dtypes,
// regions, strides, devices and constant flags are those given to prepare.
// What a kernel can work out from those alone (loop bounds, walks, library
// primitives, scratch sizes) it works out once; run() does no validation and,
// for the hot kernels, no heap allocation. A constant input (view.constant)
// may be packed at the first run and reused while its data pointer stays.
class PreparedKernel {
public:
  PreparedKernel() = default;
  PreparedKernel(const PreparedKernel&) = delete;
  PreparedKernel& operator=(const PreparedKernel&) = delete;
  virtual ~PreparedKernel() = default;
  virtual void run(const KernelCall& call) = 0;
};

// ---------------------------------------------------------------- kernel arguments
// What every backend's kernels read from the operation's application. A
// missing or mistyped binding or param is an InternalError: the template
// defines them, so their absence is a bug.

// A binding ($ax, $n, ...) as an int (a bool reads as 0 or 1), or a list of ints.
std::int64_t intBinding(const graph::Operation& op, std::string_view name);
std::vector<std::int64_t> intsBinding(const graph::Operation& op, std::string_view name);
// A number param (eps, ...).
double floatParam(const graph::Operation& op, std::string_view name);
// where's operands are a bool condition and X, Y of the output's dtype: the
// first operand dtype that breaks this (for the backend's "does not support"
// error), or nothing.
std::optional<DType> whereOperandMismatch(const KernelCall& call);
// The part of `index` whose coordinate along `axis` lies in [lo, hi) (concat and
// split cut their index along the axis this way).
ZRange clipAxis(const ZRange& index, std::size_t axis, std::int64_t lo, std::int64_t hi);
// Calls fn(j, part) for each element j of a concat or split along binding $ax
// whose extent along the axis the list binding `sizesName` gives ($sizes,
// $sections): part is the piece of the shard's index inside element j, and
// elements the shard does not reach are skipped.
void forEachAxisPart(const KernelCall& call, std::string_view sizesName,
                     const std::function<void(std::size_t j, const ZRange& part)>& fn);

// Kernel implementations by kernel name (each backend keeps one of these).
template <class Fn> class KernelRegistry {
public:
  void add(std::string name, Fn fn) { kernels_[std::move(name)] = fn; }
  const Fn* find(std::string_view name) const {
    auto it = kernels_.find(name);
    return it == kernels_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : kernels_) {
      out.push_back(entry.first);
    }
    return out;
  }

private:
  std::map<std::string, Fn, std::less<>> kernels_;
};

// ---------------------------------------------------------------- the interface

class Backend {
public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  virtual std::string name() const = 0; // "cpu", "cuda"
  // Devices the backend can run shards on (CPU: hardware threads).
  virtual int deviceCount() const = 0;
  // How a kernel's 4-d tensor on one port (an input port, or an output port
  // when `output`) fares channels last (channelsLastStrides): Prefers, where
  // the kernel runs in that layout and would copy a row-major view into it
  // (the CPU backend's conv2d activations); Takes, where it runs as fast in
  // either; No where it has not been shown to. The executor keeps a tensor
  // channels last when every port that reads or writes it takes the layout
  // and the tensors linked to it through such kernels reach a Prefers port
  // (Executor, ExecuteOptions::channelsLast).
  enum class Layout : std::uint8_t { No, Takes, Prefers };
  virtual Layout channelsLast(std::string_view kernel, bool output, std::size_t port) const {
    (void)kernel;
    (void)output;
    (void)port;
    return Layout::No;
  }

  // A zero-filled row-major buffer for `region` of a tensor, on `device`
  // (kHostDevice: host memory). Memory is released with the last handle.
  virtual Buffer allocate(DType dtype, const ZRange& region, int device) = 0;
  // As allocate, for a region that is written whole before anything reads it
  // (a kernel's output tile, a transfer's arrival): its contents may be left
  // unspecified. The default zero-fills anyway.
  virtual Buffer allocateUninitialized(DType dtype, const ZRange& region, int device) {
    return allocate(dtype, region, device);
  }

  // dst[p] = src[p] for p in `region`, which both views must cover; one dtype.
  // Either view may be on the host or on any device (a transfer).
  virtual void copyRegion(const TensorView& src, const TensorView& dst, const ZRange& region) = 0;
  // The same over src.region ∩ dst.region (nothing when they do not meet).
  void copyOverlap(const TensorView& src, const TensorView& dst);

  // dst[p] = combine(dst[p], src[p]) for p in `region` (both views cover it).
  // max/min propagate NaN; integer sums and products wrap.
  virtual void combine(Combine kind, const TensorView& dst, const TensorView& src,
                       const ZRange& region) = 0;
  // Every element of dst = the monoid's identity (0, -inf, +inf, 1; integer
  // max/min use the type's lowest/highest value).
  virtual void fillIdentity(Combine kind, const TensorView& dst) = 0;

  // Runs the kernel named op.kernel on one shard (see the contract at the top).
  // A kernel the backend lacks runs from its template's body (launchBody); one
  // with no body either is Error (exit 1) "backend cpu has no kernel \"foo\"";
  // views that do not match the operation (port or tensor counts, dtypes,
  // ranks, a selection not covered) are an InternalError naming the port. An
  // empty index range does nothing. Thread-safe for calls writing disjoint
  // views (the executor runs one worker per device).
  void runKernel(const graph::Operation& op, const ZRange& index, std::span<const PortViews> inputs,
                 std::span<const PortViews> outputs, int device = 0);
  // The check and choice of runKernel, done once: what runs this call (with
  // fresh data pointers) any number of times. Null for an empty index range,
  // where there is nothing to run. Errors as runKernel's.
  std::unique_ptr<PreparedKernel> prepareKernel(const KernelCall& call);

  virtual bool hasKernel(std::string_view kernel) const = 0;
  // Runs a kernel from its template's body even where a native kernel exists
  // (the float64 reference of --check, and the tests that compare the two).
  virtual bool prefersBodies() const { return false; }
  virtual std::vector<std::string> kernelNames() const = 0; // sorted

  // A buffer for `region` of `source` on `device` that shares source's memory
  // instead of copying it, where the backend can offer one (the device reads
  // source's memory directly and the region is contiguous in it); an empty
  // Buffer otherwise, which is the default. The executor places resident
  // graph inputs, which nothing writes, this way.
  // Whether the executor reads graph inputs in host memory where they are
  // (the CPU backend: its devices share the host's memory), so that a
  // transfer of a graph input from the host copies nothing. calibrate then
  // measures no host link.
  virtual bool readsHostInPlace() const { return false; }

  // The FLOPs from which a matrix product on a device with several cores
  // runs on all of them, where the backend switches at a fixed size (the CPU
  // backend: below it a second thread's wake-up costs more than it saves); 0
  // where it has no such switch. calibrate measures the matmul family on both
  // sides of it, so that the table does not interpolate across the step.
  virtual double productThreadsFromFlops() const { return 0; }

  virtual Buffer shareRegion(const Buffer& source, const ZRange& region, int device) {
    (void)source;
    (void)region;
    (void)device;
    return {};
  }

  // Waits until every copy, kernel and combine issued so far has finished.
  virtual void synchronize() = 0;
  // Seconds on a monotonic host clock. The wall time of some work is the
  // difference of two readings, each taken right after synchronize().
  static double now();

protected:
  // Runs a checked call (kernel known, views match, index non-empty).
  virtual void launch(const KernelCall& call) = 0;
  // Prepares a checked call of a native kernel. The default runs launch()
  // on every run; a backend overrides it for kernels that do work once.
  virtual std::unique_ptr<PreparedKernel> prepareNative(const KernelCall& call);
  // Runs a checked call of a kernel the backend lacks from its template's body
  // (op.application.body, present). The default refuses (Error, exit 1).
  virtual void launchBody(const KernelCall& call);
  // Runs a checked call through the template's extern kernel
  // (op.application.externKernel, present). The default refuses (Error, exit 1).
  virtual void launchExtern(const KernelCall& call);
};

// Checks views against an operation as runKernel does (InternalError).
void checkKernelCall(const KernelCall& call);

} // namespace tapestry::backend
