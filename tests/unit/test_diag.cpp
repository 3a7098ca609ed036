// Tests for core/diag: diagnostic formatting, error types, source files, atomic writes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "core/diag/atomic_file.hpp"
#include "core/diag/error.hpp"
#include "core/diag/interrupt.hpp"
#include "core/diag/source.hpp"

using namespace tapestry;

namespace {
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
std::filesystem::path freshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tapestry-test-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
} // namespace

TEST_CASE("SourceLocation renders as file:line:col", "[diag]") {
  CHECK(SourceLocation{"a.yaml", 7, 12, {}}.toString() == "a.yaml:7:12");
  CHECK(SourceLocation{"a.yaml", 7, 0, {}}.toString() == "a.yaml:7");
  CHECK(SourceLocation{"a.yaml", 0, 0, {}}.toString() == "a.yaml");
  CHECK(SourceLocation{}.toString().empty());
}

TEST_CASE("Diagnostic format with snippet and caret", "[diag]") {
  Diagnostic d;
  d.location = {"metakernels/matmul.yaml", 7, 12, {}};
  d.message = "in shape pattern \"[$batch..., $m $k]\": expected ',' or ']' at column 16";
  d.snippet = Snippet{"    shape: \"[$batch..., $m $k]\"", 28};
  CHECK(d.format() == "metakernels/matmul.yaml:7:12: error: in shape pattern \"[$batch..., $m "
                      "$k]\": expected ',' or ']' at column 16\n"
                      "    shape: \"[$batch..., $m $k]\"\n"
                      "                           ^\n");
}

TEST_CASE("Caret line keeps tabs so it lines up", "[diag]") {
  Diagnostic d;
  d.location = {"f", 1, 3, {}};
  d.message = "m";
  d.snippet = Snippet{"\tab", 3};
  CHECK(d.format() == "f:1:3: error: m\n\tab\n\t ^\n");
}

TEST_CASE("Diagnostic without location prints the bare message", "[diag]") {
  Diagnostic d;
  d.message = "something";
  CHECK(d.format() == "error: something\n");
}

TEST_CASE("Errors carry exit codes", "[diag]") {
  CHECK(Error("x").exitCode() == ExitCode::InvalidInput);
  CHECK(UsageError("x").exitCode() == ExitCode::Usage);
  CHECK(CheckFailure("x").exitCode() == ExitCode::CheckFailed);
  CHECK(BackendUnavailable("x").exitCode() == ExitCode::BackendUnavailable);
  InternalError bug("lost a shard");
  CHECK(bug.exitCode() == ExitCode::Internal);
  CHECK(bug.message().find("this is a bug in tapestry") != std::string::npos);
  CHECK(static_cast<int>(ExitCode::Internal) == 70);
  CHECK_THROWS_AS(checkInvariant(false, "x"), InternalError);
  CHECK_NOTHROW(checkInvariant(true, "x"));
}

TEST_CASE("Error::locate keeps the innermost location and prefix adds context", "[diag]") {
  Error e(SourceLocation{"inner.json", 3, 4, {}}, "bad");
  e.locate(SourceLocation{"outer.json", 9, 9, {}});
  CHECK(e.diagnostic().location.toString() == "inner.json:3:4");
  Error f("bad");
  f.locate(SourceLocation{"outer.json", 9, 2, "/a"}, Snippet{"xx", 2});
  f.prefix("in graph: ");
  CHECK(std::string(f.what()) == "outer.json:9:2: error: in graph: bad\nxx\n ^\n");
  CHECK(f.diagnostic().location.pointer == "/a");
}

TEST_CASE("Notes print after the error", "[diag]") {
  Error e(SourceLocation{"a", 1, 1, {}}, "first");
  Diagnostic note;
  note.location = {"b", 2, 2, {}};
  note.message = "defined here";
  e.addNote(note);
  CHECK(std::string(e.what()) == "a:1:1: error: first\nb:2:2: note: defined here\n");
}

TEST_CASE("SourceFile maps offsets to lines and columns", "[diag]") {
  SourceFile f("x.txt", "ab\ncd\r\n\nlast");
  CHECK(f.lineCount() == 4);
  CHECK(f.locationOf(0).toString() == "x.txt:1:1");
  CHECK(f.locationOf(1).toString() == "x.txt:1:2");
  CHECK(f.locationOf(3).toString() == "x.txt:2:1");
  CHECK(f.locationOf(8).toString() == "x.txt:4:1");
  CHECK(f.locationOf(1000).toString() == "x.txt:4:5");
  CHECK(f.lineText(2) == "cd");
  CHECK(f.lineText(3).empty());
  CHECK(f.lineText(4) == "last");
  CHECK(f.lineText(5).empty());
  CHECK(f.lineText(0).empty());
}

TEST_CASE("SourceFile::read reports unreadable files", "[diag]") {
  try {
    SourceFile::read("/nonexistent/file.json");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "/nonexistent/file.json: error: cannot open file: No such file or directory\n");
    CHECK(e.exitCode() == ExitCode::InvalidInput);
  }
  CHECK(displayName("-") == "<stdin>");
}

