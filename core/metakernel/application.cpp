// Applying a template to one operation. Only evaluates the ASTs parsed at load.
#include "core/metakernel/application.hpp"
#include "core/metakernel/shard_body.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <utility>

#include "core/metakernel/library.hpp"
#include "core/zspace/checked.hpp"
#include "core/zspace/zspace_json.hpp"

namespace tapestry::metakernel {

namespace {

std::string jsonTypeName(const Json& v) {
  if (v.is_null()) {
    return "null";
  }
  if (v.is_boolean()) {
    return "bool";
  }
  if (v.is_number_integer()) {
    return "int";
  }
  if (v.is_number()) {
    return "float";
  }
  if (v.is_string()) {
    return "string";
  }
  if (v.is_array()) {
    return "list";
  }
  return "object";
}

bool isInt64(const Json& v) {
  if (v.is_number_unsigned()) {
    return v.get<std::uint64_t>() <=
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  }
  return v.is_number_integer();
}

// Whether `value` has the JSON type of `type` (for ints, a list: its elements
// are checked after).
bool hasJsonType(ParamType type, const Json& value) {
  switch (type) {
  case ParamType::Int:
    return isInt64(value);
  case ParamType::Bool:
    return value.is_boolean();
  case ParamType::Float:
    return value.is_number();
  case ParamType::DType:
    return value.is_string();
  case ParamType::Ints:
    return value.is_array();
  }
  return false;
}

} // namespace

std::optional<std::string> checkParamValue(ParamType type, const Json& value) {
  std::string expected = std::string("expected ") + paramTypeName(type) + ", got ";
  if (hasJsonType(type, value)) {
    if (type == ParamType::Ints) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!isInt64(value[i])) {
          return expected + "a list with " + jsonTypeName(value[i]) + " " + value[i].dump() +
                 " at index " + std::to_string(i);
        }
      }
    }
    return std::nullopt;
  }
  if (value.is_number_unsigned() && !isInt64(value)) {
    return expected + value.dump() + ", which does not fit in int64";
  }
  return expected + jsonTypeName(value);
}

namespace {

std::string shapesText(const std::vector<TensorType>& tensors, bool list) {
  if (!list && tensors.size() == 1) {
    return formatInts(tensors[0].shape);
  }
  std::string out = "[";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    out += (i ? ", " : "") + formatInts(tensors[i].shape);
  }
  return out + "]";
}

std::string dtypesText(const std::vector<TensorType>& tensors, bool list) {
  if (!list && tensors.size() == 1) {
    return tensors[0].dtype;
  }
  std::string out = "[";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    out += (i ? ", " : "") + tensors[i].dtype;
  }
  return out + "]";
}

Diagnostic noteAt(const FieldInfo& f, int exprColumn, const std::string& kernel) {
  Diagnostic note;
  note.severity = Severity::Note;
  note.location = f.at(exprColumn);
  note.message = "in kernel " + kernel + ", " + f.role + " \"" + f.text + "\"";
  if (isStandardLibraryFile(note.location.file)) {
    note.message += " (built in; 'tapestry kernels show " + kernel + "' prints it)";
  }
  if (note.location.line > 0) {
    note.snippet = f.snippetAt(exprColumn);
  }
  return note;
}

// What one application needs while it runs.
class Applier {
public:
  Applier(const Metakernel& k, const Operation& op) : k_(k), op_(op) {}

