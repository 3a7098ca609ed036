// Tests for backends/npy (the .npy format) and backends/tensor_io (graph inputs
// from a directory or a seed, outputs to a directory). NumPy is not available
// here, so the fixtures are byte strings written by hand from the format spec
// (numpy/lib/format.py), including headers as newer NumPy pads them.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "backends/npy.hpp"
#include "backends/tensor_io.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::backend;
using Catch::Matchers::Contains;
using tapestry::testing::Failure;
using tapestry::testing::failureOf;

namespace {

// A v1.0 file: magic, version, little-endian length, the dict padded with
// spaces to `total` header bytes (a multiple of 64 in real files), '\n', data.
std::string npyFile(const std::string& dict, const std::string& data, std::size_t total = 128,
                    int major = 1) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t prefix = major == 1 ? 10 : 12;
  const std::size_t hlen = total - prefix;
  out += static_cast<char>(hlen & 0xFF);
  out += static_cast<char>((hlen >> 8) & 0xFF);
  if (major != 1) {
    out += '\0';
    out += '\0';
  }
  out += dict;
  out.append(total - prefix - dict.size() - 1, ' ');
  out += '\n';
  return out + data;
}

template <class T> std::string bytesOf(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("tapestry-npy-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// The formatted error of decoding `bytes` as "x.npy", or "" when it decodes.
// readNpy, which reads a file's header before its data, must say the same of
// the same bytes in a file (its path for the name) and read the same array.
std::string errorOf(const std::string& bytes) {
  const Failure failure = failureOf([&] { decodeNpy(bytes, "x.npy"); });
  CHECK(failure.code == (failure.what.empty() ? ExitCode::Ok : ExitCode::InvalidInput));
  const TempDir dir;
  const std::string path = dir.file("x.npy");
  writeBytes(path, bytes);
  const Failure read = failureOf([&] { readNpy(path); });
  std::string expected = failure.what;
  for (std::size_t at = expected.find("x.npy"); at != std::string::npos;
       at = expected.find("x.npy", at + path.size())) {
    expected.replace(at, 5, path);
  }
  CHECK(read.code == failure.code);
  CHECK(read.what == expected);
  if (failure.what.empty()) {
    const NpyArray a = decodeNpy(bytes, "x.npy");
    const NpyArray b = readNpy(path);
    CHECK(a.descr == b.descr);
    CHECK(a.buffer.region() == b.buffer.region());
    CHECK(std::memcmp(a.buffer.data(), b.buffer.data(),
                      static_cast<std::size_t>(a.buffer.byteSize())) == 0);
  }
  return failure.what;
}

graph::ExpandedGraph graphOf(const std::string& text) {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  json::Document doc = json::Document::parse(SourceFile("g.json", text));
  return graph::expand(graph::decodeGraph(json::Value(doc)), library);
}

} // namespace

TEST_CASE("npy headers are NumPy's, byte for byte", "[npy]") {
  const std::string h = npyHeader(DType::Float32, {2, 3});
  // 'v' = 118: the classic np.save header of a small array.
  const std::string start("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2, 3), }",
                          69);
  CHECK(h.size() == 128);
  CHECK(h.substr(0, start.size()) == start);
  CHECK(h.substr(start.size()) == std::string(58, ' ') + "\n");
  CHECK(npyHeader(DType::Int64, {5})
            .find("'descr': '<i8', 'fortran_order': False, 'shape': (5,), }") != std::string::npos);
  CHECK(npyHeader(DType::Float64, {}).find("'shape': (), }") != std::string::npos);
  CHECK(npyHeader(DType::BFloat16, {1}).find("'<u2'") != std::string::npos);
  CHECK(npyHeader(DType::Float16, {1}).find("'<f2'") != std::string::npos);
  CHECK(npyHeader(DType::Int32, {1}).find("'<i4'") != std::string::npos);
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{}, {1}, {123456789, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}) {
    CHECK(npyHeader(DType::Float32, shape).size() % 64 == 0);
  }
  // A dict that fills 64 bytes exactly still gets a full pad (NumPy's formula).
  CHECK(pythonShape({4, 8}) == "(4, 8)");
  CHECK(pythonShape({5}) == "(5,)");
  CHECK(pythonShape({}) == "()");
}

