#include "core/rewrite/apply.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/metakernel/application.hpp"

namespace tapestry::rewrite {

namespace {

using graph::ExpandedGraph;
using graph::Operation;

// The tensors an operation binds to `port` (empty: left out).
const std::vector<std::size_t>* portTensors(const std::vector<graph::PortTensors>& ports,
                                            std::string_view port) {
  for (const graph::PortTensors& p : ports) {
    if (p.port == port) {
      return &p.tensors;
    }
  }
  return nullptr;
}

// A site's bindings for `where` and computed params: `$x` the shape of
// variable x, `$x_dtype` its dtype, `$has_x` for an optional one, `$op_param`
// the int, ints and bool params of matched operation op.
expr::Bindings siteBindings(const ExpandedGraph& g, const Site& site) {
  const Rule& rule = *site.rule;
  expr::Bindings b;
  for (const PatternOp& p : rule.match) {
    for (const auto* ports : {&p.inputs, &p.outputs}) {
      for (const PortVar& v : *ports) {
        auto it = site.tensors.find(v.var);
        if (v.optional) {
          b.set("has_" + v.var, expr::Value(it != site.tensors.end()), "rule");
        }
        if (it != site.tensors.end()) {
          const graph::Tensor& t = g.tensors[it->second];
          b.set(v.var, expr::Value::ints(t.type.shape), v.var);
          b.set(v.var + "_dtype", expr::Value(expr::DType{t.type.dtype}), v.var);
        }
      }
    }
  }
  for (std::size_t i = 0; i < rule.match.size(); ++i) {
    const Json& params = g.operations[site.ops[i]].application.params;
    for (const auto& [name, value] : params.items()) {
      const std::string key = rule.match[i].key + "_" + name;
      if (value.is_boolean()) {
        b.set(key, expr::Value(value.get<bool>()), rule.match[i].key);
      } else if (value.is_number_integer()) {
        b.set(key, expr::Value(value.get<std::int64_t>()), rule.match[i].key);
      } else if (value.is_array() && std::all_of(value.begin(), value.end(), [](const Json& x) {
                   return x.is_number_integer();
                 })) {
        b.set(key, expr::Value::ints(value.get<std::vector<std::int64_t>>()), rule.match[i].key);
      }
    }
  }
  return b;
}

// Evaluates `c` with `bindings`; an ExprError is located in the rule file.
expr::Value evaluateAt(const Condition& c, const expr::Bindings& bindings, const Rule& rule,
                       const std::string& role) {
  try {
    return expr::evaluate(c.expr, expr::EvalContext{&bindings, std::nullopt, std::nullopt});
  } catch (const expr::ExprError& e) {
    const int column = e.column() + static_cast<int>(c.field.text.size() - c.expr.text().size());
    throw Error(Diagnostic{Severity::Error,
                           c.field.at(column),
                           "rule " + rule.name + ": in " + role + " \"" + c.field.text +
                               "\": " + e.message() + " at column " + std::to_string(column),
                           c.field.snippetAt(column),
                           {}},
                ExitCode::InvalidInput);
  }
}

// An expression value as a param: ints, bools, dtypes and lists of them.
Json paramJson(const expr::Value& v) {
  if (v.isAffine()) {
    throw Error("a computed param cannot be affine: " + v.toString());
  }
  return metakernel::valueToJson(v);
}

} // namespace

bool paramMatches(const Json& want, const Json& have) {
  if (want.is_number() && have.is_number() && (want.is_number_float() || have.is_number_float())) {
    const double a = want.get<double>();
    const double b = have.get<double>();
    return std::abs(a - b) <= kFloatParamTolerance * std::max(std::abs(a), std::abs(b));
  }
  return want == have;
}

namespace {

// A matcher for one rule on one graph: depth-first over the pattern
// operations in their listed order (each shares a variable with an earlier
// one), trying the consumers or the producer of a bound tensor.
class Matcher {
public:
  Matcher(const ExpandedGraph& g, const Rule& rule) : g_(g), rule_(rule) {}

