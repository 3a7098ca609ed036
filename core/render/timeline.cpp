#include "core/render/timeline.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "core/diag/error.hpp"

namespace tapestry::render {

TaskIntervals intervalsOf(const cost::Simulation& simulation) {
  return TaskIntervals{simulation.shards, simulation.transfers, simulation.reductions};
}

namespace {

void checkParallel(const plan::ShardPlan& p, const TaskIntervals& times) {
  bool ok = times.shards.size() == p.ops.size() && times.transfers.size() == p.transfers.size() &&
            times.reductions.size() == p.reductions.size();
  for (std::size_t op = 0; ok && op < p.ops.size(); ++op) {
    ok = times.shards[op].size() == p.ops[op].shards.size();
  }
  checkInvariant(ok, "timeline: the task times are the plan's");
}

// Raises each slice's start to the end of the track's slices that end before
// it (in order of end), so that no two slices of a track partially overlap.
void clipTrack(std::vector<Slice*>& slices) {
  std::stable_sort(slices.begin(), slices.end(), [](const Slice* a, const Slice* b) {
    return a->end < b->end || (a->end == b->end && a->start < b->start);
  });
  double cursor = 0;
  for (Slice* s : slices) {
    s->start = std::min(std::max(s->start, cursor), s->end);
    cursor = s->end;
  }
}

// The track of each device, then one per link in (from, to) order.
class TrackTable {
public:
  TrackTable(const plan::ShardPlan& p, Timeline& t) : t_(t) {
    for (int d = 0; d < p.deviceCount; ++d) {
      Track track;
      track.kind = Track::Kind::Device;
      track.device = d;
      track.name = "device " + std::to_string(d);
      t.tracks.push_back(track);
    }
    for (const plan::Transfer& tr : p.transfers) {
      links_.emplace(std::make_pair(tr.from, tr.to), 0);
    }
    for (auto& [key, index] : links_) {
      index = t.tracks.size();
      Track track;
      track.kind = Track::Kind::Link;
      track.from = key.first;
      track.to = key.second;
      track.name = "link " + plan::placeName(key.first) + "->" + plan::placeName(key.second);
      t.tracks.push_back(track);
    }
  }
  std::size_t link(int from, int to) const { return links_.at({from, to}); }

private:
  Timeline& t_;
  std::map<std::pair<int, int>, std::size_t> links_;
};

// The op each transfer belongs to: the op whose input transfers or partial
// moves it is among.
std::vector<std::size_t> transferOps(const plan::ShardPlan& p) {
  std::vector<std::size_t> ops(p.transfers.size(), 0);
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    for (std::size_t i = p.ops[op].inputTransfers.first; i < p.ops[op].partialTransfersEnd; ++i) {
      ops[i] = op;
    }
  }
  return ops;
}

// Slice indices by task, to connect flows before the slices are sorted.
struct SliceIndex {
  std::vector<std::vector<std::size_t>> shards;
  std::vector<std::size_t> transfers;
  std::vector<std::size_t> reductions;
};

SliceIndex addSlices(const plan::LoadedPlan& loaded, const TaskIntervals& times, Timeline& t) {
  const graph::ExpandedGraph& g = loaded.graph;
  const plan::ShardPlan& p = loaded.plan;
  const TrackTable tracks(p, t);
  SliceIndex index;
  auto add = [&](Slice s, const cost::Interval& when) {
    s.start = s.spanStart = when.start;
    s.end = when.end;
    t.slices.push_back(std::move(s));
    return t.slices.size() - 1;
  };
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    index.shards.emplace_back();
    for (std::size_t k = 0; k < p.ops[op].shards.size(); ++k) {
      Slice s;
      s.kind = Slice::Kind::Shard;
      s.track = static_cast<std::size_t>(p.ops[op].shards[k].device);
      s.index = s.op = op;
      s.shard = k;
      s.name = g.operations[op].name + " #" + std::to_string(k);
      index.shards.back().push_back(add(std::move(s), times.shards[op][k]));
    }
  }
  const std::vector<std::size_t> ops = transferOps(p);
  for (std::size_t i = 0; i < p.transfers.size(); ++i) {
    const plan::Transfer& tr = p.transfers[i];
    Slice s;
    s.kind = Slice::Kind::Transfer;
    s.track = tracks.link(tr.from, tr.to);
    s.index = i;
    s.op = ops[i];
    s.name = (tr.reduction ? "partial " : "") + g.tensors[tr.tensor].name + " " +
             plan::placeName(tr.from) + "->" + plan::placeName(tr.to);
    index.transfers.push_back(add(std::move(s), times.transfers[i]));
  }
  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    const plan::Reduction& red = p.reductions[r];
    Slice s;
    s.kind = Slice::Kind::Reduction;
    s.track = static_cast<std::size_t>(red.device);
    s.index = r;
    s.op = red.op;
    s.name = red.combine + " " + g.tensors[red.tensor].name;
    index.reductions.push_back(add(std::move(s), times.reductions[r]));
  }
  return index;
}

