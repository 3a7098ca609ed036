// The CUDA kernels that read by index: embedding (rows of a table) and gather
// (along any axis); an index out of range is an input error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops_internal.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda::ops {

using backend::DType;
using backend::intBinding;
using backend::KernelCall;
using backend::TensorView;

namespace {

// Runs `launch(slot)`, an indexed read that records in *slot the smallest walk
// point whose index is out of range, and returns that point of `idx` (row-major
// over the index box), or nothing when every index was in range.
template <class Launch>
std::optional<std::vector<std::int64_t>>
firstBadPoint(const KernelCall& call, const KernelContext& c, const ZRange& idx, Launch&& launch) {
  Scratch bad(sizeof(unsigned long long), c.gpu, c.stream);
  checkCuda(cudaMemsetAsync(bad.get(), 0xFF, sizeof(unsigned long long), c.stream), what(call));
  checkCuda(launch(reinterpret_cast<unsigned long long*>(bad.get())), what(call));
  unsigned long long first = 0;
  checkCuda(cudaMemcpyAsync(&first, bad.get(), sizeof first, cudaMemcpyDeviceToHost, c.stream),
            what(call));
  checkCuda(cudaStreamSynchronize(c.stream), what(call));
  if (first == ~0ULL) {
    return std::nullopt;
  }
  std::vector<std::int64_t> point(idx.rank());
  auto rest = static_cast<std::int64_t>(first);
  for (std::size_t d = idx.rank(); d-- > 0;) {
    point[d] = idx.start()[d] + rest % idx.extent(d);
    rest /= idx.extent(d);
  }
  return point;
}

// The index element at point b of an int32 or int64 index view, read back
// from the device for an error message.
std::int64_t indexAt(const KernelCall& call, const TensorView& indices,
                     const std::vector<std::int64_t>& b) {
  if (indices.dtype == DType::Int32) {
    std::int32_t value = 0;
    checkCuda(cudaMemcpy(&value, pointAt(indices, b), sizeof value, cudaMemcpyDeviceToHost),
              what(call));
    return value;
  }
  std::int64_t value = 0;
  checkCuda(cudaMemcpy(&value, pointAt(indices, b), sizeof value, cudaMemcpyDeviceToHost),
            what(call));
  return value;
}

} // namespace

// embedding: result[b..., d] = table[indices[b...], d]; index [b..., D].
void embeddingKernel(const KernelCall& call, const KernelContext& c) {
  const TensorView& table = call.inputs[0][0];
  const TensorView& indices = call.inputs[1][0];
  const TensorView& out = call.outputs[0][0];
  if (!isInt(indices.dtype)) {
    unsupportedDType(call, indices.dtype);
  }
  const std::int64_t V = intBinding(call.op, "V");
  const ZRange& idx = call.index;
  const std::size_t nb = idx.rank() - 1;
  const std::int64_t d0 = idx.start()[nb];
  const std::vector<std::int64_t> start = idx.start().vector();
  const std::vector<std::int64_t> batchStart(start.begin(), start.begin() + nb);

  ViewWalk ix; // the index element of each point (constant along d)
  ix.base = pointAt(indices, batchStart);
  ix.stride.assign(indices.strides.begin(), indices.strides.begin() + nb);
  ix.stride.push_back(0);
  ViewWalk o;
  o.base = pointAt(out, start);
  o.stride = out.strides;
  ViewWalk column; // the table column of each point, at row 0
  const std::int64_t cell[2] = {0, d0};
  column.base = pointAt(table, cell);
  column.stride.assign(nb, 0);
  column.stride.push_back(table.strides[1]);

  const std::optional<std::vector<std::int64_t>> bad =
      firstBadPoint(call, c, idx, [&](unsigned long long* slot) {
        return launchEmbedding(elementType(out.dtype), elementType(indices.dtype), column.base,
                               table.strides[0], V, ix.base, o.base,
                               walkOf(idx, {&ix, &o, &column}), slot, c.stream);
      });
  if (!bad) {
    return;
  }
  // The smallest bad walk point: its batch coordinates name the index
  // element, as the CPU backend reports it.
  const std::vector<std::int64_t>& point = *bad;
  const std::vector<std::int64_t> b(point.begin(), point.begin() + nb);
  const std::int64_t row = indexAt(call, indices, b);
  throw Error("operation " + call.op.name + " (embedding): indices" + ZPoint(b).toString() +
              " is " + std::to_string(row) + ", outside the table's " + std::to_string(V) +
              " rows");
}

// gather: result[pre..., b..., post...] = data[pre..., indices[b...], post...];
// index = the result's shape. The embedding launch with a table "row" along
// data's axis: operand 0 the index element (constant along pre and post), 1
// the result element, 2 data at row 0 (constant along b).
void gatherKernel(const KernelCall& call, const KernelContext& c) {
  const TensorView& data = call.inputs[0][0];
  const TensorView& indices = call.inputs[1][0];
  const TensorView& out = call.outputs[0][0];
  if (!isInt(indices.dtype)) {
    unsupportedDType(call, indices.dtype);
  }
  const ZRange& idx = call.index;
  if (idx.isEmpty()) {
    return;
  }
  const auto ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
  const auto nb = static_cast<std::size_t>(intBinding(call.op, "nb"));
  const std::int64_t V = intBinding(call.op, "V");
  const std::vector<std::int64_t> start = idx.start().vector();
  ViewWalk ix;
  ix.base = pointAt(indices, std::span(start).subspan(ax, nb));
  ix.stride.assign(idx.rank(), 0);
  std::copy(indices.strides.begin(), indices.strides.end(), ix.stride.begin() + ax);
  ViewWalk o;
  o.base = pointAt(out, start);
  o.stride = out.strides;
  ViewWalk column;
  std::vector<std::int64_t> corner(start.begin(), start.begin() + ax);
  corner.push_back(0);
  corner.insert(corner.end(), start.begin() + ax + nb, start.end());
  column.base = pointAt(data, corner);
  column.stride.assign(idx.rank(), 0);
  for (std::size_t d = 0; d < data.rank(); ++d) {
    if (d != ax) {
      column.stride[d < ax ? d : d - 1 + nb] = data.strides[d];
    }
  }
  const std::optional<std::vector<std::int64_t>> bad =
      firstBadPoint(call, c, idx, [&](unsigned long long* slot) {
        return launchEmbedding(elementType(out.dtype), elementType(indices.dtype), column.base,
                               data.strides[ax], V, ix.base, o.base,
                               walkOf(idx, {&ix, &o, &column}), slot, c.stream, true);
      });
  if (!bad) {
    return;
  }
  // The smallest bad point: its b coordinates name the index.
  const std::vector<std::int64_t>& point = *bad;
  const std::vector<std::int64_t> b(point.begin() + ax, point.begin() + ax + nb);
  const std::int64_t value = indexAt(call, indices, b);
  throw Error("operation " + call.op.name + " (gather): indices" + ZPoint(b).toString() + " is " +
              std::to_string(value) + ", outside [-" + std::to_string(V) + ", " +
              std::to_string(V) + ") (data's axis " + std::to_string(ax) + " has " +
              std::to_string(V) + " elements)");
}

} // namespace tapestry::cuda::ops
