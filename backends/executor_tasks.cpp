// From a plan to the executor's slots (every region a device holds) and
// tasks (residents, transfers, shards, reduction steps) with their
// dependencies, in submission order.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/executor_internal.hpp"
#include "backends/reference.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::detail {

void Executor::bindInputs(const TensorBuffers* inputs) {
  hostInputs_.assign(g_.tensors.size(), nullptr);
  for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
    const graph::Tensor& tensor = g_.tensors[t];
    if (inputs == nullptr || !tensor.isGraphInput()) {
      continue;
    }
    hostInputs_[t] = &graphInput(tensor, *inputs);
  }
}

u32 Executor::elementOf(std::size_t op, std::size_t tensor) const {
  return plan::outputElementOf(g_, op, tensor);
}

void Executor::makeSlots() {
  std::vector<char> isOutput(g_.tensors.size(), 0);
  for (std::size_t t : g_.outputs) {
    isOutput[t] = 1;
  }
  auto dtypeOfTensor = [&](std::size_t t) { return parseDType(g_.tensors[t].type.dtype); };
  const std::size_t nOps = g_.operations.size();
  tileBase_.resize(nOps);
  outCount_.resize(nOps);
  for (std::size_t op = 0; op < nOps; ++op) {
    u32 n = 0;
    for (const graph::PortTensors& port : g_.operations[op].outputs) {
      n += static_cast<u32>(port.tensors.size());
    }
    outCount_[op] = n;
    tileBase_[op] = static_cast<u32>(slots_.size());
    for (const plan::Shard& shard : p_.ops[op].shards) {
      for (const std::vector<plan::Selection>& port : shard.outputs) {
        for (const plan::Selection& sel : port) {
          slots_.push_back(Slot{sel.tensor, dtypeOfTensor(sel.tensor), sel.range, shard.device,
                                isOutput[sel.tensor] != 0 && !shard.partial, 0});
        }
      }
    }
    checkInvariant(slots_.size() == tileBase_[op] + p_.ops[op].shards.size() * n,
                   "executor: one selection per output tensor");
  }
  for (std::size_t r = 0; r < p_.reductions.size(); ++r) {
    if (isOutput[p_.reductions[r].tensor] != 0) {
      slots_[root(r)].keep = true;
    }
  }
  transferBase_ = static_cast<u32>(slots_.size());
  for (const plan::Transfer& t : p_.transfers) {
    slots_.push_back(Slot{t.tensor, dtypeOfTensor(t.tensor), t.region, t.to, false, 0});
  }
  residentBase_ = static_cast<u32>(slots_.size());
  for (const plan::Resident& r : p_.residents) {
    slots_.push_back(Slot{r.tensor, dtypeOfTensor(r.tensor), r.region, r.device, false, 0});
  }
  buffers_.resize(slots_.size());
}

namespace {

using Layout = Backend::Layout;
// Per operation, each tensor it reads or writes with its port's layout.
using PortLayouts = std::vector<std::vector<std::pair<std::size_t, Layout>>>;

// A kernel that takes either layout converts between them only by a strided
// walk, far slower than a convolution's own copies: around it every operand
// of the result's shape is laid out alike. So a tensor that stays row-major
// (a graph input or output, one a kernel does not take channels last) keeps
// the tensors linked to it through such kernels row-major too (fits 0), and
// so does a broadcast operand, walked channels last in runs of C elements:
// but for a per-channel operand [N or 1, C, 1, 1] of kPerChannelRun channels
// or more, whose runs are whole vectors (a squeeze-excitation's scale:
// EfficientNet-B0's and MobileNetV3's blocks went row-major around it, every
// convolution copying into and out of oneDNN's layout, 1.85-2.05x ORT's time;
// docs/performance.md). A tensor of one row and column is the same in both
// layouts.
constexpr std::int64_t kPerChannelRun = 16;

void keepRowMajorAround(const graph::ExpandedGraph& g, const PortLayouts& ports,
                        std::vector<char>& fits) {
  auto flat = [&](std::size_t t) {
    const std::vector<std::int64_t>& shape = g.tensors[t].type.shape;
    return shape.size() == 4 && shape[2] * shape[3] <= 1;
  };
  auto broadcast = [&](std::size_t t, const std::vector<std::int64_t>& shape) {
    const std::vector<std::int64_t>& own = g.tensors[t].type.shape;
    if (own.size() == 4 && shape.size() == 4 && (own[0] == 1 || own[0] == shape[0]) &&
        own[1] == shape[1] && own[1] >= kPerChannelRun && own[2] == 1 && own[3] == 1) {
      return false; // per channel, in runs of whole vectors
    }
    bool stretched = own.size() != shape.size();
    std::int64_t elements = 1;
    for (std::size_t d = 0; d < own.size(); ++d) {
      stretched = stretched || (own[d] == 1 && shape[d] > 1);
      elements *= own[d];
    }
    return stretched && elements != 1;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t o = 0; o < g.operations.size(); ++o) {
      const graph::Operation& op = g.operations[o];
      bool takes = false, preferring = false, conflict = false;
      for (const auto& [t, layout] : ports[o]) {
        takes = takes || layout == Layout::Takes;
        preferring = preferring || layout == Layout::Prefers;
      }
      if (!takes || preferring || op.outputs.empty() || op.outputs[0].tensors.empty()) {
        continue;
      }
      const std::vector<std::int64_t>& shape = g.tensors[op.outputs[0].tensors[0]].type.shape;
      for (const auto& [t, layout] : ports[o]) {
        if (layout == Layout::Takes) {
          conflict = conflict || broadcast(t, shape) || (fits[t] == 0 && !flat(t));
        }
      }
      for (const auto& [t, layout] : ports[o]) {
        if (conflict && layout == Layout::Takes && fits[t] != 0) {
          fits[t] = 0;
          changed = true;
        }
      }
    }
  }
}

} // namespace

