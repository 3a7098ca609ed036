// Internal to core/plan: what the plan's context (plan.cpp), builder
// (plan_builder.cpp) and task summary (plan_tasks.cpp) share. Not for use
// outside core/plan.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/plan.hpp"

namespace tapestry::plan {

using u32 = std::uint32_t;

// One tensor of a port, with its IPF unpacked into flat rows.
struct ElementInfo {
  std::uint32_t tensor = 0;
  std::uint32_t rank = 0; // tensor rank = IPF rows
  std::uint32_t port = 0; // port index (inputs or outputs)
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> ipfShape;
  std::vector<std::int64_t> shape; // the tensor's
  std::int64_t elemBytes = 0;
  // An input read through a `packed: true` port whose tensor is not a
  // constant graph input: copied into the backend's layout on every call.
  bool repacked = false;
  // An input that is a constant graph input (ShardTask::constant).
  bool constant = false;
  // How the CPU backend reads it, where it is an activation image (4-d,
  // float32 or bfloat16, neither a graph input nor output) that it keeps
  // channels last (imageRead; ShardTask::assembled).
  ImageRead image = ImageRead::None;
  // For an image, per dim: its IPF tile is longer than 1; the index dims
  // (bits) of the row's other terms where it has several (a kernel offset
  // beside the output row: a window, where they span more than one point);
  // for a Dense one's rows and columns, the stride (the output dim's
  // coefficient), else 0.
  std::array<bool, 4> imageTile{};
  std::array<std::uint64_t, 4> imageWindow{};
  std::array<std::int64_t, 4> imageStride{};
  // The nonzero coefficients of p, row by row: row d's terms are
  // terms[rowStart[d], rowStart[d + 1]) (most rows have one).
  struct Term {
    std::uint32_t col;
    std::int64_t coef;
  };
  std::vector<Term> terms;
  std::vector<std::uint32_t> rowStart;
};

struct OpTables {
  std::uint32_t rank = 0;            // index rank
  std::vector<std::int64_t> start;   // index start (zeros)
  std::vector<std::int64_t> extents; // index extents
  bool emptyIndex = false;
  std::vector<ElementInfo> inputs;   // ports in template order, elements in order
  std::vector<ElementInfo> outputs;  // likewise
  std::vector<std::string> combines; // per output port ("" without combine)
  std::vector<bool> reductionDim;    // per index dim
  // Per index dim: splitting it alone can never make shards of different groups
  // write overlapping regions (every output has a row whose only term is this dim
  // with |coefficient| >= that row's shape), so the pairwise check can be skipped.
  std::vector<bool> disjointDim;
  std::string_view dtype;                 // first output's
  std::string_view kernel;                // the operation's kernel name
  std::string_view epilogue;              // epilogueKernel
  std::vector<std::uint32_t> productDims; // see productDims
  bool readsImage = false;                // some input is an `image` element
};

struct PlanContext::Impl {
  const graph::ExpandedGraph* graph = nullptr;
  std::vector<OpTables> ops;           // parallel to graph->operations
  std::vector<std::int64_t> elemBytes; // per tensor
  std::vector<char> isOutput;          // per tensor: a graph output
  std::vector<char> packed;            // per tensor: see packedConstants
  std::vector<std::uint32_t> inputs;   // graph input tensors
  std::int64_t constantBytes = 0;      // constantInputBytes
};

// Per tensor: a constant graph input that some operation reads through a
// `packed: true` port, so a backend may hold a packed copy of what a device
// reads of it (PlanTasks::Buffer::packed).
std::vector<char> packedConstants(const graph::ExpandedGraph& g);

// The bytes of every constant graph input of `g` (PlanTasks::constantBytes).
std::int64_t constantInputBytes(const graph::ExpandedGraph& g);

// "operation fc1", the prefix of a choice's error.
std::string opLabel(const graph::Operation& op);

// The plan's device count and the number of per-op choices, checked before
// the ops are (a reason, or nullopt).
std::optional<std::string> checkShape(const graph::ExpandedGraph& g, int deviceCount,
                                      const PlanChoice& choice);

} // namespace tapestry::plan
