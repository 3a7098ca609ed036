// `tapestry trace PLAN.json [-o FILE.json]`: the plan's predicted schedule (the
// cost simulation) as a Chrome trace for Perfetto (core/render/trace.hpp), so
// cli/cmd_trace.cpp only parses flags and tests call the same code. `run
// --trace` and `bench --trace` write the same format with a measured run beside
// the prediction.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tapestry::driver {

struct TraceConfig {
  std::string planPath;                 // plan/v1, or a graph (the single-device plan); "-": stdin
  std::vector<std::string> kernelPaths; // -k files and directories
  std::string outputPath = "-";         // "-": the trace on `out`
  bool json = false;                    // --format json: a summary document (with -o FILE)
  bool quiet = false;
  bool verbose = false; // a summary on `err` when the trace goes to `out`
};

// Returns 0. Bad input is Error (exit 1); an output that cannot be written is
// found before the plan is read (exit 1). Nothing is written unless the whole
// trace was made (atomic output file).
int traceCommand(const TraceConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
