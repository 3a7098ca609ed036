// tapestry render FILE.json [-o OUT.svg|.png|.pdf|.dot] [--view graph|plan|front]   (SPEC §8)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/render_command.hpp"

namespace tapestry::cli {

namespace {
// The flags that are not one config field as they are: --view names a View,
// and --max-nodes is read as an int (help shows INT).
struct RenderFlags {
  std::string view;
  int maxNodes = 2000;
};

render::View parseView(const std::string& name) {
  if (name == "plan") {
    return render::View::Plan;
  }
  if (name == "front") {
    return render::View::Front;
  }
  if (name == "timeline") {
    return render::View::Timeline;
  }
  if (name == "original") {
    return render::View::Original;
  }
  return render::View::Graph;
}
} // namespace

void registerRender(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::RenderConfig>();
  auto args = std::make_shared<RenderFlags>();
  sub->add_option("FILE", config->inputPath,
                  "Graph, expanded graph, plan, front or trace JSON; - for stdin")
      ->required();
  sub->add_option("-o,--output", config->outputPath,
                  "Output picture; the format follows the extension: .svg .png .pdf .dot "
                  "(default: DOT text on stdout)");
  sub->add_option("--view", args->view,
                  "What to draw: graph, plan, front, timeline, or original (a rewritten plan's "
                  "graph before its rewrites; default: by file)")
      ->check(CLI::IsMember({"graph", "plan", "front", "timeline", "original"}));
  sub->add_option("--rankdir", config->options.rankdir, "Layout direction: TB, LR, BT or RL")
      ->check(CLI::IsMember({"TB", "LR", "BT", "RL"}));
  sub->add_flag("--collapse", config->options.collapse,
                "Collapse repeated blocks and fold weights into their operation (graph view); "
                "one node per operation and device, alike devices once (plan view)");
  sub->add_option("--max-nodes", args->maxNodes, "Refuse to draw more nodes than this")
      ->check(CLI::Range(1, 1000000000));
  sub->add_option("--layout-seconds", config->layoutSeconds,
                  "Stop Graphviz's layout after this many seconds (exit 1); a graph or plan "
                  "drawing of 300 nodes or more, not --collapse'd, gets a quarter of them, then "
                  "is drawn collapsed in the rest")
      ->check(CLI::Range(0.1, 1e6));
  addKernelPaths(sub, config->kernelPaths);
  sub->callback([&action, config, args] {
    action = [config, args](const GlobalOptions& global, Streams& io) -> int {
      if (!args->view.empty()) {
        config->view = parseView(args->view);
      }
      config->options.maxNodes = static_cast<std::size_t>(args->maxNodes);
      bindGlobalOptions(global, io, *config);
      return driver::renderCommand(*config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
