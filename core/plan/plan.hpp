// Sharded plans (SPEC §7): from an expanded graph plus, per operation, how its
// index space is split and which device runs each shard, derive every shard's
// index range and its exact tensor selections (IPF projections), the partial
// outputs of split reduction dims and their combine trees, and the region
// transfers between devices (and from the host). Plans are values: the search
// builds thousands per second, and `run`/`bench`/`render` read them from JSON.
//
// Rules the plan follows (docs/metakernels-design.md):
// - A selection is the IPF projection of the shard's index range intersected
//   with the tensor's bounds [0, shape). For list ports (concat's tensors,
//   split's results) an empty intersection means the shard does not touch that
//   element; for conv2d's padding the clipped part reads zeros, so only the part
//   inside the tensor is ever transferred or counted.
// - Shards of different reduction groups (every shard, for an op whose split
//   leaves its reduction dims whole) must write pairwise-disjoint output
//   regions; buildPlan rejects a split that breaks this (a reshape's merged dim
//   split on a minor term).
// - A split reduction dim makes partial outputs. Shards that differ only in
//   reduction dims form a group; each group's partials of each output region
//   are combined pairwise in a binary tree (distance 1, 2, 4, ...: the right
//   partner is added into the left), the result on the group's first shard.
// - Every input selection of a shard is read from the producer tiles (or
//   reduction results) that intersect it: in place when they are on the
//   shard's device, else through a transfer. There is one transfer per
//   (tensor, producer region, destination device), carrying the bounding box
//   of everything that device needs from that region; it is submitted with the
//   first op that needs it. Graph inputs come from the host the same way (one
//   transfer per tensor and device; with relay groups, one per group for the
//   devices that read the same region, forwarded between them), or with
//   InputsOn::Free (InputsOn::Constants: the constant ones) are resident on
//   every device that reads them. Graph outputs stay where they are computed.
// - Lists are in submission order: op by op in topological order, each op's
//   input transfers, then its partial moves; the simulator and backends replay
//   them in that order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/diag/error.hpp"
#include "core/graph/graph.hpp"
#include "core/json/json.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::plan {

// Where a region lives: a device of the target, or the host.
inline constexpr int kHost = -1;

// "host", or the device's number (reports, traces, summaries).
inline std::string placeName(int place) {
  return place == kHost ? std::string("host") : std::to_string(place);
}

// Bytes per element of a dtype (bool and the float8 types are 1 byte). An
// unknown dtype is a bug (InternalError): expansion only lets known ones through.
std::int64_t dtypeSize(std::string_view dtype);

// ---------------------------------------------------------------- choices

// The decision for one operation: parts per index dim (product = shard count)
// and the device of each shard, shards in row-major tile order of the split.
struct OpChoice {
  std::vector<std::int64_t> split;
  std::vector<int> devices;
  bool operator==(const OpChoice&) const = default;
};

// A whole plan's decisions, parallel to ExpandedGraph::operations. This is what
// the search mutates and what the front file lists per plan.
struct PlanChoice {
  std::vector<OpChoice> ops;
  // Which of the search's graphs `ops` is for (search::ChoiceScorer): with
  // rewrite rules as choices of the search, each subset of them applied makes
  // a graph of its own. 0 for a search of one graph.
  std::uint32_t variant = 0;
  // Whether graph inputs are forwarded between the devices of a relay group
  // (PlanOptions::relayGroups) in this plan: a choice of the search, since a
  // forwarded input costs a device hop and can raise a device's peak where
  // its host link was idle anyway. No effect without relay groups.
  bool relay = true;
  bool operator==(const PlanChoice&) const = default;
  // Shards over all operations (each op's devices.size()): the shard tasks a
  // plan built from it runs, which is what its simulation costs.
  std::int64_t shardCount() const;
};

// Every operation on one device, unsplit (the "single" baseline).
PlanChoice singleDeviceChoice(const graph::ExpandedGraph& g, int device = 0);

// The kernel whose measured table prices the pass `op`'s kernel makes over
// its result after its main work, or empty: linear_act with `gelu` runs the
// exact GELU over its result (in oneDNN's product or a pass after it), at
// the gelu kernel's speed (with `gelu_tanh`, gelu_tanh's), which the matmul table its product is
// priced by does not hold (a transformer block's [1024, 1024] GELU: 0.45 ms on top of a 1.6 ms
// product; docs/cost-model.md); conv2d_act and conv2d_grouped_act with `silu` run SiLU
// over theirs, at silu's speed. A composed fuse(P, C) (the parts run one after the other,
// core/metakernel/fuse.hpp): C, a pass over P's result per consumer in the chain.
std::string_view epilogueKernel(const graph::Operation& op);