  Application run();

private:
  // Runs `fn`, turning errors into messages that name the field.
  template <class F> auto inField(const FieldInfo& f, F&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const expr::ExprError& e) {
      Error out("in " + f.role + " \"" + f.text + "\": " + e.message() + " at column " +
                std::to_string(e.column()));
      out.addNote(noteAt(f, e.column(), k_.name));
      throw out;
    } catch (Error& e) {
      if (e.exitCode() == ExitCode::InvalidInput) {
        e.prefix("in " + f.role + " \"" + f.text + "\": ");
        e.addNote(noteAt(f, 1, k_.name));
      }
      throw;
    }
  }

  expr::Value eval(const expr::Expr& e, const FieldInfo& f, const expr::Bindings& b,
                   std::optional<std::int64_t> fill = std::nullopt) {
    return inField(f, [&] { return expr::evaluate(e, expr::EvalContext{&b, fill, std::nullopt}); });
  }
  std::vector<std::int64_t> evalInts(const expr::Expr& e, const FieldInfo& f,
                                     const expr::Bindings& b, const std::string& what) {
    return inField(f, [&] {
      expr::Value v = expr::evaluate(e, expr::EvalContext{&b, std::nullopt, std::nullopt});
      if (!v.isList()) {
        throw Error(std::string("expected a list of ints for ") + what + ", got " + v.typeName() +
                    " " + v.toString());
      }
      return v.toInts(what);
    });
  }
  std::int64_t evalInt(const expr::Expr& e, const FieldInfo& f, const expr::Bindings& b,
                       const std::string& what) {
    return inField(f, [&] {
      expr::Value v = expr::evaluate(e, expr::EvalContext{&b, std::nullopt, std::nullopt});
      if (!v.isInt()) {
        throw Error("expected an int for " + what + ", got " + v.typeName() + " " + v.toString());
      }
      return v.asInt();
    });
  }
  [[noreturn]] void failAt(const FieldInfo& f, const std::string& message) {
    Error e(message);
    e.addNote(noteAt(f, 1, k_.name));
    throw e;
  }

  void bindParams();
  void matchInputs();
  void checkInputDTypes();
  void mergeBindings(const expr::Bindings& local, const InputSpec& port);
  void checkConstraints();
  void checkWhere(bool afterLet);
  void evaluateLet();
  void evaluateIndex();
  void evaluateOutputs();
  void evaluateInputIpfs();
  void evaluateCost();
  std::string portText(const std::string& source) const;
  IndexProjection ipfFor(const IpfSpec& spec, const expr::Bindings& b, std::size_t tensorRank,
                         const std::string& what);

  const Metakernel& k_;
  const Operation& op_;
  Application a_;
  std::vector<const std::vector<TensorType>*> inputTensors_; // per template input
};

void Applier::bindParams() {
  if (!op_.params.is_null() && !op_.params.is_object()) {
    throw Error("params: expected an object of param values, got " + jsonTypeName(op_.params));
  }
  if (op_.params.is_object()) {
    for (const auto& [name, value] : op_.params.items()) {
      if (k_.findParam(name) == nullptr) {
        std::string known;
        for (const ParamSpec& p : k_.params) {
          known += (known.empty() ? "" : ", ") + p.name;
        }
        throw Error("unknown param \"" + name + "\"" +
                    (known.empty() ? " (the kernel takes no params)"
                                   : " (expected one of: " + known + ")"));
      }
    }
  }
  for (const ParamSpec& p : k_.params) {
    const Json* value = nullptr;
    if (op_.params.is_object()) {
      auto it = op_.params.find(p.name);
      if (it != op_.params.end()) {
        value = &*it;
      }
    }
    if (value == nullptr) {
      if (!p.defaultValue) {
        throw Error("param " + p.name + ": required " + paramTypeName(p.type) + " param not given");
      }
      value = &*p.defaultValue;
    } else if (std::optional<std::string> problem = checkParamValue(p.type, *value)) {
      throw Error("param " + p.name + ": " + *problem);
    }
    // A float param given as an integer (`max: 6`) is still a float: bodies
    // and backends read floats only.
    a_.params[p.name] = p.type == ParamType::Float ? Json(value->get<double>()) : *value;
    switch (p.type) {
    case ParamType::Int:
      a_.bindings.bind(p.name, expr::Value(value->get<std::int64_t>()), "params");
      break;
    case ParamType::Ints:
      a_.bindings.bind(p.name, expr::Value::ints(value->get<std::vector<std::int64_t>>()),
                       "params");
      break;
    case ParamType::Bool:
      a_.bindings.bind(p.name, expr::Value(value->get<bool>()), "params");
      break;
    case ParamType::DType:
      a_.bindings.bind(p.name, expr::Value(expr::DType{value->get<std::string>()}), "params");
      break;
    case ParamType::Float:
      break; // floats reach the backend, not the expression language
    }
  }
}

