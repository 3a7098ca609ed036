// The discrete-event cost model: list scheduling of shards, transfers and
// reduction steps on per-device and per-link queues over a plan's tasks
// (plan::PlanTasks), then a memory sweep per device.
#include "core/cost/simulator.hpp"

#include "core/cost/peak_memory.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/diag/error.hpp"

namespace tapestry::cost {

namespace detail {

std::uint64_t eventKey(double time, bool alloc) {
  return (std::bit_cast<std::uint64_t>(time) << 1) | (alloc ? 1u : 0u);
}

std::size_t placeNear(const MemEvent* a, std::size_t n, std::size_t at, std::uint64_t key) {
  const auto before = [](const MemEvent& e, std::uint64_t k) { return e.key < k; };
  std::size_t lo = 0;
  std::size_t hi = n;
  if (at < n && a[at].key < key) {
    std::size_t step = 1;
    while (at + step < n && a[at + step].key < key) {
      step *= 2;
    }
    lo = at + step / 2 + 1;
    hi = std::min(at + step, n);
  } else if (at > 0 && a[at - 1].key > key) {
    std::size_t step = 1;
    while (step < at && a[at - 1 - step].key > key) {
      step *= 2;
    }
    lo = step < at ? at - step : 0;
    hi = at - 1 - step / 2;
  } else {
    return at;
  }
  return static_cast<std::size_t>(std::lower_bound(a + lo, a + hi, key, before) - a);
}

std::int64_t peakLive(MemEvent* allocs, std::size_t n, const MemEvent* frees, std::size_t m,
                      std::int64_t atZero, PeakScratch& scratch) {
  const auto byKey = [](const MemEvent& x, const MemEvent& y) { return x.key < y.key; };
  const MemEvent* a0 = allocs;
  MemEvent* const unsorted = std::is_sorted_until(allocs, allocs + n, byKey);
  if (unsorted != allocs + n) {
    std::sort(unsorted, allocs + n, byKey);
    scratch.merged.resize(n);
    std::merge(a0, static_cast<const MemEvent*>(unsorted), unsorted, allocs + n,
               scratch.merged.begin(), byKey);
    a0 = scratch.merged.data();
  }
  // gap[j]: the bytes freed after allocation j - 1 and before allocation j.
  std::vector<std::int64_t>& gap = scratch.gap;
  gap.assign(n + 1, 0);
  std::int64_t live = atZero;
  std::size_t at = 0; // the last free's place: where to look for the next one's
  for (const MemEvent* f = frees; f != frees + m; ++f) {
    if (f->key < kZeroAlloc) {
      live += f->delta; // freed at time 0, before what is allocated then
      continue;
    }
    at = placeNear(a0, n, at, f->key);
    gap[at] += f->delta;
  }
  std::int64_t top = std::max<std::int64_t>(0, live);
  for (std::size_t j = 0; j < n; ++j) {
    live += gap[j] + a0[j].delta;
    top = std::max(top, live);
  }
  return top;
}

} // namespace detail

namespace {

using detail::eventKey;
using detail::kZeroAlloc;
using detail::MemEvent;
using plan::PlanTasks;
using u32 = std::uint32_t;

constexpr double kNever = std::numeric_limits<double>::infinity();

// The seconds per byte of a graph's constant inputs read from memory: where
// they outgrow the machine's last-level cache (Profile::cacheBytes), each run
// reads every weight anew from memory, while the FLOPs-measured tables were
// timed on operands that stay in cache. The rate is the elementwise table's
// at its largest size, past twice the cache (one device alone to every
// device busy, as its tables are). ResNet-18's classifier ([1, 512] x [512,
// 1000], 2 MB of weights, 47 MB of constants against a 32 MB L3): measured
// 101 us on one device, 26 us from the matmul table, 94 us at this rate.
// 0 where the constants fit, the profile gives no cache, or the table never
// left it.
double constantSecondsPerByte(const Profile& profile, std::int64_t constantBytes, double busy) {
  const ProfileTable* stream = profile.table("elementwise");
  if (profile.cacheBytes <= 0 || constantBytes <= profile.cacheBytes || stream == nullptr ||
      stream->alone.empty()) {
    return 0;
  }
  const double largest = stream->alone.back().size;
  if (largest <= 2.0 * static_cast<double>(profile.cacheBytes)) {
    return 0; // the table never left the cache: no rate from memory to use
  }
  return stream->time(largest, busy) / largest;
}

} // namespace

struct ChoiceSimulator::Scratch {
  std::vector<double> rate;                  // per op
  std::vector<const ProfileTable*> measured; // per op: its family's table, or none
  std::vector<const ProfileTable*> floors;   // per op: Profile::floorFor, or none
  // Per op: the bytes of one element of B in the square products the matmul
  // table was measured on (its dtype's size), for a matmul-family op; 0 for
  // other ops (no copy of repacked inputs is priced).
  std::vector<double> squareElement;
  // Per op: whether its shards are floored at reading their constant inputs
  // from memory (every op but a convolution, whose conv_weights floor is
  // measured from memory already).
  std::vector<std::uint8_t> constantFloor;
  // Per op: the table of its epilogue's kernel (PlanTasks::Op::epilogue,
  // measured by bytes), or none: each shard adds that kernel's time over its
  // outputs, read and written.
  std::vector<const ProfileTable*> epilogue;
  // Per op: how many such passes it makes: a fuse(P, C) runs C's kernel over
  // P's result, and fuse(fuse(P, B), C) B's, then C's (priced at C's table).
  std::vector<double> epiloguePasses;
  // What rate, measured and floors were looked up for: the target, and per op
  // its kernel name's storage (the graph's) and dtype. A simulator evaluates
  // one graph's plans, so the lookups are made once, not per evaluation.
  const Target* lookedUpFor = nullptr;
  std::vector<std::pair<const char*, const char*>> lookedUpOps;
  std::vector<std::uint8_t> busyDevice; // per device: runs a shard
  double busy = 0;                      // 0: one device busy .. 1: all of them
  double startDelay = 0;                // the profile's start overhead, or 0
  bool copiesOnDevice = false;          // transfers hold their destination device
  // The elementwise family's table: reduction combines.
  const ProfileTable* streamTable = nullptr;
  // The copy family's table: a product's per-call copy of a W that is not
  // constant (repackSeconds); none without a CPU profile.
  const ProfileTable* copyTable = nullptr;
  bool perCall = false; // a CPU profile: batched products priced per product
  // The CPU backend's channels-last image copies are priced
  // (ShardTask::assembled): a CPU profile, or a CPU target without one. The
  // CUDA backend's convolutions read their images as they are.
  bool assembles = false;
  // Seconds per byte of constants read from memory (constantSecondsPerByte), or 0:
  // the graph's constants fit the profile's last-level cache, or it does not say.
  double constantPerByte = 0;
  std::vector<double> devFree; // per device
  std::vector<double> linkFree;
  std::vector<double> alloc, ready, lastUse; // per buffer
  std::vector<Interval> shards, transfers, reductions;
  // Per device: its allocations' and frees' slices of `allocs` and `frees`.
  std::vector<std::uint32_t> allocStarts, allocEnd, freeStarts, freeEnd;
  std::vector<MemEvent> allocs, frees;
  std::vector<MemEvent> merged;     // one device's allocations, when they need a merge
  std::vector<std::int64_t> atZero; // per device: bytes allocated at time 0
  detail::PeakScratch peakScratch;
  std::vector<std::int64_t> peak;
  Objectives objectives;

