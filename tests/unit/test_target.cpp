// Targets (SPEC §6): units, built-ins, YAML errors, link queries, JSON, `local`.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/json/json.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::cost;
using tapestry::testing::Failure;
using tapestry::testing::failureOf;

namespace {

const std::string kTestdata = TAPESTRY_TESTDATA_DIR;

template <class F> std::string errorOf(F f) {
  const Failure failure = failureOf(f);
  if (failure.code == ExitCode::Ok) {
    FAIL("expected an error");
  }
  CHECK(failure.code == ExitCode::InvalidInput);
  return failure.what;
}

std::string sizeError(const std::string& text) {
  try {
    parseSize(text);
  } catch (const Error& e) {
    return e.message();
  }
  FAIL("expected an error for " << text);
  return {};
}

template <class Parse> std::string quantityError(Parse parse, const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.message();
  }
  FAIL("expected an error for " << text);
  return {};
}

// A testdata file, named relative to testdata/ as diagnostics show it.
SourceFile testdataFile(const std::string& relative) {
  return SourceFile(relative, SourceFile::read(kTestdata + "/" + relative).text());
}

Target builtin(const std::string& name) {
  Target t = loadTarget(name);
  INFO(toString(t));
  return t;
}

Target roundTripText(const Target& t, const std::string& name = "t.json") {
  json::Document doc = json::Document::parse(SourceFile(name, toJson(t).dump(2)));
  return targetFromJson(json::Value(doc));
}

std::string jsonError(const std::string& text) {
  return errorOf([&] {
    json::Document doc = json::Document::parse(SourceFile("t.json", text));
    targetFromJson(json::Value(doc));
  });
}

constexpr std::int64_t GiB = std::int64_t{1} << 30;

} // namespace

TEST_CASE("sizes: every suffix, decimal and binary, exact", "[units]") {
  CHECK(parseSize("512") == 512);
  CHECK(parseSize("512B") == 512);
  CHECK(parseSize("1KB") == 1000);
  CHECK(parseSize("1kB") == 1000);
  CHECK(parseSize("2MB") == 2000000);
  CHECK(parseSize("80GB") == 80000000000);
  CHECK(parseSize("2TB") == 2000000000000);
  CHECK(parseSize("1KiB") == 1024);
  CHECK(parseSize("512MiB") == 512 * 1048576);
  CHECK(parseSize("80GiB") == 80 * GiB);
  CHECK(parseSize("1.5TiB") == 1649267441664);
  CHECK(parseSize("0.5KB") == 500);
  CHECK(parseSize("0.5KiB") == 512);
  CHECK(parseSize("0.0009765625TiB") == GiB); // exact although 9765625 * 2^40 overflows
  CHECK(parseSize("1e3B") == 1000);
  CHECK(parseSize("141.000GB") == 141000000000);
  CHECK(parseSize("0") == 0);
  CHECK(parseSize("-8GiB") == -8 * GiB); // parsed, so the loader can say "greater than 0"
  CHECK(parseSize("8388607TiB") == std::int64_t{8388607} << 40); // 2^63 - 2^40, the largest TiB
  SECTION("one optional space") {
    CHECK(parseSize("80 GiB") == 80 * GiB);
    CHECK(parseSize("512 B") == 512);
  }
}

TEST_CASE("sizes: errors say what was expected", "[units]") {
  const std::string expected =
      ": expected a number followed by B, KB, MB, GB, TB, KiB, MiB, GiB or TiB";
  CHECK(sizeError("80Gb") == "bad size \"80Gb\"" + expected);
  CHECK(sizeError("80gib") == "bad size \"80gib\"" + expected);
  CHECK(sizeError("80  GiB") == "bad size \"80  GiB\"" + expected);
  CHECK(sizeError("80GiB ") == "bad size \"80GiB \"" + expected);
  CHECK(sizeError(" 80GiB") == "bad size \" 80GiB\"" + expected);
  CHECK(sizeError("80 ") == "bad size \"80 \"" + expected);
  CHECK(sizeError("GiB") == "bad size \"GiB\"" + expected);
  CHECK(sizeError("") == "bad size \"\"" + expected);
  CHECK(sizeError("1.GiB") == "bad size \"1.GiB\"" + expected);
  CHECK(sizeError(".5GiB") == "bad size \".5GiB\"" + expected);
  CHECK(sizeError("1e GiB") == "bad size \"1e GiB\"" + expected);
  CHECK(sizeError("80GiB/s") == "bad size \"80GiB/s\"" + expected);
  CHECK(sizeError("0.1KiB") == "bad size \"0.1KiB\": is not a whole number of bytes");
  CHECK(sizeError("1.5B") == "bad size \"1.5B\": is not a whole number of bytes");
  CHECK(sizeError("9000000TiB") == "bad size \"9000000TiB\": is too large");
  CHECK(sizeError("8388608TiB") == "bad size \"8388608TiB\": is too large");
  CHECK(sizeError("1e300B") == "bad size \"1e300B\": is too large");
  CHECK(sizeError("9223372036854775808") == "bad size \"9223372036854775808\": is too large");
  CHECK(parseSize("9223372036854775807") == 9223372036854775807);
  CHECK(sizeError("123456789012345678901B") ==
        "bad size \"123456789012345678901B\": has too many digits");
}

