// Target YAML and JSON: one decoder (decodeTarget) over two small adapters, so
// YAML files and the "target" object of plans get the same checks and messages.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/cost/embedded_targets.hpp"
#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/metakernel/yaml_util.hpp"

namespace tapestry::cost {

namespace {

// Devices per target; beyond this a typo (count: 80000000) would only exhaust memory.
constexpr std::int64_t kMaxCount = 65536;

constexpr std::string_view kBuiltinDir = "core/cost/targets/";

std::string joinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) {
    out += (out.empty() ? "" : ", ") + std::string(n);
  }
  return out;
}

std::string unknownKeyMessage(const std::string& key, const std::string& what,
                              const std::vector<std::string_view>& expected) {
  return "unknown key \"" + key + "\" in " + what + " (expected one of: " + joinNames(expected) +
         ")";
}

// A plain decimal number (profile tables: sizes and seconds in base units).
double parsePlainNumber(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(v)) {
    throw Error("bad number \"" + copy + "\"");
  }
  return v;
}

bool contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---------------------------------------------------------------------------
// YAML adapter: a value of the file and the dotted path that names it.

using metakernel::yaml::Entry;
using metakernel::yaml::Reader;

class YamlMap;

class YamlField {
public:
  YamlField(const Reader& reader, YAML::Node node, std::string path)
      : reader_(&reader), node_(std::move(node)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& message) const { reader_->fail(node_, message); }
  // The value as messages quote it.
  std::string text() const { return "\"" + node_.Scalar() + "\""; }

  YamlMap map(const YAML::Node& anchor) const;
  std::string string() const { return reader_->scalar(node_, path_); }
  std::int64_t integer() const { return reader_->integer(node_, path_); }
  std::int64_t size() const { return parsed(parseSize, "a size such as 80GiB"); }
  double bandwidth() const { return parsed(parseBandwidth, "a bandwidth such as 450GB/s"); }
  double rate() const { return parsed(parseRate, "a rate such as 67T"); }
  double time() const { return parsed(parseTime, "a time such as 2us"); }
  double number() const { return parsed(parsePlainNumber, "a number"); }
  bool boolean() const {
    const std::string v = string();
    if (v != "true" && v != "false") {
      fail(path_ + ": expected true or false, got \"" + v + "\"");
    }
    return v == "true";
  }
  std::vector<YamlField> elements() const {
    if (!node_.IsSequence()) {
      fail(path_ + ": expected a list, got " + metakernel::yaml::kindName(node_));
    }
    std::vector<YamlField> out;
    for (std::size_t i = 0; i < node_.size(); ++i) {
      out.emplace_back(*reader_, node_[i], path_ + "[" + std::to_string(i) + "]");
    }
    return out;
  }

private:
  template <class T> T parsed(T (*parse)(std::string_view), const char* example) const {
    if (!node_.IsScalar()) {
      fail(path_ + ": expected " + example + ", got " + metakernel::yaml::kindName(node_));
    }
    try {
      return parse(node_.Scalar());
    } catch (const Error& e) {
      fail(path_ + ": " + e.message());
    }
  }

  const Reader* reader_;
  YAML::Node node_;
  std::string path_;
};

class YamlMap {
public:
  // `anchor` is where "missing required key" points: the map's own key, or the
  // document root.
  YamlMap(const Reader& reader, const YAML::Node& node, const YAML::Node& anchor, std::string path)
      : reader_(&reader), anchor_(anchor), path_(std::move(path)),
        entries_(reader.entries(node, path_.empty() ? "target" : path_, false)) {}

