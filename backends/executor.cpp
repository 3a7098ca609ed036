#include "backends/executor.hpp"
#include "backends/reference.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <sched.h>

#include "backends/cpu/cpu_backend.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

int usableHardwareThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return CPU_COUNT(&set);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

namespace {

using u32 = std::uint32_t;
constexpr u32 kNone = std::numeric_limits<u32>::max();

Combine parseCombine(const std::string& name) {
  for (Combine c : {Combine::Sum, Combine::Max, Combine::Min, Combine::Prod}) {
    if (name == metakernel::combineName(c)) {
      return c;
    }
  }
  throw InternalError("plan reduction with unknown combine \"" + name + "\"");
}

// One region a device holds during the run: a shard's output tile (or partial),
// a transfer's arrival, or a resident graph input. Numbered as plan::PlanTasks
// numbers its buffers: tiles shard by shard, then transfers, then residents.
struct Slot {
  std::size_t tensor = 0;
  DType dtype = DType::Float32;
  ZRange region;
  int device = 0;
  bool keep = false; // a graph output: gathered at the end, never released
  int uses = 0;      // tasks that read it after it is made
};

struct Task {
  enum class Kind : std::uint8_t { Resident, Transfer, Shard, Step };
  Kind kind = Kind::Shard;
  std::size_t a = 0;        // Resident: resident; Transfer: transfer; Shard: op; Step: reduction
  std::size_t b = 0;        // Shard: shard; Step: step
  int device = 0;           // where it runs and its result lives
  std::vector<u32> deps;    // earlier tasks it must wait for
  std::vector<u32> reads;   // slots it reads (each use is released after the task)
  std::vector<u32> creates; // slots it allocates and fills
};

struct DeviceCounters {
  std::atomic<std::int64_t> live{0};
  std::atomic<std::int64_t> peak{0};
  std::atomic<std::int64_t> allocated{0};
};

// Index dims along which a shard can be cut into pieces that run as separate
// kernel calls writing disjoint parts of its output tiles: not a reduction dim,
// and every IPF row that mentions the dim mentions nothing else.
std::vector<char> separableDims(const graph::Operation& op) {
  const metakernel::Application& app = op.application;
  std::vector<char> ok(app.index.rank(), 1);
  for (std::size_t d : app.reductionDims) {
    ok[d] = 0;
  }
  auto scan = [&](const std::vector<metakernel::PortResult>& ports) {
    for (const metakernel::PortResult& port : ports) {
      for (const IndexProjection& ipf : port.ipfs) {
        const ZMatrix& m = ipf.map().projection();
        for (std::size_t r = 0; r < m.rows(); ++r) {
          std::size_t terms = 0;
          for (std::size_t c = 0; c < m.cols(); ++c) {
            terms += m(r, c) != 0 ? 1 : 0;
          }
          for (std::size_t c = 0; c < m.cols() && terms > 1; ++c) {
            if (m(r, c) != 0) {
              ok[c] = 0;
            }
          }
        }
      }
    }
  };
  scan(app.inputs);
  scan(app.outputs);
  return ok;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// The regions (slots) among `reads` holding parts of `range` of `tensor`, and
// the first that holds all of it (kNone when none does).
u32 findParts(const std::vector<Slot>& slots, const std::vector<u32>& reads, std::size_t tensor,
              const ZRange& range, std::vector<u32>* parts) {
  u32 covering = kNone;
  for (u32 s : reads) {
    const Slot& slot = slots[s];
    if (slot.tensor != tensor || !slot.region.intersects(range)) {
      continue;
    }
    if (parts != nullptr) {
      parts->push_back(s);
    }
    if (covering == kNone && slot.region.contains(range)) {
      covering = s;
    }
  }
  return covering;
}

// Cuts a shard's index range so that, where an input selection spans several
// regions on the device, each piece reads it from one region: every region
// boundary inside the selection is mapped back through its IPF row when that
// row is a single unit term c·i_j + o (c > 0) on a separable dim j. Pieces are
// the grid of the cuts (just the range when nothing needs cutting).
std::vector<ZRange> cutShard(const graph::Operation& op, const plan::Shard& shard,
                             const std::vector<Slot>& slots, const std::vector<u32>& reads,
                             const std::vector<char>& separable) {
  const ZRange& index = shard.index;
  const std::size_t rank = index.rank();
  std::vector<std::vector<std::int64_t>> cuts(rank);
  bool any = false;
  for (std::size_t port = 0; port < op.inputs.size(); ++port) {
    for (std::size_t e = 0; e < shard.inputs[port].size(); ++e) {
      const plan::Selection& sel = shard.inputs[port][e];
      std::vector<u32> parts;
      if (sel.range.isEmpty() || findParts(slots, reads, sel.tensor, sel.range, &parts) != kNone) {
        continue;
      }
      const IndexProjection& ipf = op.application.inputs[port].ipfs[e];
      const ZMatrix& m = ipf.map().projection();
      for (u32 s : parts) {
        const ZRange& region = slots[s].region;
        for (std::size_t d = 0; d < sel.range.rank(); ++d) {
          std::size_t col = 0;
          std::size_t terms = 0;
          for (std::size_t c = 0; c < m.cols(); ++c) {
            if (m(d, c) != 0) {
              col = c;
              ++terms;
            }
          }
          if (terms != 1 || m(d, col) <= 0 || ipf.shape()[d] != 1 || separable[col] == 0) {
            continue;
          }
          for (std::int64_t b : {region.start()[d], region.end()[d]}) {
            if (b <= sel.range.start()[d] || b >= sel.range.end()[d]) {
              continue;
            }
            // Points with c·i + o < b read below the boundary.
            const std::int64_t cut = ceilDiv(b - ipf.map().offset()[d], m(d, col));
            if (cut > index.start()[col] && cut < index.end()[col]) {
              cuts[col].push_back(cut);
              any = true;
            }
          }
        }
      }
    }
  }
  if (!any) {
    return {index};
  }
  std::vector<std::vector<std::int64_t>> bounds(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    bounds[d] = cuts[d];
    bounds[d].push_back(index.start()[d]);
    bounds[d].push_back(index.end()[d]);
    std::sort(bounds[d].begin(), bounds[d].end());
    bounds[d].erase(std::unique(bounds[d].begin(), bounds[d].end()), bounds[d].end());
  }
  std::vector<ZRange> pieces;
  std::vector<std::size_t> at(rank, 0);
  while (true) {
    std::vector<std::int64_t> lo(rank);
    std::vector<std::int64_t> hi(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      lo[d] = bounds[d][at[d]];
      hi[d] = bounds[d][at[d] + 1];
    }
    pieces.emplace_back(ZPoint(std::move(lo)), ZPoint(std::move(hi)));
    std::size_t d = rank;
    while (d > 0) {
      --d;
      if (++at[d] + 1 < bounds[d].size()) {
        break;
      }
      at[d] = 0;
      if (d == 0) {
        return pieces;
      }
    }
    if (rank == 0) {
      return pieces;
    }
  }
}

class Executor {
public:
  Executor(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
           const TensorBuffers& inputs)
      : g_(g), p_(p), backend_(backend) {
    checkInvariant(p.ops.size() == g.operations.size(), "executor: the plan is for this graph");
    bindInputs(inputs);
    for (const graph::Operation& op : g.operations) {
      separable_.push_back(separableDims(op));
    }
    makeSlots();
    makeTasks();
  }

  Execution run(const ExecuteOptions& options, const cost::Simulation* schedule);

private:
  // ---- setup
  void bindInputs(const TensorBuffers& inputs);
  void makeSlots();
  void makeTasks();
  u32 elementOf(std::size_t op, std::size_t tensor) const;
  u32 tile(std::size_t op, std::size_t shard, std::size_t tensor) const {
    return tileBase_[op] + static_cast<u32>(shard) * outCount_[op] + elementOf(op, tensor);
  }
  u32 root(std::size_t reduction) const {
    const plan::Reduction& r = p_.reductions[reduction];
    return tile(r.op, r.shards[0], r.tensor);
  }
  u32 slotOf(const plan::Source& s) const;
  void submit(Task task, std::vector<u32> writes);
  void submitTransfer(std::size_t i);
  bool matches(const cost::Simulation& sim) const;
  std::vector<u32> order(const cost::Simulation* sim);

  // ---- running
  void runTask(const Task& task);
  void runShard(const Task& task);
  void release(const Task& task);
  Buffer allocate(const Slot& slot);
  void charge(int device, std::int64_t bytes);
  void discharge(int device, std::int64_t bytes);
  TensorBuffers gather();

  const graph::ExpandedGraph& g_;
  const plan::ShardPlan& p_;
  Backend& backend_;
  std::vector<const Buffer*> hostInputs_; // per tensor; null unless a graph input

  std::vector<u32> tileBase_, outCount_; // per op
  u32 transferBase_ = 0, residentBase_ = 0;
  std::vector<Slot> slots_;
  std::vector<Buffer> buffers_; // parallel to slots_: set by the creator, reset by the last user

  std::vector<Task> tasks_; // in submission order
  std::vector<u32> lastWriter_;
  std::vector<std::vector<u32>> readers_; // per slot: readers since its last write
  std::vector<char> transferSubmitted_;

  std::unique_ptr<std::atomic<int>[]> remaining_; // per slot: uses still to come
  std::unique_ptr<DeviceCounters[]> memory_;      // per plan device
  std::vector<std::vector<char>> separable_;      // per op: separableDims
  std::atomic<std::size_t> assembled_{0};
  std::atomic<std::size_t> split_{0}; // shards run as several kernel calls
  std::atomic<std::size_t> kernelCalls_{0};
  std::atomic<std::int64_t> assembledBytes_{0};
};

void Executor::bindInputs(const TensorBuffers& inputs) {
  hostInputs_.assign(g_.tensors.size(), nullptr);
  for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
    const graph::Tensor& tensor = g_.tensors[t];
    if (!tensor.isGraphInput()) {
      continue;
    }
    hostInputs_[t] = &graphInput(tensor, inputs);
  }
}

u32 Executor::elementOf(std::size_t op, std::size_t tensor) const {
  u32 k = 0;
  for (const graph::PortTensors& port : g_.operations[op].outputs) {
    for (std::size_t t : port.tensors) {
      if (t == tensor) {
        return k;
      }
      ++k;
    }
  }
  throw InternalError("executor: operation " + g_.operations[op].name + " does not write tensor " +
                      g_.tensors[tensor].name);
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
  } else if (hostInputs_[t.tensor] == nullptr) {
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

// ---------------------------------------------------------------- running

void Executor::charge(int device, std::int64_t bytes) {
  DeviceCounters& c = memory_[static_cast<std::size_t>(device)];
  const std::int64_t live = c.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  c.allocated.fetch_add(bytes, std::memory_order_relaxed);
  std::int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (live > peak && !c.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void Executor::discharge(int device, std::int64_t bytes) {
  memory_[static_cast<std::size_t>(device)].live.fetch_sub(bytes, std::memory_order_relaxed);
}

Buffer Executor::allocate(const Slot& slot) {
  Buffer buffer = backend_.allocate(slot.dtype, slot.region, slot.device);
  charge(slot.device, buffer.byteSize());
  return buffer;
}

void Executor::runShard(const Task& task) {
  const graph::Operation& op = g_.operations[task.a];
  const plan::Shard& shard = p_.ops[task.a].shards[task.b];
  std::vector<PortViews> outputs(op.outputs.size());
  u32 e = 0;
  for (std::size_t port = 0; port < op.outputs.size(); ++port) {
    for (std::size_t j = 0; j < shard.outputs[port].size(); ++j, ++e) {
      const u32 s = tileBase_[task.a] + static_cast<u32>(task.b) * outCount_[task.a] + e;
      if (slots_[s].region.isEmpty()) {
        outputs[port].emplace_back();
        continue;
      }
      buffers_[s] = allocate(slots_[s]);
      outputs[port].push_back(buffers_[s].view());
    }
  }
  if (shard.index.isEmpty()) {
    return;
  }
  const std::vector<ZRange> pieces = cutShard(op, shard, slots_, task.reads, separable_[task.a]);
  if (pieces.size() > 1) {
    split_.fetch_add(1, std::memory_order_relaxed);
  }
  for (const ZRange& piece : pieces) {
    std::vector<std::vector<ZRange>> selections;
    if (pieces.size() == 1) {
      for (const std::vector<plan::Selection>& port : shard.inputs) {
        selections.emplace_back();
        for (const plan::Selection& sel : port) {
          selections.back().push_back(sel.range);
        }
      }
    } else {
      selections = shardSelections(op, piece).inputs;
    }
    std::vector<Buffer> scratch; // assembled selections, freed after the kernel
    std::vector<PortViews> inputs(op.inputs.size());
    for (std::size_t port = 0; port < op.inputs.size(); ++port) {
      for (std::size_t j = 0; j < selections[port].size(); ++j) {
        const ZRange& range = selections[port][j];
        const std::size_t tensor = op.inputs[port].tensors[j];
        if (range.isEmpty()) {
          inputs[port].emplace_back(); // a list element the piece does not touch
          continue;
        }
        std::vector<u32> parts;
        const u32 covering = findParts(slots_, task.reads, tensor, range, &parts);
        if (covering != kNone) {
          inputs[port].push_back(buffers_[covering].view());
          continue;
        }
        // Several regions that no cut separates (or none, for a tensor whose
        // producer had an empty index space and wrote nothing: zeros): copy
        // them into one buffer for this kernel call.
        const Slot piece_{
            tensor, parseDType(g_.tensors[tensor].type.dtype), range, shard.device, false, 0};
        Buffer buffer = allocate(piece_);
        for (u32 s : parts) {
          backend_.copyOverlap(buffers_[s].view(), buffer.view());
        }
        assembled_.fetch_add(1, std::memory_order_relaxed);
        assembledBytes_.fetch_add(buffer.byteSize(), std::memory_order_relaxed);
        inputs[port].push_back(buffer.view());
        scratch.push_back(std::move(buffer));
      }
    }
    backend_.runKernel(op, piece, inputs, outputs, shard.device);
    kernelCalls_.fetch_add(1, std::memory_order_relaxed);
    for (const Buffer& buffer : scratch) {
      discharge(shard.device, buffer.byteSize());
    }
  }
}

void Executor::runTask(const Task& task) {
  switch (task.kind) {
  case Task::Kind::Resident: {
    const plan::Resident& r = p_.residents[task.a];
    const u32 s = task.creates[0];
    // Counted as allocated either way, so that release() balances it.
    Buffer shared =
        backend_.shareRegion(*hostInputs_[r.tensor], slots_[s].region, slots_[s].device);
    if (shared.data() != nullptr) {
      charge(slots_[s].device, shared.byteSize());
      buffers_[s] = std::move(shared);
      return;
    }
    buffers_[s] = allocate(slots_[s]);
    backend_.copyRegion(hostInputs_[r.tensor]->view(), buffers_[s].view(), r.region);
    return;
  }
  case Task::Kind::Transfer: {
    const plan::Transfer& t = p_.transfers[task.a];
    const u32 s = task.creates[0];
    if (t.region.isEmpty()) {
      return;
    }
    const TensorView source =
        task.reads.empty() ? hostInputs_[t.tensor]->view() : buffers_[task.reads[0]].view();
    buffers_[s] = allocate(slots_[s]);
    backend_.copyRegion(source, buffers_[s].view(), t.region);
    return;
  }
  case Task::Kind::Shard:
    runShard(task);
    return;
  case Task::Kind::Step: {
    const plan::Reduction& red = p_.reductions[task.a];
    backend_.combine(parseCombine(red.combine), buffers_[task.reads[1]].view(),
                     buffers_[task.reads[0]].view(), red.region);
    return;
  }
  }
}

// Drops every use the task made; a region no later task needs is freed.
void Executor::release(const Task& task) {
  auto drop = [this](u32 s) {
    const Slot& slot = slots_[s];
    if (slot.keep) {
      return;
    }
    if (buffers_[s].data() != nullptr) {
      discharge(slot.device, buffers_[s].byteSize());
    }
    buffers_[s] = Buffer();
  };
  for (u32 s : task.reads) {
    if (remaining_[s].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      drop(s);
    }
  }
  for (u32 s : task.creates) {
    if (slots_[s].uses == 0) {
      drop(s);
    }
  }
}

TensorBuffers Executor::gather() {
  TensorBuffers out;
  for (std::size_t t : g_.outputs) {
    const graph::Tensor& tensor = g_.tensors[t];
    const ZRange bounds = ZRange::fromShape(ZPoint(tensor.type.shape));
    Buffer host = Buffer::host(parseDType(tensor.type.dtype), bounds);
    if (tensor.isGraphInput()) {
      backend_.copyRegion(hostInputs_[t]->view(), host.view(), bounds);
    } else {
      const std::size_t op = *tensor.producer;
      const plan::OpPlan& opPlan = p_.ops[op];
      const bool partial = !opPlan.shards.empty() && opPlan.shards[0].partial;
      if (partial) {
        for (std::size_t r = opPlan.reductions.first; r < opPlan.reductions.second; ++r) {
          const plan::Reduction& red = p_.reductions[r];
          if (red.tensor == t) {
            backend_.copyRegion(buffers_[root(r)].view(), host.view(), red.region);
          }
        }
      } else {
        for (std::size_t k = 0; k < opPlan.shards.size(); ++k) {
          const u32 s = tile(op, k, t);
          if (!slots_[s].region.isEmpty()) {
            backend_.copyRegion(buffers_[s].view(), host.view(), slots_[s].region);
          }
        }
      }
    }
    out.emplace(tensor.name, std::move(host));
  }
  backend_.synchronize();
  return out;
}

bool Executor::matches(const cost::Simulation& sim) const {
  if (sim.shards.size() != p_.ops.size() || sim.transfers.size() != p_.transfers.size()) {
    return false;
  }
  for (std::size_t op = 0; op < p_.ops.size(); ++op) {
    if (sim.shards[op].size() != p_.ops[op].shards.size()) {
      return false;
    }
  }
  return true;
}

// The order workers take tasks in. Without a schedule: submission order. With
// the plan's simulated schedule: by simulated start (ties in submission order;
// a reduction step's start is estimated as the end of what it waits for), and
// every allocation on a device also waits until the regions the simulation
// has freed there by then are freed for real. What is live on a device at an
// allocation was then live in the simulation at the same step, so the measured
// peak stays within the predicted one (assembled scratch aside). Every added
// wait points to a task earlier in the order, so no worker waits forever.
std::vector<u32> Executor::order(const cost::Simulation* sim) {
  const std::size_t n = tasks_.size();
  std::vector<u32> order(n);
  for (u32 t = 0; t < n; ++t) {
    order[t] = t;
  }
  if (sim == nullptr || !matches(*sim)) {
    return order;
  }
  std::vector<double> start(n, 0.0);
  std::vector<double> end(n, 0.0);
  for (u32 t = 0; t < n; ++t) {
    const Task& task = tasks_[t];
    switch (task.kind) {
    case Task::Kind::Resident:
      break;
    case Task::Kind::Transfer:
      start[t] = sim->transfers[task.a].start;
      end[t] = sim->transfers[task.a].end;
      break;
    case Task::Kind::Shard:
      start[t] = sim->shards[task.a][task.b].start;
      end[t] = sim->shards[task.a][task.b].end;
      break;
    case Task::Kind::Step:
      for (u32 d : task.deps) {
        start[t] = std::max(start[t], end[d]);
      }
      end[t] = start[t];
      break;
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](u32 a, u32 b) { return start[a] < start[b]; });
  std::vector<u32> position(n);
  for (u32 i = 0; i < n; ++i) {
    position[order[i]] = i;
  }

  // When each region is freed in the simulation, and whose end frees it.
  std::vector<double> freeAt(slots_.size(), 0.0);
  std::vector<std::vector<u32>> users(slots_.size());
  for (u32 t = 0; t < n; ++t) {
    for (u32 s : tasks_[t].creates) {
      users[s].push_back(t); // freed after its creator when nothing reads it
      freeAt[s] = std::max(freeAt[s], end[t]);
    }
  }
  for (u32 t = 0; t < n; ++t) {
    for (u32 s : tasks_[t].reads) {
      users[s].push_back(t);
      freeAt[s] = std::max(freeAt[s], end[t]);
    }
  }
  const auto nDev = static_cast<std::size_t>(std::max(p_.deviceCount, 1));
  std::vector<std::vector<u32>> freeing(nDev); // per device, by simulated free time
  for (u32 s = 0; s < slots_.size(); ++s) {
    if (!slots_[s].keep && !slots_[s].region.isEmpty()) {
      freeing[static_cast<std::size_t>(slots_[s].device)].push_back(s);
    }
  }
  for (std::vector<u32>& list : freeing) {
    std::stable_sort(list.begin(), list.end(), [&](u32 a, u32 b) { return freeAt[a] < freeAt[b]; });
  }
  std::vector<std::size_t> next(nDev, 0);
  std::vector<std::vector<u32>> pending(nDev); // freed by then, not yet waited for
  for (u32 t : order) {
    Task& task = tasks_[t];
    bool allocates = false;
    for (u32 s : task.creates) {
      allocates = allocates || !slots_[s].region.isEmpty();
    }
    if (!allocates) {
      continue;
    }
    const auto d = static_cast<std::size_t>(task.device);
    while (next[d] < freeing[d].size() && freeAt[freeing[d][next[d]]] <= start[t]) {
      pending[d].push_back(freeing[d][next[d]++]);
    }
    std::vector<u32> still;
    for (u32 s : pending[d]) {
      bool all = true;
      for (u32 u : users[s]) {
        if (u == t) {
          continue;
        }
        if (position[u] < position[t]) {
          task.deps.push_back(u);
        } else {
          all = false;
        }
      }
      if (!all) {
        still.push_back(s);
      }
    }
    pending[d] = std::move(still);
    std::sort(task.deps.begin(), task.deps.end());
    task.deps.erase(std::unique(task.deps.begin(), task.deps.end()), task.deps.end());
  }
  return order;
}

Execution Executor::run(const ExecuteOptions& options, const cost::Simulation* schedule) {
  const auto nDev = static_cast<std::size_t>(std::max(p_.deviceCount, 1));
  memory_ = std::make_unique<DeviceCounters[]>(nDev);
  remaining_ = std::make_unique<std::atomic<int>[]>(slots_.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    remaining_[s].store(slots_[s].uses, std::memory_order_relaxed);
  }

  // Devices become workers; with fewer workers, one serves several devices.
  std::vector<int> used;
  for (const Task& task : tasks_) {
    checkInvariant(task.device >= 0 && static_cast<std::size_t>(task.device) < nDev,
                   "executor: a task's device is one of the plan's");
    used.push_back(task.device);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  const int cores = usableHardwareThreads();
  const int cap = options.threads > 0 ? options.threads : cores;
  const int workers = std::max(1, std::min(cap, static_cast<int>(used.size())));
  std::vector<int> workerOf(nDev, 0);
  for (std::size_t i = 0; i < used.size(); ++i) {
    workerOf[static_cast<std::size_t>(used[i])] = static_cast<int>(i) % workers;
  }
  std::vector<std::vector<u32>> lists(static_cast<std::size_t>(workers));
  for (u32 t : order(schedule)) {
    lists[static_cast<std::size_t>(workerOf[static_cast<std::size_t>(tasks_[t].device)])].push_back(
        t);
  }

  int blasThreads = 0;
  if (dynamic_cast<CpuBackend*>(&backend_) != nullptr) {
    blasThreads = options.blasThreads > 0 ? options.blasThreads : std::max(1, cores / workers);
    CpuBackend::setBlasThreads(blasThreads);
  }

  auto done = std::make_unique<std::atomic<bool>[]>(tasks_.size());
  std::atomic<bool> failed{false};
  std::mutex errorMutex;
  std::exception_ptr error;
  auto work = [&](std::size_t w) {
    for (u32 t : lists[w]) {
      const Task& task = tasks_[t];
      for (u32 d : task.deps) {
        while (!done[d].load(std::memory_order_acquire)) {
          done[d].wait(false, std::memory_order_acquire);
        }
      }
      if (!failed.load(std::memory_order_acquire)) {
        try {
          runTask(task);
        } catch (...) {
          std::lock_guard<std::mutex> lock(errorMutex);
          if (!error) {
            error = std::current_exception();
          }
          failed.store(true, std::memory_order_release);
        }
      }
      release(task);
      done[t].store(true, std::memory_order_release);
      done[t].notify_all();
    }
  };

  const double start = Backend::now();
  {
    std::vector<std::jthread> threads;
    for (std::size_t w = 1; w < lists.size(); ++w) {
      threads.emplace_back(work, w);
    }
    work(0);
  }
  backend_.synchronize();
  const double end = Backend::now();
  if (error) {
    std::rethrow_exception(error);
  }

  Execution result;
  ExecutionStats& stats = result.stats;
  stats.wallSeconds = end - start;
  stats.workers = workers;
  stats.blasThreads = blasThreads;
  stats.devices.resize(nDev);
  for (std::size_t d = 0; d < nDev; ++d) {
    stats.devices[d].peakBytes = memory_[d].peak.load();
    stats.devices[d].allocatedBytes = memory_[d].allocated.load();
  }
  for (const Task& task : tasks_) {
    switch (task.kind) {
    case Task::Kind::Shard:
      stats.shards += p_.ops[task.a].shards[task.b].index.isEmpty() ? 0 : 1;
      break;
    case Task::Kind::Transfer:
      ++stats.transfers;
      stats.transferBytes += p_.transfers[task.a].bytes;
      break;
    case Task::Kind::Step:
      ++stats.reductionSteps;
      break;
    case Task::Kind::Resident:
      break;
    }
  }
  stats.kernelCalls = kernelCalls_.load();
  stats.splitShards = split_.load();
  stats.assembledSelections = assembled_.load();
  stats.assembledBytes = assembledBytes_.load();
  result.outputs = gather();
  for (const auto& [name, buffer] : result.outputs) {
    stats.outputBytes += buffer.byteSize();
  }
  return result;
}

} // namespace

Execution execute(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
                  const TensorBuffers& inputs, const ExecuteOptions& options,
                  const cost::Simulation* schedule) {
  Executor executor(g, p, backend, inputs);
  return executor.run(options, schedule);
}

} // namespace tapestry::backend
