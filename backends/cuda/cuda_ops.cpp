// The CUDA backend's kernels by name: each reads the operation's application
// (bindings, params) as its CPU counterpart in backends/cpu/ does, turns views
// into walks or matrix layouts, and enqueues native kernels (kernels.cu) or
// cuBLASLt products (cublaslt.cpp) on the device's stream.
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/cuda_body.hpp"
#include "backends/cuda/cuda_ops_internal.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "backends/products.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda {

using backend::DType;
using backend::floatParam;
using backend::forEachAxisPart;
using backend::intBinding;
using backend::KernelCall;
using backend::TensorView;

// ---------------------------------------------------------------- shared helpers

void checkCuda(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) {
    throw Error("backend cuda: " + what + ": " + cudaGetErrorString(status) + " (" +
                cudaGetErrorName(status) + ")");
  }
}

Scratch::Scratch(std::size_t bytes, int gpu, cudaStream_t stream) : gpu_(gpu), stream_(stream) {
  void* p = nullptr;
  checkCuda(cudaSetDevice(gpu), "selecting GPU " + std::to_string(gpu));
  checkCuda(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 256), stream),
            "allocating " + std::to_string(bytes) + " bytes of scratch memory on GPU " +
                std::to_string(gpu));
  data_ = static_cast<std::byte*>(p);
}

Scratch::~Scratch() {
  if (data_ != nullptr) {
    cudaSetDevice(gpu_);
    cudaFreeAsync(data_, stream_); // a failure here has nowhere to go; the pool reclaims at exit
  }
}

Scratch::Scratch(Scratch&& other) noexcept
    : data_(other.data_), gpu_(other.gpu_), stream_(other.stream_) {
  other.data_ = nullptr;
}

Scratch& Scratch::operator=(Scratch&& other) noexcept {
  if (this != &other) {
    Scratch old(std::move(*this));
    data_ = other.data_;
    gpu_ = other.gpu_;
    stream_ = other.stream_;
    other.data_ = nullptr;
  }
  return *this;
}

backend::TensorView denseView(std::byte* data, DType dtype, const ZRange& region, int device) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.region = region;
  v.strides = rowMajorStrides(region.shape().vector());
  v.device = device;
  return v;
}

void copyOnDevice(const TensorView& src, const TensorView& dst, const ZRange& region,
                  cudaStream_t stream) {
  if (region.isEmpty()) {
    return;
  }
  const ViewWalk s = walkRegion(src, region);
  const ViewWalk d = walkRegion(dst, region);
  const std::vector<std::int64_t> extent = region.shape().vector();
  const std::vector<std::int64_t> strides[2] = {s.stride, d.stride};
  const DeviceWalk w = makeWalk(extent, strides);
  const std::size_t size = backend::dtypeSize(src.dtype);
  if (w.rank == 0 || (w.rank == 1 && w.stride[0][0] == 1 && w.stride[1][0] == 1)) {
    checkCuda(cudaMemcpyAsync(d.base, s.base, static_cast<std::size_t>(w.count) * size,
                              cudaMemcpyDeviceToDevice, stream),
              "copying " + region.toString() + " on the device");
    return;
  }
  checkCuda(launchCopy(static_cast<int>(size), s.base, d.base, w, stream),
            "copying " + region.toString() + " on the device");
}

// Helpers the kernel files share (cuda_ops_internal.hpp).
namespace ops {

[[noreturn]] void unsupportedDType(const KernelCall& call, DType dtype) {
  throw Error("backend cuda: kernel " + call.op.kernel + " does not support " +
              backend::dtypeName(dtype) + " (operation " + call.op.name + ")");
}

bool isInt(DType dtype) {
  return dtype == DType::Int32 || dtype == DType::Int64;
}

DType floatOutput(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  if (isInt(dtype)) {
    unsupportedDType(call, dtype);
  }
  return dtype;
}

// The address of tensor point p in a view (p need not be in the region when
// nothing is read there, e.g. a column of an empty reduction).
std::byte* pointAt(const TensorView& view, std::span<const std::int64_t> point) {
  return view.data +
         view.offsetOf(point) * static_cast<std::int64_t>(backend::dtypeSize(view.dtype));
}

DeviceWalk walkOf(const ZRange& index, std::initializer_list<const ViewWalk*> walks) {
  const std::vector<std::int64_t> extent = index.shape().vector();
  std::vector<std::vector<std::int64_t>> strides;
  for (const ViewWalk* w : walks) {
    strides.push_back(w->stride);
  }
  return makeWalk(extent, strides);
}

std::string what(const KernelCall& call) {
  return "kernel " + call.op.kernel + " (operation " + call.op.name + ")";
}

} // namespace ops

