#include "core/driver/calibrate_command.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <ostream>

#include "backends/calibration.hpp"
#include "backends/executor.hpp"
#include "backends/machine_probe.hpp"
#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/error.hpp"
#include "core/driver/execution.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::driver {

namespace {

using backend::Buffer;
using backend::DType;

// The message with which rank 0 tells the others that it has measured.
constexpr int kCalibratedTag = 3;

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", &utc);
  return buffer;
}

// "AMD EPYC 7B13, 2 cores" or "NVIDIA H100 80GB HBM3 x 8".
std::string machineText(const cost::MachineInfo& m, bool gpu) {
  if (gpu && !m.gpus.empty()) {
    return m.gpus.front().name + " x " + std::to_string(m.gpus.size());
  }
  return (m.cpuModel.empty() ? std::string("unknown CPU") : m.cpuModel) + ", " +
         std::to_string(m.cpuCores) + (m.cpuCores == 1 ? " core" : " cores");
}

// The progress bar: [#####.....] 42% matmul
void drawProgress(std::ostream& err, double fraction, std::string_view what) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(std::lround(fraction * kWidth));
  err << "\rcalibrate [" << std::string(static_cast<std::size_t>(filled), '#')
      << std::string(static_cast<std::size_t>(kWidth - filled), '.') << "] "
      << static_cast<int>(std::lround(fraction * 100)) << "% " << what << "\033[K" << std::flush;
}

// The median difference between a point's two timings above which the text
// summary says the machine was busy. A point's time is a median of repeated
// runs, which on an idle machine moves by a few percent (bench calls a median
// stable within 2%); the shared 2-core VM of 2026-12-02, whose single benches
// of one graph varied 2x, measured 13% and 15% in two calibrations.
constexpr double kBusyPassDifference = 0.1;

// The --format json summary.
Json summaryJson(const CalibrateConfig& config, const cost::Target& measured, double seconds,
                 const std::string& saved, const std::vector<std::pair<double, double>>& ranks) {
  const cost::Profile& p = *measured.profile;
  Json doc = Json::object();
  doc["status"] = "ok";
  doc["backend"] = p.backend;
  doc["machine"] = p.machine;
  doc["devices"] = measured.deviceCount();
  if (measured.nodes && !ranks.empty()) {
    Json link = Json::object();
    link["ranks"] = measured.nodes->count;
    link["latency_s"] = measured.nodes->interNode.latency;
    link["bandwidth_bytes_per_s"] = measured.nodes->interNode.bandwidth;
    Json points = Json::array();
    for (const auto& [bytes, t] : ranks) {
      points.push_back(Json{{"bytes", bytes}, {"seconds", t}});
    }
    link["one_way"] = std::move(points);
    doc["inter_rank"] = std::move(link);
  }
  doc["seconds"] = seconds;
  doc["task_overhead_s"] = p.taskOverhead;
  doc["pass_difference"] = p.timedTwice()
                               ? Json{{"median", p.passDifference}, {"max", p.passDifferenceMax}}
                               : Json(nullptr);
  Json families = Json::array();
  for (const auto& [name, table] : p.kernels) {
    families.push_back(name);
  }
  doc["families"] = std::move(families);
  doc["saved"] = saved.empty() ? Json(nullptr) : Json(saved);
  doc["output"] = config.outputPath.empty() ? Json(nullptr) : Json(config.outputPath);
  return doc;
}

