// core/search: the Pareto archive, hypervolume, the search space and its moves,
// baselines, selection, determinism, the exhaustive front, and the acceptance
// checks of issue 5 (search vs baselines on the MLP and the transformer block,
// search vs exhaustive on a four-operation graph, every emitted plan loads).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/driver/optimize_command.hpp"
#include "core/graph/loader.hpp"
#include "core/metakernel/library.hpp"
#include "core/search/archive.hpp"
#include "core/search/exhaustive.hpp"
#include "core/search/front_file.hpp"
#include "core/search/hypervolume.hpp"
#include "core/search/mutate.hpp"
#include "core/search/parallel.hpp"
#include "core/search/search.hpp"
#include "core/search/select.hpp"
#include "core/search/space.hpp"

using namespace tapestry;
using namespace tapestry::search;
using namespace tapestry::driver;

namespace {

const std::string kTestdata = TAPESTRY_TESTDATA_DIR;

const metakernel::MetakernelLibrary& library() {
  static const metakernel::MetakernelLibrary lib = metakernel::MetakernelLibrary::standard();
  return lib;
}

const graph::ExpandedGraph& graphNamed(const std::string& name) {
  static std::map<std::string, graph::ExpandedGraph> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    it =
        cache
            .emplace(name, graph::loadAndExpand(kTestdata + "/graphs/" + name + ".json", library()))
            .first;
  }
  return it->second;
}

// h100x8's devices, four of them.
cost::Target h100x4() {
  cost::Target t = cost::loadTarget("h100x8");
  t.name = "h100x4";
  t.devices.count = 4;
  return t;
}

cost::Objectives obj(double t, std::int64_t m, std::int64_t x = 0) {
  return cost::Objectives{t, m, x, true};
}

Evaluated plainPlan(double t, std::int64_t m, std::int64_t x = 0) {
  return Evaluated{plan::PlanChoice{}, obj(t, m, x)};
}

bool tradesOff(const std::vector<Evaluated>& front) {
  for (const Evaluated& a : front) {
    for (const Evaluated& b : front) {
      if (a.objectives.timeS < b.objectives.timeS &&
          a.objectives.peakMemoryBytes > b.objectives.peakMemoryBytes) {
        return true;
      }
    }
  }
  return false;
}

std::string tempPath(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "." + std::to_string(::getpid()) + ".json"))
      .string();
}

} // namespace

// ---------------------------------------------------------------- archive

TEST_CASE("archive keeps exactly the non-dominated feasible plans", "[search][archive]") {
  ParetoArchive a;
  CHECK(a.insert(plainPlan(2, 20)));
  CHECK(a.insert(plainPlan(1, 30)));       // faster, bigger: both stay
  CHECK_FALSE(a.insert(plainPlan(3, 30))); // dominated
  CHECK_FALSE(a.insert(plainPlan(2, 20))); // same objectives: a duplicate
  CHECK(a.size() == 2);
  CHECK(a.insert(plainPlan(1, 20))); // dominates both
  REQUIRE(a.size() == 1);
  CHECK(a.members()[0].objectives == obj(1, 20));

  cost::Objectives over = obj(0.5, 10);
  over.feasible = false;
  CHECK_FALSE(a.insert(Evaluated{plan::PlanChoice{}, over}));
  CHECK(a.size() == 1);

  // Transfer bytes are an objective too.
  CHECK(a.insert(plainPlan(1, 20, -1)));
  CHECK(a.size() == 1);
  CHECK(a.insert(plainPlan(1.5, 25, -2)));
  CHECK(a.size() == 2);
}

TEST_CASE("archive thinning keeps the extremes and the spread", "[search][archive]") {
  ParetoArchive a(4);
  // A front along t + m = 10 with one crowded corner.
  for (double t : {1.0, 5.0, 5.1, 5.2, 9.0}) {
    a.insert(plainPlan(t, static_cast<std::int64_t>(100 - 10 * t)));
  }
  REQUIRE(a.size() == 4);
  std::vector<double> times;
  for (const Evaluated& e : a.sorted()) {
    times.push_back(e.objectives.timeS);
  }
  CHECK(times.front() == 1.0);
  CHECK(times.back() == 9.0);
  // One of the three crowded middle plans went.
  CHECK(std::count_if(times.begin(), times.end(), [](double t) { return t > 4 && t < 6; }) == 2);
}

