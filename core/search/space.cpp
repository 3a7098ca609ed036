#include "core/search/space.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/diag/error.hpp"

namespace tapestry::search {

namespace {

// Where an operation touches a tensor: the IPF of its first port element bound
// to it (outputs first: an op reading its own output does not exist).
const IndexProjection* ipfFor(const graph::Operation& op, std::size_t tensor) {
  for (std::size_t p = 0; p < op.outputs.size(); ++p) {
    for (std::size_t j = 0; j < op.outputs[p].tensors.size(); ++j) {
      if (op.outputs[p].tensors[j] == tensor) {
        return &op.application.outputs[p].ipfs[j];
      }
    }
  }
  for (std::size_t p = 0; p < op.inputs.size(); ++p) {
    for (std::size_t j = 0; j < op.inputs[p].tensors.size(); ++j) {
      if (op.inputs[p].tensors[j] == tensor) {
        return &op.application.inputs[p].ipfs[j];
      }
    }
  }
  return nullptr;
}

// The index dim that moves tensor dim `row` the most (the largest |coefficient|,
// the first on ties), or nullopt for a row no index dim reaches (broadcast).
std::optional<std::size_t> majorTerm(const IndexProjection& ipf, std::size_t row) {
  const ZMatrix& p = ipf.map().projection();
  std::optional<std::size_t> best;
  std::int64_t bestMagnitude = 0;
  for (std::size_t c = 0; c < p.cols(); ++c) {
    const std::int64_t m = std::llabs(p(row, c));
    if (m > bestMagnitude) {
      best = c;
      bestMagnitude = m;
    }
  }
  return best;
}

void addPairs(const IndexProjection& mine, const IndexProjection& theirs,
              std::vector<std::pair<std::size_t, std::size_t>>& pairs) {
  const std::size_t rows = std::min(mine.outputRank(), theirs.outputRank());
  for (std::size_t r = 0; r < rows; ++r) {
    auto a = majorTerm(mine, r);
    auto b = majorTerm(theirs, r);
    if (!a || !b) {
      continue;
    }
    bool used = false;
    for (const auto& [x, y] : pairs) {
      used = used || x == *a || y == *b;
    }
    if (!used) {
      pairs.emplace_back(*a, *b);
    }
  }
}

void enumerate(const OpSpace& op, std::size_t dim, std::int64_t budget,
               std::vector<std::int64_t>& current, std::vector<std::vector<std::int64_t>>& out,
               std::size_t limit, bool& over) {
  if (over) {
    return;
  }
  if (dim == op.extents.size()) {
    if (out.size() >= limit) {
      over = true;
      return;
    }
    out.push_back(current);
    return;
  }
  const std::int64_t most =
      op.splittable[dim] ? std::min<std::int64_t>(op.extents[dim], budget) : 1;
  for (std::int64_t v = 1; v <= most && !over; ++v) {
    current[dim] = v;
    enumerate(op, dim + 1, budget / v, current, out, limit, over);
  }
  current[dim] = 1;
}

} // namespace

std::string formatSplit(const std::vector<std::int64_t>& split) {
  std::string s = "[";
  for (std::size_t i = 0; i < split.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(split[i]);
  }
  return s + "]";
}

SearchSpace::SearchSpace(const graph::ExpandedGraph& g, int deviceCount)
    : graph_(&g), devices_(deviceCount) {
  checkInvariant(deviceCount >= 1, "a search space needs at least one device");
  ops_.reserve(g.operations.size());
  for (const graph::Operation& op : g.operations) {
    const metakernel::Application& app = op.application;
    OpSpace s;
    const std::size_t rank = app.index.rank();
    s.reduction.assign(rank, false);
    for (std::size_t d : app.reductionDims) {
      s.reduction[d] = true;
    }
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t extent = app.index.extent(d);
      s.extents.push_back(extent);
      const bool ok = extent > 1 && deviceCount > 1 && (!s.reduction[d] || app.reductionSplittable);
      s.splittable.push_back(ok);
      if (ok) {
        s.dims.push_back(d);
      }
    }
    ops_.push_back(std::move(s));
  }

