#include "backends/link_schedule.hpp"

namespace tapestry::backend {

bool isTopological(std::span<const std::uint32_t> order,
                   const std::vector<std::vector<std::uint32_t>>& deps) {
  if (order.size() != deps.size()) {
    return false;
  }
  constexpr std::size_t unseen = static_cast<std::size_t>(-1);
  std::vector<std::size_t> position(deps.size(), unseen);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] >= deps.size() || position[order[i]] != unseen) {
      return false;
    }
    position[order[i]] = i;
  }
  for (std::size_t t = 0; t < deps.size(); ++t) {
    for (std::uint32_t d : deps[t]) {
      if (d >= deps.size() || position[d] >= position[t]) {
        return false;
      }
    }
  }
  return true;
}

std::vector<LinkOp> linkSchedule(std::span<const CrossRankTransfer> inOrder, int rank) {
  std::vector<LinkOp> ops;
  for (const CrossRankTransfer& t : inOrder) {
    if (t.from == t.to) {
      continue; // not across ranks: the worker of its destination copies it
    }
    if (t.from == rank) {
      ops.push_back(LinkOp{LinkOp::Kind::Send, t.task, t.transfer, t.to});
    } else if (t.to == rank) {
      ops.push_back(LinkOp{LinkOp::Kind::Receive, t.task, t.transfer, t.from});
    }
  }
  return ops;
}

} // namespace tapestry::backend
