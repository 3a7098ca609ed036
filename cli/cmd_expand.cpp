// tapestry expand GRAPH.json [-k PATH]... [-o OUT.json]   (SPEC §5)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/expand_command.hpp"

namespace tapestry::cli {

void registerExpand(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::ExpandConfig>();
  sub->add_option("GRAPH", config->graphPath,
                  "Graph file (graph/v1 or expanded/v1 JSON), or - for stdin")
      ->required();
  addKernelPaths(sub, config->kernelPaths);
  sub->add_option("-o,--output", config->outputPath,
                  "Output file (expanded/v1 JSON), - for stdout");
  sub->add_flag("--override-kernels", config->overrideKernels,
                "Let -k files redefine standard-library kernels");
  sub->add_option("--rewrites", config->rewrites,
                  "Rewrite the graph after expanding it: none (the default), default (every rule "
                  "marked always or search), or a rule file whose rules all apply")
      ->capture_default_str();
  addRulePaths(sub, config->rulePaths);
  addApproximate(sub, config->approximate);
  runDriverOnSelect(*sub, action, config, driver::expandCommand);
}

} // namespace tapestry::cli
