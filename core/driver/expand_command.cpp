#include "core/driver/expand_command.hpp"

#include "core/driver/rewrite_pass.hpp"

#include <cstdio>
#include <ostream>

#include "core/diag/atomic_file.hpp"
#include "core/driver/output_summary.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::driver {

using namespace tapestry::graph;

namespace {

// "2.15 GFLOP": three significant digits and an SI prefix.
std::string flopsText(std::int64_t flops) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  double value = static_cast<double>(flops);
  std::size_t p = 0;
  while (value >= 1000.0 && p + 1 < std::size(prefixes)) {
    value /= 1000.0;
    ++p;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g %sFLOP", value, prefixes[p]);
  return buffer;
}

std::string summaryText(const ExpandedGraph& graph, const std::string& output) {
  return "expanded " + graph.name + ": " + std::to_string(graph.operations.size()) +
         " operations, " + std::to_string(graph.tensors.size()) + " tensors, " +
         flopsText(graph.totalFlops()) + " -> " + outputName(output) + "\n";
}

} // namespace

int expandCommand(const ExpandConfig& config, std::ostream& out, std::ostream& err) {
  metakernel::LibraryOptions options;
  options.overrideKernels = config.overrideKernels;
  metakernel::MetakernelLibrary library =
      metakernel::MetakernelLibrary::load(config.kernelPaths, options);
  ExpandedGraph graph = loadAndExpand(config.graphPath, library);
  const std::vector<rewrite::AppliedSite> rewrites =
      preRewrite(graph, config.rewrites, config.rulePaths, library, config.approximate);
  writeFileAtomically(config.outputPath, writeExpanded(graph), out);

  Json summary = Json::object();
  summary["status"] = "ok";
  summary["graph"] = graph.name;
  summary["operations"] = graph.operations.size();
  summary["tensors"] = graph.tensors.size();
  summary["flops"] = graph.totalFlops();
  summary["output"] = config.outputPath;
  if (config.rewrites != "none") {
    summary["rewrites"] = rewritesJson(rewrites);
  }
  std::string text = summaryText(graph, config.outputPath);
  if (!rewrites.empty()) {
    text += "  " + rewritesText(rewrites) + "\n";
  }
  reportOutput(config, summary, text, out, err);
  return 0;
}

} // namespace tapestry::driver
