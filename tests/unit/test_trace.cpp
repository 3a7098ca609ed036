// Timelines and traces (core/render/timeline.hpp, trace.hpp; tapestry trace,
// run --trace, bench --trace). A trace is parsed as a Perfetto user's tool
// would read it and checked against the Trace Event Format: every slice on a
// thread that names it, slices on one thread nested or apart (never partially
// overlapping), events of a thread in time order, flows that bind to slices,
// counters in time order, and times in microseconds (the predicted process
// ends at the plan's predicted time x 1e6). bench --trace on every testdata
// plan: its measured slices add up, per device, to the busy time bench reports
// for the median run within 5% (the trace is that run), and the prediction is
// beside it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

#include "core/cost/plan_file.hpp"
#include "core/driver/run_command.hpp"
#include "core/driver/trace_command.hpp"
#include "core/render/render.hpp"
#include "core/render/timeline.hpp"
#include "core/render/trace.hpp"
#include "fixtures.hpp"

using namespace tapestry;
using tapestry::testing::failureOf;
using tapestry::testing::lib;
using tapestry::testing::testdataPlans;

namespace {

std::filesystem::path tempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tapestry-trace-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// What a checked trace holds, per process.
struct Process {
  std::string name;
  std::map<int, std::string> threads; // tid -> name
  double end = 0;                     // µs
  std::map<int, double> busy;         // tid -> summed slice durations, µs
  std::size_t slices = 0;
  std::size_t flows = 0;
  std::map<std::string, std::int64_t> counterPeak;
};

// Parses and validates a trace (the rules in the header comment); returns its
// processes by pid.
std::map<int, Process> checkTrace(const std::string& text) {
  const Json doc = Json::parse(text);
  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("traceEvents"));
  REQUIRE(doc["traceEvents"].is_array());
  const std::string unit = doc.value("displayTimeUnit", "ms");
  CHECK((unit == "ms" || unit == "ns"));
  CHECK(doc["otherData"]["tapestry"] == "trace/v1");
  std::map<int, Process> processes;
  using Thread = std::pair<int, int>;
  std::map<Thread, std::vector<std::pair<double, double>>> slices; // file order
  std::map<std::int64_t, std::pair<const Json*, const Json*>> flows;
  std::map<std::pair<int, std::string>, double> counterTime;
  for (const Json& e : doc["traceEvents"]) {
    REQUIRE(e.is_object());
    const std::string ph = e.at("ph");
    const int pid = e.at("pid");
    Process& p = processes[pid];
    if (ph == "M") {
      if (e["name"] == "process_name") {
        p.name = e["args"]["name"];
      } else if (e["name"] == "thread_name") {
        p.threads[e.at("tid").get<int>()] = e["args"]["name"];
      }
    } else if (ph == "X") {
      const int tid = e.at("tid");
      INFO(e.dump());
      REQUIRE(p.threads.count(tid) == 1); // named before its slices
      const double ts = e.at("ts");
      const double dur = e.at("dur");
      CHECK(ts >= 0);
      CHECK(dur >= 0);
      CHECK(std::set<std::string>{"shard", "transfer", "reduction"}.count(e.at("cat")) == 1);
      CHECK(e.at("args").contains("operation"));
      slices[{pid, tid}].push_back({ts, ts + dur});
      p.end = std::max(p.end, ts + dur);
      p.busy[tid] += dur;
      ++p.slices;
    } else if (ph == "s" || ph == "f") {
      auto& pair = flows[e.at("id").get<std::int64_t>()];
      (ph == "s" ? pair.first : pair.second) = &e;
    } else if (ph == "C") {
      const std::string name = e.at("name");
      const double ts = e.at("ts");
      auto [at, added] = counterTime.emplace(std::make_pair(pid, name), ts);
      CHECK(ts >= at->second); // in time order
      at->second = ts;
      const std::int64_t bytes = e.at("args").at("bytes");
      CHECK(bytes >= 0);
      p.counterPeak[name] = std::max(p.counterPeak[name], bytes);
    } else {
      FAIL("unexpected event phase " << ph);
    }
  }
  // One thread's slices: in start order, and nested or apart.
  const double eps = 1e-6;
  for (const auto& [thread, list] : slices) {
    std::vector<double> open; // ends of the enclosing slices
    for (std::size_t i = 0; i < list.size(); ++i) {
      INFO("pid " << thread.first << " tid " << thread.second << " slice " << i);
      if (i > 0) {
        CHECK(list[i].first >= list[i - 1].first);
      }
      while (!open.empty() && open.back() <= list[i].first + eps) {
        open.pop_back();
      }
      if (!open.empty()) {
        CHECK(list[i].second <= open.back() + eps); // nested, never partially overlapping
      }
      open.push_back(list[i].second);
    }
  }
  // Flows: both ends, the finish not before the start, each inside a slice.
  auto inSlice = [&](const Json& e) {
    for (const auto& [from, to] : slices[{e.at("pid").get<int>(), e.at("tid").get<int>()}]) {
      const double ts = e.at("ts");
      if (from - eps <= ts && ts <= to + eps) {
        return true;
      }
    }
    return false;
  };
  for (const auto& [id, ends] : flows) {
    INFO("flow " << id);
    REQUIRE(ends.first != nullptr);
    REQUIRE(ends.second != nullptr);
    CHECK(ends.second->at("ts").get<double>() >= ends.first->at("ts").get<double>() - eps);
    CHECK(ends.second->at("bp") == "e");
    CHECK(inSlice(*ends.first));
    CHECK(inSlice(*ends.second));
    ++processes[ends.first->at("pid").get<int>()].flows;
  }
  return processes;
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The tid of the thread named `name`; 0 when none.
int threadNamed(const Process& p, const std::string& name) {
  for (const auto& [tid, n] : p.threads) {
    if (n == name) {
      return tid;
    }
  }
  return 0;
}

} // namespace