// How input port `port` of `kernel` reads an image the CPU backend keeps
// channels last (N, H, W, C in memory). Dense: port 0 of conv2d,
// conv2d_grouped, conv2d_act and conv2d_grouped_act, whose oneDNN
// convolution reads a box of a region in place only where it is one dense
// block of that layout (a whole region, a batch part, or rows of one image)
// and copies any other box (a column half, a channel part, rows of several
// images) whole on every call. Strided: port 0 of maxpool2d, avgpool2d and
// global_avgpool, which read any box in place. Either way, a selection that
// spans regions is read piece by piece where the executor can cut the shard
// so, else assembled whole first (Shard::assembled).
enum class ImageRead : std::uint8_t { None, Strided, Dense };
ImageRead imageRead(std::string_view kernel, std::size_t port);

// The index dims along which `op` makes separate matrix products: for
// `matmul`, the batch dims (all but the last three, m, n and k) that W's
// projection depends on. The CPU backend runs a shard's product as one gemm
// call per point of them (a batch dim only X has joins X's rows instead), so
// a shard of [B, H, S, D] @ [B, H, D, S] makes B * H products of S x D x S
// (PlanTasks::ShardTask::products). Empty for every other kernel.
std::vector<std::uint32_t> productDims(const graph::Operation& op);

// Where graph inputs start: all on the host; all resident on every device
// that reads them, for free; or the constant ones (weights, `"constant":
// true`) resident, as a served model's weights are loaded once, and the
// others on the host.
enum class InputsOn { Host, Free, Constants };

const char* inputsOnName(InputsOn where); // "host", "free", "constants"
// The mode inputsOnName names `name`; nullopt for any other text.
std::optional<InputsOn> inputsOnFromName(std::string_view name);

// The position of `tensor` among the output elements of `op` (ports in
// template order, tensors in port order): how plans, their task summaries and
// the executor number a shard's output tiles. InternalError when `op` does
// not write it.
std::uint32_t outputElementOf(const graph::ExpandedGraph& g, std::size_t op, std::size_t tensor);

struct PlanOptions {
  InputsOn inputsOn = InputsOn::Host;
  // Per device, its relay group (empty: none; cost::relayGroups picks them
  // from the target). A graph input region that several devices of one group
  // read from the host whole and alike crosses the host link once, to the
  // group member that has had the fewest bytes from the host so far in the
  // plan, which forwards it to the others over the faster device links
  // (Transfer::afterTransfer): a weight read by 8 GPUs is one PCIe copy and
  // seven NVLink copies, not eight PCIe copies.
  std::vector<int> relayGroups;
  bool operator==(const PlanOptions&) const = default;
};

// Limits that keep a plan file (or a search) from asking for more shards than
// memory could hold: each shard carries selections for every tensor it touches.
inline constexpr std::int64_t kMaxShardsPerOp = 65536;
inline constexpr std::int64_t kMaxShardsPerPlan = 1 << 20;

// Checks a choice against the graph and target without building the plan:
// split rank = index rank, every part in [1, extent], reduction dims split only
// when the op's outputs all have a combine, device ids in [0, device count),
// devices.size() = product(split), at most kMaxShardsPerOp shards per operation
// and kMaxShardsPerPlan in all. Returns the reason when invalid, naming the
// operation ("operation fc1: ...").
// Plans depend only on the device count, not on the rest of the target (the cost
// model reads that), so data flows graph -> plan -> cost.
std::optional<std::string> checkChoice(const graph::ExpandedGraph& g, int deviceCount,
                                       const PlanChoice& choice);
// The same for one operation (what a mutation of that op must pass).
std::optional<std::string> checkOpChoice(const graph::ExpandedGraph& g, int deviceCount,
                                         std::size_t op, const OpChoice& choice);

// What buildPlan throws for a choice that is not a valid plan, naming the
// operation at fault (exit 1).
class InvalidChoice : public Error {
public:
  InvalidChoice(std::size_t opIndex, std::string message)
      : Error(std::move(message)), op(opIndex) {}
  std::size_t op; // index into ExpandedGraph::operations
};

// ---------------------------------------------------------------- the plan

struct Selection {
  std::size_t tensor; // index into ExpandedGraph::tensors
  ZRange range;       // ipf(index) ∩ [0, shape); empty: the element is not touched (list ports)
};