TEST_CASE("npy round trips every dtype and shape", "[npy]") {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                      DType::Int64}) {
    for (const std::vector<std::int64_t>& shape :
         {std::vector<std::int64_t>{}, {5}, {2, 3}, {0, 3}, {2, 1, 4}}) {
      INFO(dtypeName(dtype) << " " << pythonShape(shape));
      Buffer b = Buffer::host(dtype, shape);
      for (std::int64_t i = 0; i < b.byteSize(); ++i) {
        b.data()[i] = static_cast<std::byte>(i * 7 + 3);
      }
      const std::string bytes = encodeNpy(b.view());
      CHECK(bytes.size() ==
            npyHeader(dtype, shape).size() + static_cast<std::size_t>(b.byteSize()));
      NpyArray back = decodeNpy(bytes, "x.npy");
      CHECK(back.descr == npyDescr(dtype));
      CHECK(back.buffer.dtype() == dtype);
      CHECK(back.buffer.region().shape().vector() == shape);
      CHECK(std::memcmp(back.buffer.data(), b.data(), static_cast<std::size_t>(b.byteSize())) == 0);
    }
  }
}

TEST_CASE("npy reads and writes bool arrays as NumPy does ('|b1')", "[npy][bool]") {
  // np.save(f, np.array([[True, False, True], [False, False, True]])): NumPy
  // writes bool with descr '|b1', one byte per element, 0 or 1.
  const std::string numpy = npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }",
                                    std::string("\x01\x00\x01\x00\x00\x01", 6));
  NpyArray a = decodeNpy(numpy, "m.npy");
  CHECK(a.descr == "|b1");
  CHECK(a.buffer.dtype() == DType::Bool);
  CHECK(a.buffer.region() == ZRange::fromShape({2, 3}));
  std::vector<int> got;
  for (Bool b : a.buffer.elements<Bool>()) {
    got.push_back(b.bits);
  }
  CHECK(got == std::vector<int>{1, 0, 1, 0, 0, 1});
  // Written back, the file is the one NumPy wrote, byte for byte.
  CHECK(npyDescr(DType::Bool) == std::string("|b1"));
  CHECK(encodeNpy(a.buffer.view()) == numpy);
  // Round trips of every shape, and of a strided region view.
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{}, {5}, {2, 3}, {0, 3}, {2, 1, 4}}) {
    INFO(pythonShape(shape));
    Buffer b = Buffer::host(DType::Bool, shape);
    for (std::size_t i = 0; i < b.elements<Bool>().size(); ++i) {
      b.elements<Bool>()[i] = Bool{static_cast<std::uint8_t>(i % 3 == 1)};
    }
    NpyArray back = decodeNpy(encodeNpy(b.view()), "x.npy");
    CHECK(back.buffer.dtype() == DType::Bool);
    CHECK(back.buffer.region().shape().vector() == shape);
    CHECK(std::memcmp(back.buffer.data(), b.data(), static_cast<std::size_t>(b.byteSize())) == 0);
  }
  NpyArray part = decodeNpy(encodeNpy(a.buffer.view(ZRange({0, 1}, {2, 3}))), "x.npy");
  CHECK(part.buffer.region() == ZRange::fromShape({2, 2}));
  CHECK(part.buffer.elements<Bool>()[0] == Bool{0});
  CHECK(part.buffer.elements<Bool>()[1] == Bool{1});
  CHECK(part.buffer.elements<Bool>()[3] == Bool{1});
  // A byte other than 0 and 1 is true (as NumPy reads it) and is stored as 1.
  NpyArray odd = decodeNpy(npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                   std::string("\x02\x00\xff", 3)),
                           "x.npy");
  CHECK(odd.buffer.elements<Bool>()[0] == Bool{1});
  CHECK(odd.buffer.elements<Bool>()[1] == Bool{0});
  CHECK(odd.buffer.elements<Bool>()[2] == Bool{1});
}

