#include "core/driver/optimize_command.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include <unistd.h>

#include "core/cost/busiest.hpp"
#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/error.hpp"
#include "core/driver/rewrite_pass.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/json/layout.hpp"
#include "core/metakernel/library.hpp"
#include "core/rewrite/apply.hpp"
#include "core/search/exhaustive.hpp"
#include "core/search/front_file.hpp"
#include "core/search/island.hpp"
#include "core/search/search.hpp"
#include "core/search/select.hpp"

namespace tapestry::driver {

using namespace tapestry::search;

namespace {

std::string objectivesText(const cost::Objectives& o) {
  return cost::formatTime(o.timeS) + ", peak " + cost::formatSize(o.peakMemoryBytes) + ", moved " +
         cost::formatSize(o.transferBytes);
}

bool hasConstantInputs(const graph::ExpandedGraph& g) {
  return std::any_of(g.tensors.begin(), g.tensors.end(),
                     [](const graph::Tensor& t) { return t.isGraphInput() && t.constant; });
}

std::string percent(double share) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%.0f%%", share * 100);
  return buffer;
}

// "device 0 busy 71% of the time (55 shards); link host -> 0 busy 98% (60
// transfers, 23.13MiB)"
std::string busiestText(const cost::Busiest& b) {
  std::string text = b.device < 0 ? std::string("no device runs a shard")
                                  : "device " + std::to_string(b.device) + " busy " +
                                        percent(b.deviceShare()) + " of the time (" +
                                        std::to_string(b.deviceShards) + " shards)";
  if (b.linkTo >= 0) {
    text += "; link " + plan::placeName(b.linkFrom) + " -> " + plan::placeName(b.linkTo) +
            " busy " + percent(b.linkShare()) + " (" + std::to_string(b.linkTransfers) +
            " transfer" + (b.linkTransfers == 1 ? "" : "s") + ", " + cost::formatSize(b.linkBytes) +
            ")";
  }
  return text;
}

Json busiestToJson(const cost::Busiest& b) {
  Json out = Json::object();
  if (b.device >= 0) {
    Json device = Json::object();
    device["index"] = b.device;
    device["busy_s"] = b.deviceSeconds;
    device["share"] = b.deviceShare();
    device["shards"] = b.deviceShards;
    out["device"] = std::move(device);
  } else {
    out["device"] = nullptr;
  }
  if (b.linkTo >= 0) {
    Json link = Json::object();
    link["from"] = b.linkFrom == plan::kHost ? Json("host") : Json(b.linkFrom);
    link["to"] = b.linkTo;
    link["busy_s"] = b.linkSeconds;
    link["share"] = b.linkShare();
    link["transfers"] = b.linkTransfers;
    link["bytes"] = b.linkBytes;
    out["link"] = std::move(link);
  } else {
    out["link"] = nullptr;
  }
  return out;
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

// The flags, checked before anything is read: a usage error never waits for a
// search.
struct CheckedFlags {
  SelectPolicy policy = SelectPolicy::Fastest;
  std::optional<std::int64_t> memoryCap;
  plan::PlanOptions planOptions;
  bool distributed = false; // under mpirun with more than one island
};

CheckedFlags checkFlags(const OptimizeConfig& config) {
  CheckedFlags flags;
  const std::optional<SelectPolicy> policy = parseSelectPolicy(config.select);
  if (!policy) {
    throw UsageError("--select: expected fastest, smallest, knee or time, got \"" + config.select +
                     "\"");
  }
  flags.policy = *policy;
  if (config.memoryCap) {
    try {
      flags.memoryCap = cost::parseSize(*config.memoryCap);
    } catch (const Error& e) {
      throw UsageError("--memory-cap: " + e.message());
    }
    if (*flags.memoryCap <= 0) {
      throw UsageError("--memory-cap: must be greater than 0, got \"" + *config.memoryCap + "\"");
    }
  }
  if (!config.baseline.empty() && config.baseline != "single" &&
      config.baseline != "data_parallel" && config.baseline != "tensor_parallel") {
    throw UsageError("--baseline: expected single, data_parallel or tensor_parallel, got \"" +
                     config.baseline + "\"");
  }
  if (flags.policy == SelectPolicy::Time && !flags.memoryCap) {
    throw UsageError("--select time needs --memory-cap (the fastest plan under that cap)");
  }
  if (config.threads < 1) {
    throw UsageError("--threads: expected at least 1, got " + std::to_string(config.threads));
  }
  flags.distributed = config.islands && config.islands->size() > 1;
  if (flags.distributed && config.exhaustive) {
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
  if (const std::optional<plan::InputsOn> mode = plan::inputsOnFromName(config.inputsOn)) {
    flags.planOptions.inputsOn = *mode;
  } else {
    throw UsageError("--inputs-on: expected host, free or constants, got \"" + config.inputsOn +
                     "\"");
  }
  checkWritable(config.outputPath);
  checkWritable(config.frontPath);
  return flags;
}

// The exhaustive enumeration, the stochastic search, or this process's island
// of the distributed one; with a progress line when asked.
SearchResult searchPlans(const ChoiceScorer& evaluator, const OptimizeConfig& config,
                         const CheckedFlags& flags, std::ostream& err) {
  ProgressLine progress(err);
  SearchResult result;
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
    result = flags.distributed
                 ? runIslandSearch(evaluator, options, IslandOptions{config.exchangeEvery},
                                   *config.islands)
                 : runSearch(evaluator, options);
  }
  progress.clear();
  return result;
}

// The error for a search that found no plan that fits, with the least memory
// any plan needed.
[[noreturn]] void throwNothingFits(const graph::ExpandedGraph& graph, const cost::Target& target,
                                   const SearchResult& result) {
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

// Whether some plan on the front that uses more than one device is predicted
// faster than the single-device baseline (SPEC §7: the search must say so when
// sharding does not pay, and --select fastest then picks one device).
bool shardingPays(const SearchResult& result) {
  for (const BaselineResult& b : result.baselines) {
    if (b.baseline.name == "single" && b.objectives && b.objectives->feasible) {
      for (const Evaluated& e : result.front) {
        if (devicesOf(e.choice) > 1 && e.objectives.timeS < b.objectives->timeS) {
          return true;
        }
      }
      return false;
    }
  }
  return true; // no feasible single-device plan: sharding is the only way
}

// The plan choice --baseline names (Error when the graph has none that is valid).
const plan::PlanChoice& baselineChoice(const SearchResult& result, const std::string& name,
                                       const graph::ExpandedGraph& graph) {
  for (const BaselineResult& b : result.baselines) {
    if (b.baseline.name == name) {
      if (!b.objectives) {
        throw Error("--baseline " + name + ": the " + name + " baseline is not a valid plan of " +
                    graph.name);
      }
      return b.baseline.choice;
    }
  }
  throw Error("--baseline " + name + ": " + graph.name + " has no " + name +
              " baseline (tensor_parallel needs a linear or matmul)");
}

// What the summaries report: the graph, target, result and selection.
struct Outcome {
  const graph::ExpandedGraph& graph;
  const cost::Target& target;
  const SearchResult& result;
  const FrontInfo& info;
  const Evaluated& chosen;
  bool local = false;      // --target local
  std::string calibration; // the saved calibration `local` came from, "" for none
  OneDeviceRule oneDevice; // whether one device was selected for a small gain
  std::string written;     // the baseline written instead of the selected plan, or ""
  std::vector<rewrite::AppliedSite> rewrites; // the sites of every graph searched
  std::vector<std::string> searchRules;       // the rules that were choices of the search
  std::vector<std::size_t> searchGroups;      // per search rule, its site groups
  std::size_t variants = 1;                   // graphs searched
  std::size_t writtenSites = 0;               // of `rewrites`, the written plan's
  cost::Busiest busiest;                      // of the selected plan
  bool inputsFromHost = false;                // --inputs-on host
  bool constantInputs = false;                // the graph has constant inputs
};

// "one device selected: the fastest plan on 2 devices is predicted 1.08x faster
// than one device, within this machine's calibrated spread (15%)".
std::string oneDeviceNote(const Outcome& o) {
  const OneDeviceRule& r = o.oneDevice;
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << "one device selected: the fastest plan is predicted "
    << r.gain << "x faster than one device, within the calibrated spread of predicted speedups ("
    << std::setprecision(0) << r.spread * 100 << "%)";
  return s.str();
}

// The --format json summary (when the plan goes to a file).
void printJsonSummary(const OptimizeConfig& config, const Outcome& o, std::ostream& out) {
  Json summary = Json::object();
  summary["status"] = o.result.stopped ? "interrupted" : "ok";
  summary["graph"] = o.graph.name;
  summary["target"] = o.target.name;
  summary["devices"] = o.target.deviceCount();
  summary["calibrated"] = o.target.profile.has_value();
  if (o.local) {
    summary["calibration"] = o.calibration.empty() ? Json(nullptr) : Json(o.calibration);
  }
  summary["front_size"] = o.result.front.size();
  if (config.rewrites != "none") {
    summary["rewrites"] = rewritesJson(o.rewrites);
    Json searched = Json::object();
    searched["rules"] = o.searchRules;
    searched["site_groups"] = o.searchGroups;
    searched["graphs"] = o.variants;
    searched["written_sites"] = o.writtenSites;
    summary["rewrite_search"] = std::move(searched);
  }
  Json sel = Json::object();
  sel["index"] = o.info.selected;
  sel["policy"] = selectPolicyName(o.info.policy);
  sel["objectives"] = cost::objectivesToJson(o.chosen.objectives);
  sel["busiest"] = busiestToJson(o.busiest);
  summary["selected"] = std::move(sel);
  summary["baselines"] = baselinesToJson(o.result.baselines);
  summary["sharding_pays"] = shardingPays(o.result);
  summary["written"] = o.written.empty() ? std::string("selected") : o.written;
  // The spread the gain was weighed against (by the graph's size), else the profile's.
  const double spread = o.oneDevice.spread > 0 ? o.oneDevice.spread
                                               : (o.target.profile ? o.target.profile->spread : 0);
  if (spread > 0) {
    Json rule = Json::object();
    rule["applied"] = o.oneDevice.applies;
    rule["spread"] = spread;
    if (o.oneDevice.gain > 0) {
      rule["gain"] = o.oneDevice.gain;
    }
    summary["one_device_rule"] = std::move(rule);
  }
  summary["search"] = searchToJson(o.result, o.info);
  summary["output"] = config.outputPath;
  if (!config.frontPath.empty()) {
    summary["front"] = config.frontPath;
  }
  out << summary.dump(2) << "\n";
}

// The text summary: the front's size, the selected plan and the baselines.
void printTextSummary(const OptimizeConfig& config, const Outcome& o, std::ostream& to) {
  const SearchResult& result = o.result;
  to << o.graph.name << " on " << o.target.name << " (" << o.target.deviceCount()
     << " devices): " << result.front.size() << " plan" << (result.front.size() == 1 ? "" : "s")
     << " on the front";
  if (config.exhaustive) {
    to << " (exhaustive, " << result.evaluations << " plans)";
  } else {
    to << " after " << result.iterations << " iterations (" << result.evaluations << " plans"
       << (o.info.ranks > 1 ? ", " + std::to_string(o.info.ranks) + " islands" : "")
       << (result.stopped ? ", interrupted" : "") << ")";
  }
  to << "\n";
  if (!o.rewrites.empty()) {
    to << "  " << rewritesText(o.rewrites) << "\n";
  }
  if (!o.searchRules.empty()) {
    std::string rules;
    for (std::size_t i = 0; i < o.searchRules.size(); ++i) {
      const std::size_t groups = i < o.searchGroups.size() ? o.searchGroups[i] : 1;
      rules += (rules.empty() ? "" : ", ") + o.searchRules[i] +
               (groups > 1 ? " in " + std::to_string(groups) + " site groups" : "");
    }
    to << "  searched with and without " << rules << " (" << o.variants
       << " graphs); the written plan rewrote " << o.writtenSites << " of the " << o.rewrites.size()
       << " sites\n";
  }
  if (o.local) {
    if (o.calibration.empty()) {
      to << "  target local: roofline figures, not measured (run `tapestry calibrate` to measure "
            "this machine)\n";
    } else {
      to << "  target local: this machine's calibration (" << o.calibration << ")\n";
    }
  }
  to << "  " << padded(std::string("selected (") + selectPolicyName(o.info.policy) + ")", 20)
     << objectivesText(o.chosen.objectives) << "\n";
  to << "  " << padded("busiest", 20) << busiestText(o.busiest) << "\n";
  if (o.inputsFromHost && o.busiest.linkFrom == plan::kHost && o.busiest.linkTo >= 0 &&
      o.busiest.linkSeconds > o.busiest.deviceSeconds) {
    to << "  " << padded("", 20) << "(it waits on graph inputs sent from the host on every run; "
       << (o.constantInputs ? "--inputs-on constants keeps the constant ones (weights) on the "
                              "devices)\n"
                            : "--inputs-on free prices them as resident on the devices)\n");
  }
  for (const BaselineResult& b : result.baselines) {
    to << "  " << padded(b.baseline.name, 20)
       << (b.objectives ? objectivesText(*b.objectives) : std::string("not a valid plan"))
       << (b.objectives && !b.objectives->feasible ? " (over memory)" : "") << "\n";
  }
  if (o.oneDevice.applies) {
    to << "  " << oneDeviceNote(o) << "\n";
  }
  if (!shardingPays(result)) {
    to << "  no plan on more than one device is predicted to beat one device on " << o.target.name
       << "\n";
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
  if (!config.baseline.empty()) {
    to << "  written: the " << config.baseline << " baseline, not the selected plan\n";
  } else if (!o.written.empty()) {
    to << "  written: the " << o.written << " baseline (the front has no plan on one device)\n";
  }
  if (config.outputPath != "-") {
    to << "  -> " << config.outputPath;
    if (!config.frontPath.empty()) {
      to << ", front -> " << config.frontPath;
    }
    to << "\n";
  }
}

} // namespace

namespace {

// What the front file and the summary say of the search besides its plans.
void describeSearch(FrontInfo& info, const RewriteVariants& variants, const OptimizeConfig& config,
                    const CheckedFlags& flags) {
  info.policy = flags.policy;
  info.rewrites = rewritesJson(variants.allSites);
  for (const graph::ExpandedGraph& g : variants.graphs) {
    info.graphs.push_back(&g);
  }
  info.variantSites = variants.siteIndices;
  info.exhaustive = config.exhaustive;
  info.relays = !flags.planOptions.relayGroups.empty();
  info.seed = config.seed;
  info.threads = config.threads;
  if (flags.distributed) {
    info.ranks = config.islands->size();
    info.exchangeEvery = config.exchangeEvery;
  }
}

// Where a choice's plan spends its time, the plan built and simulated anew.
cost::Busiest busiestOf(const ChoiceScorer& evaluator, const graph::ExpandedGraph& graph,
                        const cost::Target& target, const plan::PlanChoice& choice,
                        const plan::PlanOptions& options) {
  const plan::ShardPlan p =
      plan::buildPlan(evaluator.context(choice.variant), target.deviceCount(), choice, options);
  return cost::busiest(p, cost::simulate(graph, target, p));
}

} // namespace

// The graph's predicted time on one device by kernel family (Profile::spreadFor).
std::map<std::string, double, std::less<>> timeByFamily(const graph::ExpandedGraph& g,
                                                        const cost::Target& target) {
  const cost::Simulation single = cost::simulate(
      g, target, plan::buildPlan(g, target.deviceCount(), plan::singleDeviceChoice(g)));
  std::map<std::string, double, std::less<>> out;
  for (std::size_t op = 0; op < g.operations.size(); ++op) {
    const cost::KernelFamily* family = cost::familyOfKernel(g.operations[op].kernel);
    double& seconds = out[family != nullptr ? std::string(family->name) : std::string()];
    for (const cost::Interval& shard : single.shards[op]) {
      seconds += shard.end - shard.start;
    }
  }
  return out;
}

int optimizeCommand(const OptimizeConfig& config, std::ostream& out, std::ostream& err) {
  CheckedFlags flags = checkFlags(config);
  metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::load(config.kernelPaths);
  const graph::ExpandedGraph given = graph::loadAndExpand(config.graphPath, library);
  // The graphs searched: the pre-pass's, and one per subset of the rules that
  // are choices of the search (one graph, as given, with --rewrites none).
  const RewriteVariants variants =
      rewriteVariants(given, config.rewrites, config.rulePaths, library, config.approximate);
  std::string calibration; // --target local: the saved calibration used, if any
  cost::Target target;
  if (config.target == "local") {
    cost::LocalTarget local = cost::loadLocalTarget();
    target = std::move(local.target);
    calibration = std::move(local.calibration);
  } else {
    target = cost::loadTarget(config.target);
  }

  flags.planOptions.relayGroups = cost::relayGroups(target);
  ChoiceScorer evaluator(variants.links(), target, flags.planOptions);
  const SearchResult result = searchPlans(evaluator, config, flags, err);
  if (flags.distributed && config.islands->rank() != 0) {
    return 0; // every island holds the merged front; rank 0 writes and reports it
  }
  if (result.front.empty()) {
    throwNothingFits(variants.graphs[variants.full()], target, result);
  }
  FrontInfo info;
  info.selected = selectPlan(result.front, flags.policy, flags.memoryCap);
  // A small predicted gain is no gain at all when the prediction is not that
  // good: one device then, with a calibrated spread (cost::Profile::spread).
  OneDeviceRule oneDevice;
  if (flags.policy == SelectPolicy::Fastest && config.baseline.empty() && target.profile) {
    for (const BaselineResult& b : result.baselines) {
      if (b.baseline.name == "single" && b.objectives && b.objectives->feasible) {
        const double single = b.objectives->timeS;
        oneDevice =
            oneDeviceRule(result.front, info.selected, single,
                          target.profile->spreadFor(
                              timeByFamily(variants.graphs[variants.full()], target), single));
      }
    }
  }
  if (oneDevice.applies && oneDevice.index) {
    info.selected = *oneDevice.index;
  }
  describeSearch(info, variants, config, flags);

  // The selected plan, rebuilt in full with its schedule on its variant's
  // graph, then the front.
  const Evaluated& chosen = result.front[info.selected];
  const std::string writtenBaseline =
      oneDevice.applies && !oneDevice.index ? std::string("single") : config.baseline;
  const plan::PlanChoice& written =
      writtenBaseline.empty()
          ? chosen.choice
          : baselineChoice(result, writtenBaseline, variants.graphs[variants.full()]);
  const graph::ExpandedGraph& graph = variants.graphs[written.variant];
  std::optional<plan::PlanOrigin> origin;
  if (!variants.sites[written.variant].empty()) {
    origin = plan::PlanOrigin{given, rewritesJson(variants.sites[written.variant])};
  }
  plan::ShardPlan plan = plan::buildPlan(evaluator.context(written.variant), target.deviceCount(),
                                         written, flags.planOptions);
  cost::Simulation simulation = cost::simulate(graph, target, plan);
  // Where the selected plan's time goes (the written one's, unless a baseline
  // was written instead).
  const cost::Busiest busiest = writtenBaseline.empty()
                                    ? cost::busiest(plan, simulation)
                                    : busiestOf(evaluator, variants.graphs[chosen.choice.variant],
                                                target, chosen.choice, flags.planOptions);
  writeFileAtomically(
      config.outputPath,
      plan::writePlan(graph, target, plan, simulation, &library, origin ? &*origin : nullptr), out);
  if (!config.frontPath.empty()) {
    Json front = frontToJson(graph, target, result, info);
    writeFileAtomically(config.frontPath, json::format(front, graph::kExpandedWidth) + "\n", out);
  }

  const Outcome outcome{graph,
                        target,
                        result,
                        info,
                        chosen,
                        config.target == "local",
                        calibration,
                        oneDevice,
                        writtenBaseline,
                        variants.allSites,
                        variants.searchRules,
                        variants.groups,
                        variants.graphs.size(),
                        variants.siteIndices[written.variant].size(),
                        busiest,
                        flags.planOptions.inputsOn == plan::InputsOn::Host,
                        hasConstantInputs(graph)};
  const bool planOnStdout = config.outputPath == "-";
  if (config.json && !planOnStdout) {
    printJsonSummary(config, outcome, out);
  } else if (!config.quiet && !config.json) {
    // With the plan on stdout the summary goes to stderr, as for any log.
    printTextSummary(config, outcome, planOnStdout ? err : out);
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
