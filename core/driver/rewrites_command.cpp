#include "core/driver/rewrites_command.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include "backends/check.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/executor.hpp"
#include "backends/tensor_io.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "core/rewrite/apply.hpp"
#include "core/rewrite/rule.hpp"

namespace tapestry::driver {

namespace {

using rewrite::Rule;

// An exact rule's two sides agree in float64 to this relative error (sums
// taken in another order); an approximate one to kApproximateTolerance.
constexpr double kExactTolerance = 1e-10;
constexpr double kApproximateTolerance = 1e-3;
// Input draws per example.
constexpr std::uint64_t kSeeds = 3;

Json ruleJson(const Rule& r) {
  Json j = Json::object();
  j["name"] = r.name;
  j["file"] = r.location.file;
  j["line"] = r.location.line;
  j["always"] = r.always;
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
        << (r->approximate ? "  [approximate]" : "") << "\n";
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

// nullopt when example `ex` of `rule` passes, else the counter-example.
std::optional<std::string> checkExample(const Rule& rule, const rewrite::Example& ex,
                                        const metakernel::MetakernelLibrary& library) {
  const graph::ExpandedGraph left =
      rewrite::expandDocument(rewrite::exampleGraph(rule, ex), library, "<" + rule.name + ">");
  const std::vector<rewrite::Site> sites = rewrite::findSites(left, rule);
  if (sites.size() != 1) {
    return "the rule matches its own pattern " + std::to_string(sites.size()) +
           " times, expected once";
  }
  rewrite::Rewritten rewritten = rewrite::applySites(left, sites);
  graph::ExpandedGraph right;
  try {
    right = rewrite::expandDocument(rewritten.graph, library, "<" + rule.name + " rewritten>");
  } catch (const Error& e) {
    return "the replacement does not expand: " + e.message();
  }
  backend::CpuBackend cpu(1);
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const backend::TensorBuffers inputs = backend::drawInputs(left, seed);
    const backend::CheckReference l = backend::unshardedReference(cpu, left, inputs);
    const backend::CheckReference r = backend::unshardedReference(cpu, right, inputs);
    const double tolerance = rule.approximate ? kApproximateTolerance : kExactTolerance;
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
    // within run --check's bound.
    for (const backend::OutputCheck& c : backend::compareOutputs(right, r.baseline, l)) {
      if (!c.ok) {
        return "on inputs of seed " + std::to_string(seed) + ", the replacement's " +
               std::string(backend::dtypeName(c.dtype)) + " output " + c.tensor +
               " on the CPU backend: " + backend::describeCheck(c);
      }
    }
    if (std::optional<std::string> problem = checkHalves(right, inputs, l)) {
      return "on inputs of seed " + std::to_string(seed) + ", " + *problem;
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
  Json failures = Json::array();
  for (const Rule* rule : chosen) {
    for (std::size_t i = 0; i < rule->examples.size(); ++i) {
      const rewrite::Example& ex = rule->examples[i];
      ++examples;
      std::optional<std::string> problem;
      try {
        problem = checkExample(*rule, ex, library);
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
    doc["failures"] = failures;
    out << doc.dump(2) << "\n";
  } else if (!config.quiet) {
    out << "checked " << chosen.size() << (chosen.size() == 1 ? " rule, " : " rules, ") << examples
        << (examples == 1 ? " example: " : " examples: ")
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