TEST_CASE("npy writes a strided region view in C order", "[npy]") {
  Buffer b = Buffer::host(DType::Int32, {3, 4});
  for (int i = 0; i < 12; ++i) {
    b.elements<std::int32_t>()[static_cast<std::size_t>(i)] = i;
  }
  NpyArray a = decodeNpy(encodeNpy(b.view(ZRange({1, 1}, {3, 3}))), "x.npy");
  CHECK(a.buffer.region() == ZRange::fromShape({2, 2}));
  std::vector<std::int32_t> got(a.buffer.elements<std::int32_t>().begin(),
                                a.buffer.elements<std::int32_t>().end());
  CHECK(got == std::vector<std::int32_t>{5, 6, 9, 10});
}

TEST_CASE("npy reads files as other writers lay them out", "[npy]") {
  // Newer NumPy pads the dict with spaces for in-place growth; any key order,
  // double quotes, no trailing comma, Python 2 longs, format 2.0 and 3.0.
  const std::string f32 = bytesOf(std::vector<float>{1.5f, -2.0f, 3.25f});
  std::string grown =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + std::string(21, ' ');
  CHECK(decodeNpy(npyFile(grown, f32, 128), "x.npy").buffer.elementCount() == 3);
  NpyArray a = decodeNpy(
      npyFile("{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<f4\"}", f32, 128),
      "x.npy");
  CHECK(a.buffer.elements<float>()[2] == 3.25f);
  NpyArray v2 = decodeNpy(
      npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f32, 128, 2), "x.npy");
  CHECK(v2.buffer.elements<float>()[0] == 1.5f);
  NpyArray v3 = decodeNpy(
      npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f32, 128, 3), "x.npy");
  CHECK(v3.buffer.elements<float>()[1] == -2.0f);
  // A bfloat16 file is '<u2' bit patterns: 0x3F80 is 1.0.
  NpyArray bf = decodeNpy(npyFile("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }",
                                  std::string("\x80\x3F", 2)),
                          "x.npy");
  CHECK(bf.buffer.dtype() == DType::BFloat16);
  CHECK(bfloat16ToFloat(bf.buffer.elements<BFloat16>()[0]) == 1.0f);
  // A scalar.
  NpyArray s = decodeNpy(npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                                 bytesOf(std::vector<std::int64_t>{-7})),
                         "x.npy");
  CHECK(s.buffer.region().rank() == 0);
  CHECK(s.buffer.elements<std::int64_t>()[0] == -7);
  // readNpy reads each of them from a file as decodeNpy does (errorOf checks).
  for (int major : {1, 2, 3}) {
    for (std::size_t total : {128, 192, 4096}) {
      CHECK(errorOf(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f32, total,
                            major))
                .empty());
    }
  }
  CHECK(errorOf(npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                        std::string("\x00\x07", 2)))
            .empty());
}

TEST_CASE("npy errors name the file and the problem", "[npy]") {
  const std::string f32x2 = bytesOf(std::vector<float>{1, 2});
  CHECK(errorOf(npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f32x2)) ==
        "x.npy: error: Fortran-order arrays are not supported (save a C-order array, e.g. with "
        "np.ascontiguousarray)\n");
  CHECK(errorOf(npyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f32x2)) ==
        "x.npy: error: unsupported dtype '>f4' (supported: '<f4', '<f8', '<f2', '<i4', '<i8', "
        "'|b1', and '<u2' for bfloat16)\n");
  CHECK_THAT(errorOf(npyFile("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "ab")),
             Contains("unsupported dtype '|i1'"));
  CHECK(errorOf(npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", "ab")) ==
        "x.npy: error: truncated data: shape (3,) of '|b1' needs 3 bytes after the header, the "
        "file has 2\n");
  CHECK_THAT(errorOf(npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                             f32x2, 128)),
             Contains("bad .npy header: 'descr' must be a string (structured dtypes are not "
                      "supported)"));
  CHECK(errorOf("PK\x03\x04 not numpy") ==
        "x.npy: error: not a NumPy .npy file (no \\x93NUMPY magic string)\n");
  CHECK(errorOf(std::string("\x93NUMPY\x04\x00", 8) + "xx") ==
        "x.npy: error: unsupported .npy format version 4.0 (expected 1.0, 2.0 or 3.0)\n");
  CHECK(errorOf(std::string("\x93NUMPY\x01\x00", 8)) ==
        "x.npy: error: truncated .npy header: the file ends after 8 bytes\n");
  CHECK(
      errorOf(
          npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "").substr(0, 40)) ==
      "x.npy: error: truncated .npy header: it declares 118 bytes but the file ends after 30\n");
  CHECK(errorOf(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f32x2)) ==
        "x.npy: error: truncated data: shape (2, 3) of '<f4' needs 24 bytes after the header, the "
        "file has 8\n");
  CHECK(errorOf(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32x2)) ==
        "x.npy: error: unexpected trailing data: shape (1,) of '<f4' needs 4 bytes after the "
        "header, the file has 8\n");
  CHECK(errorOf(npyFile("{'descr': '<f4', 'shape': (2,), }", f32x2)) ==
        "x.npy: error: bad .npy header: expected the keys 'descr', 'fortran_order' and 'shape'\n");
  CHECK_THAT(errorOf(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                             f32x2, 128)),
             Contains("bad .npy header: unexpected key 'x'"));
  CHECK_THAT(errorOf(npyFile("{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", f32x2)),
             Contains("'fortran_order' must be True or False"));
  CHECK_THAT(errorOf(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f32x2)),
             Contains("'shape' must be a tuple of non-negative integers"));
  CHECK_THAT(errorOf(npyFile("['descr']", f32x2)), Contains("bad .npy header: expected '{'"));
}