// A region a shard reads in place on its own device: a producer shard's output
// tile, a reduction's result, a transfer's arrival, or a graph input that is
// resident from the start (InputsOn::Free, ::Constants).
struct Source {
  enum class Kind : std::uint8_t { Shard, Reduction, Transfer, Resident };
  Kind kind = Kind::Shard;
  // Shard: the producing op; Reduction/Transfer/Resident: index into
  // ShardPlan::reductions / transfers / residents.
  std::size_t index = 0;
  std::size_t shard = 0;  // Shard only: the producing shard of op `index`
  std::size_t tensor = 0; // the tensor read
  bool operator==(const Source&) const = default;
};

struct Shard {
  ZRange index;
  int device = 0;
  // Per port (template order), one selection per tensor of the port.
  std::vector<std::vector<Selection>> inputs;
  std::vector<std::vector<Selection>> outputs;
  std::int64_t flops = 0;
  std::int64_t bytes = 0; // bytes touched (inputs + outputs), or the template's cost.bytes
  // Bytes of the shard's inputs read through `packed: true` ports that are not
  // constant graph inputs: a backend copies them into its own layout on every
  // call (PlanTasks::ShardTask::repacked).
  std::int64_t repacked = 0;
  // Bytes of its inputs that are constant graph inputs (weights), read anew
  // on every run (PlanTasks::ShardTask::constant).
  std::int64_t constant = 0;
  // The matrix products the shard makes (PlanTasks::ShardTask::products).
  std::int64_t products = 1;
  // Bytes of its image inputs (imageRead) that the CPU backend
  // copies whole before the call, as some part of them is not one block of
  // the region that holds it in the channels-last layout
  // (PlanTasks::ShardTask::assembled).
  std::int64_t assembled = 0;
  // True when this shard's outputs are partial (a split reduction dim): they are
  // combined by a Reduction before anyone reads them.
  bool partial = false;
  // Everything that must be on the shard's device before it starts, once each,
  // in the order first read (ports in template order).
  std::vector<Source> reads;
};

struct OpPlan {
  std::size_t op; // index into ExpandedGraph::operations
  OpChoice choice;
  std::vector<Shard> shards;
  // This op's slices of the plan lists: transfers[inputTransfers.first, .second)
  // are first needed by its shards; transfers[.second, partialTransfersEnd) move
  // its partials; reductions[reductions.first, .second) combine them.
  std::pair<std::size_t, std::size_t> inputTransfers{0, 0};
  std::size_t partialTransfersEnd = 0;
  std::pair<std::size_t, std::size_t> reductions{0, 0};
};

// A transfer of one region of a tensor between places (device or kHost).
struct Transfer {
  std::size_t tensor;
  ZRange region;
  std::int64_t bytes = 0;
  int from = kHost;
  int to = 0;
  // What must finish before the transfer can start: the producing shard (op
  // index, shard index) or reduction; none for graph inputs on the host. For a
  // partial move, the shard holding the partial (and every earlier step of its
  // reduction that added into it).
  std::optional<std::pair<std::size_t, std::size_t>> afterShard;
  std::optional<std::size_t> afterReduction;
  // A relay: the transfer (from the host) whose arrival on `from` it forwards.
  std::optional<std::size_t> afterTransfer;
  // Partial moves only: the reduction whose step this is.
  std::optional<std::size_t> reduction;
};

// Combining the partial outputs of one output region (a tile along the
// non-reduction dims) with the output's monoid, as a binary tree: each step adds
// `from`'s partial into `into`'s on `into`'s device (after moving it there).
struct Reduction {
  std::size_t op;
  std::size_t tensor;
  ZRange region;
  std::int64_t bytes = 0;          // of the region (one partial)
  std::string combine;             // "sum", "max", "min", "prod"
  std::vector<std::size_t> shards; // the shards holding partials of this region
  struct Step {
    std::size_t from; // index into `shards`
    std::size_t into; // index into `shards`
    // The transfer moving `from`'s partial to `into`'s device; none when both
    // shards share a device.
    std::optional<std::size_t> transfer;
  };
  std::vector<Step> steps; // in order; the result ends on shards[0]'s device
  int device = 0;          // where the combined region lives
};

// A graph input present on a device from the start (InputsOn::Free, or a
// constant one with InputsOn::Constants): the bounding box of every region of
// it that the device's shards read.
struct Resident {
  std::size_t tensor;
  ZRange region;
  std::int64_t bytes = 0;
  int device = 0;
};

