// The plans every search starts from and every front is compared with (SPEC §7):
//   single          every operation whole, on device 0;
//   data_parallel   every operation split along its leading non-reduction dim
//                   (the batch) into min(extent, D) parts on devices 0, 1, ...;
//   tensor_parallel Megatron style, only for graphs with linear/matmul: linear
//                   splits its output features, a matmul splits its output
//                   columns unless its X arrives split along its k (reduction)
//                   dim, then it splits k; every other op follows its first
//                   split producer along the dims that line up.
// An op whose baseline split would not be a valid plan (overlapping outputs)
// stays whole on device 0.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.hpp"
#include "core/search/space.hpp"

namespace tapestry::search {

struct Baseline {
  std::string name; // "single", "data_parallel", "tensor_parallel"
  plan::PlanChoice choice;
};

// In that order; tensor_parallel only where the graph has a linear or matmul.
std::vector<Baseline> makeBaselines(const SearchSpace& space, const plan::PlanContext& context);

} // namespace tapestry::search