TEST_CASE("crowding distances", "[search][archive]") {
  auto d = crowdingDistances({obj(1, 9), obj(2, 5), obj(3, 4), obj(9, 1)});
  CHECK(std::isinf(d[0]));
  CHECK(std::isinf(d[3]));
  // Interior: time gaps (3-1)/8, (9-2)/8; memory gaps (9-4)/8, (5-1)/8; transfer all equal.
  CHECK(d[1] == Approx(2.0 / 8 + 5.0 / 8));
  CHECK(d[2] == Approx(7.0 / 8 + 4.0 / 8));
}

TEST_CASE("the time-first and memory-first orders of objective vectors", "[search][archive]") {
  CHECK(fasterThan(obj(1, 30), obj(2, 20)));       // time decides
  CHECK(fasterThan(obj(1, 20), obj(1, 30)));       // then memory
  CHECK(fasterThan(obj(1, 20, 5), obj(1, 20, 6))); // then bytes moved
  CHECK_FALSE(fasterThan(obj(1, 20), obj(1, 20)));
  CHECK(smallerThan(obj(2, 20), obj(1, 30))); // memory decides
  CHECK(smallerThan(obj(1, 20), obj(2, 20))); // then time
  CHECK(smallerThan(obj(1, 20, 5), obj(1, 20, 6)));
  CHECK_FALSE(smallerThan(obj(1, 20), obj(1, 20)));
}

// ---------------------------------------------------------------- hypervolume

TEST_CASE("hypervolume in two dimensions is exact", "[search][hypervolume]") {
  const Point2 ref{4, 4};
  CHECK(hypervolume2d({}, ref) == 0);
  CHECK(hypervolume2d({{1, 1}}, ref) == 9);
  // Staircase: 3*1 + 2*1 + 1*1.
  CHECK(hypervolume2d({{1, 3}, {2, 2}, {3, 1}}, ref) == 6);
  // Order does not matter; dominated points and points beyond the reference add nothing.
  CHECK(hypervolume2d({{3, 1}, {2.5, 2.5}, {1, 3}, {2, 2}, {5, 0}, {0, 4}}, ref) == 6);
  CHECK(hypervolume2d({{2, 2}, {2, 2}}, ref) == 4);
  CHECK(hypervolume2d({{0.5, 3.5}, {3.5, 0.5}}, ref) == Approx(3.5 * 0.5 * 2 - 0.25));
}

// ---------------------------------------------------------------- random numbers

TEST_CASE("the generator is fixed and its draws are in range", "[search][rng]") {
  Rng a(42);
  Rng b(42);
  for (int i = 0; i < 100; ++i) {
    CHECK(a.next() == b.next());
  }
  Rng c = Rng::forSlot(1, 2, 3);
  Rng d = Rng::forSlot(1, 2, 4);
  CHECK(c.next() != d.next());
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const auto v = a.below(7);
    REQUIRE(v < 7);
    ++counts[v];
    const auto w = a.between(-2, 2);
    REQUIRE(w >= -2);
    REQUIRE(w <= 2);
    const double u = a.unit();
    REQUIRE(u >= 0);
    REQUIRE(u < 1);
  }
  for (int n : counts) {
    CHECK(n > 800);
    CHECK(n < 1200);
  }
}

// ---------------------------------------------------------------- space and moves

