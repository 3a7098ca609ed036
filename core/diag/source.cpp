#include "core/diag/source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace tapestry {

std::string displayName(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  lineStarts_.push_back(0);
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      lineStarts_.push_back(i + 1);
    }
  }
}

SourceFile SourceFile::read(const std::string& path, const std::string& expected) {
  if (path == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    return SourceFile(displayName(path), buffer.str());
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(SourceLocation{path, 0, 0, {}}, "is a directory, expected " + expected);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(SourceLocation{path, 0, 0, {}},
                std::string("cannot open file: ") + std::strerror(errno));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw Error(SourceLocation{path, 0, 0, {}}, "cannot read file");
  }
  return SourceFile(path, std::move(text));
}

SourceLocation SourceFile::locationOf(std::size_t offset) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  auto lineIndex = static_cast<std::size_t>(it - lineStarts_.begin()) - 1;
  SourceLocation loc;
  loc.file = name_;
  loc.line = static_cast<int>(lineIndex) + 1;
  loc.column = static_cast<int>(offset - lineStarts_[lineIndex]) + 1;
  return loc;
}

SourceLocation SourceFile::locationAt(int line, int column) const {
  return SourceLocation{name_, line, column, {}};
}

std::string SourceFile::lineText(int line) const {
  if (line < 1 || line > lineCount()) {
    return {};
  }
  std::size_t start = lineStarts_[static_cast<std::size_t>(line - 1)];
  std::size_t end = text_.find('\n', start);
  if (end == std::string::npos) {
    end = text_.size();
  }
  if (end > start && text_[end - 1] == '\r') {
    --end;
  }
  return text_.substr(start, end - start);
}

Snippet SourceFile::snippetAt(int line, int column) const {
  return Snippet{lineText(line), std::max(column, 1)};
}

} // namespace tapestry
