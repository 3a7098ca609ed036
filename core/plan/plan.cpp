// Sharded plans: the per-graph context the builder reads, choices and their
// checks. The builder is in plan_builder.cpp, the cost model's task summary of
// a plan in plan_tasks.cpp, the plan's JSON in plan_json.cpp.
#include "core/plan/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "core/diag/error.hpp"
#include "core/expr/dtype.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/plan/plan_internal.hpp"
#include "core/zspace/zspace_json.hpp"

namespace tapestry::plan {

// ---------------------------------------------------------------- context

namespace {

bool soleTermDisjoint(const IndexProjection& ipf, std::size_t dim) {
  const ZMatrix& p = ipf.map().projection();
  for (std::size_t r = 0; r < p.rows(); ++r) {
    const std::int64_t c = p(r, dim);
    if (c == 0) {
      continue;
    }
    bool sole = true;
    for (std::size_t k = 0; k < p.cols() && sole; ++k) {
      sole = k == dim || p(r, k) == 0;
    }
    const std::int64_t magnitude = c < 0 ? -c : c;
    if (sole && magnitude >= ipf.shape()[r]) {
      return true;
    }
  }
  return false;
}

std::vector<ElementInfo> elementsOf(const graph::ExpandedGraph& g,
                                    const std::vector<graph::PortTensors>& ports,
                                    const std::vector<metakernel::PortResult>& results) {
  std::vector<ElementInfo> out;
  for (std::size_t port = 0; port < ports.size(); ++port) {
    checkInvariant(ports[port].tensors.size() == results[port].ipfs.size(),
                   "one IPF per port tensor");
    for (std::size_t j = 0; j < ports[port].tensors.size(); ++j) {
      const graph::Tensor& t = g.tensors[ports[port].tensors[j]];
      const IndexProjection& ipf = results[port].ipfs[j];
      ElementInfo e;
      e.tensor = static_cast<std::uint32_t>(ports[port].tensors[j]);
      e.rank = static_cast<std::uint32_t>(t.type.shape.size());
      e.port = static_cast<std::uint32_t>(port);
      checkInvariant(ipf.outputRank() == e.rank, "IPF rows = tensor rank");
      const std::span<const std::int64_t> p = ipf.map().projection().values();
      e.offset = ipf.map().offset().vector();
      e.ipfShape = ipf.shape().vector();
      e.shape = t.type.shape;
      e.elemBytes = dtypeSize(t.type.dtype);
      const std::size_t n = ipf.inputRank();
      for (std::size_t d = 0; d < e.rank; ++d) {
        e.rowStart.push_back(static_cast<std::uint32_t>(e.terms.size()));
        for (std::size_t k = 0; k < n; ++k) {
          if (p[d * n + k] != 0) {
            e.terms.push_back(ElementInfo::Term{static_cast<std::uint32_t>(k), p[d * n + k]});
          }
        }
      }
      e.rowStart.push_back(static_cast<std::uint32_t>(e.terms.size()));
      out.push_back(std::move(e));
    }
  }
  return out;
}

} // namespace

std::string opLabel(const graph::Operation& op) {
  return "operation " + op.name;
}

std::vector<char> packedConstants(const graph::ExpandedGraph& g) {
  std::vector<char> packed(g.tensors.size(), 0);
  for (const graph::Operation& op : g.operations) {
    for (std::size_t p = 0; p < op.inputs.size() && p < op.application.inputs.size(); ++p) {
      if (!op.application.inputs[p].packed) {
        continue;
      }
      for (std::size_t t : op.inputs[p].tensors) {
        packed[t] = static_cast<char>(g.tensors[t].constant && g.tensors[t].isGraphInput());
      }
    }
  }
  return packed;
}

std::int64_t constantInputBytes(const graph::ExpandedGraph& g) {
  std::int64_t total = 0;
  for (const graph::Tensor& t : g.tensors) {
    if (t.constant && t.isGraphInput()) {
      std::int64_t bytes = dtypeSize(t.type.dtype);
      for (std::int64_t extent : t.type.shape) {
        bytes *= extent;
      }
      total += bytes;
    }
  }
  return total;
}

namespace {

// ElementInfo's image fields (imageTile, imageWindow, imageStride).
// `reduction`: per index dim, whether it is a reduction dim (OpTables::reductionDim).
void describeImage(ElementInfo& e, const std::vector<bool>& reduction) {
  if (e.image == ImageRead::None) {
    return;
  }
  for (std::size_t d = 0; d < 4; ++d) {
    e.imageTile[d] = e.ipfShape[d] != 1;
    const bool several = e.rowStart[d + 1] - e.rowStart[d] > 1;
    for (std::uint32_t i = e.rowStart[d]; i < e.rowStart[d + 1]; ++i) {
      const ElementInfo::Term& term = e.terms[i];
      if (several && reduction[term.col]) {
        // An index of 64 dims or more is no image kernel's; a window there
        // is assumed (its copies are then counted where regions meet).
        e.imageTile[d] = e.imageTile[d] || term.col >= 64;
        e.imageWindow[d] |= term.col < 64 ? std::uint64_t{1} << term.col : 0;
      }
      if (e.image == ImageRead::Dense && d >= 2 && !reduction[term.col]) {
        e.imageStride[d] = term.coef;
      }
    }
  }
}

} // namespace

PlanContext::PlanContext(const graph::ExpandedGraph& g) {
  auto impl = std::make_shared<Impl>();
  impl->graph = &g;
  impl->elemBytes.reserve(g.tensors.size());
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    impl->elemBytes.push_back(dtypeSize(g.tensors[t].type.dtype));
    if (g.tensors[t].isGraphInput()) {
      impl->inputs.push_back(static_cast<std::uint32_t>(t));
    }
  }
  impl->packed = packedConstants(g);
  impl->constantBytes = constantInputBytes(g);
  impl->isOutput.assign(g.tensors.size(), 0);
  for (std::size_t t : g.outputs) {
    impl->isOutput[t] = 1;
  }
  impl->ops.reserve(g.operations.size());
  for (const graph::Operation& op : g.operations) {
    const metakernel::Application& app = op.application;
    OpTables t;
    t.rank = static_cast<std::uint32_t>(app.index.rank());
    t.start = app.index.start().vector();
    t.extents.resize(t.rank);
    for (std::size_t d = 0; d < t.rank; ++d) {
      t.extents[d] = app.index.extent(d);
    }
    t.emptyIndex = app.index.isEmpty();
    t.reductionDim.assign(t.rank, false);
    for (std::size_t d : app.reductionDims) {
      t.reductionDim[d] = true;
    }
    t.inputs = elementsOf(g, op.inputs, app.inputs);
    for (ElementInfo& e : t.inputs) { // packed every call unless a packed constant
      e.repacked = app.inputs[e.port].packed && impl->packed[e.tensor] == 0;
      e.constant = g.tensors[e.tensor].constant && g.tensors[e.tensor].isGraphInput();
      const graph::Tensor& tensor = g.tensors[e.tensor];
      const bool activation = e.rank == 4 && !tensor.isGraphInput() &&
                              impl->isOutput[e.tensor] == 0 &&
                              (tensor.type.dtype == "float32" || tensor.type.dtype == "bfloat16");
      e.image = activation ? imageRead(op.kernel, e.port) : ImageRead::None;
      describeImage(e, t.reductionDim);
      t.readsImage = t.readsImage || e.image != ImageRead::None;
    }
    t.outputs = elementsOf(g, op.outputs, app.outputs);
    for (const metakernel::PortResult& port : app.outputs) {
      t.combines.push_back(port.combine ? metakernel::combineName(*port.combine) : "");
    }
    t.disjointDim.assign(t.rank, true);
    for (std::size_t d = 0; d < t.rank; ++d) {
      for (const auto& port : app.outputs) {
        for (const IndexProjection& ipf : port.ipfs) {
          if (!soleTermDisjoint(ipf, d)) {
            t.disjointDim[d] = false;
          }
        }
      }
    }
    t.dtype = t.outputs.empty() ? std::string_view("float32")
                                : std::string_view(g.tensors[t.outputs[0].tensor].type.dtype);
    t.kernel = op.kernel;
    t.epilogue = epilogueKernel(op);
    t.productDims = productDims(op);
    impl->ops.push_back(std::move(t));
  }
  impl_ = std::move(impl);
}

