// tapestry rewrites list|show NAME|check [NAME]... [-r PATH]... [-k PATH]...
// (docs/rewrites.md)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/subcommand.hpp"
#include "core/driver/rewrites_command.hpp"

namespace tapestry::cli {

namespace {
Action rewritesAction(std::shared_ptr<driver::RewritesConfig> config,
                      driver::RewritesConfig::Action what) {
  return bindThenRun(config,
                     [what](driver::RewritesConfig& bound, const GlobalOptions&, Streams& io) {
                       bound.action = what;
                       return driver::runRewritesCommand(bound, io.out, io.err);
                     });
}
} // namespace

void addRulePaths(CLI::App* sub, std::vector<std::string>& paths) {
  // One path per -r, so that `rewrites check -r FILE NAME` reads NAME as a rule.
  sub->add_option("-r,--rules", paths, "Extra rewrite rule YAML file or directory (repeatable)")
      ->allow_extra_args(false);
}

void addApproximate(CLI::App* sub, bool& approximate) {
  sub->add_flag("--approximate", approximate,
                "Also apply the rules marked approximate (equal only approximately, as "
                "gelu_as_tanh; run --check then reports how far they moved the outputs)");
}

void registerRewrites(CLI::App* sub, Action& action) {
  auto config = std::make_shared<driver::RewritesConfig>();
  sub->require_subcommand(1);
  addRulePaths(sub, config->rulePaths);
  addKernelPaths(sub, config->kernelPaths);

  using What = driver::RewritesConfig::Action;
  CLI::App* list =
      addSubcommand(*sub, "list", "List the rewrite rules with their patterns and doc");
  list->callback([&action, config] { action = rewritesAction(config, What::List); });

  CLI::App* show = addSubcommand(*sub, "show", "Print one rule's YAML");
  show->add_option("NAME", config->names, "Rule name")->required()->expected(1);
  show->callback([&action, config] { action = rewritesAction(config, What::Show); });

  CLI::App* check = addSubcommand(
      *sub, "check",
      "Check rules on their examples: both sides in float64 on random inputs, and the "
      "replacement's kernels on the CPU backend (exit 3 on a counter-example)");
  check->add_option("NAME", config->names, "Rules to check (default: all)");
  check->callback([&action, config] { action = rewritesAction(config, What::Check); });
}

} // namespace tapestry::cli
