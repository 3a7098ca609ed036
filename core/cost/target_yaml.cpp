// Targets as YAML (toYaml): what `calibrate` writes and `--target FILE`
// reads back equal (target_io.cpp reads it).
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include "core/cost/target.hpp"
#include "core/cost/units.hpp"

namespace tapestry::cost {

namespace {

// The shortest text that reads back as the same double.
std::string exact(double v) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, end);
}

// A YAML double-quoted string.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

std::string linkYaml(const LinkSpec& link) {
  return "{bandwidth: " + exact(link.bandwidth) + "B/s, latency: " + exact(link.latency) + "s}";
}

std::string pointsYaml(const std::vector<ProfilePoint>& points) {
  std::string out = "[";
  for (std::size_t i = 0; i < points.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::string("[") + exact(points[i].size) + ", " +
           exact(points[i].seconds) + "]";
  }
  return out + "]";
}

// A flow map of numbers by family name: {matmul: 1.7, conv: 1.9}.
std::string familyMap(const std::map<std::string, double, std::less<>>& values) {
  std::string out = "{";
  for (const auto& [family, value] : values) {
    out += (out.size() > 1 ? ", " : "") + family + ": " + exact(value);
  }
  return out + "}";
}

} // namespace

std::string toYaml(const Target& target) {
  const DeviceSpec& d = target.devices;
  std::string y = "name: " + quoted(target.name) + "\n";
  if (!target.description.empty()) {
    y += "description: " + quoted(target.description) + "\n";
  }
  y += "devices:\n";
  y += "  count: " + std::to_string(d.count) + "\n";
  y += "  kind: " + std::string(deviceKindName(d.kind)) + "\n";
  y += "  memory: " + std::to_string(d.memory) + "B\n";
  y += "  memory_bandwidth: " + exact(d.memoryBandwidth) + "B/s\n";
  y += "  flops:\n";
  for (const std::string& dtype : flopsDTypes()) {
    if (auto it = d.flops.find(dtype); it != d.flops.end()) {
      y += "    " + dtype + ": " + exact(it->second) + "\n";
    }
  }
  y += "  launch_overhead: " + exact(d.launchOverhead) + "s\n";
  y += "links: " + linkYaml(target.links) + "\n";
  y += "host: " + linkYaml(target.host) + "\n";
  if (target.nodes) {
    y += "nodes:\n  count: " + std::to_string(target.nodes->count) +
         "\n  devices_per_node: " + std::to_string(target.nodes->devicesPerNode) +
         "\n  inter_node: " + linkYaml(target.nodes->interNode) + "\n";
  }
  if (const std::optional<Profile>& p = target.profile) {
    y += "profile:\n";
    if (!p->machine.empty()) {
      y += "  machine: " + quoted(p->machine) + "\n";
    }
    y += "  backend: " + p->backend + "\n";
    if (!p->date.empty()) {
      y += "  date: " + quoted(p->date) + "\n";
    }
    y += "  devices: " + std::to_string(p->devices) + "\n";
    y += "  task_overhead: " + exact(p->taskOverhead) + "s\n";
    y += "  start_overhead: " + exact(p->startOverhead) + "s\n";
    if (!p->threadScaling.empty()) {
      y += "  thread_scaling: " + familyMap(p->threadScaling) +
           "  # one device, every core against one thread\n";
    }
    if (p->spread > 0) {
      y += "  spread: " + exact(p->spread) +
           "  # a predicted speedup over one device is this far off at most (relative)\n";
    }
    if (!p->spreadByTime.empty()) {
      y += "  spread_by_time: [";
      for (std::size_t i = 0; i < p->spreadByTime.size(); ++i) {
        y += (i == 0 ? "[" : ", [") + exact(p->spreadByTime[i].time) + ", " +
             exact(p->spreadByTime[i].spread) + "]";
      }
      y += "]  # [one-device seconds, spread]: the spread by the graph's size\n";
    }
    if (!p->spreadByFamily.empty()) {
      y += "  spread_by_family: " + familyMap(p->spreadByFamily) +
           "  # by kernel family, weighed by a graph's time in each\n";
    }
    {
      y += "  copies:\n";
      y += std::string("    on_device: ") + (p->copiesOnDevice ? "true" : "false") +
           "  # a transfer holds its destination device while it copies\n";
      if (!p->linkCopies.empty() || !p->hostCopies.empty()) {
        y += "    # [bytes, seconds] of one transfer\n";
      }
      if (!p->linkCopies.empty()) {
        y += "    links: " + pointsYaml(p->linkCopies) + "\n";
      }
      if (!p->hostCopies.empty()) {
        y += "    host: " + pointsYaml(p->hostCopies) + "\n";
      }
      if (!p->linkCopiesAll.empty()) {
        y += "    links_all: " + pointsYaml(p->linkCopiesAll) + "\n";
      }
      if (!p->hostCopiesAll.empty()) {
        y += "    host_all: " + pointsYaml(p->hostCopiesAll) + "\n";
      }
    }
    if (p->timedTwice()) {
      y += "  pass_difference: " + exact(p->passDifference) +
           "  # the tables' two timings of a point apart by this (median, relative)\n";
      y += "  pass_difference_max: " + exact(p->passDifferenceMax) + "  # and at most this\n";
    }
    if (p->cacheBytes > 0) {
      y += "  last_level_cache: " + std::to_string(p->cacheBytes) +
           "B  # constants beyond it are read from memory on every run\n";
    }
    y += "  kernels:\n";
    for (const ProfileEntry& e : profileEntries(*p)) {
      y += "    " + std::string(e.name) + ":  # " + e.doc + "\n";
      y += "      size: " + std::string(workMeasureName(e.table->measure)) + "\n";
      y += "      alone: " + pointsYaml(e.table->alone) + "\n";
      if (!e.table->all.empty()) {
        y += "      all: " + pointsYaml(e.table->all) + "\n";
      }
    }
  }
  return y;
}

} // namespace tapestry::cost
