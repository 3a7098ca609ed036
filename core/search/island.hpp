// The island model of a distributed search (`mpirun -n K tapestry optimize`,
// docs/distributed.md): K islands, one per MPI rank, each run the stochastic
// search of search.hpp with its own seed and a share of every generation's batch
// (a K-th at first, then balanced by what each island's plans cost to evaluate);
// every `exchangeEvery` generations they swap their Pareto archives (as compact
// integer encodings of each plan's split and placement, with its objectives) and
// merge every other island's plans into their own. At the end every island
// holds the merged front of all of them; only rank 0 writes it.
//
// The islands talk through an IslandTransport: MPI in the binary
// (mpi_transport.hpp, built only when MPI is found), threads in one process for
// tests (LocalIslands). Every collective is synchronous and happens at the same
// generation on every rank, and the stop decision (time budget, stop flag) is
// agreed there, so a run is deterministic for a given seed, rank count and
// iteration budget, and nobody waits on a rank that has left.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/search/archive.hpp"
#include "core/search/search.hpp"
#include "core/search/space.hpp"

namespace tapestry::search {

// Generations between two exchanges when --exchange-every is not given.
inline constexpr std::int64_t kDefaultExchangeEvery = 10;

// The share of parents an island (of K > 1) draws from its home stretch of the
// archive: island r takes the r-th K-th of the members in time order (rank 0
// the fastest plans, the last rank the slowest and smallest), so the islands
// push on different parts of the front instead of all on the same one; the
// rest come from the whole archive, as in the plain search. On the transformer
// block it raised the 4-island hypervolume by about 1% on average
// (docs/distributed.md).
inline constexpr double kDefaultHomeShare = 0.5;

// How the islands cooperate.
struct IslandOptions {
  std::int64_t exchangeEvery = kDefaultExchangeEvery; // generations between exchanges
  double homeShare = kDefaultHomeShare;               // see kDefaultHomeShare
};

// Thrown on every rank whose collective finds that another rank failed; that
// rank has reported the error (or will), so this one exits quietly with the
// same code.
class PeerFailed : public std::exception {
public:
  PeerFailed(int rank, int exitCode) : rank_(rank), exitCode_(exitCode) {}
  const char* what() const noexcept override { return "another island of the search failed"; }
  int rank() const { return rank_; } // the lowest rank that failed
  int exitCode() const { return exitCode_; }

private:
  int rank_;
  int exitCode_;
};

// Synchronous collectives over the ranks of one search. Every rank makes the
// same sequence of calls; a rank that fails calls fail() in place of its next
// exchange(), so the others learn of it there instead of waiting forever.
class IslandTransport {
public:
  virtual ~IslandTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every rank's message, indexed by rank. Throws PeerFailed when a rank failed.
  std::vector<std::vector<std::int64_t>> exchange(const std::vector<std::int64_t>& message);
  // From a rank that failed with `exitCode`: tells the others (their exchange
  // throws PeerFailed) and returns the lowest failing rank, the one that
  // reports the error (then every rank calls awaitReport). Does nothing and
  // returns rank() once close()d: the others have left by then.
  int fail(int exitCode);
  // The failure protocol's last step, so that no rank exits (and has the
  // launcher stop the job) before the reporting rank has printed: once a
  // collective carried a failure, every rank calls this once, the reporting
  // rank after printing, and it returns when all have. Does nothing when no
  // collective carried one (the others have left, or were never told).
  void awaitReport();
  // After the last collective of a search.
  void close() { closed_ = true; }
  bool closed() const { return closed_; }

protected:
  // Every rank's `local`, indexed by rank; lengths may differ between ranks.
  virtual std::vector<std::vector<std::int64_t>>
  allgather(const std::vector<std::int64_t>& local) = 0;

private:
  bool closed_ = false;
  bool failedTogether_ = false; // a collective carried a failure; awaitReport owes one more
};

// K islands in one process, one thread each (tests, and measuring the island
// model's search quality without mpirun).
class LocalIslands {
public:
  explicit LocalIslands(int size);
  ~LocalIslands();
  // Rank `rank`'s end; call allgather-based collectives from one thread per rank.
  std::unique_ptr<IslandTransport> transport(int rank);

private:
  class Rank;
  struct Hub;
  std::shared_ptr<Hub> hub_;
};

// How `mpirun` (or another MPI launcher) started this process: rank and size
// from the environment (OpenMPI's OMPI_COMM_WORLD_*, else PMI_*), before and
// without MPI_Init. nullopt when not started by a launcher.
struct LaunchInfo {
  int rank = 0;
  int size = 1;
};
std::optional<LaunchInfo> launchFromEnvironment();

// ------------------------------------------------------------- island pieces

// Island r's seed: `seed` itself for rank 0 (so one island is the plain
// search), a splitmix64 mix of seed and rank for the others.
std::uint64_t islandSeed(std::uint64_t seed, int rank);

// Island r's share of a generation's `batch` candidates: batch / K, the first
// batch % K islands one more; at least 1.
std::size_t islandBatch(std::size_t batch, int rank, int size);

// The islands' shares of a generation's `batch` after an exchange, balanced by
// what their last evaluations cost: `shards[r]` shard tasks over `evaluated[r]`
// plans (a plan's evaluation time grows with its shard count: about 0.4 us
// per shard, correlation 0.94 on the transformer block). Island r's share is
// proportional to evaluated[r] / shards[r], at least a quarter of the equal
// share (and 1), and the shares add up to `batch` (largest remainders, ties
// to the lower rank). An island that evaluated nothing counts as the mean
// of the others; when none did, islandBatch's equal shares. The same integers
// give the same shares on every rank, so the search stays deterministic.
std::vector<std::size_t> balancedBatches(std::size_t batch, const std::vector<std::int64_t>& shards,
                                         const std::vector<std::int64_t>& evaluated);

// Whether the islands exchange after `done` generations: every `every`, but not
// after the last one of a `total` budget (0: a time budget), where the final
// merge takes its place.
bool exchangesAfter(std::int64_t done, std::int64_t every, std::int64_t total);

// What an island sends at an exchange and at the end.
struct IslandMessage {
  bool wantsStop = false; // its time budget ran out or its stop flag is set
  bool stopFlag = false;  // the stop flag (an interrupt) is set
  bool exhausted = false; // it could draw no unseen candidate
  std::int64_t evaluations = 0;
  std::int64_t invalid = 0;
  std::int64_t leastPeakMemory = 0; // as SearchResult, 0 when unknown
  double seconds = 0;
  std::vector<Evaluated> plans;         // its archive
  std::vector<std::uint64_t> evaluated; // hashChoice of what it evaluated since the last exchange
  std::int64_t recentShards = 0;        // shard tasks of the plans it evaluated since then
};

// The compact encoding, int64 words: a header of 10 (flags, evaluations,
// invalid, leastPeakMemory, seconds as IEEE bits, plan count, graph variant
// count, op count over all variants, hash count, recent shards); then per plan
// its objectives (time as IEEE bits, peak memory, bytes moved, feasible), its
// graph variant, and per operation of that variant in graph order its split and
// its placement offset (a plan of the SearchSpace places shard j on (offset +
// j) mod D); then the evaluated hashes. A transformer block plan (24
// operations) is 113 words. `spaces` holds one space per graph variant.
std::vector<std::int64_t> encodeMessage(std::span<const SearchSpace> spaces,
                                        const IslandMessage& message);
// The inverse; InternalError when the words are not an encoding for `spaces`.
IslandMessage decodeMessage(std::span<const SearchSpace> spaces,
                            std::span<const std::int64_t> words);
// The same for a search of one graph.
inline std::vector<std::int64_t> encodeMessage(const SearchSpace& space,
                                               const IslandMessage& message) {
  return encodeMessage(std::span<const SearchSpace>(&space, 1), message);
}
inline IslandMessage decodeMessage(const SearchSpace& space, std::span<const std::int64_t> words) {
  return decodeMessage(std::span<const SearchSpace>(&space, 1), words);
}

// Inserts `plans` into `archive` in order; returns how many it kept.
std::size_t mergeFront(ParetoArchive& archive, const std::vector<Evaluated>& plans);

// One island's search. `options` are the whole run's: its seed, its number of
// generations (every island runs them all), its batch (split across islands),
// time budget and stop flag (agreed at exchanges, every islands.exchangeEvery
// generations). Every rank returns the same
// merged front; evaluations and invalid are summed over the islands, seconds
// is the slowest island's. One island (size 1) is exactly runSearch.
SearchResult runIslandSearch(const ChoiceScorer& evaluator, const SearchOptions& options,
                             const IslandOptions& islands, IslandTransport& transport);

// Runs `size` islands in this process (one thread each, sharing `evaluator`)
// and returns every island's result, by rank. Rethrows the first failure.
std::vector<SearchResult> runLocalIslands(const ChoiceScorer& evaluator,
                                          const SearchOptions& options,
                                          const IslandOptions& islands, int size);

} // namespace tapestry::search