TEST_CASE("npy files: write atomically, read back, errors for missing files", "[npy]") {
  TempDir dir;
  Buffer b = Buffer::host(DType::Float64, {2, 2});
  b.elements<double>()[3] = 4.5;
  writeNpy(dir.file("y.npy"), b.view());
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    (void)e;
    ++entries;
  }
  CHECK(entries == 1); // no temporary file left behind
  NpyArray a = readNpy(dir.file("y.npy"));
  CHECK(a.buffer.elements<double>()[3] == 4.5);
  CHECK_THROWS_WITH(readNpy(dir.file("nope.npy")), Contains("nope.npy: error: cannot open file"));
}

TEST_CASE("npy file names are tensor names percent-encoded", "[npy]") {
  CHECK(npyFileName("x") == "x.npy");
  CHECK(npyFileName("layer.0_w") == "layer.0_w.npy");
  CHECK(npyFileName("a-b") == "a-b.npy");
  CHECK(npyFileName("input.1") == "input.1.npy");
  CHECK(npyFileName("onnx::Conv_193") == "onnx%3A%3AConv_193.npy");
  CHECK(npyFileName("/layer1/conv1/Conv_output_0") == "%2Flayer1%2Fconv1%2FConv_output_0.npy");
  CHECK(npyFileName("a%b") == "a%25b.npy");
  CHECK(npyFileName("\xff ") == "%FF%20.npy");
}

TEST_CASE("npy descrs of graph dtypes, and files of bytes", "[npy]") {
  CHECK(npyDescrOf("float32") == "<f4");
  CHECK(npyDescrOf("bfloat16") == "<u2");
  CHECK(npyDescrOf("bool") == "|b1");
  CHECK(npyDescrOf("int8") == "|i1");
  CHECK_FALSE(npyDescrOf("uint16")); // '<u2' is bfloat16 here
  CHECK_FALSE(npyDescrOf("complex64"));
  const std::string header = npyHeader(std::string("|b1"), {2, 2});
  CHECK(header.size() % 64 == 0);
  CHECK(header.find("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }") !=
        std::string::npos);
  // The executable dtypes' files are the ones encodeNpy writes.
  CHECK(npyHeader(std::string("<f4"), {3}) == npyHeader(DType::Float32, {3}));
}