TEST_CASE("bandwidths, rates and times: every suffix, correctly rounded", "[units]") {
  SECTION("bandwidths") {
    CHECK(parseBandwidth("3.35TB/s") == 3.35e12);
    CHECK(parseBandwidth("450GB/s") == 450e9);
    CHECK(parseBandwidth("55GB/s") == 55e9);
    CHECK(parseBandwidth("2039GB/s") == 2039e9);
    CHECK(parseBandwidth("12.5 MB/s") == 12.5e6);
    CHECK(parseBandwidth("1KB/s") == 1e3);
    CHECK(parseBandwidth("1kB/s") == 1e3);
    CHECK(parseBandwidth("10B/s") == 10);
    CHECK(parseBandwidth("900GiB/s") == 900.0 * 1073741824.0);
    CHECK(parseBandwidth("1KiB/s") == 1024);
    CHECK(parseBandwidth("1MiB/s") == 1048576);
    CHECK(parseBandwidth("1TiB/s") == 1099511627776.0);
    CHECK(parseBandwidth("3350000000000.0") == 3.35e12); // plain: bytes/s, as toJson writes
    CHECK(quantityError(parseBandwidth, "3.35TB") ==
          "bad bandwidth \"3.35TB\": expected a number followed by B/s, KB/s, MB/s, GB/s, TB/s, "
          "KiB/s, MiB/s, GiB/s or TiB/s");
    CHECK(quantityError(parseBandwidth, "400Gb/s").starts_with("bad bandwidth \"400Gb/s\": "));
    CHECK(quantityError(parseBandwidth, "1e999GB/s") ==
          "bad bandwidth \"1e999GB/s\": is out of range");
  }
  SECTION("rates") {
    CHECK(parseRate("67T") == 67e12);
    CHECK(parseRate("989T") == 989e12);
    CHECK(parseRate("989.5T") == 989.5e12);
    CHECK(parseRate("494.5T") == 494.5e12);
    CHECK(parseRate("1.2P") == 1.2e15);
    CHECK(parseRate("500G") == 500e9);
    CHECK(parseRate("2M") == 2e6);
    CHECK(parseRate("3k") == 3e3);
    CHECK(parseRate("3K") == 3e3);
    CHECK(parseRate("19.5 T") == 19.5e12);
    CHECK(parseRate("100") == 100);
    CHECK(quantityError(parseRate, "67t") ==
          "bad rate \"67t\": expected a number of FLOP/s, optionally followed by k, M, G, T or P");
    CHECK(quantityError(parseRate, "67TFLOPS").starts_with("bad rate \"67TFLOPS\": "));
  }
  SECTION("times") {
    CHECK(parseTime("2us") == 2e-6);
    CHECK(parseTime("10us") == 10e-6);
    CHECK(parseTime("4us") == 4e-6);
    CHECK(parseTime("5 \u00b5s") == 5e-6);
    CHECK(parseTime("1ms") == 1e-3);
    CHECK(parseTime("0.5s") == 0.5);
    CHECK(parseTime("100ns") == 1e-7);
    CHECK(parseTime("0.002ms") == 2e-6);
    CHECK(parseTime("3") == 3);
    CHECK(parseTime("5e-06") == 5e-6); // as toJson writes
    CHECK(parseTime("0") == 0);
    CHECK(quantityError(parseTime, "2usec") ==
          "bad time \"2usec\": expected a number followed by s, ms, us, \u00b5s or ns");
    CHECK(quantityError(parseTime, "2 sec").starts_with("bad time \"2 sec\": "));
    CHECK(quantityError(parseTime, "1e-400s") == "bad time \"1e-400s\": is out of range");
  }
}

TEST_CASE("quantities format readably", "[units]") {
  CHECK(formatSize(80 * GiB) == "80GiB");
  CHECK(formatSize(141000000000) == "141GB");
  CHECK(formatSize(1649267441664) == "1.5TiB");
  CHECK(formatSize(1536 * GiB) == "1.5TiB");
  CHECK(formatSize(1537 * GiB) == "1.501TiB"); // 4 significant digits, not exact
  CHECK(formatSize(512) == "512B");
  CHECK(formatSize(1536) == "1.5KiB");
  CHECK(formatSize(12345678901) == "11.5GiB");
  CHECK(formatBandwidth(3.35e12) == "3.35TB/s");
  CHECK(formatBandwidth(450e9) == "450GB/s");
  CHECK(formatRate(989.5e12) == "989.5T");
  CHECK(formatRate(1.2e15) == "1.2P");
  CHECK(formatRate(50) == "50");
  CHECK(formatTime(2e-6) == "2us");
  CHECK(formatTime(0.5) == "500ms");
  CHECK(formatTime(1e-7) == "100ns");
  CHECK(formatTime(0) == "0s");
}

