// embedding: result[b..., d] = table[indices[b...], d]. The index space is
// [b..., D]; the table view holds every row (which rows are read depends on the
// data) and the shard's column range. An index outside [0, V) is an input
// error naming the operation, the index's position and its value.
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
    for (std::int64_t j = 0; j < D; ++j) {
      dst[j * os] = src[j * ts];
    }
  });
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
}

} // namespace tapestry::backend::cpu
