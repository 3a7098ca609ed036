// Runs independent tasks 0..count-1 on up to `threads` threads (the caller's
// among them): each thread takes the next task number from an atomic counter.
// The first exception a task throws stops the others from starting new tasks
// and is rethrown once every thread has stopped. With one thread, or one task,
// everything runs in order on the caller's thread.
#pragma once

#include <cstdint>
#include <functional>

namespace tapestry::search {

void parallelFor(std::uint64_t count, int threads, const std::function<void(std::uint64_t)>& task);

} // namespace tapestry::search
