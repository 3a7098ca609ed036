// tapestry run PLAN.json [--backend cpu|cuda] [--inputs DIR] [--outputs DIR] [--seed N] [--check]
// (SPEC §9)
#include <memory>

#include <CLI/CLI.hpp>

#include "backends/run_command.hpp"
#include "cli/app.hpp"

namespace tapestry::cli {

namespace {
struct RunArgs {
  std::string plan;
  std::vector<std::string> kernelPaths;
  std::string backend = "cpu";
  std::string inputs;
  std::string outputs;
  std::uint64_t seed = 0;
  bool check = false;
  int threads = 0;
  bool tf32 = false;
};
} // namespace

void registerRun(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "Execute a plan shard by shard on a backend; --check compares with the unsharded "
             "graph");
  sub->fallthrough();
  sub->add_option("PLAN", args->plan,
                  "Plan (plan/v1), or a graph run on one device (graph/v1, expanded/v1); - for "
                  "stdin")
      ->required();
  sub->add_option("-k,--kernels", args->kernelPaths,
                  "Extra metakernel YAML file or directory (repeatable)");
  sub->add_option("--backend", args->backend, "Backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--inputs", args->inputs, "Directory with one NAME.npy per graph input");
  sub->add_option("--outputs", args->outputs, "Directory to write NAME.npy per graph output");
  sub->add_option("--seed", args->seed, "Seed for drawing inputs when --inputs is not given");
  sub->add_flag("--check", args->check,
                "Also run the unsharded graph and compare outputs (exit 3 on mismatch)");
  sub->add_option("--threads", args->threads,
                  "Cap on CPU worker threads (0: one per device, at most one per core)")
      ->check(CLI::Range(0, 4096));
  sub->add_flag("--tf32", args->tf32,
                "Let float32 matrix products use TF32 tensor cores (cuda backend only)");
  sub->callback([&action, args] {
    action = [args](const GlobalOptions& global, Streams& io) -> int {
      backend::RunConfig config;
      config.planPath = args->plan;
      config.kernelPaths = args->kernelPaths;
      config.backend = args->backend;
      config.inputsDir = args->inputs;
      config.outputsDir = args->outputs;
      config.seed = args->seed;
      config.check = args->check;
      config.threads = args->threads;
      config.tf32 = args->tf32;
      config.json = global.format == OutputFormat::Json;
      config.quiet = global.quiet;
      config.verbose = global.verbose;
      return backend::runCommand(config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
