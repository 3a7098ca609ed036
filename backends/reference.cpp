#include "backends/reference.hpp"

#include "core/diag/error.hpp"

namespace tapestry::backend {

void runUnsharded(Backend& backend, const graph::Operation& op, std::span<const PortViews> inputs,
                  std::span<const PortViews> outputs, int device) {
  backend.runKernel(op, op.application.index, inputs, outputs, device);
}

OperationViews wholeTensorViews(Backend& backend, const graph::ExpandedGraph& g,
                                const graph::Operation& op, TensorBuffers& tensors, int device) {
  OperationViews views;
  for (const graph::PortTensors& port : op.inputs) {
    PortViews portViews;
    for (std::size_t t : port.tensors) {
      portViews.push_back(tensors.at(g.tensors[t].name).view());
    }
    views.inputs.push_back(std::move(portViews));
  }
  for (const graph::PortTensors& port : op.outputs) {
    PortViews portViews;
    for (std::size_t t : port.tensors) {
      const graph::Tensor& tensor = g.tensors[t];
      Buffer buffer = backend.allocate(parseDType(tensor.type.dtype),
                                       ZRange::fromShape(ZPoint(tensor.type.shape)), device);
      portViews.push_back(buffer.view());
      tensors.emplace(tensor.name, std::move(buffer));
    }
    views.outputs.push_back(std::move(portViews));
  }
  return views;
}

TensorBuffers evaluateGraph(Backend& backend, const graph::ExpandedGraph& g,
                            const TensorBuffers& inputs, int device) {
  TensorBuffers tensors;
  for (const graph::Tensor& t : g.tensors) {
    if (!t.isGraphInput()) {
      continue;
    }
    auto it = inputs.find(t.name);
    if (it == inputs.end()) {
      throw Error("missing input tensor " + t.name);
    }
    const ZRange bounds = ZRange::fromShape(ZPoint(t.type.shape));
    if (it->second.region() != bounds || dtypeName(it->second.dtype()) != t.type.dtype) {
      throw Error("input tensor " + t.name + " is " + dtypeName(it->second.dtype()) + " " +
                  it->second.region().toString() + " but the graph declares " +
                  metakernel::toString(t.type));
    }
    Buffer buffer = backend.allocate(it->second.dtype(), bounds, device);
    backend.copyRegion(it->second.view(), buffer.view(), bounds);
    tensors.emplace(t.name, std::move(buffer));
  }
  for (std::size_t opIndex : g.order) {
    const graph::Operation& op = g.operations[opIndex];
    const OperationViews views = wholeTensorViews(backend, g, op, tensors, device);
    runUnsharded(backend, op, views.inputs, views.outputs, device);
  }
  backend.synchronize();
  return tensors;
}

} // namespace tapestry::backend
