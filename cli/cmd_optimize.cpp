// tapestry optimize GRAPH.json ...   (SPEC §7)
#include <map>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/optimize_mpi.hpp"
#include "cli/subcommand.hpp"
#include "cli/validators.hpp"
#include "core/diag/interrupt.hpp"
#include "core/driver/optimize_command.hpp"

namespace tapestry::cli {

namespace {
// The flags whose config field is optional (unset unless given).
struct OptionalFlags {
  double budgetSeconds = 0;
  std::int64_t iterations = 0;
  std::string memoryCap;
};
} // namespace

void registerOptimize(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::OptimizeConfig>();
  auto args = std::make_shared<OptionalFlags>();
  sub->add_option("GRAPH", config->graphPath, "Graph file (user or expanded), or - for stdin")
      ->required();
  addKernelPaths(sub, config->kernelPaths);
  sub->add_option("--target", config->target, "Built-in target name or target YAML file");
  sub->add_option("--rewrites", config->rewrites,
                  "Rewrite the graph: default (rules marked always before the search; rules "
                  "marked search, the fusions of conv2d with its residual add and activation, as "
                  "choices of the search), none, or a rule file whose rules apply besides")
      ->capture_default_str();
  addRulePaths(sub, config->rulePaths);
  addApproximate(sub, config->approximate);
  sub->add_option("--seed", config->seed, "Random seed (the search is deterministic per seed)");
  auto* budget = sub->add_option("--budget-seconds", args->budgetSeconds, "Time budget")
                     ->check(positiveNumber());
  auto* iterations =
      sub->add_option("--iterations", args->iterations,
                      "Search iterations (generations of 64 candidate plans; default 300)")
          ->check(positiveInteger());
  budget->excludes(iterations);
  sub->add_option("--threads", config->threads, "Search worker threads")
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--exhaustive", config->exhaustive,
                "Enumerate every plan of a small graph (the true front)");
  sub->add_option("--select", config->select,
                  "Plan written to -o: fastest, smallest, knee, or time")
      ->check(CLI::IsMember({"fastest", "smallest", "knee", "time"}));
  sub->add_option("--baseline", config->baseline,
                  "Write this baseline's plan to -o instead of the selected one: single, "
                  "data_parallel or tensor_parallel")
      ->check(CLI::IsMember({"single", "data_parallel", "tensor_parallel"}));
  sub->add_option(
      "--memory-cap", args->memoryCap,
      "Select only among plans whose peak memory per device is at most this, e.g. 40GiB");
  sub->add_option("--inputs-on", config->inputsOn,
                  "Where graph inputs start: host, free (resident on every device that reads "
                  "them) or constants (only the constant ones resident)")
      ->check(CLI::IsMember({"host", "free", "constants"}));
  sub->add_option("-o,--output", config->outputPath, "Selected plan (plan/v1 JSON), - for stdout");
  sub->add_option("--front", config->frontPath, "Also write the front (front/v1 JSON) here");
  sub->add_option("--exchange-every", config->exchangeEvery,
                  "Under mpirun -n K: K islands search with their own seeds and swap their "
                  "fronts every N iterations (docs/distributed.md); ignored in one process")
      ->check(positiveInteger());
  auto* memoryCap = sub->get_option("--memory-cap");
  sub->callback([&action, config, args, budget, iterations, memoryCap] {
    action = [config, args, budget, iterations, memoryCap](const GlobalOptions& global,
                                                           Streams& io) -> int {
      if (budget->count() > 0) {
        config->budgetSeconds = args->budgetSeconds;
      }
      if (iterations->count() > 0) {
        config->iterations = args->iterations;
      }
      if (memoryCap->count() > 0) {
        config->memoryCap = args->memoryCap;
      }
      bindGlobalOptions(global, io, *config); // and the progress line
      // A first SIGINT/SIGTERM stops the stochastic search at the next generation
      // boundary; the best front so far is written and the exit code is 130.
      // (The exhaustive search is not deferred: an interrupt ends it at once.)
      std::optional<interrupt::Deferral> deferral;
      if (!config->exhaustive) {
        deferral.emplace();
        config->stop = &interrupt::requested();
      }
      if (const auto launch = search::launchFromEnvironment(); launch && launch->size > 1) {
        return optimizeOnIslands(*config, *launch, global, io); // mpirun -n K, K > 1
      }
      return driver::optimizeCommand(*config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
