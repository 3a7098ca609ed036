#include "core/driver/rewrites_command.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "backends/check.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/executor.hpp"
#include "backends/tensor_io.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "core/rewrite/apply.hpp"
#include "core/rewrite/rule.hpp"
#include "core/search/mutate.hpp"

namespace tapestry::driver {

namespace {

using rewrite::Rule;

// An exact rule's two sides agree in float64 to this relative error (sums
// taken in another order); an approximate one to backend::kApproximateTolerance.
constexpr double kExactTolerance = 1e-10;
// Input draws per example.
constexpr std::uint64_t kSeeds = 3;
// Random shapes per example (each checked on one draw of inputs), the draws
// tried for them, and the most elements an input of one may have.
constexpr int kShapeVariants = 2;
constexpr int kShapeAttempts = 8;
constexpr std::int64_t kShapeMaxElements = std::int64_t{1} << 15;

// Kernels whose float64 results on small integers are exact whatever the
// order of their sums: products, sums, data movement, and max/min-style
// activations. A rule made only of these is also checked bit for bit.
bool exactOnIntegers(const std::string& kernel) {
  // clang-format off
  static const std::set<std::string, std::less<>> kExact = {
      "add", "sub", "neg", "mul", "sum", "matmul", "linear", "conv2d", "conv2d_act",
      "conv2d_grouped", "conv2d_grouped_act", "relu", "clip", "maximum", "minimum", "max",
      "min", "transpose", "reshape", "concat", "split", "slice"};
  // clang-format on
  return kExact.count(kernel) > 0;
}

bool integerRule(const Rule& rule) {
  return std::all_of(rule.match.begin(), rule.match.end(),
                     [](const rewrite::PatternOp& p) { return exactOnIntegers(p.kernel); }) &&
         std::all_of(rule.replace.begin(), rule.replace.end(),
                     [](const rewrite::ReplaceOp& r) { return exactOnIntegers(r.kernel); });
}

// Every float32/float64 input rounded to a small integer (x in [-1, 1) to
// round(8x)); false when an input has another dtype (then no exact check).
bool toIntegers(backend::TensorBuffers& inputs) {
  for (auto& [name, buffer] : inputs) {
    const std::int64_t n = buffer.elementCount();
    if (buffer.dtype() == backend::DType::Float32) {
      float* v = reinterpret_cast<float*>(buffer.data());
      std::transform(v, v + n, v, [](float x) { return std::nearbyint(8 * x); });
    } else if (buffer.dtype() == backend::DType::Float64) {
      double* v = reinterpret_cast<double*>(buffer.data());
      std::transform(v, v + n, v, [](double x) { return std::nearbyint(8 * x); });
    } else {
      return false;
    }
  }
  return true;
}

// A seed from a rule's name and an example's number (FNV-1a).
std::uint64_t shapeSeed(const Rule& rule, std::size_t example) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : rule.name + "#" + std::to_string(example)) {
    h = (h ^ c) * 0x100000001b3ull;
  }
  return h;
}

// The example with other shapes: every distinct dim above 1 of its inputs
// scaled by one factor (1 to 3, drawn per distinct value), so dims equal in
// the example stay equal and stay multiples of each other's divisors.
rewrite::Example scaledShapes(const rewrite::Example& ex, search::Rng& rng) {
  std::map<std::int64_t, std::int64_t> scaled;
  rewrite::Example out = ex;
  for (auto& [var, type] : out.inputs) {
    for (std::int64_t& d : type.shape) {
      if (d > 1) {
        auto it = scaled.find(d);
        if (it == scaled.end()) {
          it = scaled.emplace(d, d * (1 + static_cast<std::int64_t>(rng.below(3)))).first;
        }
        d = it->second;
      }
    }
  }
  return out;
}

std::string shapesText(const rewrite::Example& ex) {
  std::string out;
  for (const auto& [var, type] : ex.inputs) {
    std::string dims;
    for (std::int64_t d : type.shape) {
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    }
    out += (out.empty() ? "" : ", ") + var + ": [" + dims + "]";
  }
  return "{" + out + "}";
}

// What a check ran besides the examples' own draws.
struct Tally {
  std::size_t shapes = 0;  // random shapes checked
  std::size_t integer = 0; // instances checked exactly on integers
};

Json ruleJson(const Rule& r) {
  Json j = Json::object();
  j["name"] = r.name;
  j["file"] = r.location.file;
  j["line"] = r.location.line;
  j["always"] = r.always;
  j["search"] = r.search;
  j["approximate"] = r.approximate;
  j["match"] = json::arrayOf(r.match, [](const rewrite::PatternOp& p) { return p.kernel; });
  j["replace"] = json::arrayOf(r.replace, [](const rewrite::ReplaceOp& p) { return p.kernel; });
  j["examples"] = r.examples.size();
  j["doc"] = r.doc;
  return j;
}

