// The plan/v1 writer and the validating loader.
#include "core/cost/plan_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cost/front_file.hpp"
#include "core/diag/error.hpp"
#include "core/diag/source.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/json/layout.hpp"
#include "core/zspace/zspace_json.hpp"

namespace tapestry::plan {

namespace {

void append(Json& object, std::string key, Json value) {
  json::appendMember(object, std::move(key), std::move(value));
}

Json placeJson(int place) {
  return place == kHost ? Json("host") : Json(place);
}

Json interval(Json entry, const cost::Interval& i) {
  append(entry, "start", i.start);
  append(entry, "end", i.end);
  return entry;
}

} // namespace

Json scheduleToJson(const graph::ExpandedGraph& g, const ShardPlan& p, const cost::Simulation& s) {
  struct Entry {
    double start;
    Json json;
  };
  std::vector<Entry> entries;
  entries.reserve(p.shardCount() + p.transfers.size() + p.reductions.size());
  auto transfer = [&](std::size_t i) {
    const Transfer& t = p.transfers[i];
    Json e = Json::object();
    append(e, "kind", "transfer");
    append(e, "transfer", i);
    append(e, "tensor", g.tensors[t.tensor].name);
    append(e, "from", placeJson(t.from));
    append(e, "to", t.to);
    entries.push_back(Entry{s.transfers[i].start, interval(std::move(e), s.transfers[i])});
  };
  // Submission order (see simulator.hpp), then stably by start time.
  for (std::size_t opIndex : g.order) {
    const OpPlan& op = p.ops[opIndex];
    for (std::size_t i = op.inputTransfers.first; i < op.inputTransfers.second; ++i) {
      transfer(i);
    }
    for (std::size_t k = 0; k < op.shards.size(); ++k) {
      Json e = Json::object();
      append(e, "kind", "shard");
      append(e, "op", g.operations[opIndex].name);
      append(e, "shard", k);
      append(e, "device", op.shards[k].device);
      entries.push_back(
          Entry{s.shards[opIndex][k].start, interval(std::move(e), s.shards[opIndex][k])});
    }
    for (std::size_t r = op.reductions.first; r < op.reductions.second; ++r) {
      for (const Reduction::Step& step : p.reductions[r].steps) {
        if (step.transfer) {
          transfer(*step.transfer);
        }
      }
      const Reduction& red = p.reductions[r];
      Json e = Json::object();
      append(e, "kind", "reduction");
      append(e, "reduction", r);
      append(e, "op", g.operations[red.op].name);
      append(e, "tensor", g.tensors[red.tensor].name);
      append(e, "device", red.device);
      entries.push_back(Entry{s.reductions[r].start, interval(std::move(e), s.reductions[r])});
    }
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.start < b.start; });
  Json out = Json::array();
  for (Entry& e : entries) {
    out.push_back(std::move(e.json));
  }
  return out;
}

Json embeddedKernelsToJson(const graph::ExpandedGraph& g,
                           const metakernel::MetakernelLibrary& library) {
  Json out = Json::object();
  for (const graph::Operation& op : g.operations) {
    const metakernel::Metakernel* k = library.find(op.kernel);
    if (k == nullptr || metakernel::isStandardLibraryFile(k->location.file) ||
        out.contains(op.kernel)) {
      continue;
    }
    Json entry = Json::object();
    append(entry, "file", k->location.file);
    append(entry, "source", k->sourceText);
    append(out, op.kernel, std::move(entry));
  }
  return out;
}

