// `tapestry rewrites list|show NAME|check [NAME]...` (docs/rewrites.md): the
// whole command, so cli/cmd_rewrites.cpp only parses flags and tests call it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tapestry::driver {

struct RewritesConfig {
  enum class Action { List, Show, Check };
  Action action = Action::List;
  std::vector<std::string> names;       // show: one; check: none means every rule
  std::vector<std::string> rulePaths;   // -r files and directories, in order
  std::vector<std::string> kernelPaths; // -k files and directories
  bool json = false;
  bool quiet = false;
};

// Returns 0, or 3 when `check` finds a rule whose sides differ on an example
// (the first counter-example is printed). Load errors and an unknown rule are
// thrown as Error (exit 1).
int runRewritesCommand(const RewritesConfig& config, std::ostream& out, std::ostream& err);

} // namespace tapestry::driver
