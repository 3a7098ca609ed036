#include "core/search/island.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

#include "core/diag/error.hpp"
#include "core/search/mutate.hpp"

namespace tapestry::search {

// ------------------------------------------------------------- transport

namespace {

// The first word of every collective message: a rank that failed sends
// {kFailed, exit code} instead of its message.
constexpr std::int64_t kOk = 0;
constexpr std::int64_t kFailed = 1;

} // namespace

std::vector<std::vector<std::int64_t>>
IslandTransport::exchange(const std::vector<std::int64_t>& message) {
  std::vector<std::int64_t> local;
  local.reserve(message.size() + 1);
  local.push_back(kOk);
  local.insert(local.end(), message.begin(), message.end());
  std::vector<std::vector<std::int64_t>> all = allgather(local);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) {
      throw InternalError("island transport: empty message from rank " + std::to_string(r));
    }
    if (all[r][0] == kFailed) {
      close(); // every rank sees the failure in this collective: no more come
      failedTogether_ = true;
      throw PeerFailed(static_cast<int>(r), all[r].size() > 1
                                                ? static_cast<int>(all[r][1])
                                                : static_cast<int>(ExitCode::Internal));
    }
  }
  for (std::vector<std::int64_t>& m : all) {
    m.erase(m.begin());
  }
  return all;
}

int IslandTransport::fail(int exitCode) {
  if (closed_) {
    return rank();
  }
  close();
  failedTogether_ = true;
  const std::vector<std::vector<std::int64_t>> all = allgather({kFailed, exitCode});
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!all[r].empty() && all[r][0] == kFailed) {
      return static_cast<int>(r);
    }
  }
  return rank();
}

void IslandTransport::awaitReport() {
  if (failedTogether_) {
    failedTogether_ = false;
    allgather({});
  }
}

// One round of an allgather among threads: each rank leaves its message in
// `slots`; the last to arrive publishes them all and wakes the others, who copy
// the published round before they can arrive at the next one.
struct LocalIslands::Hub {
  explicit Hub(int n) : size(n), slots(static_cast<std::size_t>(n)) {}
  const int size;
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::vector<std::int64_t>> slots;
  std::vector<std::vector<std::int64_t>> published;
  int arrived = 0;
  std::uint64_t round = 0;
};

class LocalIslands::Rank : public IslandTransport {
public:
  Rank(std::shared_ptr<Hub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_->size; }

protected:
  std::vector<std::vector<std::int64_t>>
  allgather(const std::vector<std::int64_t>& local) override {
    Hub& h = *hub_;
    std::unique_lock<std::mutex> lock(h.mutex);
    h.slots[static_cast<std::size_t>(rank_)] = local;
    const std::uint64_t round = h.round;
    if (++h.arrived == h.size) {
      h.published = h.slots;
      h.arrived = 0;
      ++h.round;
      h.wake.notify_all();
    } else {
      h.wake.wait(lock, [&] { return h.round != round; });
    }
    return h.published;
  }

private:
  std::shared_ptr<Hub> hub_;
  int rank_;
};

LocalIslands::LocalIslands(int size) : hub_(std::make_shared<Hub>(std::max(size, 1))) {}
LocalIslands::~LocalIslands() = default;

std::unique_ptr<IslandTransport> LocalIslands::transport(int rank) {
  return std::make_unique<Rank>(hub_, rank);
}

namespace {

std::optional<int> intFromEnv(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) {
    return std::nullopt;
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 24) {
    return std::nullopt;
  }
  return static_cast<int>(value);
}

} // namespace

std::optional<LaunchInfo> launchFromEnvironment() {
  // OpenMPI's mpirun sets OMPI_COMM_WORLD_*; MPICH's Hydra and Slurm's PMI2
  // set PMI_*. (Bare PMIx gives no size without its library: not read.)
  for (const auto& [sizeVar, rankVar] : {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                         std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const std::optional<int> size = intFromEnv(sizeVar);
    if (size && *size >= 1) {
      LaunchInfo info;
      info.size = *size;
      info.rank = intFromEnv(rankVar).value_or(0);
      return info;
    }
  }
  return std::nullopt;
}

// ------------------------------------------------------------- pieces

std::uint64_t islandSeed(std::uint64_t seed, int rank) {
  if (rank == 0) {
    return seed;
  }
  Rng mix(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(rank)));
  return mix.next();
}

