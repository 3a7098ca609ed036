#include "core/search/baselines.hpp"

#include <algorithm>

#include "core/diag/error.hpp"

namespace tapestry::search {

namespace {

// Whether `choice` is a valid plan: built as the search builds it (tasks
// only, no ranges; `builder` reused, so an op's tiles are projected once).
bool isValid(plan::PlanBuilder& builder, const plan::PlanChoice& choice) {
  try {
    (void)builder.tasks(choice);
    return true;
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return false;
  }
}

// Fills `choice` op by op in topological order with what `decide` proposes,
// keeping an op whole on device 0 when its proposal makes the plan invalid.
template <typename Decide>
plan::PlanChoice assemble(const SearchSpace& space, const plan::PlanContext& context,
                          Decide decide) {
  plan::PlanBuilder builder(context, space.deviceCount());
  plan::PlanChoice choice = plan::singleDeviceChoice(space.graph(), 0);
  for (std::size_t i : space.graph().order) {
    plan::OpChoice proposal = decide(i, choice);
    if (proposal == choice.ops[i]) {
      continue;
    }
    plan::OpChoice keep = choice.ops[i];
    choice.ops[i] = std::move(proposal);
    if (!isValid(builder, choice)) {
      choice.ops[i] = std::move(keep);
    }
  }
  return choice;
}

plan::OpChoice whole(const SearchSpace& space, std::size_t i) {
  return space.opChoice(std::vector<std::int64_t>(space.op(i).extents.size(), 1), 0);
}

plan::OpChoice splitDim(const SearchSpace& space, std::size_t i, std::size_t d) {
  const OpSpace& op = space.op(i);
  std::vector<std::int64_t> split(op.extents.size(), 1);
  if (d < split.size() && op.splittable[d]) {
    split[d] = std::min<std::int64_t>(op.extents[d], space.deviceCount());
  }
  return space.opChoice(std::move(split), 0);
}

// Op i following producer `from`'s split and placement through the tensor
// between them; whole when nothing lines up.
plan::OpChoice follow(const SearchSpace& space, std::size_t i, std::size_t from,
                      const plan::PlanChoice& choice) {
  for (const Neighbour& n : space.neighbours(i)) {
    if (n.op == from) {
      std::vector<std::int64_t> split = space.alignedSplit(i, n, choice.ops[from].split);
      const int offset = choice.ops[from].devices.empty() ? 0 : choice.ops[from].devices[0];
      return space.opChoice(std::move(split), offset);
    }
  }
  return whole(space, i);
}

bool isSplit(const plan::OpChoice& c) {
  return std::any_of(c.split.begin(), c.split.end(), [](std::int64_t s) { return s > 1; });
}

// The producer of the tensor bound to `port` (the first tensor of it).
std::optional<std::size_t> producerOf(const graph::ExpandedGraph& g, const graph::Operation& op,
                                      const std::string& port) {
  for (const graph::PortTensors& p : op.inputs) {
    if (p.port == port && !p.tensors.empty()) {
      return g.tensors[p.tensors.front()].producer;
    }
  }
  return std::nullopt;
}

plan::OpChoice tensorParallel(const SearchSpace& space, std::size_t i,
                              const plan::PlanChoice& choice) {
  const graph::ExpandedGraph& g = space.graph();
  const graph::Operation& op = g.operations[i];
  const OpSpace& s = space.op(i);
  const std::size_t rank = s.extents.size();
  if ((op.kernel == "linear" || op.kernel == "linear_act") && rank >= 1) {
    return splitDim(space, i, rank - 1); // output features (column parallel)
  }
  if (op.kernel == "matmul" && rank >= 3) {
    // Index [batch..., m, n, k]: row parallel (k) when X arrives split along k.
    if (auto x = producerOf(g, op, "X"); x && isSplit(choice.ops[*x])) {
      plan::OpChoice followed = follow(space, i, *x, choice);
      if (followed.split[rank - 1] > 1) {
        std::vector<std::int64_t> split(rank, 1);
        split[rank - 1] = followed.split[rank - 1];
        return space.opChoice(std::move(split), followed.devices[0]);
      }
    }
    return splitDim(space, i, rank - 2); // output columns (column parallel)
  }
  for (const graph::PortTensors& p : op.inputs) {
    for (std::size_t t : p.tensors) {
      const auto& producer = g.tensors[t].producer;
      if (producer && isSplit(choice.ops[*producer])) {
        return follow(space, i, *producer, choice);
      }
    }
  }
  return whole(space, i);
}

} // namespace

std::vector<Baseline> makeBaselines(const SearchSpace& space, const plan::PlanContext& context) {
  const graph::ExpandedGraph& g = space.graph();
  std::vector<Baseline> out;
  out.push_back(Baseline{"single", plan::singleDeviceChoice(g, 0)});

  out.push_back(Baseline{"data_parallel",
                         assemble(space, context, [&](std::size_t i, const plan::PlanChoice&) {
                           const OpSpace& op = space.op(i);
                           for (std::size_t d : op.dims) {
                             if (!op.reduction[d]) {
                               return splitDim(space, i, d);
                             }
                           }
                           return whole(space, i);
                         })});

  const bool hasProducts =
      std::any_of(g.operations.begin(), g.operations.end(), [](const auto& op) {
        return op.kernel == "linear" || op.kernel == "linear_act" || op.kernel == "matmul";
      });
  if (hasProducts) {
    out.push_back(Baseline{"tensor_parallel",
                           assemble(space, context, [&](std::size_t i, const plan::PlanChoice& c) {
                             return tensorParallel(space, i, c);
                           })});
  }
  return out;
}

} // namespace tapestry::search
