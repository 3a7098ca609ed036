// tapestry expand GRAPH.json [-k PATH]... [-o OUT.json]   (SPEC §5)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "core/graph/expand_command.hpp"

namespace tapestry::cli {

namespace {
struct ExpandArgs {
  std::string graph;
  std::vector<std::string> kernelPaths;
  std::string output = "-";
  bool overrideKernels = false;
};
} // namespace

void registerExpand(CLI::App& app, Action& action) {
  auto args = std::make_shared<ExpandArgs>();
  CLI::App* sub = app.add_subcommand(
      "expand", "Expand a graph: apply metakernels to every operation, infer shapes, index spaces "
                "and index projection functions");
  sub->fallthrough();
  sub->add_option("GRAPH", args->graph, "Graph file (graph/v1 or expanded/v1 JSON), or - for stdin")
      ->required();
  sub->add_option("-k,--kernels", args->kernelPaths,
                  "Extra metakernel YAML file or directory (repeatable)");
  sub->add_option("-o,--output", args->output, "Output file (expanded/v1 JSON), - for stdout");
  sub->add_flag("--override-kernels", args->overrideKernels,
                "Let -k files redefine standard-library kernels");
  sub->callback([&action, args] {
    action = [args](const GlobalOptions& global, Streams& io) -> int {
      graph::ExpandConfig config;
      config.graphPath = args->graph;
      config.kernelPaths = args->kernelPaths;
      config.outputPath = args->output;
      config.overrideKernels = args->overrideKernels;
      config.json = global.format == OutputFormat::Json;
      config.quiet = global.quiet;
      config.verbose = global.verbose;
      return graph::expandCommand(config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