  void run(const PlanTasks& p, const Target& t);

private:
  void costsOf(const PlanTasks& p, const Target& t);
  void transfer(const PlanTasks& p, const Target& t, std::size_t i, double sourceReady);
  double shardWork(const PlanTasks& p, std::uint32_t opIndex, const PlanTasks::ShardTask& task,
                   double bandwidth) const;
  void memory(const PlanTasks& p, const Target& t);
};

void ChoiceSimulator::Scratch::transfer(const PlanTasks& p, const Target& t, std::size_t i,
                                        double sourceReady) {
  const PlanTasks::TransferTask& tr = p.transfers[i];
  const std::size_t places = static_cast<std::size_t>(p.deviceCount) + 1;
  double& free = linkFree[static_cast<std::size_t>(tr.from + 1) * places +
                          static_cast<std::size_t>(tr.to + 1)];
  const LinkSpec& link = tr.from == plan::kHost ? t.hostLink() : t.linkBetween(tr.from, tr.to);
  // Where the destination's worker makes the copy (a profile says so), the
  // transfer also waits for that device and holds it.
  double* device = copiesOnDevice ? &devFree[static_cast<std::size_t>(tr.to)] : nullptr;
  const double start = std::max({free, sourceReady, device != nullptr ? *device : 0.0});
  double seconds = link.transferTime(static_cast<double>(tr.bytes));
  if (t.profile) {
    const bool host = tr.from == plan::kHost;
    const std::vector<ProfilePoint>& copies = host ? t.profile->hostCopies : t.profile->linkCopies;
    // Measured copies stand for links within a node only.
    if (!copies.empty() && (host || t.sameNode(tr.from, tr.to))) {
      seconds = interpolateTime(copies, host ? t.profile->hostCopiesAll : t.profile->linkCopiesAll,
                                static_cast<double>(tr.bytes), busy);
    }
    seconds += t.profile->taskOverhead;
  }
  const double end = start + seconds;
  free = end;
  if (device != nullptr) {
    *device = end;
  }
  transfers[i] = Interval{start, end};
  alloc[tr.buffer] = start;
  ready[tr.buffer] = end;
  if (tr.source >= 0) {
    double& used = lastUse[static_cast<std::size_t>(tr.source)];
    used = std::max(used, end);
  }
}

// Per op: its dtype's rate and its family's measured table (if any); per
// plan: how far it is from one busy device towards all of them (the profile's
// `all` tables), by the devices that run shards, in log scale.
void ChoiceSimulator::Scratch::costsOf(const PlanTasks& p, const Target& t) {
  const bool same = lookedUpFor == &t && lookedUpOps.size() == p.ops.size() &&
                    std::equal(p.ops.begin(), p.ops.end(), lookedUpOps.begin(),
                               [](const auto& op, const auto& k) {
                                 return op.kernel.data() == k.first && op.dtype.data() == k.second;
                               });
  if (!same) {
    rate.resize(p.ops.size());
    measured.assign(p.ops.size(), nullptr);
    floors.assign(p.ops.size(), nullptr);
    squareElement.assign(p.ops.size(), 0.0);
    constantFloor.assign(p.ops.size(), 0);
    epilogue.assign(p.ops.size(), nullptr);
    epiloguePasses.assign(p.ops.size(), 1.0);
    lookedUpOps.resize(p.ops.size());
    for (std::size_t op = 0; op < p.ops.size(); ++op) {
      rate[op] = t.flopsFor(p.ops[op].dtype);
      if (t.profile) {
        measured[op] = t.profile->tableFor(p.ops[op].kernel);
        floors[op] = t.profile->floorFor(p.ops[op].kernel);
        const KernelFamily* family = familyOfKernel(p.ops[op].kernel);
        if (family != nullptr && family->name == "matmul") {
          squareElement[op] = static_cast<double>(plan::dtypeSize(p.ops[op].dtype));
        }
        const bool weighed = family != nullptr && family->name == "conv" &&
                             t.profile->table("conv_weights") != nullptr;
        constantFloor[op] = weighed ? 0 : 1;
        if (!p.ops[op].epilogue.empty()) {
          const ProfileTable* e = t.profile->tableFor(p.ops[op].epilogue);
          epilogue[op] = e != nullptr && e->measure == WorkMeasure::Bytes ? e : nullptr;
          std::string_view name = p.ops[op].kernel;
          double passes = 0;
          while (name.substr(0, 5) == "fuse(") {
            name.remove_prefix(5);
            passes += 1;
          }
          epiloguePasses[op] = std::max(passes, 1.0);
        }
      }
      lookedUpOps[op] = {p.ops[op].kernel.data(), p.ops[op].dtype.data()};
    }
    lookedUpFor = &t;
  }
  busy = 0;
  startDelay = 0;
  streamTable = nullptr;
  copyTable = nullptr;
  perCall = false;
  constantPerByte = 0;
  copiesOnDevice = false;
  assembles = pricesImageCopies(t);
  if (!t.profile) {
    return;
  }
  copiesOnDevice = t.profile->copiesOnDevice;
  busyDevice.assign(static_cast<std::size_t>(std::max(t.deviceCount(), p.deviceCount)), 0);
  int used = 0;
  for (const PlanTasks::ShardTask& s : p.shards) {
    std::uint8_t& b = busyDevice[static_cast<std::size_t>(s.device)];
    used += b == 0 ? 1 : 0;
    b = 1;
  }
  const int most = t.profile->devices;
  startDelay = used > 1 ? t.profile->startOverhead : 0.0;
  if (most > 1 && used > 1) {
    busy = std::min(1.0, std::log(static_cast<double>(used)) / std::log(static_cast<double>(most)));
  }
  streamTable = t.profile->table("elementwise");
  copyTable = t.profile->backend == "cpu" ? t.profile->table("copy") : nullptr;
  perCall = t.profile->backend == "cpu";
  constantPerByte = constantSecondsPerByte(*t.profile, p.constantBytes, busy);
}

namespace {

// One shard's kernel time: its family's measured table at its size, or the
// roofline. A FLOPs-measured family (products, convolutions) was measured on
// shapes whose operands fit in cache; a shard that reads more than its FLOPs
// say (a 3x3 convolution of 512 channels on a 2x2 image, a classifier's
// weights for one row) runs at memory speed instead: the time to stream its
// bytes (`stream`, Profile::floorFor: for a convolution, measured on
// convolutions of many weights on a 2x2 image; else an elementwise pass).
// With `perCall` (a CPU profile) a batched product's shard is its products
// (ShardTask::products), each priced at its own size: the CPU backend makes
// one gemm call per product, and the table's rate for one large product is
// 2-2.6x too fast for attention's many small ones (docs/cost-model.md).
double shardSeconds(const ProfileTable* table, const ProfileTable* stream,
                    const PlanTasks::ShardTask& task, double busy, double rate, double bandwidth,
                    bool perCall) {
  const auto flops = static_cast<double>(task.flops);
  const auto bytes = static_cast<double>(task.bytes);
  if (table == nullptr) {
    return std::max(flops / rate, bytes / bandwidth);
  }
  if (table->measure == WorkMeasure::Bytes) {
    return table->time(bytes, busy);
  }
  const auto calls = static_cast<double>(perCall ? std::max<std::int64_t>(task.products, 1) : 1);
  const double computed = calls * table->time(flops / calls, busy);
  return stream != nullptr ? std::max(computed, stream->streamTime(bytes, busy)) : computed;
}

// The time a product spends copying a W that is not a constant input into
// oneDNN's layout, on every call, beyond what its table already holds: the
// matmul table was measured on squares [s, s] x [s, s] whose W is copied too,
// so only the bytes past the square of the shard's FLOPs (2 s^3) count, at the
// copy family's speed (a read and a write of each byte). From one-product
// graphs on 2 cores: [32, 784] x [784, 512] per device took 154-212 us with
// W copied, 121-128 constant, and 16 and 64 MiB of W added 50-125 us per
// MiB; the copy table gives 55-62 (docs/cost-model.md).
double repackSeconds(const ProfileTable& copy, const PlanTasks::ShardTask& task,
                     double squareElement, double busy) {
  const double side = std::cbrt(static_cast<double>(task.flops) / 2.0);
  const double beyond = static_cast<double>(task.repacked) - side * side * squareElement;
  return beyond > 0 ? copy.time(2.0 * beyond, busy) : 0.0;
}

} // namespace

// One shard's time on its device, without the task overhead: its kernel,
// the copies the CPU backend makes for it (a W that is not constant, images
// that are not blocks of their regions), its epilogue pass, floored at
// reading its constant inputs from memory where they outgrow the cache.
double ChoiceSimulator::Scratch::shardWork(const PlanTasks& p, u32 opIndex,
                                           const PlanTasks::ShardTask& task,
                                           double bandwidth) const {
  double work = shardSeconds(measured[opIndex], floors[opIndex], task, busy, rate[opIndex],
                             bandwidth, perCall);
  if (task.repacked > 0 && copyTable != nullptr && squareElement[opIndex] > 0) {
    work += repackSeconds(*copyTable, task, squareElement[opIndex], busy);
  }
  // An image copied whole before the call (ShardTask::assembled): a read and
  // a write of each byte, at the copy family's speed with a CPU profile, at
  // the memory bandwidth on a CPU target without one.
  if (task.assembled > 0 && assembles) {
    const double moved = 2.0 * static_cast<double>(task.assembled);
    work += copyTable != nullptr ? copyTable->time(moved, busy) : moved / bandwidth;
  }
  if (const ProfileTable* e = epilogue[opIndex]) {
    double written = 0;
    for (u32 b = task.outBegin; b < task.outEnd; ++b) {
      written += static_cast<double>(p.buffers[b].bytes);
    }
    work += epiloguePasses[opIndex] * e->time(2.0 * written, busy);
  }
  if (task.constant > 0 && constantPerByte > 0 && constantFloor[opIndex] != 0) {
    work = std::max(work, static_cast<double>(task.constant) * constantPerByte);
  }
  return work;
}

void ChoiceSimulator::Scratch::run(const PlanTasks& p, const Target& t) {
  const int devices = t.deviceCount();
  if (p.deviceCount > devices) {
    // A plan's device ids are below its own count; only the ones used matter.
    for (const PlanTasks::ShardTask& s : p.shards) {
      if (s.device >= devices) {
        throw Error("the plan uses device " + std::to_string(s.device) + " but target " + t.name +
                    " has " + std::to_string(devices) + " devices (0 to " +
                    std::to_string(devices - 1) + ")");
      }
    }
  }
  const auto nDev = static_cast<std::size_t>(std::max(devices, p.deviceCount));
  costsOf(p, t);
  devFree.assign(nDev, 0.0);
  linkFree.assign((nDev + 1) * (nDev + 1), 0.0);
  alloc.assign(p.buffers.size(), 0.0);
  ready.assign(p.buffers.size(), 0.0);
  lastUse.assign(p.buffers.size(), 0.0);
  shards.resize(p.shards.size());
  transfers.resize(p.transfers.size());
  reductions.resize(p.reductions.size());
  const double bandwidth = t.devices.memoryBandwidth;
  const double overhead = t.profile ? t.profile->taskOverhead : t.devices.launchOverhead;

  for (u32 opIndex : p.order) {
    const PlanTasks::Op& op = p.ops[opIndex];
    // Input transfers: their sources are earlier ops', already simulated.
    for (u32 i = op.transferBegin; i < op.transferEnd; ++i) {
      const std::int64_t source = p.transfers[i].source;
      transfer(p, t, i, source >= 0 ? ready[static_cast<std::size_t>(source)] : 0.0);
    }
    // Shards, in order, each on its device's queue.
    for (u32 s = op.shardBegin; s < op.shardEnd; ++s) {
      const PlanTasks::ShardTask& task = p.shards[s];
      double& free = devFree[static_cast<std::size_t>(task.device)];
      double start = free;
      for (u32 k = task.readBegin; k < task.readEnd; ++k) {
        start = std::max(start, ready[p.reads[k]]);
      }
      const double work = shardWork(p, opIndex, task, bandwidth);
      const double end = start + work + overhead;
      free = end;
      shards[s] = Interval{start, end};
      for (u32 k = task.readBegin; k < task.readEnd; ++k) {
        double& used = lastUse[p.reads[k]];
        used = std::max(used, end);
      }
      for (u32 b = task.outBegin; b < task.outEnd; ++b) {
        alloc[b] = start;
        ready[b] = end;
      }
    }
    // Reductions: each step moves a partial (when needed), then adds it in on
    // the receiving device: one op per element, 3 x the region's bytes.
    for (u32 ri = op.reductionBegin; ri < op.reductionEnd; ++ri) {
      const PlanTasks::ReductionTask& red = p.reductions[ri];
      const double combine =
          (streamTable != nullptr ? streamTable->time(3.0 * static_cast<double>(red.bytes), busy)
                                  : std::max(static_cast<double>(red.elements) / rate[opIndex],
                                             3.0 * static_cast<double>(red.bytes) / bandwidth)) +
          overhead;
      double first = kNever;
      for (u32 si = red.stepBegin; si < red.stepEnd; ++si) {
        const PlanTasks::Step& step = p.steps[si];
        double arrival = ready[step.from];
        std::size_t moved = step.from;
        if (step.transfer >= 0) {
          const auto ti = static_cast<std::size_t>(step.transfer);
          transfer(p, t, ti, arrival);
          arrival = transfers[ti].end;
          first = std::min(first, transfers[ti].start);
          moved = p.transfers[ti].buffer;
        }
        double& free = devFree[static_cast<std::size_t>(step.device)];
        const double start = std::max({free, arrival, ready[step.into]});
        const double end = start + combine;
        free = end;
        first = std::min(first, start);
        ready[step.into] = end;
        lastUse[step.into] = std::max(lastUse[step.into], end);
        lastUse[moved] = std::max(lastUse[moved], end);
      }
      reductions[ri] = Interval{first == kNever ? ready[red.root] : first, ready[red.root]};
    }
  }

  double makespan = 0;
  for (const Interval& i : shards) {
    makespan = std::max(makespan, i.end);
  }
  for (const Interval& i : transfers) {
    makespan = std::max(makespan, i.end);
  }
  for (const Interval& i : reductions) {
    makespan = std::max(makespan, i.end);
  }
  std::int64_t moved = 0;
  for (const PlanTasks::TransferTask& tr : p.transfers) {
    moved += tr.bytes;
  }
  objectives.timeS = makespan > 0 ? makespan + startDelay : 0.0;
  objectives.transferBytes = moved;
  memory(p, t);
}

// Peak live bytes per device: allocations and frees bucketed by device (a
// counting sort), in buffer order, then detail::peakLive per device.
// What is allocated at time 0 (resident inputs, and whatever starts there) is
// summed per device instead: it comes after the frees at time 0 and before
// every other event, and with resident weights it is most of a plan's events.
void ChoiceSimulator::Scratch::memory(const PlanTasks& p, const Target& t) {
  const std::size_t nDev = devFree.size();
  allocStarts.assign(nDev + 1, 0);
  freeStarts.assign(nDev + 1, 0);
  for (const PlanTasks::Buffer& b : p.buffers) {
    if (b.bytes > 0) {
      const auto d = static_cast<std::size_t>(b.device) + 1;
      ++allocStarts[d];
      freeStarts[d] += b.keep ? 0 : 1;
    }
  }
  for (std::size_t d = 0; d < nDev; ++d) {
    allocStarts[d + 1] += allocStarts[d];
    freeStarts[d + 1] += freeStarts[d];
  }
  allocEnd.assign(allocStarts.begin(), allocStarts.end() - 1);
  freeEnd.assign(freeStarts.begin(), freeStarts.end() - 1);
  allocs.resize(allocStarts[nDev]);
  frees.resize(freeStarts[nDev]);
  atZero.assign(nDev, 0);
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanTasks::Buffer& b = p.buffers[i];
    if (b.bytes <= 0) {
      continue;
    }
    const auto d = static_cast<std::size_t>(b.device);
    // The backend's packed copy is made when the input arrives, kept all run.
    const std::int64_t bytes = b.bytes + b.packed;
    const std::uint64_t key = eventKey(alloc[i], true);
    if (key == kZeroAlloc) {
      atZero[d] += bytes;
    } else {
      allocs[allocEnd[d]++] = MemEvent{key, bytes};
    }
    if (!b.keep) {
      frees[freeEnd[d]++] = MemEvent{eventKey(std::max(ready[i], lastUse[i]), false), -b.bytes};
    }
  }
  peak.assign(nDev, 0);
  std::int64_t most = 0;
  bool feasible = true;
  for (std::size_t d = 0; d < nDev; ++d) {
    const std::int64_t top = detail::peakLive(
        allocs.data() + allocStarts[d], allocEnd[d] - allocStarts[d], frees.data() + freeStarts[d],
        freeEnd[d] - freeStarts[d], atZero[d], peakScratch);
    peak[d] = top;
    most = std::max(most, top);
    feasible = feasible && top <= t.devices.memory;
  }
  objectives.peakMemoryBytes = most;
  objectives.feasible = feasible;
}

