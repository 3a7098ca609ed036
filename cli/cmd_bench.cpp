// tapestry bench PLAN.json [--backend ...] [--repeat N] [--max-repeat M] [--max-seconds S]
//                [--warmup N]   (SPEC §9)
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "cli/app.hpp"
#include "cli/execution_flags.hpp"
#include "cli/run_mpi.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/run_command.hpp"

namespace tapestry::cli {

void registerBench(CLI::App& app, Action& action) {
  auto config = std::make_shared<driver::BenchConfig>();
  CLI::App* sub = addSubcommand(
      app, "bench",
      "Time a plan against its predicted time and the unsharded single-device baseline");
  addExecutionFlags(sub, *config, "Seed the inputs are drawn from");
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
  sub->callback([&action, config] {
    action = [config](const GlobalOptions& global, Streams& io) -> int {
      bindGlobalOptions(global, *config);
      // The progress line is for people watching a terminal, never for logs.
      config->progress = !global.quiet && &io.err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
      if (const auto launch = search::launchFromEnvironment(); launch && launch->size > 1) {
        return executeOnRanks( // mpirun -n K, K > 1
            config->link,
            [config](std::ostream& out, std::ostream& err) {
              return driver::benchCommand(*config, out, err);
            },
            *launch, global, io);
      }
      return driver::benchCommand(*config, io.out, io.err);
    };
  });
}

} // namespace tapestry::cli