void Executor::chooseLayouts() {
  const std::size_t nTensors = g_.tensors.size();
  std::vector<char> isOutput(nTensors, 0);
  for (std::size_t t : g_.outputs) {
    isOutput[t] = 1;
  }
  // Per tensor: whether it may be channels last, and whether a port that
  // prefers the layout reads or writes it.
  std::vector<char> fits(nTensors, 1);
  std::vector<char> prefers(nTensors, 0);
  for (std::size_t t = 0; t < nTensors; ++t) {
    const graph::Tensor& tensor = g_.tensors[t];
    const DType dtype = parseDType(tensor.type.dtype);
    if (tensor.isGraphInput() || isOutput[t] != 0 || tensor.type.shape.size() != 4 ||
        (dtype != DType::Float32 && dtype != DType::BFloat16)) {
      fits[t] = 0;
    }
  }
  PortLayouts ports(g_.operations.size());
  for (std::size_t o = 0; o < g_.operations.size(); ++o) {
    const graph::Operation& op = g_.operations[o];
    for (std::size_t port = 0; port < op.inputs.size(); ++port) {
      for (std::size_t t : op.inputs[port].tensors) {
        ports[o].emplace_back(t, backend_.channelsLast(op.kernel, false, port));
      }
    }
    for (std::size_t port = 0; port < op.outputs.size(); ++port) {
      for (std::size_t t : op.outputs[port].tensors) {
        ports[o].emplace_back(t, backend_.channelsLast(op.kernel, true, port));
      }
    }
    for (const auto& [t, layout] : ports[o]) {
      fits[t] = static_cast<char>(fits[t] != 0 && layout != Layout::No);
      prefers[t] = static_cast<char>(prefers[t] != 0 || layout == Layout::Prefers);
    }
  }
  keepRowMajorAround(g_, ports, fits);
  // Groups of fitting tensors linked through operations (union-find); a
  // group is kept channels last when one of its tensors meets a preferring
  // port, so elementwise chains without a convolution stay row-major.
  std::vector<std::size_t> parent(nTensors);
  for (std::size_t t = 0; t < nTensors; ++t) {
    parent[t] = t;
  }
  auto find = [&](std::size_t t) {
    while (parent[t] != t) {
      parent[t] = parent[parent[t]];
      t = parent[t];
    }
    return t;
  };
  for (const auto& op : ports) {
    std::optional<std::size_t> first;
    for (const auto& [t, layout] : op) {
      if (fits[t] == 0) {
        continue;
      }
      if (!first) {
        first = find(t);
      } else {
        parent[find(t)] = *first;
      }
    }
  }
  std::vector<char> groupPrefers(nTensors, 0);
  for (std::size_t t = 0; t < nTensors; ++t) {
    if (fits[t] != 0 && prefers[t] != 0) {
      groupPrefers[find(t)] = 1;
    }
  }
  lastTensors_.assign(nTensors, 0);
  for (std::size_t t = 0; t < nTensors; ++t) {
    lastTensors_[t] = static_cast<char>(fits[t] != 0 && groupPrefers[find(t)] != 0);
  }
  // Shard tiles, and the transfers of those tensors too: a shard that reads a
  // row-major arrival (a spatial shard's halo rows, a channel split's other
  // half) made its convolution copy the whole input into the primitive's
  // layout on every call. MobileNetV2's depthwise shards split by rows took
  // 3-6x their share of the whole convolution so (tapestry bench, 2026-11-28).
  for (u32 s = 0; s < residentBase_; ++s) {
    slots_[s].channelsLast =
        lastTensors_[slots_[s].tensor] != 0 && !slots_[s].keep && !slots_[s].region.isEmpty();
  }
}

u32 Executor::slotOf(const plan::Source& s) const {
  switch (s.kind) {
  case plan::Source::Kind::Shard:
    return tile(s.index, s.shard, s.tensor);
  case plan::Source::Kind::Reduction:
    return root(s.index);
  case plan::Source::Kind::Transfer:
    return transferBase_ + static_cast<u32>(s.index);
  case plan::Source::Kind::Resident:
    return residentBase_ + static_cast<u32>(s.index);
  }
  throw InternalError("executor: unknown source kind");
}

