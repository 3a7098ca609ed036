#include "backends/executor.hpp"
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

std::vector<int> deviceRanks(const plan::ShardPlan& p, const cost::Target& target, int ranks) {
  const int nDev = std::max(p.deviceCount, 1);
  std::vector<int> rank(static_cast<std::size_t>(nDev), 0);
  ranks = std::max(ranks, 1);
  // Contiguous blocks of n items over `ranks`, the first n % ranks one longer.
  auto block = [ranks](int i, int n) {
    const int small = n / ranks;
    const int extra = n % ranks;
    return i < extra * (small + 1) ? i / (small + 1) : extra + (i - extra * (small + 1)) / small;
  };
  const int nodes = target.nodeCount();
  if (nodes > 1 && nodes >= ranks) {
    for (int d = 0; d < nDev; ++d) {
      rank[static_cast<std::size_t>(d)] = block(std::min(target.nodeOf(d), nodes - 1), nodes);
    }
    return rank;
  }
  std::vector<char> isUsed(static_cast<std::size_t>(nDev), 0);
  for (const plan::OpPlan& op : p.ops) {
    for (const plan::Shard& s : op.shards) {
      isUsed[static_cast<std::size_t>(s.device)] = 1;
    }
  }
  const auto n = static_cast<int>(std::count(isUsed.begin(), isUsed.end(), 1));
  int i = 0;
  int current = 0;
  for (int d = 0; d < nDev; ++d) {
    if (isUsed[static_cast<std::size_t>(d)] != 0) {
      current = block(i++, n);
    }
    rank[static_cast<std::size_t>(d)] = current;
  }
  return rank;
}

void RankLink::broadcast(std::span<std::byte> data, int root) {
  std::vector<std::int64_t> mine;
  if (rank() == root) {
    mine.resize((data.size() + 7) / 8, 0);
    std::memcpy(mine.data(), data.data(), data.size());
  }
  const std::vector<std::vector<std::int64_t>> all = allgather(mine);
  const std::vector<std::int64_t>& theirs = all.at(static_cast<std::size_t>(root));
  checkInvariant(theirs.size() * 8 >= data.size(), "broadcast: the same size on every rank");
  std::memcpy(data.data(), theirs.data(), data.size());
}

const char* transportName(Transport transport) {
  switch (transport) {
  case Transport::None:
    return "none";
  case Transport::Mpi:
    return "mpi";
  case Transport::MpiStaged:
    return "mpi-host-staged";
  case Transport::CudaAwareMpi:
    return "cuda-aware-mpi";
  case Transport::Nccl:
    return "nccl";
  }
  return "none";
}

std::vector<std::vector<int>> rankDevices(const plan::ShardPlan& p,
                                          const std::vector<int>& deviceRank, int ranks) {
  std::vector<std::vector<int>> held(static_cast<std::size_t>(std::max(ranks, 1)));
  std::vector<char> isUsed(deviceRank.size(), 0);
  for (const plan::OpPlan& op : p.ops) {
    for (const plan::Shard& s : op.shards) {
      isUsed[static_cast<std::size_t>(s.device)] = 1;
    }
  }
  for (std::size_t d = 0; d < deviceRank.size(); ++d) {
    if (isUsed[d] != 0) {
      held[static_cast<std::size_t>(deviceRank[d])].push_back(static_cast<int>(d));
    }
  }
  return held;
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

// ---------------------------------------------------------------- distributed runs

WorkerLists Executor::plannedLists(int rank, const std::vector<int>& deviceRank, int threads,
                                   const cost::Simulation* schedule,
                                   std::vector<std::vector<u32>>* deps, std::vector<u32>* order_) {
  assignRoles(rank, deviceRank);
  const std::vector<u32> ordered = order(schedule);
  if (deps != nullptr) {
    deps->clear();
    for (const Task& task : tasks_) {
      deps->push_back(task.deps);
    }
  }
  if (order_ != nullptr) {
    *order_ = ordered;
  }
  return workerLists(ordered, threads, usableHardwareThreads(), true);
}

void Executor::assignRoles(int me, const std::vector<int>& deviceRank) {
  const auto nDev = static_cast<std::size_t>(std::max(p_.deviceCount, 1));
  me_ = me;
  role_.assign(tasks_.size(), Role::Run);
  if (deviceRank.empty()) {
    deviceRank_.assign(nDev, 0);
    return;
  }
  checkInvariant(deviceRank.size() == nDev, "executor: a rank for every plan device");
  deviceRank_ = deviceRank;
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    const Task& task = tasks_[t];
    const int to = rankOf(task.device);
    if (task.kind != Task::Kind::Transfer) {
      role_[t] = to == me ? Role::Run : Role::Elsewhere;
      continue;
    }
    // A graph input on the host is on every rank (each holds all the inputs).
    const int from = task.reads.empty() ? to : rankOf(slots_[task.reads[0]].device);
    if (to == me) {
      role_[t] = from == me ? Role::Run : Role::Receive;
    } else {
      role_[t] = from == me ? Role::Send : Role::Elsewhere;
    }
  }
}