TEST_CASE("built-in targets load with their published figures", "[builtins]") {
  CHECK(builtinTargetNames() ==
        std::vector<std::string>{"local", "2x-h100x8", "a100x8", "cpu-2", "h100x8", "h200x8"});

  for (const std::string& name : builtinTargetNames()) {
    INFO(name);
    Target t = loadTarget(name);
    CHECK(t.name == name);
    CHECK(!t.description.empty());
    CHECK(t.devices.count >= 1);
    CHECK(t.devices.memory >= GiB);
    CHECK(t.devices.memoryBandwidth >= 1e9);
    CHECK(t.flopsFor("float32") >= 1e9);
    CHECK(t.devices.launchOverhead > 0);
    CHECK(t.devices.launchOverhead < 1e-4);
    CHECK(t.links.bandwidth > 0);
    CHECK(t.host.bandwidth > 0);
    CHECK(t.links.latency < 1e-4);
    CHECK(t.host.latency < 1e-4);
    for (const auto& [dtype, rate] : t.devices.flops) {
      // Narrower types never compute slower than float32.
      if (dtype != "float64") {
        CHECK(rate >= t.flopsFor("float32"));
      }
    }
    if (t.devices.kind == DeviceKind::Gpu) {
      CHECK(t.links.bandwidth > t.host.bandwidth);
      CHECK(t.flopsFor("bfloat16") > t.flopsFor("float32"));
    }
    CHECK(targetFromJson(json::Value(toJson(t))) == t);
  }

  SECTION("cpu-2") {
    Target t = builtin("cpu-2");
    CHECK(t.devices.count == 2);
    CHECK(t.devices.kind == DeviceKind::Cpu);
    CHECK(t.devices.memory == 8 * GiB);
    CHECK(t.devices.memoryBandwidth == 10e9);
    CHECK(t.flopsFor("float32") == 50e9);
    CHECK(t.flopsFor("float64") == 25e9);
    CHECK(t.links == LinkSpec{10e9, 1e-6});
    CHECK(t.host == LinkSpec{10e9, 1e-6});
    CHECK(!t.nodes);
  }
  SECTION("h100x8: DGX H100") {
    Target t = builtin("h100x8");
    CHECK(t.devices.count == 8);
    CHECK(t.devices.kind == DeviceKind::Gpu);
    CHECK(t.devices.memory == 80 * GiB);
    CHECK(t.devices.memoryBandwidth == 3.35e12);
    CHECK(t.flopsFor("float64") == 67e12);
    CHECK(t.flopsFor("float32") == 67e12);
    CHECK(t.flopsFor("tf32") == 494.5e12);
    CHECK(t.flopsFor("bfloat16") == 989.5e12);
    CHECK(t.flopsFor("float16") == 989.5e12);
    CHECK(t.flopsFor("float8_e4m3fn") == 1979e12);
    CHECK(t.flopsFor("int8") == 1979e12);
    CHECK(t.devices.launchOverhead == 4e-6);
    CHECK(t.links == LinkSpec{450e9, 2e-6});
    CHECK(t.host == LinkSpec{55e9, 10e-6});
    CHECK(!t.nodes);
    CHECK(toString(t) ==
          "h100x8: 8 gpu x 80GiB, 3.35TB/s, float32 67T; links 450GB/s 2us; host 55GB/s 10us");
  }
  SECTION("h200x8: H100 compute, more and faster memory") {
    Target t = builtin("h200x8");
    Target h100 = builtin("h100x8");
    CHECK(t.devices.memory == 141000000000);
    CHECK(t.devices.memoryBandwidth == 4.8e12);
    CHECK(t.devices.flops == h100.devices.flops);
    CHECK(t.links == h100.links);
    CHECK(t.host == h100.host);
  }
  SECTION("a100x8: DGX A100") {
    Target t = builtin("a100x8");
    CHECK(t.devices.count == 8);
    CHECK(t.devices.memory == 80 * GiB);
    CHECK(t.devices.memoryBandwidth == 2039e9);
    CHECK(t.flopsFor("float64") == 19.5e12);
    CHECK(t.flopsFor("float32") == 19.5e12);
    CHECK(t.flopsFor("tf32") == 156e12);
    CHECK(t.flopsFor("bfloat16") == 312e12);
    CHECK(t.flopsFor("float16") == 312e12);
    CHECK(t.flopsFor("int8") == 624e12);
    CHECK(t.flopsFor("float8_e4m3fn") == 19.5e12); // no FP8 on A100: float32's rate
    CHECK(t.links == LinkSpec{300e9, 2e-6});
    CHECK(t.host == LinkSpec{25e9, 10e-6});
  }
  SECTION("2x-h100x8: two DGX H100 nodes") {
    Target t = builtin("2x-h100x8");
    Target h100 = builtin("h100x8");
    CHECK(t.devices.count == 16);
    Target oneNode = t;
    oneNode.devices.count = 8;
    CHECK(oneNode.devices == h100.devices);
    CHECK(t.links == h100.links);
    CHECK(t.host == h100.host);
    REQUIRE(t.nodes);
    CHECK(t.nodes->count == 2);
    CHECK(t.nodes->devicesPerNode == 8);
    CHECK(t.nodes->interNode == LinkSpec{50e9, 5e-6});
    CHECK(t.nodeCount() == 2);
  }
}

