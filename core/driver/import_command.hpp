// `tapestry import MODEL.onnx [-o GRAPH.json] [--weights DIR] [--values DIR] [--dim NAME=N]...`
// (SPEC §5.1): the whole command, so cli/cmd_import.cpp only parses flags and
// tests call the same code.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tapestry::driver {

struct ImportConfig {
  std::string modelPath;         // the ONNX file
  std::string outputPath = "-";  // "-" writes the graph/v1 document to `out`
  std::string weightsDir;        // "" : no .npy files
  std::string valuesDir;         // --values: DIR/NAME.npy, values of inputs import needs
  std::vector<std::string> dims; // "NAME=N", as given to --dim
  bool json = false;             // --format json: a summary document on `out` when -o is a file
  bool quiet = false;            // no text summary
  bool verbose = false;          // a summary on `err` even when the graph goes to `out`
};

// Returns 0. A bad --dim is UsageError (exit 2); a bad or unsupported model is
// Error (exit 1), with nothing written: the graph and each .npy file are
// written atomically, and only once the import succeeded.
int importCommand(const ImportConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