Simulation simulate(const plan::PlanTasks& tasks, const Target& t) {
  ChoiceSimulator::Scratch scratch;
  scratch.run(tasks, t);
  Simulation s;
  s.objectives = scratch.objectives;
  s.shards.resize(tasks.ops.size());
  for (std::size_t op = 0; op < tasks.ops.size(); ++op) {
    s.shards[op].assign(scratch.shards.begin() + tasks.ops[op].shardBegin,
                        scratch.shards.begin() + tasks.ops[op].shardEnd);
  }
  s.transfers = std::move(scratch.transfers);
  s.reductions = std::move(scratch.reductions);
  s.peakPerDevice = std::move(scratch.peak);
  s.peakPerDevice.resize(static_cast<std::size_t>(t.deviceCount()));
  return s;
}

Simulation simulate(const graph::ExpandedGraph& g, const Target& t, const plan::ShardPlan& p) {
  return simulate(plan::summarize(g, p), t);
}

Objectives evaluate(const graph::ExpandedGraph& g, const Target& t, const plan::ShardPlan& p) {
  return simulate(g, t, p).objectives;
}

bool dominates(const Objectives& a, const Objectives& b) {
  if (a.feasible != b.feasible) {
    return a.feasible;
  }
  const bool noWorse = a.timeS <= b.timeS && a.peakMemoryBytes <= b.peakMemoryBytes &&
                       a.transferBytes <= b.transferBytes;
  const bool better = a.timeS < b.timeS || a.peakMemoryBytes < b.peakMemoryBytes ||
                      a.transferBytes < b.transferBytes;
  return noWorse && better;
}

