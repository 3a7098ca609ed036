// Constant tensors of an ONNX model: decoding TensorProto (raw_data or the
// typed fields) into little-endian bytes, and values for folding.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/diag/error.hpp"
#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import::detail {

using ::onnx::TensorProto;

namespace {

template <class T> void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

template <class T> T get(const std::string& bytes, std::size_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

std::int64_t saturate(double v) {
  if (std::isnan(v)) {
    return 0;
  }
  if (v >= 9.2233720368547758e18) {
    return std::numeric_limits<std::int64_t>::max();
  }
  if (v <= -9.2233720368547758e18) {
    return std::numeric_limits<std::int64_t>::min();
  }
  return static_cast<std::int64_t>(v);
}

} // namespace

std::string dtypeName(int type) {
  switch (type) {
  case TensorProto::FLOAT:
    return "float32";
  case TensorProto::DOUBLE:
    return "float64";
  case TensorProto::FLOAT16:
    return "float16";
  case TensorProto::BFLOAT16:
    return "bfloat16";
  case TensorProto::INT8:
    return "int8";
  case TensorProto::INT16:
    return "int16";
  case TensorProto::INT32:
    return "int32";
  case TensorProto::INT64:
    return "int64";
  case TensorProto::UINT8:
    return "uint8";
  case TensorProto::UINT16:
    return "uint16";
  case TensorProto::UINT32:
    return "uint32";
  case TensorProto::UINT64:
    return "uint64";
  case TensorProto::BOOL:
    return "bool";
  case TensorProto::COMPLEX64:
    return "complex64";
  case TensorProto::COMPLEX128:
    return "complex128";
  default:
    return "";
  }
}

std::size_t elementSize(int type) {
  switch (type) {
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
  case TensorProto::COMPLEX64:
    return 8;
  case TensorProto::COMPLEX128:
    return 16;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
  case TensorProto::UINT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

bool isFoldable(int type) {
  return !dtypeName(type).empty() && type != TensorProto::FLOAT16 &&
         type != TensorProto::BFLOAT16 && type != TensorProto::COMPLEX64 &&
         type != TensorProto::COMPLEX128;
}

std::int64_t Constant::count() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    n *= d;
  }
  return n;
}

std::vector<double> Constant::values() const {
  const std::size_t n = static_cast<std::size_t>(count());
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (type) {
    case TensorProto::FLOAT:
      out[i] = get<float>(bytes, i);
      break;
    case TensorProto::DOUBLE:
      out[i] = get<double>(bytes, i);
      break;
    case TensorProto::INT8:
      out[i] = get<std::int8_t>(bytes, i);
      break;
    case TensorProto::INT16:
      out[i] = get<std::int16_t>(bytes, i);
      break;
    case TensorProto::INT32:
      out[i] = get<std::int32_t>(bytes, i);
      break;
    case TensorProto::INT64:
      out[i] = static_cast<double>(get<std::int64_t>(bytes, i));
      break;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      out[i] = get<std::uint8_t>(bytes, i);
      break;
    case TensorProto::UINT16:
      out[i] = get<std::uint16_t>(bytes, i);
      break;
    case TensorProto::UINT32:
      out[i] = get<std::uint32_t>(bytes, i);
      break;
    case TensorProto::UINT64:
      out[i] = static_cast<double>(get<std::uint64_t>(bytes, i));
      break;
    default:
      throw InternalError("values() of an unfoldable constant");
    }
  }
  return out;
}

std::vector<std::int64_t> Constant::ints() const {
  if (type == TensorProto::INT64) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(count()));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = get<std::int64_t>(bytes, i);
    }
    return out;
  }
  std::vector<std::int64_t> out;
  for (double v : values()) {
    out.push_back(saturate(v));
  }
  return out;
}

Constant makeConstant(int type, std::vector<std::int64_t> shape,
                      const std::vector<double>& values) {
  Constant c;
  c.type = type;
  c.shape = std::move(shape);
  for (double v : values) {
    switch (type) {
    case TensorProto::FLOAT:
      put(c.bytes, static_cast<float>(v));
      break;
    case TensorProto::DOUBLE:
      put(c.bytes, v);
      break;
    case TensorProto::INT8:
      put(c.bytes, static_cast<std::int8_t>(saturate(v)));
      break;
    case TensorProto::INT16:
      put(c.bytes, static_cast<std::int16_t>(saturate(v)));
      break;
    case TensorProto::INT32:
      put(c.bytes, static_cast<std::int32_t>(saturate(v)));
      break;
    case TensorProto::INT64:
      put(c.bytes, saturate(v));
      break;
    case TensorProto::UINT8:
      put(c.bytes, static_cast<std::uint8_t>(saturate(v)));
      break;
    case TensorProto::BOOL:
      put(c.bytes, static_cast<std::uint8_t>(v != 0.0));
      break;
    case TensorProto::UINT16:
      put(c.bytes, static_cast<std::uint16_t>(saturate(v)));
      break;
    case TensorProto::UINT32:
      put(c.bytes, static_cast<std::uint32_t>(saturate(v)));
      break;
    case TensorProto::UINT64:
      put(c.bytes, static_cast<std::uint64_t>(saturate(v)));
      break;
    default:
      throw InternalError("makeConstant of an unfoldable type");
    }
  }
  return c;
}