std::string Applier::portText(const std::string& source) const {
  for (std::size_t i = 0; i < k_.inputs.size(); ++i) {
    if (k_.inputs[i].name == source && i < inputTensors_.size()) {
      return source + " is " + shapesText(*inputTensors_[i], k_.inputs[i].list);
    }
  }
  return {};
}

void Applier::mergeBindings(const expr::Bindings& local, const InputSpec& port) {
  for (const auto& [name, binding] : local.all()) {
    const expr::Binding* old = a_.bindings.find(name);
    if (old == nullptr) {
      a_.bindings.set(name, binding.value, port.name);
      continue;
    }
    if (old->value == binding.value) {
      continue;
    }
    std::string oldPort = portText(old->source);
    std::string newPort = portText(port.name);
    std::string context = oldPort.empty() ? newPort : oldPort + " and " + newPort;
    Error e(context + ": $" + name + " is " + old->value.toString() + " from " + old->source +
            " but " + binding.value.toString() + " from " + port.name);
    e.addNote(noteAt(port.shapeField, 1, k_.name));
    throw e;
  }
}

void Applier::matchInputs() {
  for (const auto& [name, tensors] : op_.inputs) {
    if (k_.findInput(name) == nullptr) {
      std::string known;
      for (const InputSpec& in : k_.inputs) {
        known += (known.empty() ? "" : ", ") + in.name;
      }
      throw Error(
          "unknown input \"" + name + "\"" +
          (known.empty() ? " (the kernel takes no inputs)" : " (expected one of: " + known + ")"));
    }
  }
  for (const InputSpec& in : k_.inputs) {
    auto it = op_.inputs.find(in.name);
    if (it == op_.inputs.end() && in.optional) {
      static const std::vector<TensorType> kLeftOut;
      inputTensors_.push_back(&kLeftOut); // no tensors: nothing to match or bind
      continue;
    }
    if (it == op_.inputs.end()) {
      std::string known;
      for (const InputSpec& i : k_.inputs) {
        known += (known.empty() ? "" : ", ") + i.name + (i.optional ? " (optional)" : "");
      }
      throw Error("missing input " + in.name + " (the kernel's inputs are: " + known + ")");
    }
    const std::vector<TensorType>& tensors = it->second;
    if (!in.list && tensors.size() != 1) {
      throw Error("input " + in.name + " takes one tensor, got " + std::to_string(tensors.size()));
    }
    if (in.list && tensors.empty()) {
      throw Error("input " + in.name + " is a list input and needs at least one tensor");
    }
    inputTensors_.push_back(&tensors);
    expr::Bindings local;
    try {
      if (in.list) {
        std::vector<std::vector<std::int64_t>> shapes;
        shapes.reserve(tensors.size());
        for (const TensorType& t : tensors) {
          shapes.push_back(t.shape);
        }
        expr::matchList(in.shape, shapes, local, in.name);
      } else {
        expr::match(in.shape, tensors[0].shape, local, in.name);
      }
    } catch (const expr::ExprError& e) {
      Error out(e.message());
      out.addNote(noteAt(in.shapeField, e.column(), k_.name));
      throw out;
    } catch (Error& e) {
      e.addNote(noteAt(in.shapeField, 1, k_.name));
      throw;
    }
    mergeBindings(local, in);
  }
}

