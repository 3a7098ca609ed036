// Diagnostics: source locations, Diagnostic values, and the typed errors that carry
// them to the CLI boundary, where they become stderr text and SPEC §2 exit codes.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace tapestry {

// Exit codes of SPEC §2; the CLI maps every outcome to exactly one of these.
enum class ExitCode : int {
  Ok = 0,
  InvalidInput = 1,       // file content: graph, template, target, plan
  Usage = 2,              // flags
  CheckFailed = 3,        // run --check mismatch, kernels check failure
  BackendUnavailable = 4, // e.g. --backend cuda without a GPU
  Interrupted = 130,      // SIGINT (optimize writes what it has, then exits so)
  Internal = 70,          // a bug in tapestry
};

// Where a diagnostic points. Lines and columns are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file; // path as the user gave it; "<stdin>" for '-'
  int line = 0;
  int column = 0;
  std::string pointer; // JSON pointer or YAML path inside the file, when known

  bool hasPosition() const { return line > 0; }
  // "file:line:col", "file:line", "file", or "" when nothing is known.
  std::string toString() const;
};

// The source line a diagnostic points into, and the 1-based column of its caret.
struct Snippet {
  std::string text;
  int caretColumn = 1;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLocation location;
  std::string message;
  std::optional<Snippet> snippet;
  std::vector<Diagnostic> notes;

  // "FILE:LINE:COL: error: MESSAGE", then the source line and a caret line when
  // a snippet is attached, then the notes. Always ends with a newline.
  std::string format() const;
};

const char* severityName(Severity s);

// A user error (bad input): carries a Diagnostic and the exit code it maps to.
// Thrown by the library, caught only at the CLI boundary (or by tests).
class Error : public std::exception {
public:
  explicit Error(std::string message, ExitCode code = ExitCode::InvalidInput);
  Error(SourceLocation location, std::string message, ExitCode code = ExitCode::InvalidInput);
  Error(Diagnostic diagnostic, ExitCode code);

  const Diagnostic& diagnostic() const { return diagnostic_; }
  Diagnostic& diagnostic() { return diagnostic_; }
  ExitCode exitCode() const { return code_; }
  const std::string& message() const { return diagnostic_.message; }
  // The formatted diagnostic (what the CLI prints).
  const char* what() const noexcept override;

  // Fill in a location (and snippet) when the thrower did not know one; a known
  // location is kept, since the innermost thrower knows best.
  Error& locate(const SourceLocation& location, std::optional<Snippet> snippet = std::nullopt);
  // Prefix the message with context, e.g. "in shape pattern \"...\": ".
  Error& prefix(const std::string& context);
  Error& addNote(Diagnostic note);

private:
  Diagnostic diagnostic_;
  ExitCode code_;
  mutable std::string formatted_;
};

// A bad command line (exit 2).
class UsageError : public Error {
public:
  explicit UsageError(std::string message) : Error(std::move(message), ExitCode::Usage) {}
};

// A failed check: run --check mismatch, kernels check failure (exit 3).
class CheckFailure : public Error {
public:
  explicit CheckFailure(std::string message) : Error(std::move(message), ExitCode::CheckFailed) {}
};

// The requested backend cannot run here (exit 4).
class BackendUnavailable : public Error {
public:
  explicit BackendUnavailable(std::string message)
      : Error(std::move(message), ExitCode::BackendUnavailable) {}
};

// A bug in tapestry, never the user's fault (exit 70). The message says so.
class InternalError : public Error {
public:
  explicit InternalError(const std::string& message);
};

// Throws InternalError when `condition` is false. For invariants, not for input checks.
void checkInvariant(bool condition, const char* what);

} // namespace tapestry
