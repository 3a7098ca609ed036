// Tensor programs as graphs (SPEC §5). Two forms: `Graph` is a graph file as
// written (graph/v1, or the user fields of an expanded/v1 file), decoded but not
// yet checked against any kernel; `ExpandedGraph` is what expansion makes of it:
// every operation applied to its metakernel, every tensor typed, and a
// topological order of the operations. Later stages (plan, cost, render, backends) read only
// ExpandedGraph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/json/json.hpp"
#include "core/metakernel/application.hpp"
#include "core/metakernel/metakernel.hpp"

namespace tapestry::graph {

// Tensors have at most this many dims (SPEC §5 keeps shapes small and checkable).
inline constexpr std::size_t kMaxRank = 16;

// Names are at most this many bytes.
inline constexpr std::size_t kMaxNameLength = 256;

// Tensor, operation and graph names are 1 to kMaxNameLength bytes of printable
// ASCII (0x21-0x7E) other than '"' and '\\': no spaces or control characters,
// so ONNX names (`input.1`, `onnx::Conv_193`, `/layer1/conv1/Conv_output_0`)
// are kept as they are spelled (SPEC §5.1).
bool isValidName(std::string_view name);
// A dtype of the one table (core/expr/dtype.hpp), which the expression
// language reads too.
bool isKnownDType(std::string_view name);

enum class Format { Graph, Expanded }; // "graph/v1", "expanded/v1"
const char* formatTag(Format format);  // "graph/v1", "expanded/v1"

// ---------------------------------------------------------------- the file

// A tensor of the file's "tensors" object: a graph input, or (when an operation
// produces it) an assertion of the produced shape and dtype.
struct TensorDecl {
  TensorDecl(std::string tensorName, json::Value at)
      : name(std::move(tensorName)), where(std::move(at)) {}
  std::string name;
  metakernel::TensorType type;
  // Expanded files only: the stored "producer" (nullopt for null).
  std::optional<std::string> storedProducer;
  bool constant = false; // "constant": true (graph inputs only)
  json::Value where;     // the declaration's object
};

// One port of an operation and the tensor names the file binds to it. A list
// port takes an array of names; any other port exactly one name.
struct PortRef {
  std::string port;
  bool list = false; // given as an array
  std::vector<std::string> tensors;
};

struct OperationDecl {
  explicit OperationDecl(json::Value at) : where(std::move(at)) {}
  std::string name;
  std::string kernel;
  Json params = Json::object();
  std::optional<std::string> doc;
  std::vector<PortRef> inputs;  // file order
  std::vector<PortRef> outputs; // file order; unnamed outputs get defaults at expansion
  json::Value where;            // the operation's object (expanded fields are read from it)
};

struct Graph {
  explicit Graph(json::Value at) : root(std::move(at)) {}
  Format format = Format::Graph;
  std::string name;
  std::optional<std::string> doc;
  std::vector<TensorDecl> tensors;       // file order
  std::vector<OperationDecl> operations; // file order
  std::optional<std::vector<std::string>> outputs;
  std::optional<json::Value> outputsWhere;
  json::Value root;
  // Owns the parsed file when the graph was loaded from one, so that every
  // `where` above stays valid; null when decoded from a caller's document.
  std::shared_ptr<const json::Document> document;
};

// ---------------------------------------------------------------- expanded

struct Tensor {
  std::string name;
  metakernel::TensorType type;
  std::optional<std::size_t> producer; // operation index; nullopt: a graph input
  std::vector<std::size_t> consumers;  // operation indices, topological order, no repeats
  bool declared = false;               // listed in the file's "tensors"
  // A graph input whose value is the same on every run (weights: `import`
  // marks initializers), so a backend may prepare it once (SPEC §5.1).
  bool constant = false;

  bool isGraphInput() const { return !producer.has_value(); }
};

// The tensors bound to one port: indices into ExpandedGraph::tensors.
struct PortTensors {
  std::string port;
  bool list = false;
  std::vector<std::size_t> tensors;
};

struct Operation {
  std::string name;
  std::string kernel;
  std::optional<std::string> doc;
  std::vector<PortTensors> inputs;     // template order, parallel to application.inputs
  std::vector<PortTensors> outputs;    // template order, parallel to application.outputs
  metakernel::Application application; // resolved params, bindings, index, IPFs, flops
  std::string pointer;                 // JSON pointer of the operation in its file
};

struct ExpandedGraph {
  std::string name;
  std::optional<std::string> doc;
  std::string file;                  // the file it was loaded from ("<stdin>" for -)
  std::vector<Tensor> tensors;       // declared (file order), then produced (topological)
  std::vector<Operation> operations; // file order
  std::vector<std::size_t> order;    // operation indices in topological order
  std::vector<std::size_t> outputs;  // tensor indices

  const Tensor* findTensor(std::string_view key) const;
  const Operation* findOperation(std::string_view key) const;
  std::optional<std::size_t> tensorIndex(std::string_view key) const;
  std::optional<std::size_t> operationIndex(std::string_view key) const;
  // Sum of every operation's flops (checked).
  std::int64_t totalFlops() const;

  // Fills the name indices; expansion calls it once the vectors are final.
  void buildIndex();

private:
  std::unordered_map<std::string, std::size_t> tensorByName_;
  std::unordered_map<std::string, std::size_t> operationByName_;
};

} // namespace tapestry::graph