namespace {

using ops::floatOutput;
using ops::isInt;
using ops::pointAt;
using ops::unsupportedDType;
using ops::walkOf;
using ops::what;

const IndexProjection& inputIpf(const KernelCall& call, std::size_t p, std::size_t t = 0) {
  return call.op.application.inputs[p].ipfs[t];
}
const IndexProjection& outputIpf(const KernelCall& call, std::size_t p, std::size_t t = 0) {
  return call.op.application.outputs[p].ipfs[t];
}

// ---------------------------------------------------------------- elementwise

template <UnaryOp op, bool ints> void unaryKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = call.outputs[0][0].dtype;
  if (!ints && isInt(dtype)) {
    unsupportedDType(call, dtype);
  }
  // The float params of clip and the *_scalar kernels (UnaryOp says which).
  double p0 = 0;
  double p1 = 0;
  if constexpr (op == UnaryOp::Clip) {
    p0 = floatParam(call.op, "min");
    p1 = floatParam(call.op, "max");
  } else if constexpr (op >= UnaryOp::AddScalar) {
    p0 = floatParam(call.op, "value");
  }
  const ViewWalk a = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const ViewWalk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  checkCuda(launchUnary(op, elementType(dtype), a.base, r.base, walkOf(call.index, {&a, &r}),
                        c.stream, p0, p1),
            what(call));
}

template <BinaryOp op, bool ints>
void binaryKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = call.outputs[0][0].dtype;
  if (call.inputs[0][0].dtype != dtype || call.inputs[1][0].dtype != dtype) {
    unsupportedDType(call, call.inputs[0][0].dtype == dtype ? call.inputs[1][0].dtype
                                                            : call.inputs[0][0].dtype);
  }
  if (!ints && isInt(dtype)) {
    unsupportedDType(call, dtype);
  }
  const ViewWalk a = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const ViewWalk b = walkThrough(call.inputs[1][0], inputIpf(call, 1), call.index);
  const ViewWalk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  checkCuda(launchBinary(op, elementType(dtype), a.base, b.base, r.base,
                         walkOf(call.index, {&a, &b, &r}), c.stream),
            what(call));
}

// where: the condition (bool) picks X or Y, copied as stored (any dtype).
void whereKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = call.outputs[0][0].dtype;
  if (const std::optional<DType> bad = backend::whereOperandMismatch(call)) {
    unsupportedDType(call, *bad);
  }
  const ViewWalk cond = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const ViewWalk x = walkThrough(call.inputs[1][0], inputIpf(call, 1), call.index);
  const ViewWalk y = walkThrough(call.inputs[2][0], inputIpf(call, 2), call.index);
  const ViewWalk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  checkCuda(launchWhere(static_cast<int>(backend::dtypeSize(dtype)), cond.base, x.base, y.base,
                        r.base, walkOf(call.index, {&cond, &x, &y, &r}), c.stream),
            what(call));
}

// ---------------------------------------------------------------- pooling

// maxpool2d, avgpool2d: index [N, C, OH, OW], a whole window per point.
template <bool max> void pool2dKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = floatOutput(call);
  if (call.index.isEmpty()) {
    return;
  }
  const graph::Operation& op = call.op;
  PoolParams p;
  p.max = max;
  p.sh = intBinding(op, "sh");
  p.sw = intBinding(op, "sw");
  p.ph = intBinding(op, "ph");
  p.pw = intBinding(op, "pw");
  p.dh = max ? intBinding(op, "dh") : 1;
  p.dw = max ? intBinding(op, "dw") : 1;
  p.KH = intBinding(op, "KH");
  p.KW = intBinding(op, "KW");
  p.H = intBinding(op, "H");
  p.W = intBinding(op, "W");
  p.divisor = !max && intBinding(op, "count_include_pad") != 0 ? p.KH * p.KW : 0;
  for (std::size_t d = 0; d < 4; ++d) {
    p.begin[d] = call.index.start()[d];
    p.end[d] = call.index.end()[d];
  }
  checkCuda(launchPool2d(elementType(dtype), convView(call.inputs[0][0]),
                         convView(call.outputs[0][0]), p, c.stream),
            what(call));
}

