#include "core/json/json.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/diag/utf8.hpp"
#include "core/json/json_internal.hpp"

namespace tapestry::json {

namespace detail {

std::string jsonQuoted(std::string_view text) {
  return Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace detail

namespace {

using detail::jsonQuoted;

constexpr std::size_t kMaxShown = 40; // longest rendering of a value inside a message

void appendEscapedToken(std::string& out, std::string_view token) {
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
}

void appendIndexToken(std::string& out, std::size_t index) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, index);
  out.append(buffer, result.ptr);
}

std::string typeNameOf(const Json& json) {
  switch (json.type()) {
  case Json::value_t::object:
    return "object";
  case Json::value_t::array:
    return "array";
  case Json::value_t::string:
    return "string";
  case Json::value_t::boolean:
    return "boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "integer";
  case Json::value_t::number_float:
    return "number";
  case Json::value_t::null:
    return "null";
  case Json::value_t::binary:
    return "binary";
  case Json::value_t::discarded:
    break;
  }
  return "discarded";
}

// "array", "null", "string \"x\"", "integer 3": what a value is, for "got ..." in messages.
std::string describe(const Json& json) {
  if (json.is_object() || json.is_array() || json.is_null()) {
    return typeNameOf(json);
  }
  return typeNameOf(json) + " " + brief(json);
}

} // namespace

// ---------------------------------------------------------------------------
// Document

Document Document::parse(SourceFile source, const ParseOptions& options) {
  auto impl = std::make_shared<Impl>(std::move(source));
  impl->root = detail::parseText(impl->source, options, impl->positions);
  Document document;
  document.impl_ = std::move(impl);
  return document;
}

const Json& Document::root() const {
  return impl_->root;
}

const SourceFile& Document::source() const {
  return impl_->source;
}

SourceLocation Document::locate(const std::string& pointer) const {
  SourceLocation location = impl_->source.locationOf(impl_->positions.find(pointer));
  location.pointer = pointer;
  return location;
}

std::string Document::numberText(const std::string& pointer) const {
  const std::string& text = impl_->source.text();
  const std::size_t start = std::min(impl_->positions.find(pointer), text.size());
  std::size_t end = start;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) != 0 ||
          std::string_view("+-.eE").find(text[end]) != std::string_view::npos)) {
    ++end;
  }
  return text.substr(start, end - start);
}

Error Document::errorAt(const std::string& pointer, const std::string& message,
                        ExitCode code) const {
  Diagnostic diagnostic;
  diagnostic.location = locate(pointer);
  diagnostic.message = pointer.empty() ? message : "at " + pointer + ": " + message;
  if (diagnostic.location.hasPosition()) {
    diagnostic.snippet =
        impl_->source.snippetAt(diagnostic.location.line, diagnostic.location.column);
  }
  return Error(std::move(diagnostic), code);
}

std::string escapePointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  appendEscapedToken(out, token);
  return out;
}

// ---------------------------------------------------------------------------
// Value

Value::Value(const Document& doc) : Value(&doc.root(), "", &doc, doc.source().name()) {}

Value::Value(const Json& json, std::string file) : Value(&json, "", nullptr, std::move(file)) {}

Value::Value(const Json* json, std::string pointer, const Document* doc, std::string file)
    : json_(json), pointer_(std::move(pointer)), doc_(doc), file_(std::move(file)) {}

SourceLocation Value::location() const {
  if (doc_ != nullptr) {
    return doc_->locate(pointer_);
  }
  return SourceLocation{file_, 0, 0, pointer_};
}

std::string Value::typeName() const {
  return typeNameOf(*json_);
}

std::int64_t Value::asInt64() const {
  // An integer too large for int64 parses as a double: quote it as written.
  auto asWritten = [this] {
    const std::string text = doc_ != nullptr ? doc_->numberText(pointer_) : std::string();
    return text.empty() ? brief(*json_) : text;
  };
  if (json_->is_number_unsigned()) {
    auto value = json_->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail("integer out of int64 range: " + asWritten());
    }
    return static_cast<std::int64_t>(value);
  }
  if (json_->is_number_integer()) {
    return json_->get<std::int64_t>();
  }
  if (json_->is_number_float()) {
    double value = json_->get<double>();
    constexpr double kLimit = 9223372036854775808.0; // 2^63
    if (std::isfinite(value) && value == std::trunc(value) &&
        (value >= kLimit || value < -kLimit)) {
      fail("integer out of int64 range: " + asWritten());
    }
  }
  fail("expected an integer, got " + describe(*json_));
}