void Applier::checkInputDTypes() {
  for (std::size_t i = 0; i < k_.inputs.size(); ++i) {
    const InputSpec& in = k_.inputs[i];
    if (!in.dtype) {
      continue;
    }
    const DTypeSpec& spec = *in.dtype;
    const std::vector<TensorType>& tensors = *inputTensors_[i];
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      const std::string& actual = tensors[j].dtype;
      std::string who = in.list ? in.name + "[" + std::to_string(j) + "]" : in.name;
      switch (spec.kind) {
      case DTypeSpec::Kind::Literal:
        if (actual != spec.name) {
          failAt(spec.field, who + " has dtype " + actual + ", expected " + spec.name);
        }
        break;
      case DTypeSpec::Kind::Variable: {
        const expr::Binding* old = a_.bindings.find(spec.name);
        if (old == nullptr) {
          a_.bindings.set(spec.name, expr::Value(expr::DType{actual}), in.name);
          break;
        }
        if (old->value.isDType() && old->value.asDType().name == actual) {
          break;
        }
        std::string context = who + " has dtype " + actual;
        for (std::size_t o = 0; o < k_.inputs.size(); ++o) {
          if (k_.inputs[o].name == old->source && old->source != in.name) {
            context = old->source + " has dtype " +
                      dtypesText(*inputTensors_[o], k_.inputs[o].list) + " and " + context;
          }
        }
        failAt(spec.field, context + ": $" + spec.name + " is " + old->value.toString() + " from " +
                               old->source + " but " + actual + " from " + who);
      }
      case DTypeSpec::Kind::Expression: {
        expr::Value v = eval(*spec.expression, spec.field, a_.bindings);
        if (!v.isDType() || v.asDType().name != actual) {
          failAt(spec.field, who + " has dtype " + actual + ", expected " + v.toString());
        }
        break;
      }
      }
    }
  }
}

std::string valueText(const expr::Value& v) {
  return v.isDType() ? v.asDType().name : v.toString();
}

void Applier::checkConstraints() {
  for (const Constraint& c : k_.constraints) {
    const expr::Binding* b = a_.bindings.find(c.variable);
    if (b == nullptr) {
      throw Error("constraint on $" + c.variable + ": $" + c.variable +
                  " is not bound by any input or param (a bug in kernel " + k_.name + ")");
    }
    std::string text = valueText(b->value);
    if (std::find(c.allowed.begin(), c.allowed.end(), text) == c.allowed.end()) {
      std::string allowed;
      for (const std::string& s : c.allowed) {
        allowed += (allowed.empty() ? "" : ", ") + s;
      }
      throw Error("$" + c.variable + " is " + text + " from " + b->source +
                  ", expected one of: " + allowed);
    }
  }
}

// "$axis = 5, $shape = [2, 3]" for the variables a clause mentions.
std::string mentionedValues(const std::string& text, const expr::Bindings& b) {
  std::string out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      continue;
    }
    std::size_t end = i + 1;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      ++end;
    }
    std::string name = text.substr(i + 1, end - i - 1);
    if (const expr::Binding* v = b.find(name); v != nullptr && seen.insert(name).second) {
      out += (out.empty() ? "" : ", ") + ("$" + name) + " = " + valueText(v->value);
    }
  }
  return out;
}

void Applier::checkWhere(bool afterLet) {
  for (const WhereSpec& w : k_.where) {
    if (w.afterLet != afterLet || (!w.given.empty() && op_.inputs.count(w.given) == 0)) {
      continue; // a clause about an optional input that was left out holds
    }
    expr::Value v;
    try { // a clause with a message that cannot be evaluated on these values fails
      v = w.message.empty() ? eval(w.expression, w.field, a_.bindings)
                            : expr::evaluate(w.expression, {&a_.bindings, std::nullopt, {}});
    } catch (const expr::ExprError& e) { // (eval() rethrows as a located Error)
      failAt(w.field, w.message + " (" + e.message() + ")");
    }
    if (!v.isBool()) {
      failAt(w.field, "where clause \"" + w.field.text + "\" gives " + v.typeName() + " " +
                          v.toString() + ", expected true or false");
    }
    if (!v.asBool()) {
      std::string values = mentionedValues(w.field.text, a_.bindings);
      failAt(w.field, (w.message.empty() ? "where clause \"" + w.field.text + "\" does not hold"
                                         : w.message) +
                          (values.empty() ? "" : " (" + values + ")"));
    }
  }
}

