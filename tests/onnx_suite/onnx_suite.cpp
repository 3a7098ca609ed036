// ONNX's backend test suite (Debian's libonnx-testdata) through tapestry, in
// process: each test's model.onnx is imported (core/onnx), expanded with the
// standard library, and run on the CPU backend twice, unsharded and as a
// 2-device plan on the cpu-2 target (the data_parallel baseline: every
// operation split along its leading non-reduction dim), on the inputs of each
// test_data_set_N; every output is compared with the suite's at rtol 1e-3,
// atol 1e-5 (|got - want| <= atol + rtol |want|, NaN equal to NaN, dtype and
// shape exact), as ONNX's backend runner compares.
//
// A test passes when every data set matches both ways. Each test runs in a
// forked child (a crash or a hang is that test's result, not the suite's);
// a refusal must be exit 1 (tapestry::Error) with a message, and anything
// else (an internal error, another exit code, a signal) is counted apart.
//
//   onnx_suite DATA_DIR [--suite node] [--shard K/N] [--expected FILE]
//              [--only NAME] [--verbose] [--timeout SECONDS]
//
// With --expected: exit 1 when a listed test (of the suites and shard run)
// does not pass, or when any refusal is not a clean exit 1; newly passing
// tests are printed, not failed. The summary prints the pass counts per suite
// and the refusal reasons by count.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/dtype.hpp"
#include "backends/executor.hpp"
#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/onnx/importer.hpp"
#include "core/onnx/internal.hpp"
#include "core/plan/plan.hpp"
#include "core/search/baselines.hpp"
#include "core/search/space.hpp"

namespace fs = std::filesystem;
using namespace tapestry;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
const std::vector<std::string> kSuites = {"node", "pytorch-converted", "pytorch-operator",
                                          "simple"};

// One test's result, as the child reports it on a pipe: one line
// "STATUS\tSTAGE\tDETAIL".
struct Outcome {
  std::string status; // pass | mismatch | refused | bad-exit | internal | crash | timeout
  std::string stage;  // import | expand | plan | run (where a refusal came from)
  std::string detail;
};

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot open " + path.string());
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

onnx_import::detail::Constant readTensor(const fs::path& path) {
  ::onnx::TensorProto t;
  if (!t.ParseFromString(readFile(path))) {
    throw Error("not a TensorProto: " + path.string());
  }
  return onnx_import::detail::decodeTensor(t, path.string());
}

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1F;
  std::uint32_t mantissa = h & 0x3FF;
  std::uint32_t bits = 0;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // subnormal: normalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3FF) << 13);
    }
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Every element of C-order little-endian `bytes` of ONNX element type `type`.
std::vector<double> valuesOf(int type, const std::string& bytes,
                             const std::vector<std::int64_t>& shape) {
  if (type == ::onnx::TensorProto::FLOAT16 || type == ::onnx::TensorProto::BFLOAT16) {
    std::vector<double> out(bytes.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t v = 0;
      std::memcpy(&v, bytes.data() + 2 * i, 2);
      if (type == ::onnx::TensorProto::FLOAT16) {
        out[i] = halfToFloat(v);
      } else {
        const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
        float f = 0;
        std::memcpy(&f, &bits, 4);
        out[i] = f;
      }
    }
    return out;
  }
  onnx_import::detail::Constant c;
  c.type = type;
  c.shape = shape;
  c.bytes = bytes;
  return c.values();
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + "]";
}

// "" when `got` matches `want`, else what differs.
std::string compare(const std::string& name, const backend::Buffer& got,
                    const onnx_import::detail::Constant& stored) {
  const std::string gotType = backend::dtypeName(got.dtype());
  onnx_import::detail::Constant want = stored;
  if (got.dtype() == backend::DType::BFloat16 && want.type == ::onnx::TensorProto::UINT16) {
    // ONNX's backend test generator writes bfloat16 data as its uint16 bits
    // (NumPy has no bfloat16): the bits are the model's declared bfloat16.
    want.type = ::onnx::TensorProto::BFLOAT16;
  }
  const std::string wantType = onnx_import::detail::dtypeName(want.type);
  if (gotType != wantType) {
    return "output " + name + " is " + gotType + ", expected " + wantType;
  }
  const std::vector<std::int64_t> gotShape = got.region().shape().vector();
  if (gotShape != want.shape) {
    return "output " + name + " has shape " + shapeText(gotShape) + ", expected " +
           shapeText(want.shape);
  }
  const std::string bytes(reinterpret_cast<const char*>(got.data()),
                          static_cast<std::size_t>(got.byteSize()));
  const std::vector<double> a = valuesOf(want.type, bytes, gotShape);
  const std::vector<double> b = valuesOf(want.type, want.bytes, want.shape);
  std::size_t bad = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
                      std::abs(a[i] - b[i]) <= kAtol + kRtol * std::abs(b[i]);
    if (!same && bad++ == 0) {
      first = i;
    }
  }
  if (bad == 0) {
    return "";
  }
  std::ostringstream s;
  s << "output " << name << ": " << bad << " of " << a.size() << " elements differ (first at "
    << first << ": " << a[first] << ", expected " << b[first] << ")";
  return s.str();
}