double Value::asDouble() const {
  if (!json_->is_number()) {
    fail("expected a number, got " + describe(*json_));
  }
  return json_->get<double>();
}

bool Value::asBool() const {
  if (!json_->is_boolean()) {
    fail("expected a boolean, got " + describe(*json_));
  }
  return json_->get<bool>();
}

const std::string& Value::asString() const {
  if (!json_->is_string()) {
    fail("expected a string, got " + describe(*json_));
  }
  return json_->get_ref<const std::string&>();
}

bool Value::has(std::string_view key) const {
  expectObject();
  return json_->find(key) != json_->end();
}

Value Value::member(std::string_view key) const {
  std::optional<Value> found = find(key);
  if (!found) {
    fail("missing required key " + jsonQuoted(key));
  }
  return std::move(*found);
}

std::optional<Value> Value::find(std::string_view key) const {
  expectObject();
  auto it = json_->find(key);
  if (it == json_->end()) {
    return std::nullopt;
  }
  std::string pointer = pointer_ + "/";
  appendEscapedToken(pointer, key);
  return Value(&*it, std::move(pointer), doc_, file_);
}

std::vector<std::pair<std::string, Value>> Value::members() const {
  expectObject();
  std::vector<std::pair<std::string, Value>> out;
  out.reserve(json_->size());
  for (const auto& [key, value] : json_->items()) {
    std::string pointer = pointer_ + "/";
    appendEscapedToken(pointer, key);
    out.emplace_back(key, Value(&value, std::move(pointer), doc_, file_));
  }
  return out;
}

void Value::expectKeys(std::initializer_list<std::string_view> allowed) const {
  expectObject();
  for (const auto& [key, value] : json_->items()) {
    bool known = false;
    for (std::string_view name : allowed) {
      known = known || name == key;
    }
    if (known) {
      continue;
    }
    std::string expected;
    for (std::string_view name : allowed) {
      expected += (expected.empty() ? "" : ", ") + std::string(name);
    }
    member(key).fail("unknown key " + jsonQuoted(key) +
                     (allowed.size() == 0 ? " (no keys are allowed here)"
                                          : " (expected one of: " + expected + ")"));
  }
}

std::size_t Value::size() const {
  if (!json_->is_array() && !json_->is_object()) {
    fail("expected an array or an object, got " + describe(*json_));
  }
  return json_->size();
}

Value Value::at(std::size_t index) const {
  expectArray();
  if (index >= json_->size()) {
    throw InternalError("Value::at(" + std::to_string(index) + ") past the end of the " +
                        std::to_string(json_->size()) + "-element array at \"" + pointer_ + "\"");
  }
  std::string pointer = pointer_ + "/";
  appendIndexToken(pointer, index);
  return Value(&(*json_)[index], std::move(pointer), doc_, file_);
}

std::vector<Value> Value::elements() const {
  expectArray();
  std::vector<Value> out;
  out.reserve(json_->size());
  for (std::size_t i = 0; i < json_->size(); ++i) {
    std::string pointer = pointer_ + "/";
    appendIndexToken(pointer, i);
    out.push_back(Value(&(*json_)[i], std::move(pointer), doc_, file_));
  }
  return out;
}

void Value::expectObject() const {
  if (!json_->is_object()) {
    fail("expected an object, got " + describe(*json_));
  }
}

void Value::expectArray() const {
  if (!json_->is_array()) {
    fail("expected an array, got " + describe(*json_));
  }
}

void Value::fail(const std::string& message, ExitCode code) const {
  throw error(message, code);
}

Error Value::error(const std::string& message, ExitCode code) const {
  if (doc_ != nullptr) {
    return doc_->errorAt(pointer_, message, code);
  }
  return Error(SourceLocation{file_, 0, 0, pointer_},
               pointer_.empty() ? message : "at " + pointer_ + ": " + message, code);
}

std::string brief(const Json& value) {
  return briefText(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Json diagnosticJson(const Diagnostic& d) {
  Json out = Json::object();
  out["message"] = d.message;
  if (!d.location.file.empty()) {
    out["file"] = d.location.file;
  }
  if (d.location.line > 0) {
    out["line"] = d.location.line;
    out["column"] = d.location.column;
  }
  if (!d.location.pointer.empty()) {
    out["pointer"] = d.location.pointer;
  }
  return out;
}

std::string briefText(std::string text) {
  if (text.size() <= kMaxShown) {
    return text;
  }
  std::size_t cut = kMaxShown - 3;
  // Never cut a UTF-8 sequence in half.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return text.substr(0, cut) + "...";
}

} // namespace tapestry::json