void Applier::evaluateLet() {
  for (const LetSpec& let : k_.let) {
    expr::Value v = eval(let.expression, let.field, a_.bindings);
    inField(let.field, [&] {
      a_.bindings.bind(let.name, std::move(v), "let");
      return 0;
    });
  }
}

void Applier::evaluateIndex() {
  std::vector<std::int64_t> shape = evalInts(k_.index, k_.indexField, a_.bindings, "the index");
  for (std::int64_t d : shape) {
    if (d < 0) {
      failAt(k_.indexField, "index space " + formatInts(shape) + " has a negative extent");
    }
  }
  a_.index = ZRange::fromShape(ZPoint(shape));
  if (a_.bindings.find("index") == nullptr) {
    a_.bindings.set("index", expr::Value::ints(shape), "index");
  }
}

IndexProjection Applier::ipfFor(const IpfSpec& spec, const expr::Bindings& b,
                                std::size_t tensorRank, const std::string& what) {
  auto indexRank = static_cast<std::int64_t>(a_.index.rank());
  if (spec.isDefault && static_cast<std::int64_t>(tensorRank) != indexRank) {
    failAt(spec.field, what + " has rank " + std::to_string(tensorRank) + " but the index " +
                           a_.index.toString() + " has rank " + std::to_string(indexRank) +
                           ": the default ipf \"[@...] :> [1...]\" needs equal ranks (give an "
                           "ipf)");
  }
  IndexProjection ipf = inField(spec.field, [&] {
    return expr::evaluateIpf(spec.ipf, b, indexRank, static_cast<std::int64_t>(tensorRank));
  });
  if (ipf.outputRank() != tensorRank || ipf.inputRank() != a_.index.rank()) {
    failAt(spec.field, "ipf for " + what + " maps " + std::to_string(ipf.inputRank()) +
                           " index dims to " + std::to_string(ipf.outputRank()) +
                           " tensor dims, expected " + std::to_string(indexRank) + " to " +
                           std::to_string(tensorRank));
  }
  return ipf;
}

void Applier::evaluateOutputs() {
  for (const OutputSpec& o : k_.outputs) {
    PortResult port;
    port.name = o.name;
    port.list = o.list;
    port.combine = o.combine;
    std::int64_t count = 1;
    expr::Bindings local;
    const expr::Bindings* b = &a_.bindings;
    if (o.list) {
      count = evalInt(*o.count, o.countField, a_.bindings, "the count of output " + o.name);
      if (count < 1) {
        failAt(o.countField, "output " + o.name + " would have " + std::to_string(count) +
                                 " tensors, expected at least 1");
      }
      local = a_.bindings;
      b = &local;
    }
    for (std::int64_t j = 0; j < count; ++j) {
      if (o.list) {
        local.set("j", expr::Value(j), "output " + o.name);
      }
      std::string who = o.list ? o.name + "[" + std::to_string(j) + "]" : o.name;
      TensorType t;
      t.shape = o.shape ? evalInts(*o.shape, o.shapeField, *b, "the shape of " + who)
                        : a_.index.shape().vector();
      for (std::int64_t d : t.shape) {
        if (d < 0) {
          failAt(o.shapeField, "output " + who + " would have shape " + formatInts(t.shape) +
                                   " with a negative extent");
        }
      }
      switch (o.dtype.kind) {
      case DTypeSpec::Kind::Literal:
        t.dtype = o.dtype.name;
        break;
      case DTypeSpec::Kind::Variable: {
        const expr::Binding* v = b->find(o.dtype.name);
        if (v == nullptr || !v->value.isDType()) {
          failAt(o.dtype.field,
                 "dtype of output " + who + ": $" + o.dtype.name +
                     (v == nullptr ? " is not bound"
                                   : " is " + v->value.toString() + ", not a dtype"));
        }
        t.dtype = v->value.asDType().name;
        break;
      }
      case DTypeSpec::Kind::Expression: {
        expr::Value v = eval(*o.dtype.expression, o.dtype.field, *b);
        if (!v.isDType()) {
          failAt(o.dtype.field, "dtype of output " + who + " is " + v.typeName() + " " +
                                    v.toString() + ", expected a dtype");
        }
        t.dtype = v.asDType().name;
        break;
      }
      }
      port.ipfs.push_back(ipfFor(o.ipf, *b, t.shape.size(), "output " + who));
      port.tensors.push_back(std::move(t));
    }
    a_.outputs.push_back(std::move(port));
  }
}

