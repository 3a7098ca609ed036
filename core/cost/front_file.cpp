#include "core/cost/front_file.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "core/json/layout.hpp"

namespace tapestry::cost {

namespace {

void append(Json& object, std::string key, Json value) {
  json::appendMember(object, std::move(key), std::move(value));
}

double nonNegative(const json::Value& v) {
  double x = v.asDouble();
  if (!std::isfinite(x) || x < 0) {
    v.fail("expected a finite number >= 0");
  }
  return x;
}

// A byte count as the drawing reads it: any finite number >= 0 that fits.
std::int64_t byteCount(const json::Value& v) {
  const double x = nonNegative(v);
  if (x >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) {
    v.fail("expected a finite number >= 0");
  }
  return static_cast<std::int64_t>(x);
}

Objectives decodeObjectives(const json::Value& v) {
  v.expectObject();
  Objectives o;
  o.timeS = nonNegative(v.member("time_s"));
  o.peakMemoryBytes = byteCount(v.member("peak_memory_bytes"));
  o.transferBytes = byteCount(v.member("transfer_bytes"));
  if (std::optional<json::Value> feasible = v.find("feasible"); feasible && feasible->isBool()) {
    o.feasible = feasible->asBool();
  }
  return o;
}

std::string stringOr(const json::Value& root, const char* key) {
  std::optional<json::Value> v = root.find(key);
  return v && v->isString() ? v->asString() : std::string();
}

} // namespace

Json objectivesToJson(const Objectives& o) {
  Json out = Json::object();
  append(out, "time_s", o.timeS);
  append(out, "peak_memory_bytes", o.peakMemoryBytes);
  append(out, "transfer_bytes", o.transferBytes);
  append(out, "feasible", o.feasible);
  return out;
}

Json frontToJson(const FrontDocument& front) {
  Json out = Json::object();
  out["tapestry"] = "front/v1";
  out["graph"] = front.graph;
  out["target"] = front.target;
  if (front.devices) {
    out["devices"] = *front.devices;
  }
  Json plans = Json::array();
  for (const FrontPlan& p : front.plans) {
    Json item = Json::object();
    item["objectives"] = objectivesToJson(p.objectives);
    if (!front.rewrites.empty()) {
      item["rewrites"] = p.rewrites;
    }
    if (p.relay) {
      item["relay"] = *p.relay;
    }
    Json operations = Json::object();
    for (const FrontOperation& op : p.operations) {
      Json entry = Json::object();
      entry["split"] = op.split;
      entry["devices"] = op.devices;
      operations[op.name] = std::move(entry);
    }
    item["operations"] = std::move(operations);
    plans.push_back(std::move(item));
  }
  out["front"] = std::move(plans);
  if (!front.rewrites.empty()) {
    out["rewrites"] = front.rewrites;
  }
  Json baselines = Json::object();
  for (const FrontBaseline& b : front.baselines) {
    baselines[b.name] = b.objectives ? objectivesToJson(*b.objectives) : Json(nullptr);
  }
  out["baselines"] = std::move(baselines);
  if (front.selected) {
    out["selected"] = *front.selected;
  }
  out["select"] = front.select;
  out["search"] = front.search;
  return out;
}

FrontDocument decodeFront(const json::Value& root) {
  root.expectObject();
  FrontDocument f;
  f.graph = stringOr(root, "graph");
  f.target = stringOr(root, "target");
  if (std::optional<json::Value> devices = root.find("devices")) {
    f.devices = devices->asInt64();
  }
  json::Value front = root.member("front");
  front.expectArray();
  for (const json::Value& entry : front.elements()) {
    entry.expectObject();
    FrontPlan plan;
    plan.objectives = decodeObjectives(entry.member("objectives"));
    if (std::optional<json::Value> relay = entry.find("relay")) {
      plan.relay = relay->asBool();
    }
    if (std::optional<json::Value> operations = entry.find("operations")) {
      operations->expectObject();
      for (const auto& [name, op] : operations->members()) {
        FrontOperation o{name, Json(nullptr), Json(nullptr)};
        if (std::optional<json::Value> split = op.find("split")) {
          o.split = split->json();
        }
        if (std::optional<json::Value> devices = op.find("devices")) {
          o.devices = devices->json();
        }
        plan.operations.push_back(std::move(o));
      }
    }
    f.plans.push_back(std::move(plan));
  }
  if (std::optional<json::Value> baselines = root.find("baselines")) {
    baselines->expectObject();
    for (const auto& [name, value] : baselines->members()) {
      FrontBaseline b{name, std::nullopt};
      if (!value.isNull()) {
        b.objectives = decodeObjectives(value);
      }
      f.baselines.push_back(std::move(b));
    }
  }
  if (std::optional<json::Value> selected = root.find("selected")) {
    if (!selected->isNull()) {
      std::int64_t index = selected->asInt64();
      if (index < 0 || static_cast<std::size_t>(index) >= f.plans.size()) {
        selected->fail("selected plan " + std::to_string(index) + " is not on the front (" +
                       std::to_string(f.plans.size()) + " plans)");
      }
      f.selected = static_cast<std::size_t>(index);
    }
  }
  f.select = stringOr(root, "select");
  if (std::optional<json::Value> search = root.find("search"); search && search->isObject()) {
    f.search = search->json();
  }
  return f;
}

} // namespace tapestry::cost
