// Which worker runs which tasks, in which order: the simulated schedule's
// order with the waits that keep the measured memory within the predicted
// peak, and the plan's devices spread over the workers.
#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "backends/executor_internal.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::detail {

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

int Executor::rankCores() const {
  int cores = usableHardwareThreads();
  if (link_ != nullptr) {
    // Ranks on one machine that mpirun did not bind to cores of their own
    // (--oversubscribe, say) share its cores: each takes its part of them.
    const int local = link_->ranksOnThisNode();
    const auto machine = static_cast<int>(std::thread::hardware_concurrency());
    if (local > 1 && machine > 0 && cores * local > machine) {
      cores = std::max(1, cores / local);
    }
  }
  return cores;
}

// Devices become workers; with fewer workers, one serves several devices.
// In a distributed run, only this rank's devices. Each worker's list holds its
// tasks in `order`; with a link thread, the cross-rank transfers are its
// operations instead, in the same order.
WorkerLists Executor::workerLists(const std::vector<u32>& order, int threads, int cores,
                                  bool linkThread) {
  const auto nDev = static_cast<std::size_t>(std::max(p_.deviceCount, 1));
  auto onLink = [&](u32 t) {
    return linkThread && (role_[t] == Role::Send || role_[t] == Role::Receive);
  };
  std::vector<int> used;
  for (u32 t = 0; t < tasks_.size(); ++t) {
    checkInvariant(tasks_[t].device >= 0 && static_cast<std::size_t>(tasks_[t].device) < nDev,
                   "executor: a task's device is one of the plan's");
    if (role_[t] != Role::Elsewhere && !onLink(t)) {
      used.push_back(placeOf(t));
    }
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  const int cap = threads > 0 ? threads : cores;
  const int workers = std::max(1, std::min(cap, static_cast<int>(used.size())));
  std::vector<int> workerOf(nDev, 0);
  for (std::size_t i = 0; i < used.size(); ++i) {
    workerOf[static_cast<std::size_t>(used[i])] = static_cast<int>(i) % workers;
  }
  std::vector<std::vector<u32>> lists(static_cast<std::size_t>(workers));
  for (u32 t : order) {
    if (role_[t] == Role::Elsewhere) {
      continue;
    }
    // Another rank's tasks never finish here: what this one needs of them
    // arrives as a message (a receive) or was never shared (every other
    // dependency orders tasks on one device, or a transfer's send after its source).
    std::erase_if(tasks_[t].deps, [this](u32 d) { return role_[d] == Role::Elsewhere; });
    if (!onLink(t)) {
      lists[static_cast<std::size_t>(workerOf[static_cast<std::size_t>(placeOf(t))])].push_back(t);
    }
  }
  WorkerLists result{std::move(used), cores, workers, std::move(lists), {}};
  if (linkThread) {
    result.link = linkSchedule(crossRankTransfers(order), me_);
  }
  return result;
}

std::vector<CrossRankTransfer> Executor::crossRankTransfers(const std::vector<u32>& order) const {
  std::vector<CrossRankTransfer> cross;
  for (u32 t : order) {
    const Task& task = tasks_[t];
    if (task.kind != Task::Kind::Transfer || task.reads.empty()) {
      continue; // graph inputs are on every rank
    }
    const int from = rankOf(slots_[task.reads[0]].device);
    const int to = rankOf(task.device);
    if (from != to) {
      cross.push_back(CrossRankTransfer{t, task.a, from, to});
    }
  }
  return cross;
}

} // namespace tapestry::backend::detail