TEST_CASE("Atomic writes leave the old file or the new one, never a partial one", "[diag]") {
  auto dir = freshDir("atomic");
  auto target = dir / "out.json";
  std::ostringstream stdoutStream;
  writeFileAtomically(target.string(), std::string("first"), stdoutStream);
  CHECK(slurp(target) == "first");

  CHECK_THROWS_AS(writeFileAtomically(
                      target.string(),
                      [](std::ostream& out) {
                        out << "partial";
                        throw Error("failed half way");
                      },
                      stdoutStream),
                  Error);
  CHECK(slurp(target) == "first");
  // No temporary file is left behind.
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 1);

  // A failed write to a new path creates nothing.
  auto fresh = dir / "new.json";
  CHECK_THROWS(writeFileAtomically(
      fresh.string(), [](std::ostream&) { throw Error("no"); }, stdoutStream));
  CHECK_FALSE(std::filesystem::exists(fresh));

  writeFileAtomically("-", std::string("to stdout"), stdoutStream);
  CHECK(stdoutStream.str() == "to stdout");
  std::filesystem::remove_all(dir);
}

TEST_CASE("Atomic write to an unwritable place is a located error", "[diag]") {
  std::ostringstream sink;
  try {
    writeFileAtomically("/nonexistent-dir/out.json", std::string("x"), sink);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(
        std::string(e.what()) ==
        "/nonexistent-dir/out.json: error: cannot write output file: No such file or directory\n");
  }
  auto dir = freshDir("atomic-dir");
  CHECK_THROWS_WITH(writeFileAtomically(dir.string(), std::string("x"), sink),
                    Catch::Contains("is a directory"));
  std::filesystem::remove_all(dir);
}

namespace {
// Runs `body` in a forked child (signal handlers are process-wide, so each case
// gets its own process) and returns its wait status.
template <class Body> int inChild(Body body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}
} // namespace

TEST_CASE("A signal during an atomic write removes the temporary and kills", "[diag][interrupt]") {
  const auto dir = std::filesystem::temp_directory_path() / "tapestry-test-interrupt";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto target = dir / "out.json";
  int status = inChild([&] {
    interrupt::install();
    writeFileAtomically(
        target.string(),
        [](std::ostream& out) {
          out << "partial";
          out.flush();
          std::raise(SIGINT);
        },
        std::cout);
    ::_exit(5); // not reached: the signal kills the process
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  // Neither the target nor the temporary beside it is left.
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Under a Deferral the first signal only requests a stop", "[diag][interrupt]") {
  int status = inChild([] {
    interrupt::install();
    if (interrupt::requested().load()) {
      ::_exit(2);
    }
    {
      interrupt::Deferral deferral;
      std::raise(SIGINT);
      if (!interrupt::requested().load()) {
        ::_exit(3);
      }
    }
    ::_exit(7); // still alive after the first signal
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);

  // A second signal terminates even under a Deferral; so does SIGTERM after one.
  status = inChild([] {
    interrupt::install();
    interrupt::Deferral deferral;
    std::raise(SIGINT);
    std::raise(SIGINT);
    ::_exit(7);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  status = inChild([] {
    interrupt::install();
    interrupt::Deferral deferral;
    std::raise(SIGTERM);
    std::raise(SIGTERM);
    ::_exit(7);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("Temporaries register and unregister in slots", "[diag][interrupt]") {
  std::vector<int> slots;
  for (int i = 0; i < 16; ++i) {
    slots.push_back(interrupt::registerTemporary(("/nonexistent/t" + std::to_string(i)).c_str()));
    CHECK(slots.back() >= 0);
  }
  // All slots taken: registering still works, just without cleanup.
  CHECK(interrupt::registerTemporary("/nonexistent/extra") == -1);
  for (int s : slots) {
    interrupt::unregisterTemporary(s);
  }
  const int again = interrupt::registerTemporary(std::string(5000, 'x').c_str());
  CHECK(again == -1); // longer than a path can be
  const int one = interrupt::registerTemporary("/nonexistent/one");
  CHECK(one >= 0);
  interrupt::unregisterTemporary(one);
}

TEST_CASE("Long source lines are shown as a window around the caret", "[diag]") {
  Diagnostic d;
  d.message = "bad";
  const std::string line = std::string(1000, 'a') + "X" + std::string(1000, 'b');
  d.snippet = Snippet{line, 1001};
  const std::string text = d.format();
  const std::string expectedLine =
      "..." + std::string(70, 'a') + "X" + std::string(69, 'b') + "...";
  CHECK(text == "error: bad\n" + expectedLine + "\n" + std::string(73, ' ') + "^\n");

  // Near the start: no leading ellipsis; the caret column is unchanged.
  d.snippet = Snippet{line, 3};
  CHECK(d.format() == "error: bad\n" + std::string(72, 'a') + "...\n  ^\n");

  // A window never cuts a UTF-8 sequence ("é" is two bytes).
  std::string accents;
  for (int i = 0; i < 200; ++i) {
    accents += "\xc3\xa9";
  }
  d.snippet = Snippet{accents, 201};
  const std::string shown = d.format();
  const std::string first = shown.substr(shown.find('\n') + 1);
  const std::string windowLine = first.substr(0, first.find('\n'));
  CHECK(windowLine.substr(0, 3) == "...");
  CHECK(windowLine.substr(3, 2) == "\xc3\xa9");
  CHECK(windowLine.substr(windowLine.size() - 5) == "\xc3\xa9...");

  // Lines up to 160 bytes are shown whole.
  d.snippet = Snippet{std::string(160, 'c'), 160};
  CHECK(d.format() ==
        "error: bad\n" + std::string(160, 'c') + "\n" + std::string(159, ' ') + "^\n");
}