// "conv2d, relu -> conv2d_act"
std::string summary(const Rule& r) {
  std::string out;
  for (const rewrite::PatternOp& p : r.match) {
    out += (out.empty() ? "" : ", ") + p.kernel;
  }
  out += " -> ";
  for (std::size_t i = 0; i < r.replace.size(); ++i) {
    out += (i ? ", " : "") + r.replace[i].kernel;
  }
  return out;
}

int list(const rewrite::RuleSet& rules, const RewritesConfig& config, std::ostream& out) {
  if (config.json) {
    Json doc = Json::object();
    doc["rules"] = json::arrayOf(rules.rules(), [](const auto& r) { return ruleJson(*r); });
    out << doc.dump(2) << "\n";
    return 0;
  }
  for (const auto& r : rules.rules()) {
    out << r->name << ": " << summary(*r) << (r->always ? "  [always]" : "")
        << (r->search ? "  [search]" : "") << (r->approximate ? "  [approximate]" : "") << "\n";
    std::istringstream doc(r->doc);
    for (std::string line; std::getline(doc, line);) {
      out << "    " << line << "\n";
    }
  }
  return 0;
}

int show(const rewrite::RuleSet& rules, const RewritesConfig& config, std::ostream& out) {
  if (config.names.size() != 1) {
    throw UsageError("rewrites show takes one rule name");
  }
  const Rule& r = rules.get(config.names.front());
  if (config.json) {
    Json doc = ruleJson(r);
    doc["source"] = r.source;
    out << doc.dump(2) << "\n";
    return 0;
  }
  out << r.source << (r.source.empty() || r.source.back() != '\n' ? "\n" : "");
  return 0;
}

// The replacement cut in halves along index dim `d` of every operation that
// has it (extent 2 or more, and splittable), shards on two devices: nullopt
// when no operation can be cut there.
std::optional<plan::PlanChoice> halves(const graph::ExpandedGraph& g, std::size_t d) {
  plan::PlanChoice choice;
  bool any = false;
  for (const graph::Operation& op : g.operations) {
    const metakernel::Application& app = op.application;
    std::vector<std::int64_t> split(app.index.rank(), 1);
    const bool reduction =
        std::find(app.reductionDims.begin(), app.reductionDims.end(), d) != app.reductionDims.end();
    if (d < split.size() && app.index.extent(d) >= 2 && (!reduction || app.reductionSplittable)) {
      split[d] = 2;
      any = true;
      choice.ops.push_back(plan::OpChoice{split, {0, 1}});
    } else {
      choice.ops.push_back(plan::OpChoice{split, {0}});
    }
  }
  return any ? std::optional(choice) : std::nullopt;
}

// The replacement run sharded (halves of every dim, one dim at a time) on two
// CPU devices against the pattern's float64 result: nullopt when every cut
// passes run --check's bound, else what failed.
std::optional<std::string> checkHalves(const graph::ExpandedGraph& right,
                                       const backend::TensorBuffers& inputs,
                                       const backend::CheckReference& reference) {
  std::size_t rank = 0;
  for (const graph::Operation& op : right.operations) {
    rank = std::max<std::size_t>(rank, op.application.index.rank());
  }
  backend::CpuBackend cpu(2);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::optional<plan::PlanChoice> choice = halves(right, d);
    if (!choice) {
      continue;
    }
    plan::ShardPlan plan;
    try {
      plan = plan::buildPlan(right, 2, *choice);
    } catch (const plan::InvalidChoice&) {
      continue; // a cut this operation's outputs cannot take (a merged reshape dim)
    }
    const backend::Execution run = backend::execute(right, plan, cpu, inputs);
    for (const backend::OutputCheck& c : backend::compareOutputs(right, run.outputs, reference)) {
      if (!c.ok) {
        return "the replacement cut in halves along index dim " + std::to_string(d) + ", output " +
               c.tensor + ": " + backend::describeCheck(c);
      }
    }
  }
  return std::nullopt;
}