// Over 120 lines: a table of bad target files, one row per located diagnostic.
TEST_CASE("target YAML errors are located at the offending value", "[yaml]") {
  struct Case {
    const char* file;
    std::string diagnostic;
  };
  const std::vector<Case> cases = {
      {"bad_size_unit.yaml",
       "bad/targets/bad_size_unit.yaml:5:11: error: devices.memory: bad size \"80Gb\": expected a "
       "number followed by B, KB, MB, GB, TB, KiB, MiB, GiB or TiB\n"
       "  memory: 80Gb\n"
       "          ^\n"},
      {"bad_bandwidth_unit.yaml",
       "bad/targets/bad_bandwidth_unit.yaml:6:21: error: devices.memory_bandwidth: bad bandwidth "
       "\"3.35TB\": expected a number followed by B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s "
       "or TiB/s\n"
       "  memory_bandwidth: 3.35TB\n"
       "                    ^\n"},
      {"bad_rate_unit.yaml",
       "bad/targets/bad_rate_unit.yaml:7:20: error: devices.flops.float32: bad rate \"67TFLOPS\": "
       "expected a number of FLOP/s, optionally followed by k, M, G, T or P\n"
       "  flops: {float32: 67TFLOPS}\n"
       "                   ^\n"},
      {"bad_time_unit.yaml",
       "bad/targets/bad_time_unit.yaml:9:38: error: links.latency: bad time \"2usec\": expected a "
       "number followed by s, ms, us, \u00b5s or ns\n"
       "links: {bandwidth: 450GB/s, latency: 2usec}\n"
       "                                     ^\n"},
      {"two_spaces.yaml",
       "bad/targets/two_spaces.yaml:5:11: error: devices.memory: bad size \"80  GiB\": expected a "
       "number followed by B, KB, MB, GB, TB, KiB, MiB, GiB or TiB\n"
       "  memory: 80  GiB\n"
       "          ^\n"},
      {"not_whole_bytes.yaml",
       "bad/targets/not_whole_bytes.yaml:5:11: error: devices.memory: bad size \"0.1KiB\": is not "
       "a whole number of bytes\n"
       "  memory: 0.1KiB\n"
       "          ^\n"},
      {"size_too_large.yaml",
       "bad/targets/size_too_large.yaml:5:11: error: devices.memory: bad size \"9000000TiB\": is "
       "too large\n"
       "  memory: 9000000TiB\n"
       "          ^\n"},
      {"zero_count.yaml", "bad/targets/zero_count.yaml:3:10: error: devices.count must be at "
                          "least 1, got 0\n"
                          "  count: 0\n"
                          "         ^\n"},
      {"count_too_large.yaml",
       "bad/targets/count_too_large.yaml:3:10: error: devices.count: integer out of int64 range: "
       "99999999999999999999\n"
       "  count: 99999999999999999999\n"
       "         ^\n"},
      {"count_not_integer.yaml",
       "bad/targets/count_not_integer.yaml:3:10: error: devices.count: expected an integer, got "
       "\"eight\"\n"
       "  count: eight\n"
       "         ^\n"},
      {"negative_memory.yaml",
       "bad/targets/negative_memory.yaml:5:11: error: devices.memory must be greater than 0, got "
       "\"-80GiB\"\n"
       "  memory: -80GiB\n"
       "          ^\n"},
      {"memory_not_scalar.yaml",
       "bad/targets/memory_not_scalar.yaml:5:11: error: devices.memory: expected a size such as "
       "80GiB, got list\n"
       "  memory: [80GiB]\n"
       "          ^\n"},
      {"zero_rate.yaml",
       "bad/targets/zero_rate.yaml:7:35: error: devices.flops.bfloat16 must be greater than 0, got "
       "\"0T\"\n"
       "  flops: {float32: 67T, bfloat16: 0T}\n"
       "                                  ^\n"},
      {"zero_bandwidth.yaml",
       "bad/targets/zero_bandwidth.yaml:10:19: error: host.bandwidth must be greater than 0, got "
       "\"0GB/s\"\n"
       "host: {bandwidth: 0GB/s, latency: 10us}\n"
       "                  ^\n"},
      {"negative_latency.yaml",
       "bad/targets/negative_latency.yaml:9:38: error: links.latency must not be negative, got "
       "\"-2us\"\n"
       "links: {bandwidth: 450GB/s, latency: -2us}\n"
       "                                     ^\n"},
      {"bad_kind.yaml", "bad/targets/bad_kind.yaml:4:9: error: devices.kind must be gpu or cpu, "
                        "got \"tpu\"\n"
                        "  kind: tpu\n"
                        "        ^\n"},
      {"empty_name.yaml", "bad/targets/empty_name.yaml:1:7: error: name must not be empty\n"
                          "name: \"\"\n"
                          "      ^\n"},
      {"unknown_device_key.yaml",
       "bad/targets/unknown_device_key.yaml:5:3: error: unknown key \"memroy\" in devices "
       "(expected one of: count, kind, memory, memory_bandwidth, flops, launch_overhead)\n"
       "  memroy: 80GiB\n"
       "  ^\n"},
      {"unknown_top_key.yaml",
       "bad/targets/unknown_top_key.yaml:9:1: error: unknown key \"link\" in target (expected one "
       "of: name, description, devices, links, host, nodes, profile)\n"
       "link: {bandwidth: 450GB/s, latency: 2us}\n"
       "^\n"},
      {"unknown_dtype.yaml",
       "bad/targets/unknown_dtype.yaml:7:25: error: unknown key \"fp16\" in devices.flops "
       "(expected one of: float64, float32, tf32, float16, bfloat16, float8_e4m3fn, float8_e5m2, "
       "int64, int32, int16, int8, uint8)\n"
       "  flops: {float32: 67T, fp16: 989T}\n"
       "                        ^\n"},
      {"nodes_unknown_key.yaml",
       "bad/targets/nodes_unknown_key.yaml:14:3: error: unknown key \"internode\" in nodes "
       "(expected one of: count, devices_per_node, inter_node)\n"
       "  internode: {bandwidth: 50GB/s, latency: 5us}\n"
       "  ^\n"},
      {"missing_host.yaml", "bad/targets/missing_host.yaml:1:1: error: target: missing required "
                            "key \"host\"\n"
                            "name: no-host\n"
                            "^\n"},
      {"missing_memory.yaml", "bad/targets/missing_memory.yaml:2:1: error: devices: missing "
                              "required key \"memory\"\n"
                              "devices:\n"
                              "^\n"},
      {"missing_float32.yaml", "bad/targets/missing_float32.yaml:7:3: error: devices.flops: "
                               "missing required key \"float32\"\n"
                               "  flops: {bfloat16: 989T}\n"
                               "  ^\n"},
      {"missing_latency.yaml", "bad/targets/missing_latency.yaml:9:1: error: links: missing "
                               "required key \"latency\"\n"
                               "links: {bandwidth: 450GB/s}\n"
                               "^\n"},
      {"links_not_map.yaml", "bad/targets/links_not_map.yaml:9:8: error: links: expected a map, "
                             "got string\n"
                             "links: 450GB/s\n"
                             "       ^\n"},
      {"nodes_mismatch.yaml",
       "bad/targets/nodes_mismatch.yaml:13:21: error: nodes.count x nodes.devices_per_node must "
       "equal devices.count: 2 x 4 = 8, but devices.count is 16\n"
       "  devices_per_node: 4\n"
       "                    ^\n"},
      {"nodes_zero.yaml", "bad/targets/nodes_zero.yaml:12:10: error: nodes.count must be at least "
                          "1, got 0\n"
                          "  count: 0\n"
                          "         ^\n"},
      {"duplicate_key.yaml", "bad/targets/duplicate_key.yaml:7:25: error: devices.flops: "
                             "duplicate key \"float32\"\n"
                             "  flops: {float32: 67T, float32: 60T}\n"
                             "                        ^\n"},
      {"invalid_yaml.yaml", "bad/targets/invalid_yaml.yaml:3:6: error: invalid YAML: end of map "
                            "flow not found\n"
                            "links: {bandwidth: 450GB/s, latency: 2us}\n"
                            "     ^\n"},
      {"fuzz_invalid_utf8.yaml",
       "bad/targets/fuzz_invalid_utf8.yaml:1:69: error: invalid UTF-8 byte 0xa1\n"
       "# Two NVIDIA DGX H100 nodes (16 GPUs): NVLink 4 within a node, Infin\xa1\xbd"
       "and NDR\n" +
           std::string(68, ' ') + "^\n"},
      {"deep_yaml.yaml",
       "bad/targets/deep_yaml.yaml:3:2001: error: invalid YAML: nested deeper than 500 levels\n"
       "..." +
           SourceFile::read(kTestdata + "/bad/targets/deep_yaml.yaml")
               .lineText(3)
               .substr(1930, 140) +
           "...\n" + std::string(73, ' ') + "^\n"},
      {"fuzz_escaped_utf8.yaml", "bad/targets/fuzz_escaped_utf8.yaml:1:10: error: invalid UTF-8 in "
                                 "a string (byte 0x85, from an escape sequence)\n"
                                 "{\"name\": \"naidN4YAML9ExceptionEt: 3.35head:s\n"
                                 "         ^\n"},
      {"empty.yaml", "bad/targets/empty.yaml: error: target: expected a map, got nothing\n"},
      {"not_a_map.yaml", "bad/targets/not_a_map.yaml:1:1: error: target: expected a map, got "
                         "list\n"
                         "- h100x8\n"
                         "^\n"},
  };

  std::set<std::string> covered;
  for (const Case& c : cases) {
    INFO(c.file);
    covered.insert(c.file);
    std::string relative = std::string("bad/targets/") + c.file;
    CHECK(errorOf([&] { loadTargetYaml(testdataFile(relative)); }) == c.diagnostic);
  }
  // Every bad file has its expected diagnostic here.
  for (const auto& entry : std::filesystem::directory_iterator(kTestdata + "/bad/targets")) {
    std::string file = entry.path().filename().string();
    INFO(file);
    CHECK(covered.count(file) == 1);
  }
}

