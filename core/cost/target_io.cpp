// Target YAML and JSON: one decoder (decodeTarget) over two small adapters, so
// YAML files and the "target" object of plans get the same checks and messages.
#include <algorithm>
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

template <class Map> Target decodeTarget(const Map& top) {
  top.expectKeys({"name", "description", "devices", "links", "host", "nodes"});
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
  return t;
}

Json linkJson(const LinkSpec& link) {
  Json j = Json::object();
  j["bandwidth"] = link.bandwidth;
  j["latency"] = link.latency;
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

Target loadTarget(const std::string& nameOrPath) {
  if (nameOrPath == "local") {
    return localTarget(probeMachine());
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