Json planToJson(const graph::ExpandedGraph& g, const cost::Target& t, const ShardPlan& p,
                const cost::Simulation& s, const metakernel::MetakernelLibrary* library,
                const PlanOrigin* origin) {
  Json out = Json::object();
  append(out, "tapestry", "plan/v1");
  if (library != nullptr) {
    Json kernels = embeddedKernelsToJson(g, *library);
    if (origin != nullptr) { // the original graph's -k kernels too (a rewrite may drop one)
      const Json more = embeddedKernelsToJson(origin->graph, *library);
      for (const auto& [name, entry] : more.items()) {
        if (!kernels.contains(name)) {
          append(kernels, name, entry);
        }
      }
    }
    if (!kernels.empty()) {
      append(out, "kernels", std::move(kernels));
    }
  }
  append(out, "graph", graph::toJson(g));
  if (origin != nullptr) {
    Json rewrites = Json::object();
    append(rewrites, "original", graph::toJson(origin->graph));
    append(rewrites, "sites", origin->sites);
    append(out, "rewrites", std::move(rewrites));
  }
  append(out, "target", cost::toJson(t));
  Json options = Json::object();
  append(options, "inputs_on", inputsOnName(p.options.inputsOn));
  if (!p.options.relayGroups.empty()) {
    append(options, "relay_groups", p.options.relayGroups);
  }
  append(out, "options", std::move(options));
  append(out, "operations", operationsToJson(g, p));
  append(out, "reductions", reductionsToJson(g, p));
  append(out, "transfers", transfersToJson(g, p));
  append(out, "schedule", scheduleToJson(g, p, s));
  Json objectives = cost::objectivesToJson(s.objectives);
  append(objectives, "peak_memory_per_device", s.peakPerDevice);
  append(out, "objectives", std::move(objectives));
  return out;
}

std::string writePlan(const graph::ExpandedGraph& g, const cost::Target& t, const ShardPlan& p,
                      const cost::Simulation& s, const metakernel::MetakernelLibrary* library,
                      const PlanOrigin* origin) {
  return json::format(planToJson(g, t, p, s, library, origin), graph::kExpandedWidth);
}

// ---------------------------------------------------------------- loading