struct Context {
  metakernel::MetakernelLibrary library;
  cost::Target target; // cpu-2: the unsharded plan runs on its device 0
};

struct Stage {
  std::string name;
};

// The model's graph inputs that are not initializers: the suite's inputs go to
// them in order (as ONNX's backend runner passes them).
std::vector<std::string> inputNamesOf(const ::onnx::ModelProto& model) {
  std::set<std::string> initializers;
  for (const ::onnx::TensorProto& t : model.graph().initializer()) {
    initializers.insert(t.name());
  }
  std::vector<std::string> inputNames;
  for (const ::onnx::ValueInfoProto& v : model.graph().input()) {
    if (initializers.count(v.name()) == 0) {
      inputNames.push_back(v.name());
    }
  }
  return inputNames;
}

// The test's data sets (test_data_set_N), in order.
std::vector<fs::path> dataSets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    throw Error("no test_data_set_N in " + dir.string());
  }
  return sets;
}

// Imports a test's model. Graph inputs that import needs as constants (a
// Slice's starts, a ReduceSum's axes) take their values from the first test
// data set, `firstSet`, as `import --values` does (`bound` gets their bytes);
// the others stay inputs.
onnx_import::ImportResult importTest(const std::string& bytes, const fs::path& dir,
                                     const fs::path& firstSet,
                                     const std::vector<std::string>& inputNames,
                                     std::map<std::string, std::string>& bound) {
  onnx_import::ImportOptions importOptions;
  importOptions.inputValue =
      [&](const std::string& name) -> std::optional<onnx_import::TensorData> {
    const auto at = std::find(inputNames.begin(), inputNames.end(), name);
    const fs::path file = firstSet / ("input_" + std::to_string(at - inputNames.begin()) + ".pb");
    if (at == inputNames.end() || !fs::exists(file)) {
      return std::nullopt;
    }
    const onnx_import::detail::Constant c = readTensor(file);
    const std::string dtype = onnx_import::detail::dtypeName(c.type);
    if (dtype.empty()) {
      return std::nullopt;
    }
    bound[name] = c.bytes;
    return onnx_import::TensorData{name, dtype, c.shape, c.bytes};
  };
  return onnx_import::importModel(bytes, (dir / "model.onnx").string(), importOptions);
}

