// `mpirun -n K tapestry optimize ...` (docs/distributed.md): the optimize
// command as one island of a distributed search. Kept out of cmd_optimize.cpp
// so that only this file knows whether the binary was built with MPI.
#pragma once

#include <ostream>

#include "cli/app.hpp"
#include "core/driver/optimize_command.hpp"
#include "core/search/island.hpp"

namespace tapestry::cli {

// Runs `config` as rank launch.rank of launch.size (> 1) islands: MPI is
// initialized for the call and finalized after it. Rank 0 writes the files and
// prints; the others print nothing unless they are the lowest rank that failed.
// An error on any rank ends every rank with its exit code instead of leaving
// them waiting, and the lowest failing rank reports it (as `global` says)
// before any rank returns: mpirun stops the whole job as soon as one rank exits
// with an error. Without MPI in the build: a usage error (exit 2), from rank 0.
int optimizeOnIslands(driver::OptimizeConfig config, const search::LaunchInfo& launch,
                      const GlobalOptions& global, Streams& io);

// For a rank that fails before MPI starts (or in a build without it) while
// rank 0 reports the same error: waits a moment, then returns `code`. With no
// MPI there is no collective to wait on rank 0 with, and a silent rank that
// exited at once could have mpirun take rank 0 down before its message is out.
int quietRankExit(int code);

// A stream that writes nowhere: where the output of ranks other than 0 goes.
std::ostream& silentStream();

} // namespace tapestry::cli
