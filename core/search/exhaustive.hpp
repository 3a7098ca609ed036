// `optimize --exhaustive`: every member of the SearchSpace of a small graph is
// built and simulated, and the true Pareto front (no cap) is returned. Refuses,
// before evaluating anything, when the space holds more than a limit of plans.
#pragma once

#include <cstdint>

#include "core/search/search.hpp"

namespace tapestry::search {

inline constexpr std::uint64_t kExhaustiveLimit = 1'000'000;

// The number of plans in the space, or nullopt when it exceeds `limit`.
std::optional<std::uint64_t> spaceSize(const SearchSpace& space, std::uint64_t limit);

// Throws Error (exit 1) when the space exceeds `limit`:
//   "--exhaustive: mlp has more than 1000000 plans for 8 devices (6 operations, up
//    to 8 splits x 8 placements each); drop --exhaustive to search it stochastically"
// The result does not depend on `threads`.
SearchResult runExhaustive(const ChoiceScorer& evaluator, int threads,
                           std::uint64_t limit = kExhaustiveLimit);

} // namespace tapestry::search
