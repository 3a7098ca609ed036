// In-process tests of the CLI front: the same cli::run the binary calls.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "cli/app.hpp"

namespace {
struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome runCli(std::vector<std::string> args) {
  args.insert(args.begin(), "tapestry");
  std::ostringstream out, err;
  int code = tapestry::cli::run(args, out, err);
  return {code, out.str(), err.str()};
}
} // namespace

TEST_CASE("the version flag prints the version and exits 0", "[cli]") {
  Outcome r = runCli({"--version"});
  CHECK(r.code == 0);
  CHECK(r.out == "tapestry " + tapestry::cli::versionString() + "\n");
  CHECK(r.err.empty());
}

TEST_CASE("the help flag exits 0 and lists every subcommand", "[cli]") {
  Outcome r = runCli({"--help"});
  CHECK(r.code == 0);
  for (const char* sub : {"import", "expand", "kernels", "optimize", "render", "run", "bench"}) {
    CHECK(r.out.find(sub) != std::string::npos);
  }
  for (const char* sub : {"import", "expand", "kernels", "optimize", "render", "run", "bench"}) {
    Outcome h = runCli({sub, "--help"});
    CHECK(h.code == 0);
    CHECK(h.out.find(std::string("Usage: tapestry ") + sub) != std::string::npos);
  }
}

TEST_CASE("usage errors exit 2 with one line on stderr", "[cli]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {}, {"nope"}, {"expand"}, {"import"}, {"--format", "xml", "--version"}, {"kernels"}}) {
    Outcome r = runCli(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("tapestry: error: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("global flags are accepted after the subcommand", "[cli]") {
  Outcome r = runCli({"kernels", "list", "--format", "json", "-q"});
  CHECK(r.code == 0); // --format json after `kernels list` still gives one JSON document
  CHECK(r.out.rfind("{\n  \"kernels\": [", 0) == 0);
}