TEST_CASE("good target files", "[yaml]") {
  SECTION("units with a space, µs, decimal memory bandwidth") {
    Target t = loadTarget(kTestdata + "/targets/workstation.yaml");
    CHECK(t.name == "workstation");
    CHECK(t.description == "2 GPUs on PCIe Gen4, peer copies through the host");
    CHECK(t.devices.count == 2);
    CHECK(t.devices.kind == DeviceKind::Gpu);
    CHECK(t.devices.memory == 24 * GiB);
    CHECK(t.devices.memoryBandwidth == 1008e9);
    CHECK(t.flopsFor("float32") == 82.6e12);
    CHECK(t.flopsFor("float16") == 165.2e12);
    CHECK(t.flopsFor("float64") == 1.29e12);
    CHECK(t.flopsFor("tf32") == 82.6e12);
    CHECK(t.devices.launchOverhead == 5e-6);
    CHECK(t.links == LinkSpec{25e9, 15e-6});
  }
  SECTION("plain numbers are base units, so toJson's output loads as YAML") {
    Target t = loadTarget(kTestdata + "/targets/base-units.yaml");
    CHECK(t.devices.memory == 8 * GiB);
    CHECK(t.flopsFor("int8") == 100e9);
    CHECK(t.links == LinkSpec{10e9, 0});
    CHECK(t.host == LinkSpec{10e9, 1e-6});
    for (const std::string& name : builtinTargetNames()) {
      Target b = loadTarget(name);
      CHECK(loadTargetYaml(SourceFile(name + ".json", toJson(b).dump(2))) == b);
    }
  }
}

