// The calibration's measurement cases: per kernel family, the graphs whose
// measured op calibrate times at growing sizes (backends/calibration.cpp
// runs them; docs/cost-model.md lists them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/expansion.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::backend {

// One measurement case of a family: its graph for `copies` equal shards along
// its index dim `splitDim` (copies = 1: the alone case; N: one shard per device).
struct FamilyCase {
  std::string family;
  std::string kernel;
  // The graph for `copies` shards of size step `step` (0, 1, 2, ...).
  std::function<graph::ExpandedGraph(const metakernel::MetakernelLibrary&, int step, int copies)>
      graphFor;
  int steps = 0;
  // Measured apart from its family (the table is the kernel's own): a member
  // whose speed differs from the family's representative.
  bool apart = false;
  // Inputs in [-spread, spread]: a plan's pre-activations spread that wide,
  // and some functions' speed depends on the magnitude (libm's erff ran 3.4x
  // slower on [-5, 5] than on [-1, 1]; SLEEF's tanhf about 1.15x slower on
  // inputs of deviation 20 than 1).
  float spread = 1;
  // The index dim that `copies` grows and the shards split (0: the leading one).
  int splitDim = 0;
};

// The cases, in the order the profile lists their tables.
// `threadsFrom`: Backend::productThreadsFromFlops().
std::vector<FamilyCase> familyCases(double threadsFrom);

// The operation a case measures: the one named "op" (the first when none is).
std::size_t measuredOp(const graph::ExpandedGraph& g);

// A one-operation graph (the op named "op") over float32 tensors, expanded
// through the library. `tensors`, `params` and the op's `ports` are JSON member lists.
graph::ExpandedGraph oneOpGraph(const metakernel::MetakernelLibrary& library,
                                const std::string& kernel, const std::string& tensors,
                                const std::string& params, const std::string& ports);

// `"name": {"dtype": "float32", "shape": [...]}`
std::string tensorText(const std::string& name, const std::vector<std::int64_t>& shape);

} // namespace tapestry::backend
