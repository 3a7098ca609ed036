#include "core/search/mpi_util.hpp"

#include <algorithm>
#include <thread>

#include "core/diag/error.hpp"

namespace tapestry::search::mpi {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw InternalError(std::string(what) + " failed: " + std::string(text, length));
  }
}

bool await(MPI_Request& request, const char* what, const std::atomic<bool>* stop,
           std::chrono::microseconds maxPause) {
  const auto began = std::chrono::steady_clock::now();
  auto pause = std::min(std::chrono::microseconds(20), maxPause);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) {
      return true;
    }
    if (stop != nullptr && stop->load(std::memory_order_acquire)) {
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
      return false;
    }
    if (std::chrono::steady_clock::now() - began < std::chrono::microseconds(100)) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, maxPause);
  }
}

std::vector<std::vector<std::int64_t>> allgather(MPI_Comm comm, int ranks,
                                                 const std::vector<std::int64_t>& local,
                                                 long long maxWords, const std::string& tooLarge,
                                                 std::chrono::microseconds maxPause) {
  const auto n = static_cast<std::size_t>(ranks);
  const long long mine = static_cast<long long>(local.size());
  std::vector<long long> lengths(n);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(&mine, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, comm, &request),
        "MPI_Iallgather");
  await(request, "MPI_Iallgather", nullptr, maxPause);
  std::vector<int> counts(n);
  std::vector<int> displacements(n);
  long long total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (lengths[i] > maxWords || total > maxWords) {
      throw InternalError(tooLarge);
    }
    counts[i] = static_cast<int>(lengths[i]);
    displacements[i] = static_cast<int>(total);
    total += lengths[i];
  }
  std::vector<std::int64_t> words(static_cast<std::size_t>(total));
  check(MPI_Iallgatherv(local.data(), static_cast<int>(local.size()), MPI_INT64_T, words.data(),
                        counts.data(), displacements.data(), MPI_INT64_T, comm, &request),
        "MPI_Iallgatherv");
  await(request, "MPI_Iallgatherv", nullptr, maxPause);
  std::vector<std::vector<std::int64_t>> all(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto begin = words.begin() + displacements[i];
    all[i].assign(begin, begin + counts[i]);
  }
  return all;
}

} // namespace tapestry::search::mpi
