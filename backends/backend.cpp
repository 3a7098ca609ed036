#include "backends/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/diag/error.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry::backend {

// ---------------------------------------------------------------- views

std::int64_t TensorView::offsetOf(std::span<const std::int64_t> point) const {
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < point.size(); ++d) {
    offset += (point[d] - region.start()[d]) * strides[d];
  }
  return offset;
}

TensorView TensorView::sub(const ZRange& part) const {
  if (part.rank() != region.rank() || !region.contains(part)) {
    throw InternalError("view " + toString() + " does not contain " + part.toString());
  }
  TensorView out = *this;
  out.region = part;
  if (data != nullptr && !part.isEmpty()) {
    out.data = data + offsetOf(part.start().coords()) * static_cast<std::int64_t>(dtypeSize(dtype));
  }
  return out;
}

std::string TensorView::toString() const {
  std::string out = std::string(dtypeName(dtype)) + " " + region.toString() + " strides " +
                    formatInts(strides) + " on ";
  out += device == kHostDevice ? std::string("the host") : "device " + std::to_string(device);
  if (!present()) {
    out += " (absent)";
  }
  return out;
}

// ---------------------------------------------------------------- buffers

Buffer::Buffer(DType dtype, ZRange region, int device, std::shared_ptr<std::byte> storage)
    : dtype_(dtype), region_(std::move(region)), device_(device), storage_(std::move(storage)) {}

std::int64_t Buffer::byteSize() const {
  return checkedMul(region_.size(), static_cast<std::int64_t>(dtypeSize(dtype_)));
}

namespace {

Buffer hostBuffer(DType dtype, const ZRange& region, int device, bool zeroed) {
  const std::int64_t bytes = checkedMul(region.size(), static_cast<std::int64_t>(dtypeSize(dtype)));
  constexpr std::size_t kAlign = 64;
  const std::size_t rounded = (static_cast<std::size_t>(bytes) + kAlign - 1) / kAlign * kAlign;
  auto* raw = static_cast<std::byte*>(
      ::operator new(std::max<std::size_t>(rounded, kAlign), std::align_val_t(kAlign)));
  if (zeroed) {
    std::fill_n(raw, rounded, std::byte{0});
  }
  std::shared_ptr<std::byte> storage(
      raw, [](std::byte* p) { ::operator delete(p, std::align_val_t(kAlign)); });
  return Buffer(dtype, region, device, std::move(storage));
}

} // namespace

Buffer Buffer::host(DType dtype, const ZRange& region, int device) {
  return hostBuffer(dtype, region, device, true);
}

Buffer Buffer::hostUninitialized(DType dtype, const ZRange& region, int device) {
  return hostBuffer(dtype, region, device, false);
}

Buffer Buffer::withStrides(std::vector<std::int64_t> strides) const {
  if (strides.size() != region_.rank()) {
    throw InternalError("buffer of " + region_.toString() + " given " +
                        std::to_string(strides.size()) + " strides");
  }
  Buffer out = *this;
  out.strides_ = std::move(strides);
  return out;
}

void Buffer::requireRowMajor() const {
  if (!rowMajor()) {
    throw InternalError("the elements of buffer " + region_.toString() + " strides " +
                        formatInts(strides_) + " read in row-major order");
  }
}

TensorView Buffer::view() const {
  TensorView v;
  v.data = storage_.get();
  v.dtype = dtype_;
  v.region = region_;
  if (strides_.empty()) {
    std::vector<std::int64_t> shape = region_.shape().vector();
    v.strides = rowMajorStrides(shape);
  } else {
    v.strides = strides_;
  }
  v.device = device_;
  return v;
}

std::optional<MatrixLayout> matrixLayout(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                         std::int64_t cs) {
  if (cols == 1 || cs == 1) {
    const std::int64_t ld = rows == 1 ? std::max<std::int64_t>(cols, 1) : rs;
    if (ld >= std::max<std::int64_t>(cols, 1)) {
      return MatrixLayout{false, ld};
    }
  }
  if (rows == 1 || rs == 1) {
    const std::int64_t ld = cols == 1 ? std::max<std::int64_t>(rows, 1) : cs;
    if (ld >= std::max<std::int64_t>(rows, 1)) {
      return MatrixLayout{true, ld};
    }
  }
  return std::nullopt;
}

