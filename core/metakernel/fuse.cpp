// fuse(P, C): a template composed from two (fuse.hpp says what it holds). The
// composition works on the templates' texts, token by token: `$NAME`
// variables renamed, `@` replaced by the producer's output IPF, and the body's
// block names renamed; the result is YAML that the ordinary loader parses, so
// it is checked like any template and a plan embeds it like a -k kernel.
#include "core/metakernel/fuse.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/json/json.hpp"

namespace tapestry::metakernel {

namespace {

bool identStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool identChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) {
    ++b;
  }
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) {
    --e;
  }
  return std::string(s.substr(b, e - b));
}

std::string withoutSpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
    }
  }
  return out;
}

// A kernel name as the loader takes it: letters, digits, '_' and '.'.
bool plainKernelName(std::string_view s) {
  return !s.empty() && identStart(s[0]) &&
         std::all_of(s.begin(), s.end(), [](char c) { return identChar(c) || c == '.'; });
}

// Copies the `$NAME` at text[i] to `out`, renamed through `vars`; returns the
// index after it.
std::size_t renameVar(std::string_view text, std::size_t i,
                      const std::map<std::string, std::string>& vars, std::string& out) {
  std::size_t j = i + 1;
  while (j < text.size() && identChar(text[j])) {
    ++j;
  }
  const std::string name(text.substr(i + 1, j - i - 1));
  const auto it = vars.find(name);
  out += '$';
  out += it != vars.end() ? it->second : name;
  return j;
}

// `text` with every `$NAME` in `vars` renamed, every `@` replaced by `at`
// (when given), and quoted strings left alone.
std::string rewriteExpr(std::string_view text, const std::map<std::string, std::string>& vars,
                        const std::string* at = nullptr) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      const std::size_t end = text.find(c, i + 1);
      const std::size_t stop = end == std::string_view::npos ? text.size() : end + 1;
      out.append(text.substr(i, stop - i));
      i = stop;
    } else if (c == '$' && i + 1 < text.size() && identStart(text[i + 1])) {
      i = renameVar(text, i, vars, out);
    } else if (c == '@' && at != nullptr) {
      out += *at;
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// Every `$NAME` a text mentions.
void collectVars(std::string_view text, std::set<std::string>& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && identStart(text[i + 1])) {
      std::size_t j = i + 1;
      while (j < text.size() && identChar(text[j])) {
        ++j;
      }
      out.insert(std::string(text.substr(i + 1, j - i - 1)));
      i = j - 1;
    }
  }
}

// One pass over a body's tokens: names (blocks, statement results, function
// names, keyword names, dtype names) are handed to `name(token, role)`,
// which returns the text to write. Numbers and `$vars` are copied (vars
// through `vars`).
enum class NameRole { Block, Assigned, Function, Keyword };

template <class OnName>
std::string walkBody(std::string_view text, const std::map<std::string, std::string>& vars,
                     OnName onName) {
  std::string out;
  int depth = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '$' && i + 1 < text.size() && identStart(text[i + 1])) {
      i = renameVar(text, i, vars, out);
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < text.size() &&
                std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      std::size_t j = i;
      while (j < text.size()) {
        const char d = text[j];
        if (std::isdigit(static_cast<unsigned char>(d)) || d == '.') {
          ++j;
        } else if ((d == 'e' || d == 'E') && j + 1 < text.size()) {
          j += (text[j + 1] == '+' || text[j + 1] == '-') ? 2 : 1;
        } else {
          break;
        }
      }
      out.append(text.substr(i, j - i));
      i = j;
    } else if (identStart(c)) {
      std::size_t j = i;
      while (j < text.size() && identChar(text[j])) {
        ++j;
      }
      std::size_t k = j;
      while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) {
        ++k;
      }
      const bool assigns =
          k < text.size() && text[k] == '=' && (k + 1 >= text.size() || text[k + 1] != '=');
      NameRole role = NameRole::Block;
      if (k < text.size() && text[k] == '(') {
        role = NameRole::Function;
      } else if (assigns && depth > 0) {
        role = NameRole::Keyword;
      } else if (depth == 0 && (assigns || (k < text.size() && text[k] == ','))) {
        role = NameRole::Assigned;
      }
      out += onName(std::string(text.substr(i, j - i)), role);
      i = j;
    } else {
      depth += (c == '(' || c == '[') ? 1 : (c == ')' || c == ']') ? -1 : 0;
      out += c;
      ++i;
    }
  }
  return out;
}