  std::vector<Site> run() {
    for (std::size_t op : g_.order) {
      if (g_.operations[op].kernel != rule_.match[0].kernel) {
        continue;
      }
      Site site;
      site.rule = &rule_;
      if (bindOp(site, 0, op)) {
        sites_.push_back(std::move(site));
      }
    }
    return std::move(sites_);
  }

private:
  // Binds pattern op `i` to graph op `op`, then the rest; on success `site`
  // holds the whole binding, else it is as before.
  bool bindOp(Site& site, std::size_t i, std::size_t op) {
    const PatternOp& p = rule_.match[i];
    const Operation& o = g_.operations[op];
    if (o.kernel != p.kernel || std::find(site.ops.begin(), site.ops.end(), op) != site.ops.end()) {
      return false;
    }
    for (const auto& [name, want] : p.params.items()) {
      const Json& params = o.application.params;
      if (!params.contains(name) || !paramMatches(want, params.at(name))) {
        return false;
      }
    }
    std::vector<std::vector<PortVar>> orders = {p.inputs};
    if (p.commutative) {
      std::vector<PortVar> swapped = p.inputs;
      std::swap(swapped[0].var, swapped[1].var);
      std::swap(swapped[0].optional, swapped[1].optional);
      orders.push_back(std::move(swapped));
    }
    for (const std::vector<PortVar>& inputs : orders) {
      Site trial = site;
      if (!bindPorts(trial, o.inputs, inputs) || !bindPorts(trial, o.outputs, p.outputs)) {
        continue;
      }
      trial.ops.push_back(op);
      if (i + 1 == rule_.match.size() ? complete(trial) : next(trial, i + 1)) {
        site = std::move(trial);
        return true;
      }
    }
    return false;
  }

  // Every port the graph op binds is named by the pattern; each variable
  // agrees with what it is already bound to.
  bool bindPorts(Site& site, const std::vector<graph::PortTensors>& ports,
                 const std::vector<PortVar>& vars) const {
    for (const graph::PortTensors& port : ports) {
      const bool named = std::any_of(vars.begin(), vars.end(),
                                     [&](const PortVar& v) { return v.port == port.port; });
      if (!named && !port.tensors.empty()) {
        return false;
      }
    }
    for (const PortVar& v : vars) {
      const std::vector<std::size_t>* tensors = portTensors(ports, v.port);
      const bool absent = tensors == nullptr || tensors->empty();
      auto bound = site.tensors.find(v.var);
      if (absent) {
        if (!v.optional || bound != site.tensors.end()) {
          return false;
        }
        continue;
      }
      // One tensor, or element `element` of a list of `listSize`.
      const std::size_t want = v.element < 0 ? 1 : static_cast<std::size_t>(v.listSize);
      if (tensors->size() != want) {
        return false;
      }
      const std::size_t t = (*tensors)[v.element < 0 ? 0 : static_cast<std::size_t>(v.element)];
      if (bound == site.tensors.end()) {
        site.tensors[v.var] = t;
      } else if (bound->second != t) {
        return false;
      }
    }
    return true;
  }

