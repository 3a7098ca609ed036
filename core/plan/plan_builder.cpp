// Building sharded plans: shards and selections, reduction trees, transfers.
//
// One builder does the geometry on flat integer boxes in a reusable arena (no
// ZRange, no allocation once warm), then either emits the cost model's tasks
// (PlanBuilder::tasks, the search's fast path) or materializes a ShardPlan.
//
// This file is longer than 800 lines: the builder is one state machine over
// one arena (PlanBuilder::Workspace), and its phases (tiles, reductions,
// transfers, emission) share that arena's private records; splitting it across
// files would expose them to the rest of core/plan.
#include "core/plan/plan.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "core/diag/error.hpp"
#include "core/expr/dtype.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/plan/plan_internal.hpp"
#include "core/zspace/layout.hpp"
#include "core/zspace/zspace_json.hpp"

namespace tapestry::plan {

// ---------------------------------------------------------------- building

namespace {

using u32 = std::uint32_t;
// Projections accumulate in 128 bits: a product of two int64 always fits, and
// the result is clipped to the tensor before it is narrowed.
__extension__ typedef __int128 Wide;
constexpr int kResidentPlace = -2; // a resident graph input: on every device that reads it

// A region of a tensor that lives in one place: a producer tile, a reduction
// result, or a graph input (on the host, or resident).
struct HeldRegion {
  Source source;   // Shard or Reduction (index, shard, tensor); for inputs only tensor
  u32 element = 0; // Shard: the output element of the op
  u32 box = 0;
  int place = kHost;
  bool input = false;
};

struct ReductionGroup {
  u32 op = 0;
  u32 element = 0; // output element of the op
  u32 box = 0;     // the region (the head shard's selection)
  int device = 0;
  u32 memberBegin = 0, memberEnd = 0; // into members: local shard indices
  u32 stepBegin = 0, stepEnd = 0;     // into steps
};

struct ReductionStepRecord {
  u32 from = 0, into = 0; // positions in the member list
  std::int64_t transfer = -1;
};

struct TransferRecord {
  u32 tensor = 0;
  u32 box = 0;
  int from = kHost;
  int to = 0;
  enum class After : std::uint8_t { None, Shard, Reduction, Transfer } after = After::None;
  u32 afterA = 0, afterB = 0; // (op, shard) or (reduction)
  std::int64_t reduction = -1;
  std::int64_t bytes = 0;
};

struct ResidentRecord {
  u32 tensor = 0;
  u32 box = 0;
  int device = 0;
  std::int64_t bytes = 0;
};

struct OpSlices {
  u32 transferBegin = 0, transferEnd = 0, partialEnd = 0;
  u32 reductionBegin = 0, reductionEnd = 0;
};

} // namespace

struct PlanBuilder::Workspace {
  Workspace(PlanContext c, int d, PlanOptions o)
      : context(std::move(c)), ctx(context.impl()), g(*ctx.graph), devices(d), options(o),
        tileMemos(g.operations.size()), tileMemoNext(g.operations.size(), 0) {}

  PlanContext context;
  const PlanContext::Impl& ctx;
  const graph::ExpandedGraph& g;
  int devices;
  PlanOptions options;
  const PlanChoice* choice = nullptr;

  // Box arena: a box of rank r at o is lo[o, o+r), hi[o+r, o+2r); co[0, coUsed) is in use.
  std::vector<std::int64_t> co;
  std::size_t coUsed = 0;

  // Shards, numbered op by op in graph order.
  std::vector<u32> shardBase; // per op, and the total at the end
  std::vector<u32> indexBox;
  std::vector<int> device;
  std::vector<std::int64_t> flops;
  std::vector<std::int64_t> bytes;
  std::vector<std::int64_t> repacked;  // see ShardTask::repacked
  std::vector<std::int64_t> constant;  // see ShardTask::constant
  std::vector<std::int64_t> products;  // see ShardTask::products
  std::vector<std::int64_t> assembled; // see ShardTask::assembled
  bool imageCopies = true;             // tasks() works assembled out (setImageCopies)
  std::vector<char> partial;
  std::vector<u32> readBegin, readEnd; // into reads
  // Selections: op i's shard k, element e (inputs then outputs) at
  // selBase[i] + k * (inputs + outputs) + e.
  std::vector<u32> selBase;
  std::vector<u32> sel;

  std::vector<std::int64_t> cutBase, cutLonger, tileCoord; // per index dim, scratch

  // Per op, the tiles of the last few splits it was built with. An op's tiles
  // (index boxes, selections, flops and bytes) depend on its split alone, not
  // on its devices, and a search's candidates mostly keep their parents'
  // splits: a hit copies the boxes instead of projecting them again.
  struct TileMemo {
    std::vector<std::int64_t> split;
    std::vector<std::int64_t> boxes; // the op's arena block: per shard, index box then selections
    std::vector<std::int64_t> flops, bytes, repacked, constant, products; // per shard
  };
  static constexpr std::size_t kTileMemos = 8;  // per op, replaced in turn
  std::vector<std::vector<TileMemo>> tileMemos; // per op
  std::vector<u32> tileMemoNext;                // per op: the entry replaced next
  std::vector<u32> group;                       // per local shard, scratch
  std::vector<u32> groupFirst;
  std::size_t groupCount = 1;

  std::vector<ReductionGroup> reds;
  std::vector<u32> members;
  std::vector<ReductionStepRecord> steps;
  std::vector<OpSlices> slices;

  std::vector<HeldRegion> srcs;
  std::vector<u32> srcBegin, srcEnd; // per tensor
  std::vector<std::int64_t> slot;    // [source * devices + device]: transfer or resident index

  std::vector<TransferRecord> trs;
  std::vector<ResidentRecord> res;
  std::vector<Source> reads;

  PlanTasks tasks;
  std::vector<u32> tileBase; // per op: first tile buffer