int Executor::placeOf(u32 t) const {
  const Task& task = tasks_[t];
  return role_[t] == Role::Send ? slots_[task.reads[0]].device : task.device;
}

// Packs the transfer's region into a dense buffer once its source is ready
// (this task's dependencies) and hands it on: to the link, which sends it while
// the workers go on (a host buffer, or a device buffer for a CUDA-aware MPI),
// or to the device link, which returns once it has left (the link thread).
void Executor::sendTransfer(const Task& task) {
  const plan::Transfer& t = p_.transfers[task.a];
  if (t.region.isEmpty()) {
    return; // nothing to send, and its receiver expects nothing
  }
  const Slot& source = slots_[task.reads[0]];
  const TensorView from = buffers_[task.reads[0]].view();
  if (transport_ == Transport::Nccl) {
    // The call returns once sent, so a contiguous region is sent in place.
    const bool reached = deviceLink_->reaches(source.device);
    Buffer packed = reached ? buffers_[task.reads[0]].share(t.region, source.device) : Buffer();
    if (packed.data() == nullptr) {
      packed = backend_.allocate(source.dtype, t.region,
                                 reached ? source.device : deviceLink_->device());
      backend_.copyRegion(from, packed.view(), t.region);
    }
    deviceLink_->send(rankOf(t.to), packed, *cancel_);
    return;
  }
  Buffer packed = transport_ == Transport::CudaAwareMpi
                      ? backend_.allocate(source.dtype, t.region, source.device)
                      : Buffer::host(source.dtype, t.region);
  backend_.copyRegion(from, packed.view(), t.region);
  if (!hostBuffers_) {
    backend_.synchronize();
  }
  link_->send(rankOf(t.to), static_cast<int>(task.a), std::move(packed));
}

// The transfer's slot is a dense buffer over exactly its region: received into
// in place where the transport can (host memory, a CUDA-aware MPI, NCCL on the
// slot's GPU), else through a staging buffer copied into it.
void Executor::receiveTransfer(const Task& task) {
  const plan::Transfer& t = p_.transfers[task.a];
  const u32 s = task.creates[0];
  if (t.region.isEmpty()) {
    return; // as a copy of nothing: no buffer, no message
  }
  buffers_[s] = allocate(slots_[s]);
  const int from = rankOf(slots_[task.reads[0]].device);
  if (transport_ == Transport::Nccl) {
    const bool inPlace = deviceLink_->reaches(slots_[s].device);
    Buffer staging =
        inPlace ? buffers_[s] : backend_.allocate(slots_[s].dtype, t.region, deviceLink_->device());
    if (deviceLink_->receive(from, staging, *cancel_) && !inPlace) {
      backend_.copyRegion(staging.view(), buffers_[s].view(), t.region);
    }
    return;
  }
  const bool inPlace = hostBuffers_ || transport_ == Transport::CudaAwareMpi;
  Buffer staging = inPlace ? buffers_[s] : Buffer::host(slots_[s].dtype, t.region);
  const std::span<std::byte> into(staging.data(), static_cast<std::size_t>(staging.byteSize()));
  if (!link_->receive(from, static_cast<int>(task.a), into, *cancel_)) {
    return; // another task failed; its error is the one reported
  }
  if (!inPlace) {
    backend_.copyRegion(staging.view(), buffers_[s].view(), t.region);
  }
}

