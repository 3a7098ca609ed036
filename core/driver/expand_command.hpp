// `tapestry expand GRAPH.json [-k PATH]... [-o OUT.json]` (SPEC §2, §5): the whole
// command, so cli/cmd_expand.cpp only parses flags and tests call the same code.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tapestry::driver {

struct ExpandConfig {
  std::string graphPath;                // "-" reads standard input
  std::vector<std::string> kernelPaths; // -k files and directories, in order
  std::string outputPath = "-";         // "-" writes the expanded graph to `out`
  std::string rewrites = "none";        // --rewrites none|default|FILE (rewrite_pass.hpp)
  std::vector<std::string> rulePaths;   // -r files and directories
  bool approximate = false;             // --approximate: rules marked approximate too
  bool overrideKernels = false;
  bool json = false;    // --format json: a summary document on `out` when -o is a file
  bool quiet = false;   // no text summary
  bool verbose = false; // a summary on `err` even when the graph goes to `out`
};

// Returns 0. Input errors are thrown as Error (exit 1), with nothing written:
// the output file is written atomically, and only once expansion succeeded.
int expandCommand(const ExpandConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