TEST_CASE("the search space of the tiny graph", "[search][space]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  SearchSpace space(g, 4);
  REQUIRE(space.opCount() == 4);
  // The layernorms and the softmax [64]: 1..4 parts; fc [64, 128]: a*b <= 4.
  CHECK(space.splits(0, 1000)->size() == 4);
  CHECK(space.splits(1, 1000)->size() == 8);
  CHECK(space.splits(2, 1000)->size() == 4);
  CHECK(space.splits(3, 1000)->size() == 4);
  CHECK_FALSE(space.splits(1, 5).has_value());
  CHECK(spaceSize(space, 10'000'000) == 16u * 32u * 16u * 16u);
  CHECK_FALSE(spaceSize(space, 1000).has_value());

  CHECK(space.placement({2, 2}, 3) == std::vector<int>{3, 0, 1, 2});
  CHECK(space.contains(1, space.opChoice({2, 2}, 3)));
  CHECK_FALSE(space.contains(1, plan::OpChoice{{2, 2}, {3, 0, 2, 1}})); // not an offset placement
  CHECK_FALSE(space.contains(1, space.opChoice({4, 2}, 0)));            // 8 shards > 4 devices

  // norm_out (index [64]) takes fc's row split only; fc takes norm_out's rows.
  const auto& outNeighbours = space.neighbours(2);
  auto fc = std::find_if(outNeighbours.begin(), outNeighbours.end(),
                         [](const Neighbour& n) { return n.op == 1; });
  REQUIRE(fc != outNeighbours.end());
  CHECK(space.alignedSplit(2, *fc, {2, 2}) == std::vector<std::int64_t>{2});
  const auto& fcNeighbours = space.neighbours(1);
  REQUIRE(fcNeighbours.size() == 2);
  CHECK(fcNeighbours[1].op == 2);
  CHECK(space.alignedSplit(1, fcNeighbours[1], {3}) == std::vector<std::int64_t>{3, 1});
}

TEST_CASE("moves keep choices inside the space", "[search][mutate]") {
  for (const char* name :
       {"tiny", "mlp", "transformer_block", "convnet", "concat_split_embedding"}) {
    const graph::ExpandedGraph& g = graphNamed(name);
    for (int devices : {1, 3, 8}) {
      SearchSpace space(g, devices);
      plan::PlanChoice c = plan::singleDeviceChoice(g, 0);
      Rng rng(7);
      for (int i = 0; i < 300; ++i) {
        for (MoveKind kind : {MoveKind::SplitDim, MoveKind::Placement, MoveKind::CopyNeighbour,
                              MoveKind::SpreadRegion}) {
          applyMove(space, c, kind, rng);
          INFO(name << " on " << devices << " devices, step " << i);
          REQUIRE(space.contains(c));
          REQUIRE_FALSE(plan::checkChoice(g, devices, c).has_value());
        }
        plan::PlanChoice other = plan::singleDeviceChoice(g, devices - 1);
        c = crossover(space, c, other, rng);
        REQUIRE(space.contains(c));
      }
    }
  }
}

