#include "core/metakernel/yaml_util.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>

#include "core/diag/utf8.hpp"

namespace tapestry::metakernel::yaml {

const Entry* findEntry(const std::vector<Entry>& entries, std::string_view key) {
  for (const Entry& e : entries) {
    if (e.key == key) {
      return &e;
    }
  }
  return nullptr;
}

const char* kindName(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) {
    return "nothing";
  }
  if (node.IsMap()) {
    return "map";
  }
  if (node.IsSequence()) {
    return "list";
  }
  return "string";
}

YAML::Node Reader::parse() const {
  // yaml-cpp passes invalid UTF-8 through into strings, where it would break
  // every JSON output later: reject it here, located, as the JSON parser does.
  if (const std::optional<std::size_t> bad = findInvalidUtf8(file_.text())) {
    const SourceLocation at = file_.locationOf(*bad);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(file_.text()[*bad]));
    throw Error(Diagnostic{Severity::Error,
                           at,
                           std::string("invalid UTF-8 byte ") + hex,
                           file_.snippetAt(at.line, at.column),
                           {}},
                ExitCode::InvalidInput);
  }
  YAML::Node root;
  try {
    root = YAML::Load(file_.text());
  } catch (const YAML::DeepRecursion& e) {
    int line = e.mark.line >= 0 ? e.mark.line + 1 : 1;
    int column = e.mark.column >= 0 ? e.mark.column + 1 : 1;
    throw Error(
        Diagnostic{Severity::Error,
                   file_.locationAt(line, column),
                   "invalid YAML: nested deeper than " + std::to_string(e.depth()) + " levels",
                   file_.snippetAt(line, column),
                   {}},
        ExitCode::InvalidInput);
  } catch (const YAML::ParserException& e) {
    int line = e.mark.line >= 0 ? e.mark.line + 1 : 1;
    int column = e.mark.column >= 0 ? e.mark.column + 1 : 1;
    throw Error(Diagnostic{Severity::Error,
                           file_.locationAt(line, column),
                           "invalid YAML: " + e.msg,
                           file_.snippetAt(line, column),
                           {}},
                ExitCode::InvalidInput);
  } catch (const YAML::Exception& e) {
    throw Error(SourceLocation{file_.name(), 0, 0, {}}, "invalid YAML: " + e.msg);
  }
  checkDocument(root);
  return root;
}

void Reader::checkDocument(const YAML::Node& root) const {
  // Two things only the parsed document shows: escapes ("\x85") can still make
  // invalid UTF-8, and a few lines of anchors and aliases can stand for
  // billions of nodes ("billion laughs"). Both stop here, before any reader
  // walks the document.
  std::vector<YAML::Node> pending{root};
  std::int64_t nodes = 0;
  while (!pending.empty()) {
    const YAML::Node node = pending.back();
    pending.pop_back();
    if (++nodes > kMaxNodes) {
      fail(node, "the document has more than " + std::to_string(kMaxNodes) +
                     " nodes once aliases are expanded");
    }
    if (node.IsScalar()) {
      const std::string& text = node.Scalar();
      if (const std::optional<std::size_t> bad = findInvalidUtf8(text)) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text[*bad]));
        fail(node,
             std::string("invalid UTF-8 in a string (byte ") + hex + ", from an escape sequence)");
      }
    } else if (node.IsSequence()) {
      for (const YAML::Node& element : node) {
        pending.push_back(element);
      }
    } else if (node.IsMap()) {
      for (const auto& entry : node) {
        pending.push_back(entry.first);
        pending.push_back(entry.second);
      }
    }
  }
}

SourceLocation Reader::location(const YAML::Node& node) const {
  YAML::Mark mark = node.Mark();
  if (mark.line < 0) {
    return SourceLocation{file_.name(), 0, 0, {}};
  }
  return file_.locationAt(mark.line + 1, mark.column + 1);
}

std::string Reader::lineText(const YAML::Node& node) const {
  return file_.lineText(location(node).line);
}

FieldInfo Reader::field(const YAML::Node& node, const std::string& role) const {
  FieldInfo f;
  f.role = role;
  f.text = scalar(node, role);
  f.location = location(node);
  f.lineText = file_.lineText(f.location.line);
  f.textColumn = f.location.column;
  auto col = static_cast<std::size_t>(std::max(f.location.column, 1) - 1);
  if (col < f.lineText.size() && (f.lineText[col] == '"' || f.lineText[col] == '\'')) {
    ++f.textColumn;
  }
  return f;
}

