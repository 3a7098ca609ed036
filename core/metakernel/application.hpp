// Applying a metakernel template to one operation: bind params, match the input
// shapes, check constraints, then evaluate the index space, the output tensors and
// every IPF. Pure evaluation of the ASTs parsed at load time; never parses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expr/expr.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::metakernel {

// One operation as the graph gives it: tensors per input port (a list port takes
// several, any other port exactly one) and params as JSON values.
struct Operation {
  std::string name; // for messages; may be empty
  std::map<std::string, std::vector<TensorType>, std::less<>> inputs;
  Json params = Json::object();
};

// A port of the result: its tensors and one IPF per tensor (in tensor order).
// An optional input the operation leaves out has no tensors and no IPFs (a
// port that is given always has at least one tensor).
struct PortResult {
  std::string name;
  bool list = false;
  std::vector<TensorType> tensors;
  std::vector<IndexProjection> ipfs;
  std::optional<Combine> combine; // outputs only
  bool packed = false;            // inputs only: the template's `packed: true`
  std::optional<double> absent;   // inputs only: the template's `default` (fuse.hpp)
};

struct Application;

// A fuse(P, C) operation as its two parts: P applied to the fused operation's
// first inputs, C to P's result and the rest (fuse.hpp).
struct FusedParts {
  std::string producerKernel, consumerKernel;
  std::shared_ptr<const Application> producer, consumer;
  std::size_t producerInputs = 0; // the fused operation's inputs [0, this) are P's
  // Per input of C (template order): the fused operation's input it reads, or
  // -1 for the port that reads P's result.
  std::vector<int> consumerInputs;
};

struct Application {
  expr::Bindings bindings;
  Json params = Json::object();    // resolved: given values plus defaults, template order
  ZRange index;                    // from 0
  std::vector<PortResult> inputs;  // template order
  std::vector<PortResult> outputs; // template order
  // Index dims with a zero column in every output IPF: summed/maxed over.
  std::vector<std::size_t> reductionDims;
  // Every output has a combine, so a plan may split the reduction dims.
  bool reductionSplittable = true;
  std::int64_t flopsPerPoint = 0;
  std::int64_t flops = 0;                         // flopsPerPoint x index size (checked)
  std::optional<std::int64_t> bytesPerPoint;      // cost.bytes when the template gives it
  std::optional<std::int64_t> bytes;              // bytesPerPoint x index size
  std::shared_ptr<const BodySpec> body;           // the template's body, if it has one
  std::shared_ptr<const ExternSpec> externKernel; // the template's extern kernel, if any
  std::shared_ptr<const FusedParts> fused;        // a fuse(...) template's parts

  const PortResult* input(std::string_view name) const { return findByName(inputs, name); }
  const PortResult* output(std::string_view name) const { return findByName(outputs, name); }
};

// Applies `kernel` to `op`. Errors are Error (exit 1) prefixed with the operation
// and kernel ("fc1 (matmul): ..."), with a note pointing at the template line
// involved; conflicts show both shapes:
//   "matmul: X is [4, 8] and W is [9, 3]: $k is 8 from X but 9 from W".
Application apply(const Metakernel& kernel, const Operation& op);

// A note pointing at column `exprColumn` of a template field: "in kernel K,
// ROLE \"TEXT\"" (and how to print a built-in template).
Diagnostic templateNote(const FieldInfo& f, int exprColumn, const std::string& kernel);

// The expanded/v1 fields of an application (SPEC §5): index, bindings, ipf,
// combine, reduction_dims, flops.
Json toJson(const Application& app);

// An expression value as JSON: ints, bools, dtype names, lists of them;
// anything else (an affine form) as its text.
Json valueToJson(const expr::Value& v);

} // namespace tapestry::metakernel