// The names a body assigns at the top level (its statements' results).
std::set<std::string> assignedNames(std::string_view body) {
  std::set<std::string> out;
  walkBody(body, {}, [&](const std::string& name, NameRole role) {
    if (role == NameRole::Assigned) {
      out.insert(name);
    }
    return name;
  });
  return out;
}

// Every block name a body mentions (not functions or keywords).
std::set<std::string> blockNames(std::string_view body) {
  std::set<std::string> out;
  walkBody(body, {}, [&](const std::string& name, NameRole role) {
    if (role == NameRole::Block || role == NameRole::Assigned) {
      out.insert(name);
    }
    return name;
  });
  return out;
}

std::string renameBody(std::string_view body, const std::map<std::string, std::string>& names,
                       const std::map<std::string, std::string>& vars) {
  return walkBody(body, vars, [&](const std::string& name, NameRole role) {
    if (role == NameRole::Function || role == NameRole::Keyword) {
      return name;
    }
    const auto it = names.find(name);
    return it != names.end() ? it->second : name;
  });
}

// An IPF's two halves: "START :> BLOCK".
std::pair<std::string, std::string> splitIpf(const std::string& text) {
  const std::size_t at = text.find(":>");
  if (at == std::string::npos) {
    return {trim(text), "[1...]"};
  }
  return {trim(text.substr(0, at)), trim(text.substr(at + 2))};
}

std::string yamlString(const std::string& s) {
  return Json(s).dump();
}

[[noreturn]] void cannot(const std::string& name, const std::string& why) {
  throw Error("kernel \"" + name + "\": " + why);
}

} // namespace

std::optional<FuseName> parseFuseName(std::string_view name) {
  const std::string text = trim(name);
  if (text.size() < 7 || text.compare(0, 5, "fuse(") != 0 || text.back() != ')') {
    return std::nullopt;
  }
  const std::string_view inner = std::string_view(text).substr(5, text.size() - 6);
  int depth = 0;
  std::size_t comma = std::string_view::npos;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    depth += inner[i] == '(' ? 1 : inner[i] == ')' ? -1 : 0;
    if (depth < 0) {
      return std::nullopt;
    }
    if (inner[i] == ',' && depth == 0) {
      if (comma != std::string_view::npos) {
        return std::nullopt;
      }
      comma = i;
    }
  }
  if (depth != 0 || comma == std::string_view::npos) {
    return std::nullopt;
  }
  FuseName parts{trim(inner.substr(0, comma)), trim(inner.substr(comma + 1)), ""};
  const bool producerOk =
      plainKernelName(parts.producer) || parseFuseName(parts.producer).has_value();
  if (!producerOk || !plainKernelName(parts.consumer)) {
    return std::nullopt;
  }
  return parts;
}

std::string fuseName(const FuseName& parts) {
  return "fuse(" + parts.producer + ", " + parts.consumer +
         (parts.port.empty() ? "" : "." + parts.port) + ")";
}

std::string fusePrefix(std::string_view consumer) {
  std::string prefix = std::string(consumer) + "_";
  std::replace(prefix.begin(), prefix.end(), '.', '_');
  return prefix;
}

