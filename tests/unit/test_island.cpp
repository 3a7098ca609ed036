// core/search/island: the island model of the distributed search (issue 11),
// without MPI: seeds, batch shares and the exchange schedule; the compact plan
// encoding; merging fronts; the in-process transport and its failure protocol;
// whole searches of K islands simulated in one process (one island is the
// plain search, K islands are deterministic, agree on their front and stop
// together); and the optimize command on islands (rank 0 alone writes).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/driver/optimize_command.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/search/archive.hpp"
#include "core/search/island.hpp"
#include "core/search/mutate.hpp"
#include "core/search/search.hpp"
#include "core/search/space.hpp"

using namespace tapestry;
using namespace tapestry::search;

namespace {

const std::string kTestdata = TAPESTRY_TESTDATA_DIR;

const graph::ExpandedGraph& graphNamed(const std::string& name) {
  static const metakernel::MetakernelLibrary lib = metakernel::MetakernelLibrary::standard();
  static std::map<std::string, graph::ExpandedGraph> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    it = cache.emplace(name, graph::loadAndExpand(kTestdata + "/graphs/" + name + ".json", lib))
             .first;
  }
  return it->second;
}

bool sameFront(const std::vector<Evaluated>& a, const std::vector<Evaluated>& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i].choice == b[i].choice) || !(a[i].objectives == b[i].objectives)) {
      return false;
    }
  }
  return true;
}

IslandOptions every(std::int64_t generations) {
  IslandOptions o;
  o.exchangeEvery = generations;
  return o;
}

// Runs fn(rank, transport) on one thread per rank of a LocalIslands.
template <class Fn> void onEveryRank(int size, Fn fn) {
  LocalIslands islands(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r, t = islands.transport(r)]() mutable { fn(r, *t); });
  }
  for (std::thread& t : threads) {
    t.join();
  }
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
    }
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

} // namespace

// ---------------------------------------------------------------- pieces

TEST_CASE("island seeds: rank 0 keeps the run's seed, the others differ", "[island]") {
  CHECK(islandSeed(7, 0) == 7);
  CHECK(islandSeed(7, 1) == islandSeed(7, 1));
  CHECK(islandSeed(7, 1) != 7);
  CHECK(islandSeed(7, 1) != islandSeed(7, 2));
  CHECK(islandSeed(7, 1) != islandSeed(8, 1));
  CHECK(islandSeed(1, 3) != islandSeed(3, 1));
  // Fixed values: a seed must mean the same search on every platform and build.
  CHECK(islandSeed(1, 1) == 3986457179768683244ULL);
  CHECK(islandSeed(7, 3) == 11845183193435525690ULL);
}

TEST_CASE("island batch shares add up to the batch", "[island]") {
  for (int size : {1, 2, 3, 4, 5, 7, 64}) {
    std::size_t total = 0;
    for (int r = 0; r < size; ++r) {
      const std::size_t share = islandBatch(64, r, size);
      CHECK(share >= 64 / static_cast<std::size_t>(size));
      CHECK(share <= 64 / static_cast<std::size_t>(size) + 1);
      total += share;
    }
    CHECK(total == 64);
  }
  CHECK(islandBatch(64, 0, 1) == 64);
  CHECK(islandBatch(64, 0, 3) == 22);
  CHECK(islandBatch(64, 2, 3) == 21);
  CHECK(islandBatch(4, 5, 8) == 1); // at least one candidate each
}

TEST_CASE("the exchange schedule", "[island]") {
  CHECK_FALSE(exchangesAfter(0, 10, 100));
  CHECK_FALSE(exchangesAfter(5, 10, 100));
  CHECK(exchangesAfter(10, 10, 100));
  CHECK(exchangesAfter(90, 10, 100));
  CHECK_FALSE(exchangesAfter(100, 10, 100)); // the final merge instead
  CHECK(exchangesAfter(1, 1, 3));
  CHECK(exchangesAfter(2, 1, 3));
  CHECK_FALSE(exchangesAfter(3, 1, 3));
  CHECK(exchangesAfter(1000, 10, 0)); // a time budget: no last generation
  CHECK_FALSE(exchangesAfter(1001, 10, 0));
}

