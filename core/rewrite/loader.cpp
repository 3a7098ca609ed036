// Reading rule files (rule.hpp): the YAML shape, then the checks a rule must
// pass before it may touch a graph: known kernels and ports, a connected
// pattern, every replacement input bound, every exit produced exactly once,
// conditions that parse, examples that name the pattern's own operations and
// input variables.
#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "core/metakernel/yaml_util.hpp"
#include "core/rewrite/rule.hpp"

namespace tapestry::rewrite {

namespace {

using metakernel::Metakernel;
using metakernel::MetakernelLibrary;
using metakernel::yaml::Entry;
using metakernel::yaml::Reader;

bool isIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 64 ||
      !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// "x" or "x?" bound to `port`.
PortVar portVar(const Reader& r, const Entry& e, const std::string& what) {
  PortVar pv;
  pv.port = e.key;
  std::string text = r.scalar(e.value, what + " port " + e.key);
  if (!text.empty() && text.back() == '?') {
    pv.optional = true;
    text.pop_back();
  }
  if (!isIdentifier(text)) {
    r.fail(e.value,
           what + " port " + e.key + ": \"" + text +
               "\" is not a variable name (letters, digits and _, optionally ending in ?)");
  }
  pv.var = text;
  return pv;
}

// A pattern (`lists`) may bind a list port to a list of variables, one per
// element; a replacement may not.
std::vector<PortVar> ports(const Reader& r, const YAML::Node& node, const std::string& what,
                           bool lists) {
  std::vector<PortVar> out;
  for (const Entry& e : r.entries(node, what, true)) {
    if (!e.value.IsSequence()) {
      out.push_back(portVar(r, e, what));
      continue;
    }
    if (!lists) {
      r.fail(e.value, what + " port " + e.key +
                          ": list ports are not supported in replacements (only in patterns)");
    }
    if (e.value.size() == 0) {
      r.fail(e.value, what + " port " + e.key + ": an empty list binds nothing");
    }
    for (std::size_t k = 0; k < e.value.size(); ++k) {
      PortVar pv = portVar(r, Entry{e.key, e.keyNode, e.value[k]}, what);
      if (pv.optional) {
        r.fail(e.value[k], what + " port " + e.key + ": an element of a list cannot be optional");
      }
      pv.element = static_cast<int>(k);
      pv.listSize = static_cast<int>(e.value.size());
      out.push_back(std::move(pv));
    }
  }
  return out;
}

// The kernel named by `node`, or a located error listing the known ones.
const Metakernel& kernelOf(const Reader& r, const YAML::Node& node, const MetakernelLibrary& lib,
                           const std::string& what) {
  const std::string name = r.scalar(node, what + " kernel");
  std::string why; // fuse(P, C) whose templates do not compose
  const Metakernel* k = lib.find(name, why);
  if (!why.empty()) {
    r.fail(node, what + ": " + why);
  }
  if (k == nullptr) {
    r.fail(node, what + ": unknown kernel \"" + name + "\" ('tapestry kernels list' lists them)");
  }
  return *k;
}

// A list port of the kernel is bound to a list of variables (patterns only),
// any other port to one variable.
void checkList(const Reader& r, const YAML::Node& node, const PortVar& p, bool list, bool pattern,
               const Metakernel& k, const std::string& what) {
  if (list && !pattern) {
    r.fail(node, what + ": list ports are not supported in replacements (" + k.name + "'s " +
                     p.port + ")");
  }
  if (list && p.element < 0) {
    r.fail(node, what + ": " + k.name + "'s " + p.port +
                     " is a list port: bind it to a list of variables ([a, b, ...])");
  }
  if (!list && p.element >= 0) {
    r.fail(node,
           what + ": " + k.name + "'s " + p.port + " is not a list port: bind it to one variable");
  }
}

// Port names against the kernel: every port known, every required input given.
void checkPorts(const Reader& r, const YAML::Node& opNode, const Metakernel& k,
                const std::vector<PortVar>& inputs, const std::vector<PortVar>& outputs,
                const std::string& what, bool pattern) {
  for (const PortVar& p : inputs) {
    const metakernel::InputSpec* in = k.findInput(p.port);
    if (in == nullptr) {
      r.fail(opNode["inputs"][p.port],
             what + ": kernel " + k.name + " has no input \"" + p.port + "\"");
    }
    checkList(r, opNode["inputs"][p.port], p, in->list, pattern, k, what);
  }
  for (const metakernel::InputSpec& in : k.inputs) {
    const bool given = std::any_of(inputs.begin(), inputs.end(),
                                   [&](const PortVar& p) { return p.port == in.name; });
    if (!given && !in.optional) {
      r.fail(opNode, what + ": kernel " + k.name + "'s input \"" + in.name + "\" is not bound");
    }
  }
  std::set<std::string> bound;
  for (const PortVar& p : outputs) {
    const metakernel::OutputSpec* out = k.findOutput(p.port);
    if (out == nullptr) {
      r.fail(opNode["outputs"][p.port],
             what + ": kernel " + k.name + " has no output \"" + p.port + "\"");
    }
    if (p.optional) {
      r.fail(opNode["outputs"][p.port], what + ": an output cannot be optional");
    }
    checkList(r, opNode["outputs"][p.port], p, out->list, pattern, k, what);
    bound.insert(p.port);
  }
  if (bound.size() != k.outputs.size()) {
    r.fail(opNode, what + ": every output of kernel " + k.name + " must be bound to a variable");
  }
}

// The expression of `node`'s string from byte `skip` on ("= EXPR" skips 1);
// a syntax error is located at its column in the file.
Condition expression(const Reader& r, const YAML::Node& node, const std::string& role,
                     std::size_t skip) {
  Condition c;
  c.field = r.field(node, role);
  try {
    c.expr = expr::parseExpression(std::string_view(c.field.text).substr(skip));
  } catch (const expr::ExprError& err) {
    const int column = err.column() + static_cast<int>(skip);
    throw Error(Diagnostic{Severity::Error,
                           c.field.at(column),
                           "in " + role + " \"" + c.field.text + "\": " + err.message() +
                               " at column " + std::to_string(column),
                           c.field.snippetAt(column),
                           {}},
                ExitCode::InvalidInput);
  }
  return c;
}

PatternOp patternOp(const Reader& r, const Entry& e, const MetakernelLibrary& lib) {
  const std::string what = "match." + e.key;
  std::vector<Entry> fields = r.entries(e.value, what, false);
  r.expectKeys(fields, {"kernel", "params", "inputs", "outputs", "commutative"}, what);
  PatternOp op;
  op.key = e.key;
  op.location = r.location(e.keyNode);
  const Metakernel& k = kernelOf(r, r.require(fields, e.keyNode, "kernel", what)->value, lib, what);
  op.kernel = k.name;
  if (const Entry* p = metakernel::yaml::findEntry(fields, "params")) {
    for (const Entry& param : r.entries(p->value, what + ".params", true)) {
      const metakernel::ParamSpec* spec = k.findParam(param.key);
      if (spec == nullptr) {
        r.fail(param.keyNode, what + ": kernel " + k.name + " has no param \"" + param.key + "\"");
      }
      Json value = r.toJson(param.value);
      if (const auto problem = metakernel::checkParamValue(spec->type, value)) {
        r.fail(param.value, what + ".params." + param.key + ": " + *problem);
      }
      op.params[param.key] = std::move(value);
    }
  }
  if (const Entry* in = metakernel::yaml::findEntry(fields, "inputs")) {
    op.inputs = ports(r, in->value, what + ".inputs", true);
  }
  op.outputs =
      ports(r, r.require(fields, e.keyNode, "outputs", what)->value, what + ".outputs", true);
  if (const Entry* c = metakernel::yaml::findEntry(fields, "commutative")) {
    const Json v = r.toJson(c->value);
    if (!v.is_boolean()) {
      r.fail(c->value, what + ": commutative: expected true or false");
    }
    op.commutative = v.get<bool>();
    if (op.commutative && op.inputs.size() != 2) {
      r.fail(c->value, what + ": commutative needs exactly two inputs");
    }
  }
  checkPorts(r, e.value, k, op.inputs, op.outputs, what, true);
  return op;
}

ReplaceOp replaceOp(const Reader& r, const Entry& e, const MetakernelLibrary& lib) {
  const std::string what = "replace." + e.key;
  std::vector<Entry> fields = r.entries(e.value, what, false);
  r.expectKeys(fields, {"kernel", "params_from", "params", "inputs", "outputs"}, what);
  ReplaceOp op;
  op.key = e.key;
  op.location = r.location(e.keyNode);
  const Metakernel& k = kernelOf(r, r.require(fields, e.keyNode, "kernel", what)->value, lib, what);
  op.kernel = k.name;
  if (const Entry* from = metakernel::yaml::findEntry(fields, "params_from")) {
    for (const YAML::Node& n : r.sequence(from->value, what + ".params_from", false)) {
      op.paramsFrom.push_back(r.scalar(n, what + ".params_from"));
    }
  }
  if (const Entry* p = metakernel::yaml::findEntry(fields, "params")) {
    for (const Entry& param : r.entries(p->value, what + ".params", true)) {
      if (k.findParam(param.key) == nullptr) {
        r.fail(param.keyNode, what + ": kernel " + k.name + " has no param \"" + param.key + "\"");
      }
      const Json value = r.toJson(param.value);
      if (value.is_string() && value.get<std::string>().starts_with("from ")) {
        const std::string ref = value.get<std::string>().substr(5);
        const std::size_t dot = ref.find('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == ref.size() ||
            ref.find_first_of(". ", dot + 1) != std::string::npos) {
          r.fail(param.value, what + ".params." + param.key +
                                  ": expected \"from OP.PARAM\" (a pattern operation's param)");
        }
        op.copied.push_back({param.key, ref.substr(0, dot), ref.substr(dot + 1)});
        continue;
      }
      if (value.is_string() && !value.get<std::string>().empty() &&
          value.get<std::string>()[0] == '=') {
        op.computed.emplace_back(param.key,
                                 expression(r, param.value, what + ".params." + param.key, 1));
        continue;
      }
      op.params[param.key] = value;
    }
  }
  if (const Entry* in = metakernel::yaml::findEntry(fields, "inputs")) {
    op.inputs = ports(r, in->value, what + ".inputs", false);
  }
  op.outputs =
      ports(r, r.require(fields, e.keyNode, "outputs", what)->value, what + ".outputs", false);
  checkPorts(r, e.value, k, op.inputs, op.outputs, what, false);
  return op;
}

metakernel::TensorType tensorType(const Reader& r, const Entry& e, const std::string& what) {
  std::vector<Entry> fields = r.entries(e.value, what, false);
  r.expectKeys(fields, {"shape", "dtype"}, what);
  metakernel::TensorType t;
  for (const YAML::Node& d :
       r.sequence(r.require(fields, e.keyNode, "shape", what)->value, what + ".shape", true)) {
    t.shape.push_back(r.integer(d, what + ".shape"));
  }
  t.dtype = r.scalar(r.require(fields, e.keyNode, "dtype", what)->value, what + ".dtype");
  return t;
}

// Which variables the pattern produces, consumes; its inputs, interior and
// exits; the pattern connected in its listed order.
void deriveVariables(const Reader& r, const YAML::Node& matchNode, Rule& rule) {
  std::set<std::string> produced, consumed, seen;
  for (std::size_t i = 0; i < rule.match.size(); ++i) {
    const PatternOp& op = rule.match[i];
    bool connected = i == 0;
    for (const PortVar& p : op.inputs) {
      connected = connected || seen.count(p.var) > 0;
    }
    for (const PortVar& p : op.outputs) {
      connected = connected || seen.count(p.var) > 0;
      if (!produced.insert(p.var).second) {
        r.fail(matchNode[op.key], "match." + op.key + ": variable " + p.var +
                                      " is produced by two pattern operations");
      }
    }
    if (!connected) {
      r.fail(matchNode[op.key], "match." + op.key +
                                    ": shares no variable with the operations before it (a "
                                    "pattern is connected, in the order it lists them)");
    }
    for (const PortVar& p : op.inputs) {
      consumed.insert(p.var);
      seen.insert(p.var);
    }
    for (const PortVar& p : op.outputs) {
      seen.insert(p.var);
    }
  }
  for (const PatternOp& op : rule.match) {
    for (const PortVar& p : op.inputs) {
      if (produced.count(p.var) == 0 &&
          std::find(rule.inputs.begin(), rule.inputs.end(), p.var) == rule.inputs.end()) {
        rule.inputs.push_back(p.var);
      }
    }
    for (const PortVar& p : op.outputs) {
      (consumed.count(p.var) ? rule.interior : rule.exits).push_back(p.var);
    }
  }
}

// Replacement: params_from and "from OP.PARAM" name pattern operations (and
// params their kernels have), inputs are bound before use, every exit
// produced once, nothing else of the pattern produced.
void checkReplacement(const Reader& r, const YAML::Node& replaceNode, const Rule& rule,
                      const MetakernelLibrary& lib) {
  std::set<std::string> bound(rule.inputs.begin(), rule.inputs.end());
  std::set<std::string> produced;
  for (const ReplaceOp& op : rule.replace) {
    const std::string what = "replace." + op.key;
    for (const ReplaceOp::Copied& c : op.copied) {
      const auto at = std::find_if(rule.match.begin(), rule.match.end(),
                                   [&](const PatternOp& p) { return p.key == c.op; });
      const YAML::Node node = replaceNode[op.key]["params"][c.key];
      if (at == rule.match.end()) {
        r.fail(node, what + ".params." + c.key + ": \"" + c.op + "\" is not a pattern operation");
      }
      const Metakernel* k = lib.find(at->kernel);
      if (k == nullptr || k->findParam(c.param) == nullptr) {
        r.fail(node, what + ".params." + c.key + ": kernel " + at->kernel + " (of " + c.op +
                         ") has no param \"" + c.param + "\"");
      }
    }
    for (const std::string& from : op.paramsFrom) {
      if (std::none_of(rule.match.begin(), rule.match.end(),
                       [&](const PatternOp& p) { return p.key == from; })) {
        r.fail(replaceNode[op.key]["params_from"],
               what + ": params_from names \"" + from + "\", which is not a pattern operation");
      }
    }
    for (const PortVar& p : op.inputs) {
      if (bound.count(p.var) == 0) {
        r.fail(replaceNode[op.key]["inputs"][p.port],
               what + ": variable " + p.var +
                   " is never bound (not a pattern input, nor an "
                   "output of an earlier replacement operation)");
      }
    }
    for (const PortVar& p : op.outputs) {
      const bool pattern =
          std::find(rule.interior.begin(), rule.interior.end(), p.var) != rule.interior.end() ||
          bound.count(p.var) > 0;
      if (pattern || !produced.insert(p.var).second) {
        r.fail(replaceNode[op.key]["outputs"][p.port],
               what + ": variable " + p.var +
                   (pattern ? " is bound by the pattern and cannot be produced again"
                            : " is produced twice"));
      }
      bound.insert(p.var);
    }
  }
  for (const std::string& exit : rule.exits) {
    if (produced.count(exit) == 0) {
      r.fail(replaceNode, "replace: the pattern's output " + exit +
                              " is not produced (every pattern output read by no pattern "
                              "operation must be)");
    }
  }
}

Example example(const Reader& r, const YAML::Node& node, const Rule& rule, std::size_t index) {
  const std::string what = "examples[" + std::to_string(index) + "]";
  Example ex;
  ex.location = r.location(node);
  ex.lineText = r.lineText(node);
  std::vector<Entry> fields = r.entries(node, what, false);
  r.expectKeys(fields, {"params", "inputs"}, what);
  if (const Entry* p = metakernel::yaml::findEntry(fields, "params")) {
    for (const Entry& e : r.entries(p->value, what + ".params", true)) {
      if (std::none_of(rule.match.begin(), rule.match.end(),
                       [&](const PatternOp& op) { return op.key == e.key; })) {
        r.fail(e.keyNode, what + ".params: \"" + e.key + "\" is not a pattern operation");
      }
      ex.params[e.key] = r.toJson(e.value);
    }
  }
  const YAML::Node anchor = r.require(fields, node, "inputs", what)->keyNode;
  for (const Entry& e :
       r.entries(r.require(fields, node, "inputs", what)->value, what + ".inputs", false)) {
    if (std::find(rule.inputs.begin(), rule.inputs.end(), e.key) == rule.inputs.end()) {
      r.fail(e.keyNode,
             what + ".inputs: \"" + e.key + "\" is not an input variable of the pattern");
    }
    ex.inputs[e.key] = tensorType(r, e, what + ".inputs." + e.key);
  }
  for (const PatternOp& op : rule.match) {
    for (const PortVar& p : op.inputs) {
      const bool isInput =
          std::find(rule.inputs.begin(), rule.inputs.end(), p.var) != rule.inputs.end();
      if (isInput && !p.optional && ex.inputs.count(p.var) == 0) {
        r.fail(anchor, what + ".inputs: variable " + p.var + " is not given");
      }
    }
  }
  return ex;
}

std::string ruleText(const SourceFile& file, int line, int next) {
  std::string out;
  for (int l = line; l < next; ++l) {
    out += file.lineText(l);
    out += '\n';
  }
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') {
    out.pop_back();
  }
  return out;
}

Rule parseRule(const Reader& r, const Entry& e, const MetakernelLibrary& lib) {
  Rule rule;
  rule.name = e.key;
  rule.location = r.location(e.keyNode);
  if (!isIdentifier(e.key)) {
    r.fail(e.keyNode, "rule name \"" + e.key + "\": letters, digits and _ only");
  }
  std::vector<Entry> fields = r.entries(e.value, "rule " + e.key, false);
  r.expectKeys(fields,
               {"doc", "approximate", "always", "search", "match", "where", "replace", "examples"},
               "rule " + e.key);
  rule.doc = r.scalar(r.require(fields, e.keyNode, "doc", "rule " + e.key)->value, "doc");
  for (auto [key, flag] : {std::pair{"approximate", &rule.approximate},
                           {"always", &rule.always},
                           {"search", &rule.search}}) {
    if (const Entry* f = metakernel::yaml::findEntry(fields, key)) {
      const Json v = r.toJson(f->value);
      if (!v.is_boolean()) {
        r.fail(f->value, std::string(key) + ": expected true or false");
      }
      *flag = v.get<bool>();
    }
  }
  if (rule.always && rule.search) {
    r.fail(metakernel::yaml::findEntry(fields, "search")->keyNode,
           "search: a rule marked always runs in the pre-pass, so it cannot also be a choice of "
           "the search");
  }
  const Entry* match = r.require(fields, e.keyNode, "match", "rule " + e.key);
  for (const Entry& op : r.entries(match->value, "match", false)) {
    rule.match.push_back(patternOp(r, op, lib));
  }
  if (rule.match.empty()) {
    r.fail(match->keyNode, "match: a pattern needs at least one operation");
  }
  deriveVariables(r, match->value, rule);
  const Entry* replace = r.require(fields, e.keyNode, "replace", "rule " + e.key);
  for (const Entry& op : r.entries(replace->value, "replace", false)) {
    rule.replace.push_back(replaceOp(r, op, lib));
  }
  checkReplacement(r, replace->value, rule, lib);
  if (const Entry* where = metakernel::yaml::findEntry(fields, "where")) {
    for (const YAML::Node& n : r.sequence(where->value, "where", false)) {
      rule.where.push_back(expression(r, n, "where", 0));
    }
  }
  const Entry* examples = r.require(fields, e.keyNode, "examples", "rule " + e.key);
  const std::vector<YAML::Node> list = r.sequence(examples->value, "examples", false);
  if (list.empty()) {
    r.fail(examples->keyNode, "examples: a rule needs at least one (rewrites check runs them)");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    rule.examples.push_back(example(r, list[i], rule, i));
  }
  return rule;
}

} // namespace