void addFlows(const plan::ShardPlan& p, const SliceIndex& index, Timeline& t) {
  auto source = [&](const plan::Source& s) -> std::optional<std::size_t> {
    switch (s.kind) {
    case plan::Source::Kind::Shard:
      return index.shards[s.index][s.shard];
    case plan::Source::Kind::Reduction:
      return index.reductions[s.index];
    case plan::Source::Kind::Transfer:
      return index.transfers[s.index];
    case plan::Source::Kind::Resident:
      return std::nullopt;
    }
    return std::nullopt;
  };
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    for (std::size_t k = 0; k < p.ops[op].shards.size(); ++k) {
      for (const plan::Source& s : p.ops[op].shards[k].reads) {
        if (auto from = source(s)) {
          t.flows.push_back(Flow{*from, index.shards[op][k]});
        }
      }
    }
  }
  for (std::size_t i = 0; i < p.transfers.size(); ++i) {
    const plan::Transfer& tr = p.transfers[i];
    if (tr.afterShard) {
      t.flows.push_back(
          Flow{index.shards[tr.afterShard->first][tr.afterShard->second], index.transfers[i]});
    } else if (tr.afterReduction) {
      t.flows.push_back(Flow{index.reductions[*tr.afterReduction], index.transfers[i]});
    } else if (tr.afterTransfer) {
      t.flows.push_back(Flow{index.transfers[*tr.afterTransfer], index.transfers[i]});
    }
  }
  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    const plan::Reduction& red = p.reductions[r];
    for (const plan::Reduction::Step& step : red.steps) {
      const std::size_t from = step.transfer ? index.transfers[*step.transfer]
                                             : index.shards[red.op][red.shards[step.from]];
      t.flows.push_back(Flow{from, index.reductions[r]});
      t.flows.push_back(Flow{index.shards[red.op][red.shards[step.into]], index.reductions[r]});
    }
  }
}

// Sorts the slices by track, then start, and renumbers the flows.
void sortSlices(Timeline& t) {
  std::vector<std::size_t> order(t.slices.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Slice& x = t.slices[a];
    const Slice& y = t.slices[b];
    return std::tie(x.track, x.start, x.end) < std::tie(y.track, y.start, y.end);
  });
  std::vector<std::size_t> position(order.size());
  std::vector<Slice> sorted;
  sorted.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
    sorted.push_back(std::move(t.slices[order[i]]));
  }
  t.slices = std::move(sorted);
  for (Flow& f : t.flows) {
    f.from = position[f.from];
    f.to = position[f.to];
  }
}

// The device whose worker runs a slice: its device, or a transfer's destination
// (the executor copies on the destination's worker, and the simulation holds
// the destination device for a copy).
int workerOf(const Timeline& t, const Slice& s) {
  const Track& track = t.tracks[s.track];
  return track.kind == Track::Kind::Device ? track.device : track.to;
}

// The critical path: from the slice that ends last, back through what each
// slice waited for that ended last before its drawn start (a reduction's:
// after its moves and the device's earlier work): an input (a flow), the
// previous slice on its track, or the previous task of its device's worker.
void markCriticalPath(Timeline& t) {
  if (t.slices.empty()) {
    return;
  }
  std::vector<std::vector<std::size_t>> waits(t.slices.size());
  for (const Flow& f : t.flows) {
    waits[f.to].push_back(f.from);
  }
  std::map<int, std::vector<std::size_t>> byWorker;
  for (std::size_t i = 0; i < t.slices.size(); ++i) {
    if (i > 0 && t.slices[i].track == t.slices[i - 1].track) {
      waits[i].push_back(i - 1);
    }
    byWorker[workerOf(t, t.slices[i])].push_back(i);
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < t.slices.size(); ++i) {
    if (t.slices[i].end > t.slices[at].end) {
      at = i;
    }
  }
  const double slack = 1e-9 + 1e-6 * t.slices[at].end;
  while (true) {
    t.slices[at].critical = true;
    const double start = t.slices[at].start + slack;
    std::optional<std::size_t> next;
    auto consider = [&](std::size_t w) {
      const Slice& s = t.slices[w];
      if (w != at && !s.critical && s.end <= start && (!next || s.end > t.slices[*next].end)) {
        next = w;
      }
    };
    for (std::size_t w : waits[at]) {
      consider(w);
    }
    for (std::size_t w : byWorker[workerOf(t, t.slices[at])]) {
      consider(w);
    }
    if (!next) {
      break;
    }
    at = *next;
  }
}