  // Pattern op `i`'s candidates: consumers of a bound input, or the producer
  // of a bound output.
  bool next(Site& site, std::size_t i) {
    const PatternOp& p = rule_.match[i];
    std::vector<std::size_t> candidates;
    for (const PortVar& v : p.inputs) {
      if (auto it = site.tensors.find(v.var); it != site.tensors.end()) {
        const std::vector<std::size_t>& consumers = g_.tensors[it->second].consumers;
        candidates.insert(candidates.end(), consumers.begin(), consumers.end());
      }
    }
    for (const PortVar& v : p.outputs) {
      if (auto it = site.tensors.find(v.var); it != site.tensors.end()) {
        if (const auto& producer = g_.tensors[it->second].producer) {
          candidates.push_back(*producer);
        }
      }
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    for (std::size_t op : candidates) {
      if (bindOp(site, i, op)) {
        return true;
      }
    }
    return false;
  }

  // Interior tensors read only inside the site and not graph outputs; the
  // conditions true.
  bool complete(const Site& site) const {
    for (const std::string& var : rule_.interior) {
      const std::size_t t = site.tensors.at(var);
      if (std::find(g_.outputs.begin(), g_.outputs.end(), t) != g_.outputs.end()) {
        return false;
      }
      for (std::size_t consumer : g_.tensors[t].consumers) {
        if (std::find(site.ops.begin(), site.ops.end(), consumer) == site.ops.end()) {
          return false;
        }
      }
    }
    if (rule_.where.empty()) {
      return true;
    }
    const expr::Bindings bindings = siteBindings(g_, site);
    for (const Condition& c : rule_.where) {
      const expr::Value v = evaluateAt(c, bindings, rule_, "where");
      if (!v.isBool()) {
        throw Error(Diagnostic{Severity::Error,
                               c.field.location,
                               "rule " + rule_.name + ": where \"" + c.field.text + "\" is " +
                                   v.typeName() + " " + v.toString() + ", expected a bool",
                               c.field.snippetAt(1),
                               {}},
                    ExitCode::InvalidInput);
      }
      if (!v.asBool()) {
        return false;
      }
    }
    return true;
  }

  const ExpandedGraph& g_;
  const Rule& rule_;
  std::vector<Site> sites_;
};

// A name not yet in `taken` (graph names are at most 256 bytes).
std::string freshName(std::string base, std::set<std::string>& taken) {
  if (base.size() > graph::kMaxNameLength - 8) {
    base.resize(graph::kMaxNameLength - 8);
  }
  std::string name = base;
  for (int k = 2; taken.count(name) > 0; ++k) {
    name = base + "#" + std::to_string(k);
  }
  taken.insert(name);
  return name;
}

// The name of a site's result: the names of the operations it replaces,
// joined with '+' ("conv1+relu1"). Past 64 characters (a chain rewritten
// round after round: attention and the moves of its heads) only the first and
// last parts stay, "first+...+last", so that tables and traces stay readable;
// the site's record keeps every name.
std::string joinedName(const std::vector<std::string>& names) {
  constexpr std::size_t kMostJoined = 64;
  std::vector<std::string_view> parts;
  for (const std::string& n : names) {
    std::string_view rest = n;
    for (std::size_t plus = rest.find('+'); plus != std::string_view::npos; plus = rest.find('+')) {
      parts.push_back(rest.substr(0, plus));
      rest.remove_prefix(plus + 1);
    }
    parts.push_back(rest);
  }
  std::string joined;
  for (std::string_view part : parts) {
    joined += (joined.empty() ? "" : "+") + std::string(part);
  }
  if (joined.size() <= kMostJoined || parts.size() < 3) {
    return joined;
  }
  return std::string(parts.front()) + "+...+" + std::string(parts.back());
}

// The replacement operations of one site.
std::vector<Json> replacement(const ExpandedGraph& g, const Site& site,
                              const metakernel::MetakernelLibrary* library,
                              std::set<std::string>& taken, AppliedSite& applied) {
  const Rule& rule = *site.rule;
  for (std::size_t op : site.ops) {
    const std::string& name = g.operations[op].name;
    applied.replaced.push_back(name);
    // The operation goes: its name is free again (one operation replaced by
    // one keeps its name), unless a tensor has it.
    if (!g.tensorIndex(name)) {
      taken.erase(name);
    }
  }
  const std::string joined = joinedName(applied.replaced);
  std::map<std::string, std::string> names; // variable -> tensor name
  for (const auto& [var, t] : site.tensors) {
    names[var] = g.tensors[t].name;
  }
  std::vector<Json> out;
  for (const ReplaceOp& r : rule.replace) {
    Json op = Json::object();
    // The last operation (the one that makes the result) takes the joined
    // name of those it replaces; the others are named below it.
    const bool last = &r == &rule.replace.back();
    const std::string name = freshName(last ? joined : joined + "/" + r.key, taken);
    op["name"] = name;
    op["kernel"] = r.kernel;
    const metakernel::Metakernel* k = library != nullptr ? library->find(r.kernel) : nullptr;
    Json params = Json::object();
    for (const std::string& from : r.paramsFrom) {
      const auto at = std::find_if(rule.match.begin(), rule.match.end(),
                                   [&](const PatternOp& p) { return p.key == from; });
      const Json& given = g.operations[site.ops[static_cast<std::size_t>(at - rule.match.begin())]]
                              .application.params;
      for (const auto& [key, value] : given.items()) {
        if (k == nullptr || k->findParam(key) != nullptr) {
          params[key] = value;
        }
      }
    }
    for (const ReplaceOp::Copied& c : r.copied) {
      const auto at = std::find_if(rule.match.begin(), rule.match.end(),
                                   [&](const PatternOp& p) { return p.key == c.op; });
      const Json& given = g.operations[site.ops[static_cast<std::size_t>(at - rule.match.begin())]]
                              .application.params;
      if (auto it = given.find(c.param); it != given.end()) {
        params[c.key] = *it;
      }
    }
    for (const auto& [key, value] : r.params.items()) {
      params[key] = value;
    }
    if (!r.computed.empty()) {
      const expr::Bindings bindings = siteBindings(g, site);
      for (const auto& [key, c] : r.computed) {
        const expr::Value v = evaluateAt(c, bindings, rule, "param " + key);
        try {
          params[key] = paramJson(v);
        } catch (Error& e) {
          e.prefix("rule " + rule.name + ": param " + key + ": ");
          e.locate(c.field.location, c.field.snippetAt(1));
          throw;
        }
      }
    }
    op["params"] = std::move(params);
    Json inputs = Json::object();
    for (const PortVar& v : r.inputs) {
      if (auto it = names.find(v.var); it != names.end()) {
        inputs[v.port] = it->second;
      }
    }
    op["inputs"] = std::move(inputs);
    Json outputs = Json::object();
    for (const PortVar& v : r.outputs) {
      auto it = names.find(v.var);
      if (it == names.end()) {
        it = names.emplace(v.var, freshName(joined + "/" + v.var, taken)).first;
      }
      outputs[v.port] = it->second;
    }
    op["outputs"] = std::move(outputs);
    applied.added.push_back(name);
    out.push_back(std::move(op));
  }
  return out;
}

Rewritten applyWith(const ExpandedGraph& g, const std::vector<Site>& sites,
                    const metakernel::MetakernelLibrary* library) {
  std::map<std::size_t, std::size_t> siteOf; // operation -> site
  for (std::size_t s = 0; s < sites.size(); ++s) {
    for (std::size_t op : sites[s].ops) {
      if (!siteOf.emplace(op, s).second) {
        throw InternalError("rewrite sites share operation " + g.operations[op].name);
      }
    }
  }
  std::set<std::string> taken;
  for (const Operation& op : g.operations) {
    taken.insert(op.name);
  }
  for (const graph::Tensor& t : g.tensors) {
    taken.insert(t.name);
  }
  Rewritten out;
  Json doc = userGraph(g);
  Json operations = Json::array();
  std::vector<bool> done(sites.size(), false);
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    auto it = siteOf.find(i);
    if (it == siteOf.end()) {
      operations.push_back(graph::userOperationJson(g, g.operations[i]));
      continue;
    }
    if (done[it->second]) {
      continue;
    }
    done[it->second] = true;
    AppliedSite applied;
    applied.rule = sites[it->second].rule->name;
    applied.approximate = sites[it->second].rule->approximate;
    for (Json& op : replacement(g, sites[it->second], library, taken, applied)) {
      operations.push_back(std::move(op));
    }
    out.applied.push_back(std::move(applied));
  }
  doc["operations"] = std::move(operations);
  out.graph = std::move(doc);
  return out;
}

} // namespace

std::vector<Site> findSites(const ExpandedGraph& g, const Rule& rule) {
  return Matcher(g, rule).run();
}

Json userGraph(const ExpandedGraph& g) {
  Json doc = Json::object();
  doc["tapestry"] = "graph/v1";
  doc["name"] = g.name;
  if (g.doc) {
    doc["doc"] = *g.doc;
  }
  Json tensors = Json::object();
  for (const graph::Tensor& t : g.tensors) {
    if (!t.isGraphInput()) {
      continue;
    }
    Json entry = Json::object();
    entry["dtype"] = t.type.dtype;
    entry["shape"] = t.type.shape;
    if (t.constant) {
      entry["constant"] = true;
    }
    tensors[t.name] = std::move(entry);
  }
  doc["tensors"] = std::move(tensors);
  Json operations = Json::array();
  for (const Operation& op : g.operations) {
    operations.push_back(graph::userOperationJson(g, op));
  }
  doc["operations"] = std::move(operations);
  Json outputs = Json::array();
  for (std::size_t t : g.outputs) {
    outputs.push_back(g.tensors[t].name);
  }
  doc["outputs"] = std::move(outputs);
  return doc;
}

Rewritten applySites(const ExpandedGraph& g, const std::vector<Site>& sites) {
  return applyWith(g, sites, nullptr);
}

std::vector<Site> disjointSites(const ExpandedGraph& g, const std::vector<const Rule*>& rules,
                                const SiteFilter& allow) {
  std::vector<Site> out;
  std::set<std::size_t> used;
  for (const Rule* rule : rules) {
    for (Site& site : findSites(g, *rule)) {
      if (std::any_of(site.ops.begin(), site.ops.end(),
                      [&](std::size_t op) { return used.count(op) > 0; }) ||
          (allow && !allow(g, site))) {
        continue;
      }
      used.insert(site.ops.begin(), site.ops.end());
      out.push_back(std::move(site));
    }
  }
  return out;
}

graph::ExpandedGraph expandDocument(const Json& doc, const metakernel::MetakernelLibrary& library,
                                    const std::string& what) {
  const graph::Graph decoded = graph::decodeGraph(json::Value(doc, what));
  return graph::expand(decoded, library);
}

RewriteResult rewriteGraph(const ExpandedGraph& g, const std::vector<const Rule*>& rules,
                           const metakernel::MetakernelLibrary& library, const SiteFilter& allow,
                           int maxRounds) {
  RewriteResult out{g, {}};
  for (int round = 0; round < maxRounds; ++round) {
    const std::vector<Site> sites = disjointSites(out.graph, rules, allow);
    if (sites.empty()) {
      break;
    }
    Rewritten next = applyWith(out.graph, sites, &library);
    const std::string file = out.graph.file;
    try {
      out.graph = expandDocument(next.graph, library, file);
    } catch (Error& e) {
      e.prefix("after rewriting " + next.applied.front().rule + " at " +
               next.applied.front().replaced.front() + ": ");
      throw;
    }
    out.graph.file = file;
    for (AppliedSite& a : next.applied) {
      out.applied.push_back(std::move(a));
    }
  }
  return out;
}

Json exampleGraph(const Rule& rule, const Example& example) {
  Json doc = Json::object();
  doc["tapestry"] = "graph/v1";
  doc["name"] = rule.name;
  Json tensors = Json::object();
  for (const auto& [var, type] : example.inputs) {
    Json entry = Json::object();
    entry["dtype"] = type.dtype;
    entry["shape"] = type.shape;
    tensors[var] = std::move(entry);
  }
  doc["tensors"] = std::move(tensors);
  Json operations = Json::array();
  for (const PatternOp& p : rule.match) {
    Json op = Json::object();
    op["name"] = p.key;
    op["kernel"] = p.kernel;
    // The pattern's own param values, then the example's.
    op["params"] = p.params;
    if (auto params = example.params.find(p.key); params != example.params.end()) {
      op["params"].update(params->second);
    }
    // A list port's elements in order (they are listed so).
    auto bind = [](Json& ports, const PortVar& v) {
      if (v.element < 0) {
        ports[v.port] = v.var;
      } else {
        ports[v.port].push_back(v.var);
      }
    };
    Json inputs = Json::object();
    for (const PortVar& v : p.inputs) {
      const bool input =
          std::find(rule.inputs.begin(), rule.inputs.end(), v.var) != rule.inputs.end();
      if (!input || example.inputs.count(v.var) > 0) {
        bind(inputs, v);
      }
    }
    op["inputs"] = std::move(inputs);
    Json outputs = Json::object();
    for (const PortVar& v : p.outputs) {
      bind(outputs, v);
    }
    op["outputs"] = std::move(outputs);
    operations.push_back(std::move(op));
  }
  doc["operations"] = std::move(operations);
  doc["outputs"] = rule.exits;
  return doc;
}

} // namespace tapestry::rewrite
