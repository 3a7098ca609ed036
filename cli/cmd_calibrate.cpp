// tapestry calibrate [--backend cpu|cuda] [--devices N] [-o TARGET.yaml]
// [--budget-seconds S]   (SPEC §6)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/run_mpi.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/calibrate_command.hpp"

namespace tapestry::cli {

void registerCalibrate(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::CalibrateConfig>();
  sub->add_option("--backend", config->backend, "Backend to measure: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--devices", config->devices,
                  "Devices to measure with (default: every core, or every GPU)")
      ->check(CLI::Range(1, 65536));
  sub->add_option("-o,--output", config->outputPath,
                  "Also write the target YAML here (- for stdout)");
  sub->add_option("--budget-seconds", config->budgetSeconds,
                  "About how long to measure, in seconds (at least 0.05)");
  auto noSave = std::make_shared<bool>(false);
  sub->add_flag("--no-save", *noSave, "Do not save the result as this machine's calibration");
  sub->callback([&action, config, noSave] {
    config->save = !*noSave;
    // Under mpirun -n K, K > 1, the ranks also measure the link between them.
    action = executeAction(config, driver::calibrateCommand, "calibrate");
  });
}

} // namespace tapestry::cli
