// The flags `run` and `bench` share (the plan, -k, --backend, --threads, --seed,
// --tf32), registered once onto the backend's ExecutionOptions.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "core/driver/run_command.hpp"

namespace tapestry::cli {

// Adds the shared flags to `sub`, writing into `options` (which must outlive
// the parse). `seedHelp` says what the seed is for in this command.
void addExecutionFlags(CLI::App* sub, driver::ExecutionOptions& options, const char* seedHelp);

} // namespace tapestry::cli
