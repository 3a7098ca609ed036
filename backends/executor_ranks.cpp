// The executor's part in a distributed run (ExecuteOptions::link,
// docs/distributed.md): which rank holds which device, the roles of the tasks
// on this rank, the transport of the cross-rank transfers, and the statistics
// merged over the ranks.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/executor.hpp"
#include "backends/executor_internal.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

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

// The transport of this run's cross-rank transfers, the roles of the tasks
// here, and who runs them in which order (the link thread last, when there is
// one).
WorkerLists Executor::prepare(const ExecuteOptions& options, const cost::Simulation* schedule) {
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
  if (deviceLink_ != nullptr) {
    // A digest of the cross-rank transfers in order (FNV-1a), the same on
    // every rank: checked after the start barrier, so that ranks that
    // disagree fail instead of waiting on calls that never pair.
    linkDigest_ = 1469598103934665603ULL;
    for (const CrossRankTransfer& t : crossRankTransfers(ordered)) {
      linkDigest_ = (linkDigest_ ^ t.task) * 1099511628211ULL;
    }
  }
  if (!plan.link.empty()) {
    plan.lists.emplace_back(); // the link thread: the last "worker"
    for (const LinkOp& op : plan.link) {
      plan.lists.back().push_back(op.task);
    }
  }
  return plan;
}

Executor::Planned Executor::plannedLists(int rank, const std::vector<int>& deviceRank, int threads,
                                         const cost::Simulation* schedule) {
  assignRoles(rank, deviceRank);
  Planned planned;
  planned.order = order(schedule);
  for (const Task& task : tasks_) {
    planned.deps.push_back(task.deps);
  }
  planned.lists = workerLists(planned.order, threads, usableHardwareThreads(), true);
  return planned;
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
  const TensorView from = slotView(task.reads[0]); // a relayed input may alias the host's
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
// slot's GPU) and the slot is row-major as the sender packed it, else through
// a staging buffer copied into it (a channels-last slot: chooseLayouts).
void Executor::receiveTransfer(const Task& task) {
  const plan::Transfer& t = p_.transfers[task.a];
  const u32 s = task.creates[0];
  if (t.region.isEmpty()) {
    return; // as a copy of nothing: no buffer, no message
  }
  makeBuffer(s);
  const int from = rankOf(slots_[task.reads[0]].device);
  if (transport_ == Transport::Nccl) {
    const bool inPlace = deviceLink_->reaches(slots_[s].device) && !slots_[s].channelsLast;
    Buffer staging =
        inPlace ? buffers_[s] : backend_.allocate(slots_[s].dtype, t.region, deviceLink_->device());
    if (deviceLink_->receive(from, staging, *cancel_) && !inPlace) {
      backend_.copyRegion(staging.view(), buffers_[s].view(), t.region);
    }
    return;
  }
  const bool inPlace =
      (hostBuffers_ || transport_ == Transport::CudaAwareMpi) && !slots_[s].channelsLast;
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

} // namespace detail

DistributedSchedule distributedSchedule(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                                        const cost::Simulation* schedule,
                                        const std::vector<int>& deviceRank, int ranks,
                                        int threads) {
  CpuBackend host(1); // never runs anything: the executor only plans
  DistributedSchedule result;
  for (int r = 0; r < ranks; ++r) {
    detail::Executor executor(g, p, host, nullptr);
    detail::Executor::Planned planned = executor.plannedLists(r, deviceRank, threads, schedule);
    if (r == 0) {
      result.deps = std::move(planned.deps);
      result.order = std::move(planned.order);
    } else {
      // Each rank computes the order itself: they must agree.
      checkInvariant(planned.order == result.order && planned.deps == result.deps,
                     "executor: every rank computes the same task order");
    }
    result.ranks.push_back(
        RankLists{std::move(planned.lists.lists), std::move(planned.lists.link)});
  }
  return result;
}

} // namespace tapestry::backend
