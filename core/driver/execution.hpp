// What the commands that execute plans (run, bench, calibrate) share: reading
// a plan or graph to run, choosing and creating a backend, and small report
// helpers. Internal to core/driver.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/cost/plan_file.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::driver {

// Reads PATH as a plan (plan/v1), or as a graph (graph/v1, expanded/v1) made
// into the single-device plan on the `local` target (this machine's saved
// calibration when there is one); by its "tapestry" tag.
plan::LoadedPlan loadRunnable(const std::string& path,
                              const metakernel::MetakernelLibrary& library);

// Throws BackendUnavailable (exit 4) unless `name` can run here: "cpu" always;
// "cuda" needs the CUDA backend built and a usable GPU. UsageError for others.
void requireBackend(const std::string& name);

// The backend that runs plans of `planDevices` devices: the CPU backend, or
// the CUDA backend with one stream per plan device (BackendUnavailable without
// a GPU). --tf32 without cuda is a UsageError.
std::unique_ptr<backend::Backend> makeBackend(const std::string& name, int planDevices,
                                              bool tf32 = false);

// Devices a plan runs shards on.
std::size_t devicesUsed(const plan::ShardPlan& p);
// "1 device", "2 devices".
std::string plural(std::size_t n, const char* one, const char* many);
double median(std::vector<double> values);

} // namespace tapestry::driver