TEST_CASE("launch info comes from the launcher's environment", "[island]") {
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", nullptr), b("OMPI_COMM_WORLD_RANK", nullptr);
  ScopedEnv c("PMIX_RANK", nullptr), d("PMI_SIZE", nullptr), e("PMI_RANK", nullptr);
  CHECK_FALSE(launchFromEnvironment().has_value());
  {
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "4"), rank("OMPI_COMM_WORLD_RANK", "2");
    const std::optional<LaunchInfo> info = launchFromEnvironment();
    REQUIRE(info.has_value());
    CHECK(info->size == 4);
    CHECK(info->rank == 2);
  }
  {
    ScopedEnv size("PMI_SIZE", "3"), rank("PMI_RANK", "1");
    const std::optional<LaunchInfo> info = launchFromEnvironment();
    REQUIRE(info.has_value());
    CHECK(info->size == 3);
    CHECK(info->rank == 1);
  }
  {
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "two");
    CHECK_FALSE(launchFromEnvironment().has_value());
  }
}

// ---------------------------------------------------------------- encoding

TEST_CASE("plans survive the compact encoding exactly", "[island][encoding]") {
  const graph::ExpandedGraph& g = graphNamed("transformer_block");
  const cost::Target t = cost::loadTarget("2x-h100x8");
  ChoiceScorer evaluator(g, t);
  const SearchSpace space(g, t.deviceCount());
  ParetoArchive archive(0);
  std::vector<BaselineResult> baselines = evaluateBaselines(evaluator, space, &archive);
  REQUIRE_FALSE(archive.empty());

  IslandMessage m;
  m.wantsStop = true;
  m.exhausted = true;
  m.evaluations = 12345;
  m.invalid = 17;
  m.leastPeakMemory = 1 << 20;
  m.seconds = 0.1 + 0.2; // not a short decimal: the bits must survive
  m.evaluated = {0, 1, std::numeric_limits<std::uint64_t>::max(), 0x8000000000000000ULL};
  m.recentShards = 987654321;
  Rng rng(5);
  for (const BaselineResult& b : baselines) {
    plan::PlanChoice c = b.baseline.choice;
    for (int i = 0; i < 20; ++i) {
      mutate(space, c, rng);
      c.relay = i % 3 != 0; // whether the plan forwards inputs travels too
      m.plans.push_back(
          Evaluated{c, cost::Objectives{1.0 / (i + 3), 1000 + i, 77 * i, i % 2 == 0}});
    }
  }
  const std::vector<std::int64_t> words = encodeMessage(space, m);
  std::size_t perPlan = 5; // objectives and variant
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    perPlan += space.op(i).extents.size() + 1;
  }
  CHECK(words.size() == 10 + m.plans.size() * perPlan + m.evaluated.size());

  const IslandMessage back = decodeMessage(space, words);
  CHECK(back.wantsStop);
  CHECK_FALSE(back.stopFlag);
  CHECK(back.exhausted);
  CHECK(back.evaluations == 12345);
  CHECK(back.invalid == 17);
  CHECK(back.leastPeakMemory == 1 << 20);
  CHECK(back.seconds == m.seconds);
  CHECK(sameFront(back.plans, m.plans));
  CHECK(back.evaluated == m.evaluated);
  CHECK(back.recentShards == 987654321);

  SECTION("words that are no encoding are a bug, not a crash") {
    std::vector<std::int64_t> cut(words.begin(), words.end() - 1);
    CHECK_THROWS_AS(decodeMessage(space, cut), InternalError);
    std::vector<std::int64_t> bad = words;
    bad[10 + 5] = 1000; // the first op's first split part: beyond any extent
    CHECK_THROWS_AS(decodeMessage(space, bad), InternalError);
    bad = words;
    bad[10 + 4] = 1; // a graph variant the search does not have
    CHECK_THROWS_AS(decodeMessage(space, bad), InternalError);
    std::vector<std::int64_t> negative = words;
    negative[9] = -1; // shard tasks since the last exchange
    CHECK_THROWS_AS(decodeMessage(space, negative), InternalError);
    CHECK_THROWS_AS(decodeMessage(space, std::vector<std::int64_t>{1, 2}), InternalError);
    // Another graph's space.
    const SearchSpace other(graphNamed("mlp"), t.deviceCount());
    CHECK_THROWS_AS(decodeMessage(other, words), InternalError);
  }
}

