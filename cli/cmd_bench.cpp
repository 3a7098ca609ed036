// tapestry bench PLAN.json [--backend ...] [--repeat N] [--warmup N]   (SPEC §9)
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tapestry::cli {

namespace {
struct BenchArgs {
  std::string plan;
  std::string backend = "cpu";
  int repeat = 10;
  int warmup = 2;
};
} // namespace

void registerBench(CLI::App& app, Action& action) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Time a plan against its predicted time and the unsharded single-device baseline");
  sub->fallthrough();
  sub->add_option("PLAN", args->plan, "Plan (plan/v1) JSON; - for stdin")->required();
  sub->add_option("--backend", args->backend, "Backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--repeat", args->repeat, "Timed repetitions (the median is reported)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--warmup", args->warmup, "Untimed warm-up repetitions")
      ->check(CLI::Range(0, 100000));
  sub->callback([&action, args] {
    action = [args](const GlobalOptions&, Streams&) -> int { notImplemented("bench"); };
  });
}

} // namespace tapestry::cli
