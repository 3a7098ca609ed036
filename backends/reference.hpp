// Unsharded evaluation: every operation run as one shard (its whole index
// space) on whole-tensor views, on one device. `run --check` compares a plan's
// sharded result against this; tests use it as the reference of a kernel.
#pragma once

#include <vector>

#include "backends/backend.hpp"
#include "core/graph/graph.hpp"

namespace tapestry::backend {

// Runs `op` as a single shard on whole-tensor views (parallel to op.inputs /
// op.outputs): outputs with a combine get final values, not partials.
void runUnsharded(Backend& backend, const graph::Operation& op, std::span<const PortViews> inputs,
                  std::span<const PortViews> outputs, int device = 0);

// The whole-tensor views that run `op` (an operation of `g`) unsharded, parallel
// to op.inputs / op.outputs: each input the view of its buffer in `tensors`, by
// tensor name; each output a new zero-filled buffer that `backend` allocates
// on `device`, added to `tensors` (which keeps it alive).
struct OperationViews {
  std::vector<PortViews> inputs;
  std::vector<PortViews> outputs;
};
OperationViews wholeTensorViews(Backend& backend, const graph::ExpandedGraph& g,
                                const graph::Operation& op, TensorBuffers& tensors, int device);

// The buffer of graph input `tensor` in `inputs` (by name), which must hold
// the whole tensor in its declared dtype: Error (exit 1) "missing input tensor
// x", or "input tensor x is float64 zr[0:2] but the graph declares [4] float32".
const Buffer& graphInput(const graph::Tensor& tensor, const TensorBuffers& inputs);

// Evaluates the whole graph in topological order on `device`. `inputs` holds
// every graph input (Error "missing input tensor x" otherwise; host or device
// buffers, copied onto the device); the result holds every tensor's buffer,
// inputs included, allocated by `backend` on `device`.
TensorBuffers evaluateGraph(Backend& backend, const graph::ExpandedGraph& g,
                            const TensorBuffers& inputs, int device = 0);

} // namespace tapestry::backend
