// The link threads' schedule of a distributed run whose cross-rank transfers
// go through a device link (NCCL, backends/link_schedule.hpp): on every pair
// of ranks the sends of one are the receives of the other in the same order,
// and the ranks running their lists with the plan's dependencies finish. No
// GPU needed: the executor only plans (distributedSchedule).
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "backends/executor.hpp"
#include "backends/link_schedule.hpp"
#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/driver/optimize_command.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/plan/plan.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::backend;
using namespace tapestry::testing;

namespace {

using u32 = std::uint32_t;

// On each pair of ranks, a's operations with b are b's with a, the kinds
// swapped, in the same order; every operation's peer is another rank.
std::string unpaired(const DistributedSchedule& s) {
  const auto k = static_cast<int>(s.ranks.size());
  for (int a = 0; a < k; ++a) {
    for (const LinkOp& op : s.ranks[static_cast<std::size_t>(a)].link) {
      if (op.peer == a || op.peer < 0 || op.peer >= k) {
        return "rank " + std::to_string(a) + " has an operation with rank " +
               std::to_string(op.peer);
      }
    }
    for (int b = a + 1; b < k; ++b) {
      auto with = [&](int r, int peer) {
        std::vector<LinkOp> ops;
        for (const LinkOp& op : s.ranks[static_cast<std::size_t>(r)].link) {
          if (op.peer == peer) {
            ops.push_back(op);
          }
        }
        return ops;
      };
      const std::vector<LinkOp> ab = with(a, b);
      const std::vector<LinkOp> ba = with(b, a);
      if (ab.size() != ba.size()) {
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + ": " +
               std::to_string(ab.size()) + " operations against " + std::to_string(ba.size());
      }
      for (std::size_t i = 0; i < ab.size(); ++i) {
        if (ab[i].task != ba[i].task || ab[i].transfer != ba[i].transfer ||
            ab[i].kind == ba[i].kind) {
          return "ranks " + std::to_string(a) + " and " + std::to_string(b) + ": operation " +
                 std::to_string(i) + " is transfer " + std::to_string(ab[i].transfer) +
                 " on one and " + std::to_string(ba[i].transfer) + " on the other, or both send";
        }
      }
    }
  }
  return {};
}

// The ranks running their lists as the executor does, until nothing can move:
// a worker's next task runs once every task it waits for is done; a link
// thread's next operation completes once the peer's link thread is at the
// matching operation (an NCCL call waits for its peer's) and every task the
// transfer waits for is done. "" when every list ran to its end, else where
// the ranks stopped.
std::string stuck(const DistributedSchedule& s) {
  std::vector<char> done(s.deps.size(), 0);
  auto ready = [&](u32 t) {
    for (u32 d : s.deps[t]) {
      if (done[d] == 0) {
        return false;
      }
    }
    return true;
  };
  const std::size_t k = s.ranks.size();
  std::vector<std::vector<std::size_t>> next(k);
  std::vector<std::size_t> nextLink(k, 0);
  for (std::size_t r = 0; r < k; ++r) {
    next[r].assign(s.ranks[r].workers.size(), 0);
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t r = 0; r < k; ++r) {
      for (std::size_t w = 0; w < s.ranks[r].workers.size(); ++w) {
        const std::vector<u32>& list = s.ranks[r].workers[w];
        while (next[r][w] < list.size() && ready(list[next[r][w]])) {
          done[list[next[r][w]++]] = 1;
          moved = true;
        }
      }
      const std::vector<LinkOp>& link = s.ranks[r].link;
      if (nextLink[r] >= link.size()) {
        continue;
      }
      const LinkOp& op = link[nextLink[r]];
      const auto peer = static_cast<std::size_t>(op.peer);
      if (peer >= k || nextLink[peer] >= s.ranks[peer].link.size()) {
        continue;
      }
      const LinkOp& theirs = s.ranks[peer].link[nextLink[peer]];
      if (theirs.task == op.task && theirs.peer == static_cast<int>(r) && theirs.kind != op.kind &&
          ready(op.task)) {
        done[op.task] = 1;
        ++nextLink[r];
        ++nextLink[peer];
        moved = true;
      }
    }
  }
  std::ostringstream where;
  for (std::size_t r = 0; r < k; ++r) {
    for (std::size_t w = 0; w < s.ranks[r].workers.size(); ++w) {
      if (next[r][w] < s.ranks[r].workers[w].size()) {
        where << "rank " << r << " worker " << w << " at task " << s.ranks[r].workers[w][next[r][w]]
              << "; ";
      }
    }
    if (nextLink[r] < s.ranks[r].link.size()) {
      where << "rank " << r << " link at transfer " << s.ranks[r].link[nextLink[r]].transfer
            << "; ";
    }
  }
  return where.str();
}