  // Neighbours: every pair of operations touching a common tensor.
  neighbours_.resize(g.operations.size());
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    std::vector<std::size_t> touching = g.tensors[t].consumers;
    if (g.tensors[t].producer) {
      touching.push_back(*g.tensors[t].producer);
    }
    std::sort(touching.begin(), touching.end());
    touching.erase(std::unique(touching.begin(), touching.end()), touching.end());
    for (std::size_t a : touching) {
      const IndexProjection* mine = ipfFor(g.operations[a], t);
      for (std::size_t b : touching) {
        if (a == b) {
          continue;
        }
        const IndexProjection* theirs = ipfFor(g.operations[b], t);
        if (mine == nullptr || theirs == nullptr) {
          continue;
        }
        auto& list = neighbours_[a];
        auto it =
            std::find_if(list.begin(), list.end(), [b](const Neighbour& n) { return n.op == b; });
        if (it == list.end()) {
          list.push_back(Neighbour{b, {}});
          it = list.end() - 1;
        }
        addPairs(*mine, *theirs, it->pairs);
      }
    }
  }
  for (std::size_t i = 0; i < neighbours_.size(); ++i) {
    auto& list = neighbours_[i];
    std::sort(list.begin(), list.end(),
              [](const Neighbour& x, const Neighbour& y) { return x.op < y.op; });
    if (!list.empty()) {
      connectedOps_.push_back(i);
    }
    if (!ops_[i].dims.empty()) {
      splittableOps_.push_back(i);
    }
  }
}

std::vector<int> SearchSpace::placement(const std::vector<std::int64_t>& split, int offset) const {
  std::int64_t shards = 1;
  for (std::int64_t s : split) {
    shards *= s;
  }
  std::vector<int> devices(static_cast<std::size_t>(shards));
  for (std::size_t j = 0; j < devices.size(); ++j) {
    devices[j] = static_cast<int>(
        (static_cast<std::int64_t>(offset) + static_cast<std::int64_t>(j)) % devices_);
  }
  return devices;
}

plan::OpChoice SearchSpace::opChoice(std::vector<std::int64_t> split, int offset) const {
  std::vector<int> devices = placement(split, offset);
  return plan::OpChoice{std::move(split), std::move(devices)};
}

bool SearchSpace::contains(std::size_t i, const plan::OpChoice& c) const {
  const OpSpace& s = ops_[i];
  if (c.split.size() != s.extents.size()) {
    return false;
  }
  std::int64_t shards = 1;
  for (std::size_t d = 0; d < c.split.size(); ++d) {
    const std::int64_t most = s.splittable[d] ? s.extents[d] : 1;
    if (c.split[d] < 1 || c.split[d] > most) {
      return false;
    }
    shards *= c.split[d];
    if (shards > devices_) {
      return false;
    }
  }
  if (c.devices.empty() || c.devices[0] < 0 || c.devices[0] >= devices_) {
    return false;
  }
  return c.devices == placement(c.split, c.devices[0]);
}

bool SearchSpace::contains(const plan::PlanChoice& choice) const {
  if (choice.ops.size() != ops_.size()) {
    return false;
  }
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    if (!contains(i, choice.ops[i])) {
      return false;
    }
  }
  return true;
}

std::optional<std::vector<std::vector<std::int64_t>>> SearchSpace::splits(std::size_t i,
                                                                          std::size_t limit) const {
  const OpSpace& s = ops_[i];
  std::vector<std::vector<std::int64_t>> out;
  std::vector<std::int64_t> current(s.extents.size(), 1);
  bool over = false;
  enumerate(s, 0, devices_, current, out, limit, over);
  if (over) {
    return std::nullopt;
  }
  return out;
}

std::vector<std::int64_t>
SearchSpace::alignedSplit(std::size_t i, const Neighbour& from,
                          const std::vector<std::int64_t>& fromSplit) const {
  const OpSpace& s = ops_[i];
  std::vector<std::int64_t> split(s.extents.size(), 1);
  for (const auto& [mine, theirs] : from.pairs) {
    if (s.splittable[mine]) {
      split[mine] = std::min(fromSplit[theirs], s.extents[mine]);
    }
  }
  return split;
}

} // namespace tapestry::search