void copyHostRegion(const TensorView& src, const TensorView& dst, const ZRange& region) {
  if (region.isEmpty()) {
    return;
  }
  if (src.dtype != dst.dtype || !src.region.contains(region) || !dst.region.contains(region)) {
    throw InternalError("host copy of " + region.toString() + " from " + src.toString() + " to " +
                        dst.toString() + ": views do not match");
  }
  const auto size = static_cast<std::int64_t>(dtypeSize(src.dtype));
  const std::size_t rank = region.rank();
  if (rank == 0) {
    std::memcpy(dst.data, src.data, static_cast<std::size_t>(size));
    return;
  }
  // Odometer over all dims but the last; the last is one run.
  const std::int64_t n = region.extent(rank - 1);
  const std::int64_t ss = src.strides[rank - 1];
  const std::int64_t ds = dst.strides[rank - 1];
  std::vector<std::int64_t> p = region.start().vector();
  while (true) {
    std::byte* from = src.data + src.offsetOf(p) * size;
    std::byte* to = dst.data + dst.offsetOf(p) * size;
    if (ss == 1 && ds == 1) {
      std::memmove(to, from, static_cast<std::size_t>(n * size));
    } else {
      for (std::int64_t j = 0; j < n; ++j) {
        std::memcpy(to + j * ds * size, from + j * ss * size, static_cast<std::size_t>(size));
      }
    }
    std::size_t d = rank - 1;
    while (true) {
      if (d == 0) {
        return;
      }
      --d;
      if (++p[d] < region.end()[d]) {
        break;
      }
      p[d] = region.start()[d];
    }
  }
}

// ---------------------------------------------------------------- shards

ZRange selection(const IndexProjection& ipf, const ZRange& index,
                 const std::vector<std::int64_t>& shape) {
  return shardSelection(ipf, index, shape);
}

ShardSelections shardSelections(const graph::Operation& op, const ZRange& index) {
  ShardSelections out;
  auto project = [&](const std::vector<metakernel::PortResult>& ports) {
    std::vector<std::vector<ZRange>> all;
    for (const metakernel::PortResult& port : ports) {
      std::vector<ZRange> regions;
      for (std::size_t t = 0; t < port.tensors.size(); ++t) {
        regions.push_back(selection(port.ipfs[t], index, port.tensors[t].shape));
      }
      all.push_back(std::move(regions));
    }
    return all;
  };
  out.inputs = project(op.application.inputs);
  out.outputs = project(op.application.outputs);
  return out;
}

namespace {

void checkPorts(const KernelCall& call, const std::vector<metakernel::PortResult>& ports,
                std::span<const PortViews> views, const char* side) {
  const std::string what = "operation " + call.op.name + " (" + call.op.kernel + ")";
  if (views.size() != ports.size()) {
    throw InternalError(what + ": " + std::to_string(views.size()) + " " + side +
                        " ports given, the kernel has " + std::to_string(ports.size()));
  }
  for (std::size_t p = 0; p < ports.size(); ++p) {
    const metakernel::PortResult& port = ports[p];
    if (views[p].size() != port.tensors.size()) {
      throw InternalError(what + ": " + side + " " + port.name + " has " +
                          std::to_string(port.tensors.size()) + " tensors but " +
                          std::to_string(views[p].size()) + " views were given");
    }
    for (std::size_t t = 0; t < port.tensors.size(); ++t) {
      const TensorView& view = views[p][t];
      const metakernel::TensorType& type = port.tensors[t];
      const std::string name = std::string(side) + " " + port.name +
                               (port.list ? "[" + std::to_string(t) + "]" : std::string());
      const ZRange needed = selection(port.ipfs[t], call.index, type.shape);
      if (needed.isEmpty()) {
        continue;
      }
      if (!view.present()) {
        throw InternalError(what + ": " + name + " needs " + needed.toString() +
                            " but no view was given");
      }
      if (dtypeName(view.dtype) != type.dtype) {
        throw InternalError(what + ": " + name + " is " + type.dtype + " but the view is " +
                            view.toString());
      }
      if (view.region.rank() != type.shape.size() || view.strides.size() != type.shape.size() ||
          !view.region.contains(needed)) {
        throw InternalError(what + ": " + name + " view " + view.toString() +
                            " does not cover the selection " + needed.toString() + " of shard " +
                            call.index.toString());
      }
    }
  }
}

} // namespace

