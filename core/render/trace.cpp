#include "core/render/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json/json.hpp"
#include "core/render/render.hpp"

namespace tapestry::render {

namespace {

constexpr double kMicroseconds = 1e6;

Json placeJson(int place) {
  return place == plan::kHost ? Json("host") : Json(place);
}

Json sliceArgs(const plan::LoadedPlan& loaded, const Slice& s) {
  const graph::ExpandedGraph& g = loaded.graph;
  const plan::ShardPlan& p = loaded.plan;
  Json args = Json::object();
  switch (s.kind) {
  case Slice::Kind::Shard: {
    const plan::Shard& shard = p.ops[s.index].shards[s.shard];
    args["operation"] = g.operations[s.index].name;
    args["kernel"] = g.operations[s.index].kernel;
    args["shard"] = s.shard;
    args["index"] = shard.index.toString();
    args["flops"] = shard.flops;
    args["bytes"] = shard.bytes;
    args["partial"] = shard.partial;
    break;
  }
  case Slice::Kind::Transfer: {
    const plan::Transfer& tr = p.transfers[s.index];
    args["tensor"] = g.tensors[tr.tensor].name;
    args["region"] = tr.region.toString();
    args["bytes"] = tr.bytes;
    args["from"] = placeJson(tr.from);
    args["to"] = placeJson(tr.to);
    args["operation"] = g.operations[s.op].name;
    args["partial_move"] = tr.reduction.has_value();
    break;
  }
  case Slice::Kind::Reduction: {
    const plan::Reduction& red = p.reductions[s.index];
    args["operation"] = g.operations[red.op].name;
    args["tensor"] = g.tensors[red.tensor].name;
    args["combine"] = red.combine;
    args["region"] = red.region.toString();
    args["bytes"] = red.bytes;
    args["partials"] = red.shards.size();
    args["steps"] = red.steps.size();
    if (s.spanStart < s.start) {
      args["first_step_us"] = s.spanStart * kMicroseconds; // before the drawn start
    }
    break;
  }
  }
  if (s.critical) {
    args["critical"] = true;
  }
  return args;
}

// A slice's "cat" in the trace, both ways.
constexpr std::pair<Slice::Kind, std::string_view> kCategories[] = {
    {Slice::Kind::Shard, "shard"},
    {Slice::Kind::Transfer, "transfer"},
    {Slice::Kind::Reduction, "reduction"},
};

std::string category(Slice::Kind kind) {
  for (const auto& [k, name] : kCategories) {
    if (k == kind) {
      return std::string(name);
    }
  }
  return "";
}

Json metadata(const char* name, int pid, std::optional<int> tid, const char* key, Json value) {
  Json e = Json::object();
  e["name"] = name;
  e["ph"] = "M";
  e["pid"] = pid;
  if (tid) {
    e["tid"] = *tid;
  }
  e["args"] = Json::object();
  e["args"][key] = std::move(value);
  return e;
}

// The events of one timeline as process `pid`.
void addProcess(const plan::LoadedPlan& loaded, const Timeline& t, int pid,
                std::vector<Json>& events, int& nextFlow) {
  events.push_back(metadata("process_name", pid, std::nullopt, "name", t.label));
  events.push_back(metadata("process_sort_index", pid, std::nullopt, "sort_index", pid));
  for (std::size_t i = 0; i < t.tracks.size(); ++i) {
    const int tid = static_cast<int>(i) + 1;
    events.push_back(metadata("thread_name", pid, tid, "name", t.tracks[i].name));
    events.push_back(metadata("thread_sort_index", pid, tid, "sort_index", tid));
  }
  for (const Slice& s : t.slices) {
    Json e = Json::object();
    e["name"] = s.name;
    e["cat"] = category(s.kind);
    e["ph"] = "X";
    e["pid"] = pid;
    e["tid"] = static_cast<int>(s.track) + 1;
    e["ts"] = s.start * kMicroseconds;
    e["dur"] = s.seconds() * kMicroseconds;
    e["args"] = sliceArgs(loaded, s);
    events.push_back(std::move(e));
  }
  for (const Flow& f : t.flows) {
    const int id = nextFlow++;
    const Slice* ends[2] = {&t.slices[f.from], &t.slices[f.to]};
    for (int k = 0; k < 2; ++k) {
      Json e = Json::object();
      e["name"] = "data";
      e["cat"] = "flow";
      e["ph"] = k == 0 ? "s" : "f";
      if (k == 1) {
        e["bp"] = "e";
      }
      e["id"] = id;
      e["pid"] = pid;
      e["tid"] = static_cast<int>(ends[k]->track) + 1;
      e["ts"] = ends[k]->start * kMicroseconds;
      events.push_back(std::move(e));
    }
  }
  for (std::size_t d = 0; d < t.memory.size(); ++d) {
    for (const MemorySample& m : t.memory[d]) {
      Json e = Json::object();
      e["name"] = "memory device " + std::to_string(d);
      e["ph"] = "C";
      e["pid"] = pid;
      e["ts"] = m.time * kMicroseconds;
      e["args"] = Json::object();
      e["args"]["bytes"] = m.bytes;
      events.push_back(std::move(e));
    }
  }
}

} // namespace

std::string traceJson(const plan::LoadedPlan& loaded, const std::vector<Timeline>& timelines) {
  std::vector<Json> events;
  int nextFlow = 1;
  Json processes = Json::array();
  for (std::size_t i = 0; i < timelines.size(); ++i) {
    addProcess(loaded, timelines[i], static_cast<int>(i) + 1, events, nextFlow);
    Json process = Json::object();
    process["pid"] = static_cast<int>(i) + 1;
    process["name"] = timelines[i].label;
    process["end_us"] = timelines[i].end * kMicroseconds;
    processes.push_back(std::move(process));
  }
  Json other = Json::object();
  other["tapestry"] = "trace/v1";
  other["graph"] = loaded.graph.name;
  other["target"] = loaded.target.name;
  other["devices"] = loaded.plan.deviceCount;
  Json operations = Json::array();
  Json kernels = Json::array();
  for (const graph::Operation& op : loaded.graph.operations) {
    operations.push_back(op.name);
    kernels.push_back(op.kernel);
  }
  other["operations"] = std::move(operations);
  other["kernels"] = std::move(kernels);
  other["processes"] = std::move(processes);
  std::string text =
      "{\"displayTimeUnit\": \"ns\",\n\"otherData\": " + other.dump() + ",\n\"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    text += events[i].dump();
    text += i + 1 < events.size() ? ",\n" : "\n";
  }
  return text + "]}\n";
}

