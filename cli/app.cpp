#include "cli/app.hpp"

#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backends/machine_probe.hpp"
#include "cli/optimize_mpi.hpp"
#include "cli/subcommand.hpp"
#include "cli/version.hpp"
#include "core/diag/error.hpp"
#include "core/diag/suggest.hpp"
#include "core/json/json.hpp"
#include "core/search/island.hpp"

namespace tapestry::cli {

std::string versionString() {
  return TAPESTRY_VERSION;
}

namespace {

// In --format json mode an error is also one JSON document on stdout, so CI
// scripts can read the failure without parsing stderr.
void printJsonError(std::ostream& out, const Error& e) {
  nlohmann::ordered_json doc;
  doc["status"] = "error";
  doc["exit_code"] = static_cast<int>(e.exitCode());
  doc["error"] = json::diagnosticJson(e.diagnostic());
  out << doc.dump(2) << "\n";
}

int report(const Error& e, const GlobalOptions& global, Streams& io) {
  io.err << e.what();
  if (global.format == OutputFormat::Json) {
    printJsonError(io.out, e);
  }
  return static_cast<int>(e.exitCode());
}

int reportUsage(const UsageError& e, const GlobalOptions& global, Streams& io) {
  io.err << "tapestry: error: " << e.message() << "\n";
  if (global.format == OutputFormat::Json) {
    printJsonError(io.out, e);
  }
  return static_cast<int>(ExitCode::Usage);
}

void printVersion(const GlobalOptions& global, std::ostream& out) {
  if (global.format == OutputFormat::Json) {
    nlohmann::ordered_json doc;
    doc["name"] = "tapestry";
    doc["version"] = versionString();
    doc["cuda_backend"] = TAPESTRY_HAVE_CUDA_BACKEND != 0;
    out << doc.dump(2) << "\n";
  } else {
    out << "tapestry " << versionString() << "\n";
  }
}

// The option named `token` ("--format", "-k", "--format=json") of `level` or
// an enclosing command; null when there is none.
const CLI::Option* findOption(const CLI::App* level, const std::string& token) {
  const std::string name = token.substr(0, token.find('='));
  for (; level != nullptr; level = level->get_parent()) {
    if (const CLI::Option* opt = level->get_option_no_throw(name)) {
      return opt;
    }
  }
  return nullptr;
}

// For a command line whose command (or a command's subcommand, as in
// `kernels lsit`) is not one: `unknown command "optimise" (did you mean
// "optimize"?); expected one of: ...`. Options and their values are skipped.
std::optional<std::string> unknownCommand(const CLI::App& app,
                                          const std::vector<std::string>& args) {
  const CLI::App* level = &app;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (token == "--") {
      return std::nullopt;
    }
    if (token.size() > 1 && token[0] == '-') {
      const CLI::Option* opt = findOption(level, token);
      if (opt != nullptr && opt->get_items_expected_min() > 0 &&
          token.find('=') == std::string::npos) {
        ++i; // its value
      }
      continue;
    }
    const std::vector<const CLI::App*> commands =
        level->get_subcommands([](const CLI::App*) { return true; });
    if (commands.empty()) {
      return std::nullopt; // a positional argument of a command
    }
    std::vector<std::string_view> names;
    const CLI::App* next = nullptr;
    for (const CLI::App* c : commands) {
      names.push_back(c->get_name());
      if (c->get_name() == token) {
        next = c;
      }
    }
    if (next == nullptr) {
      std::string list;
      for (std::string_view n : names) {
        list += (list.empty() ? "" : ", ") + std::string(n);
      }
      const std::optional<std::string_view> close = closestName(token, names);
      const std::string what = level == &app ? "command" : level->get_name() + " command";
      return "unknown " + what + " \"" + token + "\"" +
             (close ? " (did you mean \"" + std::string(*close) + "\"?)" : "") +
             "; expected one of: " + list;
    }
    level = next;
  }
  return std::nullopt;
}

// Every subcommand, in the order help lists them: its name, what it does (one
// line of help), and the function of its cli/cmd_NAME.cpp that adds its options.
struct Subcommand {
  const char* name;
  const char* description;
  void (*addOptions)(CLI::App* sub, Action& action);
};
const Subcommand kSubcommands[] = {
    {"import",
     "Import an ONNX model as a graph: shape inference, folding of shape arithmetic, every node as "
     "standard-library operations",
     registerImport},
    {"expand",
     "Expand a graph: apply metakernels to every operation, infer shapes, index spaces and index "
     "projection functions",
     registerExpand},
    {"kernels", "List, print or validate metakernels (the standard library and any -k files)",
     registerKernels},
    {"rewrites",
     "List, print or check the rewrite rules (substitutions and fusions; the standard ones and any "
     "-r files)",
     registerRewrites},
    {"optimize",
     "Search shardings and device placements; keep the Pareto front over (time, peak memory per "
     "device, bytes moved)",
     registerOptimize},
    {"render", "Draw a graph, a sharded plan, a Pareto front or a timeline with Graphviz",
     registerRender},
    {"run", "Execute a plan shard by shard on a backend; --check compares with the unsharded graph",
     registerRun},
    {"bench", "Time a plan against its predicted time and the unsharded single-device baseline",
     registerBench},
    {"trace",
     "Write a plan's predicted schedule as a Chrome trace (open it in Perfetto); run --trace and "
     "bench --trace add a measured run beside it",
     registerTrace},
    {"calibrate",
     "Measure this machine through a real backend and write a target with a measured profile (what "
     "--target local then uses)",
     registerCalibrate},
};

} // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // `--target local` (any command) sees this machine's GPUs through the backend's probe.
  backend::installGpuProbe();
  Streams io{out, err};
  GlobalOptions global;
  Action action;
  bool showVersion = false;

  CLI::App app{"tapestry: shard tensor programs across devices.\n"
               "Expands graphs of tensor operations through metakernels, searches the Pareto "
               "front of sharding plans, renders them, and runs them on CPU or CUDA.",
               "tapestry"};
  app.option_defaults()->always_capture_default();
  app.fallthrough();
  app.set_help_all_flag("--help-all", "Print help for every subcommand and exit");
  app.add_flag("--version", showVersion, "Print the version and exit");

  std::string format = "text";
  app.add_option("--format", format, "Output format: text, or json (one document on stdout)")
      ->check(CLI::IsMember({"text", "json"}))
      ->each([&global](const std::string& f) {
        global.format = f == "json" ? OutputFormat::Json : OutputFormat::Text;
      })
      ->option_text("text|json");
  app.add_flag("-q,--quiet", global.quiet, "Print only errors and warnings");
  app.add_flag("-v,--verbose", global.verbose, "Print more about what is happening");

  for (const Subcommand& command : kSubcommands) {
    command.addOptions(addSubcommand(app, command.name, command.description), action);
  }
  app.footer("Exit codes: 0 ok, 1 invalid input, 2 usage error, 3 check failed, "
             "4 backend unavailable, 70 internal error, 130 interrupted.\n"
             "Run 'tapestry COMMAND --help' for a command's options.");

  std::vector<const char*> argv;
  for (const std::string& a : args) {
    argv.push_back(a.c_str());
  }
  try {
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::CallForHelp&) {
      // Print the help of the innermost selected subcommand, with its full path
      // ("tapestry kernels show") in the usage line.
      CLI::App* target = &app;
      std::string path;
      while (!target->get_subcommands().empty()) {
        path += (path.empty() ? "" : " ") + target->get_name();
        target = target->get_subcommands().front();
      }
      out << target->help(path);
      return 0;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return 0;
    } catch (const CLI::ParseError& e) {
      // Under mpirun every rank parses the same command line and fails alike:
      // rank 0 says so, once (docs/distributed.md).
      if (const auto launch = search::launchFromEnvironment();
          launch && launch->size > 1 && launch->rank != 0) {
        return quietRankExit(static_cast<int>(ExitCode::Usage));
      }
      if (const std::optional<std::string> unknown = unknownCommand(app, args)) {
        throw UsageError(*unknown);
      }
      throw UsageError(e.what());
    }
    if (showVersion) {
      printVersion(global, out);
      return 0;
    }
    if (!action) {
      throw UsageError(
          "no command given (expected one of: import, expand, kernels, rewrites, optimize, "
          "render, run, bench, trace, calibrate); run 'tapestry --help' for usage");
    }
    return action(global, io);
  } catch (...) {
    return reportCurrentError(global, io);
  }
}

int reportCurrentError(const GlobalOptions& global, Streams& io) {
  try {
    throw;
  } catch (const UsageError& e) {
    return reportUsage(e, global, io);
  } catch (const Error& e) {
    return report(e, global, io);
  } catch (const std::bad_alloc&) {
    return report(Error("out of memory", ExitCode::Internal), global, io);
  } catch (const std::exception& e) {
    return report(InternalError(std::string("unexpected exception: ") + e.what()), global, io);
  } catch (...) {
    return report(InternalError("unexpected non-standard exception"), global, io);
  }
}

int currentExitCode() {
  try {
    throw;
  } catch (const Error& e) {
    return static_cast<int>(e.exitCode());
  } catch (...) {
    return static_cast<int>(ExitCode::Internal);
  }
}

} // namespace tapestry::cli