TEST_CASE("the polish tries the fastest plan with one op copying a neighbour", "[search][mutate]") {
  const graph::ExpandedGraph& g = graphNamed("transformer_block");
  const std::vector<SearchSpace> spaces{SearchSpace(g, 8)};
  const SearchSpace& space = spaces[0];
  SearchState state(spaces, 64);
  state.batch = 2; // less than the children there are: the cursor carries over calls
  SearchHooks hooks;
  std::vector<plan::PlanChoice> none;
  polishCandidates(state, hooks, none);
  CHECK(none.empty()); // nothing to polish yet

  // The fastest of two members: a data-parallel-like plan (every op whose
  // first dim is 8 or more split 8 ways along it); the other is slower.
  plan::PlanChoice fast = plan::singleDeviceChoice(g, 0);
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    if (!space.op(i).extents.empty() && space.op(i).extents[0] >= 8 && space.op(i).splittable[0]) {
      std::vector<std::int64_t> split(space.op(i).extents.size(), 1);
      split[0] = 8;
      fast.ops[i] = space.opChoice(split, 0);
    }
  }
  // Misalign one op, so that copying a neighbour changes it.
  fast.ops[0] = space.opChoice(std::vector<std::int64_t>(space.op(0).extents.size(), 1), 3);
  state.archive.insert(Evaluated{plan::singleDeviceChoice(g, 0), {2.0, 10, 0, true}});
  state.archive.insert(Evaluated{fast, {1.0, 20, 0, true}});

  std::size_t pairs = 0;
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    pairs += space.neighbours(i).size();
  }
  std::vector<std::uint64_t> drawn;
  for (int round = 0; round < 100 && drawn.size() < pairs; ++round) {
    std::vector<plan::PlanChoice> candidates;
    polishCandidates(state, hooks, candidates);
    CHECK(candidates.size() <= state.batch);
    if (candidates.empty()) {
      break;
    }
    for (const plan::PlanChoice& c : candidates) {
      REQUIRE(space.contains(c));
      // Exactly one op differs from the fastest plan, and it now equals what
      // copying one of its neighbours gives.
      std::vector<std::size_t> changed;
      for (std::size_t i = 0; i < g.operations.size(); ++i) {
        if (!(c.ops[i] == fast.ops[i])) {
          changed.push_back(i);
        }
      }
      REQUIRE(changed.size() == 1);
      const std::size_t i = changed[0];
      bool fromNeighbour = false;
      for (const Neighbour& n : space.neighbours(i)) {
        plan::PlanChoice copy = fast;
        fromNeighbour = fromNeighbour || (copyNeighbour(space, copy, i, n) && copy == c);
      }
      CHECK(fromNeighbour);
      drawn.push_back(hashChoice(c));
    }
  }
  // Every child once: never one twice, and the op misaligned above among them.
  std::vector<std::uint64_t> unique = drawn;
  std::sort(unique.begin(), unique.end());
  CHECK(std::unique(unique.begin(), unique.end()) == unique.end());
  CHECK(drawn.size() > state.batch);
  bool fixedFirst = false;
  for (const Neighbour& n : space.neighbours(0)) {
    plan::PlanChoice copy = fast;
    fixedFirst =
        fixedFirst || (copyNeighbour(space, copy, 0, n) &&
                       std::find(drawn.begin(), drawn.end(), hashChoice(copy)) != drawn.end());
  }
  CHECK(fixedFirst);
  // Once every pair is tried, a further polish draws nothing new.
  std::vector<plan::PlanChoice> again;
  polishCandidates(state, hooks, again);
  polishCandidates(state, hooks, again);
  CHECK(again.empty());
}