// The replacement's native (unsharded) outputs checked as run --check checks a
// plan: against the pattern's float64 result, within the bound the pattern's
// native kernels earn. An approximate rule's sides differ by more than
// rounding, so its replacement's float outputs are measured against its own
// float64 result instead, within the same bound.
std::vector<backend::OutputCheck> nativeChecks(const Rule& rule, const graph::ExpandedGraph& right,
                                               const backend::CheckReference& l,
                                               const backend::CheckReference& r) {
  std::vector<backend::OutputCheck> checks = backend::compareOutputs(right, r.baseline, l);
  for (backend::OutputCheck& c : checks) {
    if (rule.approximate && backend::isFloat(c.dtype)) {
      c.error = backend::maxRelativeError(r.baseline.at(c.tensor), r.reference.at(c.tensor));
      c.ok = !std::isnan(c.error) && c.error <= c.bound;
    }
  }
  return checks;
}

// nullopt when the rule's pattern built from `ex` (expanded: `left`, where
// the rule has matched once, `sites`) passes on `seeds` draws of inputs, else
// the counter-example.
std::optional<std::string> checkInstance(const Rule& rule, const graph::ExpandedGraph& left,
                                         const std::vector<rewrite::Site>& sites,
                                         std::uint64_t seeds,
                                         const metakernel::MetakernelLibrary& library,
                                         Tally& tally) {
  rewrite::Rewritten rewritten = rewrite::applySites(left, sites);
  graph::ExpandedGraph right;
  try {
    right = rewrite::expandDocument(rewritten.graph, library, "<" + rule.name + " rewritten>");
  } catch (const Error& e) {
    return "the replacement does not expand: " + e.message();
  }
  backend::CpuBackend cpu(1);
  if (integerRule(rule)) {
    // Products and sums of small integers: both sides agree exactly.
    backend::TensorBuffers inputs = backend::drawInputs(left, 1, backend::Scale::Unit);
    if (toIntegers(inputs)) {
      ++tally.integer;
      const backend::CheckReference l = backend::unshardedReference(cpu, left, inputs);
      const backend::CheckReference r = backend::unshardedReference(cpu, right, inputs);
      for (const std::string& var : rule.exits) {
        const double error = backend::maxRelativeError(r.reference.at(var), l.reference.at(var));
        if (error != 0) {
          std::ostringstream s;
          s << std::setprecision(2) << "on small integers (seed 1), output " << var
            << " differs in float64: max relative error " << error
            << " (a rule of products, sums and moves must agree exactly)";
          return s.str();
        }
      }
    }
  }
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const backend::TensorBuffers inputs = backend::drawInputs(left, seed);
    const backend::CheckReference l = backend::unshardedReference(cpu, left, inputs);
    const backend::CheckReference r = backend::unshardedReference(cpu, right, inputs);
    const double tolerance = rule.approximate ? backend::kApproximateTolerance : kExactTolerance;
    for (const std::string& var : rule.exits) {
      const double error = backend::maxRelativeError(r.reference.at(var), l.reference.at(var));
      if (!(error <= tolerance)) {
        std::ostringstream s;
        s << std::setprecision(2) << "on inputs of seed " << seed << ", output " << var
          << " differs in float64: max relative error " << error << " (allowed " << tolerance
          << ")";
        return s.str();
      }
    }
    // The replacement's native kernels against the pattern's float64 result,
    // within run --check's bound; an approximate replacement's against its
    // own float64 result, within the bound of the pattern's native kernels.
    for (const backend::OutputCheck& c : nativeChecks(rule, right, l, r)) {
      if (!c.ok) {
        return "on inputs of seed " + std::to_string(seed) + ", the replacement's " +
               std::string(backend::dtypeName(c.dtype)) + " output " + c.tensor +
               " on the CPU backend" +
               (rule.approximate ? " (against its own float64 result)" : "") + ": " +
               backend::describeCheck(c);
      }
    }
    // Cut in halves, against the unsharded result of the side it computes.
    if (std::optional<std::string> problem = checkHalves(right, inputs, rule.approximate ? r : l)) {
      return "on inputs of seed " + std::to_string(seed) + ", " + *problem;
    }
  }
  return std::nullopt;
}