// Runs one test (in the child). Throws what tapestry throws; `stage` says where.
Outcome runTest(const Context& ctx, const fs::path& dir, Stage& stage) {
  stage.name = "import";
  const std::string bytes = readFile(dir / "model.onnx");
  ::onnx::ModelProto model;
  model.ParseFromString(bytes);
  const std::vector<std::string> inputNames = inputNamesOf(model);
  std::map<std::string, std::string> bound; // input -> the bytes import took
  const std::vector<fs::path> sets = dataSets(dir);
  const onnx_import::ImportResult imported = importTest(bytes, dir, sets[0], inputNames, bound);

  stage.name = "expand";
  const json::Document document = json::Document::parse(
      SourceFile((dir / "model.onnx").string() + " (imported)", imported.graph.dump()));
  const graph::ExpandedGraph g =
      graph::expand(graph::decodeGraph(json::Value(document)), ctx.library);

  std::vector<std::string> outputNames;
  for (const ::onnx::ValueInfoProto& v : model.graph().output()) {
    outputNames.push_back(v.name());
  }

  backend::TensorBuffers constants;
  for (const onnx_import::TensorData& t : imported.constants) {
    if (!t.present) {
      throw Error("constant " + t.name + " is external data the model does not hold");
    }
    backend::Buffer b = backend::Buffer::host(backend::parseDType(t.dtype), t.shape);
    std::memcpy(b.data(), t.bytes.data(), t.bytes.size());
    constants[t.name] = b;
  }

  stage.name = "plan";
  const int deviceCount = ctx.target.deviceCount();
  plan::PlanChoice parallel = plan::singleDeviceChoice(g);
  {
    const search::SearchSpace space(g, deviceCount);
    const plan::PlanContext context(g);
    for (search::Baseline& b : search::makeBaselines(space, context)) {
      if (b.name == "data_parallel") {
        parallel = b.choice;
      }
    }
  }
  const plan::ShardPlan single = plan::buildPlan(g, deviceCount, plan::singleDeviceChoice(g));
  const cost::Simulation singleSim = cost::simulate(g, ctx.target, single);
  const plan::ShardPlan sharded = plan::buildPlan(g, deviceCount, parallel);
  const cost::Simulation shardedSim = cost::simulate(g, ctx.target, sharded);

  stage.name = "run";
  backend::ExecuteOptions options;
  options.blasThreads = 1; // ctest runs suite shards side by side
  for (const fs::path& set : sets) {
    backend::TensorBuffers inputs = constants;
    for (std::size_t i = 0; fs::exists(set / ("input_" + std::to_string(i) + ".pb")); ++i) {
      if (i >= inputNames.size()) {
        throw Error(set.string() + " has more inputs than the model");
      }
      const onnx_import::detail::Constant c =
          readTensor(set / ("input_" + std::to_string(i) + ".pb"));
      if (const auto b = bound.find(inputNames[i]); b != bound.end()) {
        if (b->second != c.bytes) {
          throw Error("input " + inputNames[i] +
                      " is a constant at import, but its value differs between test data sets");
        }
        continue;
      }
      const std::string dtype = onnx_import::detail::dtypeName(c.type);
      if (dtype.empty()) {
        throw Error("input " + inputNames[i] + " has element type " + std::to_string(c.type) +
                    ", which tapestry has no dtype for");
      }
      backend::Buffer b = backend::Buffer::host(backend::parseDType(dtype), c.shape);
      std::memcpy(b.data(), c.bytes.data(), c.bytes.size());
      inputs[inputNames[i]] = b;
    }
    for (const bool unsharded : {true, false}) {
      backend::CpuBackend cpu(deviceCount);
      const backend::Execution run =
          unsharded ? backend::execute(g, single, cpu, inputs, options, &singleSim)
                    : backend::execute(g, sharded, cpu, inputs, options, &shardedSim);
      for (std::size_t k = 0; k < outputNames.size(); ++k) {
        const fs::path file = set / ("output_" + std::to_string(k) + ".pb");
        if (!fs::exists(file)) {
          continue;
        }
        auto it = run.outputs.find(outputNames[k]);
        if (it == run.outputs.end()) {
          return {"mismatch", "run", "output " + outputNames[k] + " is missing"};
        }
        const std::string diff = compare(outputNames[k], it->second, readTensor(file));
        if (!diff.empty()) {
          return {"mismatch", "run",
                  (unsharded ? "unsharded: " : "2 devices: ") + set.filename().string() + ": " +
                      diff};
        }
      }
    }
  }
  return {"pass", "run", ""};
}

// `s` on one line, without the list of supported operators an unsupported
// one's message ends with (the same list for every test).
std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  if (const std::size_t list = s.find("; tapestry imports: "); list != std::string::npos) {
    const std::size_t body = s.find(" (in the function body of ", list);
    s = s.substr(0, list) + (body == std::string::npos ? "" : s.substr(body));
  }
  return s;
}

// Runs the test in a forked child, which reports its Outcome on a pipe.
Outcome runIsolated(const Context& ctx, const fs::path& dir, int timeoutSeconds) {
  int fds[2];
  if (pipe(fds) != 0) {
    return {"internal", "", "pipe failed"};
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeoutSeconds));
    Outcome o;
    Stage stage;
    try {
      o = runTest(ctx, dir, stage);
    } catch (const Error& e) {
      const std::string message = oneLine(e.message());
      if (e.exitCode() != ExitCode::InvalidInput || message.empty()) {
        o = {"bad-exit", stage.name,
             "exit " + std::to_string(static_cast<int>(e.exitCode())) + ": " + message};
      } else {
        o = {"refused", stage.name, message};
      }
    } catch (const std::exception& e) {
      o = {"internal", stage.name, oneLine(e.what())};
    } catch (...) {
      o = {"internal", stage.name, "unknown exception"};
    }
    const std::string line = o.status + "\t" + o.stage + "\t" + oneLine(o.detail) + "\n";
    std::size_t written = 0;
    while (written < line.size()) {
      const ssize_t n = write(fds[1], line.data() + written, line.size() - written);
      if (n <= 0) {
        break;
      }
      written += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM) {
      return {"timeout", "", "over " + std::to_string(timeoutSeconds) + " s"};
    }
    return {"crash", "", std::string("signal ") + strsignal(sig)};
  }
  const std::size_t a = text.find('\t');
  const std::size_t b = a == std::string::npos ? a : text.find('\t', a + 1);
  if (b == std::string::npos) {
    return {"crash", "", "the child exited without a result"};
  }
  std::string detail = text.substr(b + 1);
  while (!detail.empty() && detail.back() == '\n') {
    detail.pop_back();
  }
  return {text.substr(0, a), text.substr(a + 1, b - a - 1), detail};
}

