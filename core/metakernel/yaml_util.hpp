// Located YAML reading, shared by every YAML file the tool reads: metakernel
// templates (loader.cpp) and targets (core/cost/target_io.cpp). Every accessor
// fails with "FILE:LINE:COL: error: ..." plus the YAML line and a caret. It
// lives here, the lowest layer that reads YAML (fields keep a FieldInfo, the
// metakernel's record of where a string came from).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "core/diag/source.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/metakernel.hpp"

namespace tapestry::metakernel::yaml {

struct Entry {
  std::string key;
  YAML::Node keyNode;
  YAML::Node value;
};

const Entry* findEntry(const std::vector<Entry>& entries, std::string_view key);
// "map", "list", "string", "nothing"
const char* kindName(const YAML::Node& node);

class Reader {
public:
  explicit Reader(const SourceFile& file) : file_(file) {}

  const SourceFile& file() const { return file_; }
  // Parses the whole file; a YAML syntax error, invalid UTF-8 (in the text or
  // from an escape), nesting past the parser's limit and a document of more
  // than kMaxNodes nodes are located Errors.
  YAML::Node parse() const;

  SourceLocation location(const YAML::Node& node) const;
  std::string lineText(const YAML::Node& node) const;
  // The scalar of `node` as a template string field (with its text column).
  FieldInfo field(const YAML::Node& node, const std::string& role) const;

  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const;

  // A map's entries in order; keys must be scalars and unique. A null node gives
  // no entries when `allowNull`.
  std::vector<Entry> entries(const YAML::Node& node, const std::string& what, bool allowNull) const;
  // "unknown key \"x\" in WHAT (expected one of: a, b)".
  void expectKeys(const std::vector<Entry>& entries, std::initializer_list<std::string_view> keys,
                  const std::string& what) const;
  // "WHAT: missing required key \"k\"" located at `anchor` (the map's own key).
  const Entry* require(const std::vector<Entry>& entries, const YAML::Node& anchor,
                       std::string_view key, const std::string& what) const;
  std::vector<YAML::Node> sequence(const YAML::Node& node, const std::string& what,
                                   bool allowNull) const;
  std::string scalar(const YAML::Node& node, const std::string& what) const;
  std::int64_t integer(const YAML::Node& node, const std::string& what) const;
  // Plain scalars become int, float, bool or null when they read as one; quoted
  // scalars stay strings. A value nested deeper than kMaxDepth is an error.
  Json toJson(const YAML::Node& node) const;
  static constexpr int kMaxDepth = 256;
  // parse() refuses a document of more nodes than this once aliases are
  // expanded (an alias "bomb" of a few lines can stand for billions, an alias
  // inside its own anchor for infinitely many). The largest real file, the
  // standard library's shape.yaml, has about 700; walking yaml-cpp's nodes
  // costs about 2 us each, so the limit also bounds the walk (0.2 s).
  static constexpr std::int64_t kMaxNodes = 100'000;

private:
  Json toJson(const YAML::Node& node, int depth) const;
  // Every scalar valid UTF-8 (after escapes), at most kMaxNodes nodes.
  void checkDocument(const YAML::Node& root) const;

  const SourceFile& file_;
};

} // namespace tapestry::metakernel::yaml
