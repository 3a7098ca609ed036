// "Did you mean" hints for mistyped names (kernels, ports, params, commands):
// the closest candidate by edit distance, within a small distance. Only on
// error paths.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace tapestry {

// Edit distance counting a swap of neighbours as one edit (optimal string
// alignment).
std::size_t editDistance(std::string_view a, std::string_view b);

// The first closest candidate within one edit for short names and two from six
// characters on (none for a one-character name or one over 64 characters).
std::optional<std::string_view> closestName(std::string_view name,
                                            const std::vector<std::string_view>& candidates);

} // namespace tapestry
