// tapestry run PLAN.json [--backend cpu|cuda] [--inputs DIR] [--outputs DIR] [--seed N] [--check]
// (SPEC §9)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tapestry::cli {

namespace {
struct RunArgs {
  std::string plan;
  std::string backend = "cpu";
  std::string inputs;
  std::string outputs;
  std::uint64_t seed = 0;
  bool check = false;
  int threads = 0;
};
} // namespace

void registerRun(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "Execute a plan shard by shard on a backend; --check compares with the unsharded "
             "graph");
  sub->fallthrough();
  sub->add_option("PLAN", args->plan, "Plan (plan/v1) or graph JSON; - for stdin")->required();
  sub->add_option("--backend", args->backend, "Backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--inputs", args->inputs, "Directory with one NAME.npy per graph input");
  sub->add_option("--outputs", args->outputs, "Directory to write NAME.npy per graph output");
  sub->add_option("--seed", args->seed, "Seed for drawing inputs when --inputs is not given");
  sub->add_flag("--check", args->check,
                "Also run the unsharded graph and compare outputs (exit 3 on mismatch)");
  sub->add_option("--threads", args->threads, "Cap on CPU worker threads (0: one per device)")
      ->check(CLI::NonNegativeNumber);
  sub->callback([&action, args] {
    action = [args](const GlobalOptions&, Streams&) -> int { notImplemented("run"); };
  });
}

} // namespace tapestry::cli