// global_avgpool: index [N, C, H, W]; the shard's (h, w) box is one window
// whose sum is divided by the full H*W (its partial of the mean).
void globalAvgpoolKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = floatOutput(call);
  if (call.index.isEmpty()) {
    return;
  }
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  PoolParams p;
  p.max = false;
  p.sh = 0;
  p.sw = 0;
  p.ph = -s[2];
  p.pw = -s[3];
  p.KH = e[2] - s[2];
  p.KW = e[3] - s[3];
  p.H = intBinding(call.op, "H");
  p.W = intBinding(call.op, "W");
  p.divisor = intBinding(call.op, "HW");
  for (std::size_t d = 0; d < 2; ++d) {
    p.begin[d] = s[d];
    p.end[d] = e[d];
  }
  p.end[2] = p.end[3] = 1;
  checkCuda(launchPool2d(elementType(dtype), convView(call.inputs[0][0]),
                         convView(call.outputs[0][0]), p, c.stream),
            what(call));
}

// ---------------------------------------------------------------- reductions, normalization

template <ReduceOp kind> void reduceKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = call.outputs[0][0].dtype;
  if (kind == ReduceOp::Mean && isInt(dtype)) {
    unsupportedDType(call, dtype);
  }
  const auto ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
  const std::int64_t n = intBinding(call.op, "n");
  const ViewWalk in = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const ViewWalk out = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  std::vector<std::int64_t> extent = call.index.shape().vector();
  const std::int64_t length = extent[ax];
  extent[ax] = 1; // one walk point per output element
  const std::vector<std::int64_t> strides[2] = {in.stride, out.stride};
  checkCuda(launchReduce(kind, elementType(dtype), in.base, out.base, makeWalk(extent, strides),
                         length, in.stride[ax], n, c.stream),
            what(call));
}

void softmaxKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = floatOutput(call);
  const auto ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
  const std::int64_t n = intBinding(call.op, "n");
  const TensorView& inView = call.inputs[0][0];
  const TensorView& outView = call.outputs[0][0];
  const ViewWalk in = walkThrough(inView, inputIpf(call, 0), call.index);
  const ViewWalk out = walkThrough(outView, outputIpf(call, 0), call.index);
  checkCuda(launchSoftmax(elementType(dtype), in.base, out.base, walkOf(call.index, {&in, &out}), n,
                          inView.strides[ax], outView.strides[ax], c.stream),
            what(call));
}

// layernorm, and rmsnorm (no beta: launchLayernorm's null beta).
void layernormKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = floatOutput(call);
  const std::int64_t d = intBinding(call.op, "d");
  const double eps = floatParam(call.op, "eps");
  const TensorView& inView = call.inputs[0][0];
  const TensorView& outView = call.outputs[0][0];
  const TensorView& gamma = call.inputs[1][0];
  const bool centred = call.inputs.size() > 2;
  const std::size_t last = inView.strides.size() - 1;
  const ViewWalk in = walkThrough(inView, inputIpf(call, 0), call.index);
  const ViewWalk out = walkThrough(outView, outputIpf(call, 0), call.index);
  const std::int64_t zero = 0;
  checkCuda(launchLayernorm(elementType(dtype), in.base, out.base,
                            pointAt(gamma, std::span(&zero, 1)), gamma.strides[0],
                            centred ? pointAt(call.inputs[2][0], std::span(&zero, 1)) : nullptr,
                            centred ? call.inputs[2][0].strides[0] : 0,
                            walkOf(call.index, {&in, &out}), d, inView.strides[last],
                            outView.strides[last], eps, c.stream),
            what(call));
}

// ---------------------------------------------------------------- data movement

void copyPoints(const ZRange& index, const ViewWalk& src, const ViewWalk& dst, DType dtype,
                const KernelContext& c, const std::string& context) {
  checkCuda(launchCopy(static_cast<int>(backend::dtypeSize(dtype)), src.base, dst.base,
                       walkOf(index, {&src, &dst}), c.stream),
            context);
}

void transposeKernel(const KernelCall& call, const KernelContext& c) {
  const TensorView& in = call.inputs[0][0];
  copyPoints(call.index, walkThrough(in, inputIpf(call, 0), call.index),
             walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index), in.dtype, c,
             what(call));
}

bool unitShape(const IndexProjection& ipf) {
  return std::all_of(ipf.shape().begin(), ipf.shape().end(), [](std::int64_t e) { return e == 1; });
}