TEST_CASE("link queries within and across nodes", "[links]") {
  Target t = loadTarget(kTestdata + "/targets/two-nodes.yaml");
  REQUIRE(t.nodes);
  CHECK(t.deviceCount() == 4);
  CHECK(t.nodeCount() == 2);
  CHECK(t.nodeOf(0) == 0);
  CHECK(t.nodeOf(1) == 0);
  CHECK(t.nodeOf(2) == 1);
  CHECK(t.nodeOf(3) == 1);
  CHECK(t.sameNode(0, 1));
  CHECK(!t.sameNode(1, 2));
  CHECK(t.linkBetween(0, 1) == LinkSpec{40e9, 500e-9});
  CHECK(t.linkBetween(3, 2) == LinkSpec{40e9, 500e-9});
  CHECK(t.linkBetween(1, 2) == LinkSpec{12.5e9, 2e-6});
  CHECK(t.linkBetween(3, 0) == LinkSpec{12.5e9, 2e-6});
  CHECK(t.hostLink() == LinkSpec{20e9, 1e-6});
  CHECK(t.flopsFor("float32") == 1.2e15);
  CHECK(t.flopsFor("bfloat16") == 1.2e15); // no figure: float32's rate

  Target dgx2 = loadTarget("2x-h100x8");
  CHECK(dgx2.linkBetween(0, 7).bandwidth == 450e9);
  CHECK(dgx2.linkBetween(7, 8).bandwidth == 50e9);
  CHECK(dgx2.linkBetween(15, 0).latency == 5e-6);
  CHECK(dgx2.linkBetween(8, 15).bandwidth == 450e9);

  Target single = loadTarget("h100x8");
  CHECK(single.nodeOf(7) == 0);
  CHECK(single.linkBetween(0, 7) == single.links);

  SECTION("asking for a device that does not exist is a bug") {
    CHECK_THROWS_AS(t.nodeOf(4), InternalError);
    CHECK_THROWS_AS(t.nodeOf(-1), InternalError);
    CHECK_THROWS_AS(t.linkBetween(0, 0), InternalError);
    CHECK_THROWS_AS(single.linkBetween(0, 8), InternalError);
  }
  SECTION("the cost formulas of SPEC §7") {
    CHECK(single.links.transferTime(450e9) == Approx(1 + 2e-6));
    // 1 TFLOP of bfloat16 over 1 GB: compute bound.
    CHECK(single.kernelTime(989.5e12, 1e9, "bfloat16") == Approx(1 + 4e-6));
    // 1 GFLOP over 3.35 GB: memory bound.
    CHECK(single.kernelTime(1e9, 3.35e12, "float32") == Approx(1 + 4e-6));
  }
}