// ---------------------------------------------------------------- reading

namespace {

std::vector<std::string> stringList(const json::Value& list) {
  list.expectArray();
  std::vector<std::string> out;
  for (const json::Value& v : list.elements()) {
    out.push_back(v.asString());
  }
  return out;
}

// A track from its thread name: "device D" or "link FROM->TO".
Track trackNamed(const json::Value& name) {
  const std::string& text = name.asString();
  Track track;
  track.name = text;
  auto place = [&](const std::string& p) { return p == "host" ? plan::kHost : std::stoi(p); };
  try {
    if (text.rfind("device ", 0) == 0) {
      track.device = std::stoi(text.substr(7));
      return track;
    }
    const std::size_t arrow = text.find("->");
    if (text.rfind("link ", 0) == 0 && arrow != std::string::npos) {
      track.kind = Track::Kind::Link;
      track.from = place(text.substr(5, arrow - 5));
      track.to = place(text.substr(arrow + 2));
      return track;
    }
  } catch (const std::exception&) {
  }
  name.fail("expected a track name \"device D\" or \"link FROM->TO\", got " +
            json::brief(name.json()));
}

Slice::Kind sliceKind(const json::Value& cat) {
  const std::string& text = cat.asString();
  for (const auto& [kind, name] : kCategories) {
    if (text == name) {
      return kind;
    }
  }
  cat.fail("expected \"shard\", \"transfer\" or \"reduction\", got " + json::brief(cat.json()));
}

struct TraceReader {
  TimelinePicture& picture;
  std::map<std::int64_t, Timeline> processes;

  std::size_t opIndex(const json::Value& name) const {
    const auto at =
        std::find(picture.operations.begin(), picture.operations.end(), name.asString());
    if (at == picture.operations.end()) {
      name.fail("unknown operation " + json::brief(name.json()));
    }
    return static_cast<std::size_t>(at - picture.operations.begin());
  }

  std::size_t trackIndex(Timeline& t, const json::Value& tid) {
    const std::int64_t id = tid.asInt64();
    if (id < 1 || id > 1 << 20) {
      tid.fail("expected a thread id from 1 to 1048576");
    }
    const auto index = static_cast<std::size_t>(id - 1);
    if (t.tracks.size() <= index) {
      t.tracks.resize(index + 1);
    }
    return index;
  }

  void event(const json::Value& e) {
    e.expectObject();
    const std::string& ph = e.member("ph").asString();
    if (ph != "M" && ph != "X") {
      return; // flows and counters are not drawn
    }
    Timeline& t = processes[e.member("pid").asInt64()];
    const std::string& name = e.member("name").asString();
    if (ph == "M") {
      if (name == "process_name") {
        t.label = e.member("args").member("name").asString();
      } else if (name == "thread_name") {
        t.tracks[trackIndex(t, e.member("tid"))] = trackNamed(e.member("args").member("name"));
      }
      return;
    }
    Slice s;
    s.kind = sliceKind(e.member("cat"));
    s.track = trackIndex(t, e.member("tid"));
    s.name = name;
    s.start = s.spanStart = e.member("ts").asDouble() / kMicroseconds;
    s.end = s.start + e.member("dur").asDouble() / kMicroseconds;
    const json::Value args = e.member("args");
    s.op = opIndex(args.member("operation"));
    s.critical = args.has("critical") && args.member("critical").asBool();
    t.end = std::max(t.end, s.end);
    t.slices.push_back(std::move(s));
  }
};

} // namespace

TimelinePicture timelinePictureFromTrace(const json::Value& trace) {
  trace.expectObject();
  const json::Value other = trace.member("otherData");
  other.expectObject();
  const json::Value tag = other.member("tapestry");
  if (tag.asString() != "trace/v1") {
    tag.fail("unknown trace format " + json::brief(tag.json()) + " (expected \"trace/v1\")");
  }
  TimelinePicture picture;
  picture.name = other.member("graph").asString();
  picture.target = other.member("target").asString();
  picture.operations = stringList(other.member("operations"));
  picture.kernels = stringList(other.member("kernels"));
  TraceReader reader{picture, {}};
  const json::Value events = trace.member("traceEvents");
  events.expectArray();
  for (const json::Value& e : events.elements()) {
    reader.event(e);
  }
  for (auto& [pid, t] : reader.processes) {
    picture.timelines.push_back(std::move(t));
  }
  return picture;
}

} // namespace tapestry::render
