#include "core/driver/trace_command.hpp"

#include <ostream>

#include "core/cost/units.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/source.hpp"
#include "core/driver/execution.hpp"
#include "core/driver/output_summary.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/render/timeline.hpp"
#include "core/render/trace.hpp"

namespace tapestry::driver {

int traceCommand(const TraceConfig& config, std::ostream& out, std::ostream& err) {
  checkWritable(config.outputPath);
  const metakernel::MetakernelLibrary library =
      metakernel::MetakernelLibrary::load(config.kernelPaths);
  const plan::LoadedPlan loaded = loadRunnable(config.planPath, library);
  printWarnings(loaded.warnings, err);
  const render::Timeline predicted =
      render::buildTimeline(loaded, render::intervalsOf(loaded.simulation), predictedLabel(loaded));
  const std::string text = render::traceJson(loaded, {predicted});
  writeFileAtomically(config.outputPath, text, out);

  Json doc = Json::object();
  doc["status"] = "ok";
  doc["plan"] = displayName(config.planPath);
  doc["graph"] = loaded.graph.name;
  doc["target"] = loaded.target.name;
  doc["devices"] = loaded.plan.deviceCount;
  doc["tracks"] = predicted.tracks.size();
  doc["slices"] = predicted.slices.size();
  doc["flows"] = predicted.flows.size();
  doc["predicted_time_s"] = loaded.simulation.objectives.timeS;
  doc["output"] = config.outputPath;
  doc["bytes"] = text.size();
  addWarnings(doc, loaded.warnings);
  const std::string summary = "traced " + loaded.graph.name + " (predicted on " +
                              loaded.target.name + ": " +
                              plural(predicted.slices.size(), "slice", "slices") + " on " +
                              plural(predicted.tracks.size(), "track", "tracks") + ", " +
                              plural(predicted.flows.size(), "flow", "flows") + ", " +
                              cost::formatTime(loaded.simulation.objectives.timeS) + ") -> " +
                              outputName(config.outputPath) + "\n";
  reportOutput(config, doc, summary, out, err);
  return 0;
}

} // namespace tapestry::driver
