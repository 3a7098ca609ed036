// `tapestry calibrate [--backend cpu|cuda] [--devices N] [-o TARGET.yaml]
// [--budget-seconds S]` (SPEC §6): measures this machine through a real
// backend and the executor (backends/calibration.hpp) and writes a target with
// a measured profile. The result is saved as this machine's calibration (the
// file `--target local` then uses) and, with -o, written to TARGET.yaml too.
#pragma once

#include <iosfwd>
#include <string>

namespace tapestry::backend {
class RankLink;
}

namespace tapestry::driver {

struct CalibrateConfig {
  std::string backend = "cpu"; // cpu | cuda
  int devices = 0;             // 0: the `local` target's devices (cores or GPUs)
  std::string outputPath;      // "" : no file besides the saved calibration; "-": stdout
  double budgetSeconds = 60;   // about how long the measurements take
  bool save = true;            // also save as this machine's calibration
  bool json = false;           // --format json: a summary document on `out`
  bool quiet = false;
  bool progress = false; // a progress bar on `err` (the CLI sets it when stderr is a TTY)
  // Under `mpirun -n K` (K > 1): the ranks. Ranks 0 and 1 measure the link
  // between them; rank 0 then calibrates the machine while the others wait,
  // and writes a target of K nodes (one per rank) whose inter_node link is the
  // measured one (docs/distributed.md). -o is required; nothing is saved as
  // this machine's calibration.
  backend::RankLink* link = nullptr;
};

// Returns 0. An unusable backend is BackendUnavailable (exit 4), bad flags are
// UsageError (exit 2); files are written atomically.
int calibrateCommand(const CalibrateConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
