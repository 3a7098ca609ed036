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

// Initializes MPI (funneled: only the calling thread talks MPI; the search's
// evaluation threads never do) and finalizes it when destroyed.
class MpiSession {
public:
  MpiSession();
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