  void expectKeys(const std::vector<std::string_view>& keys) const {
    for (const Entry& e : entries_) {
      if (!contains(keys, e.key)) {
        reader_->fail(e.keyNode, unknownKeyMessage(e.key, what(), keys));
      }
    }
  }
  std::optional<YamlField> find(std::string_view key) const {
    const Entry* e = metakernel::yaml::findEntry(entries_, key);
    if (e == nullptr) {
      return std::nullopt;
    }
    return YamlField(*reader_, e->value, childPath(key));
  }
  YamlField require(std::string_view key) const {
    std::optional<YamlField> f = find(key);
    if (!f) {
      reader_->fail(anchor_, what() + ": missing required key \"" + std::string(key) + "\"");
    }
    return *f;
  }
  // The keys in document order, with their values.
  std::vector<std::pair<std::string, YamlField>> members() const {
    std::vector<std::pair<std::string, YamlField>> out;
    for (const Entry& e : entries_) {
      out.emplace_back(e.key, YamlField(*reader_, e.value, childPath(e.key)));
    }
    return out;
  }
  // Where "missing key" errors of the nested map under `key` point.
  YAML::Node keyNode(std::string_view key) const {
    return metakernel::yaml::findEntry(entries_, key)->keyNode;
  }

private:
  std::string what() const { return path_.empty() ? "target" : path_; }
  std::string childPath(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  const Reader* reader_;
  YAML::Node anchor_;
  std::string path_;
  std::vector<Entry> entries_;
};

YamlMap YamlField::map(const YAML::Node& anchor) const {
  return YamlMap(*reader_, node_, anchor, path_);
}

// ---------------------------------------------------------------------------
// JSON adapter: plans store numbers in base units, so quantities are numbers.

class JsonMap;

class JsonField {
public:
  JsonField(json::Value value, std::string path)
      : value_(std::move(value)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& message) const { value_.fail(message); }
  std::string text() const { return json::brief(value_.json()); }

  JsonMap map() const;
  std::string string() const { return value_.asString(); }
  std::int64_t integer() const { return value_.asInt64(); }
  std::int64_t size() const { return value_.asInt64(); }
  double bandwidth() const { return value_.asDouble(); }
  double rate() const { return value_.asDouble(); }
  double time() const { return value_.asDouble(); }
  double number() const { return value_.asDouble(); }
  bool boolean() const { return value_.asBool(); }
  std::vector<JsonField> elements() const {
    value_.expectArray();
    std::vector<JsonField> out;
    std::size_t i = 0;
    for (json::Value& v : value_.elements()) {
      out.emplace_back(std::move(v), path_ + "[" + std::to_string(i++) + "]");
    }
    return out;
  }

private:
  json::Value value_;
  std::string path_;
};

class JsonMap {
public:
  JsonMap(json::Value value, std::string path) : value_(std::move(value)), path_(std::move(path)) {
    value_.expectObject();
  }