TEST_CASE("baselines", "[search][baselines]") {
  const graph::ExpandedGraph& g = graphNamed("mlp");
  SearchSpace space(g, 8);
  plan::PlanContext context(g);
  std::vector<Baseline> b = makeBaselines(space, context);
  REQUIRE(b.size() == 3);
  CHECK(b[0].name == "single");
  CHECK(b[1].name == "data_parallel");
  CHECK(b[2].name == "tensor_parallel");
  for (const Baseline& x : b) {
    CHECK(space.contains(x.choice));
  }
  // Data parallel: the batch (64) of every op in 8 parts on devices 0..7.
  for (const plan::OpChoice& c : b[1].choice.ops) {
    CHECK(c.split[0] == 8);
    CHECK(c.devices == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  }
  // Tensor parallel: fc1's output features; relu1 follows.
  const std::size_t fc1 = *g.operationIndex("fc1");
  const std::size_t relu1 = *g.operationIndex("relu1");
  CHECK(b[2].choice.ops[fc1].split == std::vector<std::int64_t>{1, 8});
  CHECK(b[2].choice.ops[relu1].split == std::vector<std::int64_t>{1, 8});

  // A graph without linear/matmul has no tensor-parallel baseline.
  const graph::ExpandedGraph& cse = graphNamed("concat_split_embedding");
  SearchSpace s2(cse, 8);
  plan::PlanContext c2(cse);
  auto b2 = makeBaselines(s2, c2);
  CHECK(b2.size() == 3); // head is a linear
}

// ---------------------------------------------------------------- selection

TEST_CASE("selection policies", "[search][select]") {
  std::vector<Evaluated> front = {plainPlan(1, 100), plainPlan(2, 40), plainPlan(3, 30),
                                  plainPlan(10, 10)};
  CHECK(selectPlan(front, SelectPolicy::Fastest) == 0);
  CHECK(selectPlan(front, SelectPolicy::Smallest) == 3);
  // Normalized: (0,1), (1/9, 1/3), (2/9, 2/9), (1,0): the second is farthest below.
  CHECK(selectPlan(front, SelectPolicy::Knee) == 1);
  CHECK(selectPlan(front, SelectPolicy::Time, 35) == 2);
  CHECK(selectPlan(front, SelectPolicy::Fastest, 40) == 1);
  CHECK(selectPlan(front, SelectPolicy::Knee, 40) == 2); // (0,1), (1/8,2/3), (1,0)
  try {
    selectPlan(front, SelectPolicy::Time, 5);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK(e.message() == "no plan on the front fits under 5B (the smallest needs 10B)");
  }
  CHECK(selectPlan({plainPlan(1, 1)}, SelectPolicy::Knee) == 0);
  CHECK(parseSelectPolicy("knee") == SelectPolicy::Knee);
  CHECK_FALSE(parseSelectPolicy("best").has_value());
}

// ---------------------------------------------------------------- the search

TEST_CASE("the search is deterministic per seed, whatever the thread count", "[search]") {
  const graph::ExpandedGraph& g = graphNamed("mlp");
  const cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  SearchOptions options;
  options.seed = 11;
  options.generations = 12;
  options.threads = 1;
  SearchResult one = runSearch(evaluator, options);
  options.threads = 3;
  SearchResult three = runSearch(evaluator, options);
  REQUIRE(one.front.size() == three.front.size());
  for (std::size_t i = 0; i < one.front.size(); ++i) {
    CHECK(one.front[i].choice == three.front[i].choice);
    CHECK(one.front[i].objectives == three.front[i].objectives);
  }
  CHECK(one.evaluations == three.evaluations);
  CHECK(one.iterations == 12);
  options.seed = 12;
  SearchResult other = runSearch(evaluator, options);
  bool differs = other.front.size() != one.front.size();
  for (std::size_t i = 0; !differs && i < one.front.size(); ++i) {
    differs = !(other.front[i].choice == one.front[i].choice);
  }
  CHECK(differs);
}

TEST_CASE("a stop flag ends the search at a generation boundary", "[search]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  const cost::Target t = h100x4();
  ChoiceScorer evaluator(g, t);
  std::atomic<bool> stop{false};
  SearchOptions options;
  options.generations = 1000;
  options.stop = &stop;
  options.onGeneration = [&](const SearchProgress& p) {
    if (p.generation == 3) {
      stop = true;
    }
  };
  SearchResult r = runSearch(evaluator, options);
  CHECK(r.stopped);
  CHECK(r.iterations == 3);
  CHECK_FALSE(r.front.empty());
}

TEST_CASE("every plan the search emits passes the plan loader", "[search][acceptance]") {
  const std::string path = tempPath("tapestry-search-plan");
  auto roundTrip = [&](const graph::ExpandedGraph& g, const cost::Target& t,
                       const plan::PlanOptions& options, const Evaluated& e) {
    plan::ShardPlan p = plan::buildPlan(g, t.deviceCount(), e.choice, options);
    cost::Simulation s = cost::simulate(g, t, p);
    CHECK(s.objectives == e.objectives);
    {
      std::ofstream out(path);
      out << plan::writePlan(g, t, p, s);
    }
    plan::LoadedPlan loaded = plan::loadPlan(path, library());
    CHECK(loaded.choice == e.choice);
    CHECK(loaded.simulation.objectives == e.objectives);
  };
  struct Case {
    const char* graph;
    int seeds;
    bool wholeFront; // else the plans the three --select policies pick
  };
  for (const Case& c : {Case{"tiny", 6, true}, Case{"mlp", 1, true}, Case{"mlp", 4, false},
                        Case{"transformer_block", 2, false}}) {
    const graph::ExpandedGraph& g = graphNamed(c.graph);
    const cost::Target t = std::string(c.graph) == "tiny" ? h100x4() : cost::loadTarget("h100x8");
    for (plan::InputsOn where : {plan::InputsOn::Host, plan::InputsOn::Free}) {
      const plan::PlanOptions options{where, {}};
      ChoiceScorer evaluator(g, t, options);
      for (int seed = 0; seed < c.seeds; ++seed) {
        SearchOptions search;
        search.seed = static_cast<std::uint64_t>(seed);
        search.generations = 3;
        SearchResult r = runSearch(evaluator, search);
        REQUIRE_FALSE(r.front.empty());
        INFO(c.graph << " seed " << seed << " inputs on " << plan::inputsOnName(where));
        if (c.wholeFront) {
          for (const Evaluated& e : r.front) {
            roundTrip(g, t, options, e);
          }
        } else {
          for (SelectPolicy policy :
               {SelectPolicy::Fastest, SelectPolicy::Smallest, SelectPolicy::Knee}) {
            roundTrip(g, t, options, r.front[selectPlan(r.front, policy)]);
          }
        }
      }
    }
  }
  std::filesystem::remove(path);
}

TEST_CASE("the search beats every baseline on the MLP and the transformer block",
          "[search][acceptance][large]") {
  const cost::Target t = cost::loadTarget("h100x8");
  for (const char* name : {"mlp", "transformer_block"}) {
    const graph::ExpandedGraph& g = graphNamed(name);
    ChoiceScorer evaluator(g, t);
    SearchOptions options; // the default budget, as `tapestry optimize`
    options.threads = 2;
    SearchResult r = runSearch(evaluator, options);
    REQUIRE_FALSE(r.front.empty());
    const std::size_t fastest = selectPlan(r.front, SelectPolicy::Fastest);
    INFO(name << ": fastest " << r.front[fastest].objectives.timeS);
    REQUIRE(r.baselines.size() == 3);
    for (const BaselineResult& b : r.baselines) {
      REQUIRE(b.objectives.has_value());
      INFO(b.baseline.name << " " << b.objectives->timeS);
      CHECK(r.front[fastest].objectives.timeS <= b.objectives->timeS);
    }
    CHECK(r.front.size() > 1);
    CHECK(tradesOff(r.front));
  }
}

// ---------------------------------------------------------------- exhaustive

TEST_CASE("exhaustive search refuses large spaces", "[search][exhaustive]") {
  const graph::ExpandedGraph& g = graphNamed("transformer_block");
  const cost::Target t = cost::loadTarget("h100x8");
  ChoiceScorer evaluator(g, t);
  try {
    runExhaustive(evaluator, 1);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK_THAT(e.message(), Catch::StartsWith("--exhaustive: transformer_block has "));
    CHECK_THAT(e.message(), Catch::Contains("more than the 1000000 it enumerates; drop "
                                            "--exhaustive to search it stochastically"));
  }
}

TEST_CASE("the search reaches 99% of the exhaustive front's hypervolume",
          "[search][acceptance][large]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  REQUIRE(g.operations.size() <= 4);
  const cost::Target t = h100x4();
  ChoiceScorer evaluator(g, t);
  SearchResult truth = runExhaustive(evaluator, 2);
  CHECK(truth.evaluations == 16 * 32 * 16 * 16 + 3);
  REQUIRE(truth.front.size() > 1);

  SearchOptions options; // the default budget
  options.threads = 2;
  for (std::uint64_t seed : {0, 1}) {
    options.seed = seed;
    SearchResult found = runSearch(evaluator, options);
    // Reference: 10% beyond the worst of the true front.
    Point2 ref{0, 0};
    for (const Evaluated& e : truth.front) {
      ref.x = std::max(ref.x, e.objectives.timeS);
      ref.y = std::max(ref.y, static_cast<double>(e.objectives.peakMemoryBytes));
    }
    ref.x *= 1.1;
    ref.y *= 1.1;
    const double best = hypervolume2d(timeMemoryPoints(truth.front), ref);
    const double reached = hypervolume2d(timeMemoryPoints(found.front), ref);
    INFO("seed " << seed << ": " << reached / best << " of the true hypervolume, "
                 << found.evaluations << " evaluations");
    CHECK(reached >= 0.99 * best);
    // Nothing the search found can beat the true front.
    for (const Evaluated& e : found.front) {
      for (const Evaluated& x : truth.front) {
        CHECK_FALSE(cost::dominates(e.objectives, x.objectives));
      }
    }
  }
}

TEST_CASE("the exhaustive front does not depend on the thread count", "[search][exhaustive]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  cost::Target t = h100x4();
  t.devices.count = 2;
  ChoiceScorer evaluator(g, t);
  SearchResult a = runExhaustive(evaluator, 1);
  SearchResult b = runExhaustive(evaluator, 3);
  REQUIRE(a.front.size() == b.front.size());
  for (std::size_t i = 0; i < a.front.size(); ++i) {
    CHECK(a.front[i].choice == b.front[i].choice);
  }
}

// Where the target forwards inputs between its devices (relay groups), each
// plan also chooses whether it does (plan::PlanChoice::relay): the exhaustive
// front holds both kinds of plan, and a plan that forwards nothing scores as
// the same plan without relay groups.
TEST_CASE("plans choose whether they forward inputs", "[search][relay]") {
  const graph::ExpandedGraph& g = graphNamed("tiny");
  cost::Target t = h100x4();
  t.devices.count = 2;
  const std::vector<int> groups = cost::relayGroups(t);
  REQUIRE(groups == std::vector<int>{0, 0});
  ChoiceScorer plain(g, t);
  ChoiceScorer forwarding(g, t, plan::PlanOptions{plan::InputsOn::Host, groups});
  CHECK_FALSE(relays(plain));
  CHECK(relays(forwarding));

  const SearchSpace space(g, t.deviceCount());
  Rng rng(11);
  plan::PlanChoice c = makeBaselines(space, plain.context()).back().choice;
  for (int i = 0; i < 30; ++i) {
    mutate(space, c, rng);
    plan::PlanChoice direct = c;
    direct.relay = false;
    CHECK(hashChoice(direct) != hashChoice(c));
    const auto a = plain.evaluate(c);
    const auto b = forwarding.evaluate(direct);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->timeS == b->timeS);
    CHECK(a->peakMemoryBytes == b->peakMemoryBytes);
    CHECK(a->transferBytes == b->transferBytes);
  }

  const SearchResult without = runExhaustive(plain, 2);
  const SearchResult with = runExhaustive(forwarding, 2);
  CHECK(with.evaluations == 2 * (without.evaluations - 3) + 3); // baselines once
  // Every plan is enumerated both ways, so nothing without forwarding beats
  // the front with the choice, and that front holds plans of both kinds.
  for (const Evaluated& x : without.front) {
    for (const Evaluated& e : with.front) {
      CHECK_FALSE(cost::dominates(x.objectives, e.objectives));
    }
  }
  const auto forwards = std::count_if(with.front.begin(), with.front.end(),
                                      [](const Evaluated& e) { return e.choice.relay; });
  CHECK(forwards > 0);
  CHECK(forwards < static_cast<std::ptrdiff_t>(with.front.size()));

  // The stochastic search flips the choice too, and the front file says which
  // plans forward.
  SearchOptions options;
  options.generations = 30;
  const SearchResult found = runSearch(forwarding, options);
  CHECK(std::any_of(found.front.begin(), found.front.end(),
                    [](const Evaluated& e) { return !e.choice.relay; }));
  FrontInfo info;
  info.relays = true;
  const Json front = frontToJson(g, t, found, info);
  for (std::size_t i = 0; i < found.front.size(); ++i) {
    CHECK(front["front"][i]["relay"] == found.front[i].choice.relay);
  }
  CHECK_FALSE(frontToJson(g, t, found, FrontInfo{})["front"][0].contains("relay"));
}

