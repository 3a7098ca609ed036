#include "core/zspace/checked.hpp"

#include <string>

#include "core/diag/error.hpp"

namespace tapestry::detail {

void throwOverflow(std::int64_t a, char op, std::int64_t b) {
  throw Error("integer overflow: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
              " does not fit in int64");
}

void throwNegOverflow(std::int64_t a) {
  throw Error("integer overflow: -(" + std::to_string(a) + ") does not fit in int64");
}

} // namespace tapestry::detail
