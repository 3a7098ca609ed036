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

const Buffer& graphInput(const graph::Tensor& tensor, const TensorBuffers& inputs) {
  auto it = inputs.find(tensor.name);
  if (it == inputs.end()) {
    throw Error("missing input tensor " + tensor.name);
  }
  const ZRange bounds = ZRange::fromShape(ZPoint(tensor.type.shape));
  if (it->second.region() != bounds || dtypeName(it->second.dtype()) != tensor.type.dtype) {
    throw Error("input tensor " + tensor.name + " is " + dtypeName(it->second.dtype()) + " " +
                it->second.region().toString() + " but the graph declares " +
                metakernel::toString(tensor.type));
  }
  return it->second;
}

TensorBuffers evaluateGraph(Backend& backend, const graph::ExpandedGraph& g,
                            const TensorBuffers& inputs, int device) {
  TensorBuffers tensors;
  for (const graph::Tensor& t : g.tensors) {
    if (!t.isGraphInput()) {
      continue;
    }
    const Buffer& input = graphInput(t, inputs);
    Buffer buffer = backend.allocate(input.dtype(), input.region(), device);
    backend.copyRegion(input.view(), buffer.view(), input.region());
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