namespace {

// What a ZRange-valued key holds, for messages.
struct RangeRole {
  const char* stored;   // "selection"
  const char* expected; // "the IPF projection"
};

std::optional<RangeRole> rangeRole(const std::string& key, const std::string& section) {
  if (key == "range") {
    return RangeRole{"selection", "the IPF projection"};
  }
  if (key == "index") {
    return RangeRole{"shard index", "the split's tile"};
  }
  if (key == "region") {
    return RangeRole{section == "reductions" ? "reduction region" : "transfer region",
                     "the rebuilt plan's"};
  }
  return std::nullopt;
}

// The note of a plan whose predictions differ from this version's simulation.
constexpr const char* kStalePredictions =
    "the plan's predicted times and memory are not what this version of tapestry's cost model "
    "predicts for it (a plan saved by another version, or edited); this version's predictions "
    "are used, and `optimize` again chooses a plan under them";

bool closeEnough(double a, double b) {
  if (a == b) {
    return true;
  }
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

// Compares a stored value with the rebuilt one and fails at the first
// difference, located at the stored value. With `predictions`, a number that
// differs where `prediction(key)` holds is no error: the first such difference
// is kept there (as a warning's diagnostic) and the comparison goes on.
class Comparer {
public:
  using IsPrediction = bool (*)(const std::string& key);
  explicit Comparer(std::string section, std::optional<Diagnostic>* predictions = nullptr,
                    IsPrediction prediction = nullptr)
      : section_(std::move(section)), predictions_(predictions), prediction_(prediction) {}

  void compare(const Json& expected, const json::Value& stored, const std::string& key) {
    if (auto role = rangeRole(key, section_); role && expected.is_object()) {
      const ZRange want = decodeZRange(json::Value(expected));
      const ZRange got = decodeZRange(stored);
      if (got != want) {
        stored.fail(std::string(role->stored) + " " + got.toString() + " does not match " +
                    role->expected + " " + want.toString());
      }
      return;
    }
    if (expected.is_object()) {
      stored.expectObject();
      for (const auto& [name, value] : stored.members()) {
        if (!expected.contains(name)) {
          stored.fail("unknown key " + json::brief(Json(name)) + " (the rebuilt plan has " +
                      keysOf(expected) + ")");
        }
      }
      for (const auto& [name, value] : expected.items()) {
        compare(value, stored.member(name), name);
      }
      return;
    }
    if (expected.is_array()) {
      stored.expectArray();
      if (stored.size() != expected.size()) {
        stored.fail("expected " + std::to_string(expected.size()) + " entries (as rebuilt), got " +
                    std::to_string(stored.size()));
      }
      for (std::size_t i = 0; i < expected.size(); ++i) {
        compare(expected[i], stored.at(i), key);
      }
      return;
    }
    if (expected.is_number_float()) {
      if (!stored.isNumber() || !closeEnough(stored.asDouble(), expected.get<double>())) {
        differs(expected, stored, key, "simulated");
      }
      return;
    }
    if (stored.json() != expected) {
      differs(expected, stored, key, "rebuilt");
    }
  }

private:
  // `source` names where `expected` came from; a prediction's is the simulation.
  void differs(const Json& expected, const json::Value& stored, const std::string& key,
               const char* source) {
    const bool predicted = predictions_ != nullptr && prediction_(key);
    const std::string message = describe(key) + json::brief(stored.json()) +
                                " does not match the " + (predicted ? "simulated" : source) + " " +
                                json::brief(expected);
    const bool sameKind = (stored.isNumber() && expected.is_number()) ||
                          (stored.json().is_boolean() && expected.is_boolean());
    if (!predicted || !sameKind) {
      stored.fail(message);
    }
    if (!*predictions_) {
      Diagnostic d = stored.error(message).diagnostic();
      d.severity = Severity::Warning;
      *predictions_ = std::move(d);
    }
  }

  static std::string keysOf(const Json& object) {
    std::string out;
    for (const auto& [name, value] : object.items()) {
      out += (out.empty() ? "" : ", ") + name;
    }
    return out.empty() ? "no keys" : out;
  }
  static std::string describe(const std::string& key) {
    return key.empty() ? "value " : "stored " + key + " ";
  }

  std::string section_;
  std::optional<Diagnostic>* predictions_;
  IsPrediction prediction_;
};

// A schedule entry's task: "shard:OP:K", "transfer:N" or "reduction:N".
std::string taskKey(const Json& entry) {
  const std::string kind = entry.value("kind", "");
  if (kind == "shard") {
    return "shard:" + entry.value("op", "") + ":" + entry["shard"].dump();
  }
  return kind + ":" + entry[kind].dump();
}

std::string taskKey(const json::Value& entry) {
  entry.expectObject();
  const std::string& kind = entry.member("kind").asString();
  if (kind == "shard") {
    return "shard:" + entry.member("op").asString() + ":" +
           std::to_string(entry.member("shard").asInt64());
  }
  if (kind != "transfer" && kind != "reduction") {
    entry.member("kind").fail("unknown kind " + json::brief(Json(kind)) +
                              " (expected \"shard\", \"transfer\" or \"reduction\")");
  }
  return kind + ":" + std::to_string(entry.member(kind).asInt64());
}

// The stored schedule against the simulated one: the same tasks (each
// shard, transfer and reduction once, with its devices; any order), and
// their start and end times as predictions (another version's cost model
// orders and times them differently).
void compareSchedule(const Json& simulated, const json::Value& stored,
                     std::optional<Diagnostic>& predictions) {
  stored.expectArray();
  if (stored.size() != simulated.size()) {
    stored.fail("expected " + std::to_string(simulated.size()) + " entries (one per task of the " +
                "rebuilt plan), got " + std::to_string(stored.size()));
  }
  std::unordered_map<std::string, std::size_t> index;
  index.reserve(simulated.size());
  for (std::size_t i = 0; i < simulated.size(); ++i) {
    index.emplace(taskKey(simulated[i]), i);
  }
  std::vector<char> seen(simulated.size(), 0);
  Comparer comparer("schedule", &predictions,
                    [](const std::string& key) { return key == "start" || key == "end"; });
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const json::Value entry = stored.at(i);
    const auto found = index.find(taskKey(entry));
    if (found == index.end()) {
      entry.fail("no such task in the rebuilt plan");
    }
    if (seen[found->second] != 0) {
      entry.fail("this task is scheduled twice");
    }
    seen[found->second] = 1;
    comparer.compare(simulated[found->second], entry, "");
    // Order is a prediction too (entries are sorted by start time).
    if (found->second != i && !predictions) {
      Diagnostic d = entry
                         .error("this task is entry " + std::to_string(found->second) +
                                " of the simulated schedule")
                         .diagnostic();
      d.severity = Severity::Warning;
      predictions = std::move(d);
    }
  }
}

std::vector<std::int64_t> decodeInts(const json::Value& v) {
  v.expectArray();
  std::vector<std::int64_t> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(v.at(i).asInt64());
  }
  return out;
}

