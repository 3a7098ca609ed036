// tapestry kernels list|show NAME|check [-k PATH]...   (SPEC §4)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "core/metakernel/kernels_command.hpp"

namespace tapestry::cli {

namespace {
struct KernelsArgs {
  std::vector<std::string> kernelPaths;
  std::string name;
  bool overrideKernels = false;
};

Action kernelsAction(std::shared_ptr<KernelsArgs> args, metakernel::KernelsConfig::Action what) {
  return [args, what](const GlobalOptions& global, Streams& io) -> int {
    metakernel::KernelsConfig config;
    config.action = what;
    config.name = args->name;
    config.kernelPaths = args->kernelPaths;
    config.overrideKernels = args->overrideKernels;
    config.json = global.format == OutputFormat::Json;
    config.quiet = global.quiet;
    return metakernel::runKernelsCommand(config, io.out, io.err);
  };
}
} // namespace

void registerKernels(CLI::App& app, Action& action) {
  auto args = std::make_shared<KernelsArgs>();
  CLI::App* sub =
      app.add_subcommand("kernels", "List, print or validate metakernels (the standard library "
                                    "and any -k files)");
  sub->fallthrough();
  sub->require_subcommand(1);
  sub->add_option("-k,--kernels", args->kernelPaths,
                  "Extra metakernel YAML file or directory (repeatable)");
  sub->add_flag("--override-kernels", args->overrideKernels,
                "Let -k files redefine standard-library kernels");

  using What = metakernel::KernelsConfig::Action;
  CLI::App* list = sub->add_subcommand("list", "List kernels with their ports, params and doc");
  list->fallthrough();
  list->callback([&action, args] { action = kernelsAction(args, What::List); });

  CLI::App* show = sub->add_subcommand("show", "Print one kernel's template");
  show->fallthrough();
  show->add_option("NAME", args->name, "Kernel name")->required();
  show->callback([&action, args] { action = kernelsAction(args, What::Show); });

  CLI::App* check = sub->add_subcommand("check", "Validate every kernel (exit 3 on failure)");
  check->fallthrough();
  check->callback([&action, args] { action = kernelsAction(args, What::Check); });
}

} // namespace tapestry::cli