void reshapeKernel(const KernelCall& call, const KernelContext& c) {
  if (unitShape(inputIpf(call, 0)) && unitShape(outputIpf(call, 0))) {
    transposeKernel(call, c); // a point is one element of each
    return;
  }
  // Both views hold whole tensors: copy through a dense row-major block, which
  // is the same elements in both shapes.
  const TensorView& in = call.inputs[0][0];
  const TensorView& out = call.outputs[0][0];
  const ZRange inBounds = ZRange::fromShape(ZPoint(call.op.application.inputs[0].tensors[0].shape));
  const ZRange outBounds =
      ZRange::fromShape(ZPoint(call.op.application.outputs[0].tensors[0].shape));
  Scratch dense(static_cast<std::size_t>(inBounds.size()) * backend::dtypeSize(in.dtype), c.gpu,
                c.stream);
  copyOnDevice(in, denseView(dense.get(), in.dtype, inBounds, in.device), inBounds, c.stream);
  copyOnDevice(denseView(dense.get(), in.dtype, outBounds, in.device), out, outBounds, c.stream);
}

void castKernel(const KernelCall& call, const KernelContext& c) {
  const ViewWalk a = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const ViewWalk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  checkCuda(launchCast(elementType(call.inputs[0][0].dtype), elementType(call.outputs[0][0].dtype),
                       a.base, r.base, walkOf(call.index, {&a, &r}), c.stream),
            what(call));
}

void concatKernel(const KernelCall& call, const KernelContext& c) {
  const TensorView& out = call.outputs[0][0];
  forEachAxisPart(call, "sizes", [&](std::size_t j, const ZRange& part) {
    copyPoints(part, walkThrough(call.inputs[0][j], inputIpf(call, 0, j), part),
               walkThrough(out, outputIpf(call, 0), part), out.dtype, c, what(call));
  });
}

void splitKernel(const KernelCall& call, const KernelContext& c) {
  const TensorView& in = call.inputs[0][0];
  forEachAxisPart(call, "sections", [&](std::size_t j, const ZRange& part) {
    copyPoints(part, walkThrough(in, inputIpf(call, 0), part),
               walkThrough(call.outputs[0][j], outputIpf(call, 0, j), part), in.dtype, c,
               what(call));
  });
}

// batchnorm: index = the input's shape [N, C, spatial...]; operand 2 of the
// walk counts channels from the shard's first.
void batchnormKernel(const KernelCall& call, const KernelContext& c) {
  const DType dtype = floatOutput(call);
  if (call.index.isEmpty()) {
    return;
  }
  const ViewWalk x = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const ViewWalk y = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  ViewWalk channel;
  channel.stride.assign(call.index.rank(), 0);
  channel.stride[1] = 1;
  const std::int64_t c0 = call.index.start()[1];
  const void* vectors[4];
  std::int64_t strides[4];
  for (std::size_t k = 0; k < 4; ++k) { // scale, bias, mean, var
    vectors[k] = pointAt(call.inputs[k + 1][0], std::span(&c0, 1));
    strides[k] = call.inputs[k + 1][0].strides[0];
  }
  checkCuda(launchBatchnorm(elementType(dtype), x.base, y.base,
                            walkOf(call.index, {&x, &y, &channel}), vectors, strides,
                            floatParam(call.op, "epsilon"), c.stream),
            what(call));
}

} // namespace

