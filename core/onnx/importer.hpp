// ONNX import (SPEC §5.1, docs/reference/onnx.md): an ONNX model, read with the
// ONNX C++ library and its shape inference, becomes a graph/v1 document of
// standard-library operations. Shape arithmetic (Shape, Gather, Concat, ...)
// and every node whose inputs are all small constants are folded at import;
// symbolic dims are bound by the caller. Initializers (and folded constants
// that operations read) become graph inputs whose data is returned as plain
// bytes: writing them (.npy) is the driver's business.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.hpp"

namespace tapestry::onnx_import {

// Whether this tapestry was built with the ONNX library (otherwise importModel
// throws UsageError, exit 2, saying so).
bool available();

// The data of one graph input that holds constants (an initializer or a folded
// constant): C order, little-endian, `dtype` a tapestry dtype name.
struct TensorData {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
  bool present = true; // false for external data the model does not hold
};

struct ImportOptions {
  std::map<std::string, std::int64_t> dims; // --dim NAME=N: symbolic dim values
  // --values DIR: the value of a graph input, or nullopt. Asked only for the
  // inputs that import needs as constants (a Slice's starts, a ReduceSum's
  // axes, an Expand's shape: what a model usually holds as initializers);
  // those become constants, every other input stays an input.
  std::function<std::optional<TensorData>(const std::string& name)> inputValue;
};

struct ImportResult {
  Json graph;                        // the graph/v1 document
  std::vector<TensorData> constants; // graph inputs with data, in "tensors" order
  std::size_t nodes = 0;             // ONNX nodes read
  std::size_t folded = 0; // of which folded (into constants; batch norms into convolutions)
};

// Imports the serialized model `bytes`; `file` names it in diagnostics and in
// the graph's "doc". Errors are Error (exit 1) located at `file`: not a model,
// an unsupported operator (naming it, the node and the supported list), a
// graph input with no shape or an unbound symbolic dim; an unknown --dim name
// is UsageError (exit 2).
ImportResult importModel(const std::string& bytes, const std::string& file,
                         const ImportOptions& options);

// "Add, Conv, ...": the ONNX operators importModel maps, sorted.
std::vector<std::string> supportedOperators();

} // namespace tapestry::onnx_import