  // ---- boxes
  u32 newBox(std::size_t rank) {
    const std::size_t o = coUsed;
    coUsed += 2 * rank;
    if (coUsed > co.size()) {
      co.resize(std::max(coUsed, 2 * co.size()));
    }
    return static_cast<u32>(o);
  }
  u32 copyBox(u32 b, std::size_t rank) {
    const u32 o = newBox(rank);
    std::copy_n(co.begin() + b, 2 * rank, co.begin() + o);
    return o;
  }
  bool boxEmpty(u32 b, std::size_t rank) const {
    for (std::size_t d = 0; d < rank; ++d) {
      if (co[b + rank + d] <= co[b + d]) {
        return true;
      }
    }
    return false;
  }
  std::int64_t boxSize(u32 b, std::size_t rank) const {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t e = co[b + rank + d] - co[b + d];
      if (e <= 0) {
        return 0;
      }
      n *= e;
    }
    return n;
  }
  bool boxesIntersect(u32 a, u32 b, std::size_t rank) const {
    for (std::size_t d = 0; d < rank; ++d) {
      if (std::max(co[a + d], co[b + d]) >= std::min(co[a + rank + d], co[b + rank + d])) {
        return false;
      }
    }
    return true;
  }
  bool boxContains(u32 a, u32 b, std::size_t rank) const {
    for (std::size_t d = 0; d < rank; ++d) {
      if (co[b + d] < co[a + d] || co[b + rank + d] > co[a + rank + d]) {
        return false;
      }
    }
    return true;
  }
  // a's bounds widened to hold a ∩ b (both non-empty and intersecting).
  void extendByIntersection(u32 a, u32 x, u32 y, std::size_t rank) {
    for (std::size_t d = 0; d < rank; ++d) {
      co[a + d] = std::min(co[a + d], std::max(co[x + d], co[y + d]));
      co[a + rank + d] = std::max(co[a + rank + d], std::min(co[x + rank + d], co[y + rank + d]));
    }
  }
  u32 intersectionBox(u32 x, u32 y, std::size_t rank) {
    const u32 o = newBox(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      co[o + d] = std::max(co[x + d], co[y + d]);
      co[o + rank + d] = std::min(co[x + rank + d], co[y + rank + d]);
    }
    return o;
  }
  ZRange toRange(u32 b, std::size_t rank) const {
    const auto* p = co.data() + b;
    return ZRange(ZPoint(std::span<const std::int64_t>(p, rank)),
                  ZPoint(std::span<const std::int64_t>(p + rank, rank)));
  }

  const ElementInfo& element(u32 op, u32 e) const {
    const OpTables& t = ctx.ops[op];
    return e < t.inputs.size() ? t.inputs[e] : t.outputs[e - t.inputs.size()];
  }
  u32 elementCount(u32 op) const {
    return static_cast<u32>(ctx.ops[op].inputs.size() + ctx.ops[op].outputs.size());
  }
  u32 selection(u32 op, u32 local, u32 e) const {
    return sel[selBase[op] + local * elementCount(op) + e];
  }
  u32 outSelection(u32 op, u32 local, u32 k) const {
    return selection(op, local, static_cast<u32>(ctx.ops[op].inputs.size()) + k);
  }

  // ---- the build
  void build(const PlanChoice& c, bool images = true) {
    choice = &c;
    checkAll();
    reset();
    registerInputs();
    for (std::size_t op : g.order) {
      makeShards(static_cast<u32>(op));
      checkDisjoint(static_cast<u32>(op));
      makeReductions(static_cast<u32>(op));
      registerSources(static_cast<u32>(op));
    }
    slot.assign(srcs.size() * static_cast<std::size_t>(devices), -1);
    for (std::size_t op : g.order) {
      connect(static_cast<u32>(op));
    }
    for (TransferRecord& t : trs) {
      t.bytes = boxSize(t.box, g.tensors[t.tensor].type.shape.size()) * ctx.elemBytes[t.tensor];
    }
    for (ResidentRecord& r : res) {
      r.bytes = boxSize(r.box, g.tensors[r.tensor].type.shape.size()) * ctx.elemBytes[r.tensor];
    }
    if (relaying()) {
      relay();
    }
    assembled.assign(shardBase[g.operations.size()], 0);
    for (std::size_t op : g.order) {
      if (images && ctx.ops[op].readsImage) {
        findAssembled(static_cast<u32>(op));
      }
    }
  }

  // The box of the region a read names (its final extent: a transfer's box
  // grows as later shards on its device read more of its source).
  u32 regionOf(const Source& r) const {
    switch (r.kind) {
    case Source::Kind::Shard:
      return outSelection(static_cast<u32>(r.index), static_cast<u32>(r.shard),
                          outputElementOf(static_cast<u32>(r.index), r.tensor));
    case Source::Kind::Reduction:
      return reds[r.index].box;
    case Source::Kind::Transfer:
      return trs[r.index].box;
    case Source::Kind::Resident:
      return res[r.index].box;
    }
    throw InternalError("plan: unknown source kind");
  }

  // Whether `part` (extents per dim, within a region of extents `region`) is
  // one block of the region laid out channels last: inside the first dim
  // (from C outwards) where it is shorter than the region it spans the
  // region; outside it, its extent is 1.
  static bool isBlock(const std::int64_t* part, const std::int64_t* region) {
    static constexpr std::size_t kInnerFirst[4] = {1, 3, 2, 0};
    bool cut = false;
    for (const std::size_t d : kInnerFirst) {
      if (cut && part[d] != 1) {
        return false;
      }
      cut = cut || part[d] < region[d];
    }
    return true;
  }

  // Whether image element `info` is read through a window along its dim d
  // over the shard of index box `ib`: its IPF tile is longer than 1, or
  // another term of the row (a kernel offset) spans more than one point.
  bool windowed(const ElementInfo& info, u32 ib, std::size_t rank, std::size_t d) const {
    if (info.imageTile[d]) {
      return true;
    }
    for (std::size_t col = 0; col < rank; ++col) {
      if ((info.imageWindow[d] >> col & 1U) != 0 && co[ib + rank + col] - co[ib + col] > 1) {
        return true;
      }
    }
    return false;
  }

