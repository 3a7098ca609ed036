// tapestry render FILE.json [-o OUT.svg|.png|.pdf|.dot] [--view graph|plan|front]   (SPEC §8)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "core/render/render_command.hpp"

namespace tapestry::cli {

namespace {
struct RenderArgs {
  std::string input;
  std::vector<std::string> kernelPaths;
  std::string output = "-";
  std::string view;
  std::string rankdir = "TB";
  bool collapse = false;
  int maxNodes = 2000;
};

render::View parseView(const std::string& name) {
  if (name == "plan") {
    return render::View::Plan;
  }
  if (name == "front") {
    return render::View::Front;
  }
  return render::View::Graph;
}
} // namespace

void registerRender(CLI::App& app, Action& action) {
  auto args = std::make_shared<RenderArgs>();
  CLI::App* sub =
      app.add_subcommand("render", "Draw a graph, a sharded plan or a Pareto front with Graphviz");
  sub->fallthrough();
  sub->add_option("FILE", args->input, "Graph, expanded graph, plan or front JSON; - for stdin")
      ->required();
  sub->add_option("-o,--output", args->output,
                  "Output picture; the format follows the extension: .svg .png .pdf .dot "
                  "(default: DOT text on stdout)");
  sub->add_option("--view", args->view, "What to draw: graph, plan or front (default: by file)")
      ->check(CLI::IsMember({"graph", "plan", "front"}));
  sub->add_option("--rankdir", args->rankdir, "Layout direction: TB, LR, BT or RL")
      ->check(CLI::IsMember({"TB", "LR", "BT", "RL"}));
  sub->add_flag("--collapse", args->collapse,
                "Collapse repeated blocks and fold weights into their operation (graph view); "
                "one node per operation and device (plan view)");
  sub->add_option("--max-nodes", args->maxNodes, "Refuse to draw more nodes than this")
      ->check(CLI::Range(1, 1000000000));
  sub->add_option("-k,--kernels", args->kernelPaths,
                  "Extra metakernel YAML file or directory (repeatable)");
  sub->callback([&action, args] {
    action = [args](const GlobalOptions& global, Streams& io) -> int {
      render::RenderConfig config;
      config.inputPath = args->input;
      config.kernelPaths = args->kernelPaths;
      config.outputPath = args->output;
      if (!args->view.empty()) {
        config.view = parseView(args->view);
      }
      config.options.rankdir = args->rankdir;
      config.options.collapse = args->collapse;
      config.options.maxNodes = static_cast<std::size_t>(args->maxNodes);
      config.json = global.format == OutputFormat::Json;
      config.quiet = global.quiet;
      config.verbose = global.verbose;
      return render::renderCommand(config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