// Adds a task in submission order. Its dependencies are the tasks that last
// wrote what it reads or writes, and those that read what it writes since then
// (a reduction step adding into a partial must wait for the partial's readers).
void Executor::submit(Task task, std::vector<u32> writes) {
  const auto id = static_cast<u32>(tasks_.size());
  std::vector<u32>& deps = task.deps;
  for (u32 s : task.reads) {
    if (lastWriter_[s] != kNone) {
      deps.push_back(lastWriter_[s]);
    }
  }
  for (u32 s : writes) {
    if (lastWriter_[s] != kNone) {
      deps.push_back(lastWriter_[s]);
    }
    deps.insert(deps.end(), readers_[s].begin(), readers_[s].end());
    readers_[s].clear();
    lastWriter_[s] = id;
  }
  for (u32 s : task.reads) {
    if (std::find(writes.begin(), writes.end(), s) == writes.end()) {
      readers_[s].push_back(id);
    }
    ++slots_[s].uses;
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  deps.erase(std::remove(deps.begin(), deps.end(), id), deps.end());
  tasks_.push_back(std::move(task));
}

void Executor::submitTransfer(std::size_t i) {
  const plan::Transfer& t = p_.transfers[i];
  if (transferSubmitted_[i] != 0) {
    throw InternalError("executor: transfer " + std::to_string(i) + " is submitted twice");
  }
  transferSubmitted_[i] = 1;
  Task task;
  task.kind = Task::Kind::Transfer;
  task.a = i;
  task.device = t.to; // pulled by its destination
  if (t.afterShard) {
    task.reads.push_back(tile(t.afterShard->first, t.afterShard->second, t.tensor));
  } else if (t.afterReduction) {
    task.reads.push_back(root(*t.afterReduction));
  } else if (t.afterTransfer) {
    if (*t.afterTransfer >= i || transferSubmitted_[*t.afterTransfer] == 0) {
      throw InternalError("executor: transfer " + std::to_string(i) + " relays transfer " +
                          std::to_string(*t.afterTransfer) + ", not submitted before it");
    }
    task.reads.push_back(transferBase_ + static_cast<u32>(*t.afterTransfer));
  } else if (!g_.tensors[t.tensor].isGraphInput()) {
    throw InternalError("executor: transfer " + std::to_string(i) + " of " +
                        g_.tensors[t.tensor].name + " has no source");
  }
  const u32 slot = transferBase_ + static_cast<u32>(i);
  task.creates.push_back(slot);
  submit(std::move(task), {slot});
}

// The plan's submission order (plan.hpp, simulator.hpp): residents, then op by
// op in topological order its input transfers, its shards, and its reduction
// steps, each after the move of its partial.
void Executor::makeTasks() {
  lastWriter_.assign(slots_.size(), kNone);
  readers_.assign(slots_.size(), {});
  transferSubmitted_.assign(p_.transfers.size(), 0);
  for (std::size_t r = 0; r < p_.residents.size(); ++r) {
    Task task;
    task.kind = Task::Kind::Resident;
    task.a = r;
    task.device = p_.residents[r].device;
    const u32 slot = residentBase_ + static_cast<u32>(r);
    task.creates.push_back(slot);
    submit(std::move(task), {slot});
  }
  for (std::size_t op : g_.order) {
    const plan::OpPlan& opPlan = p_.ops[op];
    for (std::size_t i = opPlan.inputTransfers.first; i < opPlan.inputTransfers.second; ++i) {
      submitTransfer(i);
    }
    for (std::size_t k = 0; k < opPlan.shards.size(); ++k) {
      const plan::Shard& shard = opPlan.shards[k];
      Task task;
      task.kind = Task::Kind::Shard;
      task.a = op;
      task.b = k;
      task.device = shard.device;
      for (const plan::Source& s : shard.reads) {
        task.reads.push_back(slotOf(s));
      }
      for (u32 e = 0; e < outCount_[op]; ++e) {
        task.creates.push_back(tileBase_[op] + static_cast<u32>(k) * outCount_[op] + e);
      }
      std::vector<u32> writes = task.creates;
      submit(std::move(task), std::move(writes));
    }
    for (std::size_t r = opPlan.reductions.first; r < opPlan.reductions.second; ++r) {
      const plan::Reduction& red = p_.reductions[r];
      for (std::size_t s = 0; s < red.steps.size(); ++s) {
        const plan::Reduction::Step& step = red.steps[s];
        u32 moved = tile(red.op, red.shards[step.from], red.tensor);
        if (step.transfer) {
          submitTransfer(*step.transfer);
          moved = transferBase_ + static_cast<u32>(*step.transfer);
        }
        const u32 into = tile(red.op, red.shards[step.into], red.tensor);
        Task task;
        task.kind = Task::Kind::Step;
        task.a = r;
        task.b = s;
        task.device = p_.ops[red.op].shards[red.shards[step.into]].device;
        task.reads = {moved, into};
        submit(std::move(task), {into});
      }
    }
  }
  for (std::size_t i = 0; i < transferSubmitted_.size(); ++i) {
    if (transferSubmitted_[i] == 0) {
      throw InternalError("executor: transfer " + std::to_string(i) +
                          " belongs to no operation's slice of the plan");
    }
  }
}

} // namespace tapestry::backend::detail