Constant makeInts(std::vector<std::int64_t> shape, const std::vector<std::int64_t>& values) {
  Constant c;
  c.type = TensorProto::INT64;
  c.shape = std::move(shape);
  for (std::int64_t v : values) {
    put(c.bytes, v);
  }
  return c;
}

Constant decodeTensor(const TensorProto& t, const std::string& where) {
  Constant c;
  c.type = t.data_type();
  if (dtypeName(c.type).empty()) {
    throw Error(where + ": tensor " + t.name() + " has element type " + std::to_string(c.type) +
                ", which tapestry has no dtype for");
  }
  std::int64_t n = 1;
  for (std::int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<std::int64_t>::max() / 16 / d)) {
      throw Error(where + ": tensor " + t.name() + " has a bad shape");
    }
    n *= d;
    c.shape.push_back(d);
  }
  const std::size_t size = elementSize(c.type);
  if (t.data_location() == TensorProto::EXTERNAL) {
    c.present = false;
    return c;
  }
  const std::size_t expected = static_cast<std::size_t>(n) * size;
  if (t.has_raw_data()) {
    c.bytes = t.raw_data();
  } else {
    switch (c.type) {
    case TensorProto::FLOAT:
      for (float v : t.float_data())
        put(c.bytes, v);
      break;
    case TensorProto::DOUBLE:
      for (double v : t.double_data())
        put(c.bytes, v);
      break;
    case TensorProto::INT64:
      for (std::int64_t v : t.int64_data())
        put(c.bytes, v);
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      for (std::uint64_t v : t.uint64_data()) {
        c.type == TensorProto::UINT32 ? put(c.bytes, static_cast<std::uint32_t>(v))
                                      : put(c.bytes, v);
      }
      break;
    case TensorProto::COMPLEX64:
      for (float v : t.float_data())
        put(c.bytes, v);
      break;
    case TensorProto::COMPLEX128:
      for (double v : t.double_data())
        put(c.bytes, v);
      break;
    default: // int32_data holds the narrow types, float16 and bfloat16 as bit patterns
      for (std::int32_t v : t.int32_data()) {
        if (size == 4) {
          put(c.bytes, v);
        } else if (size == 2) {
          put(c.bytes, static_cast<std::uint16_t>(v));
        } else {
          put(c.bytes, static_cast<std::uint8_t>(v));
        }
      }
    }
  }
  if (c.bytes.size() != expected) {
    throw Error(where + ": tensor " + t.name() + " holds " + std::to_string(c.bytes.size()) +
                " bytes of data, but its shape and element type need " + std::to_string(expected));
  }
  return c;
}

TensorProto encodeTensor(const Constant& c, const std::string& name) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(c.type);
  for (std::int64_t d : c.shape) {
    t.add_dims(d);
  }
  t.set_raw_data(c.bytes);
  return t;
}

const ::onnx::AttributeProto* findAttribute(const ::onnx::NodeProto& node,
                                            const std::string& name) {
  for (const ::onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) {
      return &a;
    }
  }
  return nullptr;
}

std::int64_t intAttribute(const ::onnx::NodeProto& node, const std::string& name,
                          std::int64_t fallback) {
  const ::onnx::AttributeProto* a = findAttribute(node, name);
  return a != nullptr ? a->i() : fallback;
}

float floatAttribute(const ::onnx::NodeProto& node, const std::string& name, float fallback) {
  const ::onnx::AttributeProto* a = findAttribute(node, name);
  return a != nullptr ? a->f() : fallback;
}

std::vector<std::int64_t> intsAttribute(const ::onnx::NodeProto& node, const std::string& name) {
  const ::onnx::AttributeProto* a = findAttribute(node, name);
  if (a == nullptr) {
    return {};
  }
  return {a->ints().begin(), a->ints().end()};
}

std::string stringAttribute(const ::onnx::NodeProto& node, const std::string& name,
                            const std::string& fallback) {
  const ::onnx::AttributeProto* a = findAttribute(node, name);
  return a != nullptr ? a->s() : fallback;
}

std::int64_t normalizeAxis(std::int64_t a, std::int64_t rank, const std::string& what) {
  if (a < -rank || a >= rank) {
    throw Error(what + ": axis " + std::to_string(a) + " is out of range for rank " +
                std::to_string(rank));
  }
  return a < 0 ? a + rank : a;
}

} // namespace tapestry::onnx_import::detail
