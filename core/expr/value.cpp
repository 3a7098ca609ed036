// Values of the template language and the bindings that name them.
#include <string>

#include "core/expr/ast.hpp"
#include "core/expr/expr.hpp"

namespace tapestry::expr {

Value Value::ints(const std::vector<std::int64_t>& xs) {
  List l;
  l.reserve(xs.size());
  for (std::int64_t x : xs) {
    l.emplace_back(x);
  }
  return Value(std::move(l));
}

std::vector<std::int64_t> Value::toInts(const std::string& what) const {
  if (!isList()) {
    throw Error(what + " must be a list of ints, got " + typeName() + " " + toString());
  }
  std::vector<std::int64_t> out;
  out.reserve(asList().size());
  for (const Value& v : asList()) {
    if (!v.isInt()) {
      throw Error(what + " must be a list of ints, got " + toString());
    }
    out.push_back(v.asInt());
  }
  return out;
}

const char* Value::typeName() const {
  switch (v_.index()) {
  case 0:
    return "int";
  case 1:
    return "bool";
  case 2:
    return "dtype";
  case 3:
    return "list";
  default:
    return "affine";
  }
}

namespace {

std::string affineToString(const Affine& a) {
  std::string out;
  for (std::size_t k = 0; k < a.coeffs.size(); ++k) {
    std::int64_t c = a.coeffs[k];
    if (c == 0) {
      continue;
    }
    // Print the magnitude as unsigned so INT64_MIN needs no negation.
    std::uint64_t mag = c < 0 ? 0 - static_cast<std::uint64_t>(c) : static_cast<std::uint64_t>(c);
    if (out.empty()) {
      out += c < 0 ? "-" : "";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    if (mag != 1) {
      out += std::to_string(mag) + "*";
    }
    out += "@[" + std::to_string(k) + "]";
  }
  if (out.empty()) {
    return std::to_string(a.constant);
  }
  if (a.constant != 0) {
    std::uint64_t mag = a.constant < 0 ? 0 - static_cast<std::uint64_t>(a.constant)
                                       : static_cast<std::uint64_t>(a.constant);
    out += (a.constant < 0 ? " - " : " + ") + std::to_string(mag);
  }
  return out;
}

} // namespace

std::string Value::toString() const {
  if (isInt()) {
    return std::to_string(asInt());
  }
  if (isBool()) {
    return asBool() ? "true" : "false";
  }
  if (isDType()) {
    return asDType().name;
  }
  if (isAffine()) {
    return affineToString(asAffine());
  }
  std::string out = "[";
  bool first = true;
  for (const Value& v : asList()) {
    if (!first) {
      out += ", ";
    }
    first = false;
    out += v.toString();
  }
  return out + "]";
}

const Binding* Bindings::find(std::string_view name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : &it->second;
}

void Bindings::bind(const std::string& name, Value value, const std::string& source) {
  auto it = vars_.find(name);
  if (it == vars_.end()) {
    vars_.emplace(name, Binding{std::move(value), source});
    return;
  }
  if (it->second.value == value) {
    return;
  }
  throw Error("$" + name + " is " + it->second.value.toString() + " from " + it->second.source +
              " but " + value.toString() + " from " + source);
}

void Bindings::set(const std::string& name, Value value, const std::string& source) {
  vars_.insert_or_assign(name, Binding{std::move(value), source});
}

const char* functionName(Function f) {
  switch (f) {
  case Function::Len:
    return "len";
  case Function::Sum:
    return "sum";
  case Function::Prod:
    return "prod";
  case Function::Min:
    return "min";
  case Function::Max:
    return "max";
  case Function::Ones:
    return "ones";
  case Function::Zeros:
    return "zeros";
  case Function::Range:
    return "range";
  case Function::CeilDiv:
    return "ceil_div";
  case Function::If:
    return "if";
  case Function::Broadcast:
    return "broadcast";
  case Function::BroadcastRows:
    return "broadcast_rows";
  case Function::Refine:
    return "refine";
  case Function::RefineRows:
    return "refine_rows";
  case Function::AllEqual:
    return "all_equal";
  }
  return "?";
}

const char* binaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Pow:
    return "**";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  }
  return "?";
}

} // namespace tapestry::expr
