#include "core/cost/target.hpp"

#include <algorithm>

#include "core/cost/units.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cost {

const char* deviceKindName(DeviceKind kind) {
  return kind == DeviceKind::Gpu ? "gpu" : "cpu";
}

const std::vector<std::string>& flopsDTypes() {
  static const std::vector<std::string> names = {
      "float64",     "float32", "tf32",  "float16", "bfloat16", "float8_e4m3fn",
      "float8_e5m2", "int64",   "int32", "int16",   "int8",     "uint8"};
  return names;
}

int Target::nodeOf(int device) const {
  if (device < 0 || device >= devices.count) {
    throw InternalError("device " + std::to_string(device) + " is not a device of target " + name +
                        " (it has " + std::to_string(devices.count) + ")");
  }
  return nodes ? device / nodes->devicesPerNode : 0;
}

bool Target::sameNode(int a, int b) const {
  return nodeOf(a) == nodeOf(b);
}

const LinkSpec& Target::linkBetween(int a, int b) const {
  bool same = sameNode(a, b);
  if (a == b) {
    throw InternalError("linkBetween(" + std::to_string(a) + ", " + std::to_string(b) +
                        "): a device needs no link to itself");
  }
  return same || !nodes ? links : nodes->interNode;
}

std::vector<int> relayGroups(const Target& target) {
  const LinkSpec& link = target.links;
  const LinkSpec& host = target.hostLink();
  const int devices = target.deviceCount();
  if (devices < 2 || target.nodeCount() == devices || link.bandwidth <= host.bandwidth ||
      link.latency > host.latency) {
    return {};
  }
  std::vector<int> groups;
  groups.reserve(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    groups.push_back(target.nodeOf(d));
  }
  return groups;
}

double Target::flopsFor(std::string_view dtype) const {
  auto it = devices.flops.find(dtype);
  if (it == devices.flops.end()) {
    it = devices.flops.find("float32");
    checkInvariant(it != devices.flops.end(), "every target has a float32 rate");
  }
  return it->second;
}

double Target::kernelTime(double flops, double bytes, std::string_view dtype) const {
  return std::max(flops / flopsFor(dtype), bytes / devices.memoryBandwidth) +
         devices.launchOverhead;
}

std::string toString(const Target& target) {
  const DeviceSpec& d = target.devices;
  std::string out = target.name + ": " + std::to_string(d.count) + " " + deviceKindName(d.kind) +
                    " x " + formatSize(d.memory) + ", " + formatBandwidth(d.memoryBandwidth) +
                    ", float32 " + formatRate(target.flopsFor("float32"));
  out +=
      "; links " + formatBandwidth(target.links.bandwidth) + " " + formatTime(target.links.latency);
  if (target.nodes) {
    out += "; " + std::to_string(target.nodes->count) + " nodes of " +
           std::to_string(target.nodes->devicesPerNode) + ", across " +
           formatBandwidth(target.nodes->interNode.bandwidth) + " " +
           formatTime(target.nodes->interNode.latency);
  }
  out += "; host " + formatBandwidth(target.host.bandwidth) + " " + formatTime(target.host.latency);
  return out;
}

} // namespace tapestry::cost