// The reason a refusal is counted under: the operator for an unsupported one,
// else the message without the file and node names.
std::string reasonOf(const Outcome& o) {
  std::string d = o.detail;
  const std::string unsupported = "unsupported ONNX operator ";
  if (std::size_t at = d.find(unsupported); at != std::string::npos) {
    const std::size_t start = at + unsupported.size();
    const std::size_t end = d.find(' ', start);
    std::string reason = "unsupported operator " + d.substr(start, end - start);
    if (std::size_t in = d.find("(in the function body of "); in != std::string::npos) {
      reason += " " + d.substr(in);
    }
    return reason;
  }
  if (std::size_t needs = d.find(") needs "); needs != std::string::npos) {
    const std::size_t open = d.rfind(" (", needs);
    const std::size_t comma = d.find(',', needs);
    return d.substr(needs + 8, comma - needs - 8) + " (" + d.substr(open + 2, needs - open - 2) +
           ")";
  }
  // Drop "node NAME (" style names: keep from the first ": " after the file.
  if (std::size_t colon = d.find(": error: "); colon != std::string::npos) {
    d = d.substr(colon + 9);
  }
  for (const std::string named : {"node ", "graph input ", "graph output "}) {
    if (d.rfind(named, 0) == 0) {
      const std::size_t space = d.find(' ', named.size());
      d = named.substr(0, named.size() - 1) + d.substr(space);
    }
  }
  if (d.size() > 110) {
    d = d.substr(0, 107) + "...";
  }
  return o.stage + ": " + d;
}

std::set<std::string> readList(const std::string& path) {
  std::set<std::string> out;
  std::ifstream in(path);
  if (!in) {
    throw Error("cannot open the expected pass list " + path);
  }
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      out.insert(line);
    }
  }
  return out;
}

struct Summary {
  const std::map<std::string, std::pair<int, int>>& perSuite; // passed, run
  const std::map<std::string, int>& reasons;
  const std::map<std::string, int>& statusCount;
  int shard = 0;
  int shards = 1;
};

// The pass counts per suite and the refusal reasons, most frequent first.
void printSummary(const Summary& s) {
  const auto& [perSuite, reasons, statusCount, shard, shards] = s;
  int total = 0;
  int passedAll = 0;
  std::cout << "ONNX backend tests (rtol " << kRtol << ", atol " << kAtol
            << "; unsharded and 2 devices on cpu-2)";
  if (shards > 1) {
    std::cout << ", shard " << shard + 1 << "/" << shards;
  }
  std::cout << ":\n";
  for (const auto& [suite, counts] : perSuite) {
    std::cout << "  " << suite << ": " << counts.first << " of " << counts.second << " pass\n";
    total += counts.second;
    passedAll += counts.first;
  }
  std::cout << "  all: " << passedAll << " of " << total << " pass (";
  bool firstStatus = true;
  for (const auto& [status, n] : statusCount) {
    std::cout << (firstStatus ? "" : ", ") << n << " " << status;
    firstStatus = false;
  }
  std::cout << ")\n";
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [reason, n] : reasons) {
    ranked.emplace_back(-n, reason);
  }
  std::sort(ranked.begin(), ranked.end());
  std::cout << "refusal reasons by count:\n";
  for (const auto& [n, reason] : ranked) {
    std::cout << "  " << -n << "  " << reason << "\n";
  }
}

int usage() {
  std::cerr << "usage: onnx_suite DATA_DIR [--suite NAME]... [--shard K/N] [--expected FILE] "
               "[--only NAME] [--verbose] [--timeout SECONDS]\n";
  return 2;
}

struct Options {
  fs::path data;
  std::vector<std::string> suites;
  std::string expectedPath;
  std::string only;
  int shard = 0; // 0-based
  int shards = 1;
  bool verbose = false;
  int timeout = 120;
};

