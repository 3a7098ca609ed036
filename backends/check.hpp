// `run --check` (SPEC §9, docs/check.md): is a sharded result as good as the
// unsharded computation? A fixed tolerance cannot say: BLAS libraries choose
// other kernels (and summation orders) on other processors, and a softmax turns
// tiny differences into larger ones. So the graph is evaluated twice unsharded:
// - the *reference*, every floating-point tensor widened to float64, on the CPU;
// - the *baseline*, in the plan's own dtypes, on the plan's backend;
// and a sharded output passes when its error against the reference is at most
// kBaselineMultiple times the baseline's error, or within a floor of a few units
// of the rounding error of the least precise dtype it is computed from,
// whichever is larger. Integer outputs must equal the baseline exactly.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/graph/graph.hpp"

namespace tapestry::backend {

// The bound is max(kBaselineMultiple · baseline error, kFloorUnits · u), with u
// the unit roundoff of the least precise float dtype upstream (float32 2^-24,
// float16 2^-11, bfloat16 2^-8, float64 2^-53). docs/check.md has the
// measurements these come from.
inline constexpr double kBaselineMultiple = 16;
inline constexpr double kFloorUnits = 8;
// Approximate rewrite rules (docs/rewrites.md): `rewrites check` holds an
// approximate rule's two sides to this relative error in float64, and `run
// --check` holds a plan made with approximate rewrites to it, the rewritten
// graph's float64 outputs against the original graph's.
inline constexpr double kApproximateTolerance = 1e-3;

// The unit roundoff of a float dtype (half the distance from 1 to the next
// value); 0 for integers.
double unitRoundoff(DType dtype);

// max|a-r| / max|r| over the elements (max|a-r| when max|r| is 0), computed in
// float64 whatever the two buffers' dtypes; equal values (infinities included)
// differ by 0; NaN in either gives NaN, which never passes. Both are host
// buffers of one region (InternalError otherwise).
double maxRelativeError(const Buffer& actual, const Buffer& reference);

// The graph with every floating-point tensor widened to float64 (casts to a
// float dtype become float64 too); integer tensors stay as they are.
graph::ExpandedGraph widenToFloat64(const graph::ExpandedGraph& g);

// The unsharded evaluations a check compares against: the graph outputs, as
// host buffers, by tensor name.
struct CheckReference {
  TensorBuffers reference; // float64 (integers in their own dtype)
  TensorBuffers baseline;  // the plan's dtypes
};

// Evaluates `g` unsharded on `inputs`: the baseline on device 0 of
// `baselineBackend`, the reference in float64 on a CPU backend.
CheckReference unshardedReference(Backend& baselineBackend, const graph::ExpandedGraph& g,
                                  const TensorBuffers& inputs);

// The reference alone: `g`'s outputs in float64 (`inputs` may live on
// `inputsBackend`'s devices).
TensorBuffers float64Reference(Backend& inputsBackend, const graph::ExpandedGraph& g,
                               const TensorBuffers& inputs);

struct OutputCheck {
  std::string tensor;
  DType dtype = DType::Float32;
  DType precision = DType::Float32; // the least precise dtype it is computed from
  double error = 0;                 // the sharded output against the reference
  double baselineError = 0;         // the unsharded output against the reference
  double bound = 0;                 // max(kBaselineMultiple · baselineError, kFloorUnits · u)
  bool ok = false;
  // After approximate rewrites: the rewritten graph's float64 output against
  // the original graph's (max relative error); unset otherwise.
  std::optional<double> approximation;
};

// The bound for an output of `precision` whose baseline error is `baselineError`
// (0 for integers; a NaN baseline error counts as no error).
double checkBound(DType precision, double baselineError);

// Checks every graph output of `actual` (host buffers) against `reference`.
std::vector<OutputCheck> compareOutputs(const graph::ExpandedGraph& g, const TensorBuffers& actual,
                                        const CheckReference& reference);

// "max error 2.4e-05, unsharded 1.1e-05, bound 4.4e-05": numbers with 2
// significant digits, nan for NaN; then ", approximation 3.1e-05 (at most
// 0.001)" after approximate rewrites.
std::string describeCheck(const OutputCheck& c);

} // namespace tapestry::backend