  // Per shard of `op`: the bytes of its image selections the CPU backend
  // copies before the call (ShardTask::assembled), as its executor and
  // kernels do (backends/executor_cut.cpp, imageRead). Where regions meet
  // inside a selection along a dim the image is read through a window on (a
  // convolution's rows or columns with its kernel's), the shard is cut there
  // only if every part is a block along that dim; if not, the whole
  // selection is assembled. Otherwise each part is read in place, except
  // that a convolution copies a part that is not one dense block of its
  // region (a column half of a whole region, a channel part, rows of several
  // images).
  void findAssembled(u32 op) {
    const OpTables& t = ctx.ops[op];
    const u32 first = shardBase[op];
    const u32 count = shardBase[op + 1] - first;
    for (u32 local = 0; local < count; ++local) {
      const u32 s = first + local;
      const u32 ib = indexBox[s];
      for (u32 e = 0; e < t.inputs.size(); ++e) {
        const ElementInfo& info = t.inputs[e];
        const u32 box = selection(op, local, e);
        if (info.image == ImageRead::None || boxEmpty(box, info.rank)) {
          continue;
        }
        std::int64_t copied = 0;
        bool whole = false;
        for (u32 k = readBegin[s]; k < readEnd[s] && !whole; ++k) {
          if (reads[k].tensor != info.tensor) {
            continue;
          }
          const u32 r = regionOf(reads[k]);
          std::array<std::int64_t, 4> part{};
          std::array<std::int64_t, 4> region{};
          std::int64_t size = info.elemBytes;
          for (std::size_t d = 0; d < 4; ++d) {
            const std::int64_t past = co[r + 4 + d] - co[box + 4 + d];
            const std::int64_t end =
                past > 0 && past < info.imageStride[d] ? co[r + 4 + d] : co[box + 4 + d];
            part[d] = std::min(co[r + 4 + d], end) - std::max(co[r + d], co[box + d]);
            region[d] = co[r + 4 + d] - co[r + d];
            size *= std::max<std::int64_t>(part[d], 0);
          }
          if (size == 0) {
            continue;
          }
          // The executor's cutting rule (backends/executor_cut.cpp), on the
          // region laid out channels last.
          const std::array<std::int64_t, 4> strides = channelsLastStrides4(region);
          for (std::size_t d = 0; d < 4; ++d) {
            const bool boundary = (co[r + d] > co[box + d] && co[r + d] < co[box + 4 + d]) ||
                                  (co[r + 4 + d] > co[box + d] && co[r + 4 + d] < co[box + 4 + d]);
            whole = whole || (boundary && windowed(info, ib, t.rank, d) &&
                              !tapestry::blockAlong(part, region, strides, d));
          }
          copied +=
              info.image == ImageRead::Dense && !isBlock(part.data(), region.data()) ? size : 0;
        }
        assembled[s] += whole ? boxSize(box, info.rank) * info.elemBytes : copied;
      }
    }
  }

  bool relaying() const { return !options.relayGroups.empty() && choice->relay; }

  bool boxesEqual(u32 a, u32 b, std::size_t rank) const {
    return std::equal(co.begin() + a, co.begin() + a + 2 * rank, co.begin() + b);
  }

  std::vector<std::int64_t> lastHost, nextSame, swapWith, hostBytes;
  std::vector<std::size_t> inputEnd; // per transfer: the end of its op's input transfers
  std::vector<char> visited;

