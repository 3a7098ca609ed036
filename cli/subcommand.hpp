// What every subcommand file (cli/cmd_*.cpp) does the same way: copy the
// global flags into its config struct, and set the action that runs its
// driver function.
#pragma once

#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "cli/app.hpp"

namespace tapestry::cli {

// Adds subcommand `name` to `app`; it accepts the global flags after its own
// (fallthrough).
inline CLI::App* addSubcommand(CLI::App& app, const std::string& name,
                               const std::string& description) {
  CLI::App* sub = app.add_subcommand(name, description);
  sub->fallthrough();
  return sub;
}

// -k/--kernels: extra metakernel files or directories, for every command that
// reads a graph.
inline void addKernelPaths(CLI::App* sub, std::vector<std::string>& paths) {
  sub->add_option("-k,--kernels", paths, "Extra metakernel YAML file or directory (repeatable)");
}

// Copies --format, -q and -v into a command's config (verbose where it has
// one), and where it has a progress line, whether to show it: for people
// watching a terminal, never for logs.
template <class Config>
void bindGlobalOptions(const GlobalOptions& global, const Streams& io, Config& config) {
  config.json = global.format == OutputFormat::Json;
  config.quiet = global.quiet;
  if constexpr (requires { config.verbose; }) {
    config.verbose = global.verbose;
  }
  if constexpr (requires { config.progress; }) {
    config.progress = !global.quiet && &io.err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
  }
}

// The action that binds the global flags into *config, then returns
// `run(*config, global, io)`.
template <class Config, class Run> Action bindThenRun(std::shared_ptr<Config> config, Run run) {
  return [config, run](const GlobalOptions& global, Streams& io) -> int {
    bindGlobalOptions(global, io, *config);
    return run(*config, global, io);
  };
}

// When `sub` is selected, `action` runs `command(*config, out, err)` after
// the global flags are bound: for a subcommand whose flags bind straight into
// its config struct.
template <class Config, class Command>
void runDriverOnSelect(CLI::App& sub, Action& action, std::shared_ptr<Config> config,
                       Command command) {
  sub.callback([&action, config, command] {
    action = bindThenRun(config, [command](Config& bound, const GlobalOptions&, Streams& io) {
      return command(bound, io.out, io.err);
    });
  });
}

} // namespace tapestry::cli