std::size_t islandBatch(std::size_t batch, int rank, int size) {
  const std::size_t k = static_cast<std::size_t>(std::max(size, 1));
  const std::size_t r = static_cast<std::size_t>(std::max(rank, 0));
  return std::max<std::size_t>(1, batch / k + (r < batch % k ? 1 : 0));
}

std::vector<std::size_t> balancedBatches(std::size_t batch, const std::vector<std::int64_t>& shards,
                                         const std::vector<std::int64_t>& evaluated) {
  const std::size_t k = shards.size();
  std::vector<std::size_t> out(k);
  for (std::size_t r = 0; r < k; ++r) {
    out[r] = islandBatch(batch, static_cast<int>(r), static_cast<int>(k));
  }
  if (k < 2 || evaluated.size() != k || batch <= k) {
    return out;
  }
  // Cost per plan, in shards; unknown ones take the mean of the known.
  std::vector<double> cost(k, 0);
  double known = 0;
  std::size_t knownCount = 0;
  for (std::size_t r = 0; r < k; ++r) {
    if (evaluated[r] > 0 && shards[r] > 0) {
      cost[r] = static_cast<double>(shards[r]) / static_cast<double>(evaluated[r]);
      known += cost[r];
      ++knownCount;
    }
  }
  if (knownCount == 0) {
    return out;
  }
  for (double& c : cost) {
    c = c > 0 ? c : known / static_cast<double>(knownCount);
  }
  // Shares proportional to speed, each at least `least`; the rest by largest
  // remainder.
  const std::size_t least = std::max<std::size_t>(1, batch / k / 4);
  double speed = 0;
  for (double c : cost) {
    speed += 1 / c;
  }
  const double spare = static_cast<double>(batch - least * k);
  std::vector<double> exact(k);
  std::size_t given = 0;
  for (std::size_t r = 0; r < k; ++r) {
    exact[r] = spare * (1 / cost[r]) / speed;
    out[r] = least + static_cast<std::size_t>(exact[r]);
    exact[r] -= std::floor(exact[r]);
    given += out[r];
  }
  std::vector<std::size_t> order(k);
  for (std::size_t r = 0; r < k; ++r) {
    order[r] = r;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return exact[a] > exact[b]; });
  for (std::size_t i = 0; given < batch; ++i, ++given) {
    ++out[order[i % k]];
  }
  return out;
}

bool exchangesAfter(std::int64_t done, std::int64_t every, std::int64_t total) {
  if (done <= 0 || every <= 0 || done % every != 0) {
    return false;
  }
  return total <= 0 || done < total;
}

namespace {

constexpr std::size_t kHeaderWords = 10;
constexpr std::size_t kObjectiveWords = 4;
// Set in a plan's variant word when the plan forwards no inputs
// (plan::PlanChoice::relay false).
constexpr std::int64_t kNoRelayBit = std::int64_t{1} << 32;

// The words of one plan of `space`: objectives, variant, then split and offset
// per operation.
std::size_t planWords(const SearchSpace& space) {
  std::size_t words = kObjectiveWords + 1;
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    words += space.op(i).extents.size() + 1;
  }
  return words;
}

std::int64_t opsOverVariants(std::span<const SearchSpace> spaces) {
  std::int64_t n = 0;
  for (const SearchSpace& s : spaces) {
    n += static_cast<std::int64_t>(s.opCount());
  }
  return n;
}

[[noreturn]] void badEncoding(const std::string& why) {
  throw InternalError("island message: " + why);
}

} // namespace

