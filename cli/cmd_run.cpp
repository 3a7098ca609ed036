// tapestry run PLAN.json [--backend cpu|cuda] [--inputs DIR] [--outputs DIR] [--seed N] [--check]
// (SPEC §9)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/execution_flags.hpp"
#include "cli/run_mpi.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/run_command.hpp"

namespace tapestry::cli {

void registerRun(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::RunConfig>();
  addExecutionFlags(sub, *config, "Seed for drawing inputs when --inputs is not given");
  sub->add_option("--inputs", config->inputsDir, "Directory with one NAME.npy per graph input");
  sub->add_option("--outputs", config->outputsDir, "Directory to write NAME.npy per graph output");
  sub->add_flag("--check", config->check,
                "Also run the unsharded graph and compare outputs (exit 3 on mismatch)");
  sub->callback([&action, config] { action = executeAction(config, driver::runCommand); });
}

} // namespace tapestry::cli
