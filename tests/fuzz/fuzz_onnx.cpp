// Fuzz target: the ONNX importer (core/onnx): any bytes either import or are
// rejected with a user error; what imports must load as a graph/v1 document.
#include "core/graph/loader.hpp"
#include "core/onnx/importer.hpp"
#include "tests/fuzz/fuzz_guard.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::guarded([&] {
    onnx_import::ImportOptions options;
    const onnx_import::ImportResult result =
        onnx_import::importModel(fuzz::text(data, size), "fuzz.onnx", options);
    try {
      graph::decodeGraph(json::Value(result.graph));
    } catch (const Error& e) {
      fuzz::finding("an imported graph does not decode", e.what());
    }
  });
}