// nullopt when example `ex` (number `index`, from 1) of `rule` passes, on its
// own shapes and on random ones, else the counter-example.
std::optional<std::string> checkExample(const Rule& rule, const rewrite::Example& ex,
                                        std::size_t index,
                                        const metakernel::MetakernelLibrary& library,
                                        Tally& tally) {
  const graph::ExpandedGraph left =
      rewrite::expandDocument(rewrite::exampleGraph(rule, ex), library, "<" + rule.name + ">");
  const std::vector<rewrite::Site> sites = rewrite::findSites(left, rule);
  if (sites.size() != 1) {
    return "the rule matches its own pattern " + std::to_string(sites.size()) +
           " times, expected once";
  }
  if (std::optional<std::string> problem =
          checkInstance(rule, left, sites, kSeeds, library, tally)) {
    return problem;
  }
  // Random shapes: those the kernels take and the rule matches (a scaled
  // shape may break a kernel's constraint, or the rule's `where`: then it is
  // no instance of the rule, and not a failure).
  search::Rng rng(shapeSeed(rule, index));
  int variants = 0;
  for (int attempt = 0; attempt < kShapeAttempts && variants < kShapeVariants; ++attempt) {
    const rewrite::Example scaled = scaledShapes(ex, rng);
    const bool small = std::all_of(scaled.inputs.begin(), scaled.inputs.end(), [](const auto& in) {
      std::int64_t n = 1;
      for (std::int64_t d : in.second.shape) {
        n *= d;
      }
      return n <= kShapeMaxElements;
    });
    if (!small || scaled.inputs == ex.inputs) {
      continue;
    }
    graph::ExpandedGraph g;
    try {
      g = rewrite::expandDocument(rewrite::exampleGraph(rule, scaled), library, rule.name);
    } catch (const Error&) {
      continue;
    }
    const std::vector<rewrite::Site> found = rewrite::findSites(g, rule);
    if (found.size() != 1) {
      continue;
    }
    ++variants;
    ++tally.shapes;
    if (std::optional<std::string> problem = checkInstance(rule, g, found, 1, library, tally)) {
      return "on the random shapes " + shapesText(scaled) + ", " + *problem;
    }
  }
  return std::nullopt;
}

int check(const rewrite::RuleSet& rules, const metakernel::MetakernelLibrary& library,
          const RewritesConfig& config, std::ostream& out, std::ostream& err) {
  std::vector<const Rule*> chosen;
  for (const std::string& name : config.names) {
    chosen.push_back(&rules.get(name));
  }
  if (chosen.empty()) {
    for (const auto& r : rules.rules()) {
      chosen.push_back(r.get());
    }
  }
  std::size_t examples = 0;
  Tally tally;
  Json failures = Json::array();
  for (const Rule* rule : chosen) {
    for (std::size_t i = 0; i < rule->examples.size(); ++i) {
      const rewrite::Example& ex = rule->examples[i];
      ++examples;
      std::optional<std::string> problem;
      try {
        problem = checkExample(*rule, ex, i + 1, library, tally);
      } catch (const Error& e) {
        // A matcher error names the rule already; the message below does too.
        const std::string prefix = "rule " + rule->name + ": ";
        problem =
            e.message().rfind(prefix, 0) == 0 ? e.message().substr(prefix.size()) : e.message();
      }
      if (!problem) {
        continue;
      }
      Diagnostic d;
      d.severity = Severity::Error;
      d.location = ex.location;
      if (ex.location.line > 0) {
        d.snippet = Snippet{ex.lineText, ex.location.column};
      }
      d.message = "rule " + rule->name + ", example " + std::to_string(i + 1) + ": " + *problem;
      err << d.format();
      Json f = Json::object();
      f["rule"] = rule->name;
      f["example"] = i + 1;
      f["file"] = ex.location.file;
      f["line"] = ex.location.line;
      f["message"] = d.message;
      failures.push_back(f);
    }
  }
  if (config.json) {
    Json doc = Json::object();
    doc["status"] = failures.empty() ? "ok" : "failed";
    doc["rules"] = chosen.size();
    doc["examples"] = examples;
    doc["random_shapes"] = tally.shapes;
    doc["integer_checks"] = tally.integer;
    doc["failures"] = failures;
    out << doc.dump(2) << "\n";
  } else if (!config.quiet) {
    out << "checked " << chosen.size() << (chosen.size() == 1 ? " rule, " : " rules, ") << examples
        << (examples == 1 ? " example" : " examples") << " (and " << tally.shapes
        << (tally.shapes == 1 ? " random shape; " : " random shapes; ") << tally.integer
        << " exactly on integers): "
        << (failures.empty() ? std::string("all passed")
                             : std::to_string(failures.size()) + " failed")
        << "\n";
  }
  return failures.empty() ? 0 : static_cast<int>(ExitCode::CheckFailed);
}

} // namespace

int runRewritesCommand(const RewritesConfig& config, std::ostream& out, std::ostream& err) {
  const metakernel::MetakernelLibrary library =
      metakernel::MetakernelLibrary::load(config.kernelPaths);
  const rewrite::RuleSet rules = rewrite::RuleSet::load(config.rulePaths, library);
  switch (config.action) {
  case RewritesConfig::Action::List:
    return list(rules, config, out);
  case RewritesConfig::Action::Show:
    return show(rules, config, out);
  case RewritesConfig::Action::Check:
    return check(rules, library, config, out, err);
  }
  return 0;
}

} // namespace tapestry::driver
