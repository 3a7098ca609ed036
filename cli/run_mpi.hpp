// `mpirun -n K tapestry run|bench ...` (docs/distributed.md): the command as
// one rank of a distributed execution. Kept out of cmd_run.cpp and
// cmd_bench.cpp so that only this file knows whether the binary has MPI.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/run_command.hpp"
#include "core/search/island.hpp"

namespace tapestry::cli {

// What runs on every rank: the driver's command with config.link set.
using RankCommand = std::function<int(std::ostream& out, std::ostream& err)>;

// Runs `command` as rank launch.rank of launch.size (> 1) with MPI initialized
// (MPI_THREAD_MULTIPLE) and `link` the MPI link; rank 0 alone prints.
// Every rank leaves with rank 0's exit code. An error before the ranks first
// meet (loading the plan, reading inputs) is reported once, by the lowest
// failing rank, and every rank exits with its code once the message is out; an error after that (a
// kernel, a lost peer) is printed by its rank, which then ends every rank with
// MPI_Abort, since the others may be waiting for its messages. Without MPI in
// the build: a usage error (exit 2), from rank 0.
// `link` is where the command finds the ranks (config.link); `what` names the
// command in the refusal of a build without MPI ("run a plan", "calibrate").
int executeOnRanks(backend::RankLink*& link, const RankCommand& command,
                   const search::LaunchInfo& launch, const GlobalOptions& global, Streams& io,
                   const std::string& what = "run a plan");

// The action of run, bench and calibrate: binds the global flags into *config
// and runs `command(*config, out, err)`, in this process or, under `mpirun -n
// K` with K > 1, as one of K ranks (executeOnRanks, with `what`).
template <class Config, class Command>
Action executeAction(std::shared_ptr<Config> config, Command command,
                     const std::string& what = "run a plan") {
  return bindThenRun(
      config, [command, what](Config& bound, const GlobalOptions& global, Streams& io) -> int {
        if (const auto launch = search::launchFromEnvironment(); launch && launch->size > 1) {
          return executeOnRanks(
              bound.link,
              [&bound, command](std::ostream& out, std::ostream& err) {
                return command(bound, out, err);
              },
              *launch, global, io, what);
        }
        return command(bound, io.out, io.err);
      });
}

} // namespace tapestry::cli