const graph::ExpandedGraph& PlanContext::graph() const {
  return *impl_->graph;
}

// ---------------------------------------------------------------- basics

std::int64_t dtypeSize(std::string_view dtype) {
  if (const expr::DTypeInfo* d = expr::findDType(dtype)) {
    return d->bytes;
  }
  throw InternalError("dtypeSize: unknown dtype \"" + std::string(dtype) + "\"");
}

std::uint32_t outputElementOf(const graph::ExpandedGraph& g, std::size_t op, std::size_t tensor) {
  std::uint32_t k = 0;
  for (const graph::PortTensors& port : g.operations[op].outputs) {
    for (std::size_t t : port.tensors) {
      if (t == tensor) {
        return k;
      }
      ++k;
    }
  }
  throw InternalError("operation " + g.operations[op].name + " does not write tensor " +
                      g.tensors[tensor].name);
}

std::vector<std::uint32_t> productDims(const graph::Operation& op) {
  const metakernel::Application& app = op.application;
  const std::size_t rank = app.index.rank();
  if (op.kernel != "matmul" || rank <= 3 || app.inputs.size() < 2 || app.inputs[1].ipfs.empty()) {
    return {};
  }
  const ZMatrix& w = app.inputs[1].ipfs[0].map().projection();
  std::vector<std::uint32_t> dims;
  for (std::size_t d = 0; d + 3 < rank; ++d) {
    for (std::size_t r = 0; r < w.rows(); ++r) {
      if (w(r, d) != 0) {
        dims.push_back(static_cast<std::uint32_t>(d));
        break;
      }
    }
  }
  return dims;
}