// The text summary: overheads, links, each family's largest measurement, and
// where the result went.
void printSummary(const CalibrateConfig& config, const cost::Target& measured,
                  const std::string& label, double seconds, const std::string& saved,
                  std::ostream& to) {
  const cost::Profile& p = *measured.profile;
  to << "calibrated " << label << " (" << measured.deviceCount() << " devices, backend "
     << p.backend << ") in " << cost::formatTime(seconds) << "\n";
  to << "  task overhead " << cost::formatTime(p.taskOverhead) << "; start overhead "
     << cost::formatTime(p.startOverhead) << "; links "
     << cost::formatBandwidth(measured.links.bandwidth) << " "
     << cost::formatTime(measured.links.latency) << "; host ";
  if (p.hostCopies.empty() || p.hostCopies.back().seconds > 1e-8) {
    to << cost::formatBandwidth(measured.host.bandwidth) << " "
       << cost::formatTime(measured.host.latency) << "\n";
  } else {
    to << "read in place (no copy)\n";
  }
  if (p.timedTwice()) {
    to << "  tables timed twice, the faster of each point kept: the two timings "
       << std::lround(p.passDifference * 100) << "% apart (median), at most "
       << std::lround(p.passDifferenceMax * 100) << "%\n";
    if (p.passDifference > kBusyPassDifference) {
      to << "  note: the machine was busy while it was measured; calibrate again when it is "
            "idle for steadier figures\n";
    }
  }
  if (!p.threadScaling.empty()) {
    to << "  one device, every core against one thread:";
    for (const auto& [family, factor] : p.threadScaling) {
      to << " " << family << " " << std::fixed << std::setprecision(2) << factor << "x";
    }
    to << std::defaultfloat << "\n";
  }
  if (!p.spreadByTime.empty()) {
    to << "  predicted speedups over one device within";
    for (std::size_t i = 0; i < p.spreadByTime.size(); ++i) {
      to << (i == 0 ? " " : ", ") << std::lround(p.spreadByTime[i].spread * 100) << "% at "
         << cost::formatSeconds(p.spreadByTime[i].time);
    }
    to << " on one device (optimize selects one device below that)\n";
    if (!p.spreadByFamily.empty()) {
      to << "  by kernel family:";
      for (const auto& [family, spread] : p.spreadByFamily) {
        to << " " << family << " " << std::lround(spread * 100) << "%";
      }
      to << " (weighed by a graph's time in each)\n";
    }
  } else if (p.spread > 0) {
    to << "  predicted speedups over one device within " << std::lround(p.spread * 100)
       << "% (optimize selects one device below that)\n";
  }
  for (const auto& [name, table] : p.kernels) {
    const cost::ProfilePoint& big = table.alone.back();
    to << "  " << name << ": " << table.alone.size() << " sizes, up to "
       << (table.measure == cost::WorkMeasure::Flops ? cost::formatFlops(big.size)
                                                     : cost::formatBytes(big.size))
       << " in " << cost::formatSeconds(big.seconds);
    if (!table.all.empty()) {
      to << " alone, " << cost::formatSeconds(table.all.back().seconds)
         << " with every device busy";
    }
    to << "\n";
  }
  if (measured.nodes && config.link != nullptr) {
    to << "  " << measured.nodes->count << " ranks as nodes of " << measured.nodes->devicesPerNode
       << (measured.nodes->devicesPerNode == 1 ? " device" : " devices") << "; between ranks "
       << cost::formatBandwidth(measured.nodes->interNode.bandwidth) << " "
       << cost::formatTime(measured.nodes->interNode.latency) << "\n";
  }
  if (!saved.empty()) {
    to << "  saved as this machine's calibration: " << saved << " (--target local uses it)\n";
  } else if (config.link != nullptr) {
    to << "  not saved as this machine's calibration: a target of " << config.link->ranks()
       << " ranks\n";
  } else if (config.save) {
    to << "  not saved as this machine's calibration: --devices " << config.devices
       << " is not the whole machine\n";
  }
  if (!config.outputPath.empty() && config.outputPath != "-") {
    to << "  -> " << config.outputPath << "\n";
  }
}

// The usage errors of calibrate's flags, found before a minute of measuring.
void checkCalibrateFlags(const CalibrateConfig& config) {
  if (!(config.budgetSeconds >= 0.05) || !std::isfinite(config.budgetSeconds)) {
    throw UsageError("--budget-seconds: expected a number of seconds of at least 0.05");
  }
  if (!config.outputPath.empty() && config.outputPath != "-") {
    // Found out before a minute of measuring, not after.
    const std::filesystem::path dir = std::filesystem::path(config.outputPath).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
      throw Error(SourceLocation{config.outputPath, 0, 0, {}},
                  "cannot write output file: no directory " + dir.string());
    }
  }
  if (config.devices < 0) {
    throw UsageError("--devices must be at least 1");
  }
  if (config.link != nullptr && config.outputPath.empty()) {
    throw UsageError("under mpirun, calibrate writes a target of " +
                     std::to_string(config.link->ranks()) +
                     " ranks (one node each): give -o TARGET.yaml");
  }
}

} // namespace

