#include "core/json/layout.hpp"

#include <charconv>
#include <cstdio>

#include "core/diag/error.hpp"

namespace tapestry::json {

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
  return beginContainer(true);
}

JsonLayout& JsonLayout::beginArray() {
  return beginContainer(false);
}

JsonLayout& JsonLayout::beginContainer(bool object) {
  std::size_t keyStart = beginValue();
  Item item;
  item.keyStart = keyStart;
  item.start = text_.size();
  item.container = true;
  item.object = object;
  text_ += object ? '{' : '[';
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

void appendMember(Json& object, std::string key, Json value) {
  using ObjectStorage = Json::object_t::Container;
  static_cast<ObjectStorage&>(object.get_ref<Json::object_t&>())
      .emplace_back(std::move(key), std::move(value));
}

void appendInteger(std::int64_t value, std::string& out) {
  appendNumber(value, out);
}

std::string format(const Json& value, std::size_t width) {
  JsonLayout layout;
  layout.json(value);
  return layout.print(width);
}

} // namespace tapestry::json