TEST_CASE("targets round-trip through JSON exactly", "[json]") {
  for (const std::string& name : builtinTargetNames()) {
    INFO(name);
    Target t = loadTarget(name);
    CHECK(targetFromJson(json::Value(toJson(t))) == t);
    CHECK(roundTripText(t) == t);
  }
  Target awkward = loadTarget(kTestdata + "/targets/two-nodes.yaml");
  awkward.devices.memoryBandwidth = 0.1 + 0.2; // not a short decimal
  awkward.links.latency = 1.0 / 3.0;
  CHECK(roundTripText(awkward) == awkward);

  SECTION("the stored form: base units, optional parts left out") {
    CHECK(
        toJson(loadTarget("cpu-2")).dump() ==
        R"j({"name":"cpu-2","description":"2 CPU cores as devices (conservative per-core figures)",)j"
        R"j("devices":{"count":2,"kind":"cpu","memory":8589934592,"memory_bandwidth":10000000000.0,)j"
        R"j("flops":{"float64":25000000000.0,"float32":50000000000.0},"launch_overhead":5e-06},)j"
        R"j("links":{"bandwidth":10000000000.0,"latency":1e-06},)j"
        R"j("host":{"bandwidth":10000000000.0,"latency":1e-06}})j");
    Json nodes = toJson(loadTarget("2x-h100x8"))["nodes"];
    CHECK(
        nodes.dump() ==
        R"({"count":2,"devices_per_node":8,"inter_node":{"bandwidth":50000000000.0,"latency":5e-06}})");
  }
  SECTION("errors are located in the JSON") {
    std::string ok = toJson(loadTarget("cpu-2")).dump();
    // The text with `from` replaced by `to`, and "t.json:1:COL: error: " for the
    // column where `to` starts plus `shift`.
    auto replaced = [&](const std::string& from, const std::string& to, std::size_t shift,
                        std::string& where) {
      std::string s = ok;
      std::size_t at = s.find(from);
      s.replace(at, from.size(), to);
      where = "t.json:1:" + std::to_string(at + shift + 1) + ": error: ";
      return s;
    };
    std::string where;
    std::string text = replaced("\"count\":2", "\"count\":0", 8, where);
    // The one-line document is longer than a snippet shows whole: a window of
    // 70 bytes either side of the caret (core/diag).
    const std::size_t caret = text.find("\"count\":0") + 8;
    REQUIRE(caret > 70);
    CHECK(jsonError(text) ==
          where + "at /devices/count: devices.count must be at least 1, got 0\n" + "..." +
              text.substr(caret - 70, 140) + "...\n" + std::string(73, ' ') + "^\n");
    text = replaced("\"memory\":8589934592", "\"memory\":\"8GiB\"", 9, where);
    CHECK(jsonError(text).starts_with(
        where + "at /devices/memory: expected an integer, got string \"8GiB\"\n"));
    text = replaced("\"latency\":1e-06}}", "\"latency\":-1}}", 10, where);
    CHECK(jsonError(text).starts_with(
        where + "at /host/latency: host.latency must not be negative, got -1\n"));
    text = replaced("\"devices\":{\"count\":2,\"kind\":\"cpu\",", "\"devices\":{\"count\":2,", 10,
                    where);
    CHECK(jsonError(text).starts_with(where +
                                      "at /devices: devices: missing required key \"kind\"\n"));
    text = replaced("\"float32\"", "\"fp32\"", 7, where);
    CHECK(jsonError(text).starts_with(
        where + "at /devices/flops/fp32: unknown key \"fp32\" in devices.flops (expected one of: "
                "float64, float32, tf32,"));
  }
  SECTION("in-memory values name the JSON pointer") {
    Json j = toJson(loadTarget("h100x8"));
    j["devices"]["flops"]["bfloat16"] = 0;
    CHECK(errorOf([&] { targetFromJson(json::Value(j)); }) ==
          "error: at /devices/flops/bfloat16: devices.flops.bfloat16 must be greater than 0, got "
          "0\n");
  }
}

TEST_CASE("loading by name or path", "[load]") {
  CHECK(loadTarget(kTestdata + "/targets/two-nodes.yaml").name == "two-nodes");
  CHECK(errorOf([] { loadTarget("h100"); }) ==
        "error: unknown target \"h100\": not a built-in (local, 2x-h100x8, a100x8, cpu-2, h100x8, "
        "h200x8) and no such file\n");
  CHECK(errorOf([] { loadTarget("no/such/target.yaml"); }) ==
        "error: unknown target \"no/such/target.yaml\": not a built-in (local, 2x-h100x8, a100x8, "
        "cpu-2, h100x8, h200x8) and no such file\n");
  std::string dir = kTestdata + "/targets";
  CHECK(errorOf([&] { loadTarget(dir); }) ==
        dir + ": error: is a directory, expected a target YAML file\n");
  // Errors in a file given by path name that path.
  std::string bad = kTestdata + "/bad/targets/zero_count.yaml";
  CHECK(errorOf([&] { loadTarget(bad); }).starts_with(bad + ":3:10: error: devices.count"));
}

TEST_CASE("local: GPUs come from the installed probe", "[local]") {
  setGpuProbe([](MachineInfo& m) { m.gpus.push_back({"NVIDIA H100 80GB HBM3", 80LL << 30}); });
  MachineInfo probed = describeMachine();
  REQUIRE(probed.gpus.size() == 1);
  CHECK(probed.gpus[0].name == "NVIDIA H100 80GB HBM3");
  CHECK(probed.gpuNote.empty());
  CHECK(probed.cpuCores >= 1);
  CHECK(localTarget(probed).devices.kind == DeviceKind::Gpu);

  setGpuProbe([](MachineInfo& m) { m.gpuNote = "no CUDA GPU found (test)"; });
  CHECK(describeMachine().gpus.empty());
  CHECK(describeMachine().gpuNote == "no CUDA GPU found (test)");

  setGpuProbe(nullptr); // core/cost alone: no GPU API
  CHECK(describeMachine().gpus.empty());
  CHECK(describeMachine().gpuNote == "built without CUDA");
}

