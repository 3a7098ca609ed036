// The tapestry command line: builds the CLI11 application, dispatches to the one
// core function per subcommand, and maps every outcome to a SPEC §2 exit code.
// Callable in-process so tests drive exactly what the binary runs.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tapestry::cli {

enum class OutputFormat { Text, Json };

// Flags every subcommand accepts.
struct GlobalOptions {
  OutputFormat format = OutputFormat::Text;
  bool quiet = false;
  bool verbose = false;
};

// The streams a command talks to (std::cout/std::cerr in the binary).
struct Streams {
  std::ostream& out;
  std::ostream& err;
};

// What a parsed subcommand does; returns the process exit code.
using Action = std::function<int(const GlobalOptions&, Streams&)>;

// Runs tapestry with `args` (args[0] is the program name). Never throws.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Inside a catch block: prints the exception being handled as SPEC §2 reports
// errors (stderr; also a JSON document on stdout with --format json) and
// returns its exit code.
int reportCurrentError(const GlobalOptions& global, Streams& io);
// Inside a catch block: the exit code the exception being handled ends with.
int currentExitCode();

// Subcommand registration, one per file cli/cmd_*.cpp. Each adds the options
// of its subcommand `sub` (run() creates it, with its name and description),
// bound to state it owns, and stores in `action` what to do when that
// subcommand is selected.
void registerExpand(CLI::App* sub, Action& action);
void registerImport(CLI::App* sub, Action& action);
void registerKernels(CLI::App* sub, Action& action);
void registerRewrites(CLI::App* sub, Action& action);
// -r/--rules on the commands that take rewrite rules.
void addRulePaths(CLI::App* sub, std::vector<std::string>& paths);
void addApproximate(CLI::App* sub, bool& approximate);
void registerOptimize(CLI::App* sub, Action& action);
void registerRender(CLI::App* sub, Action& action);
void registerRun(CLI::App* sub, Action& action);
void registerBench(CLI::App* sub, Action& action);
void registerTrace(CLI::App* sub, Action& action);
void registerCalibrate(CLI::App* sub, Action& action);

std::string versionString();

} // namespace tapestry::cli