// Live bytes per device over time (the rule in timeline.hpp).
std::vector<std::vector<MemorySample>> memoryOf(const plan::LoadedPlan& loaded,
                                                const TaskIntervals& times) {
  const plan::PlanTasks tasks = plan::summarize(loaded.graph, loaded.plan);
  const std::size_t nBuffers = tasks.buffers.size();
  std::vector<double> alloc(nBuffers, 0), ready(nBuffers, 0), lastUse(nBuffers, 0);
  auto use = [&](std::size_t b, double when) { lastUse[b] = std::max(lastUse[b], when); };
  for (std::size_t op = 0; op < tasks.ops.size(); ++op) {
    for (std::uint32_t k = tasks.ops[op].shardBegin; k < tasks.ops[op].shardEnd; ++k) {
      const cost::Interval& when = times.shards[op][k - tasks.ops[op].shardBegin];
      const plan::PlanTasks::ShardTask& shard = tasks.shards[k];
      for (std::uint32_t b = shard.outBegin; b < shard.outEnd; ++b) {
        alloc[b] = when.start;
        ready[b] = when.end;
      }
      for (std::uint32_t r = shard.readBegin; r < shard.readEnd; ++r) {
        use(tasks.reads[r], when.end);
      }
    }
  }
  for (std::size_t i = 0; i < tasks.transfers.size(); ++i) {
    const plan::PlanTasks::TransferTask& tr = tasks.transfers[i];
    alloc[tr.buffer] = times.transfers[i].start;
    ready[tr.buffer] = times.transfers[i].end;
    if (tr.source >= 0) {
      use(static_cast<std::size_t>(tr.source), times.transfers[i].end);
    }
  }
  for (std::size_t r = 0; r < tasks.reductions.size(); ++r) {
    const plan::PlanTasks::ReductionTask& red = tasks.reductions[r];
    for (std::uint32_t s = red.stepBegin; s < red.stepEnd; ++s) {
      const plan::PlanTasks::Step& step = tasks.steps[s];
      use(step.from, times.reductions[r].end);
      use(step.into, times.reductions[r].end);
      if (step.transfer >= 0) {
        use(tasks.transfers[static_cast<std::size_t>(step.transfer)].buffer,
            times.reductions[r].end);
      }
    }
  }
  // Per device: (time, frees first) events, then one sample per distinct time.
  std::vector<std::vector<std::pair<std::pair<double, int>, std::int64_t>>> events(
      static_cast<std::size_t>(std::max(tasks.deviceCount, 0)));
  for (std::size_t b = 0; b < nBuffers; ++b) {
    const plan::PlanTasks::Buffer& buffer = tasks.buffers[b];
    auto& list = events[static_cast<std::size_t>(buffer.device)];
    list.push_back({{alloc[b], 1}, buffer.bytes});
    if (!buffer.keep) {
      list.push_back({{std::max(ready[b], lastUse[b]), 0}, -buffer.bytes});
    }
  }
  std::vector<std::vector<MemorySample>> memory(events.size());
  for (std::size_t d = 0; d < events.size(); ++d) {
    std::sort(events[d].begin(), events[d].end());
    std::int64_t live = 0;
    memory[d].push_back(MemorySample{0, 0});
    for (const auto& [key, bytes] : events[d]) {
      live += bytes;
      if (memory[d].back().time == key.first) {
        memory[d].back().bytes = live;
      } else {
        memory[d].push_back(MemorySample{key.first, live});
      }
    }
  }
  return memory;
}

} // namespace

Timeline buildTimeline(const plan::LoadedPlan& loaded, const TaskIntervals& times,
                       const std::string& label) {
  checkParallel(loaded.plan, times);
  Timeline t;
  t.label = label;
  const SliceIndex index = addSlices(loaded, times, t);
  addFlows(loaded.plan, index, t);
  std::vector<std::vector<Slice*>> byTrack(t.tracks.size());
  for (Slice& s : t.slices) {
    byTrack[s.track].push_back(&s);
  }
  for (std::vector<Slice*>& slices : byTrack) {
    clipTrack(slices);
  }
  sortSlices(t);
  markCriticalPath(t);
  for (const Slice& s : t.slices) {
    t.end = std::max(t.end, s.end);
  }
  t.memory = memoryOf(loaded, times);
  return t;
}

std::vector<double> deviceBusy(const plan::ShardPlan& p, const TaskIntervals& times) {
  checkParallel(p, times);
  std::vector<std::vector<Slice>> perDevice(static_cast<std::size_t>(std::max(p.deviceCount, 0)));
  for (std::size_t op = 0; op < p.ops.size(); ++op) {
    for (std::size_t k = 0; k < p.ops[op].shards.size(); ++k) {
      Slice s;
      s.start = times.shards[op][k].start;
      s.end = times.shards[op][k].end;
      perDevice[static_cast<std::size_t>(p.ops[op].shards[k].device)].push_back(s);
    }
  }
  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    Slice s;
    s.start = times.reductions[r].start;
    s.end = times.reductions[r].end;
    perDevice[static_cast<std::size_t>(p.reductions[r].device)].push_back(s);
  }
  std::vector<double> busy;
  for (std::vector<Slice>& slices : perDevice) {
    std::vector<Slice*> pointers;
    for (Slice& s : slices) {
      pointers.push_back(&s);
    }
    clipTrack(pointers);
    double sum = 0;
    for (const Slice* s : pointers) {
      sum += s->seconds();
    }
    busy.push_back(sum);
  }
  return busy;
}

} // namespace tapestry::render