std::vector<Rule> loadRules(const SourceFile& file, const MetakernelLibrary& library) {
  Reader r(file);
  YAML::Node root = r.parse();
  std::vector<Rule> out;
  if (!root.IsDefined() || root.IsNull()) {
    return out;
  }
  if (!root.IsMap()) {
    r.fail(root, std::string("expected a map of rule names to rules, got ") +
                     metakernel::yaml::kindName(root));
  }
  std::vector<Entry> rules = r.entries(root, "rule file", false);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    Rule rule = parseRule(r, rules[i], library);
    const int next =
        i + 1 < rules.size() ? r.location(rules[i + 1].keyNode).line : file.lineCount() + 1;
    rule.source =
        rule.location.column == 1 ? ruleText(file, rule.location.line, next) : file.text();
    out.push_back(std::move(rule));
  }
  return out;
}

void RuleSet::addFile(const SourceFile& file, const MetakernelLibrary& library) {
  for (Rule& rule : loadRules(file, library)) {
    if (const Rule* old = find(rule.name)) {
      throw Error(rule.location, "rewrite rule \"" + rule.name + "\" is already defined at " +
                                     old->location.toString());
    }
    rules_.push_back(std::make_shared<const Rule>(std::move(rule)));
  }
}

RuleSet RuleSet::load(const std::vector<std::string>& paths, const MetakernelLibrary& library,
                      bool standard) {
  namespace fs = std::filesystem;
  RuleSet set;
  if (standard) {
    for (const EmbeddedFile& f : embeddedStandardRules()) {
      const std::string_view base = f.path.substr(f.path.rfind('/') + 1);
      set.addFile(SourceFile("<stdlib>/rewrites/" + std::string(base), std::string(f.text)),
                  library);
    }
  }
  for (const std::string& path : paths) {
    std::error_code ec;
    if (path != "-" && fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
        const std::string ext = e.path().extension().string();
        if ((ext == ".yaml" || ext == ".yml") && !e.is_directory()) {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) {
        set.addFile(SourceFile::read(f.string()), library);
      }
      continue;
    }
    set.addFile(SourceFile::read(path, "a rewrite rule YAML file"), library);
  }
  return set;
}

const Rule* RuleSet::find(std::string_view name) const {
  for (const auto& rule : rules_) {
    if (rule->name == name) {
      return rule.get();
    }
  }
  return nullptr;
}

const Rule& RuleSet::get(std::string_view name) const {
  if (const Rule* rule = find(name)) {
    return *rule;
  }
  std::string known;
  for (const auto& rule : rules_) {
    known += (known.empty() ? "" : ", ") + rule->name;
  }
  throw Error("unknown rewrite rule \"" + std::string(name) + "\" (known: " + known + ")");
}

} // namespace tapestry::rewrite
