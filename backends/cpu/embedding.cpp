// embedding: result[b..., d] = table[indices[b...], d]. The index space is
// [b..., D]; the table view holds every row (which rows are read depends on the
// data) and the shard's column range. An index outside [0, V) is an input
// error naming the operation, the index's position and its value.
// gather: result[pre..., b..., post...] = data[pre..., indices[b...], post...];
// the index space is the result's shape and the data view holds the whole
// axis. Negative indices count from the end of the axis (ONNX).
#include <algorithm>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

template <class T, class I> void embeddingTyped(const KernelCall& call) {
  const TensorView& table = call.inputs[0][0];
  const TensorView& indices = call.inputs[1][0];
  const TensorView& out = call.outputs[0][0];
  const std::int64_t V = intBinding(call.op, "V");
  const ZRange& idx = call.index;
  const std::size_t nb = idx.rank() - 1;
  const std::int64_t d0 = idx.start()[nb];
  const std::int64_t D = idx.extent(nb);
  const std::int64_t ts = table.strides[1];
  const std::int64_t os = out.strides[nb];
  std::vector<std::int64_t> start(idx.start().begin(), idx.start().begin() + nb);
  std::vector<std::int64_t> end(idx.end().begin(), idx.end().begin() + nb);
  std::vector<std::int64_t> at(nb + 1);
  ZRange(ZPoint(start), ZPoint(end)).forEachPoint([&](const ZPoint& b) {
    const std::int64_t row = static_cast<std::int64_t>(*indices.at<I>(b.coords()));
    if (row < 0 || row >= V) {
      throw Error("operation " + call.op.name + " (embedding): indices" + b.toString() + " is " +
                  std::to_string(row) + ", outside the table's " + std::to_string(V) + " rows");
    }
    const std::int64_t cell[2] = {row, d0};
    const T* src = table.at<T>(cell);
    std::copy(b.begin(), b.end(), at.begin());
    at[nb] = d0;
    T* dst = out.at<T>(at);
    if (os == 1 && ts == 1) { // rows in both: one copy (the loop ran at 8 GB/s)
      std::copy(src, src + D, dst);
      return;
    }
    for (std::int64_t j = 0; j < D; ++j) {
      dst[j * os] = src[j * ts];
    }
  });
}

template <class T, class I> void gatherTyped(const KernelCall& call) {
  const TensorView& data = call.inputs[0][0];
  const TensorView& indices = call.inputs[1][0];
  const TensorView& out = call.outputs[0][0];
  const auto ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
  const auto nb = static_cast<std::size_t>(intBinding(call.op, "nb"));
  const std::int64_t V = intBinding(call.op, "V");
  const ZRange& idx = call.index;
  if (idx.isEmpty()) {
    return;
  }
  // Outer points: the pre and batch dims; the post dims of one outer point are
  // one box in the result and in data, copied in runs (forEachRun).
  const std::size_t outer = ax + nb;
  std::vector<std::int64_t> start(idx.start().begin(), idx.start().begin() + outer);
  std::vector<std::int64_t> end(idx.end().begin(), idx.end().begin() + outer);
  const std::vector<std::int64_t> extent = idx.shape().vector();
  const std::vector<std::int64_t> postExtent(extent.begin() + static_cast<std::ptrdiff_t>(outer),
                                             extent.end());
  const Walk toOut{nullptr, {out.strides.begin() + outer, out.strides.end()}};
  const Walk fromData{nullptr, {data.strides.begin() + ax + 1, data.strides.end()}};
  std::vector<std::int64_t> at = idx.start().vector();
  std::vector<std::int64_t> from(data.rank());
  std::copy(at.begin() + outer, at.end(), from.begin() + ax + 1);
  ZRange(ZPoint(start), ZPoint(end)).forEachPoint([&](const ZPoint& o) {
    const std::span<const std::int64_t> b = o.coords().subspan(ax, nb);
    std::int64_t j = static_cast<std::int64_t>(*indices.at<I>(b));
    const std::int64_t given = j;
    j = j < 0 ? j + V : j;
    if (j < 0 || j >= V) {
      throw Error("operation " + call.op.name + " (gather): indices" + ZPoint(b).toString() +
                  " is " + std::to_string(given) + ", outside [-" + std::to_string(V) + ", " +
                  std::to_string(V) + ") (data's axis " + std::to_string(ax) + " has " +
                  std::to_string(V) + " elements)");
    }
    std::copy(o.begin(), o.end(), at.begin());
    std::copy(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(ax), from.begin());
    from[ax] = j;
    T* dst = out.at<T>(at);
    const T* src = data.at<T>(from);
    forEachRun<2>(std::span<const std::int64_t>(postExtent), {&toOut, &fromData},
                  [&](const std::array<std::int64_t, 2>& off, std::int64_t len,
                      const std::array<std::int64_t, 2>& st) {
                    for (std::int64_t i = 0; i < len; ++i) {
                      dst[off[0] + i * st[0]] = src[off[1] + i * st[1]];
                    }
                  });
  });
}

template <template <class, class> class Kernel>
void dispatchIndexed(const KernelCall& call, DType itype) {
  dispatch(call.outputs[0][0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (itype == DType::Int32) {
      Kernel<T, std::int32_t>::run(call);
    } else if (itype == DType::Int64) {
      Kernel<T, std::int64_t>::run(call);
    } else {
      unsupportedDType(call, itype);
    }
  });
}

template <class T, class I> struct Gather {
  static void run(const KernelCall& call) { gatherTyped<T, I>(call); }
};

void gatherKernel(const KernelCall& call) {
  dispatchIndexed<Gather>(call, call.inputs[1][0].dtype);
}

void embeddingKernel(const KernelCall& call) {
  const DType itype = call.inputs[1][0].dtype;
  dispatch(call.outputs[0][0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (itype == DType::Int32) {
      embeddingTyped<T, std::int32_t>(call);
    } else if (itype == DType::Int64) {
      embeddingTyped<T, std::int64_t>(call);
    } else {
      unsupportedDType(call, itype);
    }
  });
}

} // namespace

void registerEmbeddingKernels(CpuRegistry& registry) {
  registry.add("embedding", &embeddingKernel);
  registry.add("gather", &gatherKernel);
}

} // namespace tapestry::backend::cpu
