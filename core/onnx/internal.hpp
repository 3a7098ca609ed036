// Internal to core/onnx: constant tensors (decoded from TensorProto, folded at
// import), the folding evaluators, and the per-operator mapping to
// standard-library operations.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/diag/error.hpp"
#include "core/json/json.hpp"

namespace tapestry::onnx_import::detail {

// Whether an operator or opset domain is ONNX's default one ("" or "ai.onnx").
inline bool defaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// Constants of at most this many elements are folded through and decoded;
// larger ones (weights) are only carried to the graph as data.
inline constexpr std::int64_t kFoldLimit = 1 << 16;

// A constant tensor: its ONNX element type, shape, and little-endian C-order bytes.
struct Constant {
  int type = ::onnx::TensorProto::FLOAT;
  std::vector<std::int64_t> shape;
  std::string bytes;
  bool present = true; // false: external data the model does not hold

  std::int64_t count() const;
  // Every element as a double (integers up to 2^53 exactly, bool as 0/1).
  // Only for types isFoldable() accepts.
  std::vector<double> values() const;
  // Every element as an int64 (floats truncated, saturating).
  std::vector<std::int64_t> ints() const;
};

// Builds a constant of `type` (any type isFoldable accepts) from values.
Constant makeConstant(int type, std::vector<std::int64_t> shape, const std::vector<double>& values);
Constant makeInts(std::vector<std::int64_t> shape, const std::vector<std::int64_t>& values);

// Whether values() can decode and makeConstant encode `type`: every numeric
// type but float16, bfloat16 and complex ones.
bool isFoldable(int type);
// The tapestry dtype of an ONNX element type; "" for one with none (string).
std::string dtypeName(int type);
std::size_t elementSize(int type);

// Decodes an initializer or Constant value; `where` prefixes errors.
Constant decodeTensor(const ::onnx::TensorProto& t, const std::string& where);
// The initializer form of a (small) constant.
::onnx::TensorProto encodeTensor(const Constant& c, const std::string& name);

// The outputs of `node` computed from its inputs, all constants (an absent
// optional input is nullptr); nullopt when this operator is not folded.
// Throws Error for inputs the operator rejects.
std::optional<std::vector<Constant>> fold(const ::onnx::NodeProto& node,
                                          const std::vector<const Constant*>& inputs);

// Attributes of a node.
const ::onnx::AttributeProto* findAttribute(const ::onnx::NodeProto& node, const std::string& name);
std::int64_t intAttribute(const ::onnx::NodeProto& node, const std::string& name,
                          std::int64_t fallback);
float floatAttribute(const ::onnx::NodeProto& node, const std::string& name, float fallback);
std::vector<std::int64_t> intsAttribute(const ::onnx::NodeProto& node, const std::string& name);
std::string stringAttribute(const ::onnx::NodeProto& node, const std::string& name,
                            const std::string& fallback);

// Normalizes axis `a` (negative counts from the end) for `rank`; Error when out of range.
std::int64_t normalizeAxis(std::int64_t a, std::int64_t rank, const std::string& what);

// `name` in double quotes, printable ASCII as is and any other byte as \xNN
// (names from a model may be any bytes; diagnostics and JSON must stay valid).
std::string quoted(const std::string& name);
// `text` with every byte outside printable ASCII as \xNN.
std::string printable(const std::string& text);
// Throws Error at `file` unless `name` is a valid graph/v1 name.
void checkName(const std::string& file, const std::string& what, const std::string& name);

// ---------------------------------------------------------------- preparation (prepare.cpp)

// Converts a model whose default-domain opset is below 13 to opset 13 with
// ONNX's version converter (IR version raised to at least 7); returns the
// opset the model imported (-1 when none). Error naming the opset and what
// the converter could not convert.
int convertOpset(::onnx::ModelProto& model, const std::string& file);
// Inlines every default-domain node whose operator is not in `mapped` and that
// ONNX defines by a function body at `opset`, once (a body's own function
// nodes wait for the next call); true when any was. `origin` gets, for each
// inlined node's name, the operator whose body it came from (the outermost).
bool expandFunctions(::onnx::ModelProto& model, int opset, const std::set<std::string>& mapped,
                     std::map<std::string, std::string>& origin, const std::string& file);
// The feature an operator needs that a static-shape, tensor-only graph has no
// room for ("control flow", "sequences", "random numbers", ...), or nullopt.
std::optional<std::string> outOfScopeFeature(const std::string& op);

// ---------------------------------------------------------------- folds (fuse.cpp)

struct TensorType;

// Clears the names of the optional outputs past the first of a Dropout,
// MaxPool, LayerNormalization or BatchNormalization that no node of `live`
// reads and `g` does not return, so that mappings see them absent.
void dropUnreadOutputs(std::vector<::onnx::NodeProto>& live, const ::onnx::GraphProto& g);

// Folds each BatchNormalization (inference mode) whose input only a Conv,
// ConvTranspose, Gemm or MatMul reads, all of their weights, biases and
// parameters float constants, into that node: a new weight and bias in
// `constants` (`W/folded_bn`, `W/folded_bn/bias`), the node writing the batch
// norm's output, the batch norm dropped from `live`. A MatMul folds only when
// its weight has rank 2 and its result (by `types`) too; it becomes a Gemm
// with the bias as C. A product's or convolution's output that is also a
// graph output stays. Returns how many it folded.
std::size_t foldBatchNorms(std::vector<::onnx::NodeProto>& live,
                           std::map<std::string, Constant>& constants, const ::onnx::GraphProto& g,
                           const std::map<std::string, TensorType>& types);

// ---------------------------------------------------------------- mapping

// What a mapping sees of one tensor: its dtype and concrete shape when known.
struct TensorType {
  int type = 0; // ONNX element type; 0 unknown
  std::optional<std::vector<std::int64_t>> shape;
};

// Import needs the value of tensor `name` (a graph input) and has none: a
// Slice's starts, a ReduceSum's axes. importModel asks ImportOptions::inputValue
// for it and imports again with the input as a constant, or reports this error.
class NeedsConstant : public Error {
public:
  NeedsConstant(SourceLocation location, std::string message, std::string tensor)
      : Error(std::move(location), std::move(message)), name(std::move(tensor)) {}
  std::string name;
};

// The state of the emission: tensor types, constants, aliases, the operations
// written so far and the constants they read.
class Emitter {
public:
  Emitter(std::string file, const std::map<std::string, TensorType>& types,
          const std::map<std::string, Constant>& constants);