  void expectKeys(const std::vector<std::string_view>& keys) const {
    for (const auto& [key, member] : value_.members()) {
      if (!contains(keys, key)) {
        member.fail(unknownKeyMessage(key, what(), keys));
      }
    }
  }
  std::optional<JsonField> find(std::string_view key) const {
    std::optional<json::Value> v = value_.find(key);
    if (!v) {
      return std::nullopt;
    }
    return JsonField(std::move(*v), childPath(key));
  }
  JsonField require(std::string_view key) const {
    std::optional<JsonField> f = find(key);
    if (!f) {
      value_.fail(what() + ": missing required key \"" + std::string(key) + "\"");
    }
    return *f;
  }
  std::vector<std::pair<std::string, JsonField>> members() const {
    std::vector<std::pair<std::string, JsonField>> out;
    for (auto& [key, member] : value_.members()) {
      out.emplace_back(key, JsonField(member, childPath(key)));
    }
    return out;
  }

private:
  std::string what() const { return path_.empty() ? "target" : path_; }
  std::string childPath(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  json::Value value_;
  std::string path_;
};

JsonMap JsonField::map() const {
  return JsonMap(value_, path_);
}

// ---------------------------------------------------------------------------
// The decoder, shared by both formats.

// A nested map of `parent` under `key` (required or not).
YamlMap nestedMap(const YamlMap& parent, const YamlField& field, std::string_view key) {
  return field.map(parent.keyNode(key));
}
JsonMap nestedMap(const JsonMap&, const JsonField& field, std::string_view) {
  return field.map();
}

template <class Field> int countOf(const Field& f) {
  std::int64_t v = f.integer();
  if (v < 1) {
    f.fail(f.path() + " must be at least 1, got " + std::to_string(v));
  }
  if (v > kMaxCount) {
    f.fail(f.path() + " must be at most " + std::to_string(kMaxCount) + ", got " +
           std::to_string(v));
  }
  return static_cast<int>(v);
}

template <class Field, class T> T positive(const Field& f, T v) {
  if (!(v > 0)) {
    f.fail(f.path() + " must be greater than 0, got " + f.text());
  }
  return v;
}

template <class Field> double notNegative(const Field& f, double v) {
  if (v < 0) {
    f.fail(f.path() + " must not be negative, got " + f.text());
  }
  return v;
}

template <class Map> LinkSpec decodeLink(const Map& m) {
  m.expectKeys({"bandwidth", "latency"});
  LinkSpec link;
  auto bandwidth = m.require("bandwidth");
  link.bandwidth = positive(bandwidth, bandwidth.bandwidth());
  auto latency = m.require("latency");
  link.latency = notNegative(latency, latency.time());
  return link;
}

// A list of [x, y] pairs of numbers, x positive and strictly increasing, y
// positive (or not negative with `yMayBeZero`): `names` is how messages call
// them ("size, seconds"), `xs` the x's in "sizes must increase".
template <class Field>
std::vector<std::pair<double, double>> decodePairs(const Field& list, const std::string& names,
                                                   const std::string& xs, bool yMayBeZero) {
  std::vector<std::pair<double, double>> points;
  for (const Field& entry : list.elements()) {
    std::vector<Field> pair = entry.elements();
    if (pair.size() != 2) {
      entry.fail(entry.path() + ": expected [" + names + "], a list of 2 numbers, got " +
                 std::to_string(pair.size()));
    }
    const double x = positive(pair[0], pair[0].number());
    const double y =
        yMayBeZero ? notNegative(pair[1], pair[1].number()) : positive(pair[1], pair[1].number());
    if (!points.empty() && !(x > points.back().first)) {
      pair[0].fail(pair[0].path() + ": " + xs + " must increase, but " + pair[0].text() +
                   " follows " + formatNumber(points.back().first));
    }
    points.emplace_back(x, y);
  }
  if (points.empty()) {
    list.fail(list.path() + ": expected at least one [" + names + "] pair");
  }
  return points;
}

// One table: a list of [size, seconds] pairs, sizes strictly increasing.
template <class Field> std::vector<ProfilePoint> decodePoints(const Field& list) {
  std::vector<ProfilePoint> points;
  for (const auto& [size, seconds] : decodePairs(list, "size, seconds", "sizes", false)) {
    points.push_back({size, seconds});
  }
  return points;
}

// spread_by_time: [one-device seconds, spread] pairs, times strictly increasing.
template <class Field> std::vector<SpreadPoint> decodeSpreadPoints(const Field& list) {
  std::vector<SpreadPoint> points;
  for (const auto& [time, spread] : decodePairs(list, "seconds, spread", "times", true)) {
    points.push_back({time, spread});
  }
  return points;
}

template <class Map> Profile decodeProfile(const Map& m) {
  m.expectKeys({"machine", "backend", "date", "devices", "task_overhead", "start_overhead",
                "spread", "spread_by_time", "spread_by_family", "thread_scaling", "copies",
                "last_level_cache", "pass_difference", "pass_difference_max", "kernels"});
  Profile p;
  if (auto machine = m.find("machine")) {
    p.machine = machine->string();
  }
  auto backend = m.require("backend");
  p.backend = backend.string();
  if (p.backend != "cpu" && p.backend != "cuda") {
    backend.fail(backend.path() + " must be cpu or cuda, got \"" + p.backend + "\"");
  }
  if (auto date = m.find("date")) {
    p.date = date->string();
  }
  p.devices = countOf(m.require("devices"));
  auto overhead = m.require("task_overhead");
  p.taskOverhead = notNegative(overhead, overhead.time());
  if (auto start = m.find("start_overhead")) {
    p.startOverhead = notNegative(*start, start->time());
  }
  if (auto spread = m.find("spread")) {
    p.spread = notNegative(*spread, spread->number());
  }
  if (auto difference = m.find("pass_difference")) {
    p.passDifference = notNegative(*difference, difference->number());
  }
  if (auto largest = m.find("pass_difference_max")) {
    p.passDifferenceMax = notNegative(*largest, largest->number());
  }
  if (auto cache = m.find("last_level_cache")) {
    p.cacheBytes = positive(*cache, cache->size());
  }
  if (auto byTime = m.find("spread_by_time")) {
    p.spreadByTime = decodeSpreadPoints(*byTime);
  }
  std::vector<std::string_view> families;
  for (const KernelFamily& f : kernelFamilies()) {
    families.push_back(f.name);
  }
  if (auto byFamily = m.find("spread_by_family")) {
    auto spreads = nestedMap(m, *byFamily, "spread_by_family");
    spreads.expectKeys(families);
    for (const auto& [family, value] : spreads.members()) {
      p.spreadByFamily.emplace(family, notNegative(value, value.number()));
    }
  }
  if (auto scalingField = m.find("thread_scaling")) {
    auto scaling = nestedMap(m, *scalingField, "thread_scaling");
    scaling.expectKeys(families);
    for (const auto& [family, value] : scaling.members()) {
      p.threadScaling.emplace(family, positive(value, value.number()));
    }
  }
  if (auto copiesField = m.find("copies")) {
    auto copies = nestedMap(m, *copiesField, "copies");
    copies.expectKeys({"on_device", "links", "host", "links_all", "host_all"});
    if (auto onDevice = copies.find("on_device")) {
      p.copiesOnDevice = onDevice->boolean();
    }
    if (auto links = copies.find("links")) {
      p.linkCopies = decodePoints(*links);
    }
    if (auto host = copies.find("host")) {
      p.hostCopies = decodePoints(*host);
    }
    if (auto linksAll = copies.find("links_all")) {
      p.linkCopiesAll = decodePoints(*linksAll);
    }
    if (auto hostAll = copies.find("host_all")) {
      p.hostCopiesAll = decodePoints(*hostAll);
    }
  }
  auto kernelsField = m.require("kernels");
  auto kernels = nestedMap(m, kernelsField, "kernels");
  std::vector<std::string_view> names;
  for (const KernelFamily& f : kernelFamilies()) {
    names.push_back(f.name);
  }
  for (const KernelFamily& f : kernelFamilies()) {
    for (std::string_view k : kernelsOfFamily(f.name)) {
      if (findKernelFamily(k) == nullptr) { // "matmul" and "transpose" name both
        names.push_back(k);
      }
    }
  }
  kernels.expectKeys(names);
  for (const auto& [family, tableField] : kernels.members()) {
    const KernelFamily* named = findKernelFamily(family);
    const KernelFamily& f = named != nullptr ? *named : *familyOfKernel(family);
    auto table = nestedMap(kernels, tableField, family);
    table.expectKeys({"size", "alone", "all"});
    ProfileTable t;
    t.measure = f.measure;
    auto size = table.require("size");
    if (size.string() != workMeasureName(f.measure)) {
      size.fail(size.path() + " must be " + workMeasureName(f.measure) + " for " +
                std::string(f.name) + " kernels, got \"" + size.string() + "\"");
    }
    t.alone = decodePoints(table.require("alone"));
    if (auto all = table.find("all")) {
      t.all = decodePoints(*all);
    }
    p.kernels.emplace(family, std::move(t));
  }
  return p;
}

template <class Map> Target decodeTarget(const Map& top) {
  top.expectKeys({"name", "description", "devices", "links", "host", "nodes", "profile"});
  Target t;
  auto name = top.require("name");
  t.name = name.string();
  if (t.name.empty()) {
    name.fail("name must not be empty");
  }
  if (auto description = top.find("description")) {
    t.description = description->string();
  }

  auto devicesField = top.require("devices");
  auto dev = nestedMap(top, devicesField, "devices");
  dev.expectKeys({"count", "kind", "memory", "memory_bandwidth", "flops", "launch_overhead"});
  auto count = dev.require("count");
  t.devices.count = countOf(count);
  auto kind = dev.require("kind");
  std::string kindText = kind.string();
  if (kindText == "gpu") {
    t.devices.kind = DeviceKind::Gpu;
  } else if (kindText == "cpu") {
    t.devices.kind = DeviceKind::Cpu;
  } else {
    kind.fail("devices.kind must be gpu or cpu, got \"" + kindText + "\"");
  }
  auto memory = dev.require("memory");
  t.devices.memory = positive(memory, memory.size());
  auto bandwidth = dev.require("memory_bandwidth");
  t.devices.memoryBandwidth = positive(bandwidth, bandwidth.bandwidth());
  auto flopsField = dev.require("flops");
  auto flops = nestedMap(dev, flopsField, "flops");
  std::vector<std::string_view> dtypes(flopsDTypes().begin(), flopsDTypes().end());
  flops.expectKeys(dtypes);
  flops.require("float32"); // the rate every other dtype falls back to
  for (const auto& [dtype, rate] : flops.members()) {
    t.devices.flops[dtype] = positive(rate, rate.rate());
  }
  auto launch = dev.require("launch_overhead");
  t.devices.launchOverhead = notNegative(launch, launch.time());

  auto linksField = top.require("links");
  t.links = decodeLink(nestedMap(top, linksField, "links"));
  auto hostField = top.require("host");
  t.host = decodeLink(nestedMap(top, hostField, "host"));

  if (auto nodesField = top.find("nodes")) {
    auto nodes = nestedMap(top, *nodesField, "nodes");
    nodes.expectKeys({"count", "devices_per_node", "inter_node"});
    NodeSpec n;
    n.count = countOf(nodes.require("count"));
    auto perNode = nodes.require("devices_per_node");
    n.devicesPerNode = countOf(perNode);
    auto interField = nodes.require("inter_node");
    n.interNode = decodeLink(nestedMap(nodes, interField, "inter_node"));
    if (std::int64_t{n.count} * n.devicesPerNode != t.devices.count) {
      perNode.fail("nodes.count x nodes.devices_per_node must equal devices.count: " +
                   std::to_string(n.count) + " x " + std::to_string(n.devicesPerNode) + " = " +
                   std::to_string(std::int64_t{n.count} * n.devicesPerNode) +
                   ", but devices.count is " + std::to_string(t.devices.count));
    }
    t.nodes = n;
  }
  if (auto profileField = top.find("profile")) {
    t.profile = decodeProfile(nestedMap(top, *profileField, "profile"));
  }
  return t;
}

Json linkJson(const LinkSpec& link) {
  Json j = Json::object();
  j["bandwidth"] = link.bandwidth;
  j["latency"] = link.latency;
  return j;
}

Json pointsJson(const std::vector<ProfilePoint>& points) {
  Json list = Json::array();
  for (const ProfilePoint& p : points) {
    list.push_back(Json::array({p.size, p.seconds}));
  }
  return list;
}

Json profileJson(const Profile& p) {
  Json j = Json::object();
  if (!p.machine.empty()) {
    j["machine"] = p.machine;
  }
  j["backend"] = p.backend;
  if (!p.date.empty()) {
    j["date"] = p.date;
  }
  j["devices"] = p.devices;
  j["task_overhead"] = p.taskOverhead;
  j["start_overhead"] = p.startOverhead;
  if (p.spread > 0) {
    j["spread"] = p.spread;
  }
  if (!p.spreadByTime.empty()) {
    Json points = Json::array();
    for (const SpreadPoint& sp : p.spreadByTime) {
      points.push_back(Json::array({sp.time, sp.spread}));
    }
    j["spread_by_time"] = std::move(points);
  }
  if (!p.spreadByFamily.empty()) {
    Json spreads = Json::object();
    for (const auto& [family, spread] : p.spreadByFamily) {
      spreads[family] = spread;
    }
    j["spread_by_family"] = std::move(spreads);
  }
  if (!p.threadScaling.empty()) {
    Json scaling = Json::object();
    for (const auto& [family, factor] : p.threadScaling) {
      scaling[family] = factor;
    }
    j["thread_scaling"] = std::move(scaling);
  }
  {
    Json copies = Json::object();
    copies["on_device"] = p.copiesOnDevice;
    if (!p.linkCopies.empty()) {
      copies["links"] = pointsJson(p.linkCopies);
    }
    if (!p.hostCopies.empty()) {
      copies["host"] = pointsJson(p.hostCopies);
    }
    if (!p.linkCopiesAll.empty()) {
      copies["links_all"] = pointsJson(p.linkCopiesAll);
    }
    if (!p.hostCopiesAll.empty()) {
      copies["host_all"] = pointsJson(p.hostCopiesAll);
    }
    j["copies"] = std::move(copies);
  }
  if (p.cacheBytes > 0) {
    j["last_level_cache"] = p.cacheBytes;
  }
  if (p.timedTwice()) {
    j["pass_difference"] = p.passDifference;
    j["pass_difference_max"] = p.passDifferenceMax;
  }
  Json kernels = Json::object();
  for (const ProfileEntry& e : profileEntries(p)) {
    Json table = Json::object();
    table["size"] = workMeasureName(e.table->measure);
    table["alone"] = pointsJson(e.table->alone);
    if (!e.table->all.empty()) {
      table["all"] = pointsJson(e.table->all);
    }
    kernels[std::string(e.name)] = std::move(table);
  }
  j["kernels"] = std::move(kernels);
  return j;
}

const EmbeddedFile* findBuiltin(std::string_view name) {
  for (const EmbeddedFile& f : embeddedTargets()) {
    std::string_view path = f.path;
    if (path.starts_with(kBuiltinDir) && path.ends_with(".yaml") &&
        path.substr(kBuiltinDir.size(), path.size() - kBuiltinDir.size() - 5) == name) {
      return &f;
    }
  }
  return nullptr;
}

} // namespace

Target loadTargetYaml(const SourceFile& file) {
  Reader reader(file);
  YAML::Node root = reader.parse();
  YamlField rootField(reader, root, "");
  return decodeTarget(rootField.map(root));
}

Target targetFromJson(const json::Value& value) {
  return decodeTarget(JsonMap(value, ""));
}

Json toJson(const Target& target) {
  Json j = Json::object();
  j["name"] = target.name;
  if (!target.description.empty()) {
    j["description"] = target.description;
  }
  const DeviceSpec& d = target.devices;
  Json devices = Json::object();
  devices["count"] = d.count;
  devices["kind"] = deviceKindName(d.kind);
  devices["memory"] = d.memory;
  devices["memory_bandwidth"] = d.memoryBandwidth;
  Json flops = Json::object();
  for (const std::string& dtype : flopsDTypes()) {
    if (auto it = d.flops.find(dtype); it != d.flops.end()) {
      flops[dtype] = it->second;
    }
  }
  devices["flops"] = std::move(flops);
  devices["launch_overhead"] = d.launchOverhead;
  j["devices"] = std::move(devices);
  j["links"] = linkJson(target.links);
  j["host"] = linkJson(target.host);
  if (target.nodes) {
    Json nodes = Json::object();
    nodes["count"] = target.nodes->count;
    nodes["devices_per_node"] = target.nodes->devicesPerNode;
    nodes["inter_node"] = linkJson(target.nodes->interNode);
    j["nodes"] = std::move(nodes);
  }
  if (target.profile) {
    j["profile"] = profileJson(*target.profile);
  }
  return j;
}

std::vector<std::string> builtinTargetNames() {
  std::vector<std::string> names = {"local"};
  for (const EmbeddedFile& f : embeddedTargets()) {
    std::string_view path = f.path;
    if (path.starts_with(kBuiltinDir) && path.ends_with(".yaml")) {
      std::string_view stem = path.substr(kBuiltinDir.size(), path.size() - kBuiltinDir.size() - 5);
      if (stem.find('/') == std::string_view::npos) {
        names.emplace_back(stem);
      }
    }
  }
  return names;
}

Target loadEmbeddedTarget(std::string_view path) {
  for (const EmbeddedFile& f : embeddedTargets()) {
    if (f.path == path) {
      return loadTargetYaml(SourceFile(std::string(f.path), std::string(f.text)));
    }
  }
  throw InternalError("no embedded target file " + std::string(path));
}

LocalTarget loadLocalTarget() {
  const std::string saved = savedCalibration(probeMachine());
  if (saved.empty()) {
    return {localTarget(probeMachine()), ""};
  }
  Target t = loadTargetYaml(SourceFile::read(saved));
  t.name = "local";
  return {std::move(t), saved};
}

Target loadTarget(const std::string& nameOrPath) {
  if (nameOrPath == "local") {
    return loadLocalTarget().target;
  }
  if (const EmbeddedFile* f = findBuiltin(nameOrPath)) {
    return loadTargetYaml(SourceFile(std::string(f->path), std::string(f->text)));
  }
  std::error_code ec;
  if (nameOrPath != "-" && std::filesystem::is_directory(nameOrPath, ec)) {
    throw Error(SourceLocation{nameOrPath, 0, 0, {}},
                "is a directory, expected a target YAML file");
  }
  if (nameOrPath == "-" || std::filesystem::exists(nameOrPath, ec)) {
    return loadTargetYaml(SourceFile::read(nameOrPath));
  }
  std::vector<std::string> names = builtinTargetNames();
  throw Error("unknown target \"" + nameOrPath + "\": not a built-in (" +
              joinNames(std::vector<std::string_view>(names.begin(), names.end())) +
              ") and no such file");
}

} // namespace tapestry::cost