TEST_CASE("an empty message encodes to its header", "[island][encoding]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  const SearchSpace space(g, 4);
  const std::vector<std::int64_t> words = encodeMessage(space, IslandMessage{});
  CHECK(words.size() == 10);
  const IslandMessage back = decodeMessage(space, words);
  CHECK(back.plans.empty());
  CHECK_FALSE(back.wantsStop);
}

TEST_CASE("batch shares follow what the islands' plans cost to evaluate", "[island][balance]") {
  using Sizes = std::vector<std::size_t>;
  // Equal costs: the equal shares of islandBatch.
  CHECK(balancedBatches(64, {100, 100}, {10, 10}) == Sizes{32, 32});
  CHECK(balancedBatches(64, {30, 30, 30}, {3, 3, 3}) == Sizes{22, 21, 21});
  // Island 1's plans cost twice as much: it takes fewer (the floor is a quarter
  // of the equal share, 8; the 48 left split 2:1, 32 + 16).
  CHECK(balancedBatches(64, {100, 200}, {10, 10}) == Sizes{40, 24});
  // Shares never fall below the floor, and always add up to the batch.
  const Sizes skewed = balancedBatches(64, {1, 1000000, 1, 1}, {10, 10, 10, 10});
  CHECK(skewed[1] == 4);
  CHECK(skewed[0] + skewed[1] + skewed[2] + skewed[3] == 64);
  // An island that evaluated nothing counts as the mean of the others.
  CHECK(balancedBatches(64, {100, 0, 100}, {10, 0, 10}) == Sizes{22, 21, 21});
  // Nothing known, one island, or fewer candidates than islands: equal shares.
  CHECK(balancedBatches(64, {0, 0}, {0, 0}) == Sizes{32, 32});
  CHECK(balancedBatches(64, {5}, {1}) == Sizes{64});
  CHECK(balancedBatches(3, {1, 100, 1, 1}, {1, 1, 1, 1}) == Sizes{1, 1, 1, 1});
  for (std::size_t batch : {4, 5, 17, 64, 1000}) {
    const Sizes s = balancedBatches(batch, {7, 300, 41, 9}, {3, 5, 2, 11});
    std::size_t total = 0;
    for (std::size_t n : s) {
      CHECK(n >= 1);
      total += n;
    }
    CHECK(total == batch);
  }
}

// ---------------------------------------------------------------- merging

TEST_CASE("merging fronts keeps the non-dominated union", "[island][merge]") {
  auto plan = [](double time, std::int64_t memory) {
    return Evaluated{plan::PlanChoice{}, cost::Objectives{time, memory, 0, true}};
  };
  ParetoArchive mine(0);
  mergeFront(mine, {plan(1, 10), plan(2, 5), plan(4, 2)});
  CHECK(mine.size() == 3);
  // (3, 3) is new, (2, 6) dominated, (4, 2) a duplicate, (0.5, 20) new,
  // (1.5, 4) dominates (2, 5).
  const std::size_t kept =
      mergeFront(mine, {plan(3, 3), plan(2, 6), plan(4, 2), plan(0.5, 20), plan(1.5, 4)});
  CHECK(kept == 3);
  std::vector<std::pair<double, std::int64_t>> got;
  for (const Evaluated& e : mine.sorted()) {
    got.emplace_back(e.objectives.timeS, e.objectives.peakMemoryBytes);
  }
  CHECK(got ==
        std::vector<std::pair<double, std::int64_t>>{{0.5, 20}, {1, 10}, {1.5, 4}, {3, 3}, {4, 2}});
}

// ---------------------------------------------------------------- transport

TEST_CASE("local islands gather every rank's message in rank order", "[island][transport]") {
  std::vector<std::vector<std::vector<std::int64_t>>> seen(3);
  onEveryRank(3, [&](int rank, IslandTransport& t) {
    CHECK(t.rank() == rank);
    CHECK(t.size() == 3);
    for (int round = 0; round < 50; ++round) {
      // Lengths differ by rank and round.
      std::vector<std::int64_t> mine(static_cast<std::size_t>(rank + round % 3),
                                     rank * 100 + round);
      const auto all = t.exchange(mine);
      REQUIRE(all.size() == 3);
      for (int r = 0; r < 3; ++r) {
        CHECK(all[static_cast<std::size_t>(r)] ==
              std::vector<std::int64_t>(static_cast<std::size_t>(r + round % 3), r * 100 + round));
      }
    }
    seen[static_cast<std::size_t>(rank)] = t.exchange({rank});
  });
  for (const auto& s : seen) {
    CHECK(s == std::vector<std::vector<std::int64_t>>{{0}, {1}, {2}});
  }
}

