#include "core/graph/json_layout.hpp"

#include <charconv>
#include <cstdio>

#include "core/diag/error.hpp"

namespace tapestry::graph::detail {

namespace {

template <class Int> void appendNumber(Int value, std::string& out) {
  char digits[24];
  auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

// A scalar's text as Json::dump() writes it, without a serializer per value.
void appendScalar(const Json& value, std::string& out) {
  switch (value.type()) {
  case Json::value_t::null:
    out += "null";
    return;
  case Json::value_t::boolean:
    out += value.get<bool>() ? "true" : "false";
    return;
  case Json::value_t::number_integer:
    appendNumber(value.get<std::int64_t>(), out);
    return;
  case Json::value_t::number_unsigned:
    appendNumber(value.get<std::uint64_t>(), out);
    return;
  case Json::value_t::string:
    appendJsonString(value.get_ref<const std::string&>(), out);
    return;
  default:
    out += value.dump(); // floats: nlohmann's shortest round-trip form
    return;
  }
}

bool isScalarArray(const Json& value) {
  for (const Json& element : value) {
    if (element.is_structured()) {
      return false;
    }
  }
  return true;
}

} // namespace

void appendJsonString(std::string_view text, std::string& out) {
  out += '"';
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

JsonLayout& JsonLayout::key(std::string_view name) {
  checkInvariant(!open_.empty() && items_[open_.back()].object,
                 "JsonLayout::key outside an object");
  if (items_[open_.back()].children > 0) {
    text_ += ", ";
  }
  pendingKey_ = text_.size();
  appendJsonString(name, text_);
  text_ += ": ";
  keyed_ = true;
  return *this;
}

std::size_t JsonLayout::beginValue() {
  if (open_.empty()) {
    checkInvariant(items_.empty(), "JsonLayout: a second top-level value");
    return text_.size();
  }
  Item& parent = items_[open_.back()];
  std::size_t keyStart = text_.size();
  if (parent.object) {
    checkInvariant(keyed_, "JsonLayout: an object member without a key");
    keyed_ = false;
    keyStart = pendingKey_;
  } else if (parent.children > 0) {
    text_ += ", ";
    keyStart = text_.size();
  }
  ++parent.children;
  return keyStart;
}

void JsonLayout::atomDone(std::size_t keyStart, std::size_t start) {
  Item item;
  item.keyStart = keyStart;
  item.start = start;
  item.end = text_.size();
  items_.push_back(item);
}

JsonLayout& JsonLayout::beginObject() {
  std::size_t keyStart = beginValue();
  Item item;
  item.keyStart = keyStart;
  item.start = text_.size();
  item.container = true;
  item.object = true;
  text_ += '{';
  open_.push_back(items_.size());
  items_.push_back(item);
  return *this;
}

JsonLayout& JsonLayout::beginArray() {
  std::size_t keyStart = beginValue();
  Item item;
  item.keyStart = keyStart;
  item.start = text_.size();
  item.container = true;
  text_ += '[';
  open_.push_back(items_.size());
  items_.push_back(item);
  return *this;
}

JsonLayout& JsonLayout::end() {
  checkInvariant(!open_.empty(), "JsonLayout::end without an open container");
  std::size_t index = open_.back();
  open_.pop_back();
  Item& item = items_[index];
  text_ += item.object ? '}' : ']';
  item.end = text_.size();
  item.subtree = items_.size() - index;
  return *this;
}

JsonLayout& JsonLayout::null() {
  return atomWith([](std::string& out) { out += "null"; });
}

JsonLayout& JsonLayout::boolean(bool value) {
  return atomWith([value](std::string& out) { out += value ? "true" : "false"; });
}

JsonLayout& JsonLayout::integer(std::int64_t value) {
  return atomWith([value](std::string& out) { appendNumber(value, out); });
}

JsonLayout& JsonLayout::string(std::string_view value) {
  return atomWith([value](std::string& out) { appendJsonString(value, out); });
}

JsonLayout& JsonLayout::integers(std::span<const std::int64_t> values) {
  return atomWith([values](std::string& out) {
    out += '[';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i > 0) {
        out += ", ";
      }
      appendNumber(values[i], out);
    }
    out += ']';
  });
}

JsonLayout& JsonLayout::json(const Json& value) {
  if (value.is_object()) {
    beginObject();
    for (const auto& [name, member] : value.items()) {
      key(name);
      json(member);
    }
    return end();
  }
  if (value.is_array() && !isScalarArray(value)) {
    beginArray();
    for (const Json& element : value) {
      json(element);
    }
    return end();
  }
  return atomWith([&value](std::string& out) {
    if (!value.is_array()) {
      appendScalar(value, out);
      return;
    }
    out += '[';
    bool first = true;
    for (const Json& element : value) {
      out += first ? "" : ", ";
      first = false;
      appendScalar(element, out);
    }
    out += ']';
  });
}

void JsonLayout::clear() {
  text_.clear();
  items_.clear();
  open_.clear();
  keyed_ = false;
}

std::string JsonLayout::print(std::size_t width) const {
  std::string out;
  out.reserve(text_.size() + text_.size() / 2);
  printTo(out, width, 0, 0);
  out += '\n';
  return out;
}

void JsonLayout::printTo(std::string& out, std::size_t width, std::size_t indent,
                         std::size_t column) const {
  checkInvariant(open_.empty(), "JsonLayout::print with an open container");
  if (!items_.empty()) {
    print(0, indent, column, width, out);
  }
}

void JsonLayout::print(std::size_t index, std::size_t indent, std::size_t column, std::size_t width,
                       std::string& out) const {
  const Item& item = items_[index];
  std::size_t length = item.end - item.start;
  std::size_t room = width > column + 1 ? width - column - 1 : 0; // 1: a trailing comma
  if (!item.container || item.children == 0 || length <= room) {
    out.append(text_, item.start, length);
    return;
  }
  out += item.object ? "{\n" : "[\n";
  std::size_t inner = indent + 2;
  std::size_t child = index + 1;
  for (std::uint32_t i = 0; i < item.children; ++i) {
    if (i > 0) {
      out += ",\n";
    }
    out.append(inner, ' ');
    const Item& member = items_[child];
    std::size_t keyLength = member.start - member.keyStart; // `"key": ` in objects, else 0
    out.append(text_, member.keyStart, keyLength);
    print(child, inner, inner + keyLength, width, out);
    child += member.subtree;
  }
  out += '\n';
  out.append(indent, ' ');
  out += item.object ? '}' : ']';
}

// ---------------------------------------------------------------- expanded fields

namespace {

bool isScalarList(const expr::Value& value) {
  for (const expr::Value& element : value.asList()) {
    if (element.isList()) {
      return false;
    }
  }
  return true;
}

void appendScalarValue(const expr::Value& v, std::string& out) {
  if (v.isInt()) {
    appendNumber(v.asInt(), out);
  } else if (v.isBool()) {
    out += v.asBool() ? "true" : "false";
  } else if (v.isDType()) {
    appendJsonString(v.asDType().name, out);
  } else {
    appendJsonString(v.toString(), out);
  }
}

// metakernel's valueToJson: ints, bools, dtype names, lists; anything else as text.
void bindingValue(JsonLayout& out, const expr::Value& v) {
  if (v.isList() && !isScalarList(v)) {
    out.beginArray();
    for (const expr::Value& element : v.asList()) {
      bindingValue(out, element);
    }
    out.end();
    return;
  }
  out.atomWith([&v](std::string& text) {
    if (!v.isList()) {
      appendScalarValue(v, text);
      return;
    }
    text += '[';
    bool first = true;
    for (const expr::Value& element : v.asList()) {
      text += first ? "" : ", ";
      first = false;
      appendScalarValue(element, text);
    }
    text += ']';
  });
}

// zspace's toJson(IndexProjection), Loom's form.
void indexProjection(JsonLayout& out, const IndexProjection& ipf) {
  const ZAffineMap& map = ipf.map();
  const ZMatrix& projection = map.projection();
  out.beginObject().key("affineMap").beginObject().key("projection");
  if (projection.rows() == 0) {
    out.integers({});
  } else {
    out.beginArray();
    for (std::size_t r = 0; r < projection.rows(); ++r) {
      out.integers(projection.row(r));
    }
    out.end();
  }
  out.key("offset").integers(map.offset().coords());
  if (map.outputRank() == 0 && map.inputRank() != 0) {
    out.key("inputRank").integer(static_cast<std::int64_t>(map.inputRank()));
  }
  out.end().key("shape").integers(ipf.shape().coords()).end();
}

} // namespace

std::vector<std::string_view> expandedFieldNames(const metakernel::Application& app) {
  std::vector<std::string_view> names = {
      "index", "bindings", "ipf", "combine", "reduction_dims", "reduction_splittable", "flops"};
  if (app.bytes) {
    names.push_back("bytes");
  }
  return names;
}

void expandedFields(JsonLayout& out, const metakernel::Application& app, std::string_view only) {
  auto wanted = [only](std::string_view name) { return only.empty() || only == name; };
  if (wanted("index")) {
    out.key("index").beginObject();
    out.key("start").integers(app.index.start().coords());
    out.key("end").integers(app.index.end().coords());
    out.end();
  }
  if (wanted("bindings")) {
    out.key("bindings").beginObject();
    for (const auto& [name, binding] : app.bindings.all()) {
      out.key(name);
      bindingValue(out, binding.value);
    }
    out.end();
  }
  if (wanted("ipf")) {
    out.key("ipf").beginObject();
    for (const auto* side : {&app.inputs, &app.outputs}) {
      out.key(side == &app.inputs ? "inputs" : "outputs").beginObject();
      for (const metakernel::PortResult& port : *side) {
        out.key(port.name).beginArray();
        for (const IndexProjection& ipf : port.ipfs) {
          indexProjection(out, ipf);
        }
        out.end();
      }
      out.end();
    }
    out.end();
  }
  if (wanted("combine")) {
    out.key("combine").beginObject();
    for (const metakernel::PortResult& port : app.outputs) {
      out.key(port.name);
      if (port.combine) {
        out.string(metakernel::combineName(*port.combine));
      } else {
        out.null();
      }
    }
    out.end();
  }
  if (wanted("reduction_dims")) {
    out.key("reduction_dims").atomWith([&app](std::string& text) {
      text += '[';
      for (std::size_t i = 0; i < app.reductionDims.size(); ++i) {
        text += i > 0 ? ", " : "";
        appendNumber(app.reductionDims[i], text);
      }
      text += ']';
    });
  }
  if (wanted("reduction_splittable")) {
    out.key("reduction_splittable").boolean(app.reductionSplittable);
  }
  if (wanted("flops")) {
    out.key("flops").integer(app.flops);
  }
  if (app.bytes && wanted("bytes")) {
    out.key("bytes").integer(*app.bytes);
  }
}

} // namespace tapestry::graph::detail
