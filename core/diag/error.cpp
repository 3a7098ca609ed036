#include "core/diag/error.hpp"

#include <algorithm>

namespace tapestry {

std::string SourceLocation::toString() const {
  std::string out = file;
  if (line > 0) {
    if (!out.empty()) {
      out.append(":");
    }
    out.append(std::to_string(line));
    if (column > 0) {
      out.append(":").append(std::to_string(column));
    }
  }
  return out;
}

const char* severityName(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

namespace {

// The caret line copies the tabs of the source line so the caret lines up
// whatever the terminal's tab width.
std::string caretLine(const Snippet& snippet) {
  std::string out;
  int col = 1;
  for (char c : snippet.text) {
    if (col >= snippet.caretColumn) {
      break;
    }
    out += (c == '\t') ? '\t' : ' ';
    ++col;
  }
  for (; col < snippet.caretColumn; ++col) {
    out += ' ';
  }
  out += '^';
  return out;
}

// A source line longer than this is shown as a window around the caret (a
// minified 400 KB JSON line must not flood the terminal).
constexpr std::size_t kWholeLine = 160;
constexpr std::size_t kContext = 70; // bytes either side of the caret in a window

Snippet windowed(const Snippet& snippet) {
  const std::string& text = snippet.text;
  if (text.size() <= kWholeLine) {
    return snippet;
  }
  const std::size_t caret =
      std::min(static_cast<std::size_t>(std::max(snippet.caretColumn, 1) - 1), text.size());
  std::size_t begin = caret > kContext ? caret - kContext : 0;
  std::size_t end = std::min(text.size(), caret + kContext);
  // Never cut a UTF-8 sequence in two.
  auto continuation = [&](std::size_t i) {
    return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  while (begin > 0 && continuation(begin)) {
    --begin;
  }
  while (end < text.size() && continuation(end)) {
    ++end;
  }
  Snippet out;
  out.text =
      (begin > 0 ? "..." : "") + text.substr(begin, end - begin) + (end < text.size() ? "..." : "");
  out.caretColumn = static_cast<int>(caret - begin) + 1 + (begin > 0 ? 3 : 0);
  return out;
}

} // namespace

std::string Diagnostic::format() const {
  std::string out;
  std::string where = location.toString();
  if (!where.empty()) {
    out += where + ": ";
  }
  out += severityName(severity);
  out += ": ";
  out += message;
  out += '\n';
  if (snippet) {
    const Snippet shown = windowed(*snippet);
    out += shown.text + '\n';
    out += caretLine(shown) + '\n';
  }
  for (const Diagnostic& note : notes) {
    out += note.format();
  }
  return out;
}

Error::Error(std::string message, ExitCode code) : code_(code) {
  diagnostic_.message = std::move(message);
}

Error::Error(SourceLocation location, std::string message, ExitCode code) : code_(code) {
  diagnostic_.location = std::move(location);
  diagnostic_.message = std::move(message);
}

Error::Error(Diagnostic diagnostic, ExitCode code)
    : diagnostic_(std::move(diagnostic)), code_(code) {}

const char* Error::what() const noexcept {
  formatted_ = diagnostic_.format();
  return formatted_.c_str();
}

Error& Error::locate(const SourceLocation& location, std::optional<Snippet> snippet) {
  SourceLocation& mine = diagnostic_.location;
  if (mine.file.empty()) {
    mine.file = location.file;
  }
  if (!mine.hasPosition() && location.hasPosition()) {
    mine.line = location.line;
    mine.column = location.column;
    if (snippet && !diagnostic_.snippet) {
      diagnostic_.snippet = std::move(snippet);
    }
  }
  if (mine.pointer.empty()) {
    mine.pointer = location.pointer;
  }
  return *this;
}

Error& Error::prefix(const std::string& context) {
  diagnostic_.message = context + diagnostic_.message;
  return *this;
}

Error& Error::addNote(Diagnostic note) {
  note.severity = Severity::Note;
  diagnostic_.notes.push_back(std::move(note));
  return *this;
}

InternalError::InternalError(const std::string& message)
    : Error("internal error: " + message +
                " (this is a bug in tapestry; please report it with the command and input files)",
            ExitCode::Internal) {}

void checkInvariant(bool condition, const char* what) {
  if (!condition) {
    throw InternalError(std::string("invariant violated: ") + what);
  }
}

} // namespace tapestry
