// `tapestry optimize GRAPH.json ...` (SPEC §2, §7): the whole command, so
// cli/cmd_optimize.cpp only parses flags and tests call the same code.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/search/island.hpp"

namespace tapestry::driver {

struct OptimizeConfig {
  std::string graphPath;                // "-" reads standard input
  std::vector<std::string> kernelPaths; // -k files and directories, in order
  std::string target = "local";         // built-in name or target YAML file
  // --rewrites: "default" (the canonicalising pre-pass: every `always`
  // rule, standard and -r); "none"; or a rule file, whose rules all run in
  // the pre-pass too (docs/rewrites.md).
  std::string rewrites = "default";
  std::vector<std::string> rulePaths; // -r files and directories
  bool approximate = false;           // --approximate: rules marked approximate too
  std::uint64_t seed = 0;
  std::optional<double> budgetSeconds;    // --budget-seconds
  std::optional<std::int64_t> iterations; // --iterations (generations)
  int threads = 1;
  bool exhaustive = false;
  std::string select = "fastest";       // fastest | smallest | knee | time
  std::optional<std::string> memoryCap; // e.g. "40GiB"
  std::string inputsOn = "host";        // host | free | constants
  std::string outputPath = "-";         // the selected plan (plan/v1); "-" is `out`
  std::string baseline;  // "" : write the selected plan; else this baseline's plan instead
  std::string frontPath; // front/v1, "" for none
  bool json = false;     // --format json: a summary document on `out` when -o is a file
  bool quiet = false;    // no text summary
  bool verbose = false;  // more detail in the text summary
  bool progress = false; // a progress line on `err` (the CLI sets it when stderr is a TTY)
  const std::atomic<bool>* stop = nullptr; // stops the search at a generation boundary
  // Under `mpirun -n K` (K > 1): this process's island of a distributed search
  // (island.hpp, docs/distributed.md). Only rank 0 writes files and prints; the
  // others return once the islands have merged their fronts. nullptr: one process.
  search::IslandTransport* islands = nullptr;
  std::int64_t exchangeEvery = search::kDefaultExchangeEvery; // generations between exchanges
};

// Returns 0, or 130 (ExitCode::Interrupted) when `stop` ended the search early:
// the outputs then hold the best front found so far. Input errors are Error (exit 1), flag errors
// UsageError (exit 2), thrown before any file is written; output files are written atomically, the
// plan first, then the front.
int optimizeCommand(const OptimizeConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