void Applier::evaluateInputIpfs() {
  for (std::size_t i = 0; i < k_.inputs.size(); ++i) {
    const InputSpec& in = k_.inputs[i];
    PortResult port;
    port.name = in.name;
    port.list = in.list;
    port.packed = in.packed;
    port.absent = in.absent;
    port.tensors = *inputTensors_[i];
    expr::Bindings local;
    const expr::Bindings* b = &a_.bindings;
    if (in.list) {
      local = a_.bindings;
      b = &local;
    }
    for (std::size_t j = 0; j < port.tensors.size(); ++j) {
      if (in.list) {
        local.set("j", expr::Value(static_cast<std::int64_t>(j)), "input " + in.name);
      }
      std::string who = in.list ? in.name + "[" + std::to_string(j) + "]" : in.name;
      port.ipfs.push_back(ipfFor(in.ipf, *b, port.tensors[j].shape.size(), "input " + who));
    }
    a_.inputs.push_back(std::move(port));
  }
}

void Applier::evaluateCost() {
  std::int64_t size = a_.index.size();
  if (k_.flops) {
    a_.flopsPerPoint = evalInt(*k_.flops, k_.flopsField, a_.bindings, "flops");
    if (a_.flopsPerPoint < 0) {
      failAt(k_.flopsField, "flops per index point is " + std::to_string(a_.flopsPerPoint) +
                                ", expected at least 0");
    }
  }
  a_.flops = checkedMul(a_.flopsPerPoint, size);
  if (k_.bytes) {
    std::int64_t perPoint = evalInt(*k_.bytes, k_.bytesField, a_.bindings, "bytes");
    if (perPoint < 0) {
      failAt(k_.bytesField,
             "bytes per index point is " + std::to_string(perPoint) + ", expected at least 0");
    }
    a_.bytesPerPoint = perPoint;
    a_.bytes = checkedMul(perPoint, size);
  }
}

Application Applier::run() {
  bindParams();
  matchInputs();
  checkInputDTypes();
  checkConstraints();
  checkWhere(false);
  evaluateLet();
  checkWhere(true);
  evaluateIndex();
  evaluateOutputs();
  evaluateInputIpfs();
  // Reduction dims: index dims that no output depends on.
  a_.reductionSplittable = true;
  for (const PortResult& o : a_.outputs) {
    a_.reductionSplittable = a_.reductionSplittable && o.combine.has_value();
  }
  for (std::size_t d = 0; d < a_.index.rank(); ++d) {
    bool zero = true;
    for (const PortResult& o : a_.outputs) {
      for (const IndexProjection& ipf : o.ipfs) {
        const ZMatrix& p = ipf.map().projection();
        for (std::size_t r = 0; r < p.rows() && zero; ++r) {
          zero = p(r, d) == 0;
        }
      }
    }
    if (zero) {
      a_.reductionDims.push_back(d);
    }
  }
  evaluateCost();
  a_.externKernel = k_.externKernel;
  if (k_.body) {
    a_.body = k_.body;
    checkShardBodies(a_, k_.name);
  }
  return std::move(a_);
}

} // namespace

Json valueToJson(const expr::Value& v) {
  if (v.isInt()) {
    return v.asInt();
  }
  if (v.isBool()) {
    return v.asBool();
  }
  if (v.isDType()) {
    return v.asDType().name;
  }
  if (v.isList()) {
    Json out = Json::array();
    for (const expr::Value& e : v.asList()) {
      out.push_back(valueToJson(e));
    }
    return out;
  }
  return v.toString();
}

Diagnostic templateNote(const FieldInfo& f, int exprColumn, const std::string& kernel) {
  return noteAt(f, exprColumn, kernel);
}

