#include "cli/execution_flags.hpp"
#include "cli/subcommand.hpp"

namespace tapestry::cli {

void addExecutionFlags(CLI::App* sub, driver::ExecutionOptions& options, const char* seedHelp) {
  sub->add_option("PLAN", options.planPath,
                  "Plan (plan/v1), or a graph run on one device (graph/v1, expanded/v1); - for "
                  "stdin")
      ->required();
  addKernelPaths(sub, options.kernelPaths);
  sub->add_option("--backend", options.backend, "Backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--threads", options.threads,
                  "Cap on CPU worker threads (0: one per device, at most one per core)")
      ->check(CLI::Range(0, 4096));
  sub->add_option("--seed", options.seed, seedHelp);
  sub->add_flag("--tf32", options.tf32,
                "Let float32 matrix products use TF32 tensor cores (cuda backend only)");
  sub->add_option("--trace", options.tracePath,
                  "Also write a Chrome trace (open it in Perfetto) of the run beside its "
                  "prediction to this file");
}

} // namespace tapestry::cli