// ---------------------------------------------------------------- ChoiceSimulator

bool pricesImageCopies(const Target& t) {
  return t.profile ? t.profile->backend == "cpu" : t.devices.kind == DeviceKind::Cpu;
}

ChoiceSimulator::ChoiceSimulator(const graph::ExpandedGraph& g, const Target& t,
                                 plan::PlanOptions options)
    : ChoiceSimulator(plan::PlanContext(g), t, options) {}

ChoiceSimulator::ChoiceSimulator(plan::PlanContext context, const Target& t,
                                 plan::PlanOptions options)
    : target_(&t), builder_(std::move(context), t.deviceCount(), options),
      scratch_(std::make_unique<Scratch>()) {
  builder_.setImageCopies(pricesImageCopies(t));
}

ChoiceSimulator::~ChoiceSimulator() = default;
ChoiceSimulator::ChoiceSimulator(ChoiceSimulator&&) noexcept = default;
ChoiceSimulator& ChoiceSimulator::operator=(ChoiceSimulator&&) noexcept = default;

Objectives ChoiceSimulator::evaluate(const plan::PlanChoice& choice) {
  scratch_->run(builder_.tasks(choice), *target_);
  return scratch_->objectives;
}

plan::ShardPlan ChoiceSimulator::plan(const plan::PlanChoice& choice) {
  return builder_.plan(choice);
}

const Target& ChoiceSimulator::target() const {
  return *target_;
}

plan::PlanBuilder& ChoiceSimulator::builder() {
  return builder_;
}

} // namespace tapestry::cost
