// How far do sharded results stray, measured against the unsharded graph's own
// error? The figures `run --check`'s bound is chosen from (docs/check.md).
//
// For every testdata graph and several input seeds, many plans (single device,
// data parallel on 2 and 4 devices, split reduction dims on 3, and random cuts
// and placements on 2 to 4 devices) run on the CPU backend; each float output's
// error against the float64 reference is divided by the unsharded (baseline)
// error. Prints, per graph and over all, the largest and the 99th-percentile
// ratio, the largest error in units of the dtype's rounding where the baseline
// is exact, and how many outputs the current bound
// (max(kBaselineMultiple x baseline, kFloorUnits x u)) would fail.
//
// Run it under every OpenBLAS kernel the CPU can execute:
//   for c in $(python3 scripts/openblas_coretypes.py); do
//     OPENBLAS_CORETYPE=$c build/release/bin/check_margin; done
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/check.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/executor.hpp"
#include "backends/tensor_io.hpp"
#include "core/graph/loader.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::backend;
using namespace tapestry::testing;

namespace {

struct Sample {
  double ratio; // sharded / unsharded error; -1 when the unsharded error is 0
  double units; // sharded error / u
  bool ok;
};

double quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

void summarize(const std::string& label, const std::vector<Sample>& samples) {
  std::vector<double> ratios;
  double exactUnits = 0;
  int failed = 0;
  for (const Sample& s : samples) {
    if (s.ratio >= 0) {
      ratios.push_back(s.ratio);
    } else {
      exactUnits = std::max(exactUnits, s.units);
    }
    failed += s.ok ? 0 : 1;
  }
  std::printf("%-28s %5zu outputs  ratio max %5.2f  p99 %5.2f  median %5.2f  "
              "exact-baseline max %5.1f u  failing the bound: %d\n",
              label.c_str(), samples.size(), quantile(ratios, 1.0), quantile(ratios, 0.99),
              quantile(ratios, 0.5), exactUnits, failed);
}

} // namespace

int main(int argc, char** argv) {
  const int randomPlans = argc > 1 ? std::atoi(argv[1]) : 12;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("check_margin: OPENBLAS_CORETYPE=%s, bound max(%g x unsharded, %g u), "
              "%d random plans per graph and seed\n",
              coretype != nullptr ? coretype : "(default)", kBaselineMultiple, kFloorUnits,
              randomPlans);
  const std::vector<std::string> names{"tiny", "mlp", "convnet", "concat_split_embedding",
                                       "transformer_block"};
  std::vector<Sample> all;
  for (const std::string& name : names) {
    const graph::ExpandedGraph g = graph::loadAndExpand(
        std::string(TAPESTRY_SOURCE_DIR) + "/testdata/graphs/" + name + ".json", lib());
    std::vector<Sample> samples;
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      const TensorBuffers inputs = drawInputs(g, seed);
      CpuBackend reference(1);
      CpuBackend::setBlasThreads(usableHardwareThreads());
      const CheckReference r = unshardedReference(reference, g, inputs);
      std::mt19937 rng(static_cast<std::mt19937::result_type>(seed * 7919 + name.size()));
      std::vector<std::pair<int, plan::PlanChoice>> plans{
          {2, dataParallel(g, 2, 2)}, {4, dataParallel(g, 4, 4)}, {3, reductionSplit(g, 3)}};
      for (int i = 0; i < randomPlans; ++i) {
        const int devices = 2 + i % 3;
        plans.emplace_back(devices, randomChoice(g, devices, rng));
      }
      for (const auto& [devices, choice] : plans) {
        const plan::ShardPlan p = plan::buildPlan(g, devices, choice);
        CpuBackend backend(devices);
        const Execution run = execute(g, p, backend, inputs);
        for (const OutputCheck& c : compareOutputs(g, run.outputs, r)) {
          if (!isFloat(c.dtype)) {
            continue;
          }
          const double u = unitRoundoff(c.precision);
          if (std::getenv("CHECK_MARGIN_VERBOSE") != nullptr && c.baselineError > 0 &&
              c.error > 2 * c.baselineError) {
            std::printf("  %s seed %d, %d devices: %s: %s (%.0f u)\n", name.c_str(),
                        static_cast<int>(seed), devices, c.tensor.c_str(), describeCheck(c).c_str(),
                        c.error / u);
          }
          samples.push_back(
              Sample{c.baselineError > 0 ? c.error / c.baselineError : -1, c.error / u, c.ok});
        }
      }
    }
    summarize(name, samples);
    all.insert(all.end(), samples.begin(), samples.end());
  }
  summarize("all graphs", all);
  return 0;
}