std::string_view epilogueKernel(const graph::Operation& op) {
  if (op.application.fused) { // fuse(P, C): C's pass over P's result
    return op.application.fused->consumerKernel;
  }
  const Json& params = op.application.params;
  const auto on = [&](const char* name) {
    const auto it = params.find(name);
    return it != params.end() && it->is_boolean() && it->get<bool>();
  };
  if (op.kernel == "linear_act") {
    return on("gelu") ? "gelu" : on("gelu_tanh") ? "gelu_tanh" : "";
  }
  // A convolution's SiLU costs about a silu pass even as oneDNN's post-op (an
  // exp per output element; EfficientNet-B0 on one device, 2026-12-07: its 49
  // fused convolutions measured 6.09 ms, priced 4.62 ms without the pass and
  // 6.60 ms with it). Its HardSwish and clip cost next to nothing there.
  if (op.kernel == "conv2d_act" || op.kernel == "conv2d_grouped_act") {
    return on("silu") ? "silu" : "";
  }
  return {};
}

ImageRead imageRead(std::string_view kernel, std::size_t port) {
  static constexpr std::string_view kConvs[] = {"conv2d", "conv2d_grouped", "conv2d_act",
                                                "conv2d_grouped_act"};
  static constexpr std::string_view kPools[] = {"maxpool2d", "avgpool2d", "global_avgpool"};
  if (port != 0) {
    return ImageRead::None;
  }
  if (std::find(std::begin(kConvs), std::end(kConvs), kernel) != std::end(kConvs)) {
    return ImageRead::Dense;
  }
  if (std::find(std::begin(kPools), std::end(kPools), kernel) != std::end(kPools)) {
    return ImageRead::Strided;
  }
  return ImageRead::None;
}

const char* inputsOnName(InputsOn where) {
  switch (where) {
  case InputsOn::Host:
    return "host";
  case InputsOn::Free:
    return "free";
  case InputsOn::Constants:
    return "constants";
  }
  return "host";
}

std::optional<InputsOn> inputsOnFromName(std::string_view name) {
  for (const InputsOn where : {InputsOn::Host, InputsOn::Free, InputsOn::Constants}) {
    if (name == inputsOnName(where)) {
      return where;
    }
  }
  return std::nullopt;
}

PlanChoice singleDeviceChoice(const graph::ExpandedGraph& g, int device) {
  PlanChoice c;
  c.ops.reserve(g.operations.size());
  for (const graph::Operation& op : g.operations) {
    c.ops.push_back(OpChoice{std::vector<std::int64_t>(op.application.index.rank(), 1), {device}});
  }
  return c;
}

