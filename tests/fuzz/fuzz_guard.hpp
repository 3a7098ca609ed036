// What every fuzz target checks (issue 9): an input either loads or is rejected
// with a tapestry::Error that maps to a user exit code (1 invalid input or
// 2 usage) and carries a message. Anything else is a finding: a crash, a
// sanitizer report, an InternalError (exit 70) or any other exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "core/diag/error.hpp"

namespace tapestry::fuzz {

[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

template <class Body> int guarded(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    const ExitCode code = e.exitCode();
    if (code != ExitCode::InvalidInput && code != ExitCode::Usage) {
      finding("error with a non-input exit code",
              std::to_string(static_cast<int>(code)) + ": " + e.what());
    }
    if (e.message().empty()) {
      finding("error without a message", e.what());
    }
  } catch (const std::bad_alloc&) {
    finding("std::bad_alloc", "an input drove an allocation past the limits");
  } catch (const std::exception& e) {
    finding("unexpected exception", e.what());
  } catch (...) {
    finding("unexpected non-standard exception", "");
  }
  return 0;
}

// Runs `body`; an input error (exit 1) it throws is a rejection, not a
// finding, as for a graph made from the input whose shapes its kernels
// refuse. Any other error goes on to `guarded`.
template <class Body> void rejectingInput(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    if (e.exitCode() != ExitCode::InvalidInput) {
      throw;
    }
  }
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

} // namespace tapestry::fuzz