TEST_CASE("inputs from a directory are checked against the graph", "[npy][inputs]") {
  graph::ExpandedGraph g = graphOf(R"({"tapestry": "graph/v1", "name": "g",
    "tensors": {"x": {"dtype": "float32", "shape": [4, 9]}, "w": {"dtype": "float32", "shape": [9, 2]}},
    "operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}}]})");
  TempDir dir;
  TensorBuffers drawn = drawInputs(g, 3);
  writeTensors(drawn, {"x", "w"}, dir.path.string());
  TensorBuffers loaded = loadInputs(g, dir.path.string());
  REQUIRE(loaded.size() == 2);
  CHECK(std::memcmp(loaded.at("x").data(), drawn.at("x").data(), 4 * 9 * 4) == 0);

  const std::string x = dir.file("x.npy");
  writeNpy(x, Buffer::host(DType::Float32, {4, 8}).view());
  try {
    loadInputs(g, dir.path.string());
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          x + ": error: x.npy has shape (4, 8) but the graph declares x as [4, 9]\n");
  }
  writeNpy(x, Buffer::host(DType::Float64, {4, 9}).view());
  CHECK_THROWS_WITH(loadInputs(g, dir.path.string()),
                    Contains("x.npy holds float64 ('<f8') but the graph declares x as float32"));
  std::filesystem::remove(x);
  CHECK_THROWS_WITH(loadInputs(g, dir.path.string()),
                    Contains("x.npy: error: missing input x: cannot open file"));
  writeBytes(x, npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (4, 9), }",
                        std::string(4 * 9 * 4, '\0')));
  CHECK_THROWS_WITH(loadInputs(g, dir.path.string()),
                    Contains("x.npy: error: Fortran-order arrays are not supported"));
}

TEST_CASE("seeded inputs are deterministic, in range, and per tensor", "[npy][inputs]") {
  graph::ExpandedGraph g = graphOf(R"({"tapestry": "graph/v1", "name": "g",
    "tensors": {"table": {"dtype": "bfloat16", "shape": [13, 4]}, "ids": {"dtype": "int32", "shape": [50]},
                "n": {"dtype": "int64", "shape": [40]}, "h": {"dtype": "float16", "shape": [30]}},
    "operations": [{"name": "e", "kernel": "embedding", "inputs": {"table": "table", "indices": "ids"}},
                   {"name": "r", "kernel": "relu", "inputs": {"input": "n"}},
                   {"name": "s", "kernel": "exp", "inputs": {"input": "h"}}]})");
  TensorBuffers a = drawInputs(g, 7);
  TensorBuffers b = drawInputs(g, 7);
  TensorBuffers c = drawInputs(g, 8);
  for (const char* name : {"table", "ids", "n", "h"}) {
    INFO(name);
    CHECK(std::memcmp(a.at(name).data(), b.at(name).data(),
                      static_cast<std::size_t>(a.at(name).byteSize())) == 0);
    CHECK(std::memcmp(a.at(name).data(), c.at(name).data(),
                      static_cast<std::size_t>(a.at(name).byteSize())) != 0);
  }
  bool allInRange = true;
  for (std::int32_t id : a.at("ids").elements<std::int32_t>()) {
    allInRange = allInRange && id >= 0 && id < 13;
  }
  CHECK(allInRange);
  bool small = true;
  for (std::int64_t v : a.at("n").elements<std::int64_t>()) {
    small = small && v >= -4 && v <= 4;
  }
  CHECK(small);
  bool unit = true;
  for (Half h : a.at("h").elements<Half>()) {
    const float f = halfToFloat(h);
    unit = unit && f >= -1.0f && f <= 1.0f;
  }
  CHECK(unit);
  // A tensor's values depend on its name and the seed only.
  CHECK(std::memcmp(drawInput(g, *g.tensorIndex("h"), 7).data(), a.at("h").data(), 60) == 0);
}

TEST_CASE("a batchnorm's drawn variance is positive, whatever the scale", "[npy][inputs]") {
  graph::ExpandedGraph g = graphOf(R"({"tapestry": "graph/v1", "name": "g",
    "tensors": {"x": {"dtype": "float32", "shape": [2, 64, 3, 3]},
                "s": {"dtype": "float32", "shape": [64]}, "b": {"dtype": "float32", "shape": [64]},
                "m": {"dtype": "float32", "shape": [64]}, "v": {"dtype": "float32", "shape": [64]}},
    "operations": [{"name": "n", "kernel": "batchnorm",
                    "inputs": {"input": "x", "scale": "s", "bias": "b", "mean": "m", "var": "v"}}]})");
  for (Scale scale : {Scale::FanIn, Scale::Unit}) {
    const TensorBuffers in = drawInputs(g, 3, scale);
    const std::span<const float> v = in.at("v").elements<float>();
    CHECK(*std::min_element(v.begin(), v.end()) >= 0.5f);
    CHECK(*std::max_element(v.begin(), v.end()) < 1.5f);
    // The mean is drawn as before: both signs.
    const std::span<const float> m = in.at("m").elements<float>();
    CHECK(*std::min_element(m.begin(), m.end()) < 0.0f);
  }
}