// The command line, or nullopt when it is not one usage() describes.
std::optional<Options> parseArgs(int argc, char** argv) {
  if (argc < 2) {
    return std::nullopt;
  }
  Options o;
  o.data = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--suite" && more) {
      o.suites.push_back(argv[++i]);
    } else if (a == "--expected" && more) {
      o.expectedPath = argv[++i];
    } else if (a == "--only" && more) {
      o.only = argv[++i];
    } else if (a == "--shard" && more) {
      const std::string s = argv[++i];
      const std::size_t slash = s.find('/');
      if (slash == std::string::npos) {
        return std::nullopt;
      }
      o.shard = std::stoi(s.substr(0, slash)) - 1;
      o.shards = std::stoi(s.substr(slash + 1));
      if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards) {
        return std::nullopt;
      }
    } else if (a == "--timeout" && more) {
      o.timeout = std::stoi(argv[++i]);
    } else if (a == "--verbose") {
      o.verbose = true;
    } else {
      return std::nullopt;
    }
  }
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parseArgs(argc, argv);
  if (!options) {
    return usage();
  }
  const auto& [data, parsedSuites, expectedPath, only, shard, shards, verbose, timeout] = *options;
  std::vector<std::string> suites = parsedSuites;
  if (suites.empty()) {
    suites = kSuites;
  }
  if (!fs::is_directory(data / "node")) {
    std::cerr << "onnx_suite: ONNX's backend test suite is not at " << data.string()
              << ": install it with scripts/install-deps.sh (Debian package libonnx-testdata)\n";
    return 1;
  }

  Context ctx;
  std::set<std::string> expected;
  try {
    ctx.library = metakernel::MetakernelLibrary::standard();
    ctx.target = cost::loadTarget("cpu-2");
    if (!expectedPath.empty()) {
      expected = readList(expectedPath);
    }
  } catch (const std::exception& e) {
    std::cerr << "onnx_suite: " << e.what() << "\n";
    return 1;
  }

  std::map<std::string, std::pair<int, int>> perSuite; // passed, run
  std::map<std::string, int> reasons;
  std::map<std::string, int> statusCount;
  std::vector<std::string> unexpectedFailures;
  std::vector<std::string> newPasses;
  std::vector<std::string> badRefusals;
  for (const std::string& suite : suites) {
    std::vector<fs::path> tests;
    for (const fs::directory_entry& e : fs::directory_iterator(data / suite)) {
      if (fs::exists(e.path() / "model.onnx")) {
        tests.push_back(e.path());
      }
    }
    std::sort(tests.begin(), tests.end());
    for (std::size_t i = 0; i < tests.size(); ++i) {
      const std::string name = suite + "/" + tests[i].filename().string();
      if (!only.empty() && tests[i].filename() != only && name != only) {
        continue;
      }
      if (only.empty() && static_cast<int>(i % static_cast<std::size_t>(shards)) != shard) {
        continue;
      }
      const Outcome o = runIsolated(ctx, tests[i], timeout);
      ++statusCount[o.status];
      auto& [passed, run] = perSuite[suite];
      ++run;
      if (o.status == "pass") {
        ++passed;
      } else if (o.status == "refused") {
        ++reasons[reasonOf(o)];
      } else if (o.status != "mismatch") {
        badRefusals.push_back(name + ": " + o.status + " (" + o.stage + "): " + o.detail);
      }
      if (verbose) {
        std::cout << name << ": " << o.status << (o.stage.empty() ? "" : " (" + o.stage + ")")
                  << (o.detail.empty() ? "" : ": " + o.detail) << "\n";
      }
      const bool listed = expected.count(name) != 0;
      if (listed && o.status != "pass") {
        unexpectedFailures.push_back(name + ": " + o.status + ": " + o.detail);
      } else if (!listed && o.status == "pass" && !expectedPath.empty()) {
        newPasses.push_back(name);
      }
    }
  }

  printSummary(Summary{perSuite, reasons, statusCount, shard, shards});
  for (const std::string& b : badRefusals) {
    std::cout << "NOT A CLEAN REFUSAL: " << b << "\n";
  }
  for (const std::string& p : newPasses) {
    std::cout << "newly passing (add it to the expected list): " << p << "\n";
  }
  for (const std::string& f : unexpectedFailures) {
    std::cout << "EXPECTED TO PASS: " << f << "\n";
  }
  if (!expectedPath.empty() && (!unexpectedFailures.empty() || !badRefusals.empty())) {
    return 1;
  }
  return 0;
}
