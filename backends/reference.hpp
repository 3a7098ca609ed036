// Unsharded evaluation: every operation run as one shard (its whole index
// space) on whole-tensor views, on one device. `run --check` compares a plan's
// sharded result against this; tests use it as the reference of a kernel.
#pragma once

#include "backends/backend.hpp"
#include "core/graph/graph.hpp"

namespace tapestry::backend {

// Runs `op` as a single shard on whole-tensor views (parallel to op.inputs /
// op.outputs): outputs with a combine get final values, not partials.
void runUnsharded(Backend& backend, const graph::Operation& op, std::span<const PortViews> inputs,
                  std::span<const PortViews> outputs, int device = 0);

// Evaluates the whole graph in topological order on `device`. `inputs` holds
// every graph input (Error "missing input tensor x" otherwise; host or device
// buffers, copied onto the device); the result holds every tensor's buffer,
// inputs included, allocated by `backend` on `device`.
TensorBuffers evaluateGraph(Backend& backend, const graph::ExpandedGraph& g,
                            const TensorBuffers& inputs, int device = 0);

} // namespace tapestry::backend