bool isFuseKernelName(std::string_view name) {
  const std::optional<FuseName> parts = parseFuseName(name);
  if (!parts || fuseName(*parts) != name) {
    return false;
  }
  return parts->producer.compare(0, 5, "fuse(") != 0 || isFuseKernelName(parts->producer);
}
namespace {

// What composing fuse(P, C) found: C's port that reads P's result, P's
// output IPF, and the fused template's names.
struct Composed {
  const InputSpec* port = nullptr;
  std::string pStart;   // P's output IPF before ":>"
  std::string shapeVar; // the variable of C's port pattern [$v...]
  std::string prefix;   // of C's other inputs, params and variables
  std::string shapeLet; // the let that binds C's port variable to P's output shape
  std::string temp;     // P's result as an intermediate block of the body
  std::map<std::string, std::string> vars;   // C's $variables, renamed
  std::map<std::string, std::string> cNames; // C's body names, renamed
  bool bodies = false;                       // both have a body
};

// What the composition needs of the two templates: throws why they do not compose.
Composed checkComposable(const std::string& name, const Metakernel& p, const Metakernel& c,
                         const std::string& portName) {
  if (p.outputs.size() != 1 || p.outputs[0].list) {
    cannot(name, "the producer " + p.name + " must have exactly one output (not a list)");
  }
  if (c.outputs.size() != 1 || c.outputs[0].list) {
    cannot(name, "the consumer " + c.name + " must have exactly one output (not a list)");
  }
  if (c.externKernel) {
    cannot(name, "the consumer " + c.name + " is an extern kernel");
  }
  if (c.inputs.empty()) {
    cannot(name, "the consumer " + c.name + " has no input to read the producer's result");
  }
  const InputSpec* port = portName.empty() ? &c.inputs[0] : c.findInput(portName);
  if (port == nullptr) {
    std::string known;
    for (const InputSpec& in : c.inputs) {
      known += (known.empty() ? "" : ", ") + in.name;
    }
    cannot(name, c.name + " has no input " + portName + " (its inputs: " + known + ")");
  }
  if (port->list || port->optional) {
    cannot(name, c.name + "'s input " + port->name + " is a list or optional port");
  }
  const OutputSpec& pout = p.outputs[0];
  const auto [pStart, pBlock] = splitIpf(pout.ipf.field.text);
  Composed k;
  k.port = port;
  k.pStart = pStart;
  if (withoutSpaces(pBlock) != "[1...]") {
    cannot(name, "the producer " + p.name + "'s output " + pout.name +
                     " is not one element per index point (its IPF is \"" + pout.ipf.field.text +
                     "\")");
  }
  // The fused port: [$v...], read element by element.
  const std::string pattern = withoutSpaces(port->shapeField.text);
  if (pattern.size() < 7 || pattern.compare(0, 2, "[$") != 0 ||
      pattern.compare(pattern.size() - 4, 4, "...]") != 0 ||
      !std::all_of(pattern.begin() + 2, pattern.end() - 4, identChar)) {
    cannot(name, c.name + "'s input " + port->name + " has the shape pattern \"" +
                     port->shapeField.text + "\", not [$NAME...]");
  }
  const std::string shapeVar = pattern.substr(2, pattern.size() - 6);
  k.shapeVar = shapeVar;
  const std::string portIpf = withoutSpaces(port->ipf.field.text);
  if (portIpf != "[@...]:>[1...]" &&
      portIpf != "[broadcast_rows(@,$" + shapeVar + ")...]:>[1...]") {
    cannot(name, c.name + " reads " + port->name + " through the IPF \"" + port->ipf.field.text +
                     "\", not element by element, so it cannot run on " + p.name +
                     "'s index points");
  }
  for (const InputSpec& in : c.inputs) {
    std::set<std::string> vars;
    collectVars(in.shapeField.text, vars);
    if (&in != port && vars.count(shapeVar) != 0) {
      cannot(name, c.name + "'s input " + in.name + " shares $" + shapeVar + " with " + port->name +
                       ", which the composition binds from " + p.name + "'s result");
    }
  }
  return k;
}

// C's names: variables and params prefixed, the port's dtype variable unified
// with P's output dtype variable, and none colliding with P's.
void nameConsumer(const std::string& name, const Metakernel& p, const Metakernel& c, Composed& k) {
  const InputSpec* port = k.port;
  const std::string& shapeVar = k.shapeVar;
  const OutputSpec& pout = p.outputs[0];
  const OutputSpec& cout = c.outputs[0];
  const std::string prefix = fusePrefix(c.name);
  std::set<std::string> cVars;
  auto collectField = [&](const std::string& text) { collectVars(text, cVars); };
  for (const InputSpec& in : c.inputs) {
    collectField(in.shapeField.text);
    collectField(in.ipf.field.text);
    if (in.dtype) {
      collectField(in.dtype->field.text);
    }
  }
  for (const LetSpec& let : c.let) {
    cVars.insert(let.name);
    collectField(let.field.text);
  }
  for (const ParamSpec& param : c.params) {
    cVars.insert(param.name);
  }
  for (const Constraint& con : c.constraints) {
    cVars.insert(con.variable);
  }
  for (const WhereSpec& w : c.where) {
    collectField(w.field.text);
  }
  collectField(c.indexField.text);
  collectField(cout.shapeField.text);
  collectField(cout.dtype.field.text);
  collectField(cout.ipf.field.text);
  collectField(c.flopsField.text);
  if (c.body) {
    collectField(c.body->field.text);
  }
  std::map<std::string, std::string> vars;
  for (const std::string& v : cVars) {
    vars[v] = prefix + v;
  }
  if (port->dtype && port->dtype->kind == DTypeSpec::Kind::Variable) {
    if (pout.dtype.kind != DTypeSpec::Kind::Variable) {
      cannot(name, c.name + "'s input " + port->name + " binds $" + port->dtype->name + " but " +
                       p.name + "'s output dtype is \"" + pout.dtype.field.text +
                       "\", not a variable");
    }
    vars[port->dtype->name] = pout.dtype.name;
  } else if (port->dtype) {
    cannot(name, c.name + "'s input " + port->name + " has the fixed dtype \"" +
                     port->dtype->field.text + "\"");
  }
  const std::string shapeLet = vars[shapeVar];

  // --- the fused template's names must not collide
  std::set<std::string> taken;
  auto take = [&](const std::string& n, const std::string& what) {
    if (!taken.insert(n).second) {
      cannot(name, "the composed " + what + " \"" + n + "\" is also a name of " + p.name);
    }
  };
  for (const ParamSpec& param : p.params) {
    take(param.name, "param");
  }
  for (const LetSpec& let : p.let) {
    take(let.name, "let");
  }
  for (const ParamSpec& param : c.params) {
    take(vars[param.name], "param");
  }
  take(shapeLet, "let");
  for (const LetSpec& let : c.let) {
    take(vars[let.name], "let");
  }
  std::set<std::string> ports;
  for (const InputSpec& in : p.inputs) {
    ports.insert(in.name);
  }
  std::map<std::string, std::string> cNames; // C's body names
  for (const InputSpec& in : c.inputs) {
    if (&in != port && !ports.insert(prefix + in.name).second) {
      cannot(name, "the composed input \"" + prefix + in.name + "\" is also an input of " + p.name);
    }
  }
  // Bodies: the fused template has one where both have (else a backend runs
  // the two kernels one after the other).
  const bool bodies = p.body && c.body;
  const std::set<std::string> pBodyNames =
      bodies ? blockNames(p.body->field.text) : std::set<std::string>{};
  if (ports.count(cout.name) != 0 || (pBodyNames.count(cout.name) != 0 && cout.name != pout.name)) {
    cannot(name, "the consumer's output \"" + cout.name + "\" is also a name in " + p.name);
  }
  // P's result becomes an intermediate block of the body.
  std::string temp = "fused_" + pout.name;
  const std::set<std::string> cBodyNames =
      bodies ? blockNames(c.body->field.text) : std::set<std::string>{};
  while (pBodyNames.count(temp) != 0 || ports.count(temp) != 0 || cBodyNames.count(temp) != 0) {
    temp += "_";
  }
  for (const InputSpec& in : c.inputs) {
    cNames[in.name] = &in == port ? temp : prefix + in.name;
  }
  for (const std::string& n :
       bodies ? assignedNames(c.body->field.text) : std::set<std::string>{}) {
    if (n != cout.name) {
      cNames[n] = prefix + n;
      if (pBodyNames.count(prefix + n) != 0) {
        cannot(name, "the consumer's body name \"" + prefix + n + "\" is also a name in " + p.name);
      }
    }
  }

  k.prefix = prefix;
  k.vars = std::move(vars);
  k.shapeLet = shapeLet;
  k.temp = temp;
  k.cNames = std::move(cNames);
  k.bodies = bodies;
}

// The IPF text "@" stands for in C's IPFs: P's output IPF (parenthesized
// unless it is a list already).
std::string producerAt(const Composed& k) {
  const std::string& pStart = k.pStart;
  return (pStart == "@" || (pStart.front() == '[' && pStart.back() == ']')) ? pStart
                                                                            : "(" + pStart + ")";
}

// The template's name, doc, params, constraints and inputs.
std::string templateHead(const std::string& name, const Metakernel& p, const Metakernel& c,
                         const Composed& k) {
  const InputSpec* port = k.port;
  const OutputSpec& pout = p.outputs[0];
  const std::map<std::string, std::string>& vars = k.vars;
  const std::string& prefix = k.prefix;
  const std::string at = producerAt(k);
  auto inputYaml = [&](std::string& out, const std::string& n, const InputSpec& in,
                       const std::string& shape, const std::string* dtype, const std::string& ipf) {
    out += "    " + n + ": {shape: " + yamlString(shape);
    if (dtype != nullptr) {
      out += ", dtype: " + yamlString(*dtype);
    }
    out += ", ipf: " + yamlString(ipf);
    if (in.optional) {
      out += ", optional: true";
    }
    if (in.absent) {
      out += ", default: " + Json(*in.absent).dump();
    }
    if (in.list) {
      out += ", list: true";
    }
    if (in.packed) {
      out += ", packed: true";
    }
    out += "}\n";
  };

  std::string y = yamlString(name) + ":\n";
  std::string doc = p.name + ", then " + c.name + " on its output " + pout.name + " (read as " +
                    c.name + "'s " + port->name +
                    "), as one operation: composed from the two templates by fuse(). The index "
                    "space, inputs and params are " +
                    p.name + "'s, then " + c.name + "'s other inputs and params named " + prefix +
                    "NAME.";
  if (pout.combine) {
    doc += " " + p.name + "'s reduction dims are not split: " + c.name +
           " needs whole sums, so the result has no combine.";
  }
  y += "  doc: " + yamlString(doc) + "\n";
  if (!p.params.empty() || !c.params.empty()) {
    y += "  params:\n";
    auto paramYaml = [&](const std::string& n, const ParamSpec& param) {
      y += "    " + n + ": {type: " + std::string(paramTypeName(param.type));
      if (param.defaultValue) {
        y += ", default: " + param.defaultValue->dump();
      }
      y += "}\n";
    };
    for (const ParamSpec& param : p.params) {
      paramYaml(param.name, param);
    }
    for (const ParamSpec& param : c.params) {
      paramYaml(vars.at(param.name), param);
    }
  }
  std::map<std::string, std::vector<std::string>> constraints;
  std::vector<std::string> constraintOrder;
  auto constrain = [&](const std::string& v, const std::vector<std::string>& allowed) {
    auto it = constraints.find(v);
    if (it == constraints.end()) {
      constraints[v] = allowed;
      constraintOrder.push_back(v);
      return;
    }
    std::vector<std::string> both;
    for (const std::string& a : it->second) {
      if (std::find(allowed.begin(), allowed.end(), a) != allowed.end()) {
        both.push_back(a);
      }
    }
    it->second = both;
  };
  for (const Constraint& con : p.constraints) {
    constrain(con.variable, con.allowed);
  }
  for (const Constraint& con : c.constraints) {
    constrain(vars.at(con.variable), con.allowed);
  }
  if (!constraints.empty()) {
    y += "  constraints:\n";
    for (const std::string& v : constraintOrder) {
      if (constraints[v].empty()) {
        cannot(name, p.name + " and " + c.name + " allow no common value of $" + v);
      }
      y += "    " + v + ": {enum: " + Json(constraints[v]).dump() + "}\n";
    }
  }
  y += "  inputs:\n";
  for (const InputSpec& in : p.inputs) {
    const std::string dtype = in.dtype ? in.dtype->field.text : "";
    inputYaml(y, in.name, in, in.shapeField.text, in.dtype ? &dtype : nullptr, in.ipf.field.text);
  }
  for (const InputSpec& in : c.inputs) {
    if (&in == port) {
      continue;
    }
    const std::string dtype = in.dtype ? rewriteExpr(in.dtype->field.text, vars) : "";
    const auto [start, block] = splitIpf(in.ipf.field.text);
    const std::string ipf = rewriteExpr(start, vars, &at) + " :> " + rewriteExpr(block, vars);
    inputYaml(y, prefix + in.name, in, rewriteExpr(in.shapeField.text, vars),
              in.dtype ? &dtype : nullptr, ipf);
  }
  return y;
}

// The template's lets, where clauses, index, output, cost and body.
std::string templateTail(const Metakernel& p, const Metakernel& c, const Composed& k) {
  const OutputSpec& pout = p.outputs[0];
  const OutputSpec& cout = c.outputs[0];
  const std::map<std::string, std::string>& vars = k.vars;
  const std::string& shapeLet = k.shapeLet;
  const std::string& temp = k.temp;
  const bool bodies = k.bodies;
  const std::string at = producerAt(k);
  const std::string pIndex = p.indexField.text;
  const std::string yShape = pout.shape ? pout.shapeField.text : pIndex;
  std::string y;
  y += "  let:\n";
  for (const LetSpec& let : p.let) {
    y += "    " + let.name + ": " + yamlString(let.field.text) + "\n";
  }
  y += "    " + shapeLet + ": " + yamlString(yShape) + "\n";
  for (const LetSpec& let : c.let) {
    y += "    " + vars.at(let.name) + ": " + yamlString(rewriteExpr(let.field.text, vars)) + "\n";
  }
  y += "  where:\n";
  auto whereYaml = [&](const std::string& check, const std::string& message,
                       const std::string& given = "") {
    if (message.empty()) {
      y += "    - " + yamlString(check) + "\n";
    } else {
      y += "    - {check: " + yamlString(check) + ", message: " + yamlString(message) +
           (given.empty() ? "" : ", given: " + yamlString(given)) + "}\n";
    }
  };
  for (const WhereSpec& w : p.where) {
    whereYaml(w.field.text, w.message, w.given);
  }
  const std::string cIndex = rewriteExpr(c.indexField.text, vars);
  if (withoutSpaces(cIndex) != "$" + shapeLet) {
    whereYaml(cIndex + " == $" + shapeLet, c.name + "'s index space must be the shape of " +
                                               p.name + "'s output " + pout.name +
                                               " (fuse does not broadcast it)");
  }
  for (const WhereSpec& w : c.where) {
    whereYaml(rewriteExpr(w.field.text, vars), rewriteExpr(w.message, vars),
              w.given.empty() ? "" : k.prefix + w.given);
  }
  y += "  index: " + yamlString(pIndex) + "\n";
  y += "  outputs:\n";
  const auto [cStart, cBlock] = splitIpf(cout.ipf.field.text);
  const std::string outIpf =
      withoutSpaces(cout.ipf.field.text) == "[@...]:>[1...]"
          ? pout.ipf.field.text
          : rewriteExpr(cStart, vars, &at) + " :> " + rewriteExpr(cBlock, vars);
  y += "    " + cout.name + ": {shape: " +
       yamlString(cout.shape ? rewriteExpr(cout.shapeField.text, vars) : "$" + shapeLet) +
       ", dtype: " + yamlString(rewriteExpr(cout.dtype.field.text, vars)) +
       ", ipf: " + yamlString(outIpf) + "}\n";
  const std::string pFlops = p.flops ? p.flopsField.text : "0";
  std::string flops = pFlops;
  if (c.flops) {
    flops = "(" + pFlops + ") + (" + rewriteExpr(c.flopsField.text, vars) + ") * prod($" +
            shapeLet + ") / prod(" + pIndex + ")";
  }
  y += "  cost: {flops: " + yamlString(flops);
  if (p.bytes) {
    y += ", bytes: " + yamlString(p.bytesField.text);
  }
  y += "}\n";
  if (bodies) {
    const std::string body = renameBody(p.body->field.text, {{pout.name, temp}}, {}) + "; " +
                             renameBody(c.body->field.text, k.cNames, vars);
    y += "  body: " + yamlString(body) + "\n";
  }
  return y;
  return y;
}

} // namespace

std::string fusedTemplateText(const std::string& name, const Metakernel& p, const Metakernel& c,
                              const std::string& portName) {
  Composed k = checkComposable(name, p, c, portName);
  nameConsumer(name, p, c, k);
  return templateHead(name, p, c, k) + templateTail(p, c, k);
}

} // namespace tapestry::metakernel