TEST_CASE("a failing rank stops the others at their next exchange", "[island][transport]") {
  std::vector<int> outcome(4, -1);
  std::vector<int> reporter(4, -1);
  onEveryRank(4, [&](int rank, IslandTransport& t) {
    try {
      t.exchange({1});
      if (rank == 2 || rank == 3) {
        throw Error("bad input on this rank");
      }
      t.exchange({2}); // ranks 0 and 1 meet the failure here
      outcome[static_cast<std::size_t>(rank)] = 0;
    } catch (const PeerFailed& e) {
      outcome[static_cast<std::size_t>(rank)] = e.exitCode();
      reporter[static_cast<std::size_t>(rank)] = e.rank();
    } catch (const Error& e) {
      reporter[static_cast<std::size_t>(rank)] = t.fail(static_cast<int>(e.exitCode()));
      outcome[static_cast<std::size_t>(rank)] = static_cast<int>(e.exitCode());
    }
  });
  CHECK(outcome == std::vector<int>{1, 1, 1, 1});
  CHECK(reporter == std::vector<int>{2, 2, 2, 2}); // the lowest failing rank reports
}

TEST_CASE("after a failure no rank leaves before the reporting rank has reported",
          "[island][transport]") {
  // The launcher stops the whole job when the first rank exits with an error,
  // so the silent ranks must not return before the reporter has printed.
  std::atomic<bool> reported{false};
  std::vector<int> sawReport(3, -1);
  onEveryRank(3, [&](int rank, IslandTransport& t) {
    try {
      t.exchange({1});
      if (rank == 1) {
        throw Error("bad input on this rank");
      }
      t.exchange({2});
    } catch (const PeerFailed&) {
      t.awaitReport();
      sawReport[static_cast<std::size_t>(rank)] = reported.load() ? 1 : 0;
      return;
    } catch (const Error& e) {
      REQUIRE(t.fail(static_cast<int>(e.exitCode())) == rank);
      std::this_thread::sleep_for(std::chrono::milliseconds(50)); // a slow report
      reported = true;
      t.awaitReport();
      sawReport[static_cast<std::size_t>(rank)] = 1;
      t.awaitReport(); // owed once only: a second call does not wait
    }
  });
  CHECK(sawReport == std::vector<int>{1, 1, 1});
}

TEST_CASE("fail after the last collective does not wait", "[island][transport]") {
  onEveryRank(2, [&](int rank, IslandTransport& t) {
    t.exchange({rank});
    t.close();
    CHECK(t.fail(1) == rank);
    t.awaitReport(); // the others have left: nothing to wait for
  });
}

// ---------------------------------------------------------------- search

TEST_CASE("one island is exactly the plain search", "[island][search]") {
  const graph::ExpandedGraph& g = graphNamed("mlp");
  const cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  SearchOptions options;
  options.seed = 3;
  options.generations = 25;
  const SearchResult plain = runSearch(evaluator, options);
  const std::vector<SearchResult> one = runLocalIslands(evaluator, options, every(4), 1);
  REQUIRE(one.size() == 1);
  CHECK(sameFront(one[0].front, plain.front));
  CHECK(one[0].evaluations == plain.evaluations);
  CHECK(one[0].invalid == plain.invalid);
  CHECK(one[0].iterations == plain.iterations);
  REQUIRE(one[0].baselines.size() == plain.baselines.size());
}

