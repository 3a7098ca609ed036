// tapestry trace PLAN.json [-o FILE.json]: the predicted schedule as a Chrome
// trace for Perfetto (docs/reference/cli.md#trace)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/trace_command.hpp"

namespace tapestry::cli {

void registerTrace(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::TraceConfig>();
  sub->add_option("PLAN", config->planPath,
                  "Plan (plan/v1), or a graph as the single-device plan (graph/v1, expanded/v1); "
                  "- for stdin")
      ->required();
  sub->add_option("-o,--output", config->outputPath,
                  "Trace file (Chrome trace JSON), - for stdout");
  addKernelPaths(sub, config->kernelPaths);
  runDriverOnSelect(*sub, action, config, driver::traceCommand);
}

} // namespace tapestry::cli