const backend::KernelRegistry<CudaKernel>& cudaKernels() {
  static const backend::KernelRegistry<CudaKernel> kernels = [] {
    backend::KernelRegistry<CudaKernel> r;
    r.add("relu", &unaryKernel<UnaryOp::Relu, true>);
    r.add("gelu", &unaryKernel<UnaryOp::Gelu, false>);
    r.add("tanh", &unaryKernel<UnaryOp::Tanh, false>);
    r.add("gelu_tanh", &unaryKernel<UnaryOp::GeluTanh, false>);
    r.add("exp", &unaryKernel<UnaryOp::Exp, false>);
    r.add("sigmoid", &unaryKernel<UnaryOp::Sigmoid, false>);
    r.add("silu", &unaryKernel<UnaryOp::Silu, false>);
    r.add("neg", &unaryKernel<UnaryOp::Neg, true>);
    r.add("add", &binaryKernel<BinaryOp::Add, true>);
    r.add("sub", &binaryKernel<BinaryOp::Sub, true>);
    r.add("mul", &binaryKernel<BinaryOp::Mul, true>);
    r.add("div", &binaryKernel<BinaryOp::Div, false>);
    r.add("erf", &unaryKernel<UnaryOp::Erf, false>);
    r.add("sqrt", &unaryKernel<UnaryOp::Sqrt, false>);
    r.add("reciprocal", &unaryKernel<UnaryOp::Reciprocal, false>);
    r.add("log", &unaryKernel<UnaryOp::Log, false>);
    r.add("abs", &unaryKernel<UnaryOp::Abs, true>);
    r.add("pow", &binaryKernel<BinaryOp::Pow, false>);
    r.add("where", &whereKernel);
    r.add("clip", &unaryKernel<UnaryOp::Clip, false>);
    r.add("add_scalar", &unaryKernel<UnaryOp::AddScalar, false>);
    r.add("mul_scalar", &unaryKernel<UnaryOp::MulScalar, false>);
    r.add("rsub_scalar", &unaryKernel<UnaryOp::RsubScalar, false>);
    r.add("rdiv_scalar", &unaryKernel<UnaryOp::RdivScalar, false>);
    r.add("pow_scalar", &unaryKernel<UnaryOp::PowScalar, false>);
    r.add("div_scalar", &unaryKernel<UnaryOp::DivScalar, false>);
    r.add("matmul", &ops::productKernel);
    r.add("linear", &ops::productKernel);
    r.add("linear_act", &ops::linearActKernel);
    r.add("conv2d", &ops::conv2dKernel);
    r.add("conv2d_act", &ops::conv2dKernel);
    r.add("conv2d_grouped", &ops::conv2dKernel);
    r.add("conv2d_grouped_act", &ops::conv2dKernel);
    r.add("maxpool2d", &pool2dKernel<true>);
    r.add("avgpool2d", &pool2dKernel<false>);
    r.add("global_avgpool", &globalAvgpoolKernel);
    r.add("sum", &reduceKernel<ReduceOp::Sum>);
    r.add("mean", &reduceKernel<ReduceOp::Mean>);
    r.add("max", &reduceKernel<ReduceOp::Max>);
    r.add("min", &reduceKernel<ReduceOp::Min>);
    r.add("prod", &reduceKernel<ReduceOp::Prod>);
    r.add("softmax", &softmaxKernel);
    r.add("layernorm", &layernormKernel);
    r.add("rmsnorm", &layernormKernel);
    r.add("batchnorm", &batchnormKernel);
    r.add("transpose", &transposeKernel);
    r.add("slice", &transposeKernel); // a copy through the IPFs, as transpose
    r.add("reshape", &reshapeKernel);
    r.add("cast", &castKernel);
    r.add("concat", &concatKernel);
    r.add("split", &splitKernel);
    r.add("embedding", &ops::embeddingKernel);
    r.add("gather", &ops::gatherKernel);
    // issue 34's elementwise kernels: staged from their bodies (cuda_body.hpp),
    // every step a device kernel (UnaryOp and BinaryOp's body-only ops).
    for (const char* k : {"maximum",
                          "minimum",
                          "mod",
                          "fmod",
                          "equal",
                          "less",
                          "less_equal",
                          "greater",
                          "greater_equal",
                          "logical_and",
                          "logical_or",
                          "logical_xor",
                          "logical_not",
                          "isnan",
                          "isinf",
                          "sign",
                          "floor",
                          "ceil",
                          "round",
                          "sin",
                          "cos",
                          "tan",
                          "asin",
                          "acos",
                          "atan",
                          "sinh",
                          "cosh",
                          "asinh",
                          "acosh",
                          "atanh",
                          "softplus",
                          "softsign",
                          "leaky_relu",
                          "elu",
                          "selu",
                          "celu",
                          "thresholded_relu",
                          "hard_sigmoid",
                          "hard_swish",
                          "prelu"}) {
      r.add(k, &runBodyOnDevice);
    }
    // The fused attention kernels (metakernels/attention.yaml): from their
    // bodies too, products on cuBLAS, until a native kernel is written.
    r.add("attention", &runBodyOnDevice);
    r.add("attention_masked", &runBodyOnDevice);
    r.add("attention_heads", &runBodyOnDevice);
    r.add("attention_heads_masked", &runBodyOnDevice);
    r.add("attention_heads_qkv", &runBodyOnDevice);
    r.add("attention_heads_qkv_masked", &runBodyOnDevice);
    r.add("attention_heads_seq_first", &runBodyOnDevice);
    r.add("attention_heads_qkv_seq_first", &runBodyOnDevice);
    // The rotary embedding: slices, a negation, a concat, products and a sum
    // of its body on the device.
    r.add("rope", &runBodyOnDevice);
    return r;
  }();
  return kernels;
}

} // namespace tapestry::cuda
