// Targets (SPEC §6): the machine a plan is for. Devices with their memory, memory
// bandwidth and compute rate per dtype; links between devices (within a node and,
// for multi-node targets, across nodes); the host link. Loaded from built-ins
// embedded at build time (core/cost/targets/*.yaml), from YAML files, or from the
// "target" object of a plan. All figures are in SI base units: bytes, bytes/s,
// FLOP/s, seconds. docs/targets.md describes the format and every built-in figure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/profile.hpp"
#include "core/diag/source.hpp"
#include "core/json/json.hpp"

namespace tapestry::cost {

enum class DeviceKind { Gpu, Cpu };

const char* deviceKindName(DeviceKind kind); // "gpu", "cpu"

// A point-to-point channel: a transfer of B bytes takes latency + B / bandwidth.
struct LinkSpec {
  double bandwidth = 0; // bytes/s, in one direction
  double latency = 0;   // seconds

  double transferTime(double bytes) const { return latency + bytes / bandwidth; }
  bool operator==(const LinkSpec&) const = default;
};

// Every device of a target is the same kind of device.
struct DeviceSpec {
  int count = 0; // devices in the whole target (all nodes)
  DeviceKind kind = DeviceKind::Cpu;
  std::int64_t memory = 0;    // bytes per device
  double memoryBandwidth = 0; // bytes/s per device
  // FLOP/s per device by dtype ("float32", "tf32", "bfloat16", ...). float32 is
  // always present; other dtypes fall back to it (see Target::flopsFor).
  std::map<std::string, double, std::less<>> flops;
  double launchOverhead = 0; // seconds added to every kernel

  bool operator==(const DeviceSpec&) const = default;
};

// Multi-node targets: devices are numbered node by node (node n holds devices
// n*devicesPerNode .. (n+1)*devicesPerNode-1). `links` connect devices of one node;
// `interNode` connects devices of different nodes.
struct NodeSpec {
  int count = 0;
  int devicesPerNode = 0;
  LinkSpec interNode;

  bool operator==(const NodeSpec&) const = default;
};

struct Target {
  std::string name;
  std::string description; // free text, "" when none
  DeviceSpec devices;
  LinkSpec links; // between two devices of the same node, per ordered pair, per direction
  LinkSpec host;  // between a device and its host, per device, per direction
  std::optional<NodeSpec> nodes;
  // What `tapestry calibrate` measured (SPEC §6); the simulator prefers it to
  // the roofline figures above wherever it has a table.
  std::optional<Profile> profile;

  int deviceCount() const { return devices.count; }
  int nodeCount() const { return nodes ? nodes->count : 1; }
  // The node of a device (0 without `nodes`). A device outside 0..deviceCount()-1
  // is a bug (InternalError).
  int nodeOf(int device) const;
  bool sameNode(int a, int b) const;
  // The channel from device a to device b (a != b): `links` within a node,
  // `nodes.interNode` across nodes. a == b or an unknown device is a bug.
  const LinkSpec& linkBetween(int a, int b) const;
  // The channel between any device and its host (every node has its own host).
  const LinkSpec& hostLink() const { return host; }
  // FLOP/s of one device for `dtype`; float32's rate for a dtype with no figure.
  double flopsFor(std::string_view dtype) const;
  // SPEC §7: a kernel of `flops` operations moving `bytes` of device memory takes
  // max(flops / rate(dtype), bytes / memory_bandwidth) + launch_overhead.
  double kernelTime(double flops, double bytes, std::string_view dtype) const;

