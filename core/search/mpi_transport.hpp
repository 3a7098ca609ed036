// The MPI end of the island model (island.hpp): MPI_Init/MPI_Finalize for the
// life of one distributed `optimize`, and an IslandTransport over
// MPI_COMM_WORLD. Built only when CMake finds MPI (TAPESTRY_HAVE_MPI); the rest
// of core/search never includes mpi.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/search/island.hpp"

namespace tapestry::search {

// Initializes MPI and finalizes it when destroyed. The search asks for
// MPI_THREAD_FUNNELED (only the calling thread talks MPI; its evaluation threads
// never do); run and bench for MPI_THREAD_MULTIPLE (`workerThreads`: the
// executor's workers send and receive, backends/mpi_link.hpp).
class MpiSession {
public:
  explicit MpiSession(bool workerThreads = false);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

// Collectives on a duplicate of MPI_COMM_WORLD; create it inside an MpiSession.
class MpiTransport : public IslandTransport {
public:
  MpiTransport();
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }

protected:
  std::vector<std::vector<std::int64_t>> allgather(const std::vector<std::int64_t>& local) override;

private:
  struct Comm;
  std::unique_ptr<Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
};

} // namespace tapestry::search