  void relay() {
    const std::size_t n = trs.size();
    lastHost.assign(g.tensors.size(), -1);
    nextSame.assign(n, -1);
    swapWith.assign(n, -1);
    visited.assign(n, 0);
    hostBytes.assign(static_cast<std::size_t>(devices), 0);
    inputEnd.assign(n, 0);
    for (const OpSlices& sl : slices) {
      for (u32 k = sl.transferBegin; k < sl.transferEnd; ++k) {
        inputEnd[k] = sl.transferEnd;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (trs[i].from != kHost) {
        continue;
      }
      std::int64_t& last = lastHost[trs[i].tensor];
      if (last >= 0) {
        nextSame[static_cast<std::size_t>(last)] = static_cast<std::int64_t>(i);
      }
      last = static_cast<std::int64_t>(i);
    }
    bool swapped = false;
    for (std::size_t i = 0; i < n; ++i) {
      TransferRecord& head = trs[i];
      if (head.from != kHost || head.after != TransferRecord::After::None || visited[i] != 0) {
        continue;
      }
      visited[i] = 1;
      const std::size_t rank = g.tensors[head.tensor].type.shape.size();
      const int relayGroup = options.relayGroups[static_cast<std::size_t>(head.to)];
      // A later host transfer of the head's tensor that joins its group: not
      // yet taken, to a device of the same group, of the same region.
      auto alike = [&](std::size_t j) {
        const TransferRecord& o = trs[j];
        return visited[j] == 0 &&
               options.relayGroups[static_cast<std::size_t>(o.to)] == relayGroup &&
               boxesEqual(o.box, head.box, rank);
      };
      std::size_t best = i;
      std::size_t sharing = 1;
      for (std::int64_t j = nextSame[i]; j >= 0; j = nextSame[static_cast<std::size_t>(j)]) {
        const TransferRecord& o = trs[static_cast<std::size_t>(j)];
        if (!alike(static_cast<std::size_t>(j))) {
          continue;
        }
        ++sharing;
        // The gateway swaps places with the head, so it must be submitted
        // with the head's op: a transfer first needed by a later op would
        // then come after the head op's shards that read it.
        if (static_cast<std::size_t>(j) < inputEnd[i] &&
            hostBytes[static_cast<std::size_t>(o.to)] <
                hostBytes[static_cast<std::size_t>(trs[best].to)]) {
          best = static_cast<std::size_t>(j);
        }
      }
      if (best != i) {
        std::swap(head.to, trs[best].to);
        swapWith[i] = static_cast<std::int64_t>(best);
        swapWith[best] = static_cast<std::int64_t>(i);
        swapped = true;
      }
      hostBytes[static_cast<std::size_t>(head.to)] += head.bytes;
      if (sharing == 1) {
        continue;
      }
      for (std::int64_t j = nextSame[i]; j >= 0; j = nextSame[static_cast<std::size_t>(j)]) {
        TransferRecord& o = trs[static_cast<std::size_t>(j)];
        if (!alike(static_cast<std::size_t>(j))) {
          continue;
        }
        visited[static_cast<std::size_t>(j)] = 1;
        o.from = head.to;
        o.after = TransferRecord::After::Transfer;
        o.afterA = static_cast<u32>(i);
      }
    }
    if (swapped) {
      for (Source& r : reads) {
        if (r.kind == Source::Kind::Transfer && swapWith[r.index] >= 0) {
          r.index = static_cast<std::size_t>(swapWith[r.index]);
        }
      }
    }
  }

  void checkAll() const {
    if (auto reason = checkShape(g, devices, *choice)) {
      throw Error(*reason);
    }
    if (!options.relayGroups.empty() &&
        options.relayGroups.size() != static_cast<std::size_t>(devices)) {
      throw Error("plan options: " + std::to_string(options.relayGroups.size()) +
                  " relay groups for " + std::to_string(devices) + " devices");
    }
    for (std::size_t i = 0; i < g.operations.size(); ++i) {
      if (auto reason = checkOpChoice(g, devices, i, choice->ops[i])) {
        throw InvalidChoice(i, *reason);
      }
    }
  }

  void reset() {
    const std::size_t nOps = g.operations.size();
    coUsed = 0;
    shardBase.resize(nOps + 1);
    selBase.resize(nOps + 1);
    u32 shards = 0;
    u32 sels = 0;
    for (std::size_t i = 0; i < nOps; ++i) {
      shardBase[i] = shards;
      selBase[i] = sels;
      const auto n = static_cast<u32>(choice->ops[i].devices.size());
      shards += n;
      sels += n * elementCount(static_cast<u32>(i));
    }
    shardBase[nOps] = shards;
    selBase[nOps] = sels;
    indexBox.resize(shards);
    device.resize(shards);
    flops.resize(shards);
    bytes.resize(shards);
    repacked.resize(shards);
    constant.resize(shards);
    products.resize(shards);
    partial.resize(shards);
    readBegin.resize(shards);
    readEnd.resize(shards);
    sel.resize(sels);
    reds.clear();
    members.clear();
    steps.clear();
    slices.assign(nOps, OpSlices{});
    srcs.clear();
    srcBegin.assign(g.tensors.size(), 0);
    srcEnd.assign(g.tensors.size(), 0);
    trs.clear();
    res.clear();
    reads.clear();
  }

  void registerInputs() {
    for (u32 t : ctx.inputs) {
      const bool resident = options.inputsOn == InputsOn::Free ||
                            (options.inputsOn == InputsOn::Constants && g.tensors[t].constant);
      srcBegin[t] = static_cast<u32>(srcs.size());
      HeldRegion& s = srcs.emplace_back();
      s.source.tensor = t;
      s.place = resident ? kResidentPlace : kHost;
      s.input = true;
      srcEnd[t] = static_cast<u32>(srcs.size());
    }
  }

  // The selection of element `e` for the index box `ib`: the IPF projection
  // clipped to the tensor's bounds (canonical zeros when empty).
  void project(const ElementInfo& e, u32 ib, std::size_t n, bool emptyIndex, u32 out) {
    const std::size_t r = e.rank;
    bool empty = emptyIndex;
    std::int64_t* const box = co.data();
    for (std::size_t d = 0; d < r && !empty; ++d) {
      // Exact in 128 bits; the result is clipped to the tensor before narrowing.
      Wide a = e.offset[d];
      Wide b = e.offset[d];
      for (u32 i = e.rowStart[d]; i < e.rowStart[d + 1]; ++i) {
        const ElementInfo::Term& term = e.terms[i];
        const Wide x = static_cast<Wide>(term.coef) * box[ib + term.col];
        const Wide y = static_cast<Wide>(term.coef) * (box[ib + n + term.col] - 1);
        a += x < y ? x : y;
        b += x < y ? y : x;
      }
      b += e.ipfShape[d];
      const Wide lo = a > 0 ? a : 0;
      const Wide hi = b < e.shape[d] ? b : static_cast<Wide>(e.shape[d]);
      if (lo >= hi) {
        empty = true;
        break;
      }
      box[out + d] = static_cast<std::int64_t>(lo);
      box[out + r + d] = static_cast<std::int64_t>(hi);
    }
    if (empty) {
      std::fill_n(box + out, 2 * r, 0);
    }
  }

  // Op `op`'s shards from its memo of this split, if it has one (boxes, flops
  // and bytes copied; devices from the choice); false if not.
  bool recallShards(u32 op, bool isPartial) {
    const OpChoice& c = choice->ops[op];
    const std::vector<TileMemo>& memos = tileMemos[op];
    const auto hit = std::find_if(memos.begin(), memos.end(),
                                  [&](const TileMemo& m) { return m.split == c.split; });
    if (hit == memos.end()) {
      return false;
    }
    const u32 count = shardBase[op + 1] - shardBase[op];
    const u32 elements = elementCount(op);
    const std::size_t stride = hit->boxes.size() / count;
    const std::size_t start = coUsed;
    coUsed += hit->boxes.size();
    if (coUsed > co.size()) {
      co.resize(std::max(coUsed, 2 * co.size()));
    }
    std::copy(hit->boxes.begin(), hit->boxes.end(),
              co.begin() + static_cast<std::ptrdiff_t>(start));
    for (u32 k = 0; k < count; ++k) {
      const u32 s = shardBase[op] + k;
      auto o = static_cast<u32>(start + k * stride);
      indexBox[s] = o;
      o += static_cast<u32>(2 * ctx.ops[op].rank);
      for (u32 e = 0; e < elements; ++e) {
        sel[selBase[op] + k * elements + e] = o;
        o += static_cast<u32>(2 * element(op, e).rank);
      }
      device[s] = c.devices[k];
      partial[s] = isPartial;
      flops[s] = hit->flops[k];
      bytes[s] = hit->bytes[k];
      repacked[s] = hit->repacked[k];
      constant[s] = hit->constant[k];
      products[s] = hit->products[k];
    }
    return true;
  }

  // Keeps op `op`'s shards, just made from arena offset `start`, as a memo.
  void rememberShards(u32 op, std::size_t start) {
    std::vector<TileMemo>& memos = tileMemos[op];
    TileMemo* entry = nullptr;
    if (memos.size() < kTileMemos) {
      entry = &memos.emplace_back();
    } else {
      entry = &memos[tileMemoNext[op]];
      tileMemoNext[op] = static_cast<u32>((tileMemoNext[op] + 1) % kTileMemos);
    }
    TileMemo& m = *entry;
    const u32 first = shardBase[op];
    const u32 end = shardBase[op + 1];
    m.split = choice->ops[op].split;
    m.boxes.assign(co.begin() + static_cast<std::ptrdiff_t>(start),
                   co.begin() + static_cast<std::ptrdiff_t>(coUsed));
    m.flops.assign(flops.begin() + first, flops.begin() + end);
    m.bytes.assign(bytes.begin() + first, bytes.begin() + end);
    m.repacked.assign(repacked.begin() + first, repacked.begin() + end);
    m.constant.assign(constant.begin() + first, constant.begin() + end);
    m.products.assign(products.begin() + first, products.begin() + end);
  }

  void makeShards(u32 op) {
    const OpTables& t = ctx.ops[op];
    const metakernel::Application& app = g.operations[op].application;
    const OpChoice& c = choice->ops[op];
    const std::size_t n = t.rank;
    const u32 count = shardBase[op + 1] - shardBase[op];
    const u32 elements = elementCount(op);
    bool isPartial = false;
    for (std::size_t d = 0; d < n; ++d) {
      isPartial = isPartial || (c.split[d] > 1 && t.reductionDim[d]);
    }
    if (count == 0 || recallShards(op, isPartial)) {
      return;
    }
    const std::size_t start = coUsed;
    // numpy array_split cuts per dim: piece i starts at i * base + min(i, longer).
    cutBase.resize(n);
    cutLonger.resize(n);
    tileCoord.assign(n, 0);
    for (std::size_t d = 0; d < n; ++d) {
      cutBase[d] = t.extents[d] / c.split[d];
      cutLonger[d] = t.extents[d] % c.split[d];
    }
    for (u32 k = 0; k < count; ++k) {
      const u32 s = shardBase[op] + k;
      const u32 ib = newBox(n);
      for (std::size_t d = 0; d < n; ++d) {
        const std::int64_t i = tileCoord[d];
        co[ib + d] = t.start[d] + i * cutBase[d] + std::min(i, cutLonger[d]);
        co[ib + n + d] = t.start[d] + (i + 1) * cutBase[d] + std::min(i + 1, cutLonger[d]);
      }
      // Row-major odometer: the last dim varies fastest.
      for (std::size_t d = n; d-- > 0;) {
        if (++tileCoord[d] < c.split[d]) {
          break;
        }
        tileCoord[d] = 0;
      }
      indexBox[s] = ib;
      device[s] = c.devices[k];
      partial[s] = isPartial;
      std::int64_t touched = 0;
      std::int64_t copied = 0;
      std::int64_t weights = 0;
      for (u32 e = 0; e < elements; ++e) {
        const ElementInfo& info = element(op, e);
        const u32 b = newBox(info.rank);
        project(info, ib, n, t.emptyIndex, b);
        sel[selBase[op] + k * elements + e] = b;
        const std::int64_t size = boxSize(b, info.rank) * info.elemBytes;
        touched += size;
        copied += info.repacked ? size : 0;
        weights += info.constant ? size : 0;
      }
      repacked[s] = copied;
      constant[s] = weights;
      std::int64_t calls = 1;
      for (const u32 d : t.productDims) {
        calls *= co[ib + n + d] - co[ib + d];
      }
      products[s] = calls;
      const std::int64_t points = t.emptyIndex ? 0 : boxSize(ib, n);
      flops[s] = app.flopsPerPoint * points;
      bytes[s] = app.bytesPerPoint ? *app.bytesPerPoint * points : touched;
    }
    rememberShards(op, start);
  }

  // The reduction group of each shard: its row-major position over the split
  // with the reduction dims collapsed to one part.
  void groupShards(u32 op) {
    const OpChoice& c = choice->ops[op];
    const OpTables& t = ctx.ops[op];
    const u32 count = shardBase[op + 1] - shardBase[op];
    group.resize(count);
    groupCount = 1;
    for (std::size_t d = 0; d < c.split.size(); ++d) {
      if (!t.reductionDim[d]) {
        groupCount *= static_cast<std::size_t>(c.split[d]);
      }
    }
    for (u32 k = 0; k < count; ++k) {
      if (groupCount == count) {
        group[k] = k;
        continue;
      }
      u32 rest = k;
      u32 key = 0;
      u32 scale = 1;
      for (std::size_t d = c.split.size(); d-- > 0;) {
        const auto parts = static_cast<u32>(c.split[d]);
        const u32 coord = rest % parts;
        rest /= parts;
        if (!t.reductionDim[d]) {
          key += coord * scale;
          scale *= parts;
        }
      }
      group[k] = key;
    }
    groupFirst.assign(groupCount, count);
    for (u32 k = 0; k < count; ++k) {
      if (groupFirst[group[k]] == count) {
        groupFirst[group[k]] = k;
      }
    }
  }

  void checkDisjoint(u32 op) {
    const OpChoice& c = choice->ops[op];
    const OpTables& t = ctx.ops[op];
    groupShards(op);
    bool needed = false;
    for (std::size_t d = 0; d < c.split.size(); ++d) {
      needed = needed || (c.split[d] > 1 && !t.reductionDim[d] && !t.disjointDim[d]);
    }
    if (!needed) {
      return;
    }
    for (u32 k = 0; k < t.outputs.size(); ++k) {
      const std::size_t r = t.outputs[k].rank;
      for (std::size_t a = 0; a < groupFirst.size(); ++a) {
        const u32 ra = outSelection(op, groupFirst[a], k);
        if (boxEmpty(ra, r)) {
          continue;
        }
        for (std::size_t b = a + 1; b < groupFirst.size(); ++b) {
          const u32 rb = outSelection(op, groupFirst[b], k);
          if (boxesIntersect(ra, rb, r)) {
            const graph::Operation& o = g.operations[op];
            throw InvalidChoice(
                op, opLabel(o) + ": split " + formatInts(c.split) + " makes shards " +
                        std::to_string(groupFirst[a]) + " and " + std::to_string(groupFirst[b]) +
                        " write overlapping regions " + toRange(ra, r).toString() + " and " +
                        toRange(rb, r).toString() + " of tensor " +
                        g.tensors[t.outputs[k].tensor].name + " (output " +
                        o.outputs[t.outputs[k].port].port +
                        "); shards must write disjoint regions (split only the major term of a "
                        "merged dim)");
          }
        }
      }
    }
  }

  void makeReductions(u32 op) {
    OpSlices& sl = slices[op];
    sl.reductionBegin = sl.reductionEnd = static_cast<u32>(reds.size());
    const u32 first = shardBase[op];
    if (shardBase[op + 1] == first || !partial[first]) {
      return;
    }
    const OpTables& t = ctx.ops[op];
    const u32 count = shardBase[op + 1] - first;
    for (std::size_t gi = 0; gi < groupCount; ++gi) {
      const u32 head = groupFirst[gi];
      for (u32 k = 0; k < t.outputs.size(); ++k) {
        const u32 box = outSelection(op, head, k);
        if (boxEmpty(box, t.outputs[k].rank)) {
          continue;
        }
        ReductionGroup r;
        r.op = op;
        r.element = k;
        r.box = box;
        r.device = device[first + head];
        r.memberBegin = static_cast<u32>(members.size());
        for (u32 s = head; s < count; ++s) {
          if (group[s] == gi) {
            members.push_back(s);
          }
        }
        r.memberEnd = static_cast<u32>(members.size());
        const u32 size = r.memberEnd - r.memberBegin;
        // Pairwise tree: at distance 1, 2, 4, ... add the right partner into the left.
        r.stepBegin = static_cast<u32>(steps.size());
        for (u32 stride = 1; stride < size; stride *= 2) {
          for (u32 i = 0; i + stride < size; i += 2 * stride) {
            steps.push_back(ReductionStepRecord{i + stride, i, -1});
          }
        }
        r.stepEnd = static_cast<u32>(steps.size());
        reds.push_back(r);
      }
    }
    sl.reductionEnd = static_cast<u32>(reds.size());
  }

  // The places each region of the op's outputs lives once computed.
  void registerSources(u32 op) {
    const OpTables& t = ctx.ops[op];
    const u32 first = shardBase[op];
    const u32 count = shardBase[op + 1] - first;
    const bool isPartial = count > 0 && partial[first];
    for (u32 k = 0; k < t.outputs.size(); ++k) {
      const ElementInfo& e = t.outputs[k];
      srcBegin[e.tensor] = static_cast<u32>(srcs.size());
      if (isPartial) {
        for (u32 r = slices[op].reductionBegin; r < slices[op].reductionEnd; ++r) {
          if (reds[r].element == k) {
            HeldRegion& s = srcs.emplace_back();
            s.source = Source{Source::Kind::Reduction, r, 0, e.tensor};
            s.element = k;
            s.box = reds[r].box;
            s.place = reds[r].device;
          }
        }
      } else {
        for (u32 local = 0; local < count; ++local) {
          const u32 box = outSelection(op, local, k);
          if (boxEmpty(box, e.rank)) {
            continue;
          }
          HeldRegion& s = srcs.emplace_back();
          s.source = Source{Source::Kind::Shard, op, local, e.tensor};
          s.element = k;
          s.box = box;
          s.place = device[first + local];
        }
      }
      srcEnd[e.tensor] = static_cast<u32>(srcs.size());
    }
  }

  // Adds the read unless the shard has it already. The source comes as its
  // fields, not as a Source built on the stack: copying one that was just
  // written field by field stalls on store forwarding (8% of a search's time
  // on ResNet-50 went to that copy here, and 5% to TransferRecords').
  void addRead(u32 shard, Source::Kind kind, std::size_t index, std::size_t producer,
               std::size_t tensor) {
    for (u32 i = readBegin[shard]; i < reads.size(); ++i) {
      const Source& r = reads[i];
      if (r.index == index && r.kind == kind && r.shard == producer && r.tensor == tensor) {
        return;
      }
    }
    Source& r = reads.emplace_back();
    r.kind = kind;
    r.index = index;
    r.shard = producer;
    r.tensor = tensor;
  }

  // Wires every input selection of the op's shards to the regions that hold it,
  // adding transfers (or residents) for those in other places; then the partial
  // moves of its reductions.
  void connect(u32 op) {
    const OpTables& t = ctx.ops[op];
    const std::size_t nDev = static_cast<std::size_t>(devices);
    OpSlices& sl = slices[op];
    sl.transferBegin = static_cast<u32>(trs.size());
    const u32 first = shardBase[op];
    const u32 count = shardBase[op + 1] - first;
    for (u32 local = 0; local < count; ++local) {
      const u32 s = first + local;
      const int dev = device[s];
      readBegin[s] = static_cast<u32>(reads.size());
      for (u32 e = 0; e < t.inputs.size(); ++e) {
        const ElementInfo& info = t.inputs[e];
        const std::size_t r = info.rank;
        const u32 box = selection(op, local, e);
        if (boxEmpty(box, r)) {
          continue;
        }
        for (u32 gid = srcBegin[info.tensor]; gid < srcEnd[info.tensor]; ++gid) {
          const HeldRegion& src = srcs[gid];
          std::int64_t& where = slot[gid * nDev + static_cast<std::size_t>(dev)];
          if (src.input) {
            const bool resident = src.place == kResidentPlace;
            if (where < 0) {
              if (resident) {
                where = static_cast<std::int64_t>(res.size());
                res.push_back(ResidentRecord{info.tensor, copyBox(box, r), dev, 0});
              } else {
                where = static_cast<std::int64_t>(trs.size());
                TransferRecord& tr = trs.emplace_back();
                tr.tensor = info.tensor;
                tr.box = copyBox(box, r);
                tr.from = kHost;
                tr.to = dev;
              }
            } else {
              const u32 into = resident ? res[static_cast<std::size_t>(where)].box
                                        : trs[static_cast<std::size_t>(where)].box;
              extendByIntersection(into, box, box, r);
            }
            addRead(s, resident ? Source::Kind::Resident : Source::Kind::Transfer,
                    static_cast<std::size_t>(where), 0, info.tensor);
            continue;
          }
          if (!boxesIntersect(src.box, box, r)) {
            continue;
          }
          if (src.place == dev) {
            addRead(s, src.source.kind, src.source.index, src.source.shard, src.source.tensor);
            continue;
          }
          if (where < 0) {
            where = static_cast<std::int64_t>(trs.size());
            TransferRecord& tr = trs.emplace_back();
            tr.tensor = info.tensor;
            tr.box = intersectionBox(src.box, box, r);
            tr.from = src.place;
            tr.to = dev;
            if (src.source.kind == Source::Kind::Reduction) {
              tr.after = TransferRecord::After::Reduction;
              tr.afterA = static_cast<u32>(src.source.index);
            } else {
              tr.after = TransferRecord::After::Shard;
              tr.afterA = static_cast<u32>(src.source.index);
              tr.afterB = static_cast<u32>(src.source.shard);
            }
          } else {
            extendByIntersection(trs[static_cast<std::size_t>(where)].box, src.box, box, r);
          }
          addRead(s, Source::Kind::Transfer, static_cast<std::size_t>(where), 0, info.tensor);
        }
      }
      readEnd[s] = static_cast<u32>(reads.size());
    }
    sl.transferEnd = static_cast<u32>(trs.size());
    for (u32 ri = sl.reductionBegin; ri < sl.reductionEnd; ++ri) {
      const ReductionGroup& red = reds[ri];
      for (u32 si = red.stepBegin; si < red.stepEnd; ++si) {
        ReductionStepRecord& step = steps[si];
        const u32 from = members[red.memberBegin + step.from];
        const u32 into = members[red.memberBegin + step.into];
        if (device[first + from] == device[first + into]) {
          continue;
        }
        step.transfer = static_cast<std::int64_t>(trs.size());
        TransferRecord& tr = trs.emplace_back();
        tr.tensor = t.outputs[red.element].tensor;
        tr.box = red.box;
        tr.from = device[first + from];
        tr.to = device[first + into];
        tr.after = TransferRecord::After::Shard;
        tr.afterA = op;
        tr.afterB = from;
        tr.reduction = ri;
      }
    }
    sl.partialEnd = static_cast<u32>(trs.size());
  }

  // ---- outputs

  u32 outputElementOf(u32 op, std::size_t tensor) const {
    const OpTables& t = ctx.ops[op];
    for (u32 k = 0; k < t.outputs.size(); ++k) {
      if (t.outputs[k].tensor == tensor) {
        return k;
      }
    }
    throw InternalError("plan: a source names a tensor its op does not write");
  }

  u32 tile(u32 op, u32 local, u32 k) const {
    return tileBase[op] + local * static_cast<u32>(ctx.ops[op].outputs.size()) + k;
  }

  const PlanTasks& makeTasks() {
    PlanTasks& out = tasks;
    const std::size_t nOps = g.operations.size();
    out.deviceCount = devices;
    out.constantBytes = ctx.constantBytes;
    out.order.resize(g.order.size());
    for (std::size_t i = 0; i < g.order.size(); ++i) {
      out.order[i] = static_cast<u32>(g.order[i]);
    }
    // Buffers: tiles, then transfers, then residents.
    tileBase.resize(nOps);
    u32 tiles = 0;
    for (u32 op = 0; op < nOps; ++op) {
      tileBase[op] = tiles;
      tiles += (shardBase[op + 1] - shardBase[op]) * static_cast<u32>(ctx.ops[op].outputs.size());
    }
    out.buffers.resize(tiles + trs.size() + res.size());
    PlanTasks::Buffer* buffer = out.buffers.data();
    for (u32 op = 0; op < nOps; ++op) {
      const OpTables& t = ctx.ops[op];
      for (u32 s = shardBase[op]; s < shardBase[op + 1]; ++s) {
        for (u32 k = 0; k < t.outputs.size(); ++k) {
          const ElementInfo& e = t.outputs[k];
          const u32 box = outSelection(op, s - shardBase[op], k);
          *buffer++ = PlanTasks::Buffer{device[s], boxSize(box, e.rank) * e.elemBytes,
                                        ctx.isOutput[e.tensor] != 0 && !partial[s], 0};
        }
      }
    }
    const u32 transferBase = tiles;
    for (const TransferRecord& t : trs) {
      *buffer++ = PlanTasks::Buffer{t.to, t.bytes, false, ctx.packed[t.tensor] != 0 ? t.bytes : 0};
    }
    const auto residentBase = static_cast<u32>(tiles + trs.size());
    for (const ResidentRecord& r : res) {
      *buffer++ =
          PlanTasks::Buffer{r.device, r.bytes, false, ctx.packed[r.tensor] != 0 ? r.bytes : 0};
    }
    auto bufferOf = [&](const Source& s) -> u32 {
      switch (s.kind) {
      case Source::Kind::Shard:
        return tile(static_cast<u32>(s.index), static_cast<u32>(s.shard),
                    outputElementOf(static_cast<u32>(s.index), s.tensor));
      case Source::Kind::Reduction: {
        const ReductionGroup& r = reds[s.index];
        return tile(r.op, members[r.memberBegin], r.element);
      }
      case Source::Kind::Transfer:
        return transferBase + static_cast<u32>(s.index);
      case Source::Kind::Resident:
        return residentBase + static_cast<u32>(s.index);
      }
      throw InternalError("plan: unknown source kind");
    };
    out.ops.resize(nOps);
    out.shards.resize(shardBase[nOps]);
    out.reads.resize(reads.size());
    for (std::size_t i = 0; i < reads.size(); ++i) {
      out.reads[i] = bufferOf(reads[i]);
    }
    for (u32 op = 0; op < nOps; ++op) {
      const OpSlices& sl = slices[op];
      out.ops[op] = PlanTasks::Op{shardBase[op],     shardBase[op + 1],  sl.transferBegin,
                                  sl.transferEnd,    sl.reductionBegin,  sl.reductionEnd,
                                  ctx.ops[op].dtype, ctx.ops[op].kernel, ctx.ops[op].epilogue};
      const auto outs = static_cast<u32>(ctx.ops[op].outputs.size());
      for (u32 s = shardBase[op]; s < shardBase[op + 1]; ++s) {
        const u32 ob = tile(op, s - shardBase[op], 0);
        out.shards[s] =
            PlanTasks::ShardTask{device[s], flops[s],    bytes[s],    readBegin[s], readEnd[s],  ob,
                                 ob + outs, repacked[s], constant[s], products[s],  assembled[s]};
      }
    }
    out.transfers.resize(trs.size());
    for (std::size_t i = 0; i < trs.size(); ++i) {
      const TransferRecord& t = trs[i];
      std::int64_t source = -1;
      if (t.after == TransferRecord::After::Shard) {
        source = tile(t.afterA, t.afterB, outputElementOf(t.afterA, t.tensor));
      } else if (t.after == TransferRecord::After::Reduction) {
        const ReductionGroup& r = reds[t.afterA];
        source = tile(r.op, members[r.memberBegin], r.element);
      } else if (t.after == TransferRecord::After::Transfer) {
        source = transferBase + t.afterA;
      }
      out.transfers[i] = PlanTasks::TransferTask{t.from, t.to, t.bytes, source,
                                                 transferBase + static_cast<u32>(i)};
    }
    out.steps.resize(steps.size());
    out.reductions.resize(reds.size());
    for (std::size_t i = 0; i < reds.size(); ++i) {
      const ReductionGroup& r = reds[i];
      const ElementInfo& e = ctx.ops[r.op].outputs[r.element];
      for (u32 si = r.stepBegin; si < r.stepEnd; ++si) {
        const u32 from = members[r.memberBegin + steps[si].from];
        const u32 into = members[r.memberBegin + steps[si].into];
        out.steps[si] = PlanTasks::Step{tile(r.op, from, r.element), tile(r.op, into, r.element),
                                        steps[si].transfer, device[shardBase[r.op] + into]};
      }
      const u32 root = tile(r.op, members[r.memberBegin], r.element);
      const std::int64_t elements = boxSize(r.box, e.rank);
      out.reductions[i] = PlanTasks::ReductionTask{r.op, r.stepBegin, r.stepEnd,
                                                   root, elements,    elements * e.elemBytes};
      out.buffers[root].keep = ctx.isOutput[e.tensor] != 0;
    }
    return out;
  }

  ShardPlan materialize() const {
    ShardPlan p;
    p.options = options;
    if (!relaying()) {
      p.options.relayGroups.clear(); // the plan forwards nothing: its file says so
    }
    p.deviceCount = devices;
    const std::size_t nOps = g.operations.size();
    p.ops.resize(nOps);
    for (u32 op = 0; op < nOps; ++op) {
      const OpTables& t = ctx.ops[op];
      OpPlan& o = p.ops[op];
      o.op = op;
      o.choice = choice->ops[op];
      const OpSlices& sl = slices[op];
      o.inputTransfers = {sl.transferBegin, sl.transferEnd};
      o.partialTransfersEnd = sl.partialEnd;
      o.reductions = {sl.reductionBegin, sl.reductionEnd};
      const u32 count = shardBase[op + 1] - shardBase[op];
      o.shards.resize(count);
      for (u32 local = 0; local < count; ++local) {
        const u32 s = shardBase[op] + local;
        Shard& shard = o.shards[local];
        shard.index = toRange(indexBox[s], t.rank);
        shard.device = device[s];
        shard.flops = flops[s];
        shard.bytes = bytes[s];
        shard.repacked = repacked[s];
        shard.constant = constant[s];
        shard.products = products[s];
        shard.assembled = assembled[s];
        shard.partial = partial[s] != 0;
        auto fill = [&](const std::vector<ElementInfo>& elements, u32 offset,
                        std::vector<std::vector<Selection>>& into) {
          for (u32 e = 0; e < elements.size(); ++e) {
            const ElementInfo& info = elements[e];
            into[info.port].push_back(
                Selection{info.tensor, toRange(selection(op, local, offset + e), info.rank)});
          }
        };
        shard.inputs.resize(g.operations[op].inputs.size());
        shard.outputs.resize(g.operations[op].outputs.size());
        fill(t.inputs, 0, shard.inputs);
        fill(t.outputs, static_cast<u32>(t.inputs.size()), shard.outputs);
        shard.reads.assign(reads.begin() + readBegin[s], reads.begin() + readEnd[s]);
      }
    }
    p.reductions.reserve(reds.size());
    for (const ReductionGroup& r : reds) {
      const OpTables& t = ctx.ops[r.op];
      const ElementInfo& e = t.outputs[r.element];
      Reduction out;
      out.op = r.op;
      out.tensor = e.tensor;
      out.region = toRange(r.box, e.rank);
      out.bytes = out.region.size() * e.elemBytes;
      out.combine = t.combines[e.port];
      out.shards.assign(members.begin() + r.memberBegin, members.begin() + r.memberEnd);
      for (u32 si = r.stepBegin; si < r.stepEnd; ++si) {
        Reduction::Step step{steps[si].from, steps[si].into, std::nullopt};
        if (steps[si].transfer >= 0) {
          step.transfer = static_cast<std::size_t>(steps[si].transfer);
        }
        out.steps.push_back(step);
      }
      out.device = r.device;
      p.reductions.push_back(std::move(out));
    }
    p.transfers.reserve(trs.size());
    for (const TransferRecord& t : trs) {
      Transfer out;
      out.tensor = t.tensor;
      out.region = toRange(t.box, g.tensors[t.tensor].type.shape.size());
      out.bytes = t.bytes;
      out.from = t.from;
      out.to = t.to;
      if (t.after == TransferRecord::After::Shard) {
        out.afterShard = std::pair<std::size_t, std::size_t>(t.afterA, t.afterB);
      } else if (t.after == TransferRecord::After::Reduction) {
        out.afterReduction = t.afterA;
      } else if (t.after == TransferRecord::After::Transfer) {
        out.afterTransfer = t.afterA;
      }
      if (t.reduction >= 0) {
        out.reduction = static_cast<std::size_t>(t.reduction);
      }
      p.transfers.push_back(std::move(out));
    }
    p.residents.reserve(res.size());
    for (const ResidentRecord& r : res) {
      p.residents.push_back(Resident{
          r.tensor, toRange(r.box, g.tensors[r.tensor].type.shape.size()), r.bytes, r.device});
    }
    return p;
  }
};

PlanBuilder::PlanBuilder(PlanContext context, int deviceCount, PlanOptions options)
    : ws_(std::make_unique<Workspace>(std::move(context), deviceCount, options)) {}
PlanBuilder::~PlanBuilder() = default;
PlanBuilder::PlanBuilder(PlanBuilder&&) noexcept = default;
PlanBuilder& PlanBuilder::operator=(PlanBuilder&&) noexcept = default;

const PlanContext& PlanBuilder::context() const {
  return ws_->context;
}
int PlanBuilder::deviceCount() const {
  return ws_->devices;
}
const PlanOptions& PlanBuilder::options() const {
  return ws_->options;
}

void PlanBuilder::setImageCopies(bool on) {
  ws_->imageCopies = on;
}

const PlanTasks& PlanBuilder::tasks(const PlanChoice& choice) {
  ws_->build(choice, ws_->imageCopies);
  return ws_->makeTasks();
}

ShardPlan PlanBuilder::plan(const PlanChoice& choice) {
  ws_->build(choice);
  return ws_->materialize();
}

ShardPlan buildPlan(const PlanContext& context, int deviceCount, const PlanChoice& choice,
                    const PlanOptions& options) {
  return PlanBuilder(context, deviceCount, options).plan(choice);
}

ShardPlan buildPlan(const graph::ExpandedGraph& g, int deviceCount, const PlanChoice& choice,
                    const PlanOptions& options) {
  return buildPlan(PlanContext(g), deviceCount, choice, options);
}

} // namespace tapestry::plan