struct ShardPlan {
  std::vector<OpPlan> ops; // parallel to ExpandedGraph::operations
  std::vector<Reduction> reductions;
  std::vector<Transfer> transfers;
  std::vector<Resident> residents; // InputsOn::Free and ::Constants only
  PlanOptions options;
  int deviceCount = 0; // the count the plan was built for
  std::size_t shardCount() const;
  // The choice the plan was built from (each OpPlan's choice).
  PlanChoice choice() const;
};

// Per-graph tables that buildPlan reuses across calls (IPF rows, tensor bounds,
// dtype sizes, which dims can skip the disjointness check). Build once per graph;
// the graph must outlive the context. Cheap to copy (shared, immutable).
class PlanContext {
public:
  explicit PlanContext(const graph::ExpandedGraph& g);
  const graph::ExpandedGraph& graph() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

private:
  std::shared_ptr<const Impl> impl_;
};

// Builds the plan; throws InvalidChoice (exit 1) when an op's choice is invalid
// (see checkOpChoice), Error when the choice has the wrong number of ops or no
// devices, and InvalidChoice when shards of an op without a combine would write
// overlapping output regions (e.g. splitting the minor term of a merged reshape
// dim) — such a split is not a valid plan.
ShardPlan buildPlan(const graph::ExpandedGraph& g, int deviceCount, const PlanChoice& choice,
                    const PlanOptions& options = {});
// The same with a prebuilt context.
ShardPlan buildPlan(const PlanContext& context, int deviceCount, const PlanChoice& choice,
                    const PlanOptions& options = {});

// ---------------------------------------------------------------- tasks

// What the cost model reads from a plan: its tasks and the buffers they write
// and read, as flat arrays of numbers without geometry. PlanBuilder fills it
// straight from a choice (the search's fast path: no ZRange is made);
// summarize() derives the same arrays from a ShardPlan.
//
// Numbering: shards op by op in graph order (op i's shard k is
// ops[i].shardBegin + k); transfers and reductions as in ShardPlan. Buffers:
// every shard's output tiles (shard by shard, output elements in port order),
// then one per transfer (what it delivers), then one per resident input.
struct PlanTasks {
  // A region in one device's memory.
  struct Buffer {
    int device = 0;
    std::int64_t bytes = 0;
    bool keep = false; // a graph output (final tile or reduction result): never freed
    // A constant graph input read by a `packed` port: the backend's own copy
    // of it (as many bytes), made before the first shard and kept all run.
    std::int64_t packed = 0;
    bool operator==(const Buffer&) const = default;
  };
  struct Op {
    std::uint32_t shardBegin = 0, shardEnd = 0;       // into shards
    std::uint32_t transferBegin = 0, transferEnd = 0; // its input transfers
    std::uint32_t reductionBegin = 0, reductionEnd = 0;
    std::string_view dtype;  // its compute dtype (its first output's)
    std::string_view kernel; // its kernel's name (the cost model's profile family)
    // The kernel whose table prices a pass the kernel makes over its result
    // after its own work (epilogueKernel): "gelu" or "gelu_tanh" for linear_act's GELU,
    // "silu" for conv2d_act's SiLU; empty for none.
    std::string_view epilogue;
    bool operator==(const Op&) const = default;
  };
  struct ShardTask {
    int device = 0;
    std::int64_t flops = 0;
    std::int64_t bytes = 0;
    std::uint32_t readBegin = 0, readEnd = 0; // into reads: buffers it needs on its device
    std::uint32_t outBegin = 0, outEnd = 0;   // the buffers it writes
    // Bytes of its inputs read through `packed: true` ports that are not
    // constant graph inputs (Shard::repacked): the CPU backend's products copy
    // them into oneDNN's layout on every call (docs/cost-model.md).
    std::int64_t repacked = 0;
    // Bytes of its inputs that are constant graph inputs (Shard::constant):
    // where a graph's constants outgrow the machine's last-level cache, each
    // run reads them from memory (the simulator's floor; docs/cost-model.md).
    std::int64_t constant = 0;
    // The separate matrix products of a batched `matmul` shard: its batch
    // points along the dims W varies on (productDims), each one call of the
    // CPU backend's gemm (attention's scores, [B, H, S, D] @ [B, H, D, S]:
    // B * H products); 1 for one product and for every other kernel.
    std::int64_t products = 1;
    // Bytes of its image inputs copied whole before the call (Shard::assembled):
    // a convolution split by image columns or channels reads its part of a
    // whole channels-last region so. Priced at the copy family's speed with a
    // CPU profile (docs/cost-model.md).
    std::int64_t assembled = 0;
    bool operator==(const ShardTask&) const = default;
  };
  struct TransferTask {
    int from = kHost;
    int to = 0;
    std::int64_t bytes = 0;
    std::int64_t source = -1; // the buffer sent; -1 for a graph input on the host
    std::uint32_t buffer = 0; // the buffer it fills on `to`
    bool operator==(const TransferTask&) const = default;
  };
  // One combine of a reduction tree: `from`'s partial (moved by `transfer`
  // when it lives elsewhere) is added into `into`'s on `device`.
  struct Step {
    std::uint32_t from = 0, into = 0; // buffers
    std::int64_t transfer = -1;
    int device = 0;
    bool operator==(const Step&) const = default;
  };
  struct ReductionTask {
    std::uint32_t op = 0;
    std::uint32_t stepBegin = 0, stepEnd = 0; // into steps
    std::uint32_t root = 0;                   // the buffer that ends up holding the result
    std::int64_t elements = 0;                // of the region
    std::int64_t bytes = 0;
    bool operator==(const ReductionTask&) const = default;
  };

