// YAML -> Metakernel. Every problem is a located Error pointing into the YAML file;
// expression errors point at the column inside the string.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/metakernel/metakernel.hpp"

#include "core/metakernel/fuse.hpp"
#include "core/metakernel/yaml_util.hpp"

namespace tapestry::metakernel {

const char* paramTypeName(ParamType type) {
  switch (type) {
  case ParamType::Int:
    return "int";
  case ParamType::Ints:
    return "ints";
  case ParamType::Bool:
    return "bool";
  case ParamType::Float:
    return "float";
  case ParamType::DType:
    return "dtype";
  }
  return "int";
}

const char* combineName(Combine combine) {
  switch (combine) {
  case Combine::Sum:
    return "sum";
  case Combine::Max:
    return "max";
  case Combine::Min:
    return "min";
  case Combine::Prod:
    return "prod";
  }
  return "sum";
}

std::string toString(const TensorType& t) {
  return formatInts(t.shape) + " " + t.dtype;
}

SourceLocation FieldInfo::at(int exprColumn) const {
  SourceLocation loc = location;
  if (loc.line > 0) {
    loc.column = textColumn + std::max(exprColumn, 1) - 1;
  }
  return loc;
}

Snippet FieldInfo::snippetAt(int exprColumn) const {
  return Snippet{lineText, textColumn + std::max(exprColumn, 1) - 1};
}

namespace {

using yaml::Entry;
using yaml::Reader;

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool isKernelName(std::string_view s) {
  if (isFuseKernelName(s)) {
    return true;
  }
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

std::string stripDollar(const std::string& s) {
  return !s.empty() && s[0] == '$' ? s.substr(1) : s;
}

const expr::IpfTemplate& defaultIpf() {
  static const expr::IpfTemplate ipf = [] {
    try {
      return expr::parseIpf("[@...] :> [1...]");
    } catch (const Error& e) {
      throw InternalError("the default IPF does not parse: " + e.message());
    }
  }();
  return ipf;
}

// The field's text as quoted in a message: whole up to 100 bytes, else its
// first 80 and "..." (the snippet below the message shows the place itself).
std::string quotedField(const std::string& text) {
  if (text.size() <= 100) {
    return "\"" + text + "\"";
  }
  std::size_t cut = 80;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut; // never inside a UTF-8 sequence
  }
  return "\"" + text.substr(0, cut) + "...\"";
}

// Parses the string of `node` with `parser`; an ExprError becomes a file location
// at the column inside the string.
template <class Parser>
auto parseField(const Reader& r, const YAML::Node& node, const std::string& role, FieldInfo& field,
                Parser parser) {
  field = r.field(node, role);
  try {
    return parser(field.text);
  } catch (const expr::ExprError& e) {
    std::string message = "in " + role + " " + quotedField(field.text) + ": " + e.message() +
                          " at column " + std::to_string(e.column());
    throw Error(
        Diagnostic{Severity::Error, field.at(e.column()), message, field.snippetAt(e.column()), {}},
        ExitCode::InvalidInput);
  } catch (Error& e) {
    e.prefix("in " + role + " " + quotedField(field.text) + ": ");
    e.locate(field.location, field.snippetAt(1));
    throw;
  }
}

expr::Expr parseExprField(const Reader& r, const YAML::Node& node, const std::string& role,
                          FieldInfo& field) {
  return parseField(r, node, role, field,
                    [](const std::string& text) { return expr::parseExpression(text); });
}

IpfSpec parseIpfField(const Reader& r, const YAML::Node& node, const std::string& role) {
  IpfSpec spec;
  spec.ipf = parseField(r, node, role, spec.field,
                        [](const std::string& text) { return expr::parseIpf(text); });
  return spec;
}

// A body assigns every output once and never an input's name.
void checkBodyPorts(const Metakernel& k, const BodySpec& spec) {
  auto fail = [&](int column, const std::string& message) {
    throw Error(Diagnostic{Severity::Error,
                           spec.field.at(column),
                           "in body " + quotedField(spec.field.text) + ": " + message +
                               " at column " + std::to_string(column),
                           spec.field.snippetAt(column),
                           {}},
                ExitCode::InvalidInput);
  };
  std::set<std::string, std::less<>> assigned;
  for (const expr::BodyStatement& st : spec.body.statements()) {
    for (std::size_t i = 0; i < st.targets.size(); ++i) {
      const std::string& name = st.targets[i];
      if (k.findInput(name) != nullptr) {
        fail(st.targetColumns[i], "'" + name + "' is an input; give the result another name");
      }
      if (!assigned.insert(name).second) {
        fail(st.targetColumns[i], "'" + name + "' is assigned twice");
      }
    }
  }
  for (const OutputSpec& o : k.outputs) {
    if (assigned.count(o.name) == 0) {
      fail(1, "no statement assigns output " + o.name + " (write \"" + o.name + " = ...\")");
    }
  }
}

IpfSpec defaultIpfSpec(const Reader& r, const YAML::Node& port) {
  IpfSpec spec;
  spec.ipf = defaultIpf();
  spec.isDefault = true;
  spec.field.role = "ipf";
  spec.field.text = defaultIpf().text();
  spec.field.location = r.location(port);
  spec.field.lineText = r.lineText(port);
  spec.field.textColumn = spec.field.location.column;
  return spec;
}

DTypeSpec parseDType(const Reader& r, const YAML::Node& node, const std::string& role) {
  DTypeSpec spec;
  spec.field = r.field(node, role);
  const std::string& text = spec.field.text;
  if (isIdentifier(text)) {
    spec.kind = DTypeSpec::Kind::Literal;
    spec.name = text;
  } else if (text.size() > 1 && text[0] == '$' && isIdentifier(std::string_view(text).substr(1))) {
    spec.kind = DTypeSpec::Kind::Variable;
    spec.name = text.substr(1);
  } else {
    spec.kind = DTypeSpec::Kind::Expression;
    spec.expression = parseExprField(r, node, role, spec.field);
  }
  return spec;
}

std::optional<ParamType> paramTypeFromName(const std::string& s) {
  for (ParamType t :
       {ParamType::Int, ParamType::Ints, ParamType::Bool, ParamType::Float, ParamType::DType}) {
    if (s == paramTypeName(t)) {
      return t;
    }
  }
  return std::nullopt;
}

std::vector<ParamSpec> parseParams(const Reader& r, const YAML::Node& node) {
  std::vector<ParamSpec> out;
  for (const Entry& e : r.entries(node, "params", true)) {
    ParamSpec p;
    p.name = stripDollar(e.key);
    p.location = r.location(e.keyNode);
    if (!isIdentifier(p.name)) {
      r.fail(e.keyNode, "param name \"" + e.key + "\" is not an identifier");
    }
    std::vector<Entry> fields = r.entries(e.value, "param " + p.name, false);
    r.expectKeys(fields, {"type", "default", "doc"}, "param " + p.name);
    const Entry* type = r.require(fields, e.keyNode, "type", "param " + p.name);
    std::string typeName = r.scalar(type->value, "param type");
    std::optional<ParamType> t = paramTypeFromName(typeName);
    if (!t) {
      r.fail(type->value, "param " + p.name + ": unknown type \"" + typeName +
                              "\" (expected one of: int, ints, bool, float, dtype)");
    }
    p.type = *t;
    if (const Entry* d = yaml::findEntry(fields, "default")) {
      Json value = r.toJson(d->value);
      if (std::optional<std::string> problem = checkParamValue(p.type, value)) {
        r.fail(d->value, "param " + p.name + ": default: " + *problem);
      }
      p.defaultValue = std::move(value);
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Constraint> parseConstraints(const Reader& r, const YAML::Node& node) {
  std::vector<Constraint> out;
  for (const Entry& e : r.entries(node, "constraints", true)) {
    Constraint c;
    c.variable = stripDollar(e.key);
    c.location = r.location(e.keyNode);
    std::string what = "constraint on $" + c.variable;
    std::vector<Entry> fields = r.entries(e.value, what, false);
    r.expectKeys(fields, {"enum"}, what);
    const Entry* en = r.require(fields, e.keyNode, "enum", what);
    for (const YAML::Node& v : r.sequence(en->value, "enum", false)) {
      c.allowed.push_back(r.scalar(v, "enum value"));
    }
    if (c.allowed.empty()) {
      r.fail(en->value, what + ": enum needs at least one value");
    }
    out.push_back(std::move(c));
  }
  return out;
}

bool parseBool(const Reader& r, const YAML::Node& node, const std::string& what) {
  std::string s = r.scalar(node, what);
  if (s == "true" || s == "True") {
    return true;
  }
  if (s == "false" || s == "False") {
    return false;
  }
  r.fail(node, what + ": expected true or false, got \"" + s + "\"");
}

std::vector<InputSpec> parseInputs(const Reader& r, const YAML::Node& node) {
  std::vector<InputSpec> out;
  for (const Entry& e : r.entries(node, "inputs", true)) {
    if (!isIdentifier(e.key)) {
      r.fail(e.keyNode, "input name \"" + e.key + "\" is not an identifier");
    }
    std::string what = "input " + e.key;
    std::vector<Entry> fields = r.entries(e.value, what, false);
    r.expectKeys(fields, {"shape", "dtype", "ipf", "list", "optional", "packed", "default", "doc"},
                 what);
    const Entry* shape = r.require(fields, e.keyNode, "shape", what);
    InputSpec in;
    in.name = e.key;
    in.location = r.location(e.keyNode);
    in.ipf = defaultIpfSpec(r, e.keyNode);
    in.shape = parseField(r, shape->value, "shape pattern", in.shapeField,
                          [](const std::string& t) { return expr::parsePattern(t); });
    if (const Entry* d = yaml::findEntry(fields, "dtype")) {
      in.dtype = parseDType(r, d->value, "dtype expression");
    }
    if (const Entry* i = yaml::findEntry(fields, "ipf")) {
      in.ipf = parseIpfField(r, i->value, "ipf");
    }
    if (const Entry* l = yaml::findEntry(fields, "list")) {
      in.list = parseBool(r, l->value, what + ": list");
    }
    if (const Entry* o = yaml::findEntry(fields, "optional")) {
      in.optional = parseBool(r, o->value, what + ": optional");
    }
    if (const Entry* p = yaml::findEntry(fields, "packed")) {
      in.packed = parseBool(r, p->value, what + ": packed");
    }
    if (const Entry* d = yaml::findEntry(fields, "default")) {
      if (!in.optional || in.list) {
        r.fail(d->keyNode, what + ": default is only for optional inputs (add optional: true)");
      }
      const std::string text = r.scalar(d->value, what + ": default");
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
        r.fail(d->value, what + ": default must be a number, got \"" + text + "\"");
      }
      in.absent = value;
    }
    out.push_back(std::move(in));
  }
  return out;
}

std::optional<Combine> combineFromName(const std::string& s) {
  for (Combine c : {Combine::Sum, Combine::Max, Combine::Min, Combine::Prod}) {
    if (s == combineName(c)) {
      return c;
    }
  }
  return std::nullopt;
}

std::vector<OutputSpec> parseOutputs(const Reader& r, const YAML::Node& node) {
  std::vector<OutputSpec> out;
  for (const Entry& e : r.entries(node, "outputs", false)) {
    if (!isIdentifier(e.key)) {
      r.fail(e.keyNode, "output name \"" + e.key + "\" is not an identifier");
    }
    std::string what = "output " + e.key;
    std::vector<Entry> fields = r.entries(e.value, what, false);
    r.expectKeys(fields, {"shape", "dtype", "ipf", "combine", "list", "count", "doc"}, what);
    OutputSpec o;
    o.name = e.key;
    o.location = r.location(e.keyNode);
    o.ipf = defaultIpfSpec(r, e.keyNode);
    if (const Entry* s = yaml::findEntry(fields, "shape")) {
      o.shape = parseExprField(r, s->value, "shape expression", o.shapeField);
    }
    const Entry* d = r.require(fields, e.keyNode, "dtype", what);
    o.dtype = parseDType(r, d->value, "dtype expression");
    if (const Entry* i = yaml::findEntry(fields, "ipf")) {
      o.ipf = parseIpfField(r, i->value, "ipf");
    }
    if (const Entry* c = yaml::findEntry(fields, "combine")) {
      std::string name = r.scalar(c->value, "combine");
      o.combine = combineFromName(name);
      if (!o.combine) {
        r.fail(c->value,
               what + ": unknown combine \"" + name + "\" (expected one of: sum, max, min, prod)");
      }
    }
    if (const Entry* l = yaml::findEntry(fields, "list")) {
      o.list = parseBool(r, l->value, what + ": list");
    }
    if (const Entry* c = yaml::findEntry(fields, "count")) {
      if (!o.list) {
        r.fail(c->keyNode, what + ": count is only for list outputs (add list: true)");
      }
      o.count = parseExprField(r, c->value, "count expression", o.countField);
    } else if (o.list) {
      r.fail(e.keyNode, what + ": a list output needs a count expression (count: EXPR)");
    }
    out.push_back(std::move(o));
  }
  if (out.empty()) {
    r.fail(node, "outputs: a kernel needs at least one output");
  }
  return out;
}

bool mentionsVariable(const std::string& text, const std::string& name) {
  std::string needle = "$" + name;
  for (std::size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + 1)) {
    std::size_t end = pos + needle.size();
    if (end == text.size() ||
        !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      return true;
    }
  }
  return false;
}

std::vector<std::int64_t> parseInts(const Reader& r, const YAML::Node& node,
                                    const std::string& what) {
  std::vector<std::int64_t> out;
  for (const YAML::Node& v : r.sequence(node, what, false)) {
    out.push_back(r.integer(v, what));
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<TensorType>>>
parseExampleTensors(const Reader& r, const YAML::Node& node, const std::string& what) {
  std::vector<std::pair<std::string, std::vector<TensorType>>> out;
  for (const Entry& e : r.entries(node, what, false)) {
    auto one = [&](const YAML::Node& t) {
      std::string w = what + " " + e.key;
      std::vector<Entry> fields = r.entries(t, w, false);
      r.expectKeys(fields, {"shape", "dtype"}, w);
      TensorType tt;
      tt.shape = parseInts(r, r.require(fields, t, "shape", w)->value, "shape");
      if (const Entry* d = yaml::findEntry(fields, "dtype")) {
        tt.dtype = r.scalar(d->value, "dtype");
      } else {
        tt.dtype = "float32";
      }
      return tt;
    };
    std::vector<TensorType> tensors;
    if (e.value.IsSequence()) {
      for (const YAML::Node& t : r.sequence(e.value, what, false)) {
        tensors.push_back(one(t));
      }
    } else {
      tensors.push_back(one(e.value));
    }
    out.emplace_back(e.key, std::move(tensors));
  }
  return out;
}

std::vector<ExampleSpec> parseExamples(const Reader& r, const YAML::Node& node) {
  std::vector<ExampleSpec> out;
  for (const YAML::Node& ex : r.sequence(node, "examples", true)) {
    ExampleSpec spec;
    spec.location = r.location(ex);
    spec.lineText = r.lineText(ex);
    std::vector<Entry> fields = r.entries(ex, "example", false);
    r.expectKeys(fields, {"inputs", "params", "expect", "error", "doc"}, "example");
    if (const Entry* i = yaml::findEntry(fields, "inputs")) {
      spec.inputs = parseExampleTensors(r, i->value, "example input");
    }
    if (const Entry* p = yaml::findEntry(fields, "params")) {
      spec.params = r.toJson(p->value);
      if (spec.params.is_null()) {
        spec.params = Json::object();
      }
      if (!spec.params.is_object()) {
        r.fail(p->value, "example params: expected a map of param names to values");
      }
    }
    if (const Entry* x = yaml::findEntry(fields, "expect")) {
      std::vector<Entry> expect = r.entries(x->value, "expect", false);
      r.expectKeys(expect, {"index", "outputs", "flops"}, "expect");
      if (const Entry* i = yaml::findEntry(expect, "index")) {
        spec.expectIndex = parseInts(r, i->value, "expect index");
      }
      if (const Entry* o = yaml::findEntry(expect, "outputs")) {
        spec.expectOutputs = parseExampleTensors(r, o->value, "expect output");
      }
      if (const Entry* f = yaml::findEntry(expect, "flops")) {
        spec.expectFlops = r.integer(f->value, "expect flops");
      }
    }
    if (const Entry* err = yaml::findEntry(fields, "error")) {
      spec.expectError = r.scalar(err->value, "error");
    }
    out.push_back(std::move(spec));
  }
  return out;
}

// The lines of the kernel starting at `line` (1-based) up to the next top-level
// key, without trailing blank or comment lines (they belong to the next kernel).
std::string kernelSourceText(const SourceFile& file, int line, int nextLine) {
  int last = nextLine - 1;
  auto isFiller = [&](int l) {
    std::string t = file.lineText(l);
    std::size_t first = t.find_first_not_of(" \t");
    return first == std::string::npos || t[first] == '#';
  };
  while (last > line && isFiller(last)) {
    --last;
  }
  std::string out;
  for (int l = line; l <= last; ++l) {
    out += file.lineText(l);
    out += '\n';
  }
  return out;
}

// extern: {library: PATH, symbol: NAME}; a relative PATH against `directory`.
std::shared_ptr<const ExternSpec> parseExtern(const Reader& r, const YAML::Node& node,
                                              const std::string& directory) {
  std::vector<Entry> parts = r.entries(node, "extern", false);
  r.expectKeys(parts, {"library", "symbol"}, "extern");
  const Entry* library = yaml::findEntry(parts, "library");
  const Entry* symbol = yaml::findEntry(parts, "symbol");
  if (library == nullptr || symbol == nullptr) {
    r.fail(node, "extern needs both \"library\" (a shared library's path) and \"symbol\" (the "
                 "C function's name)");
  }
  auto spec = std::make_shared<ExternSpec>();
  spec->library = r.scalar(library->value, "extern library");
  spec->symbol = r.scalar(symbol->value, "extern symbol");
  if (spec->library.empty()) {
    r.fail(library->value, "extern library is empty");
  }
  if (!isIdentifier(spec->symbol)) {
    r.fail(symbol->value, "extern symbol \"" + spec->symbol + "\" is not a C identifier");
  }
  const std::filesystem::path path(spec->library);
  spec->path = path.is_absolute() || directory.empty()
                   ? spec->library
                   : (std::filesystem::path(directory) / path).lexically_normal().string();
  spec->location = r.location(library->value);
  spec->lineText = r.lineText(library->value);
  return spec;
}

Metakernel parseKernel(const Reader& r, const Entry& e, const std::string& directory) {
  Metakernel k;
  k.name = e.key;
  k.location = r.location(e.keyNode);
  if (!isKernelName(k.name)) {
    r.fail(e.keyNode, "kernel name \"" + k.name +
                          "\" is not valid (expected letters, digits, '_' and '.', not "
                          "starting with a digit)");
  }
  std::string what = "kernel " + k.name;
  std::vector<Entry> fields = r.entries(e.value, what, false);
  r.expectKeys(fields,
               {"doc", "params", "constraints", "inputs", "let", "index", "outputs", "cost",
                "where", "examples", "body", "extern"},
               what);
  if (const Entry* d = yaml::findEntry(fields, "doc")) {
    k.doc = r.scalar(d->value, "doc");
  }
  if (const Entry* p = yaml::findEntry(fields, "params")) {
    k.params = parseParams(r, p->value);
  }
  if (const Entry* c = yaml::findEntry(fields, "constraints")) {
    k.constraints = parseConstraints(r, c->value);
  }
  if (const Entry* i = yaml::findEntry(fields, "inputs")) {
    k.inputs = parseInputs(r, i->value);
  }
  if (const Entry* l = yaml::findEntry(fields, "let")) {
    for (const Entry& v : r.entries(l->value, "let", true)) {
      LetSpec let;
      let.name = stripDollar(v.key);
      if (!isIdentifier(let.name)) {
        r.fail(v.keyNode, "let name \"" + v.key + "\" is not an identifier");
      }
      if (k.findParam(let.name) != nullptr) {
        r.fail(v.keyNode, "let $" + let.name + " has the name of a param");
      }
      let.expression = parseExprField(r, v.value, "let expression", let.field);
      k.let.push_back(std::move(let));
    }
  }
  const Entry* index = r.require(fields, e.keyNode, "index", what);
  k.index = parseExprField(r, index->value, "index expression", k.indexField);
  const Entry* outputs = r.require(fields, e.keyNode, "outputs", what);
  k.outputs = parseOutputs(r, outputs->value);
  for (const InputSpec& in : k.inputs) {
    if (k.findOutput(in.name) != nullptr) {
      r.fail(outputs->value, "output " + in.name + " has the name of an input");
    }
  }
  if (const Entry* c = yaml::findEntry(fields, "cost")) {
    std::vector<Entry> cost = r.entries(c->value, "cost", true);
    r.expectKeys(cost, {"flops", "bytes"}, "cost");
    if (const Entry* f = yaml::findEntry(cost, "flops")) {
      k.flops = parseExprField(r, f->value, "flops expression", k.flopsField);
    }
    if (const Entry* b = yaml::findEntry(cost, "bytes")) {
      k.bytes = parseExprField(r, b->value, "bytes expression", k.bytesField);
    }
  }
  if (const Entry* w = yaml::findEntry(fields, "where")) {
    for (const YAML::Node& clause : r.sequence(w->value, "where", true)) {
      WhereSpec spec;
      if (clause.IsMap()) {
        // {check: EXPR, message: TEXT}: the message is what a failure says;
        // with given: PORT, the clause holds when optional input PORT is left
        // out (its variables are then unbound).
        std::vector<Entry> parts = r.entries(clause, "where clause", false);
        r.expectKeys(parts, {"check", "message", "given"}, "where clause");
        const Entry* check = yaml::findEntry(parts, "check");
        const Entry* message = yaml::findEntry(parts, "message");
        if (check == nullptr || message == nullptr) {
          r.fail(clause, "where clause: a map needs both \"check\" (the expression) and "
                         "\"message\" (what a failure says)");
        }
        spec.message = r.scalar(message->value, "where clause message");
        if (const Entry* given = yaml::findEntry(parts, "given")) {
          spec.given = r.scalar(given->value, "where clause given");
          const InputSpec* port = k.findInput(spec.given);
          if (port == nullptr || !port->optional) {
            r.fail(given->value, "where clause: given: " + spec.given +
                                     " is not an optional input of the kernel (given names "
                                     "the optional input the clause is about)");
          }
        }
        spec.expression = parseExprField(r, check->value, "where clause", spec.field);
      } else {
        spec.expression = parseExprField(r, clause, "where clause", spec.field);
      }
      spec.afterLet = std::any_of(k.let.begin(), k.let.end(), [&](const LetSpec& let) {
        return mentionsVariable(spec.field.text, let.name);
      });
      k.where.push_back(std::move(spec));
    }
  }
  if (const Entry* x = yaml::findEntry(fields, "examples")) {
    k.examples = parseExamples(r, x->value);
  }
  if (const Entry* b = yaml::findEntry(fields, "body")) {
    auto spec = std::make_shared<BodySpec>();
    spec->body = parseField(r, b->value, "body", spec->field,
                            [](const std::string& text) { return expr::parseBody(text); });
    checkBodyPorts(k, *spec);
    k.body = std::move(spec);
  }
  if (const Entry* x = yaml::findEntry(fields, "extern")) {
    k.externKernel = parseExtern(r, x->value, directory);
  }
  return k;
}

} // namespace

std::vector<Metakernel> loadMetakernels(const SourceFile& file, const std::string& directory) {
  std::string dir = directory;
  if (dir.empty()) {
    dir = std::filesystem::path(file.name()).parent_path().string();
    if (dir.empty()) {
      dir = ".";
    }
  }
  Reader r(file);
  YAML::Node root = r.parse();
  std::vector<Metakernel> out;
  if (!root.IsDefined() || root.IsNull()) {
    return out;
  }
  if (!root.IsMap()) {
    r.fail(root,
           std::string("expected a map of kernel names to templates, got ") + yaml::kindName(root));
  }
  std::vector<Entry> kernels = r.entries(root, "kernel file", false);
  bool blockStyle = std::all_of(kernels.begin(), kernels.end(),
                                [&](const Entry& e) { return r.location(e.keyNode).column == 1; });
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    Metakernel k = parseKernel(r, kernels[i], dir);
    if (blockStyle) {
      int line = k.location.line;
      int next =
          i + 1 < kernels.size() ? r.location(kernels[i + 1].keyNode).line : file.lineCount() + 1;
      k.sourceText = kernelSourceText(file, line, next);
    } else {
      k.sourceText = file.text();
    }
    out.push_back(std::move(k));
  }
  return out;
}

} // namespace tapestry::metakernel