  // The tensor name an input resolves to (through Identity/Dropout aliases);
  // marks a constant as read by an operation (so it becomes a graph input).
  std::string use(const std::string& name);
  // The constant named `name` (after aliases), or null.
  const Constant* constant(const std::string& name) const;
  std::vector<std::int64_t> shapeOf(const ::onnx::NodeProto& node, const std::string& name) const;
  std::optional<std::vector<std::int64_t>> knownShape(const std::string& name) const;
  int typeOf(const std::string& name) const;
  void alias(const std::string& name, const std::string& target);
  std::string resolve(const std::string& name) const;

  // A fresh operation name for `node` ("" suffix: the node's own name).
  std::string opName(const ::onnx::NodeProto& node, const std::string& suffix);
  // An operation name not taken yet: `base`, else base_2, base_3, ...
  std::string freshOpName(const std::string& base);
  // A fresh tensor name for an intermediate result of `node`.
  std::string tempName(const ::onnx::NodeProto& node, const std::string& what);
  // Adds a new constant (e.g. a zero bias) read by an operation.
  std::string addConstant(const std::string& name, Constant c);

  void emit(const std::string& name, const std::string& kernel, Json params, Json inputs,
            Json outputs);

  [[noreturn]] void fail(const ::onnx::NodeProto& node, const std::string& message) const;

  const std::string& file() const { return file_; }
  Json& operations() { return operations_; }
  const std::vector<std::string>& constantsUsed() const { return used_; }
  const std::map<std::string, Constant>& constants() const { return constants_; }

private:
  std::string file_;
  const std::map<std::string, TensorType>& types_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, std::string> aliases_;
  std::set<std::string> names_;   // tensor names taken
  std::set<std::string> opNames_; // operation names taken
  std::set<std::string> usedSet_;
  std::vector<std::string> used_;
  Json operations_ = Json::array();
};

// Emits the operations of one node; throws Error naming the operator, the node
// and the supported list when there is no mapping.
void mapNode(Emitter& e, const ::onnx::NodeProto& node);
std::vector<std::string> mappedOperators();

} // namespace tapestry::onnx_import::detail