// ---------------------------------------------------------------- the command

TEST_CASE("optimize command writes the selected plan and the front", "[search][command]") {
  const std::string planPath = tempPath("tapestry-optimize-plan");
  const std::string frontPath = tempPath("tapestry-optimize-front");
  OptimizeConfig config;
  config.graphPath = kTestdata + "/graphs/mlp.json";
  config.target = "h100x8";
  config.iterations = 4;
  config.select = "smallest";
  config.outputPath = planPath;
  config.frontPath = frontPath;
  config.json = true;
  std::ostringstream out;
  std::ostringstream err;
  CHECK(optimizeCommand(config, out, err) == 0);
  CHECK(err.str().empty());
  Json summary = Json::parse(out.str());
  CHECK(summary["status"] == "ok");
  CHECK(summary["selected"]["policy"] == "smallest");

  plan::LoadedPlan loaded = plan::loadPlan(planPath, library());
  std::ifstream frontFile(frontPath);
  Json front = Json::parse(frontFile);
  CHECK(front["tapestry"] == "front/v1");
  const std::size_t selected = front["selected"].get<std::size_t>();
  REQUIRE(selected < front["front"].size());
  CHECK(front["front"][selected]["objectives"]["peak_memory_bytes"] ==
        loaded.simulation.objectives.peakMemoryBytes);
  for (const auto& item : front["front"]) {
    CHECK(item["objectives"]["peak_memory_bytes"].get<std::int64_t>() >=
          loaded.simulation.objectives.peakMemoryBytes);
  }
  CHECK(front["baselines"].contains("single"));
  CHECK(front["baselines"].contains("data_parallel"));
  CHECK(front["search"]["iterations"] == 4);
  std::filesystem::remove(planPath);
  std::filesystem::remove(frontPath);
}

