#include "cli/validators.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tapestry::cli {

namespace {

// Why `text` is not a positive `kind` that `parse` (strtoll or strtod, reading
// all of it) can hold; empty when it is one.
template <class Parse>
std::string checkPositive(const std::string& text, const std::string& kind, Parse parse) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const auto value = parse(begin, &end);
  if (end == begin || *end != '\0') {
    return "expected a positive " + kind + ", got '" + text + "'";
  }
  if (errno == ERANGE || !std::isfinite(static_cast<double>(value))) {
    return "'" + text + "' is out of range";
  }
  if (value <= 0) {
    return "expected a positive " + kind + ", got " + text;
  }
  return {};
}

} // namespace

CLI::Validator positiveInteger() {
  return CLI::Validator(
      [](std::string& text) {
        return checkPositive(text, "whole number",
                             [](const char* s, char** end) { return std::strtoll(s, end, 10); });
      },
      "POSITIVE");
}

CLI::Validator positiveNumber() {
  return CLI::Validator(
      [](std::string& text) {
        return checkPositive(text, "number",
                             [](const char* s, char** end) { return std::strtod(s, end); });
      },
      "POSITIVE");
}

} // namespace tapestry::cli