std::vector<std::int64_t> encodeMessage(std::span<const SearchSpace> spaces,
                                        const IslandMessage& message) {
  std::vector<std::int64_t> words;
  words.reserve(kHeaderWords + message.plans.size() * planWords(spaces.front()) +
                message.evaluated.size());
  words.push_back((message.wantsStop ? 1 : 0) | (message.stopFlag ? 2 : 0) |
                  (message.exhausted ? 4 : 0));
  words.push_back(message.evaluations);
  words.push_back(message.invalid);
  words.push_back(message.leastPeakMemory);
  words.push_back(std::bit_cast<std::int64_t>(message.seconds));
  words.push_back(static_cast<std::int64_t>(message.plans.size()));
  words.push_back(static_cast<std::int64_t>(spaces.size()));
  words.push_back(opsOverVariants(spaces));
  words.push_back(static_cast<std::int64_t>(message.evaluated.size()));
  words.push_back(message.recentShards);
  for (const Evaluated& e : message.plans) {
    words.push_back(std::bit_cast<std::int64_t>(e.objectives.timeS));
    words.push_back(e.objectives.peakMemoryBytes);
    words.push_back(e.objectives.transferBytes);
    words.push_back(e.objectives.feasible ? 1 : 0);
    if (e.choice.variant >= spaces.size()) {
      badEncoding("a plan of graph variant " + std::to_string(e.choice.variant) + " of " +
                  std::to_string(spaces.size()));
    }
    words.push_back(e.choice.variant | (e.choice.relay ? 0 : kNoRelayBit));
    const SearchSpace& space = spaces[e.choice.variant];
    if (e.choice.ops.size() != space.opCount()) {
      badEncoding("a plan of " + std::to_string(e.choice.ops.size()) +
                  " operations for a graph of " + std::to_string(space.opCount()));
    }
    for (std::size_t i = 0; i < space.opCount(); ++i) {
      const plan::OpChoice& op = e.choice.ops[i];
      if (op.split.size() != space.op(i).extents.size()) {
        badEncoding("operation " + std::to_string(i) + " has a split of the wrong rank");
      }
      words.insert(words.end(), op.split.begin(), op.split.end());
      const int offset = op.devices.empty() ? 0 : op.devices.front();
      if (space.placement(op.split, offset) != op.devices) {
        badEncoding("operation " + std::to_string(i) + " is not placed by an offset");
      }
      words.push_back(offset);
    }
  }
  for (std::uint64_t h : message.evaluated) {
    words.push_back(std::bit_cast<std::int64_t>(h));
  }
  return words;
}