TEST_CASE("seeded bool inputs are a fair coin per element, deterministic per seed",
          "[npy][inputs][bool]") {
  graph::ExpandedGraph g = graphOf(R"({"tapestry": "graph/v1", "name": "g",
    "tensors": {"mask": {"dtype": "bool", "shape": [40, 50]}, "x": {"dtype": "float32", "shape": [50]},
                "y": {"dtype": "float32", "shape": [1]}},
    "operations": [{"name": "w", "kernel": "where", "inputs": {"condition": "mask", "X": "x", "Y": "y"}}]})");
  const Buffer a = drawInput(g, *g.tensorIndex("mask"), 7);
  const Buffer b = drawInput(g, *g.tensorIndex("mask"), 7);
  const Buffer c = drawInput(g, *g.tensorIndex("mask"), 8);
  REQUIRE(a.dtype() == DType::Bool);
  REQUIRE(a.byteSize() == 2000);
  CHECK(std::memcmp(a.data(), b.data(), 2000) == 0);
  CHECK(std::memcmp(a.data(), c.data(), 2000) != 0);
  std::int64_t trues = 0;
  bool bits = true;
  for (Bool x : a.elements<Bool>()) {
    bits = bits && (x.bits == 0 || x.bits == 1);
    trues += x.bits;
  }
  CHECK(bits);
  // 2000 fair coins: 1000 ± 5 standard deviations (22.4 each).
  CHECK(trues > 888);
  CHECK(trues < 1112);
  // Written and read back through a directory, as run --inputs reads it.
  TempDir dir;
  writeTensors(drawInputs(g, 7), {"mask", "x", "y"}, dir.path.string());
  TensorBuffers loaded = loadInputs(g, dir.path.string());
  CHECK(std::memcmp(loaded.at("mask").data(), a.data(), 2000) == 0);
}

TEST_CASE("seeded float inputs shrink with the fan-in of their consumers", "[npy][inputs]") {
  // w is summed 16 terms per output element by the matmul (k = 16) and 1 by
  // the relu: its draws are uniform in [-1/4, 1/4); r, read by a relu only,
  // in [-1, 1). Scale::Unit draws both in [-1, 1).
  graph::ExpandedGraph g = graphOf(R"({"tapestry": "graph/v1", "name": "g",
    "tensors": {"x": {"dtype": "float64", "shape": [8, 16]}, "w": {"dtype": "float64", "shape": [16, 64]},
                "r": {"dtype": "float64", "shape": [1024]}},
    "operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}},
                   {"name": "a", "kernel": "relu", "inputs": {"input": "w"}, "outputs": {"result": "z"}},
                   {"name": "b", "kernel": "relu", "inputs": {"input": "r"}, "outputs": {"result": "s"}}]})");
  auto largest = [](const Buffer& b) {
    double most = 0;
    for (double v : b.elements<double>()) {
      most = std::max(most, std::abs(v));
    }
    return most;
  };
  const TensorBuffers scaled = drawInputs(g, 5);
  const TensorBuffers unit = drawInputs(g, 5, Scale::Unit);
  CHECK(largest(scaled.at("w")) < 0.25);
  CHECK(largest(scaled.at("w")) > 0.24); // 1024 draws reach near the bound
  CHECK(largest(scaled.at("x")) < 0.25);
  CHECK(largest(scaled.at("r")) > 0.99);
  CHECK(largest(unit.at("w")) > 0.99);
  // The same stream, scaled: each value is the unit draw over 4.
  CHECK(scaled.at("w").elements<double>()[7] == unit.at("w").elements<double>()[7] / 4);
}