namespace {

// The two parts of a fused operation (the fused application succeeded, so
// the parts' checks are the fused template's own and hold).
std::shared_ptr<const FusedParts> fusedParts(const FusedSpec& spec, const Operation& op,
                                             const Application& fused) {
  auto parts = std::make_shared<FusedParts>();
  const Metakernel& p = *spec.producer;
  const Metakernel& c = *spec.consumer;
  parts->producerKernel = p.name;
  parts->consumerKernel = c.name;
  Operation po;
  po.name = op.name;
  for (const InputSpec& in : p.inputs) {
    if (auto it = op.inputs.find(in.name); it != op.inputs.end()) {
      po.inputs[in.name] = it->second;
    }
  }
  for (const ParamSpec& param : p.params) {
    if (auto it = fused.params.find(param.name); it != fused.params.end()) {
      po.params[param.name] = *it;
    }
  }
  parts->producer = std::make_shared<const Application>(apply(p, po));
  parts->producerInputs = p.inputs.size();
  Operation co;
  co.name = op.name;
  for (const InputSpec& in : c.inputs) {
    if (in.name == spec.port) {
      co.inputs[in.name] = parts->producer->outputs.at(0).tensors;
      parts->consumerInputs.push_back(-1);
      continue;
    }
    const std::string name = spec.prefix + in.name;
    int at = -1;
    for (std::size_t i = 0; i < fused.inputs.size(); ++i) {
      if (fused.inputs[i].name == name) {
        at = static_cast<int>(i);
      }
    }
    if (at < 0) {
      throw InternalError("fuse: " + name + " is not an input of the fused template");
    }
    parts->consumerInputs.push_back(at);
    if (auto it = op.inputs.find(name); it != op.inputs.end()) {
      co.inputs[in.name] = it->second;
    }
  }
  for (const ParamSpec& param : c.params) {
    if (auto it = fused.params.find(spec.prefix + param.name); it != fused.params.end()) {
      co.params[param.name] = *it;
    }
  }
  parts->consumer = std::make_shared<const Application>(apply(c, co));
  return parts;
}

} // namespace

Application apply(const Metakernel& kernel, const Operation& op) {
  try {
    Application app = Applier(kernel, op).run();
    if (kernel.fused) {
      app.fused = fusedParts(*kernel.fused, op, app);
    }
    return app;
  } catch (Error& e) {
    if (e.exitCode() == ExitCode::InvalidInput) {
      e.prefix(op.name.empty() || op.name == kernel.name ? kernel.name + ": "
                                                         : op.name + " (" + kernel.name + "): ");
    }
    throw;
  }
}

Json toJson(const Application& app) {
  Json out = Json::object();
  out["index"] = toJson(app.index);
  Json bindings = Json::object();
  for (const auto& [name, b] : app.bindings.all()) {
    bindings[name] = valueToJson(b.value);
  }
  out["bindings"] = bindings;
  Json ipf = Json::object();
  for (const char* side : {"inputs", "outputs"}) {
    const std::vector<PortResult>& ports =
        std::string_view(side) == "inputs" ? app.inputs : app.outputs;
    Json s = Json::object();
    for (const PortResult& p : ports) {
      if (p.tensors.empty()) {
        continue; // an optional input left out has no IPFs
      }
      Json list = Json::array();
      for (const IndexProjection& i : p.ipfs) {
        list.push_back(toJson(i));
      }
      s[p.name] = list;
    }
    ipf[side] = s;
  }
  out["ipf"] = ipf;
  Json combine = Json::object();
  for (const PortResult& p : app.outputs) {
    combine[p.name] = p.combine ? Json(combineName(*p.combine)) : Json(nullptr);
  }
  out["combine"] = combine;
  out["reduction_dims"] = app.reductionDims;
  out["reduction_splittable"] = app.reductionSplittable;
  out["flops"] = app.flops;
  if (app.bytes) {
    out["bytes"] = *app.bytes;
  }
  return out;
}

} // namespace tapestry::metakernel