std::int64_t PlanChoice::shardCount() const {
  std::int64_t n = 0;
  for (const OpChoice& op : ops) {
    n += static_cast<std::int64_t>(op.devices.size());
  }
  return n;
}

std::size_t ShardPlan::shardCount() const {
  std::size_t n = 0;
  for (const OpPlan& op : ops) {
    n += op.shards.size();
  }
  return n;
}

PlanChoice ShardPlan::choice() const {
  PlanChoice c;
  c.ops.reserve(ops.size());
  for (const OpPlan& op : ops) {
    c.ops.push_back(op.choice);
  }
  return c;
}

std::optional<std::string> checkOpChoice(const graph::ExpandedGraph& g, int deviceCount,
                                         std::size_t opIndex, const OpChoice& c) {
  const graph::Operation& op = g.operations[opIndex];
  const metakernel::Application& app = op.application;
  const std::size_t rank = app.index.rank();
  if (c.split.size() != rank) {
    return opLabel(op) + ": split " + formatInts(c.split) + " has " +
           std::to_string(c.split.size()) + " parts but the index " + app.index.toString() +
           " has " + std::to_string(rank) + " dims";
  }
  std::int64_t shards = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t extent = app.index.extent(d);
    const std::int64_t most = std::max<std::int64_t>(extent, 1);
    if (c.split[d] < 1 || c.split[d] > most) {
      return opLabel(op) + ": split " + formatInts(c.split) + " cuts dim " + std::to_string(d) +
             " into " + std::to_string(c.split[d]) + " parts; expected 1 to " +
             std::to_string(most) + " (the index extent there)";
    }
    if (c.split[d] > 1 && !app.reductionSplittable &&
        std::find(app.reductionDims.begin(), app.reductionDims.end(), d) !=
            app.reductionDims.end()) {
      return opLabel(op) + ": split " + formatInts(c.split) + " cuts reduction dim " +
             std::to_string(d) + ", but not every output of " + op.kernel +
             " has a combine, so partial results could not be combined";
    }
    if (shards > kMaxShardsPerOp / c.split[d]) {
      return opLabel(op) + ": split " + formatInts(c.split) + " makes more than " +
             std::to_string(kMaxShardsPerOp) + " shards (the most one operation may have)";
    }
    shards *= c.split[d];
  }
  if (c.devices.size() != static_cast<std::size_t>(shards)) {
    return opLabel(op) + ": split " + formatInts(c.split) + " makes " + std::to_string(shards) +
           " shards but " + std::to_string(c.devices.size()) + " devices are given";
  }
  for (std::size_t s = 0; s < c.devices.size(); ++s) {
    if (c.devices[s] < 0 || c.devices[s] >= deviceCount) {
      return opLabel(op) + ": shard " + std::to_string(s) + " is on device " +
             std::to_string(c.devices[s]) + ", expected 0 to " + std::to_string(deviceCount - 1) +
             " (the target has " + std::to_string(deviceCount) + " devices)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> checkShape(const graph::ExpandedGraph& g, int deviceCount,
                                      const PlanChoice& choice) {
  if (deviceCount < 1) {
    return "a plan needs at least one device, got " + std::to_string(deviceCount);
  }
  if (choice.ops.size() != g.operations.size()) {
    return "expected a choice for each of the " + std::to_string(g.operations.size()) +
           " operations, got " + std::to_string(choice.ops.size());
  }
  return std::nullopt;
}

std::optional<std::string> checkChoice(const graph::ExpandedGraph& g, int deviceCount,
                                       const PlanChoice& choice) {
  if (auto reason = checkShape(g, deviceCount, choice)) {
    return reason;
  }
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    if (auto reason = checkOpChoice(g, deviceCount, i, choice.ops[i])) {
      return reason;
    }
  }
  if (const std::int64_t shards = choice.shardCount(); shards > kMaxShardsPerPlan) {
    return "the plan has " + std::to_string(shards) + " shards, more than the " +
           std::to_string(kMaxShardsPerPlan) + " a plan may have";
  }
  return std::nullopt;
}

} // namespace tapestry::plan
