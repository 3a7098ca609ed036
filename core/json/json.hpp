// Located JSON: a strict parser that records the source position of every value,
// and a Value view used by every loader so each decoding error names the file,
// line:column, JSON pointer, and shows the offending line with a caret.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diag/error.hpp"
#include "core/diag/source.hpp"

namespace tapestry {

// Insertion-ordered JSON: output key order is stable and follows construction.
using Json = nlohmann::ordered_json;

namespace json {

struct ParseOptions {
  int maxDepth = 256;              // deeper nesting is an error, never a stack overflow
  bool rejectDuplicateKeys = true; // {"a":1,"a":2} is an error naming the key
};

// A parsed document. Owns the source text and a map from JSON pointer to the
// position where that value starts.
class Document {
public:
  // Parses strict JSON (RFC 8259): no comments, no trailing commas, valid UTF-8,
  // exactly one value. Errors are Error (exit 1) located at the offending byte
  // with a snippet, e.g. "f.json:3:7: error: expected ',' or '}' after object member".
  // A UTF-8 byte order mark at the very start is skipped (columns still count its
  // bytes). Integers outside int64 become doubles, so Value::asInt64 reports the range.
  static Document parse(SourceFile source, const ParseOptions& options = {});

  const Json& root() const;
  const SourceFile& source() const;
  // Position of the value at `pointer` (RFC 6901, "" is the root). For a pointer
  // with no recorded value, the nearest recorded ancestor.
  SourceLocation locate(const std::string& pointer) const;
  // The number as written at `pointer` ("99999999999999999999", not the
  // double it parsed to); "" when the value there is no number literal.
  std::string numberText(const std::string& pointer) const;
  // A located error at `pointer`, with the source line and caret.
  Error errorAt(const std::string& pointer, const std::string& message,
                ExitCode code = ExitCode::InvalidInput) const;

private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// The array of toItem(item) for each of `items`, in order.
template <class Items, class ToItem> Json arrayOf(const Items& items, ToItem toItem) {
  Json out = Json::array();
  for (const auto& item : items) {
    out.push_back(toItem(item));
  }
  return out;
}

// RFC 6901 escaping of one reference token ("~" -> "~0", "/" -> "~1").
std::string escapePointerToken(std::string_view token);

// A read-only view of one value while decoding, carrying its JSON pointer and
// (when parsed from a file) the document, so that fail() produces located errors.
// Values made from an in-memory Json have only the pointer as location.
class Value {
public:
  Value(const Document& doc);                              // the root of a parsed document
  explicit Value(const Json& json, std::string file = {}); // in-memory, not located

  const Json& json() const { return *json_; }
  const std::string& pointer() const { return pointer_; }
  SourceLocation location() const;

  bool isNull() const { return json_->is_null(); }
  bool isObject() const { return json_->is_object(); }
  bool isArray() const { return json_->is_array(); }
  bool isString() const { return json_->is_string(); }
  bool isInteger() const { return json_->is_number_integer(); }
  bool isNumber() const { return json_->is_number(); }
  bool isBool() const { return json_->is_boolean(); }
  // "object", "array", "string", "integer", "number", "boolean", "null"
  std::string typeName() const;

  // Typed access; a wrong type is a located error such as
  // "at /shape/1: expected an integer, got string \"x\"".
  std::int64_t asInt64() const;
  double asDouble() const;
  bool asBool() const;
  const std::string& asString() const;

  // Objects. member() fails with "missing required key \"k\"" located at the object.
  bool has(std::string_view key) const;
  Value member(std::string_view key) const;
  std::optional<Value> find(std::string_view key) const;
  // Members in document order.
  std::vector<std::pair<std::string, Value>> members() const;
  // Fails on the first key not in `allowed`: "unknown key \"x\" (expected one of: a, b)".
  void expectKeys(std::initializer_list<std::string_view> allowed) const;

  // Arrays. at() past the end is a bug (InternalError): callers check size() first.
  // Object and array accessors on the wrong kind fail like expectObject()/expectArray().
  std::size_t size() const; // elements of an array or members of an object
  Value at(std::size_t index) const;
  std::vector<Value> elements() const;

  void expectObject() const; // "expected an object, got array"
  void expectArray() const;

  // Throws a located Error for this value.
  [[noreturn]] void fail(const std::string& message, ExitCode code = ExitCode::InvalidInput) const;
  Error error(const std::string& message, ExitCode code = ExitCode::InvalidInput) const;

private:
  Value(const Json* json, std::string pointer, const Document* doc, std::string file);
  const Json* json_;
  std::string pointer_;
  const Document* doc_ = nullptr; // not owned; outlives the Value
  std::string file_;
};

// Short rendering of a value for messages: strings quoted, long values elided.
std::string brief(const Json& value);
// `text` as brief shows a long value: at most 40 bytes, the end elided with
// "...", never cutting a UTF-8 sequence.
std::string briefText(std::string text);

// A diagnostic as --format json reports it: {"message", "file", "line",
// "column", "pointer"}, each of the last four only when known.
Json diagnosticJson(const Diagnostic& d);

} // namespace json
} // namespace tapestry
