// The order in which a rank's link thread issues the cross-rank transfers of a
// distributed run whose transfers move device memory directly (NCCL,
// docs/distributed.md). Pure host-side functions, unit tested without a GPU.
//
// NCCL runs the point-to-point calls on a communicator in the order they are
// issued, and a call waits for its peer's matching call: two ranks that each
// first post a send to the other, or a rank that posts a receive whose sender
// first waits for something this rank has not done yet, never finish. So every
// rank issues its sends and receives from one thread, one at a time, in one
// global order of the run's tasks that all ranks compute alike and that lists
// every task after all it depends on (isTopological). Then the first task of
// that order not yet done can always go on: everything before it is done, so
// the worker or link thread that runs it (on both ranks, for a transfer) has
// reached it and what it waits for is there. So no rank waits forever, and on
// each pair of ranks the sends of one are the receives of the other, in the
// same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tapestry::backend {

// One half of a cross-rank transfer as a rank's link thread issues it.
struct LinkOp {
  enum class Kind : std::uint8_t { Send, Receive };
  Kind kind = Kind::Send;
  std::uint32_t task = 0;   // the executor's task (one per plan transfer)
  std::size_t transfer = 0; // its index in ShardPlan::transfers
  int peer = 0;             // the rank it goes to (Send) or comes from (Receive)
  friend bool operator==(const LinkOp&, const LinkOp&) = default;
};

// A transfer between devices on different ranks.
struct CrossRankTransfer {
  std::uint32_t task = 0;
  std::size_t transfer = 0;
  int from = 0; // the rank of its source's device
  int to = 0;   // the rank of its destination's device
};

// Whether `order` lists every task of `deps` (per task, the tasks it waits
// for) exactly once, each after every task it waits for.
bool isTopological(std::span<const std::uint32_t> order,
                   const std::vector<std::vector<std::uint32_t>>& deps);

// Rank `rank`'s link operations in issue order: the transfers of `inOrder`
// (listed in the order every rank agrees on) that leave it, as sends, and
// those that reach it, as receives.
std::vector<LinkOp> linkSchedule(std::span<const CrossRankTransfer> inOrder, int rank);

} // namespace tapestry::backend