void checkKernelCall(const KernelCall& call) {
  const metakernel::Application& app = call.op.application;
  if (call.index.rank() != app.index.rank() || !app.index.contains(call.index)) {
    throw InternalError("operation " + call.op.name + " (" + call.op.kernel + "): shard " +
                        call.index.toString() + " is not inside the index space " +
                        app.index.toString());
  }
  checkPorts(call, app.inputs, call.inputs, "input");
  checkPorts(call, app.outputs, call.outputs, "output");
}

// ---------------------------------------------------------------- Backend

void Backend::copyOverlap(const TensorView& src, const TensorView& dst) {
  if (src.region.rank() != dst.region.rank()) {
    throw InternalError("copy between views of different ranks: " + src.toString() + " and " +
                        dst.toString());
  }
  ZRange common = src.region.intersection(dst.region);
  if (!common.isEmpty()) {
    copyRegion(src, dst, common);
  }
}

namespace {

// A prepared call that runs one of the backend's launch functions each time.
class LaunchEach final : public PreparedKernel {
public:
  using Launch = void (Backend::*)(const KernelCall&);
  LaunchEach(Backend& backend, Launch launch) : backend_(backend), launch_(launch) {}
  void run(const KernelCall& call) override { (backend_.*launch_)(call); }

private:
  Backend& backend_;
  Launch launch_;
};

// A fuse(P, C) operation (core/metakernel/fuse.hpp) run as its parts: P's
// kernel writes the result, then C's kernel reads it there and overwrites it
// in place (C reads its port element by element, so each element is read
// before it is written), with C's other inputs the fused operation's.
class FusedRun final : public PreparedKernel {
public:
  FusedRun(Backend& backend, const KernelCall& call) {
    const graph::Operation& op = call.op;
    const metakernel::FusedParts& parts = *op.application.fused;
    producerOp_.name = op.name;
    producerOp_.kernel = parts.producerKernel;
    producerOp_.inputs.assign(
        op.inputs.begin(), op.inputs.begin() + static_cast<std::ptrdiff_t>(parts.producerInputs));
    producerOp_.outputs = op.outputs;
    producerOp_.application = *parts.producer;
    consumerOp_.name = op.name;
    consumerOp_.kernel = parts.consumerKernel;
    const std::vector<metakernel::PortResult>& ports = parts.consumer->inputs;
    for (std::size_t j = 0; j < parts.consumerInputs.size(); ++j) {
      const int at = parts.consumerInputs[j];
      graph::PortTensors port =
          at < 0 ? op.outputs.at(0) : op.inputs.at(static_cast<std::size_t>(at));
      port.port = ports.at(j).name;
      consumerOp_.inputs.push_back(std::move(port));
    }
    consumerOp_.outputs = op.outputs;
    consumerOp_.application = *parts.consumer;
    consumerIndex_ = shardSelections(op, call.index).outputs.at(0).at(0);
    views_.resize(parts.consumerInputs.size());
    producer_ = backend.prepareKernel(producerCall(call));
    consumer_ = backend.prepareKernel(consumerCall(call));
  }

  void run(const KernelCall& call) override {
    if (producer_) {
      producer_->run(producerCall(call));
    }
    if (consumer_) {
      consumer_->run(consumerCall(call));
    }
  }

private:
  KernelCall producerCall(const KernelCall& call) const {
    return KernelCall{producerOp_, call.index, call.inputs.first(producerOp_.inputs.size()),
                      call.outputs, call.device};
  }
  KernelCall consumerCall(const KernelCall& call) {
    const std::vector<int>& at = call.op.application.fused->consumerInputs;
    for (std::size_t j = 0; j < at.size(); ++j) {
      views_[j] = at[j] < 0 ? call.outputs[0] : call.inputs[static_cast<std::size_t>(at[j])];
    }
    return KernelCall{consumerOp_, consumerIndex_, views_, call.outputs, call.device};
  }

  graph::Operation producerOp_, consumerOp_;
  ZRange consumerIndex_;
  std::vector<PortViews> views_;
  std::unique_ptr<PreparedKernel> producer_, consumer_;
};

} // namespace

std::unique_ptr<PreparedKernel> Backend::prepareKernel(const KernelCall& call) {
  const graph::Operation& op = call.op;
  const metakernel::Application& app = op.application;
  const bool native = hasKernel(op.kernel) && !(app.body && prefersBodies());
  const bool external = !native && app.externKernel && !(app.body && prefersBodies());
  if (!native && !external && app.fused && !(app.body && prefersBodies())) {
    checkKernelCall(call);
    if (call.index.isEmpty()) {
      return nullptr;
    }
    return std::make_unique<FusedRun>(*this, call);
  }
  if (!native && !external && !app.body) {
    throw Error("backend " + name() + " has no kernel \"" + op.kernel + "\" (operation " + op.name +
                "), and its template has no body to run instead");
  }
  checkKernelCall(call);
  if (call.index.isEmpty()) {
    return nullptr;
  }
  if (native) {
    return prepareNative(call);
  }
  return std::make_unique<LaunchEach>(*this,
                                      external ? &Backend::launchExtern : &Backend::launchBody);
}