// Each rank's vector: wall time, workers, counters, per device its bytes, per
// task its times (doubles as their bits).
void Executor::mergeStats(ExecutionStats& stats, std::vector<TaskTime>& times, double start) const {
  const auto nDev = stats.devices.size();
  std::vector<std::int64_t> mine;
  mine.push_back(std::bit_cast<std::int64_t>(stats.wallSeconds));
  mine.push_back(std::bit_cast<std::int64_t>(start));
  mine.push_back(stats.workers);
  mine.push_back(static_cast<std::int64_t>(stats.kernelCalls));
  mine.push_back(static_cast<std::int64_t>(stats.splitShards));
  mine.push_back(static_cast<std::int64_t>(stats.assembledSelections));
  mine.push_back(stats.assembledBytes);
  constexpr std::size_t head = 7;
  for (const DeviceMemory& d : stats.devices) {
    mine.push_back(d.peakBytes);
    mine.push_back(d.allocatedBytes);
  }
  for (const TaskTime& t : times) {
    mine.push_back(std::bit_cast<std::int64_t>(t.start));
    mine.push_back(std::bit_cast<std::int64_t>(t.end));
    mine.push_back(t.worker);
  }
  const std::vector<std::vector<std::int64_t>> all = link_->allgather(mine);
  std::vector<int> firstWorker(all.size(), 0);
  const int blasThreads = stats.blasThreads; // this rank's
  stats = ExecutionStats{};
  stats.blasThreads = blasThreads;
  stats.devices.resize(nDev);
  int workers = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const std::vector<std::int64_t>& v = all[r];
    checkInvariant(v.size() == mine.size(), "executor: every rank reports the same plan");
    firstWorker[r] = workers;
    workers += static_cast<int>(v[2]);
    stats.kernelCalls += static_cast<std::size_t>(v[3]);
    stats.splitShards += static_cast<std::size_t>(v[4]);
    stats.assembledSelections += static_cast<std::size_t>(v[5]);
    stats.assembledBytes += v[6];
    for (std::size_t d = 0; d < nDev; ++d) {
      stats.devices[d].peakBytes += v[head + 2 * d];
      stats.devices[d].allocatedBytes += v[head + 2 * d + 1];
    }
  }
  // Times from the earliest rank's start. On one machine the ranks share the
  // steady clock; across machines they cannot, and each rank's clock starts
  // at the barrier that started the run (skewed by its latency).
  const bool oneMachine = link_->ranksOnThisNode() == link_->ranks();
  std::vector<double> offset(all.size(), 0.0);
  if (oneMachine) {
    double first = std::bit_cast<double>(all[0][1]);
    for (const std::vector<std::int64_t>& v : all) {
      first = std::min(first, std::bit_cast<double>(v[1]));
    }
    for (std::size_t r = 0; r < all.size(); ++r) {
      offset[r] = std::bit_cast<double>(all[r][1]) - first;
    }
  }
  for (std::size_t r = 0; r < all.size(); ++r) {
    stats.wallSeconds = std::max(stats.wallSeconds, offset[r] + std::bit_cast<double>(all[r][0]));
  }
  stats.workers = workers;
  const std::size_t base = head + 2 * nDev;
  auto timeOn = [&](std::size_t r, std::size_t t) {
    const std::vector<std::int64_t>& v = all[r];
    return TaskTime{offset[r] + std::bit_cast<double>(v[base + 3 * t]),
                    offset[r] + std::bit_cast<double>(v[base + 3 * t + 1]),
                    firstWorker[r] + static_cast<int>(v[base + 3 * t + 2])};
  };
  for (std::size_t t = 0; t < times.size(); ++t) {
    const Task& task = tasks_[t];
    const auto r = static_cast<std::size_t>(rankOf(task.device));
    times[t] = timeOn(r, t);
    if (task.kind == Task::Kind::Transfer && !task.reads.empty()) {
      // Across ranks a transfer starts when its send does (its source ready,
      // on the source's clock), not when the receive began to wait for it.
      const auto from = static_cast<std::size_t>(rankOf(slots_[task.reads[0]].device));
      if (from != r) {
        times[t].start = std::min(std::max(times[t].start, timeOn(from, t).start), times[t].end);
      }
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
    Buffer host = me == 0 ? Buffer::host(parseDType(tensor.type.dtype), bounds) : Buffer();
    // One piece of the output held on the slot's device: copied into `host`
    // on rank 0, sent there from another rank.
    auto piece = [&](u32 s, const ZRange& region) {
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
    };
    if (tensor.isGraphInput()) {
      if (me == 0) {
        backend_.copyRegion(hostInputs_[t]->view(), host.view(), bounds);
      }
    } else {
      const std::size_t op = *tensor.producer;
      const plan::OpPlan& opPlan = p_.ops[op];
      const bool partial = !opPlan.shards.empty() && opPlan.shards[0].partial;
      if (partial) {
        for (std::size_t r = opPlan.reductions.first; r < opPlan.reductions.second; ++r) {
          const plan::Reduction& red = p_.reductions[r];
          if (red.tensor == t && !red.region.isEmpty()) {
            piece(root(r), red.region);
          }
        }
      } else {
        for (std::size_t k = 0; k < opPlan.shards.size(); ++k) {
          const u32 s = tile(op, k, t);
          if (!slots_[s].region.isEmpty()) {
            piece(s, slots_[s].region);
          }
        }
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

Execution Executor::run(const ExecuteOptions& options, const cost::Simulation* schedule) {
  const auto nDev = static_cast<std::size_t>(std::max(p_.deviceCount, 1));
  memory_ = std::make_unique<DeviceCounters[]>(nDev);
  remaining_ = std::make_unique<std::atomic<int>[]>(slots_.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    remaining_[s].store(slots_[s].uses, std::memory_order_relaxed);
  }
  hostBuffers_ = dynamic_cast<CpuBackend*>(&backend_) != nullptr;
  link_ = options.link;
  deviceLink_ = nullptr;
  transport_ = Transport::None;
  if (link_ != nullptr) {
    const std::size_t tags = p_.transfers.size() + slots_.size();
    if (tags > static_cast<std::size_t>(link_->maxTag())) {
      throw Error("this plan moves " + std::to_string(tags) +
                  " regions between ranks, more than the MPI library's largest message tag (" +
                  std::to_string(link_->maxTag()) + ")");
    }
    if (options.deviceLink != nullptr) {
      transport_ = Transport::Nccl;
      deviceLink_ = options.deviceLink;
    } else if (hostBuffers_) {
      transport_ = Transport::Mpi;
    } else {
      transport_ = options.linkTakesDevice ? Transport::CudaAwareMpi : Transport::MpiStaged;
    }
  }
  assignRoles(link_ != nullptr ? link_->rank() : 0,
              link_ != nullptr ? options.deviceRank : std::vector<int>{});

  const std::vector<u32> ordered = order(schedule);
  if (deviceLink_ != nullptr) {
    // What makes the link threads' calls pair up without a deadlock
    // (link_schedule.hpp); the same order on every rank.
    std::vector<std::vector<u32>> deps;
    for (const Task& task : tasks_) {
      deps.push_back(task.deps);
    }
    checkInvariant(isTopological(ordered, deps),
                   "executor: the task order lists every task after what it waits for");
  }
  WorkerLists plan = workerLists(ordered, options.threads, rankCores(), deviceLink_ != nullptr);
  const std::vector<int>& used = plan.devices;
  const int cores = plan.cores;
  const int workers = plan.workers;
  std::vector<std::vector<u32>>& lists = plan.lists;
  if (!plan.link.empty()) {
    lists.emplace_back(); // the link thread: the last "worker"
    for (const LinkOp& op : plan.link) {
      lists.back().push_back(op.task);
    }
  }

  int blasThreads = 0;
  if (hostBuffers_) {
    blasThreads = options.blasThreads > 0 ? options.blasThreads : std::max(1, cores / workers);
    CpuBackend::setBlasThreads(blasThreads);
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
        while (!done[d].load(std::memory_order_acquire)) {
          done[d].wait(false, std::memory_order_acquire);
        }
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
  start = Backend::now();
  {
    std::vector<std::jthread> threads;
    for (std::size_t w = 1; w < lists.size(); ++w) {
      threads.emplace_back(work, w);
    }
    work(0);
  }
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

DistributedSchedule distributedSchedule(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                                        const cost::Simulation* schedule,
                                        const std::vector<int>& deviceRank, int ranks,
                                        int threads) {
  CpuBackend host(1); // never runs anything: the executor only plans
  DistributedSchedule result;
  for (int r = 0; r < ranks; ++r) {
    detail::Executor executor(g, p, host, nullptr);
    detail::WorkerLists lists =
        executor.plannedLists(r, deviceRank, threads, schedule, r == 0 ? &result.deps : nullptr,
                              r == 0 ? &result.order : nullptr);
    result.ranks.push_back(RankLists{std::move(lists.lists), std::move(lists.link)});
  }
  return result;
}

} // namespace tapestry::backend
