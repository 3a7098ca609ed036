#include "core/driver/optimize_command.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>

#include <unistd.h>

#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/error.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/json/layout.hpp"
#include "core/metakernel/library.hpp"
#include "core/search/exhaustive.hpp"
#include "core/search/front_file.hpp"
#include "core/search/island.hpp"
#include "core/search/search.hpp"
#include "core/search/select.hpp"

namespace tapestry::driver {

using namespace tapestry::search;

namespace {

// Fails early, before a long search, when an output file could not be written
// (the same message writeFileAtomically would give).
void checkWritable(const std::string& path) {
  if (path.empty() || path == "-") {
    return;
  }
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& why) {
    throw Error(SourceLocation{path, 0, 0, {}}, "cannot write output file: " + why);
  };
  std::error_code ec;
  const fs::path target(path);
  if (fs::is_directory(target, ec)) {
    fail("is a directory");
  }
  fs::path dir = target.parent_path();
  if (dir.empty()) {
    dir = ".";
  }
  if (!fs::is_directory(dir, ec)) {
    fail(std::strerror(ENOENT));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    fail(std::strerror(errno));
  }
}

std::string objectivesText(const cost::Objectives& o) {
  return cost::formatTime(o.timeS) + ", peak " + cost::formatSize(o.peakMemoryBytes) + ", moved " +
         cost::formatSize(o.transferBytes);
}

std::string padded(std::string s, std::size_t width) {
  if (s.size() < width) {
    s.append(width - s.size(), ' ');
  }
  return s;
}

std::string rateText(double perSecond) {
  char buffer[32];
  if (perSecond >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.1fM", perSecond / 1e6);
  } else if (perSecond >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%.1fk", perSecond / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.0f", perSecond);
  }
  return buffer;
}

// The TTY progress line: rewritten in place, at most ten times a second.
class ProgressLine {
public:
  explicit ProgressLine(std::ostream& err) : err_(err) {}

  void update(const SearchProgress& p, std::int64_t generations) {
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100)) {
      return;
    }
    last_ = now;
    shown_ = true;
    std::string line = "optimize: iteration " + std::to_string(p.generation);
    if (generations > 0) {
      line += "/" + std::to_string(generations);
    }
    if (p.archive && !p.archive->empty()) {
      double best = p.archive->members().front().objectives.timeS;
      for (const Evaluated& e : p.archive->members()) {
        best = std::min(best, e.objectives.timeS);
      }
      line += ", best " + cost::formatTime(best);
      line += ", front " + std::to_string(p.archive->size());
    }
    if (p.seconds > 0) {
      line += ", " + rateText(static_cast<double>(p.evaluations) / p.seconds) + " plans/s";
    }
    if (p.fractionDone > 0 && p.fractionDone < 1) {
      const double eta = p.seconds * (1 - p.fractionDone) / p.fractionDone;
      line += ", ETA " + std::to_string(static_cast<long long>(std::ceil(eta))) + "s";
    }
    err_ << "\r" << line << "\033[K" << std::flush;
  }

  void clear() {
    if (shown_) {
      err_ << "\r\033[K" << std::flush;
      shown_ = false;
    }
  }

private:
  std::ostream& err_;
  std::chrono::steady_clock::time_point last_{};
  bool shown_ = false;
};

} // namespace