  // Op::dtype and Op::kernel view the graph's strings: the graph must outlive the tasks.
  std::vector<std::uint32_t> order; // op indices, topological (submission order)
  std::vector<Op> ops;              // graph order
  std::vector<ShardTask> shards;
  std::vector<std::uint32_t> reads;
  std::vector<TransferTask> transfers;
  std::vector<Step> steps;
  std::vector<ReductionTask> reductions;
  std::vector<Buffer> buffers;
  int deviceCount = 0;
  // The bytes of the graph's constant inputs, all of them (constantInputBytes).
  std::int64_t constantBytes = 0;
  bool operator==(const PlanTasks&) const = default;
};

// The tasks of a plan built by buildPlan for `g`.
PlanTasks summarize(const graph::ExpandedGraph& g, const ShardPlan& p);

// Builds plans for one graph, device count and options again and again,
// reusing its scratch memory: what a search thread keeps. tasks() makes no
// ZRange and allocates nothing once warm. Not thread-safe; one per thread.
class PlanBuilder {
public:
  PlanBuilder(PlanContext context, int deviceCount, PlanOptions options = {});
  ~PlanBuilder();
  PlanBuilder(PlanBuilder&&) noexcept;
  PlanBuilder& operator=(PlanBuilder&&) noexcept;

  const PlanContext& context() const;
  int deviceCount() const;
  const PlanOptions& options() const;

  // The tasks of buildPlan(choice) (equal to summarize() of it); valid until the
  // next call. Throws like buildPlan.
  const PlanTasks& tasks(const PlanChoice& choice);
  // With false, tasks() leaves ShardTask::assembled at 0 (on by default):
  // for a search on a target that does not price those copies
  // (cost::pricesImageCopies), whose evaluations then skip working them out.
  void setImageCopies(bool on);
  // The full plan, as buildPlan.
  ShardPlan plan(const PlanChoice& choice);

  struct Workspace;

private:
  std::unique_ptr<Workspace> ws_;
};

// ---------------------------------------------------------------- JSON

// The operations/reductions/transfers parts of plan/v1 (SPEC §7); the plan file
// writer (core/plan/plan_file.hpp) adds graph, target, schedule and objectives.
//   operations: {NAME: {split, devices, shards: [{index, device, selections:
//                {inputs: {PORT: [{tensor, range}]}, outputs: {...}}}]}}
//               (ops in graph file order; an untouched list element's range is
//               the canonical empty range, all zeros)
//   reductions: [{op, tensor, region, bytes, combine, device, shards: [i...],
//                 steps: [{from: SHARD, into: SHARD[, transfer: T]}]}]
//               (steps name the op's shard indices, not positions in `shards`)
//   transfers:  [{tensor, region, bytes, from: DEVICE|"host", to: DEVICE
//                 [, after: {op, shard} | {reduction}] [, reduction: R]}]
Json operationsToJson(const graph::ExpandedGraph& g, const ShardPlan& p);
Json reductionsToJson(const graph::ExpandedGraph& g, const ShardPlan& p);
Json transfersToJson(const graph::ExpandedGraph& g, const ShardPlan& p);

} // namespace tapestry::plan