// Every task is on exactly one worker list of one rank, or (a cross-rank
// transfer) on the link lists of exactly two.
std::string uncovered(const DistributedSchedule& s) {
  std::vector<int> onWorkers(s.deps.size(), 0);
  std::vector<int> onLinks(s.deps.size(), 0);
  for (const RankLists& r : s.ranks) {
    for (const std::vector<u32>& list : r.workers) {
      for (u32 t : list) {
        ++onWorkers[t];
      }
    }
    for (const LinkOp& op : r.link) {
      ++onLinks[op.task];
    }
  }
  for (std::size_t t = 0; t < s.deps.size(); ++t) {
    const bool once =
        (onWorkers[t] == 1 && onLinks[t] == 0) || (onWorkers[t] == 0 && onLinks[t] == 2);
    if (!once) {
      return "task " + std::to_string(t) + " is on " + std::to_string(onWorkers[t]) +
             " worker lists and " + std::to_string(onLinks[t]) + " link lists";
    }
  }
  return {};
}

struct Checked {
  std::size_t crossing = 0; // cross-rank transfers in the schedule
};

// Every check, for `ranks` ranks and a cap of `threads` workers per rank.
Checked checkSchedule(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                      const cost::Simulation* sim, const cost::Target& target, int ranks,
                      int threads) {
  INFO(ranks << " ranks, " << threads << " threads");
  const DistributedSchedule s =
      distributedSchedule(g, p, sim, deviceRanks(p, target, ranks), ranks, threads);
  REQUIRE(s.ranks.size() == static_cast<std::size_t>(ranks));
  CHECK(isTopological(s.order, s.deps));
  CHECK(uncovered(s).empty());
  INFO(uncovered(s));
  const std::string pairs = unpaired(s);
  INFO(pairs);
  CHECK(pairs.empty());
  const std::string where = stuck(s);
  INFO(where);
  CHECK(where.empty());
  Checked c;
  for (const RankLists& r : s.ranks) {
    c.crossing += r.link.size();
  }
  c.crossing /= 2;
  return c;
}

// transformer_block optimized for `target` as tests/mpi does (seed 1, 30 iterations).
plan::LoadedPlan optimized(const std::string& target) {
  const std::string path = std::filesystem::temp_directory_path().string() +
                           "/tapestry-link-schedule-" + std::to_string(::getpid()) + "-" + target +
                           ".json";
  driver::OptimizeConfig config;
  config.graphPath = std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/transformer_block.json";
  config.target = target;
  config.seed = 1;
  config.iterations = 30;
  config.outputPath = path;
  config.quiet = true;
  std::ostringstream out;
  std::ostringstream err;
  REQUIRE(driver::optimizeCommand(config, out, err) == 0);
  plan::LoadedPlan loaded = plan::loadPlan(path, lib());
  std::filesystem::remove(path);
  return loaded;
}

} // namespace

TEST_CASE("link operations: sends leave, receives arrive, in the agreed order", "[link_schedule]") {
  const std::vector<CrossRankTransfer> inOrder = {
      {4, 0, 0, 1}, {7, 1, 1, 0}, {9, 2, 2, 2}, {12, 3, 2, 0}, {13, 4, 0, 1}};
  using K = LinkOp::Kind;
  CHECK(linkSchedule(inOrder, 0) == std::vector<LinkOp>{{K::Send, 4, 0, 1},
                                                        {K::Receive, 7, 1, 1},
                                                        {K::Receive, 12, 3, 2},
                                                        {K::Send, 13, 4, 1}});
  CHECK(linkSchedule(inOrder, 1) ==
        std::vector<LinkOp>{{K::Receive, 4, 0, 0}, {K::Send, 7, 1, 0}, {K::Receive, 13, 4, 0}});
  // A transfer within rank 2 is no link operation.
  CHECK(linkSchedule(inOrder, 2) == std::vector<LinkOp>{{K::Send, 12, 3, 0}});
  CHECK(linkSchedule(inOrder, 3).empty());

  CHECK(isTopological(std::vector<u32>{0, 1, 2}, {{}, {0}, {0, 1}}));
  CHECK_FALSE(isTopological(std::vector<u32>{1, 0, 2}, {{}, {0}, {0, 1}}));
  CHECK_FALSE(isTopological(std::vector<u32>{0, 1}, {{}, {0}, {0, 1}}));
  CHECK_FALSE(isTopological(std::vector<u32>{0, 0, 2}, {{}, {0}, {}}));
}

