#include "backends/mpi_link.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> // Open MPI's extensions: MPIX_Query_cuda_support
#endif

#include "core/search/mpi_util.hpp"

namespace tapestry::backend {

namespace {

using search::mpi::await;
using search::mpi::check;

int messageSize(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw Error("a region of " + std::to_string(bytes) +
                " bytes crosses ranks; one MPI message carries at most 2 GiB");
  }
  return static_cast<int>(bytes);
}

} // namespace

struct MpiRankLink::State {
  MPI_Comm comm = MPI_COMM_NULL;
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<MPI_Request> requests; // pending sends, parallel to `buffers`
  std::vector<Buffer> buffers;
  bool stop = false;
  std::jthread progress;

  // Tests every pending send, dropping those done; under `mutex`.
  void test() {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      int done = 0;
      check(MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) {
        requests[kept] = requests[i];
        buffers[kept] = std::move(buffers[i]);
        ++kept;
      }
    }
    requests.resize(kept);
    buffers.resize(kept);
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stop) {
      if (requests.empty()) {
        wake.wait(lock, [this] { return stop || !requests.empty(); });
        continue;
      }
      test();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      lock.lock();
    }
  }
};

MpiRankLink::MpiRankLink() : state_(std::make_unique<State>()) {
  int level = 0;
  check(MPI_Query_thread(&level), "MPI_Query_thread");
  if (level < MPI_THREAD_MULTIPLE) {
    throw Error("this MPI library does not provide MPI_THREAD_MULTIPLE, which run and bench "
                "under mpirun need (the executor's worker threads send and receive)");
  }
  check(MPI_Comm_dup(MPI_COMM_WORLD, &state_->comm), "MPI_Comm_dup");
  // Communication errors keep MPI's default handler (MPI_ERRORS_ARE_FATAL):
  // they abort the whole job, so no rank is left waiting on a broken one.
  check(MPI_Comm_rank(state_->comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(state_->comm, &size_), "MPI_Comm_size");
  void* value = nullptr;
  int found = 0;
  check(MPI_Comm_get_attr(state_->comm, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr");
  if (found != 0 && value != nullptr) {
    maxTag_ = *static_cast<int*>(value);
  }
  MPI_Comm local = MPI_COMM_NULL;
  check(MPI_Comm_split_type(state_->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
  check(MPI_Comm_size(local, &localSize_), "MPI_Comm_size");
  MPI_Comm_free(&local);
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  // Declared whenever Open MPI has the CUDA extension, whether or not this
  // build of it was CUDA-aware; the answer is the running library's.
  cudaAware_ = MPIX_Query_cuda_support() == 1;
#endif
  // tests/mpi: this rank fails mid-run, while the others wait for it.
  // "R": rank R throws at its first send; "R:kill": it is killed there (SIGKILL).
  if (const char* fail = std::getenv("TAPESTRY_TEST_FAIL_RANK")) {
    failAtSend_ = std::string(fail) == std::to_string(rank_);
    killAtSend_ = std::string(fail) == std::to_string(rank_) + ":kill";
  }
  state_->progress = std::jthread([this] { state_->run(); });
}

MpiRankLink::~MpiRankLink() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  state_->progress = std::jthread();
  if (state_->comm != MPI_COMM_NULL) {
    MPI_Comm_free(&state_->comm);
  }
}

void MpiRankLink::send(int to, int tag, Buffer data) {
  if (killAtSend_) {
    std::raise(SIGKILL); // as if the node went away: no message, no MPI_Abort
  }
  if (failAtSend_) {
    throw Error("test hook TAPESTRY_TEST_FAIL_RANK: rank " + std::to_string(rank_) +
                " fails at its first message");
  }
  const int bytes = messageSize(static_cast<std::size_t>(data.byteSize()));
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    check(MPI_Isend(data.data(), bytes, MPI_BYTE, to, tag, state_->comm, &request), "MPI_Isend");
    state_->requests.push_back(request);
    state_->buffers.push_back(std::move(data));
  }
  state_->wake.notify_all();
}

bool MpiRankLink::receive(int from, int tag, std::span<std::byte> into,
                          const std::atomic<bool>& stop) {
  MPI_Request request = MPI_REQUEST_NULL;
  check(
      MPI_Irecv(into.data(), messageSize(into.size()), MPI_BYTE, from, tag, state_->comm, &request),
      "MPI_Irecv");
  return await(request, "MPI_Irecv", &stop);
}

void MpiRankLink::flush() {
  auto pause = std::chrono::microseconds(5);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->test();
      if (state_->requests.empty()) {
        return;
      }
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

std::vector<std::vector<std::int64_t>>
MpiRankLink::allgather(const std::vector<std::int64_t>& local) {
  return search::mpi::allgather(state_->comm, size_, local, 1LL << 27,
                                "rank statistics too large for one MPI collective",
                                std::chrono::microseconds(200));
}

std::vector<int> MpiRankLink::exchangeStatus(int code) {
  std::vector<int> codes;
  for (const std::vector<std::int64_t>& v : allgather({code})) {
    codes.push_back(v.empty() ? 0 : static_cast<int>(v[0]));
  }
  return codes;
}

void MpiRankLink::barrier() {
  const std::vector<int> codes = exchangeStatus(0);
  for (std::size_t r = 0; r < codes.size(); ++r) {
    if (codes[r] != 0) {
      throw RanksFailed(static_cast<int>(r), codes[r]);
    }
  }
  started_ = true;
}

void MpiRankLink::broadcast(std::span<std::byte> data, int root) {
  check(MPI_Bcast(data.data(), messageSize(data.size()), MPI_BYTE, root, state_->comm),
        "MPI_Bcast");
}

void MpiRankLink::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return
}

} // namespace tapestry::backend
