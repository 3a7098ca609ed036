// Source text with line indexing: turns byte offsets into line:column and pulls
// out the source line a diagnostic's caret points into.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/diag/error.hpp"

namespace tapestry {

class SourceFile {
public:
  SourceFile(std::string name, std::string text);

  // Reads a file, or standard input for "-" (named "<stdin>"). Throws Error when
  // the file cannot be read; for a directory "is a directory, expected
  // <expected>" (e.g. "a graph file").
  static SourceFile read(const std::string& path, const std::string& expected = "a file");

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  int lineCount() const { return static_cast<int>(lineStarts_.size()); }

  // 1-based line and column (in bytes) of a byte offset; offsets past the end map
  // to the position just after the last character.
  SourceLocation locationOf(std::size_t offset) const;
  SourceLocation locationAt(int line, int column) const;
  // The text of a 1-based line without its newline ("" when out of range).
  std::string lineText(int line) const;
  // A snippet for a location in this file (caret at its column).
  Snippet snippetAt(int line, int column) const;

private:
  std::string name_;
  std::string text_;
  std::vector<std::size_t> lineStarts_;
};

// Display name of a path as diagnostics show it ("-" is "<stdin>").
std::string displayName(const std::string& path);

} // namespace tapestry
