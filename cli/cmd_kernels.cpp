// tapestry kernels list|show NAME|check [-k PATH]...   (SPEC §4)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/kernels_command.hpp"

namespace tapestry::cli {

namespace {
Action kernelsAction(std::shared_ptr<driver::KernelsConfig> config,
                     driver::KernelsConfig::Action what) {
  return bindThenRun(config,
                     [what](driver::KernelsConfig& bound, const GlobalOptions&, Streams& io) {
                       bound.action = what;
                       return driver::runKernelsCommand(bound, io.out, io.err);
                     });
}
} // namespace

void registerKernels(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::KernelsConfig>();
  sub->require_subcommand(1);
  addKernelPaths(sub, config->kernelPaths);
  sub->add_flag("--override-kernels", config->overrideKernels,
                "Let -k files redefine standard-library kernels");

  using What = driver::KernelsConfig::Action;
  CLI::App* list = addSubcommand(*sub, "list", "List kernels with their ports, params and doc");
  list->callback([&action, config] { action = kernelsAction(config, What::List); });

  CLI::App* show = addSubcommand(*sub, "show", "Print one kernel's template");
  show->add_option("NAME", config->name, "Kernel name")->required();
  show->callback([&action, config] { action = kernelsAction(config, What::Show); });

  CLI::App* check = addSubcommand(*sub, "check", "Validate every kernel (exit 3 on failure)");
  check->callback([&action, config] { action = kernelsAction(config, What::Check); });
}

} // namespace tapestry::cli