int calibrateCommand(const CalibrateConfig& config, std::ostream& out, std::ostream& err) {
  checkCalibrateFlags(config);
  requireBackend(config.backend); // exit 4 for cuda without a GPU, before any work
  backend::installGpuProbe();
  const cost::MachineInfo& machine = cost::probeMachine();
  const bool gpu = config.backend == "cuda";
  if (gpu && machine.gpus.empty()) {
    throw BackendUnavailable("no CUDA GPU found (" + machine.gpuNote + ")");
  }
  // The roofline target of this machine is the starting point; a CPU
  // calibration of a GPU machine describes its cores.
  cost::MachineInfo described = machine;
  if (!gpu) {
    described.gpus.clear();
    described.gpuNote = "calibrated on the CPU backend";
  }
  cost::Target base = cost::localTarget(described);
  if (config.devices > 0) {
    base.devices.count = config.devices;
  }
  const std::string label = machineText(machine, gpu);
  base.name = "local";
  base.description = "this machine, calibrated: " + label + ", " +
                     std::to_string(base.devices.count) + " " + (gpu ? "GPUs" : "CPU cores") +
                     " as devices";

  const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::load({});
  const std::unique_ptr<backend::Backend> backend = makeBackend(config.backend, base.devices.count);
  backend::CalibrationOptions options;
  options.budgetSeconds = config.budgetSeconds;
  if (config.progress) {
    options.progress = [&err](double fraction, std::string_view what) {
      drawProgress(err, fraction, what);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<double, double>> rankPoints;
  if (config.link != nullptr) {
    if (config.progress) {
      drawProgress(err, 0, "between ranks");
    }
    rankPoints = backend::measureRankLink(*config.link, 0.1 * config.budgetSeconds);
    if (config.link->rank() != 0) {
      // Wait for rank 0's measurements without a busy core: a receive sleeps.
      std::int64_t done = 0;
      const std::atomic<bool> stop{false};
      config.link->receive(0, kCalibratedTag,
                           std::span<std::byte>(reinterpret_cast<std::byte*>(&done), sizeof done),
                           stop);
      return 0;
    }
  }
  cost::Target measured =
      backend::calibrate(*backend, library, std::move(base), label, today(), options);
  if (measured.profile && measured.profile->backend == "cpu") {
    measured.profile->cacheBytes = machine.cacheBytes; // the simulator's floor for constants
  }
  if (config.link != nullptr) {
    const int ranks = config.link->ranks();
    for (int r = 1; r < ranks; ++r) {
      Buffer done = Buffer::host(DType::Int64, std::vector<std::int64_t>{1});
      config.link->send(r, kCalibratedTag, std::move(done));
    }
    config.link->flush();
    // One node per rank, as `mpirun -n K run` maps them (docs/distributed.md).
    const int perNode = std::max(1, measured.devices.count / ranks);
    measured.devices.count = perNode * ranks;
    measured.nodes = cost::NodeSpec{ranks, perNode, backend::fitLink(rankPoints)};
    measured.name = "local-" + std::to_string(ranks) + "-ranks";
    measured.description += "; " + std::to_string(ranks) + " MPI ranks as nodes of " +
                            std::to_string(perNode) + (perNode == 1 ? " device" : " devices");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (config.progress) {
    err << "\r\033[K" << std::flush;
  }

  // Only a calibration of the whole local machine stands for `--target local`.
  const bool wholeMachine =
      config.devices == 0 ||
      config.devices == (gpu ? static_cast<int>(machine.gpus.size()) : machine.cpuCores);
  const std::string yaml =
      "# Measured by `tapestry calibrate` (docs/cost-model.md).\n" + cost::toYaml(measured);
  std::string saved;
  if (config.save && wholeMachine && config.link == nullptr) {
    saved = cost::calibrationPath(gpu ? machine : described);
    if (saved.empty()) {
      throw Error("cannot save the calibration: neither XDG_CACHE_HOME nor HOME is set "
                  "(use -o FILE and --target FILE)");
    }
    std::filesystem::create_directories(std::filesystem::path(saved).parent_path());
    writeFileAtomically(saved, yaml, out);
  }
  if (!config.outputPath.empty()) {
    writeFileAtomically(config.outputPath, yaml, out);
  }

  if (config.json && config.outputPath != "-") {
    out << summaryJson(config, measured, seconds, saved, rankPoints).dump(2) << "\n";
  } else if (!config.quiet && !config.json) {
    printSummary(config, measured, label, seconds, saved,
                 config.outputPath == "-" ? err : out); // stdout may hold the target
  }
  return 0;
}

} // namespace tapestry::driver