void Reader::fail(const YAML::Node& node, const std::string& message) const {
  SourceLocation loc = location(node);
  std::optional<Snippet> snippet;
  if (loc.line > 0) {
    snippet = file_.snippetAt(loc.line, loc.column);
  }
  throw Error(Diagnostic{Severity::Error, loc, message, snippet, {}}, ExitCode::InvalidInput);
}

std::vector<Entry> Reader::entries(const YAML::Node& node, const std::string& what,
                                   bool allowNull) const {
  std::vector<Entry> out;
  if (allowNull && (!node.IsDefined() || node.IsNull())) {
    return out;
  }
  if (!node.IsMap()) {
    fail(node, what + ": expected a map, got " + kindName(node));
  }
  std::set<std::string, std::less<>> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      fail(it->first, what + ": expected a name as key, got " + kindName(it->first));
    }
    std::string key = it->first.Scalar();
    if (!seen.insert(key).second) {
      fail(it->first, what + ": duplicate key \"" + key + "\"");
    }
    out.push_back(Entry{key, it->first, it->second});
  }
  return out;
}

void Reader::expectKeys(const std::vector<Entry>& entries,
                        std::initializer_list<std::string_view> keys,
                        const std::string& what) const {
  for (const Entry& e : entries) {
    bool known = false;
    for (std::string_view k : keys) {
      known = known || e.key == k;
    }
    if (!known) {
      std::string expected;
      for (std::string_view k : keys) {
        expected += (expected.empty() ? "" : ", ") + std::string(k);
      }
      fail(e.keyNode,
           "unknown key \"" + e.key + "\" in " + what + " (expected one of: " + expected + ")");
    }
  }
}

const Entry* Reader::require(const std::vector<Entry>& entries, const YAML::Node& anchor,
                             std::string_view key, const std::string& what) const {
  if (const Entry* e = findEntry(entries, key)) {
    return e;
  }
  fail(anchor, what + ": missing required key \"" + std::string(key) + "\"");
}

std::vector<YAML::Node> Reader::sequence(const YAML::Node& node, const std::string& what,
                                         bool allowNull) const {
  std::vector<YAML::Node> out;
  if (allowNull && (!node.IsDefined() || node.IsNull())) {
    return out;
  }
  if (!node.IsSequence()) {
    fail(node, what + ": expected a list, got " + kindName(node));
  }
  for (const YAML::Node& n : node) {
    out.push_back(n);
  }
  return out;
}

std::string Reader::scalar(const YAML::Node& node, const std::string& what) const {
  if (!node.IsScalar()) {
    fail(node, what + ": expected a string, got " + kindName(node));
  }
  return node.Scalar();
}

std::int64_t Reader::integer(const YAML::Node& node, const std::string& what) const {
  std::string s = scalar(node, what);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size()) {
    fail(node, what + ": integer out of int64 range: " + s);
  }
  if (ec != std::errc() || end != s.data() + s.size()) {
    fail(node, what + ": expected an integer, got \"" + s + "\"");
  }
  return v;
}

namespace {

Json plainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return nullptr;
  }
  if (s == "true" || s == "True" || s == "TRUE") {
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    return false;
  }
  std::int64_t i = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && end == s.data() + s.size()) {
    return i;
  }
  bool numeric = s.find_first_of("0123456789") != std::string::npos &&
                 s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  if (numeric) {
    errno = 0;
    char* stop = nullptr;
    double d = std::strtod(s.c_str(), &stop);
    if (stop == s.c_str() + s.size() && errno == 0 && std::isfinite(d)) {
      return d;
    }
  }
  return s;
}

} // namespace

Json Reader::toJson(const YAML::Node& node) const {
  return toJson(node, 1);
}

Json Reader::toJson(const YAML::Node& node, int depth) const {
  if (depth > kMaxDepth) {
    fail(node, "value is nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  if (!node.IsDefined() || node.IsNull()) {
    return nullptr;
  }
  if (node.IsScalar()) {
    return node.Tag() == "!" ? Json(node.Scalar()) : plainScalar(node.Scalar());
  }
  if (node.IsSequence()) {
    Json out = Json::array();
    for (const YAML::Node& n : node) {
      out.push_back(toJson(n, depth + 1));
    }
    return out;
  }
  Json out = Json::object();
  for (const Entry& e : entries(node, "value", false)) {
    out[e.key] = toJson(e.value, depth + 1);
  }
  return out;
}

} // namespace tapestry::metakernel::yaml
