// tapestry bench PLAN.json [--backend ...] [--repeat N] [--warmup N]   (SPEC §9)
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "backends/run_command.hpp"
#include "cli/app.hpp"

namespace tapestry::cli {

namespace {
struct BenchArgs {
  std::string plan;
  std::vector<std::string> kernelPaths;
  std::string backend = "cpu";
  int repeat = 10;
  int warmup = 2;
  int threads = 0;
  bool tf32 = false;
  std::uint64_t seed = 0;
};
} // namespace

void registerBench(CLI::App& app, Action& action) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Time a plan against its predicted time and the unsharded single-device baseline");
  sub->fallthrough();
  sub->add_option("PLAN", args->plan,
                  "Plan (plan/v1), or a graph run on one device (graph/v1, expanded/v1); - for "
                  "stdin")
      ->required();
  sub->add_option("-k,--kernels", args->kernelPaths,
                  "Extra metakernel YAML file or directory (repeatable)");
  sub->add_option("--backend", args->backend, "Backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--repeat", args->repeat, "Timed repetitions (the median is reported)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--warmup", args->warmup, "Untimed warm-up repetitions")
      ->check(CLI::Range(0, 100000));
  sub->add_option("--threads", args->threads,
                  "Cap on CPU worker threads (0: one per device, at most one per core)")
      ->check(CLI::Range(0, 4096));
  sub->add_option("--seed", args->seed, "Seed the inputs are drawn from");
  sub->add_flag("--tf32", args->tf32,
                "Let float32 matrix products use TF32 tensor cores (cuda backend only)");
  sub->callback([&action, args] {
    action = [args](const GlobalOptions& global, Streams& io) -> int {
      backend::BenchConfig config;
      config.planPath = args->plan;
      config.kernelPaths = args->kernelPaths;
      config.backend = args->backend;
      config.repeat = args->repeat;
      config.warmup = args->warmup;
      config.threads = args->threads;
      config.tf32 = args->tf32;
      config.seed = args->seed;
      config.json = global.format == OutputFormat::Json;
      config.quiet = global.quiet;
      config.verbose = global.verbose;
      // The progress line is for people watching a terminal, never for logs.
      config.progress = !global.quiet && &io.err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
      return backend::benchCommand(config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