IslandMessage decodeMessage(std::span<const SearchSpace> spaces,
                            std::span<const std::int64_t> words) {
  if (words.size() < kHeaderWords) {
    badEncoding("too short (" + std::to_string(words.size()) + " words)");
  }
  IslandMessage m;
  m.wantsStop = (words[0] & 1) != 0;
  m.stopFlag = (words[0] & 2) != 0;
  m.exhausted = (words[0] & 4) != 0;
  m.evaluations = words[1];
  m.invalid = words[2];
  m.leastPeakMemory = words[3];
  m.seconds = std::bit_cast<double>(words[4]);
  const std::int64_t count = words[5];
  if (words[6] != static_cast<std::int64_t>(spaces.size()) || words[7] != opsOverVariants(spaces)) {
    badEncoding("encoded for another graph or device count");
  }
  const std::int64_t hashes = words[8];
  m.recentShards = words[9];
  if (count < 0 || hashes < 0 || m.recentShards < 0 ||
      words.size() < kHeaderWords + static_cast<std::size_t>(hashes)) {
    badEncoding("length does not match its plan count");
  }
  const std::size_t plansEnd = words.size() - static_cast<std::size_t>(hashes);
  std::size_t at = kHeaderWords;
  m.plans.reserve(static_cast<std::size_t>(std::min<std::int64_t>(count, 1 << 16)));
  for (std::int64_t p = 0; p < count; ++p) {
    if (at + kObjectiveWords + 1 > plansEnd) {
      badEncoding("length does not match its plan count");
    }
    Evaluated e;
    e.objectives.timeS = std::bit_cast<double>(words[at]);
    e.objectives.peakMemoryBytes = words[at + 1];
    e.objectives.transferBytes = words[at + 2];
    e.objectives.feasible = words[at + 3] != 0;
    const std::int64_t variantWord = words[at + kObjectiveWords];
    const std::int64_t variant = variantWord & ~kNoRelayBit;
    if (variantWord < 0 || variant >= static_cast<std::int64_t>(spaces.size())) {
      badEncoding("graph variant " + std::to_string(variant) + " out of range");
    }
    const SearchSpace& space = spaces[static_cast<std::size_t>(variant)];
    if (at + planWords(space) > plansEnd) {
      badEncoding("length does not match its plan count");
    }
    at += kObjectiveWords + 1;
    e.choice.variant = static_cast<std::uint32_t>(variant);
    e.choice.relay = (variantWord & kNoRelayBit) == 0;
    e.choice.ops.reserve(space.opCount());
    for (std::size_t i = 0; i < space.opCount(); ++i) {
      const std::size_t rank = space.op(i).extents.size();
      std::vector<std::int64_t> split(words.begin() + static_cast<std::ptrdiff_t>(at),
                                      words.begin() + static_cast<std::ptrdiff_t>(at + rank));
      const std::int64_t offset = words[at + rank];
      at += rank + 1;
      if (offset < 0 || offset >= space.deviceCount()) {
        badEncoding("placement offset " + std::to_string(offset) + " out of range");
      }
      plan::OpChoice op;
      op.split = std::move(split);
      // placement() itself assumes a valid split; check it first.
      std::int64_t shards = 1;
      for (std::int64_t s : op.split) {
        if (s < 1 || s > space.deviceCount()) {
          badEncoding("split part " + std::to_string(s) + " out of range");
        }
        shards *= s;
        if (shards > space.deviceCount()) {
          badEncoding("more shards than devices");
        }
      }
      op.devices = space.placement(op.split, static_cast<int>(offset));
      if (!space.contains(i, op)) {
        badEncoding("operation " + std::to_string(i) + "'s choice " + formatSplit(op.split) +
                    " is not in the search space");
      }
      e.choice.ops.push_back(std::move(op));
    }
    m.plans.push_back(std::move(e));
  }
  if (at != plansEnd) {
    badEncoding("length does not match its plan count");
  }
  m.evaluated.reserve(static_cast<std::size_t>(hashes));
  for (; at < words.size(); ++at) {
    m.evaluated.push_back(std::bit_cast<std::uint64_t>(words[at]));
  }
  return m;
}

std::size_t mergeFront(ParetoArchive& archive, const std::vector<Evaluated>& plans) {
  std::size_t kept = 0;
  for (const Evaluated& e : plans) {
    kept += archive.insert(e) ? 1 : 0;
  }
  return kept;
}

// ------------------------------------------------------------- the search

namespace {

// The island model's part of the generation loop (search.cpp): its own seed
// and share of the batch, parents from its home stretch of the archive, the
// exchanges (archives, what each evaluated, agreed stopping, rebalanced
// batches) and the final merge. With one island it is the plain search.
class IslandHooks final : public SearchHooks {
public:
  IslandHooks(const SearchOptions& options, const IslandOptions& islands,
              IslandTransport& transport)
      : options_(options), islands_(islands), transport_(transport), rank_(transport.rank()),
        size_(transport.size()), every_(std::max<std::int64_t>(islands.exchangeEvery, 1)),
        wholeBatch_(std::max<std::size_t>(options.batch, 1)) {}

  bool alone() const override { return size_ == 1; }
  std::uint64_t seed(std::uint64_t base) const override { return islandSeed(base, rank_); }
  std::size_t batch(std::size_t whole) const override { return islandBatch(whole, rank_, size_); }

