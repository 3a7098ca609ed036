// The emission state of an import: names, aliases, constants read, operations.
#include <cmath>

#include "core/diag/error.hpp"
#include "core/graph/graph.hpp"
#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import::detail {

std::string printable(const std::string& text) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : printable(name)) {
    if (c == '"') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

void checkName(const std::string& file, const std::string& what, const std::string& name) {
  if (!graph::isValidName(name)) {
    throw Error(SourceLocation{file, 0, 0, {}},
                what + " name " + quoted(name) +
                    " is not a valid tapestry name (names are 1 to 256 printable ASCII "
                    "characters other than space, '\"' and '\\')");
  }
}

Emitter::Emitter(std::string file, const std::map<std::string, TensorType>& types,
                 const std::map<std::string, Constant>& constants)
    : file_(std::move(file)), types_(types), constants_(constants) {
  for (const auto& [name, type] : types_) {
    names_.insert(name);
  }
}

std::string Emitter::resolve(const std::string& name) const {
  std::string n = name;
  for (auto it = aliases_.find(n); it != aliases_.end(); it = aliases_.find(n)) {
    n = it->second;
  }
  return n;
}

std::string Emitter::use(const std::string& name) {
  const std::string n = resolve(name);
  if (constants_.count(n) != 0 && usedSet_.insert(n).second) {
    checkName(file_, "constant", n);
    used_.push_back(n);
  }
  return n;
}

const Constant* Emitter::constant(const std::string& name) const {
  auto it = constants_.find(resolve(name));
  return it == constants_.end() ? nullptr : &it->second;
}

std::optional<std::vector<std::int64_t>> Emitter::knownShape(const std::string& name) const {
  const std::string n = resolve(name);
  if (auto c = constants_.find(n); c != constants_.end()) {
    return c->second.shape;
  }
  auto it = types_.find(n);
  return it == types_.end() ? std::nullopt : it->second.shape;
}

std::vector<std::int64_t> Emitter::shapeOf(const ::onnx::NodeProto& node,
                                           const std::string& name) const {
  std::optional<std::vector<std::int64_t>> s = knownShape(name);
  if (!s) {
    fail(node, "the shape of tensor " + name +
                   " is not known after shape inference (bind symbolic dims with --dim)");
  }
  return *s;
}

int Emitter::typeOf(const std::string& name) const {
  const std::string n = resolve(name);
  if (auto c = constants_.find(n); c != constants_.end()) {
    return c->second.type;
  }
  auto it = types_.find(n);
  return it == types_.end() ? 0 : it->second.type;
}

void Emitter::alias(const std::string& name, const std::string& target) {
  aliases_[name] = resolve(target);
}

namespace {

// `base`, or base_2, base_3, ... : the first not in `taken`, which it joins.
std::string fresh(std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int i = 2; taken.count(name) != 0; ++i) {
    name = base + "_" + std::to_string(i);
  }
  taken.insert(name);
  return name;
}

} // namespace

std::string Emitter::freshOpName(const std::string& base) {
  return fresh(opNames_, base);
}

std::string Emitter::opName(const ::onnx::NodeProto& node, const std::string& suffix) {
  return fresh(opNames_, suffix.empty() ? node.name() : node.name() + "/" + suffix);
}

std::string Emitter::tempName(const ::onnx::NodeProto& node, const std::string& what) {
  return fresh(names_, node.name() + "/" + what);
}

std::string Emitter::addConstant(const std::string& name, Constant c) {
  std::string n = name;
  for (int i = 2; names_.count(n) != 0 || constants_.count(n) != 0; ++i) {
    n = name + "_" + std::to_string(i);
  }
  names_.insert(n);
  constants_[n] = std::move(c);
  return use(n);
}

void Emitter::emit(const std::string& name, const std::string& kernel, Json params, Json inputs,
                   Json outputs) {
  checkName(file_, "operation", name);
  for (const Json* ports : {&inputs, &outputs}) {
    for (const auto& [port, tensors] : ports->items()) {
      for (const Json& t : tensors.is_array() ? tensors : Json::array({tensors})) {
        checkName(file_, "tensor", t.get<std::string>());
      }
    }
  }
  for (const auto& [param, value] : params.items()) {
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      throw Error(SourceLocation{file_, 0, 0, {}},
                  "operation " + name + ": param " + param + " is not a finite number");
    }
  }
  Json op = Json::object();
  op["name"] = name;
  op["kernel"] = kernel;
  if (!params.empty()) {
    op["params"] = std::move(params);
  }
  op["inputs"] = std::move(inputs);
  op["outputs"] = std::move(outputs);
  operations_.push_back(std::move(op));
}

void Emitter::fail(const ::onnx::NodeProto& node, const std::string& message) const {
  throw Error(SourceLocation{file_, 0, 0, {}},
              "node " + node.name() + " (" + node.op_type() + "): " + message);
}

} // namespace tapestry::onnx_import::detail