TEST_CASE("K islands are deterministic and agree on one front", "[island][search]") {
  const graph::ExpandedGraph& g = graphNamed("transformer_block");
  const cost::Target t = cost::loadTarget("2x-h100x8");
  ChoiceScorer evaluator(g, t);
  SearchOptions options;
  options.seed = 9;
  options.generations = 24;
  for (int size : {2, 4}) {
    INFO(size << " islands");
    const std::vector<SearchResult> a = runLocalIslands(evaluator, options, every(5), size);
    options.threads = 2; // the thread count never changes the result
    const std::vector<SearchResult> b = runLocalIslands(evaluator, options, every(5), size);
    options.threads = 1;
    REQUIRE(a.size() == static_cast<std::size_t>(size));
    for (std::size_t r = 0; r < a.size(); ++r) {
      CHECK(sameFront(a[r].front, a[0].front));
      CHECK(sameFront(b[r].front, a[0].front));
      CHECK(a[r].iterations == 24);
      CHECK(a[r].evaluations == a[0].evaluations);
    }
    CHECK_FALSE(a[0].front.empty());
    CHECK(a[0].front.size() <= kDefaultArchiveCap);
    // The same total budget as one process: 24 generations of 64 candidates,
    // plus every island's baselines.
    const std::int64_t baselines = static_cast<std::int64_t>(a[0].baselines.size());
    CHECK(a[0].evaluations <= 24 * 64 + size * baselines);
    CHECK(a[0].evaluations >= 24 * 60);
    // A different exchange interval is a different (still deterministic) search.
    const std::vector<SearchResult> c = runLocalIslands(evaluator, options, every(7), size);
    CHECK(c[0].iterations == 24);
  }
}

TEST_CASE("islands that never exchange are K plain searches, merged", "[island][search]") {
  const graph::ExpandedGraph& g = graphNamed("mlp");
  const cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  SearchOptions options;
  options.seed = 1;
  options.generations = 10;
  options.archiveCap = 0; // unbounded: the merge does not depend on its order
  IslandOptions never = every(1000);
  never.homeShare = 0; // parents from the whole archive, as the plain search
  const std::vector<SearchResult> islands = runLocalIslands(evaluator, options, never, 3);
  // Each island alone: its seed and its share of the batch.
  ParetoArchive merged(0);
  std::int64_t evaluations = 0;
  for (int r = 0; r < 3; ++r) {
    SearchOptions alone = options;
    alone.seed = islandSeed(options.seed, r);
    alone.batch = islandBatch(kDefaultBatch, r, 3);
    const SearchResult own = runSearch(evaluator, alone);
    mergeFront(merged, own.front);
    evaluations += own.evaluations;
  }
  const std::vector<Evaluated> expected = merged.sorted();
  REQUIRE(islands[0].front.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(islands[0].front[i].objectives == expected[i].objectives);
  }
  CHECK(islands[0].evaluations == evaluations);
  // With exchanges it is another search.
  const std::vector<SearchResult> exchanging = runLocalIslands(evaluator, options, every(2), 3);
  CHECK_FALSE(sameFront(exchanging[0].front, islands[0].front));
}

TEST_CASE("a stop flag stops every island at the same exchange", "[island][search]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  std::atomic<bool> stop{false};
  SearchOptions options;
  options.generations = 100000;
  options.stop = &stop;
  options.onGeneration = [&](const SearchProgress& p) { // rank 0 only
    if (p.generation == 7) {
      stop = true;
    }
  };
  const std::vector<SearchResult> r = runLocalIslands(evaluator, options, every(5), 3);
  for (const SearchResult& s : r) {
    CHECK(s.stopped);
    CHECK(s.iterations == 10); // the first exchange after the flag
    CHECK_FALSE(s.front.empty());
  }
}

TEST_CASE("a time budget ends every island at the same generation", "[island][search]") {
  const graph::ExpandedGraph& g = graphNamed("mlp");
  const cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  SearchOptions options;
  options.budgetSeconds = 0.2;
  const std::vector<SearchResult> r = runLocalIslands(evaluator, options, every(2), 4);
  for (const SearchResult& s : r) {
    CHECK(s.iterations == r[0].iterations);
    CHECK(s.iterations % 2 == 0);
    CHECK(s.iterations > 0);
    CHECK_FALSE(s.stopped);
    CHECK(sameFront(s.front, r[0].front));
  }
}

TEST_CASE("an island that fails stops the others", "[island][search]") {
  const graph::ExpandedGraph& g = graphNamed("mlp");
  const cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  SearchOptions options;
  options.generations = 50;
  int calls = 0;
  options.onGeneration = [&](const SearchProgress& p) { // rank 0 only
    ++calls;
    if (p.generation == 12) {
      throw Error("rank 0 gives up");
    }
  };
  try {
    runLocalIslands(evaluator, options, every(5), 3);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.message() == "rank 0 gives up");
  }
  CHECK(calls == 12);
}

