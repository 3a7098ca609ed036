// tapestry render FILE.json [-o OUT.svg|.png|.pdf|.dot] [--view graph|plan|front]   (SPEC §8)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tapestry::cli {

namespace {
struct RenderArgs {
  std::string input;
  std::string output = "-";
  std::string view;
  std::string rankdir = "TB";
  bool collapse = false;
  int maxNodes = 2000;
};
} // namespace

void registerRender(CLI::App& app, Action& action) {
  auto args = std::make_shared<RenderArgs>();
  CLI::App* sub =
      app.add_subcommand("render", "Draw a graph, a sharded plan or a Pareto front with Graphviz");
  sub->fallthrough();
  sub->add_option("FILE", args->input, "Graph, expanded graph, plan or front JSON; - for stdin")
      ->required();
  sub->add_option("-o,--output", args->output,
                  "Output picture; the format follows the extension: .svg .png .pdf .dot");
  sub->add_option("--view", args->view, "What to draw: graph, plan or front (default: by file)")
      ->check(CLI::IsMember({"graph", "plan", "front"}));
  sub->add_option("--rankdir", args->rankdir, "Layout direction: TB, LR, BT or RL")
      ->check(CLI::IsMember({"TB", "LR", "BT", "RL"}));
  sub->add_flag("--collapse", args->collapse, "Collapse repeated blocks");
  sub->add_option("--max-nodes", args->maxNodes, "Refuse to draw more nodes than this")
      ->check(CLI::PositiveNumber);
  sub->callback([&action, args] {
    action = [args](const GlobalOptions&, Streams&) -> int { notImplemented("render"); };
  });
}

} // namespace tapestry::cli
