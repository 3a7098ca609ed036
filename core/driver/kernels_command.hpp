// `tapestry kernels list|show NAME|check` (SPEC §2, §4): the whole command, so
// cli/cmd_kernels.cpp only parses flags and tests call the same function.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tapestry::driver {

struct KernelsConfig {
  enum class Action { List, Show, Check };
  Action action = Action::List;
  std::string name; // show
  std::vector<std::string> kernelPaths;
  bool overrideKernels = false;
  bool json = false;
  bool quiet = false;
};

// Returns the exit code: 0, or 3 when `check` finds a failing example. Load errors
// and an unknown kernel for `show` are thrown as Error (exit 1).
int runKernelsCommand(const KernelsConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
