// The cost model's view of a materialized plan (summarize): the same tasks
// PlanBuilder::tasks emits during the search.
#include "core/plan/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "core/diag/error.hpp"
#include "core/expr/dtype.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/plan/plan_internal.hpp"
#include "core/zspace/zspace_json.hpp"

namespace tapestry::plan {

// ---------------------------------------------------------------- summarize

namespace {

// Numbers every buffer of a plan (tiles shard by shard, output elements in port
// order; then transfer arrivals; then resident inputs) and emits the tasks
// that read and write them.
class Summary {
public:
  Summary(const graph::ExpandedGraph& g, const ShardPlan& p)
      : g_(g), p_(p), packed_(packedConstants(g)) {
    out_.deviceCount = p.deviceCount;
    out_.constantBytes = constantInputBytes(g);
    for (std::size_t op : g.order) {
      out_.order.push_back(static_cast<u32>(op));
    }
    isOutput_.assign(g.tensors.size(), 0);
    for (std::size_t t : g.outputs) {
      isOutput_[t] = 1;
    }
  }

  PlanTasks run() {
    buffers();
    shardTasks();
    transferTasks();
    reductionTasks();
    return std::move(out_);
  }

private:
  // Tile buffers, then transfer arrivals, then resident graph inputs.
  void buffers() {
    tileBase_.resize(p_.ops.size());
    slots_.resize(p_.ops.size());
    for (std::size_t op = 0; op < p_.ops.size(); ++op) {
      tileBase_[op] = static_cast<u32>(out_.buffers.size());
      u32 n = 0;
      for (const graph::PortTensors& port : g_.operations[op].outputs) {
        n += static_cast<u32>(port.tensors.size());
      }
      slots_[op] = n;
      for (const Shard& s : p_.ops[op].shards) {
        for (const auto& port : s.outputs) {
          for (const Selection& sel : port) {
            out_.buffers.push_back(PlanTasks::Buffer{
                s.device, sel.range.size() * dtypeSize(g_.tensors[sel.tensor].type.dtype),
                isOutput_[sel.tensor] != 0 && !s.partial, 0});
          }
        }
      }
    }
    transferBase_ = static_cast<u32>(out_.buffers.size());
    for (const Transfer& t : p_.transfers) {
      out_.buffers.push_back(
          PlanTasks::Buffer{t.to, t.bytes, false, packed_[t.tensor] != 0 ? t.bytes : 0});
    }
    residentBase_ = static_cast<u32>(out_.buffers.size());
    for (const Resident& r : p_.residents) {
      out_.buffers.push_back(
          PlanTasks::Buffer{r.device, r.bytes, false, packed_[r.tensor] != 0 ? r.bytes : 0});
    }
  }

  u32 slotOf(std::size_t op, std::size_t tensor) const { return outputElementOf(g_, op, tensor); }
  u32 tile(std::size_t op, std::size_t shard, std::size_t tensor) const {
    return tileBase_[op] + static_cast<u32>(shard) * slots_[op] + slotOf(op, tensor);
  }
  u32 root(std::size_t r) const {
    const Reduction& red = p_.reductions[r];
    return tile(red.op, red.shards[0], red.tensor);
  }
  u32 bufferOf(const Source& read) const {
    switch (read.kind) {
    case Source::Kind::Shard:
      return tile(read.index, read.shard, read.tensor);
    case Source::Kind::Reduction:
      return root(read.index);
    case Source::Kind::Transfer:
      return transferBase_ + static_cast<u32>(read.index);
    case Source::Kind::Resident:
      break;
    }
    return residentBase_ + static_cast<u32>(read.index);
  }

  void shardTasks() {
    out_.ops.resize(p_.ops.size());
    for (std::size_t op = 0; op < p_.ops.size(); ++op) {
      const OpPlan& o = p_.ops[op];
      const auto first = static_cast<u32>(out_.shards.size());
      for (std::size_t k = 0; k < o.shards.size(); ++k) {
        const Shard& s = o.shards[k];
        PlanTasks::ShardTask task;
        task.device = s.device;
        task.flops = s.flops;
        task.bytes = s.bytes;
        task.repacked = s.repacked;
        task.constant = s.constant;
        task.products = s.products;
        task.assembled = s.assembled;
        task.readBegin = static_cast<u32>(out_.reads.size());
        for (const Source& read : s.reads) {
          out_.reads.push_back(bufferOf(read));
        }
        task.readEnd = static_cast<u32>(out_.reads.size());
        task.outBegin = tileBase_[op] + static_cast<u32>(k) * slots_[op];
        task.outEnd = task.outBegin + slots_[op];
        out_.shards.push_back(task);
      }
      const graph::Operation& gop = g_.operations[op];
      const std::string_view dtype =
          gop.outputs.empty() || gop.outputs[0].tensors.empty()
              ? std::string_view("float32")
              : std::string_view(g_.tensors[gop.outputs[0].tensors[0]].type.dtype);
      out_.ops[op] = PlanTasks::Op{first,
                                   static_cast<u32>(out_.shards.size()),
                                   static_cast<u32>(o.inputTransfers.first),
                                   static_cast<u32>(o.inputTransfers.second),
                                   static_cast<u32>(o.reductions.first),
                                   static_cast<u32>(o.reductions.second),
                                   dtype,
                                   gop.kernel,
                                   epilogueKernel(gop)};
    }
  }

  void transferTasks() {
    for (std::size_t i = 0; i < p_.transfers.size(); ++i) {
      const Transfer& t = p_.transfers[i];
      std::int64_t source = -1;
      if (t.afterShard) {
        source = tile(t.afterShard->first, t.afterShard->second, t.tensor);
      } else if (t.afterReduction) {
        source = root(*t.afterReduction);
      } else if (t.afterTransfer) {
        source = transferBase_ + static_cast<u32>(*t.afterTransfer);
      }
      out_.transfers.push_back(PlanTasks::TransferTask{t.from, t.to, t.bytes, source,
                                                       transferBase_ + static_cast<u32>(i)});
    }
  }

  void reductionTasks() {
    for (std::size_t r = 0; r < p_.reductions.size(); ++r) {
      const Reduction& red = p_.reductions[r];
      PlanTasks::ReductionTask task;
      task.op = static_cast<u32>(red.op);
      task.stepBegin = static_cast<u32>(out_.steps.size());
      for (const Reduction::Step& step : red.steps) {
        out_.steps.push_back(
            PlanTasks::Step{tile(red.op, red.shards[step.from], red.tensor),
                            tile(red.op, red.shards[step.into], red.tensor),
                            step.transfer ? static_cast<std::int64_t>(*step.transfer) : -1,
                            p_.ops[red.op].shards[red.shards[step.into]].device});
      }
      task.stepEnd = static_cast<u32>(out_.steps.size());
      task.root = root(r);
      task.elements = red.region.size();
      task.bytes = red.bytes;
      out_.reductions.push_back(task);
      out_.buffers[task.root].keep = isOutput_[red.tensor] != 0;
    }
  }

  const graph::ExpandedGraph& g_;
  const ShardPlan& p_;
  PlanTasks out_;
  std::vector<char> isOutput_;
  std::vector<char> packed_;
  std::vector<u32> tileBase_; // per op: its first tile buffer
  std::vector<u32> slots_;    // per op: output elements per shard
  u32 transferBase_ = 0;
  u32 residentBase_ = 0;
};

} // namespace

PlanTasks summarize(const graph::ExpandedGraph& g, const ShardPlan& p) {
  checkInvariant(p.ops.size() == g.operations.size(), "summarize: the plan is for this graph");
  return Summary(g, p).run();
}

} // namespace tapestry::plan
