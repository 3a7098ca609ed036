#include "backends/executor.hpp"
#include "backends/await_flag.hpp"
#include "backends/executor_internal.hpp"
#include "backends/reference.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
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

namespace detail {

namespace {

Combine parseCombine(const std::string& name) {
  for (Combine c : {Combine::Sum, Combine::Max, Combine::Min, Combine::Prod}) {
    if (name == metakernel::combineName(c)) {
      return c;
    }
  }
  throw InternalError("plan reduction with unknown combine \"" + name + "\"");
}

} // namespace

// ---------------------------------------------------------------- preparing

Executor::Executor(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
                   const TensorBuffers* inputs)
    : g_(g), p_(p), backend_(backend) {
  checkInvariant(p.ops.size() == g.operations.size(), "executor: the plan is for this graph");
  hostBuffers_ = dynamic_cast<CpuBackend*>(&backend_) != nullptr;
  bindInputs(inputs);
  for (const graph::Operation& op : g.operations) {
    separable_.push_back(separableDims(op));
  }
  makeSlots();
  makeTasks();
}

namespace {

// What a present view points to while a call is prepared: its data pointers
// are filled in at run time, and a prepared kernel never reads them before.
alignas(64) std::byte placeholder[64];

} // namespace

bool Executor::aliasesInput(u32 s) const {
  if (!backend_.readsHostInPlace() || hostInputs_[slots_[s].tensor] == nullptr ||
      slots_[s].region.isEmpty()) {
    return false;
  }
  if (s >= residentBase_) {
    return true;
  }
  // A transfer from the host: a graph input read in place (a transfer with a
  // source slot moves another device's region, and stays a copy).
  if (s >= transferBase_) {
    const std::size_t i = s - transferBase_;
    const plan::Transfer& t = p_.transfers[i];
    return !t.afterShard && !t.afterReduction && !t.afterTransfer;
  }
  return false;
}

namespace {

// Slots up to this size are kept across runs, up to this many bytes in all.
constexpr std::int64_t kPersistentSlotBytes = std::int64_t{64} << 10;
constexpr std::int64_t kPersistentBytes = std::int64_t{64} << 20;

} // namespace

void Executor::makeSlotViews() {
  slotViews_.assign(slots_.size(), TensorView{});
  alias_.assign(slots_.size(), 0);
  persistent_.assign(slots_.size(), 0);
  std::int64_t kept = 0;
  for (u32 s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    TensorView& view = slotViews_[s];
    const bool input = s >= transferBase_ && g_.tensors[slot.tensor].isGraphInput();
    if (aliasesInput(s)) {
      alias_[s] = 1;
      view = hostInputs_[slot.tensor]->view().sub(slot.region);
      view.device = slot.device;
    } else {
      view.dtype = slot.dtype;
      view.region = slot.region;
      view.strides = slot.channelsLast ? channelsLastStrides(slot.region.shape().coords())
                                       : rowMajorStrides(slot.region.shape().coords());
      view.device = slot.device;
    }
    view.constant = input && g_.tensors[slot.tensor].constant;
    const std::int64_t bytes =
        slot.region.size() * static_cast<std::int64_t>(dtypeSize(slot.dtype));
    if (hostBuffers_ && alias_[s] == 0 && bytes > 0 && bytes <= kPersistentSlotBytes &&
        kept + bytes <= kPersistentBytes) {
      persistent_[s] = 1;
      kept += bytes;
    }
  }
}

// The shard's kernel calls, as runShard used to make them on every run: the
// output views are its tiles; each piece's inputs read the one region that
// covers their selection, or a scratch buffer the parts are copied into.
void Executor::prepareShard(u32 id) {
  const Task& task = tasks_[id];
  const graph::Operation& op = g_.operations[task.a];
  const plan::Shard& shard = p_.ops[task.a].shards[task.b];
  auto ready = [](TensorView view) {
    view.data = placeholder;
    return view;
  };
  auto shardPlan = std::make_unique<PreparedShard>();
  if (shard.index.isEmpty()) {
    prepared_[id] = std::move(shardPlan);
    return;
  }
  std::vector<PortViews> outputs(op.outputs.size());
  std::vector<ViewSource> outputSources;
  u32 e = 0;
  for (std::size_t port = 0; port < op.outputs.size(); ++port) {
    for (std::size_t j = 0; j < shard.outputs[port].size(); ++j, ++e) {
      const u32 s = tileBase_[task.a] + static_cast<u32>(task.b) * outCount_[task.a] + e;
      if (slots_[s].region.isEmpty()) {
        outputs[port].emplace_back();
        outputSources.push_back({});
        continue;
      }
      outputs[port].push_back(ready(slotViews_[s]));
      outputSources.push_back({ViewSource::Kind::Slot, s});
    }
  }
  const std::vector<ZRange> pieces = cutShard(op, shard, slots_, task.reads, separable_[task.a]);
  for (const ZRange& index : pieces) {
    PreparedPiece piece;
    piece.index = index;
    piece.outputs = outputs;
    piece.outputSources = outputSources;
    std::vector<std::vector<ZRange>> selections;
    if (pieces.size() == 1) {
      for (const std::vector<plan::Selection>& port : shard.inputs) {
        selections.emplace_back();
        for (const plan::Selection& sel : port) {
          selections.back().push_back(sel.range);
        }
      }
    } else {
      selections = shardSelections(op, index).inputs;
    }
    piece.inputs.resize(op.inputs.size());
    for (std::size_t port = 0; port < op.inputs.size(); ++port) {
      for (std::size_t j = 0; j < selections[port].size(); ++j) {
        const ZRange& range = selections[port][j];
        const std::size_t tensor = op.inputs[port].tensors[j];
        if (range.isEmpty()) {
          piece.inputs[port].emplace_back(); // a list element the piece does not touch
          piece.inputSources.push_back({});
          continue;
        }
        std::vector<u32> parts;
        const u32 covering = findParts(slots_, task.reads, tensor, range, &parts);
        if (covering != kNone) {
          piece.inputs[port].push_back(ready(slotViews_[covering]));
          piece.inputSources.push_back({ViewSource::Kind::Slot, covering});
          continue;
        }
        // Several regions that no cut separates (or none, for a tensor whose
        // producer had an empty index space and wrote nothing: zeros): copied
        // into one buffer for this kernel call.
        Slot scratch{tensor, parseDType(g_.tensors[tensor].type.dtype), range, shard.device, false,
                     0};
        scratch.channelsLast = !lastTensors_.empty() && lastTensors_[tensor] != 0;
        TensorView view;
        view.dtype = scratch.dtype;
        view.region = range;
        view.strides = scratch.channelsLast ? channelsLastStrides(range.shape().coords())
                                            : rowMajorStrides(range.shape().coords());
        view.device = shard.device;
        view.constant = std::all_of(parts.begin(), parts.end(),
                                    [&](u32 part) { return slotViews_[part].constant; });
        std::vector<std::int64_t> strides =
            scratch.channelsLast ? view.strides : std::vector<std::int64_t>{};
        piece.inputs[port].push_back(ready(std::move(view)));
        piece.inputSources.push_back(
            {ViewSource::Kind::Scratch, static_cast<u32>(piece.scratch.size())});
        const bool zero = !coversExactly(slots_, parts, range);
        piece.scratch.push_back({scratch, std::move(parts), zero, std::move(strides)});
      }
    }
    const KernelCall call{op, piece.index, piece.inputs, piece.outputs, shard.device};
    piece.kernel = backend_.prepareKernel(call);
    shardPlan->pieces.push_back(std::move(piece));
  }
  prepared_[id] = std::move(shardPlan);
}

void Executor::setup(const ExecuteOptions& options, const cost::Simulation* schedule) {
  checkInvariant(!setUp_, "executor: set up once");
  setUp_ = true;
  lists_ = prepare(options, schedule);
  if (hostBuffers_) {
    blasThreads_ =
        options.blasThreads > 0 ? options.blasThreads : std::max(1, lists_.cores / lists_.workers);
    CpuBackend::setBlasThreads(blasThreads_);
  }
  // Workers pinned to CPUs on the CPU backend, one process on the machine;
  // under mpirun the ranks share the CPUs, and the OS places them.
  pool_ = std::make_unique<WorkerPool>(std::max<std::size_t>(lists_.lists.size(), 1),
                                       hostBuffers_ && options.link == nullptr);
  if (options.channelsLast) {
    chooseLayouts();
  }
  makeSlotViews();
  charged_ = std::make_unique<std::int64_t[]>(slots_.size());
  prepared_.clear();
  prepared_.resize(tasks_.size());
  for (u32 t = 0; t < tasks_.size(); ++t) {
    if (tasks_[t].kind == Task::Kind::Shard && role_[t] == Role::Run) {
      prepareShard(t);
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

Buffer Executor::allocate(const Slot& slot, bool zeroed) {
  Buffer buffer = zeroed ? backend_.allocate(slot.dtype, slot.region, slot.device)
                         : backend_.allocateUninitialized(slot.dtype, slot.region, slot.device);
  charge(slot.device, buffer.byteSize());
  return buffer;
}

void Executor::makeBuffer(u32 s) {
  const Slot& slot = slots_[s];
  if (persistent_[s] == 0 || buffers_[s].data() == nullptr) {
    buffers_[s] = backend_.allocateUninitialized(slot.dtype, slot.region, slot.device);
    if (slot.channelsLast) { // the layout makeSlotViews gave the slot's view
      buffers_[s] = buffers_[s].withStrides(slotViews_[s].strides);
    }
  }
  charged_[s] = buffers_[s].byteSize();
  charge(slot.device, charged_[s]);
}

TensorView Executor::slotView(u32 s) const {
  if (alias_[s] != 0) {
    return slotViews_[s];
  }
  return buffers_[s].view();
}

void Executor::runShard(u32 id) {
  const Task& task = tasks_[id];
  const plan::Shard& shard = p_.ops[task.a].shards[task.b];
  PreparedShard& prepared = *prepared_[id];
  for (u32 s : task.creates) {
    if (!slots_[s].region.isEmpty()) {
      makeBuffer(s); // every kernel overwrites its output selection
    }
  }
  if (prepared.pieces.size() > 1) {
    split_.fetch_add(1, std::memory_order_relaxed);
  }
  const graph::Operation& op = g_.operations[task.a];
  for (PreparedPiece& piece : prepared.pieces) {
    std::vector<Buffer> scratch; // assembled selections, freed after the kernel
    for (PreparedPiece::Assembly& a : piece.scratch) {
      Buffer buffer = allocate(a.slot, a.zero);
      if (a.slot.channelsLast) { // the layout prepareShard gave the call's view
        buffer = buffer.withStrides(a.strides);
      }
      for (u32 s : a.parts) {
        backend_.copyOverlap(slotView(s), buffer.view());
      }
      assembled_.fetch_add(1, std::memory_order_relaxed);
      assembledBytes_.fetch_add(buffer.byteSize(), std::memory_order_relaxed);
      scratch.push_back(std::move(buffer));
    }
    std::size_t v = 0;
    for (PortViews& port : piece.inputs) {
      for (TensorView& view : port) {
        const ViewSource& source = piece.inputSources[v++];
        view.data = source.kind == ViewSource::Kind::Slot      ? slotData(source.index)
                    : source.kind == ViewSource::Kind::Scratch ? scratch[source.index].data()
                                                               : nullptr;
      }
    }
    v = 0;
    for (PortViews& port : piece.outputs) {
      for (TensorView& view : port) {
        const ViewSource& source = piece.outputSources[v++];
        view.data = source.kind == ViewSource::Kind::Slot ? slotData(source.index) : nullptr;
      }
    }
    if (piece.kernel != nullptr) {
      const KernelCall call{op, piece.index, piece.inputs, piece.outputs, shard.device};
      piece.kernel->run(call);
    }
    kernelCalls_.fetch_add(1, std::memory_order_relaxed);
    for (const Buffer& buffer : scratch) {
      discharge(shard.device, buffer.byteSize());
    }
  }
}

void Executor::runTask(u32 id) {
  const Task& task = tasks_[id];
  if (role_[id] == Role::Send) {
    sendTransfer(task);
    return;
  }
  if (role_[id] == Role::Receive) {
    receiveTransfer(task);
    return;
  }
  switch (task.kind) {
  case Task::Kind::Resident: {
    const plan::Resident& r = p_.residents[task.a];
    const u32 s = task.creates[0];
    // Counted as allocated either way, so that release() balances it.
    if (alias_[s] != 0) {
      charged_[s] = slots_[s].region.size() * static_cast<std::int64_t>(dtypeSize(slots_[s].dtype));
      charge(slots_[s].device, charged_[s]);
      return;
    }
    Buffer shared =
        backend_.shareRegion(*hostInputs_[r.tensor], slots_[s].region, slots_[s].device);
    if (shared.data() != nullptr) {
      charge(slots_[s].device, shared.byteSize());
      charged_[s] = shared.byteSize();
      buffers_[s] = std::move(shared);
      return;
    }
    buffers_[s] = allocate(slots_[s]);
    charged_[s] = buffers_[s].byteSize();
    backend_.copyRegion(hostInputs_[r.tensor]->view(), buffers_[s].view(), r.region);
    return;
  }
  case Task::Kind::Transfer: {
    const plan::Transfer& t = p_.transfers[task.a];
    const u32 s = task.creates[0];
    if (t.region.isEmpty()) {
      return;
    }
    if (alias_[s] != 0) { // a graph input read where it is
      charged_[s] = slots_[s].region.size() * static_cast<std::int64_t>(dtypeSize(slots_[s].dtype));
      charge(slots_[s].device, charged_[s]);
      return;
    }
    const TensorView source =
        task.reads.empty() ? hostInputs_[t.tensor]->view() : slotView(task.reads[0]);
    makeBuffer(s);
    backend_.copyRegion(source, buffers_[s].view(), t.region);
    return;
  }
  case Task::Kind::Shard:
    runShard(id);
    return;
  case Task::Kind::Step: {
    const plan::Reduction& red = p_.reductions[task.a];
    backend_.combine(parseCombine(red.combine), slotView(task.reads[1]), slotView(task.reads[0]),
                     red.region);
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
    if (charged_[s] != 0) {
      discharge(slot.device, charged_[s]);
      charged_[s] = 0;
    }
    if (persistent_[s] == 0) {
      buffers_[s] = Buffer();
    }
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

// Every graph output into one host buffer over the whole tensor. In a
// distributed run rank 0 gathers: the other ranks send it their pieces (tag:
// past the transfers', by slot) and return nothing.
TensorBuffers Executor::gather() {
  const int me = link_ != nullptr ? link_->rank() : 0;
  const int tagBase = static_cast<int>(p_.transfers.size());
  TensorBuffers out;
  for (std::size_t t : g_.outputs) {
    const graph::Tensor& tensor = g_.tensors[t];
    const ZRange bounds = ZRange::fromShape(ZPoint(tensor.type.shape));
    // The pieces that make the tensor: (slot, region) on their devices.
    std::vector<std::pair<u32, ZRange>> pieces;
    std::int64_t covered = 0;
    if (!tensor.isGraphInput()) {
      const std::size_t op = *tensor.producer;
      const plan::OpPlan& opPlan = p_.ops[op];
      const bool partial = !opPlan.shards.empty() && opPlan.shards[0].partial;
      if (partial) {
        for (std::size_t r = opPlan.reductions.first; r < opPlan.reductions.second; ++r) {
          const plan::Reduction& red = p_.reductions[r];
          if (red.tensor == t && !red.region.isEmpty()) {
            pieces.emplace_back(root(r), red.region);
          }
        }
      } else {
        for (std::size_t k = 0; k < opPlan.shards.size(); ++k) {
          const u32 s = tile(op, k, t);
          if (!slots_[s].region.isEmpty()) {
            pieces.emplace_back(s, slots_[s].region);
          }
        }
      }
      for (const auto& [s, region] : pieces) {
        covered += region.size();
      }
    }
    // The backend's host memory (the CPU backend's block cache: a large output
    // gathered into fresh pages every run took a page fault per 4 KiB, 64 MiB
    // of `add` 148 ms a run against 8 ms). Zero-filled only where the pieces
    // leave elements unwritten: an op of an empty index space makes nothing
    // (a sum over an empty axis is zeros).
    Buffer host;
    if (me == 0) {
      const DType dtype = parseDType(tensor.type.dtype);
      host = tensor.isGraphInput() || covered >= bounds.size()
                 ? backend_.allocateUninitialized(dtype, bounds, kHostDevice)
                 : backend_.allocate(dtype, bounds, kHostDevice);
    }
    if (tensor.isGraphInput()) {
      if (me == 0) {
        backend_.copyRegion(hostInputs_[t]->view(), host.view(), bounds);
      }
    }
    // Each piece held on the slot's device: copied into `host` on rank 0,
    // sent there from another rank.
    for (const auto& [s, region] : pieces) {
      const int owner = rankOf(slots_[s].device);
      if (owner == me && me == 0) {
        backend_.copyRegion(buffers_[s].view(), host.view(), region);
      } else if (owner == me) {
        Buffer packed = Buffer::host(slots_[s].dtype, region);
        backend_.copyRegion(buffers_[s].view(), packed.view(), region);
        backend_.synchronize();
        link_->send(0, tagBase + static_cast<int>(s), std::move(packed));
      } else if (me == 0) {
        Buffer packed = Buffer::host(slots_[s].dtype, region);
        const std::atomic<bool> never{false};
        link_->receive(owner, tagBase + static_cast<int>(s),
                       {packed.data(), static_cast<std::size_t>(packed.byteSize())}, never);
        backend_.copyRegion(packed.view(), host.view(), region);
      }
    }
    if (me == 0) {
      out.emplace(tensor.name, std::move(host));
    }
  }
  backend_.synchronize();
  if (link_ != nullptr) {
    link_->flush();
  }
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

// Files the per-task times under the plan's shards, transfers and reductions.
void Executor::recordTimes(const std::vector<TaskTime>& times, ExecutionStats& stats) const {
  stats.shardTimes.resize(p_.ops.size());
  for (std::size_t op = 0; op < p_.ops.size(); ++op) {
    stats.shardTimes[op].resize(p_.ops[op].shards.size());
  }
  stats.transferTimes.resize(p_.transfers.size());
  constexpr double inf = std::numeric_limits<double>::infinity();
  stats.reductionTimes.assign(p_.reductions.size(), TaskTime{inf, -inf, 0});
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    const Task& task = tasks_[t];
    switch (task.kind) {
    case Task::Kind::Shard:
      stats.shardTimes[task.a][task.b] = times[t];
      break;
    case Task::Kind::Transfer:
      stats.transferTimes[task.a] = times[t];
      break;
    case Task::Kind::Step: {
      TaskTime& r = stats.reductionTimes[task.a];
      r.start = std::min(r.start, times[t].start);
      if (times[t].end >= r.end) {
        r.end = times[t].end;
        r.worker = times[t].worker;
      }
      break;
    }
    case Task::Kind::Resident:
      break;
    }
  }
  for (std::size_t i = 0; i < p_.reductions.size(); ++i) {
    const plan::Reduction& red = p_.reductions[i];
    TaskTime& r = stats.reductionTimes[i];
    if (red.steps.empty()) {
      r = stats.shardTimes[red.op][red.shards[0]];
      r.start = r.end;
      continue;
    }
    for (const plan::Reduction::Step& step : red.steps) {
      if (step.transfer) {
        r.start = std::min(r.start, stats.transferTimes[*step.transfer].start);
      }
    }
  }
}

void Executor::countTasks(ExecutionStats& stats) const {
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
}

Execution Executor::runOnce() {
  checkInvariant(setUp_, "executor: set up before it runs");
  const auto nDev = static_cast<std::size_t>(std::max(p_.deviceCount, 1));
  memory_ = std::make_unique<DeviceCounters[]>(nDev);
  remaining_ = std::make_unique<std::atomic<int>[]>(slots_.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    remaining_[s].store(slots_[s].uses, std::memory_order_relaxed);
    charged_[s] = 0;
  }
  for (std::size_t s = 0; s < buffers_.size(); ++s) {
    if (persistent_[s] == 0) {
      buffers_[s] = Buffer(); // the outputs an earlier run kept
    }
  }
  assembled_ = 0;
  split_ = 0;
  kernelCalls_ = 0;
  assembledBytes_ = 0;
  const std::vector<int>& used = lists_.devices;
  const std::vector<std::vector<u32>>& lists = lists_.lists;
  const int blasThreads = blasThreads_;
  if (hostBuffers_) {
    CpuBackend::setBlasThreads(blasThreads); // another prepared run may have set others
  }

  auto done = std::make_unique<std::atomic<bool>[]>(tasks_.size());
  std::atomic<bool> failed{false};
  cancel_ = &failed;
  std::mutex errorMutex;
  std::exception_ptr error;
  // Each worker writes the times of its own tasks only: two clock reads per
  // task, no lock. (The CUDA backend waits for its stream inside each call,
  // so these are the GPU's times too.)
  std::vector<TaskTime> times(tasks_.size());
  double start = 0;
  auto work = [&](std::size_t w) {
    for (u32 t : lists[w]) {
      const Task& task = tasks_[t];
      for (u32 d : task.deps) {
        awaitFlag(done[d]);
      }
      const double began = Backend::now();
      if (!failed.load(std::memory_order_acquire)) {
        try {
          runTask(t);
        } catch (...) {
          std::lock_guard<std::mutex> lock(errorMutex);
          if (!error) {
            error = std::current_exception();
          }
          failed.store(true, std::memory_order_release);
        }
      }
      times[t] = TaskTime{began - start, Backend::now() - start, static_cast<int>(w)};
      release(task);
      done[t].store(true, std::memory_order_release);
      done[t].notify_all();
    }
  };

  if (link_ != nullptr) {
    link_->barrier(); // every rank's clock starts here
  }
  if (deviceLink_ != nullptr) {
    for (const std::vector<std::int64_t>& theirs :
         link_->allgather({static_cast<std::int64_t>(linkDigest_)})) {
      checkInvariant(theirs.at(0) == static_cast<std::int64_t>(linkDigest_),
                     "executor: every rank issues the cross-rank transfers in the same order");
    }
  }
  start = Backend::now();
  pool_->run(work);
  backend_.synchronize();
  const double end = Backend::now();
  cancel_ = nullptr;
  if (error) {
    std::rethrow_exception(error);
  }
  if (link_ != nullptr) {
    link_->flush();
  }

  Execution result;
  ExecutionStats& stats = result.stats;
  stats.wallSeconds = end - start;
  // A rank past the plan's devices runs none; a link thread counts as a worker.
  stats.workers = used.empty() ? 0 : static_cast<int>(lists.size());
  stats.transport = transport_;
  stats.blasThreads = blasThreads;
  stats.devices.resize(nDev);
  for (std::size_t d = 0; d < nDev; ++d) {
    stats.devices[d].peakBytes = memory_[d].peak.load();
    stats.devices[d].allocatedBytes = memory_[d].allocated.load();
  }
  stats.kernelCalls = kernelCalls_.load();
  stats.splitShards = split_.load();
  stats.assembledSelections = assembled_.load();
  stats.assembledBytes = assembledBytes_.load();
  result.outputs = gather();
  if (link_ != nullptr) {
    mergeStats(stats, times, start);
    stats.transport = transport_;
  }
  countTasks(stats);
  stats.channelsLastRegions = static_cast<std::size_t>(std::count_if(
      slots_.begin(), slots_.end(), [](const Slot& slot) { return slot.channelsLast; }));
  recordTimes(times, stats);
  for (const auto& [name, buffer] : result.outputs) {
    stats.outputBytes += buffer.byteSize();
  }
  return result;
}

} // namespace detail

Execution execute(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
                  const TensorBuffers& inputs, const ExecuteOptions& options,
                  const cost::Simulation* schedule) {
  detail::Executor executor(g, p, backend, &inputs);
  return executor.run(options, schedule);
}

PreparedRun::PreparedRun(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
                         const TensorBuffers& inputs, const ExecuteOptions& options,
                         const cost::Simulation* schedule)
    : executor_(std::make_unique<detail::Executor>(g, p, backend, &inputs)) {
  executor_->setup(options, schedule);
}

PreparedRun::~PreparedRun() = default;

Execution PreparedRun::run() {
  return executor_->runOnce();
}

} // namespace tapestry::backend