TEST_CASE("optimize command progress line and text summary", "[search][command]") {
  OptimizeConfig config;
  config.graphPath = kTestdata + "/graphs/tiny.json";
  config.target = "cpu-2";
  config.iterations = 3;
  config.progress = true;
  std::ostringstream out;
  std::ostringstream err;
  CHECK(optimizeCommand(config, out, err) == 0);
  CHECK_THAT(out.str(), Catch::StartsWith("{\n  \"tapestry\": \"plan/v1\""));
  // The progress line is rewritten in place and cleared before the summary.
  CHECK_THAT(err.str(), Catch::StartsWith("\roptimize: iteration 1/3, best "));
  CHECK_THAT(err.str(), Catch::Contains("\r\033[Ktiny on cpu-2 (2 devices): "));
  CHECK_THAT(err.str(), Catch::Contains("  selected (fastest)  "));
}

TEST_CASE("parallelFor runs every task once and rethrows the first failure", "[search][threads]") {
  for (int threads : {1, 2, 4, 64}) {
    INFO(threads);
    std::vector<std::atomic<int>> runs(100);
    parallelFor(runs.size(), threads, [&](std::uint64_t i) { runs[i].fetch_add(1); });
    CHECK(std::all_of(runs.begin(), runs.end(), [](const std::atomic<int>& r) { return r == 1; }));
    parallelFor(0, threads, [](std::uint64_t) { FAIL("no task to run"); });

    std::atomic<int> started{0};
    try {
      parallelFor(1000, threads, [&](std::uint64_t i) {
        started.fetch_add(1);
        if (i == 3) {
          throw Error("task 3 failed");
        }
      });
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.message() == "task 3 failed");
    }
    // In one thread, nothing after the failing task starts. (With more, how
    // many others start before the failure stops them depends on timing.)
    if (threads == 1) {
      CHECK(started == 4);
    }
  }
}