// ---------------------------------------------------------------- optimize

TEST_CASE("optimize on islands: rank 0 alone writes and prints", "[island][command]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("tapestry-islands-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> outs(3), errs(3);
  std::vector<int> codes(3, -1);
  onEveryRank(3, [&](int rank, IslandTransport& t) {
    driver::OptimizeConfig config;
    config.graphPath = kTestdata + "/graphs/mlp.json";
    config.target = "h100x8";
    config.seed = 2;
    config.iterations = 6;
    config.exchangeEvery = 2;
    // Each rank names its own files: only rank 0's may appear.
    config.outputPath = (dir / ("plan" + std::to_string(rank) + ".json")).string();
    config.frontPath = (dir / ("front" + std::to_string(rank) + ".json")).string();
    config.json = true;
    config.islands = &t;
    std::ostringstream out, err;
    codes[static_cast<std::size_t>(rank)] = optimizeCommand(config, out, err);
    outs[static_cast<std::size_t>(rank)] = out.str();
    errs[static_cast<std::size_t>(rank)] = err.str();
  });
  CHECK(codes == std::vector<int>{0, 0, 0});
  CHECK(fs::exists(dir / "plan0.json"));
  CHECK(fs::exists(dir / "front0.json"));
  for (int r : {1, 2}) {
    CHECK_FALSE(fs::exists(dir / ("plan" + std::to_string(r) + ".json")));
    CHECK_FALSE(fs::exists(dir / ("front" + std::to_string(r) + ".json")));
    CHECK(outs[static_cast<std::size_t>(r)].empty());
    CHECK(errs[static_cast<std::size_t>(r)].empty());
  }
  const Json summary = Json::parse(outs[0]);
  CHECK(summary["search"]["ranks"] == 3);
  CHECK(summary["search"]["exchange_every"] == 2);
  CHECK(summary["search"]["iterations"] == 6);
  std::ifstream frontFile(dir / "front0.json");
  const Json front = Json::parse(frontFile);
  CHECK(front["search"]["ranks"] == 3);
  fs::remove_all(dir);
}

TEST_CASE("optimize on islands: --exhaustive is one process only", "[island][command]") {
  std::vector<int> codes(2, -1);
  onEveryRank(2, [&](int rank, IslandTransport& t) {
    driver::OptimizeConfig config;
    config.graphPath = kTestdata + "/graphs/tiny.json";
    config.exhaustive = true;
    config.islands = &t;
    std::ostringstream out, err;
    try {
      optimizeCommand(config, out, err);
    } catch (const UsageError& e) {
      CHECK(e.message() == "--exhaustive runs in one process; run it without mpirun");
      codes[static_cast<std::size_t>(rank)] = static_cast<int>(e.exitCode());
    }
  });
  CHECK(codes == std::vector<int>{2, 2});
}

TEST_CASE("plans of several graph variants survive the compact encoding", "[island][encoding]") {
  const cost::Target t = cost::loadTarget("h100x8");
  const std::vector<SearchSpace> spaces{SearchSpace(graphNamed("tiny"), t.deviceCount()),
                                        SearchSpace(graphNamed("mlp"), t.deviceCount())};
  IslandMessage m;
  Rng rng(9);
  for (std::uint32_t v : {1u, 0u, 1u}) {
    plan::PlanChoice c = plan::singleDeviceChoice(spaces[v].graph());
    c.variant = v;
    mutate(spaces[v], c, rng);
    m.plans.push_back(Evaluated{c, cost::Objectives{0.5 + v, 100, 7, true}});
  }
  const std::vector<std::int64_t> words = encodeMessage(spaces, m);
  const IslandMessage back = decodeMessage(spaces, words);
  CHECK(sameFront(back.plans, m.plans));
  REQUIRE(back.plans.size() == 3);
  CHECK(back.plans[0].choice.variant == 1);
  CHECK(back.plans[1].choice.variant == 0);
  // One variant fewer is another search: refused.
  CHECK_THROWS_AS(decodeMessage(spaces[0], words), InternalError);
  // A plan claiming a variant it is not of no longer adds up.
  std::vector<std::int64_t> bad = words;
  bad[10 + 4] = 0;
  CHECK_THROWS_AS(decodeMessage(spaces, bad), InternalError);
}
