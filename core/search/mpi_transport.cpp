#include "core/search/mpi_transport.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <mpi.h>

#include "core/diag/error.hpp"
#include "core/search/mpi_util.hpp"

namespace tapestry::search {

namespace {

using mpi::check;

} // namespace

MpiSession::MpiSession(bool workerThreads) {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, workerThreads ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                        &provided),
        "MPI_Init_thread");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Finalize();
  }
}

struct MpiTransport::Comm {
  MPI_Comm comm = MPI_COMM_NULL;
};

MpiTransport::MpiTransport() : comm_(std::make_unique<Comm>()) {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_->comm), "MPI_Comm_dup");
  // Communication errors keep MPI's default handler (MPI_ERRORS_ARE_FATAL):
  // they abort the whole job, so no rank is left waiting on a broken one.
  check(MPI_Comm_rank(comm_->comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_->comm, &size_), "MPI_Comm_size");
}

MpiTransport::~MpiTransport() {
  if (comm_->comm != MPI_COMM_NULL) {
    MPI_Comm_free(&comm_->comm);
  }
}

std::vector<std::vector<std::int64_t>>
MpiTransport::allgather(const std::vector<std::int64_t>& local) {
  // The island exchange waits with sleeps of up to 1 ms: a generation takes far
  // longer than a message.
  return mpi::allgather(comm_->comm, size_, local, 1LL << 30,
                        "island message too large for one MPI collective",
                        std::chrono::milliseconds(1));
}

} // namespace tapestry::search
