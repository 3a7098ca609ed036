// Flag value checks with messages a person can act on (CLI11's PositiveNumber
// prints its range as 0.000000 to 1.797693e+308 written out in full).
#pragma once

#include <CLI/CLI.hpp>

namespace tapestry::cli {

// A whole number > 0 that fits in int64 ("--iterations: expected a positive
// whole number, got 'x'").
CLI::Validator positiveInteger();

// A finite number > 0 (seconds, ratios).
CLI::Validator positiveNumber();

} // namespace tapestry::cli