TEST_CASE("one device for a gain within the calibrated spread", "[search][select]") {
  // Plans on two devices (0 and 1) and on one (device 0).
  auto on = [](double t, std::int64_t m, std::vector<int> devices) {
    return Evaluated{
        plan::PlanChoice{{plan::OpChoice{{static_cast<std::int64_t>(devices.size())}, devices}}},
        obj(t, m)};
  };
  const std::vector<Evaluated> front = {on(0.9, 100, {0, 1}), on(1.0, 40, {0}), on(1.2, 30, {1})};
  CHECK(devicesOf(front[0].choice) == 2);
  CHECK(devicesOf(front[2].choice) == 1);
  // Predicted 1.0 / 0.9 = 1.11x faster than one device: within 15%, not within 10%.
  OneDeviceRule rule = oneDeviceRule(front, 0, 1.0, 0.15);
  CHECK(rule.applies);
  CHECK(rule.gain == Approx(1.0 / 0.9));
  CHECK(rule.index == std::optional<std::size_t>(1)); // the fastest one-device plan
  CHECK_FALSE(oneDeviceRule(front, 0, 1.0, 0.10).applies);
  CHECK_FALSE(oneDeviceRule(front, 0, 1.0, 0.0).applies); // no spread measured
  CHECK_FALSE(oneDeviceRule(front, 1, 1.0, 0.5).applies); // already one device
  // No one-device plan on the front: the caller writes the single baseline.
  rule = oneDeviceRule({on(0.9, 100, {0, 1})}, 0, 1.0, 0.15);
  CHECK(rule.applies);
  CHECK_FALSE(rule.index.has_value());
}
