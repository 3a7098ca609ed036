// Tapestry's JSON layout, with or without a JSON tree: the one JSON writer of
// every file the tool writes (graphs, plans, fronts). A
// JsonLayout collects a document as its one-line text plus a flat record of
// where each container and member sits in that text; print() then lays it out
// (2-space indent; arrays of scalars, and containers whose one-line form fits
// the width, on one line). Building nlohmann trees for a large expanded graph
// cost far more than the expansion itself; this writes each byte once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.hpp"

namespace tapestry::json {

class JsonLayout {
public:
  // The key of the next value; required inside objects, ignored elsewhere.
  JsonLayout& key(std::string_view name);
  JsonLayout& beginObject();
  JsonLayout& beginArray();
  JsonLayout& end();
  JsonLayout& null();
  JsonLayout& boolean(bool value);
  JsonLayout& integer(std::int64_t value);
  JsonLayout& string(std::string_view value);
  JsonLayout& integers(std::span<const std::int64_t> values); // always one line
  // Any JSON value; arrays of scalars become one atom as in integers().
  JsonLayout& json(const Json& value);
  // An atom whose one-line text `write` appends to the string it is given: a
  // scalar or an array of scalars, in the one-line form (", " separators).
  template <class F> JsonLayout& atomWith(F&& write) {
    std::size_t keyStart = beginValue();
    std::size_t start = text_.size();
    write(text_);
    atomDone(keyStart, start);
    return *this;
  }

  // The one-line text of everything added so far (complete once every
  // container is closed).
  const std::string& oneLine() const { return text_; }
  // The laid-out document with a trailing newline.
  std::string print(std::size_t width) const;
  // Appends the value laid out as if it started at `column` of a line indented
  // by `indent` (a member of a larger document), without a newline.
  void printTo(std::string& out, std::size_t width, std::size_t indent, std::size_t column) const;

  void clear();

private:
  struct Item {
    std::size_t keyStart = 0; // where `"key": ` starts (objects' members)
    std::size_t start = 0;    // the value's one-line text: [start, end)
    std::size_t end = 0;
    std::size_t subtree = 1; // items in this item's subtree, itself included
    std::uint32_t children = 0;
    bool container = false; // false: an atom, always written as its one-line text
    bool object = false;
  };

  // Writes the separator (arrays) and counts the value in its container;
  // returns where its `"key": ` starts (its own start outside objects).
  std::size_t beginValue();
  JsonLayout& beginContainer(bool object);
  void atomDone(std::size_t keyStart, std::size_t start);
  void print(std::size_t item, std::size_t indent, std::size_t column, std::size_t width,
             std::string& out) const;

  std::string text_;
  std::vector<Item> items_;
  std::vector<std::size_t> open_; // open containers (item indices)
  std::size_t pendingKey_ = 0;    // keyStart of the next value
  bool keyed_ = false;            // key() was called for the next value
};

// Appends `text` as a JSON string literal, escaped as nlohmann's dump() does
// with ensure_ascii off.
void appendJsonString(std::string_view text, std::string& out);

// Appends a member to a JSON object without ordered_json's per-insert key
// search (the caller knows its keys are unique): what the writers of large
// documents (expanded graphs, plans) use.
void appendMember(Json& object, std::string key, Json value);

// Appends an integer's decimal text.
void appendInteger(std::int64_t value, std::string& out);

// Tapestry's JSON layout of a whole value: 2-space indent; arrays of scalars,
// and any container whose one-line form fits in `width` columns, on one line; a
// trailing newline.
std::string format(const Json& value, std::size_t width);

} // namespace tapestry::json