TEST_CASE("the schedule check finds the deadlock of two ranks that both send first",
          "[link_schedule]") {
  // Transfer task 0 goes from rank 0 to rank 1, task 1 from rank 1 to rank 0;
  // nothing else. Each rank posting its send first never finishes.
  DistributedSchedule s;
  s.deps = {{}, {}};
  s.order = {0, 1};
  using K = LinkOp::Kind;
  s.ranks = {RankLists{{}, {{K::Send, 0, 0, 1}, {K::Receive, 1, 1, 1}}},
             RankLists{{}, {{K::Send, 1, 1, 0}, {K::Receive, 0, 0, 0}}}};
  CHECK_FALSE(unpaired(s).empty());
  CHECK_FALSE(stuck(s).empty());
  // The schedule's order pairs them: rank 1 receives first.
  const std::vector<CrossRankTransfer> inOrder = {{0, 0, 0, 1}, {1, 1, 1, 0}};
  s.ranks = {RankLists{{}, linkSchedule(inOrder, 0)}, RankLists{{}, linkSchedule(inOrder, 1)}};
  CHECK(unpaired(s).empty());
  CHECK(stuck(s).empty());
  // A receive whose sender first waits for something later: task 2 (a shard
  // on rank 1 after its receive of transfer 0) must come before transfer 1's
  // send, which reads its result.
  s.deps = {{}, {2}, {0}};
  s.ranks = {RankLists{{}, {{K::Receive, 1, 1, 1}, {K::Send, 0, 0, 1}}},
             RankLists{{{2}}, {{K::Send, 1, 1, 0}, {K::Receive, 0, 0, 0}}}};
  CHECK_FALSE(stuck(s).empty());
  s.ranks = {RankLists{{}, {{K::Send, 0, 0, 1}, {K::Receive, 1, 1, 1}}},
             RankLists{{{2}}, {{K::Receive, 0, 0, 0}, {K::Send, 1, 1, 0}}}};
  CHECK(stuck(s).empty());
}

TEST_CASE("every testdata plan's link schedule pairs up and finishes", "[link_schedule]") {
  const cost::Target eight = cost::loadTarget("h100x8");
  std::size_t crossing = 0;
  for (const std::string& path : testdataPlans()) {
    INFO(path);
    const plan::LoadedPlan loaded = plan::loadPlan(path, lib());
    for (int ranks : {2, 3, 4}) {
      for (int threads : {0, 1}) {
        crossing += checkSchedule(loaded.graph, loaded.plan, &loaded.simulation, loaded.target,
                                  ranks, threads)
                        .crossing;
      }
    }
  }
  // The testdata graphs with split reductions over 4 and 8 devices (partials
  // moved between ranks), in submission order and in simulated order.
  for (const char* name :
       {"mlp.json", "convnet.json", "transformer_block.json", "concat_split_embedding.json"}) {
    INFO(name);
    const graph::ExpandedGraph g =
        graph::loadAndExpand(std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name, lib());
    for (int devices : {4, 8}) {
      const plan::ShardPlan p = plan::buildPlan(g, 8, reductionSplit(g, devices));
      const cost::Simulation sim = cost::simulate(g, eight, p);
      for (int ranks : {2, 4}) {
        crossing += checkSchedule(g, p, &sim, eight, ranks, 0).crossing;
        crossing += checkSchedule(g, p, nullptr, eight, ranks, 1).crossing;
      }
    }
  }
  CHECK(crossing > 0);
}

TEST_CASE("transformer_block plans for h100x8 and 2x-h100x8: link schedules pair up and finish",
          "[link_schedule]") {
  for (const char* target : {"h100x8", "2x-h100x8"}) {
    INFO(target);
    const plan::LoadedPlan loaded = optimized(target);
    std::size_t crossing = 0;
    for (int ranks : {2, 4, 8}) {
      for (int threads : {0, 1}) {
        crossing += checkSchedule(loaded.graph, loaded.plan, &loaded.simulation, loaded.target,
                                  ranks, threads)
                        .crossing;
      }
    }
    CHECK(crossing > 0);
  }
}
