// tapestry expand GRAPH.json [-k PATH]... [-o OUT.json]   (SPEC §5)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"

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
  sub->add_option("GRAPH", args->graph, "Graph file (graph/v1 JSON), or - for stdin")->required();
  sub->add_option("-k,--kernels", args->kernelPaths,
                  "Extra metakernel YAML file or directory (repeatable)");
  sub->add_option("-o,--output", args->output, "Output file (expanded/v1 JSON), - for stdout");
  sub->add_flag("--override-kernels", args->overrideKernels,
                "Let -k files redefine standard-library kernels");
  sub->callback([&action, args] {
    action = [args](const GlobalOptions&, Streams&) -> int { notImplemented("expand"); };
  });
}

} // namespace tapestry::cli