std::unique_ptr<PreparedKernel> Backend::prepareNative(const KernelCall& call) {
  (void)call;
  return std::make_unique<LaunchEach>(*this, &Backend::launch);
}

void Backend::runKernel(const graph::Operation& op, const ZRange& index,
                        std::span<const PortViews> inputs, std::span<const PortViews> outputs,
                        int device) {
  const KernelCall call{op, index, inputs, outputs, device};
  if (std::unique_ptr<PreparedKernel> prepared = prepareKernel(call)) {
    prepared->run(call);
  }
}

void Backend::launchBody(const KernelCall& call) {
  throw Error("backend " + name() + " has no kernel \"" + call.op.kernel + "\" (operation " +
              call.op.name + ") and cannot evaluate kernel bodies yet; run it with --backend cpu");
}

void Backend::launchExtern(const KernelCall& call) {
  throw Error("backend " + name() + " cannot run extern kernel " + call.op.kernel + " (operation " +
              call.op.name + "): extern kernels run on the CPU backend; use --backend cpu");
}

double Backend::now() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------- kernel arguments

namespace {

const expr::Binding& binding(const graph::Operation& op, std::string_view name) {
  const expr::Binding* b = op.application.bindings.find(name);
  if (b == nullptr) {
    throw InternalError("operation " + op.name + " (" + op.kernel + ") has no binding $" +
                        std::string(name) + " for its kernel");
  }
  return *b;
}

} // namespace

std::optional<DType> whereOperandMismatch(const KernelCall& call) {
  if (call.inputs[0][0].dtype != DType::Bool) {
    return call.inputs[0][0].dtype;
  }
  for (std::size_t p : {std::size_t{1}, std::size_t{2}}) {
    if (call.inputs[p][0].dtype != call.outputs[0][0].dtype) {
      return call.inputs[p][0].dtype;
    }
  }
  return std::nullopt;
}

std::int64_t intBinding(const graph::Operation& op, std::string_view name) {
  const expr::Binding& b = binding(op, name);
  if (b.value.isBool()) {
    return b.value.asBool() ? 1 : 0;
  }
  if (!b.value.isInt()) {
    throw InternalError("binding $" + std::string(name) + " of operation " + op.name +
                        " is not an int: " + b.value.toString());
  }
  return b.value.asInt();
}

std::vector<std::int64_t> intsBinding(const graph::Operation& op, std::string_view name) {
  const expr::Binding& b = binding(op, name);
  if (!b.value.isList()) {
    throw InternalError("binding $" + std::string(name) + " of operation " + op.name +
                        " is not a list: " + b.value.toString());
  }
  return b.value.toInts("$" + std::string(name));
}

double floatParam(const graph::Operation& op, std::string_view name) {
  const Json& params = op.application.params;
  auto it = params.find(std::string(name));
  if (it == params.end() || !it->is_number()) {
    throw InternalError("operation " + op.name + " (" + op.kernel + ") has no number param \"" +
                        std::string(name) + "\"");
  }
  return it->get<double>();
}

ZRange clipAxis(const ZRange& index, std::size_t axis, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> start = index.start().vector();
  std::vector<std::int64_t> end = index.end().vector();
  start[axis] = std::max(start[axis], lo);
  end[axis] = std::min(end[axis], hi);
  if (start[axis] >= end[axis]) {
    return ZRange::empty(index.rank());
  }
  return ZRange(ZPoint(std::move(start)), ZPoint(std::move(end)));
}

void forEachAxisPart(const KernelCall& call, std::string_view sizesName,
                     const std::function<void(std::size_t j, const ZRange& part)>& fn) {
  const auto ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
  const std::vector<std::int64_t> sizes = intsBinding(call.op, sizesName);
  std::int64_t offset = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    const ZRange part = clipAxis(call.index, ax, offset, offset + sizes[j]);
    offset += sizes[j];
    if (!part.isEmpty()) {
      fn(j, part);
    }
  }
}

} // namespace tapestry::backend