PlanChoice decodeChoice(const graph::ExpandedGraph& g, const json::Value& operations) {
  operations.expectObject();
  for (const auto& [name, value] : operations.members()) {
    if (!g.findOperation(name)) {
      value.fail("unknown operation " + json::brief(Json(name)) + " (not in the plan's graph)");
    }
  }
  PlanChoice choice;
  choice.ops.reserve(g.operations.size());
  for (const graph::Operation& op : g.operations) {
    json::Value entry = operations.member(op.name);
    entry.expectObject();
    OpChoice c;
    c.split = decodeInts(entry.member("split"));
    for (std::int64_t d : decodeInts(entry.member("devices"))) {
      if (d < -1 || d > (1 << 30)) {
        entry.member("devices").fail("device " + std::to_string(d) + " is out of range");
      }
      c.devices.push_back(static_cast<int>(d));
    }
    choice.ops.push_back(std::move(c));
  }
  return choice;
}

// `library` plus the templates a plan embeds ("kernels": {NAME: {"file",
// "source"}}), which replace same-named ones: they are what the plan was made
// with. Each source is parsed as a file named PLAN#/kernels/NAME, so errors in
// it point into the embedded text, and must define NAME.
metakernel::MetakernelLibrary withEmbeddedKernels(const json::Value& kernels,
                                                  const metakernel::MetakernelLibrary& library) {
  kernels.expectObject();
  metakernel::MetakernelLibrary out = library;
  for (const auto& [name, entry] : kernels.members()) {
    entry.expectObject();
    entry.expectKeys({"file", "source"});
    // A relative extern library path resolves as it did when the plan was
    // made: against the directory of the template file the plan recorded.
    const std::string directory =
        std::filesystem::path(entry.member("file").asString()).parent_path().string();
    const json::Value source = entry.member("source");
    const SourceFile file(kernels.location().file + "#/kernels/" + name, source.asString());
    const std::vector<metakernel::Metakernel> defined =
        metakernel::loadMetakernels(file, directory.empty() ? "." : directory);
    // `wanted`, not `name`: clang 14 (C++17 rules) cannot capture a structured binding.
    const std::string& wanted = name;
    if (std::none_of(defined.begin(), defined.end(),
                     [&wanted](const metakernel::Metakernel& k) { return k.name == wanted; })) {
      source.fail("the embedded source does not define kernel " + json::brief(Json(name)));
    }
    out.addFile(file, true, directory.empty() ? "." : directory);
  }
  return out;
}

} // namespace

std::vector<std::string> PlanOrigin::approximateRules() const {
  std::vector<std::string> rules;
  for (const Json& site : sites) {
    const std::string& rule = site.at("rule").get_ref<const std::string&>();
    if (site.value("approximate", false) &&
        std::find(rules.begin(), rules.end(), rule) == rules.end()) {
      rules.push_back(rule);
    }
  }
  return rules;
}

namespace {

// "rewrites": the original graph (expanded again and checked like "graph")
// and the sites, each {"rule": NAME, "replaced": [NAME...], "added": [NAME...]},
// "approximate": true on a site of an approximate rule.
// Its costs, like the plan's graph's, may differ from this version's
// (`costWarnings`: graph::expand).
PlanOrigin decodeOrigin(const json::Value& rewrites, const metakernel::MetakernelLibrary& library,
                        std::vector<Diagnostic>& costWarnings) {
  rewrites.expectObject();
  rewrites.expectKeys({"original", "sites"});
  PlanOrigin origin;
  const graph::Graph original = graph::decodeGraph(rewrites.member("original"));
  origin.graph = graph::expand(original, library, &costWarnings);
  const json::Value sites = rewrites.member("sites");
  sites.expectArray();
  for (const json::Value& site : sites.elements()) {
    site.expectObject();
    site.expectKeys({"rule", "replaced", "added", "approximate"});
    site.member("rule").asString();
    if (const std::optional<json::Value> approximate = site.find("approximate")) {
      approximate->asBool();
    }
    for (const char* key : {"replaced", "added"}) {
      const json::Value names = site.member(key);
      names.expectArray();
      for (const json::Value& name : names.elements()) {
        name.asString();
      }
    }
  }
  origin.sites = sites.json();
  return origin;
}

// options.relay_groups: one group number per device of the target.
std::vector<int> decodeRelayGroups(const json::Value& groups, int devices) {
  groups.expectArray();
  if (groups.size() != static_cast<std::size_t>(devices)) {
    groups.fail("relay_groups has " + std::to_string(groups.size()) + " entries; the target has " +
                std::to_string(devices) + " devices (one group number per device)");
  }
  std::vector<int> out;
  for (std::size_t d = 0; d < groups.size(); ++d) {
    const json::Value v = groups.at(d);
    const std::int64_t group = v.asInt64();
    if (group < 0 || group >= devices) {
      v.fail("relay group " + std::to_string(group) + " of device " + std::to_string(d) +
             " is not in [0, " + std::to_string(devices) + ")");
    }
    out.push_back(static_cast<int>(group));
  }
  return out;
}

} // namespace