  bool operator==(const Target&) const = default;
};

// Per device, the group of devices that relay graph inputs from the host
// among themselves (plan::PlanOptions::relayGroups): the devices of one node,
// when the link between two of them is faster than the host link (more
// bandwidth, no more latency: h100x8's NVLink against its PCIe). Empty when
// no two devices relay (the CPU targets, whose host copies cost the same as
// copies between devices, or nothing where the backend reads the host in place).
std::vector<int> relayGroups(const Target& target);

// One line: "h100x8: 8 gpu x 80GiB, 3.35TB/s, float32 67T; links 450GB/s 2us; host 55GB/s 10us".
std::string toString(const Target& target);

// The dtypes a target may give a rate for: the graph dtypes that compute, plus
// "tf32" (float32 matmuls on tensor cores).
const std::vector<std::string>& flopsDTypes();

// "local" first, then the embedded built-ins sorted by name.
std::vector<std::string> builtinTargetNames();

// A built-in name, else a YAML file path ("-" is standard input). Errors are
// located Errors (exit 1); neither a built-in nor a file is
//   unknown target "x": not a built-in (local, 2x-h100x8, ...) and no such file
Target loadTarget(const std::string& nameOrPath);
// Parses target YAML; every problem is an Error located in `file`.
Target loadTargetYaml(const SourceFile& file);

// The resolved target as stored in plans (numbers in SI base units). Optional parts
// ("description" when empty, "nodes" when absent) are left out.
Json toJson(const Target& target);
// The inverse of toJson (exact: targetFromJson(toJson(t)) == t), with the same
// checks as YAML loading; errors are located at the offending value.
Target targetFromJson(const json::Value& value);

// What `local` is built from; probeMachine() asks this machine, tests make their own.
struct MachineInfo {
  struct Gpu {
    std::string name; // e.g. "NVIDIA H100 80GB HBM3"
    std::int64_t memory = 0;
  };
  std::vector<Gpu> gpus; // usable CUDA GPUs (empty without CUDA support or GPUs)
  std::string gpuNote;   // why there are none, e.g. "built without CUDA"
  int cpuCores = 1;
  std::int64_t ramBytes = 0; // 0 when unknown
  std::string cpuModel;      // /proc/cpuinfo's "model name", "" when unknown
  // The CPU's last-level cache (the highest level of data or unified cache
  // the first CPU reports in /sys/devices/system/cpu/cpu0/cache), 0 when unknown.
  std::int64_t cacheBytes = 0;
};
// How `local` learns of this machine's GPUs: fills `gpus`, or `gpuNote` with why
// there are none. core/cost knows no GPU API; the CUDA backend installs its
// probe (backend::installGpuProbe, which the CLI calls at start). Install it
// before the first probeMachine(); without one, `local` has no GPUs ("built
// without CUDA").
using GpuProbe = std::function<void(MachineInfo&)>;
void setGpuProbe(GpuProbe probe);
// Asks this machine now: the GPU probe, then CPU cores and RAM.
MachineInfo describeMachine();
// describeMachine() once per process, cached.
const MachineInfo& probeMachine();
// The `local` target for a machine: one device per GPU, with the figures of the
// matching built-in (H100 -> h100x8, H200 -> h200x8, A100 -> a100x8, any other GPU
// the conservative core/cost/targets/local/gpu.yaml) and the GPU's own memory;
// with no GPU, one device per CPU core with cpu-2's figures and RAM / cores each.
Target localTarget(const MachineInfo& machine);

// Saved calibrations (`tapestry calibrate`): one target file per kind of
// machine, in $XDG_CACHE_HOME/tapestry/calibration (else
// ~/.cache/tapestry/calibration), named by a key of the CPU model and core
// count, or of the GPU name and count ("cpu-amd-epyc-7b13-2cores"), so that a
// new machine starts without one.
std::string calibrationKey(const MachineInfo& machine);
std::string calibrationDirectory();                      // "" when neither variable gives a home
std::string calibrationPath(const MachineInfo& machine); // where calibrate saves
// The saved calibration's path for this machine, "" when there is none.
std::string savedCalibration(const MachineInfo& machine);
// What `--target local` resolves to and where it came from: the saved
// calibration when there is one (its file loaded, renamed "local"), else
// localTarget(probeMachine()). `calibration` is the file's path or "".
struct LocalTarget {
  Target target;
  std::string calibration;
};
LocalTarget loadLocalTarget();

// The target as a YAML file that loadTargetYaml reads back equal (numbers in
// base units with their unit suffix, shortest round-trip digits).
std::string toYaml(const Target& target);

} // namespace tapestry::cost