TEST_CASE("bench --trace: a valid trace, the prediction beside the run, busy times add up",
          "[trace][command]") {
  const std::filesystem::path dir = tempDir("bench");
  for (const std::string& planPath : testdataPlans()) {
    INFO(planPath);
    driver::BenchConfig config;
    config.planPath = planPath;
    config.repeat = 5;
    config.maxRepeat = 5;
    config.warmup = 1;
    config.json = true;
    config.tracePath = (dir / "bench.trace.json").string();
    std::ostringstream out;
    std::ostringstream err;
    REQUIRE(driver::benchCommand(config, out, err) == 0);
    const Json report = Json::parse(out.str());
    CHECK(report["trace"]["output"] == config.tracePath);
    const plan::LoadedPlan loaded = plan::loadPlan(planPath, lib());
    const std::map<int, Process> processes = checkTrace(readFile(config.tracePath));
    REQUIRE(processes.size() == 2);
    const Process& predicted = processes.at(1);
    const Process& measured = processes.at(2);
    CHECK(predicted.name.rfind("predicted", 0) == 0);
    CHECK(measured.name.rfind("measured", 0) == 0);
    // Units: the prediction ends at the predicted time, in microseconds.
    CHECK(predicted.end == Approx(loaded.simulation.objectives.timeS * 1e6).epsilon(1e-9));
    CHECK(predicted.slices == measured.slices);
    CHECK(predicted.flows > 0);
    // Per device, the measured slices add up to bench's busy time within 5%.
    REQUIRE(report["devices"].size() == static_cast<std::size_t>(loaded.plan.deviceCount));
    for (const Json& device : report["devices"]) {
      const int d = device["device"];
      const int tid = threadNamed(measured, "device " + std::to_string(d));
      REQUIRE(tid != 0);
      const double busy = device["measured_busy_s"].get<double>() * 1e6;
      const double traced = measured.busy.count(tid) ? measured.busy.at(tid) : 0.0;
      INFO("device " << d << ": traced " << traced << " us, bench " << busy << " us");
      CHECK(std::fabs(traced - busy) <= 0.05 * busy + 1e-9);
      // The median run's devices are busy for at most its wall time (the median).
      CHECK(busy <= report["plan"]["measured_s"].get<double>() * 1e6 * (1 + 1e-9));
      const double predictedBusy = device["predicted_busy_s"].get<double>() * 1e6;
      const double predictedTraced = predicted.busy.count(tid) ? predicted.busy.at(tid) : 0.0;
      CHECK(predictedTraced == Approx(predictedBusy).epsilon(1e-9).margin(1e-9));
    }
    // Memory: the prediction's counter reaches each device's simulated peak.
    for (std::size_t d = 0; d < loaded.simulation.peakPerDevice.size(); ++d) {
      const std::string name = "memory device " + std::to_string(d);
      const std::int64_t peak =
          predicted.counterPeak.count(name) ? predicted.counterPeak.at(name) : 0;
      CHECK(peak >= loaded.simulation.peakPerDevice[d]);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("tapestry trace writes the prediction, run --trace a run beside it", "[trace][command]") {
  const std::filesystem::path dir = tempDir("predicted");
  const std::string planPath = std::string(TAPESTRY_TESTDATA_DIR) + "/plans/mlp_2dev.json";
  driver::TraceConfig config;
  config.planPath = planPath;
  config.outputPath = (dir / "mlp.trace.json").string();
  config.json = true;
  std::ostringstream out;
  std::ostringstream err;
  REQUIRE(driver::traceCommand(config, out, err) == 0);
  const Json summary = Json::parse(out.str());
  CHECK(summary["status"] == "ok");
  const std::string text = readFile(config.outputPath);
  CHECK(summary["bytes"] == text.size());
  const std::map<int, Process> processes = checkTrace(text);
  REQUIRE(processes.size() == 1);
  CHECK(processes.at(1).slices == summary["slices"]);

  driver::RunConfig run;
  run.planPath = planPath;
  run.quiet = true;
  run.tracePath = (dir / "run.trace.json").string();
  REQUIRE(driver::runCommand(run, out, err) == 0);
  CHECK(checkTrace(readFile(run.tracePath)).size() == 2);

  // Read back for the timeline view: one timeline per process, every slice.
  const json::Document doc = json::Document::parse(SourceFile::read(run.tracePath, "a trace"));
  const render::TimelinePicture picture = render::timelinePictureFromTrace(json::Value(doc));
  REQUIRE(picture.timelines.size() == 2);
  CHECK(picture.timelines[0].slices.size() == processes.at(1).slices);
  CHECK(render::timelineView(picture, {}).contentNodes == 2 * processes.at(1).slices);
  std::filesystem::remove_all(dir);
}

TEST_CASE("traces: bad outputs fail before any work and leave no file", "[trace][command]") {
  const std::filesystem::path dir = tempDir("errors");
  const std::string planPath = std::string(TAPESTRY_TESTDATA_DIR) + "/plans/mm_relu_2dev.json";
  driver::TraceConfig config;
  config.planPath = planPath;
  config.outputPath = (dir / "missing" / "t.json").string();
  std::ostringstream out;
  std::ostringstream err;
  auto failure = failureOf([&] { driver::traceCommand(config, out, err); });
  CHECK(failure.code == ExitCode::InvalidInput);
  CHECK(failure.message == "cannot write output file: No such file or directory");
  config.outputPath = dir.string();
  failure = failureOf([&] { driver::traceCommand(config, out, err); });
  CHECK(failure.message == "cannot write output file: is a directory");
  config.planPath = (dir / "nope.json").string();
  config.outputPath = (dir / "t.json").string();
  failure = failureOf([&] { driver::traceCommand(config, out, err); });
  CHECK(failure.code == ExitCode::InvalidInput);
  CHECK_FALSE(std::filesystem::exists(dir / "t.json"));

  driver::BenchConfig bench;
  bench.planPath = planPath;
  bench.tracePath = "-";
  CHECK_THROWS_AS(driver::benchCommand(bench, out, err), UsageError);
  bench.tracePath = (dir / "missing" / "b.json").string();
  failure = failureOf([&] { driver::benchCommand(bench, out, err); });
  CHECK(failure.message == "cannot write output file: No such file or directory");
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("timeline: slices per track never partially overlap, the critical path ends last",
          "[trace]") {
  for (const std::string& planPath : testdataPlans()) {
    INFO(planPath);
    const plan::LoadedPlan loaded = plan::loadPlan(planPath, lib());
    const render::Timeline t =
        render::buildTimeline(loaded, render::intervalsOf(loaded.simulation), "predicted");
    CHECK(t.end == Approx(loaded.simulation.objectives.timeS));
    bool lastIsCritical = false;
    for (std::size_t i = 0; i < t.slices.size(); ++i) {
      const render::Slice& s = t.slices[i];
      CHECK(s.start <= s.end);
      CHECK(s.spanStart <= s.start);
      if (i > 0 && t.slices[i - 1].track == s.track) {
        CHECK(t.slices[i - 1].end <= s.start + 1e-12);
      }
      lastIsCritical = lastIsCritical || (s.critical && s.end == t.end);
    }
    CHECK(lastIsCritical);
    CHECK(t.memory.size() == static_cast<std::size_t>(loaded.plan.deviceCount));
  }
}

namespace {

// The label attributes of a drawing's nodes.
std::vector<std::string> nodeLabels(const render::Drawing& d) {
  std::vector<std::string> labels;
  for (const render::Node& n : d.nodes) {
    for (const render::Attr& a : n.attrs) {
      if (a.name == "label") {
        labels.push_back(a.value);
      }
    }
  }
  return labels;
}

bool anyContains(const std::vector<std::string>& texts, const std::string& what) {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const std::string& t) { return t.find(what) != std::string::npos; });
}

} // namespace

TEST_CASE("timeline view: past 20 operations colours by kernel, many device links share a row "
          "per sender, links that carry nothing have no row",
          "[trace]") {
  render::TimelinePicture p;
  p.name = "big";
  p.target = "eight";
  for (int op = 0; op < 24; ++op) {
    p.operations.push_back("op" + std::to_string(op));
    p.kernels.push_back(op % 3 == 0 ? "conv2d" : op % 3 == 1 ? "relu" : "add");
  }
  render::Timeline t;
  t.label = "predicted";
  for (int d = 0; d < 8; ++d) {
    render::Track track;
    track.device = d;
    track.name = "device " + std::to_string(d);
    t.tracks.push_back(track);
  }
  auto addLink = [&](int from, int to, double seconds) {
    render::Track track;
    track.kind = render::Track::Kind::Link;
    track.from = from;
    track.to = to;
    track.name = "link " + (from == plan::kHost ? std::string("host") : std::to_string(from)) +
                 "->" + std::to_string(to);
    t.tracks.push_back(track);
    render::Slice s;
    s.kind = render::Slice::Kind::Transfer;
    s.track = t.tracks.size() - 1;
    s.op = t.tracks.size() % 24;
    s.name = "x " + std::to_string(from) + "->" + std::to_string(to);
    s.start = s.spanStart = 1e-6;
    s.end = s.start + seconds;
    t.slices.push_back(s);
  };
  addLink(plan::kHost, 0, 0); // read in place: carries nothing
  for (int from = 0; from < 8; ++from) {
    for (int to = 0; to < 8; ++to) {
      if (from != to) {
        addLink(from, to, 2e-6);
      }
    }
  }
  for (int op = 0; op < 24; ++op) {
    render::Slice s;
    s.track = static_cast<std::size_t>(op % 8);
    s.index = s.op = static_cast<std::size_t>(op);
    s.name = p.operations[static_cast<std::size_t>(op)] + " #0";
    s.start = s.spanStart = 1e-5 * op;
    s.end = s.start + 1e-5;
    t.slices.push_back(s);
  }
  t.end = 2.4e-4;
  p.timelines.push_back(t);

  const render::Drawing d = render::timelineView(p, {});
  const std::vector<std::string> labels = nodeLabels(d);
  CHECK(anyContains(labels, "conv2d (8 operations)"));
  CHECK(anyContains(labels, "relu (8 operations)"));
  CHECK_FALSE(anyContains(labels, "op13 (relu)")); // no row per operation
  for (int from = 0; from < 8; ++from) {
    CHECK(std::count(labels.begin(), labels.end(), "links " + std::to_string(from) + "->*") == 1);
  }
  CHECK_FALSE(anyContains(labels, "link 0->1"));
  CHECK_FALSE(anyContains(labels, "link host")); // the in-place read: no row, no box
  CHECK(d.contentNodes == 56 + 24);

  // Few operations and links: a colour and a row each, as before.
  p.operations.resize(20);
  p.kernels.resize(20);
  render::Timeline& small = p.timelines[0];
  small.slices.erase(std::remove_if(small.slices.begin(), small.slices.end(),
                                    [](const render::Slice& s) {
                                      return s.kind == render::Slice::Kind::Transfer &&
                                             s.track > 8 + 6;
                                    }),
                     small.slices.end());
  for (render::Slice& s : small.slices) {
    s.op %= 20;
  }
  const std::vector<std::string> fewer = nodeLabels(render::timelineView(p, {}));
  CHECK(anyContains(fewer, "op13 (relu)"));
  CHECK(anyContains(fewer, "link 0->1"));
  CHECK_FALSE(anyContains(fewer, "->*"));
}