LoadedPlan decodePlan(const json::Value& root, const metakernel::MetakernelLibrary& library) {
  root.expectObject();
  json::Value tag = root.member("tapestry");
  if (tag.asString() != "plan/v1") {
    tag.fail("unknown format " + json::brief(tag.json()) + " (expected \"plan/v1\")");
  }
  root.expectKeys({"tapestry", "kernels", "graph", "rewrites", "target", "options", "operations",
                   "reductions", "transfers", "schedule", "objectives"});
  graph::Graph decoded = graph::decodeGraph(root.member("graph"));
  const std::optional<json::Value> kernels = root.find("kernels");
  const std::optional<metakernel::MetakernelLibrary> embedded =
      kernels ? std::optional(withEmbeddedKernels(*kernels, library)) : std::nullopt;
  const metakernel::MetakernelLibrary& used = embedded ? *embedded : library;
  // Kernel costs are predictions too: another version's are a warning.
  std::vector<Diagnostic> warnings;
  graph::ExpandedGraph g = graph::expand(decoded, used, &warnings);
  std::optional<PlanOrigin> origin;
  if (const std::optional<json::Value> rewrites = root.find("rewrites")) {
    origin = decodeOrigin(*rewrites, used, warnings);
    origin->graph.file = root.location().file;
  }
  g.file = root.location().file;
  cost::Target target = cost::targetFromJson(root.member("target"));

  PlanOptions options;
  if (std::optional<json::Value> opts = root.find("options")) {
    opts->expectObject();
    opts->expectKeys({"inputs_on", "relay_groups"});
    if (std::optional<json::Value> where = opts->find("inputs_on")) {
      if (const std::optional<InputsOn> mode = inputsOnFromName(where->asString())) {
        options.inputsOn = *mode;
      } else {
        where->fail("unknown inputs_on " + json::brief(where->json()) +
                    " (expected \"host\", \"free\" or \"constants\")");
      }
    }
    if (std::optional<json::Value> groups = opts->find("relay_groups")) {
      options.relayGroups = decodeRelayGroups(*groups, target.deviceCount());
    }
  }

  json::Value operations = root.member("operations");
  PlanChoice choice = decodeChoice(g, operations);
  ShardPlan plan;
  try {
    plan = buildPlan(g, target.deviceCount(), choice, options);
  } catch (const InvalidChoice& e) {
    operations.member(g.operations[e.op].name).fail(e.message());
  }
  cost::Simulation simulation = cost::simulate(g, target, plan);

  Comparer("operations").compare(operationsToJson(g, plan), operations, "");
  Comparer("reductions").compare(reductionsToJson(g, plan), root.member("reductions"), "");
  Comparer("transfers").compare(transfersToJson(g, plan), root.member("transfers"), "");
  // The predictions: a difference is a warning, and this version's
  // simulation is what the plan carries from here on.
  std::optional<Diagnostic> predictions;
  compareSchedule(scheduleToJson(g, plan, simulation), root.member("schedule"), predictions);
  Json objectives = cost::objectivesToJson(simulation.objectives);
  append(objectives, "peak_memory_per_device", simulation.peakPerDevice);
  Comparer("objectives", &predictions, [](const std::string&) {
    return true;
  }).compare(objectives, root.member("objectives"), "");

  LoadedPlan loaded{std::move(g),          std::move(target), std::move(choice),  std::move(plan),
                    std::move(simulation), std::move(origin), std::move(warnings)};
  if (predictions) {
    predictions->notes.push_back(Diagnostic{Severity::Note, {}, kStalePredictions, {}, {}});
    loaded.warnings.push_back(std::move(*predictions));
  }
  return loaded;
}

LoadedPlan loadPlan(const std::string& path, const metakernel::MetakernelLibrary& library) {
  const json::Document document = json::Document::parse(SourceFile::read(path, "a plan file"));
  LoadedPlan loaded = decodePlan(json::Value(document), library);
  loaded.graph.file = displayName(path);
  return loaded;
}

} // namespace tapestry::plan
