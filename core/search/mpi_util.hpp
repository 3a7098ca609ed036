// The MPI calls that the island transport (mpi_transport.cpp) and the
// executor's rank link (backends/mpi_link.cpp) share: error checks, a polite
// wait for a request, and an allgather of int64 words of any lengths. Built
// only with MPI (TAPESTRY_HAVE_MPI); includes mpi.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

namespace tapestry::search::mpi {

// Throws InternalError("WHAT failed: <MPI's text>") unless code is MPI_SUCCESS.
void check(int code, const char* what);

// Polls a request until it completes: yielding for the first 100 us (most
// messages between ranks of one machine arrive within that, and a sleep costs
// Linux's 50 us timer slack at least), then with sleeps of up to `maxPause`
// rather than MPI's busy loop: ranks often outnumber cores (mpirun
// --oversubscribe), and a rank spinning at a wait would take the CPU from one
// still working. False when `stop` was set first (the request is cancelled).
bool await(MPI_Request& request, const char* what, const std::atomic<bool>* stop = nullptr,
           std::chrono::microseconds maxPause = std::chrono::microseconds(200));

// Every rank's `local` words, indexed by rank: lengths first, then the words
// (int64 travels as MPI_INT64_T). Throws InternalError(`tooLarge`) when a
// rank's words or their running total pass `maxWords`.
std::vector<std::vector<std::int64_t>> allgather(MPI_Comm comm, int ranks,
                                                 const std::vector<std::int64_t>& local,
                                                 long long maxWords, const std::string& tooLarge,
                                                 std::chrono::microseconds maxPause);

} // namespace tapestry::search::mpi
