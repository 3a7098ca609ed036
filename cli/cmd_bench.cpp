// tapestry bench PLAN.json [--backend ...] [--inputs DIR] [--repeat N] [--max-repeat M]
// [--max-seconds S]
//                [--warmup N]   (SPEC §9)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/execution_flags.hpp"
#include "cli/run_mpi.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/run_command.hpp"

namespace tapestry::cli {

void registerBench(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::BenchConfig>();
  addExecutionFlags(sub, *config, "Seed for drawing inputs when --inputs is not given");
  sub->add_option("--inputs", config->inputsDir,
                  "Directory with one NAME.npy per graph input (the same inputs for the plan and "
                  "the single-device baseline)");
  sub->add_option("--repeat", config->repeat, "Fewest timed repetitions (the median is reported)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--max-repeat", config->maxRepeat,
                  "Most timed repetitions, repeating until the median is stable (0: the larger "
                  "of --repeat and 50)")
      ->check(CLI::Range(0, 100000));
  sub->add_option("--max-seconds", config->maxSeconds,
                  "No more repetitions past --repeat after timing a plan this long (seconds)");
  sub->add_option("--warmup", config->warmup, "Untimed warm-up repetitions")
      ->check(CLI::Range(0, 100000));
  sub->callback([&action, config] { action = executeAction(config, driver::benchCommand); });
}

} // namespace tapestry::cli