  // The archive in time order, for the home stretches.
  void beginGeneration(const SearchState& state) override {
    if (alone()) {
      return;
    }
    const std::vector<Evaluated>& members = state.archive.members();
    byTime_.resize(members.size());
    for (std::size_t i = 0; i < byTime_.size(); ++i) {
      byTime_[i] = i;
    }
    std::stable_sort(byTime_.begin(), byTime_.end(), [&](std::size_t a, std::size_t b) {
      return members[a].objectives.timeS < members[b].objectives.timeS;
    });
  }

  // With probability homeShare, a parent from this island's slice of the
  // archive in time order.
  const plan::PlanChoice* homeParent(const SearchState& state, Rng& rng) override {
    const std::vector<Evaluated>& members = state.archive.members();
    if (alone() || islands_.homeShare <= 0 || members.empty() || !rng.chance(islands_.homeShare)) {
      return nullptr;
    }
    const std::size_t n = byTime_.size();
    const std::size_t k = static_cast<std::size_t>(size_);
    const std::size_t r = static_cast<std::size_t>(rank_);
    const std::size_t lo = std::min(r * n / k, n - 1);
    const std::size_t hi = std::max(lo + 1, (r + 1) * n / k);
    return &members[byTime_[lo + rng.below(hi - lo)]].choice;
  }

  void drew(std::uint64_t hash) override {
    if (!alone()) {
      fresh_.push_back(hash);
    }
  }

  void evaluated(const std::vector<plan::PlanChoice>& candidates) override {
    for (const plan::PlanChoice& c : candidates) {
      freshShards_ += c.shardCount();
    }
  }

  // Wait for the others at the next exchange (or the end); new plans from
  // them may give this island parents with unseen children again.
  void exhausted(SearchState& state) override {
    const std::int64_t next = (state.generation / every_ + 1) * every_;
    state.generation = state.generations > 0 ? std::min(state.generations, next) : next;
  }

  bool afterGeneration(SearchState& state) override {
    if (alone() || !exchangesAfter(state.generation, every_, state.generations)) {
      return false;
    }
    const std::vector<IslandMessage> all = swap(state, message(state));
    bool stop = false;
    bool allExhausted = true;
    for (const IslandMessage& m : all) {
      stop = stop || m.wantsStop;
      state.result.stopped = state.result.stopped || m.stopFlag;
      allExhausted = allExhausted && m.exhausted;
    }
    if (stop || allExhausted) {
      return true;
    }
    state.result.exhausted = false; // try again with the merged archive
    // Islands whose plans cost more to evaluate take fewer of the next
    // generations' candidates, so that none waits long at the next exchange.
    std::vector<std::int64_t> shards;
    std::vector<std::int64_t> evaluated;
    for (const IslandMessage& m : all) {
      shards.push_back(m.recentShards);
      evaluated.push_back(static_cast<std::int64_t>(m.evaluated.size()));
    }
    state.batch = balancedBatches(wholeBatch_, shards, evaluated)[static_cast<std::size_t>(rank_)];
    return false;
  }

  bool reportsProgress() const override { return rank_ == 0; }
  std::int64_t progressScale() const override { return size_; } // the others are as fast