TEST_CASE("local: this machine as it is", "[local]") {
  // Without a saved calibration (a user's `tapestry calibrate` would make
  // `local` the calibrated machine, whose figures differ).
  const char* userCache = std::getenv("XDG_CACHE_HOME");
  const std::string savedCache = userCache != nullptr ? userCache : "";
  ::setenv("XDG_CACHE_HOME", "/nonexistent-tapestry-cache", 1);
  struct Restore {
    bool had;
    std::string value;
    ~Restore() {
      if (had) {
        ::setenv("XDG_CACHE_HOME", value.c_str(), 1);
      } else {
        ::unsetenv("XDG_CACHE_HOME");
      }
    }
  } restore{userCache != nullptr, savedCache};
  const MachineInfo& machine = probeMachine();
  CHECK(machine.cpuCores >= 1);
  Target t = loadTarget("local");
  CHECK(t.name == "local");
  CHECK(t.description.starts_with("this machine: "));
  CHECK(roundTripText(t) == t);
  if (machine.gpus.empty()) {
    // This is the case on machines without a usable GPU, CUDA build or not.
    CHECK(!machine.gpuNote.empty());
    CHECK(t.devices.kind == DeviceKind::Cpu);
    CHECK(t.devices.count == machine.cpuCores);
    if (machine.ramBytes > 0) {
      CHECK(t.devices.memory == machine.ramBytes / machine.cpuCores);
    }
    CHECK(t.flopsFor("float32") == loadTarget("cpu-2").flopsFor("float32"));
  } else {
    CHECK(t.devices.kind == DeviceKind::Gpu);
    CHECK(t.devices.count == static_cast<int>(machine.gpus.size()));
  }

  SECTION("CPU cores as devices, RAM shared out") {
    MachineInfo m;
    m.cpuCores = 4;
    m.ramBytes = 32 * GiB;
    m.gpuNote = "built without CUDA";
    Target cpu = localTarget(m);
    Target cpu2 = loadTarget("cpu-2");
    CHECK(cpu.devices.kind == DeviceKind::Cpu);
    CHECK(cpu.devices.count == 4);
    CHECK(cpu.devices.memory == 8 * GiB);
    CHECK(cpu.devices.flops == cpu2.devices.flops);
    CHECK(cpu.links == cpu2.links);
    CHECK(cpu.description == "this machine: 4 CPU cores as devices, 8GiB each (figures of cpu-2; "
                             "no GPU: built without CUDA)");
    m.ramBytes = 0; // unknown: cpu-2's figure
    CHECK(localTarget(m).devices.memory == 8 * GiB);
  }
  SECTION("GPUs get the figures of the matching built-in and their own memory") {
    MachineInfo m;
    m.gpus = {{"NVIDIA H100 80GB HBM3", 85045936128}, {"NVIDIA H100 80GB HBM3", 85045936128}};
    Target gpu = localTarget(m);
    Target h100 = loadTarget("h100x8");
    CHECK(gpu.name == "local");
    CHECK(gpu.devices.kind == DeviceKind::Gpu);
    CHECK(gpu.devices.count == 2);
    CHECK(gpu.devices.memory == 85045936128);
    CHECK(gpu.devices.flops == h100.devices.flops);
    CHECK(gpu.devices.memoryBandwidth == h100.devices.memoryBandwidth);
    CHECK(gpu.links == h100.links);
    CHECK(gpu.host == h100.host);
    CHECK(!gpu.nodes);
    CHECK(gpu.description ==
          "this machine: 2 x NVIDIA H100 80GB HBM3, 79.21GiB each (figures of h100x8)");

    m.gpus = {{"NVIDIA A100-SXM4-80GB", 85899345920}};
    CHECK(localTarget(m).devices.flops == loadTarget("a100x8").devices.flops);
    m.gpus = {{"NVIDIA H200", 150754820096}};
    CHECK(localTarget(m).devices.memoryBandwidth == 4.8e12);

    m.gpus = {{"NVIDIA GeForce RTX 4090", 25393692672}};
    Target generic = localTarget(m);
    CHECK(generic.devices.memory == 25393692672);
    CHECK(generic.flopsFor("float32") == 10e12);
    CHECK(generic.links.bandwidth == 10e9);

    // A mix gets the conservative figures and the smallest memory.
    m.gpus = {{"NVIDIA H100 80GB HBM3", 85045936128}, {"NVIDIA A100-PCIE-40GB", 42505273344}};
    Target mixed = localTarget(m);
    CHECK(mixed.devices.count == 2);
    CHECK(mixed.devices.memory == 42505273344);
    CHECK(mixed.flopsFor("float32") == 10e12);
    CHECK(roundTripText(mixed) == mixed);
  }
}
