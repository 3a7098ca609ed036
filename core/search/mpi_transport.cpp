#include "core/search/mpi_transport.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <mpi.h>

#include "core/diag/error.hpp"

namespace tapestry::search {

namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw InternalError(std::string(what) + " failed: " + std::string(text, length));
  }
}

// Waits for a nonblocking collective by polling with short sleeps rather than
// in MPI's busy loop: ranks often outnumber cores (mpirun --oversubscribe), and
// a rank spinning at an exchange would take the CPU from one still searching.
void await(MPI_Request& request, const char* what) {
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) {
      return;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

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
  // Lengths first, then the words (int64 travels as MPI_INT64_T).
  const int n = size_;
  const long long mine = static_cast<long long>(local.size());
  std::vector<long long> lengths(static_cast<std::size_t>(n));
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(&mine, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, comm_->comm,
                       &request),
        "MPI_Iallgather");
  await(request, "MPI_Iallgather");
  std::vector<int> counts(static_cast<std::size_t>(n));
  std::vector<int> displacements(static_cast<std::size_t>(n));
  long long total = 0;
  for (int r = 0; r < n; ++r) {
    if (lengths[static_cast<std::size_t>(r)] > (1LL << 30) || total > (1LL << 30)) {
      throw InternalError("island message too large for one MPI collective");
    }
    counts[static_cast<std::size_t>(r)] = static_cast<int>(lengths[static_cast<std::size_t>(r)]);
    displacements[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::vector<std::int64_t> words(static_cast<std::size_t>(total));
  check(MPI_Iallgatherv(local.data(), static_cast<int>(local.size()), MPI_INT64_T, words.data(),
                        counts.data(), displacements.data(), MPI_INT64_T, comm_->comm, &request),
        "MPI_Iallgatherv");
  await(request, "MPI_Iallgatherv");
  std::vector<std::vector<std::int64_t>> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const auto begin = words.begin() + displacements[static_cast<std::size_t>(r)];
    all[static_cast<std::size_t>(r)].assign(begin, begin + counts[static_cast<std::size_t>(r)]);
  }
  return all;
}

} // namespace tapestry::search