int optimizeCommand(const OptimizeConfig& config, std::ostream& out, std::ostream& err) {
  // Flags first: a usage error never waits for a search.
  const std::optional<SelectPolicy> policy = parseSelectPolicy(config.select);
  if (!policy) {
    throw UsageError("--select: expected fastest, smallest, knee or time, got \"" + config.select +
                     "\"");
  }
  std::optional<std::int64_t> memoryCap;
  if (config.memoryCap) {
    try {
      memoryCap = cost::parseSize(*config.memoryCap);
    } catch (const Error& e) {
      throw UsageError("--memory-cap: " + e.message());
    }
    if (*memoryCap <= 0) {
      throw UsageError("--memory-cap: must be greater than 0, got \"" + *config.memoryCap + "\"");
    }
  }
  if (*policy == SelectPolicy::Time && !memoryCap) {
    throw UsageError("--select time needs --memory-cap (the fastest plan under that cap)");
  }
  if (config.threads < 1) {
    throw UsageError("--threads: expected at least 1, got " + std::to_string(config.threads));
  }
  const bool distributed = config.islands && config.islands->size() > 1;
  if (distributed && config.exhaustive) {
    throw UsageError("--exhaustive runs in one process; run it without mpirun");
  }
  if (config.exchangeEvery < 1) {
    throw UsageError("--exchange-every: expected at least 1, got " +
                     std::to_string(config.exchangeEvery));
  }
  if (config.exhaustive && (config.iterations || config.budgetSeconds)) {
    throw UsageError("--exhaustive evaluates every plan; it takes no --iterations or "
                     "--budget-seconds");
  }
  plan::PlanOptions planOptions;
  if (config.inputsOn == "free") {
    planOptions.inputsOn = plan::InputsOn::Free;
  } else if (config.inputsOn != "host") {
    throw UsageError("--inputs-on: expected host or free, got \"" + config.inputsOn + "\"");
  }
  checkWritable(config.outputPath);
  checkWritable(config.frontPath);

  metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::load(config.kernelPaths);
  graph::ExpandedGraph graph = graph::loadAndExpand(config.graphPath, library);
  cost::Target target = cost::loadTarget(config.target);

  ChoiceScorer evaluator(graph, target, planOptions);
  SearchResult result;
  ProgressLine progress(err);
  if (config.exhaustive) {
    result = runExhaustive(evaluator, config.threads);
  } else {
    SearchOptions options;
    options.seed = config.seed;
    options.generations = config.iterations.value_or(0);
    options.budgetSeconds = config.budgetSeconds.value_or(0);
    options.threads = config.threads;
    options.stop = config.stop;
    const std::int64_t generations = options.generations > 0
                                         ? options.generations
                                         : (options.budgetSeconds > 0 ? 0 : kDefaultGenerations);
    if (config.progress) {
      options.onGeneration = [&](const SearchProgress& p) { progress.update(p, generations); };
    }
    result = distributed ? runIslandSearch(evaluator, options, IslandOptions{config.exchangeEvery},
                                           *config.islands)
                         : runSearch(evaluator, options);
  }
  progress.clear();
  if (distributed && config.islands->rank() != 0) {
    return 0; // every island holds the merged front; rank 0 writes and reports it
  }

  if (result.front.empty()) {
    std::int64_t least = result.leastPeakMemory;
    for (const BaselineResult& b : result.baselines) {
      if (b.objectives && (least == 0 || b.objectives->peakMemoryBytes < least)) {
        least = b.objectives->peakMemoryBytes;
      }
    }
    throw Error("no plan of " + graph.name + " fits in the memory of " + target.name +
                "'s devices (" + cost::formatSize(target.devices.memory) + " each)" +
                (least > 0 ? "; the smallest plan found needs " + cost::formatSize(least) : ""));
  }
  const std::size_t selected = selectPlan(result.front, *policy, memoryCap);

  // The selected plan, rebuilt in full with its schedule.
  const Evaluated& chosen = result.front[selected];
  plan::ShardPlan plan =
      plan::buildPlan(evaluator.context(), target.deviceCount(), chosen.choice, planOptions);
  cost::Simulation simulation = cost::simulate(graph, target, plan);
  writeFileAtomically(config.outputPath, plan::writePlan(graph, target, plan, simulation, &library),
                      out);
  FrontInfo info;
  info.selected = selected;
  info.policy = *policy;
  info.exhaustive = config.exhaustive;
  info.seed = config.seed;
  info.threads = config.threads;
  if (distributed) {
    info.ranks = config.islands->size();
    info.exchangeEvery = config.exchangeEvery;
  }
  if (!config.frontPath.empty()) {
    Json front = frontToJson(graph, target, result, info);
    writeFileAtomically(config.frontPath, json::format(front, graph::kExpandedWidth) + "\n", out);
  }

  const bool planOnStdout = config.outputPath == "-";
  if (config.json && !planOnStdout) {
    Json summary = Json::object();
    summary["status"] = result.stopped ? "interrupted" : "ok";
    summary["graph"] = graph.name;
    summary["target"] = target.name;
    summary["devices"] = target.deviceCount();
    summary["front_size"] = result.front.size();
    Json sel = Json::object();
    sel["index"] = selected;
    sel["policy"] = selectPolicyName(*policy);
    sel["objectives"] = plan::objectivesToJson(chosen.objectives);
    summary["selected"] = std::move(sel);
    summary["baselines"] = baselinesToJson(result.baselines);
    summary["search"] = searchToJson(result, info);
    summary["output"] = config.outputPath;
    if (!config.frontPath.empty()) {
      summary["front"] = config.frontPath;
    }
    out << summary.dump(2) << "\n";
  } else if (!config.quiet && !config.json) {
    // With the plan on stdout the summary goes to stderr, as for any log.
    std::ostream& to = planOnStdout ? err : out;
    to << graph.name << " on " << target.name << " (" << target.deviceCount()
       << " devices): " << result.front.size() << " plan" << (result.front.size() == 1 ? "" : "s")
       << " on the front";
    if (config.exhaustive) {
      to << " (exhaustive, " << result.evaluations << " plans)";
    } else {
      to << " after " << result.iterations << " iterations (" << result.evaluations << " plans"
         << (distributed ? ", " + std::to_string(config.islands->size()) + " islands" : "")
         << (result.stopped ? ", interrupted" : "") << ")";
    }
    to << "\n";
    to << "  " << padded(std::string("selected (") + selectPolicyName(*policy) + ")", 20)
       << objectivesText(chosen.objectives) << "\n";
    for (const BaselineResult& b : result.baselines) {
      to << "  " << padded(b.baseline.name, 20)
         << (b.objectives ? objectivesText(*b.objectives) : std::string("not a valid plan"))
         << (b.objectives && !b.objectives->feasible ? " (over memory)" : "") << "\n";
    }
    if (config.verbose) {
      for (std::size_t i = 0; i < result.front.size(); ++i) {
        to << "  front " << padded(std::to_string(i), 14)
           << objectivesText(result.front[i].objectives) << "\n";
      }
      to << "  searched in " << cost::formatTime(result.seconds) << ", "
         << rateText(static_cast<double>(result.evaluations) / std::max(result.seconds, 1e-9))
         << " plans/s\n";
    }
    if (!planOnStdout) {
      to << "  -> " << config.outputPath;
      if (!config.frontPath.empty()) {
        to << ", front -> " << config.frontPath;
      }
      to << "\n";
    }
  }
  if (result.stopped) {
    // SIGINT/SIGTERM (or another stop request): what was found is written, and
    // the exit code says the search did not run its course.
    err << "tapestry: interrupted after " << result.iterations
        << " iterations; wrote the best front found so far\n";
    return static_cast<int>(ExitCode::Interrupted);
  }
  return 0;
}

} // namespace tapestry::driver