  SearchResult finish(SearchState& state) override {
    if (alone()) {
      transport_.close();
      return SearchHooks::finish(state);
    }
    // The final merge: every island's archive into every island's, in rank order.
    IslandMessage mine = message(state);
    mine.evaluated.clear(); // nobody searches on
    std::vector<IslandMessage> all;
    for (const std::vector<std::int64_t>& words :
         transport_.exchange(encodeMessage(state.spaces, mine))) {
      all.push_back(decodeMessage(state.spaces, words));
    }
    transport_.close();
    SearchResult& result = state.result;
    ParetoArchive merged(options_.archiveCap);
    result.evaluations = 0;
    result.invalid = 0;
    result.leastPeakMemory = 0;
    result.seconds = 0;
    bool allExhausted = true;
    for (const IslandMessage& m : all) {
      mergeFront(merged, m.plans);
      result.evaluations += m.evaluations;
      result.invalid += m.invalid;
      result.stopped = result.stopped || m.stopFlag;
      allExhausted = allExhausted && m.exhausted;
      if (m.leastPeakMemory > 0 &&
          (result.leastPeakMemory == 0 || m.leastPeakMemory < result.leastPeakMemory)) {
        result.leastPeakMemory = m.leastPeakMemory;
      }
    }
    result.exhausted = allExhausted;
    result.front = merged.sorted();
    if (!result.front.empty()) {
      result.leastPeakMemory = 0;
    }
    result.seconds = state.elapsed();
    return result;
  }

private:
  // What this island tells the others: its state, its archive, and what it
  // evaluated since the last exchange (so none evaluates the same plan again).
  IslandMessage message(const SearchState& state) {
    IslandMessage m;
    m.stopFlag = options_.stop && options_.stop->load();
    m.wantsStop = m.stopFlag || (state.timed && state.elapsed() >= options_.budgetSeconds);
    m.exhausted = state.result.exhausted;
    m.evaluations = state.result.evaluations;
    m.invalid = state.result.invalid;
    m.leastPeakMemory = state.lowMemory.front().objectives.peakMemoryBytes;
    m.seconds = state.elapsed();
    m.evaluated = std::move(fresh_);
    fresh_.clear();
    m.recentShards = freshShards_;
    freshShards_ = 0;
    m.plans = state.archive.members();
    return m;
  }

  // Sends this island's archive, takes in every other island's; returns what
  // every island sent (by rank).
  std::vector<IslandMessage> swap(SearchState& state, const IslandMessage& mine) {
    std::vector<IslandMessage> all;
    for (const std::vector<std::int64_t>& words :
         transport_.exchange(encodeMessage(state.spaces, mine))) {
      all.push_back(decodeMessage(state.spaces, words));
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) {
        continue;
      }
      // What the others evaluated, this island need not (their plans among it).
      const IslandMessage& theirs = all[static_cast<std::size_t>(r)];
      state.seen.insert(theirs.evaluated.begin(), theirs.evaluated.end());
      mergeFront(state.archive, theirs.plans);
    }
    return all;
  }

  const SearchOptions& options_;
  const IslandOptions& islands_;
  IslandTransport& transport_;
  const int rank_;
  const int size_;
  const std::int64_t every_;
  const std::size_t wholeBatch_;
  std::vector<std::size_t> byTime_;
  std::vector<std::uint64_t> fresh_; // evaluated since the last exchange
  std::int64_t freshShards_ = 0;     // their shard tasks
};

} // namespace

SearchResult runIslandSearch(const ChoiceScorer& evaluator, const SearchOptions& options,
                             const IslandOptions& islands, IslandTransport& transport) {
  IslandHooks hooks(options, islands, transport);
  return runGenerations(evaluator, options, hooks);
}

std::vector<SearchResult> runLocalIslands(const ChoiceScorer& evaluator,
                                          const SearchOptions& options,
                                          const IslandOptions& islandOptions, int size) {
  LocalIslands islands(size);
  std::vector<SearchResult> results(static_cast<std::size_t>(std::max(size, 1)));
  std::vector<std::exception_ptr> failures(results.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < results.size(); ++r) {
    threads.emplace_back([&, r, transport = islands.transport(static_cast<int>(r))] {
      try {
        results[r] = runIslandSearch(evaluator, options, islandOptions, *transport);
      } catch (const PeerFailed&) {
        failures[r] = std::current_exception();
      } catch (const Error& e) {
        transport->fail(static_cast<int>(e.exitCode()));
        failures[r] = std::current_exception();
      } catch (...) {
        transport->fail(static_cast<int>(ExitCode::Internal));
        failures[r] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  // The error of the lowest failing rank, not the PeerFailed the others saw.
  std::exception_ptr peer;
  for (const std::exception_ptr& f : failures) {
    if (!f) {
      continue;
    }
    try {
      std::rethrow_exception(f);
    } catch (const PeerFailed&) {
      peer = peer ? peer : f;
    } catch (...) {
      throw;
    }
  }
  if (peer) {
    std::rethrow_exception(peer);
  }
  return results;
}

} // namespace tapestry::search
