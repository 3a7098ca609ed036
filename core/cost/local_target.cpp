// The `local` target: this machine as it is (SPEC §6).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <sched.h>
#include <unistd.h>

#include "core/cost/embedded_targets.hpp"
#include "core/cost/target.hpp"
#include "core/cost/units.hpp"

namespace tapestry::cost {

namespace {

constexpr std::string_view kGenericGpu = "core/cost/targets/local/gpu.yaml";

// The built-in whose device figures fit a GPU of this name ("NVIDIA H100 80GB HBM3").
std::string_view figuresFor(const std::string& gpuName) {
  std::string upper = gpuName;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper.find("H200") != std::string::npos) {
    return "core/cost/targets/h200x8.yaml";
  }
  if (upper.find("H100") != std::string::npos) {
    return "core/cost/targets/h100x8.yaml";
  }
  if (upper.find("A100") != std::string::npos) {
    return "core/cost/targets/a100x8.yaml";
  }
  return kGenericGpu;
}

std::string stemOf(std::string_view path) {
  std::size_t slash = path.rfind('/');
  std::string_view file = path.substr(slash + 1);
  return std::string(file.substr(0, file.rfind('.')));
}

// CPUs this process may run on (the affinity mask), else what the library reports.
int usableCpuCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return CPU_COUNT(&set);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

// The first "model name" of /proc/cpuinfo ("" where there is none).
std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name")) {
      std::size_t colon = line.find(':');
      if (colon == std::string::npos) {
        break;
      }
      std::size_t begin = line.find_first_not_of(" \t", colon + 1);
      return begin == std::string::npos ? std::string() : line.substr(begin);
    }
  }
  return {};
}

// Lower-case letters and digits, every other run of characters one '-'.
std::string slug(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') {
    out.pop_back();
  }
  return out;
}

// "32K", "1024K", "32768K" or "32M" (sysfs cache sizes) in bytes; 0 when unreadable.
std::int64_t sysfsSize(const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const std::string unit = text.substr(used, text.find_first_of(" \n", used) - used);
  const std::int64_t scale = unit.empty()  ? 1
                             : unit == "K" ? std::int64_t{1} << 10
                             : unit == "M" ? std::int64_t{1} << 20
                             : unit == "G" ? std::int64_t{1} << 30
                                           : 0;
  return value > 0 ? static_cast<std::int64_t>(value) * scale : 0;
}

std::int64_t lastLevelCache() {
  const std::filesystem::path root("/sys/devices/system/cpu/cpu0/cache");
  int bestLevel = 0;
  std::int64_t best = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (!entry.path().filename().string().starts_with("index")) {
      continue;
    }
    auto read = [&](const char* name) {
      std::ifstream in(entry.path() / name);
      std::string text;
      std::getline(in, text);
      return text;
    };
    if (read("type") == "Instruction") {
      continue;
    }
    int level = 0;
    try {
      level = std::stoi(read("level"));
    } catch (const std::exception&) {
      continue;
    }
    const std::int64_t size = sysfsSize(read("size"));
    if (size > 0 && level > bestLevel) {
      bestLevel = level;
      best = size;
    }
  }
  return best;
}

std::int64_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0) {
    return 0;
  }
  return static_cast<std::int64_t>(pages) * pageSize;
}

} // namespace

namespace {

GpuProbe& installedGpuProbe() {
  static GpuProbe probe;
  return probe;
}

} // namespace

void setGpuProbe(GpuProbe probe) {
  installedGpuProbe() = std::move(probe);
}

MachineInfo describeMachine() {
  MachineInfo m;
  if (const GpuProbe& probe = installedGpuProbe()) {
    probe(m);
  } else {
    m.gpuNote = "built without CUDA";
  }
  m.cpuCores = usableCpuCores();
  m.ramBytes = physicalMemory();
  m.cpuModel = cpuModelName();
  m.cacheBytes = lastLevelCache();
  return m;
}

std::string calibrationKey(const MachineInfo& machine) {
  if (!machine.gpus.empty()) {
    return "gpu-" + slug(machine.gpus.front().name) + "-x" + std::to_string(machine.gpus.size());
  }
  const std::string model = slug(machine.cpuModel);
  return "cpu-" + (model.empty() ? std::string("unknown") : model) + "-" +
         std::to_string(machine.cpuCores) + "cores";
}

std::string calibrationDirectory() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache != nullptr && cache[0] == '/') {
    return (std::filesystem::path(cache) / "tapestry" / "calibration").string();
  }
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') {
    return (std::filesystem::path(home) / ".cache" / "tapestry" / "calibration").string();
  }
  return {};
}

std::string calibrationPath(const MachineInfo& machine) {
  const std::string dir = calibrationDirectory();
  if (dir.empty()) {
    return {};
  }
  return (std::filesystem::path(dir) / (calibrationKey(machine) + ".yaml")).string();
}

std::string savedCalibration(const MachineInfo& machine) {
  const std::string path = calibrationPath(machine);
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) {
    return {};
  }
  return path;
}

const MachineInfo& probeMachine() {
  static const MachineInfo info = describeMachine();
  return info;
}

Target localTarget(const MachineInfo& machine) {
  if (!machine.gpus.empty()) {
    // One device description for all GPUs: a mixed machine gets the generic figures
    // and the smallest memory.
    std::string_view source = figuresFor(machine.gpus.front().name);
    std::int64_t memory = machine.gpus.front().memory;
    for (const MachineInfo::Gpu& g : machine.gpus) {
      if (figuresFor(g.name) != source) {
        source = kGenericGpu;
      }
      memory = std::min(memory, g.memory);
    }
    Target t = loadEmbeddedTarget(source);
    t.name = "local";
    t.devices.count = static_cast<int>(machine.gpus.size());
    if (memory > 0) {
      t.devices.memory = memory;
    }
    t.nodes.reset();
    t.description =
        "this machine: " + std::to_string(machine.gpus.size()) + " x " + machine.gpus.front().name +
        (machine.gpus.size() > 1 && source == kGenericGpu ? " (and others)" : "") + ", " +
        formatSize(t.devices.memory) + " each (figures of " + stemOf(source) + ")";
    return t;
  }
  Target t = loadEmbeddedTarget("core/cost/targets/cpu-2.yaml");
  t.name = "local";
  t.devices.count = std::clamp(machine.cpuCores, 1, 65536);
  if (machine.ramBytes > 0) {
    t.devices.memory = std::max<std::int64_t>(machine.ramBytes / t.devices.count, 1);
  }
  t.description = "this machine: " + std::to_string(t.devices.count) + " CPU cores as devices, " +
                  formatSize(t.devices.memory) + " each (figures of cpu-2; no GPU: " +
                  (machine.gpuNote.empty() ? std::string("none found") : machine.gpuNote) + ")";
  return t;
}

} // namespace tapestry::cost
