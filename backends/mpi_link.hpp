// The executor's RankLink over MPI (`mpirun -n K tapestry run|bench`,
// docs/distributed.md). Built only when CMake finds MPI (TAPESTRY_HAVE_MPI);
// the rest of backends/ never includes mpi.h. Create it inside an MPI session
// initialized with MPI_THREAD_MULTIPLE (search::MpiSession(true)).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/executor.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

// Thrown by MpiRankLink::barrier on the ranks that are fine when another rank
// failed before it got there (exchangeStatus): that rank reports the error.
class RanksFailed : public std::exception {
public:
  RanksFailed(int rank, int code) : rank_(rank), code_(code) {}
  int rank() const { return rank_; }
  int code() const { return code_; }
  const char* what() const noexcept override { return "another rank failed"; }

private:
  int rank_;
  int code_;
};

// Messages on a duplicate of MPI_COMM_WORLD. Thread safety: the worker threads
// send and receive concurrently, so the session must provide
// MPI_THREAD_MULTIPLE (Open MPI 4 and MPICH do); that keeps a receive a call
// on the worker that needs it, with no hop through a communication thread.
// One progress thread tests the pending sends, so that a large message leaves
// while this rank's workers compute (Open MPI has no progress thread of its
// own), and frees each packed buffer once sent.
class MpiRankLink : public RankLink {
public:
  MpiRankLink();
  ~MpiRankLink() override;
  MpiRankLink(const MpiRankLink&) = delete;
  MpiRankLink& operator=(const MpiRankLink&) = delete;

  int rank() const override { return rank_; }
  int ranks() const override { return size_; }
  int maxTag() const override { return maxTag_; }
  int ranksOnThisNode() const override { return localSize_; }
  void send(int to, int tag, Buffer data) override;
  bool receive(int from, int tag, std::span<std::byte> into,
               const std::atomic<bool>& stop) override;
  void flush() override;
  std::vector<std::vector<std::int64_t>> allgather(const std::vector<std::int64_t>& local) override;
  // exchangeStatus(0): throws RanksFailed when another rank reported a failure
  // instead (it failed before its first barrier).
  void barrier() override;
  // MPI_Bcast on the link's communicator.
  void broadcast(std::span<std::byte> data, int root) override;
  // Open MPI's MPIX_Query_cuda_support(), asked at run time (the library the
  // binary runs with may differ from the one it was built against); false
  // for an MPI without that extension.
  bool carriesDeviceMemory() const override { return cudaAware_; }

  // Every rank's exit status (0: fine), by rank: a collective, matching
  // barrier() on the others.
  std::vector<int> exchangeStatus(int code);
  // Whether a barrier has passed: from then on, a failing rank cannot meet the
  // others at a collective (they may wait for its messages) and aborts.
  bool started() const { return started_; }
  // Ends every rank of the job (MPI_Abort) with `code`.
  [[noreturn]] void abort(int code);

private:
  struct State;
  std::unique_ptr<State> state_;
  int rank_ = 0;
  int size_ = 1;
  int maxTag_ = 32767;
  int localSize_ = 1;
  bool started_ = false;
  bool cudaAware_ = false;
  bool failAtSend_ = false; // TAPESTRY_TEST_FAIL_RANK names this rank (tests/mpi)
  bool killAtSend_ = false; // ... with ":kill"
};

} // namespace tapestry::backend
